/* m2l/virial_terms.h. The map is harm_local_force's sums (core/harmonics_particles.c) read as
 * coefficients of u: per degree l, u_lm meets the multipole's degree l - 1 at orders m and m +- 1
 * (the z component at m, x and y at m - 1 and m + 1). */
#include "m2l/virial_terms.h"

#include <string.h>

#include "core/harmonics.h"

void m2l_force_map(int p, double h, const double *w, long stride, double *G) {
    const int nc = harm_ncoef(p);
    double *gx = G, *gy = G + stride, *gz = G + 2 * stride;
    memset(gx, 0, sizeof(double) * nc), memset(gy, 0, sizeof(double) * nc);
    memset(gz, 0, sizeof(double) * nc);
    const double ih2 = 1.0 / (h * h);
    for (int l = 1; l <= p; ++l) {
        /* the multipole's degree l - 1 at order m, scaled: wr + i wi (wi = 0 at m = 0) */
#define WR(m) (w[harm_re(l - 1, m)] * ih2)
#define WI(m) ((m) ? w[harm_im(l - 1, m)] * ih2 : 0.0)
        for (int m = 0; m <= l; ++m) {
            const int re = harm_re(l, m), im = m ? harm_im(l, m) : -1;
            if (m <= l - 1) { /* z: u_lm with w_(l-1)m, orders +m and -m (m = 0 once) */
                const double f = m ? 2.0 : 1.0;
                gz[re] -= f * WR(m);
                if (m) gz[im] += f * WI(m);
            }
            if (m >= 1) { /* x + iy: u_lm w_(l-1)(m-1) */
                gx[re] += WR(m - 1), gy[re] += WI(m - 1);
                gx[im] -= WI(m - 1), gy[im] += WR(m - 1);
            }
            if (m <= l - 2) { /* and -conj(u_lm) w_(l-1)(m+1) */
                gx[re] -= WR(m + 1), gy[re] += WI(m + 1);
                if (m) gx[im] += WI(m + 1), gy[im] += WR(m + 1);
            }
        }
#undef WR
#undef WI
    }
}
