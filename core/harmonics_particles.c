/* core/harmonics_particles.c - the particle-side expansion operators: P2M and P2L (charges into
 * a multipole or local expansion), L2P and M2P (an expansion's potential and field at points),
 * and the total force of a local expansion on a box's charges from their multipole. Each works
 * on SIMD_W particles per step with vector versions of the harmonics' recurrences. */
#include "core/harmonics.h"

#include "core/harmonics_tri.h"
#include "core/simd.h"

#include "fmm_common.h"

#include <math.h>

/* Particle-side operators, SIMD_W particles per step (core/simd.h: the machine's double vector;
 * wider GCC vectors are split and passed through memory). */
#define PART_PMAX (FMM_ORDER_MAX + 2) /* particle operators: orders up to FMM_ORDER_MAX + 1 */
#define PART_TRI ((PART_PMAX + 1) * (PART_PMAX + 2) / 2)

static void regular_tri_v(int p, simd_d x, simd_d y, simd_d z, simd_d *re, simd_d *im) {
    simd_d r2 = x * x + y * y + z * z;
    re[0] = (simd_d){0} + 1.0;
    im[0] = (simd_d){0};
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            double f = -0.5 / m;
            re[t] = f * (re[s] * x + im[s] * y);
            im[t] = f * (im[s] * x - re[s] * y);
        }
        simd_d pr = {0}, pi = {0}, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            double inv = 1.0 / ((double)(l + 1) * (l + 1) - (double)m * m);
            simd_d a = (2 * l + 1) * z;
            simd_d nr = (a * cr - r2 * pr) * inv, ni = (a * ci - r2 * pi) * inv;
            int u = TRI(l + 1, m);
            re[u] = nr, im[u] = ni;
            pr = cr, pi = ci, cr = nr, ci = ni;
        }
    }
}

static void irregular_tri_v(int p, simd_d x, simd_d y, simd_d z, simd_d *re, simd_d *im) {
    simd_d r2 = x * x + y * y + z * z, ir2 = 1.0 / r2, r0;
    for (int k = 0; k < SIMD_W; ++k) r0[k] = sqrt(ir2[k]);
    re[0] = r0;
    im[0] = (simd_d){0};
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            simd_d f = -(2 * m - 1) * ir2;
            re[t] = f * (re[s] * x - im[s] * y);
            im[t] = f * (re[s] * y + im[s] * x);
        }
        simd_d pr = {0}, pi = {0}, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            simd_d a = (2 * l + 1) * z;
            double b = (double)l * l - (double)m * m;
            simd_d nr = (a * cr - b * pr) * ir2, ni = (a * ci - b * pi) * ir2;
            int u = TRI(l + 1, m);
            re[u] = nr, im[u] = ni;
            pr = cr, pi = ci, cr = nr, ci = ni;
        }
    }
}

static inline simd_d load_w(const double *v, long n, double fill) {
    simd_d r;
    for (int k = 0; k < SIMD_W; ++k) r[k] = k < n ? v[k] : fill;
    return r;
}

/* Expansion of charges about c: out += sum q X((x - c)/h), X regular (multipole) or
 * irregular (local). Padding lanes repeat the group's first particle with zero charge (a
 * point inside the group's range, so the irregular harmonics stay finite). */
static void charges_to_expansion(int p, int irregular, double h, const double c[3], long n,
                                 const double *x, const double *y, const double *z, const double *q,
                                 double *out) {
    simd_d re[PART_TRI], im[PART_TRI], acc[(PART_PMAX + 1) * (PART_PMAX + 1)];
    const double ih = 1.0 / h;
    const int nc = harm_ncoef(p);
    for (int k = 0; k < nc; ++k) acc[k] = (simd_d){0};
    for (long i = 0; i < n; i += SIMD_W) {
        long mw = n - i;
        simd_d X = (load_w(x + i, mw, x[i]) - c[0]) * ih, Y = (load_w(y + i, mw, y[i]) - c[1]) * ih;
        simd_d Z = (load_w(z + i, mw, z[i]) - c[2]) * ih, Q = load_w(q + i, mw, 0.0);
        if (irregular)
            irregular_tri_v(p, X, Y, Z, re, im);
        else
            regular_tri_v(p, X, Y, Z, re, im);
        for (int l = 0; l <= p; ++l) {
            simd_d *a = acc + l * l;
            const simd_d *r = re + TRI(l, 0), *s = im + TRI(l, 0);
            a[0] += Q * r[0];
            for (int m = 1; m <= l; ++m) a[2 * m - 1] += Q * r[m], a[2 * m] += Q * s[m];
        }
    }
    for (int k = 0; k < nc; ++k) {
        double t = 0;
        for (int j = 0; j < SIMD_W; ++j) t += acc[k][j];
        out[k] += t;
    }
}

