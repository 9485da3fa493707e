#include "core/p2p.h"

#include <math.h>

#include "core/simd.h"

/* The pair sums with the exact 1/sqrt, one pair at a time: for the calls whose distances leave
 * the range of the SIMD estimate (core/simd.h) */
static void p2p_exact(long i, const double *tx, const double *ty, const double *tz, long ns,
                      const double *sx, const double *sy, const double *sz, const double *sq,
                      const double shift[3], double out[4]) {
    const double xi = tx[i] - shift[0], yi = ty[i] - shift[1], zi = tz[i] - shift[2];
    double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
    for (long j = 0; j < ns; ++j) {
        double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
        double r2 = dx * dx + dy * dy + dz * dz;
        if (!(r2 > 0.0)) continue;
        double rinv = 1.0 / sqrt(r2), qr = sq[j] * rinv, qr3 = qr * rinv * rinv;
        p += qr;
        fx += qr3 * dx;
        fy += qr3 * dy;
        fz += qr3 * dz;
    }
    out[0] = p, out[1] = fx, out[2] = fy, out[3] = fz;
}

static inline __attribute__((always_inline)) void
p2p_step(simd_d xi, simd_d yi, simd_d zi, simd_d sx, simd_d sy, simd_d sz, simd_d q, simd_d *p,
         simd_d *fx, simd_d *fy, simd_d *fz) {
    simd_d dx = xi - sx, dy = yi - sy, dz = zi - sz;
    simd_d r2 = dx * dx + dy * dy + dz * dz;
    /* the self pair (r2 = 0) gives NaN in the refinement; it is masked to 0 */
    simd_d rinv = simd_select0(r2 > 0.0, simd_rsqrt(r2));
    simd_d qr = q * rinv, qr3 = qr * rinv * rinv;
    *p += qr;
    *fx += qr3 * dx;
    *fy += qr3 * dy;
    *fz += qr3 * dz;
}

void p2p(long nt, const double *tx, const double *ty, const double *tz, long ns,
         const double *sx, const double *sy, const double *sz, const double *sq,
         const double shift[3], double *phi, double *ex, double *ey, double *ez) {
    /* above float's range AVX-512's estimate would give 0, not NaN: such calls go the exact way
       (below it, NaN, caught per target) */
    const int exact = nt > 0 && ns > 0 &&
                      !simd_rsqrt_range_ok(0x1p-120, simd_extent2(nt, tx, ty, tz, ns, sx, sy, sz, shift));
    const long nv = ns - ns % SIMD_W;
    for (long i = 0; i < nt; ++i) {
        double out[4];
        if (!exact) {
            const double xs = tx[i] - shift[0], ys = ty[i] - shift[1], zs = tz[i] - shift[2];
            const simd_d xi = simd_set1(xs), yi = simd_set1(ys), zi = simd_set1(zs);
            simd_d p = {0}, fx = {0}, fy = {0}, fz = {0};
            for (long j = 0; j < nv; j += SIMD_W)
                p2p_step(xi, yi, zi, simd_load(sx + j), simd_load(sy + j), simd_load(sz + j),
                         simd_load(sq + j), &p, &fx, &fy, &fz);
            if (nv < ns) { /* the tail, padded with charge-free copies of the target */
                simd_d bx = xi, by = yi, bz = zi, bq = {0};
                for (long j = nv; j < ns; ++j)
                    bx[j - nv] = sx[j], by[j - nv] = sy[j], bz[j - nv] = sz[j], bq[j - nv] = sq[j];
                p2p_step(xi, yi, zi, bx, by, bz, bq, &p, &fx, &fy, &fz);
            }
            out[0] = simd_sum(p), out[1] = simd_sum(fx), out[2] = simd_sum(fy), out[3] = simd_sum(fz);
        }
        /* a NaN here is a distance below float's range (or a NaN input, which the plans
           reject): the exact sums decide */
        if (exact || !isfinite(out[0] + out[1] + out[2] + out[3]))
            p2p_exact(i, tx, ty, tz, ns, sx, sy, sz, sq, shift, out);
        phi[i] += out[0];
        ex[i] += out[1];
        ey[i] += out[2];
        ez[i] += out[3];
    }
}