void harm_p2m(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *w) {
    charges_to_expansion(p, 0, h, c, n, x, y, z, q, w);
}

void harm_p2l(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *u) {
    charges_to_expansion(p, 1, h, c, n, x, y, z, q, u);
}

/* Local expansion at a point: phi = sum_lm u_lm R_lm(v) (full m range),
 * grad_x + i grad_y and grad_z from dR_lm/dz = R_{l-1,m},
 * dR_lm/dx = (R_{l-1,m+1} - R_{l-1,m-1})/2, dR_lm/dy = i (R_{l-1,m+1} + R_{l-1,m-1})/2. */
void harm_l2p(int p, double h, const double c[3], const double *u, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez) {
    simd_d re[PART_TRI], im[PART_TRI];
    const double ih = 1.0 / h, ih2 = ih * ih;
    for (long i = 0; i < n; i += SIMD_W) {
        long mw = n - i;
        simd_d X = (load_w(x + i, mw, c[0]) - c[0]) * ih, Y = (load_w(y + i, mw, c[1]) - c[1]) * ih;
        simd_d Z = (load_w(z + i, mw, c[2]) - c[2]) * ih;
        regular_tri_v(p, X, Y, Z, re, im);
        simd_d f = {0}, dz = {0}, sr = {0}, si = {0}; /* S- = sum u_lm R_{l-1,m-1} */
        for (int l = 0; l <= p; ++l) {
            const double *a = u + l * l;
            const simd_d *r = re + TRI(l, 0), *s = im + TRI(l, 0);
            simd_d fl = {0};
            for (int m = 1; m <= l; ++m) fl += a[2 * m - 1] * r[m] - a[2 * m] * s[m];
            f += a[0] * r[0] + 2.0 * fl;
            if (l == 0) continue;
            const simd_d *r1 = re + TRI(l - 1, 0), *i1 = im + TRI(l - 1, 0);
            simd_d dzl = {0};
            for (int m = 1; m <= l - 1; ++m) dzl += a[2 * m - 1] * r1[m] - a[2 * m] * i1[m];
            dz += a[0] * r1[0] + 2.0 * dzl;
            /* S-: sum_{m=1..l} u_lm R_{l-1,m-1} - sum_{n=0..l-2} conj(u_ln R_{l-1,n+1}) */
            for (int m = 1; m <= l; ++m) {
                double ur = a[2 * m - 1], ui = a[2 * m];
                sr += ur * r1[m - 1] - ui * i1[m - 1];
                si += ur * i1[m - 1] + ui * r1[m - 1];
            }
            for (int m = 0; m <= l - 2; ++m) {
                double ur = m == 0 ? a[0] : a[2 * m - 1], ui = m == 0 ? 0.0 : a[2 * m];
                sr -= ur * r1[m + 1] - ui * i1[m + 1];
                si += ur * i1[m + 1] + ui * r1[m + 1];
            }
        }
        for (int k = 0; k < SIMD_W && k < mw; ++k) {
            if (phi) phi[i + k] += f[k] * ih;
            if (ex) {
                ex[i + k] += sr[k] * ih2;
                ey[i + k] += si[k] * ih2;
                ez[i + k] -= dz[k] * ih2;
            }
        }
    }
}

void harm_local_force(int p, double h, const double *u, long ustride, const double *w,
                      double F[3]) {
    double wr[PART_TRI], wi[PART_TRI];
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            wr[TRI(l, m)] = w[harm_re(l, m)];
            wi[TRI(l, m)] = m ? w[harm_im(l, m)] : 0.0;
        }
    double dz = 0, sr = 0, si = 0;
    for (int l = 1; l <= p; ++l) {
        const double *r1 = wr + TRI(l - 1, 0), *i1 = wi + TRI(l - 1, 0);
#define U(k) u[(size_t)(l * l + (k)) * ustride]
        double dzl = 0;
        for (int m = 1; m <= l - 1; ++m) dzl += U(2 * m - 1) * r1[m] - U(2 * m) * i1[m];
        dz += U(0) * r1[0] + 2.0 * dzl;
        for (int m = 1; m <= l; ++m) {
            double ur = U(2 * m - 1), ui = U(2 * m);
            sr += ur * r1[m - 1] - ui * i1[m - 1];
            si += ur * i1[m - 1] + ui * r1[m - 1];
        }
        for (int m = 0; m <= l - 2; ++m) {
            double ur = m == 0 ? U(0) : U(2 * m - 1), ui = m == 0 ? 0.0 : U(2 * m);
            sr -= ur * r1[m + 1] - ui * i1[m + 1];
            si += ur * i1[m + 1] + ui * r1[m + 1];
        }
#undef U
    }
    double ih2 = 1.0 / (h * h);
    F[0] = sr * ih2, F[1] = si * ih2, F[2] = -dz * ih2;
}

/* Multipole at a point: phi = sum w_lm I_lm(v); dI_lm/dz = -I_{l+1,m},
 * (d/dx + i d/dy) I_lm = I_{l+1,m+1}. */
void harm_m2p(int p, double h, const double c[3], const double *w, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez) {
    simd_d re[PART_TRI], im[PART_TRI];
    const double ih = 1.0 / h, ih2 = ih * ih;
    for (long i = 0; i < n; i += SIMD_W) {
        long mw = n - i;
        /* padding lanes repeat the first target of the group (well separated too) */
        simd_d X = (load_w(x + i, mw, x[i]) - c[0]) * ih, Y = (load_w(y + i, mw, y[i]) - c[1]) * ih;
        simd_d Z = (load_w(z + i, mw, z[i]) - c[2]) * ih;
        irregular_tri_v(p + 1, X, Y, Z, re, im);
        simd_d f = {0}, zs = {0}, tr = {0}, ti = {0}; /* T+ = sum w_lm I_{l+1,m+1} */
        for (int l = 0; l <= p; ++l) {
            const double *a = w + l * l;
            const simd_d *r = re + TRI(l, 0), *s = im + TRI(l, 0);
            const simd_d *r1 = re + TRI(l + 1, 0), *i1 = im + TRI(l + 1, 0);
            simd_d fl = {0}, zl = {0};
            for (int m = 1; m <= l; ++m) {
                fl += a[2 * m - 1] * r[m] - a[2 * m] * s[m];
                zl += a[2 * m - 1] * r1[m] - a[2 * m] * i1[m];
            }
            f += a[0] * r[0] + 2.0 * fl;
            zs += a[0] * r1[0] + 2.0 * zl;
            /* T+: sum_{m=0..l} w_lm I_{l+1,m+1} - sum_{n=1..l} conj(w_ln I_{l+1,n-1}) */
            for (int m = 0; m <= l; ++m) {
                double wr = m == 0 ? a[0] : a[2 * m - 1], wi = m == 0 ? 0.0 : a[2 * m];
                tr += wr * r1[m + 1] - wi * i1[m + 1];
                ti += wr * i1[m + 1] + wi * r1[m + 1];
                if (m >= 1) {
                    tr -= wr * r1[m - 1] - wi * i1[m - 1];
                    ti += wr * i1[m - 1] + wi * r1[m - 1];
                }
            }
        }
        for (int k = 0; k < SIMD_W && k < mw; ++k) {
            if (phi) phi[i + k] += f[k] * ih;
            if (ex) {
                ex[i + k] -= tr[k] * ih2;
                ey[i + k] -= ti[k] * ih2;
                ez[i + k] += zs[k] * ih2;
            }
        }
    }
}
