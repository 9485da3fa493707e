#include "core/harmonics.h"

#include "core/simd.h"

#include "fmm_common.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRI(l, m) ((l) * ((l) + 1) / 2 + (m))
/* internal limit of the stack tables: the lattice sums reach order 2 p + 40 (pbc/lattice.c) */
#define HARM_PMAX (2 * FMM_ORDER_MAX + 44)
#define TRI_MAX (HARM_PMAX + 2) * (HARM_PMAX + 3) / 2

/* Regular harmonics R_lm(v), m >= 0, triangle storage, split real/imaginary parts. */
static void regular_tri(int p, double x, double y, double z, double *re, double *im) {
    double r2 = x * x + y * y + z * z;
    re[0] = 1.0;
    im[0] = 0.0;
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            double f = -0.5 / m;
            /* (a + ib)(x - iy) */
            re[t] = f * (re[s] * x + im[s] * y);
            im[t] = f * (im[s] * x - re[s] * y);
        }
        double pr = 0.0, pi = 0.0, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            double inv = 1.0 / ((double)(l + 1) * (l + 1) - (double)m * m);
            double a = (2 * l + 1) * z;
            double nr = (a * cr - r2 * pr) * inv, ni = (a * ci - r2 * pi) * inv;
            int u = TRI(l + 1, m);
            re[u] = nr;
            im[u] = ni;
            pr = cr;
            pi = ci;
            cr = nr;
            ci = ni;
        }
    }
}

/* Irregular harmonics I_lm(v), m >= 0, triangle storage. */
static void irregular_tri(int p, double x, double y, double z, double *re, double *im) {
    double r2 = x * x + y * y + z * z, ir2 = 1.0 / r2;
    re[0] = sqrt(ir2);
    im[0] = 0.0;
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            double f = -(2 * m - 1) * ir2;
            /* (a + ib)(x + iy) */
            re[t] = f * (re[s] * x - im[s] * y);
            im[t] = f * (re[s] * y + im[s] * x);
        }
        double pr = 0.0, pi = 0.0, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            double a = (2 * l + 1) * z, b = (double)l * l - (double)m * m;
            double nr = (a * cr - b * pr) * ir2, ni = (a * ci - b * pi) * ir2;
            int u = TRI(l + 1, m);
            re[u] = nr;
            im[u] = ni;
            pr = cr;
            pi = ci;
            cr = nr;
            ci = ni;
        }
    }
}

static void tri_to_full(int p, const double *re, const double *im, double *fre, double *fim) {
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            double s = m & 1 ? -1.0 : 1.0;
            fre[harm_full(l, m)] = re[TRI(l, m)];
            fim[harm_full(l, m)] = im[TRI(l, m)];
            fre[harm_full(l, -m)] = s * re[TRI(l, m)];
            fim[harm_full(l, -m)] = -s * im[TRI(l, m)];
        }
}

void harm_regular_full(int p, const double v[3], double *fre, double *fim) {
    double re[TRI_MAX], im[TRI_MAX];
    regular_tri(p, v[0], v[1], v[2], re, im);
    tri_to_full(p, re, im, fre, fim);
}

void harm_real_to_full(int p, const double *x, double *re, double *im) {
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            const double r = x[harm_re(l, m)], c = m ? x[harm_im(l, m)] : 0.0, sg = m & 1 ? -1 : 1;
            re[harm_full(l, m)] = r, im[harm_full(l, m)] = c;
            re[harm_full(l, -m)] = sg * r, im[harm_full(l, -m)] = -sg * c;
        }
}

void harm_irregular_full(int p, const double v[3], double *fre, double *fim) {
    double re[TRI_MAX], im[TRI_MAX];
    irregular_tri(p, v[0], v[1], v[2], re, im);
    tri_to_full(p, re, im, fre, fim);
}

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

/* Dense real-layout matrix of a linear map out_lm = sum_{j,k=-j..j} f(l,m,j,k) in_jk. */
typedef double complex (*harm_coef_fn)(int l, int m, int j, int k, const void *ctx);

static void build_matrix(int p_out, int p_in, harm_coef_fn f, const void *ctx, double *A) {
    int nin = harm_ncoef(p_in), nout = harm_ncoef(p_out);
    memset(A, 0, sizeof(double) * (size_t)nin * nout);
    for (int l = 0; l <= p_out; ++l)
        for (int m = 0; m <= l; ++m)
            for (int j = 0; j <= p_in; ++j)
                for (int k = 0; k <= j; ++k) {
                    /* out_lm = c1 a + c2 conj(a), a = in_jk, since
                       in_{j,-k} = (-1)^k conj(in_jk) */
                    double complex c1 = f(l, m, j, k, ctx);
                    double complex c2 = k > 0 ? (k & 1 ? -1.0 : 1.0) * f(l, m, j, -k, ctx) : 0.0;
                    double c1r = creal(c1), c1i = cimag(c1), c2r = creal(c2), c2i = cimag(c2);
                    double *rowr = A + (size_t)harm_re(l, m) * nin;
                    double *rowi = m > 0 ? A + (size_t)harm_im(l, m) * nin : NULL;
                    /* Re out = (c1r + c2r) ar + (c2i - c1i) ai;
                       Im out = (c1i + c2i) ar + (c1r - c2r) ai */
                    rowr[harm_re(j, k)] += c1r + c2r;
                    if (k > 0) rowr[harm_im(j, k)] += c2i - c1i;
                    if (rowi) {
                        rowi[harm_re(j, k)] += c1i + c2i;
                        if (k > 0) rowi[harm_im(j, k)] += c1r - c2r;
                    }
                }
}

struct table_ctx {
    const double *re, *im; /* full-index harmonic table */
};

/* re + i im, exactly (CMPLX is not defined for every compiler): a double complex is laid out as
   an array of its two parts (C11 6.2.5) */
static inline double complex make_complex(double re, double im) {
    union {
        double complex z;
        double v[2];
    } u = {.v = {re, im}};
    return u.z;
}

static double complex table_at(const struct table_ctx *c, int l, int m) {
    if (l < 0 || m > l || m < -l) return 0.0;
    return make_complex(c->re[harm_full(l, m)], c->im[harm_full(l, m)]);
}

/* M2M: w'_lm = sum_jk w_jk R_{l-j,m-k}(a - a'); scaled child (h/2) -> parent (h): 2^-j */
static double complex m2m_coef(int l, int m, int j, int k, const void *ctx) {
    if (j > l) return 0.0;
    return ldexp(1.0, -j) * table_at(ctx, l - j, m - k);
}

/* L2L: u'_lm = sum_jk u_jk R_{j-l,k-m}(r' - r); scaled parent (h) -> child (h/2): 2^-(l+1) */
static double complex l2l_coef(int l, int m, int j, int k, const void *ctx) {
    if (j < l) return 0.0;
    return ldexp(1.0, -(l + 1)) * table_at(ctx, j - l, k - m);
}

/* M2L: u_lm += sum_jk (-1)^j w_jk I_{l+j,m+k}(a - r) */
static double complex m2l_coef(int l, int m, int j, int k, const void *ctx) {
    return (j & 1 ? -1.0 : 1.0) * table_at(ctx, l + j, m + k);
}

/* the translation matrices read harmonics up to order 2 p */
#define FULL_MAX ((2 * FMM_ORDER_MAX + 1) * (2 * FMM_ORDER_MAX + 1))

/* The shift s (child centre - parent centre, in parent box units) is the argument a - a'
 * of the M2M and r' - r of the L2L. */
void harm_m2m_matrix(int p, const double s[3], double *A) {
    double re[FULL_MAX], im[FULL_MAX];
    harm_regular_full(p, s, re, im);
    struct table_ctx c = {re, im};
    build_matrix(p, p, m2m_coef, &c, A);
}

void harm_l2l_matrix(int p, const double s[3], double *A) {
    double re[FULL_MAX], im[FULL_MAX];
    harm_regular_full(p, s, re, im);
    struct table_ctx c = {re, im};
    build_matrix(p, p, l2l_coef, &c, A);
}

void harm_m2l_matrix_table(int p, const double *gre, const double *gim, double *A) {
    struct table_ctx c = {gre, gim};
    build_matrix(p, p, m2l_coef, &c, A);
}

void harm_m2l_matrix(int p, const double d[3], double *A) {
    double re[FULL_MAX], im[FULL_MAX];
    harm_irregular_full(2 * p, d, re, im);
    struct table_ctx c = {re, im};
    build_matrix(p, p, m2l_coef, &c, A);
}

void harm_m2l_zblocks(int p, double dz, double *zre, double *zim) {
    double re[FULL_MAX], im[FULL_MAX];
    const double d[3] = {0, 0, dz};
    harm_irregular_full(2 * p, d, re, im);
    struct table_ctx c = {re, im};
    size_t k = 0;
    /* build_matrix's entries (Re u_lm, Re w_jm) and (Im u_lm, Im w_jm), in panel_zblocks' order */
    for (int m = 0; m <= p; ++m)
        for (int l = m; l <= p; ++l)
            for (int j = m; j <= p; ++j, ++k) {
                const double c1 = creal(m2l_coef(l, m, j, m, &c));
                const double c2 = m ? (m & 1 ? -1.0 : 1.0) * creal(m2l_coef(l, m, j, -m, &c)) : 0.0;
                zre[k] = c1 + c2, zim[k] = m ? c1 - c2 : 0.0;
            }
}

void harm_gauss_legendre(int n, double *t, double *w) {
    for (int i = 0; i < n; ++i) {
        double x = cos(3.14159265358979323846 * (i + 0.75) / (n + 0.5)), dp = 1.0;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1.0, p1 = x;
            for (int k = 2; k <= n; ++k) {
                double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            dp = n * (x * p1 - p0) / (x * x - 1.0);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-16) break;
        }
        t[i] = x;
        w[i] = 2.0 / ((1.0 - x * x) * dp * dp);
    }
}

/* Real-layout block (2l+1)^2 of the degree-l map out_m = sum_{k=-l..l} c_mk in_k, using
 * in_{-k} = (-1)^k conj(in_k); c given as (2l+1)^2 arrays indexed (m+l)(2l+1) + (k+l). */
static void block_to_real(int l, const double *cr, const double *ci, double *out) {
    int w = 2 * l + 1;
    memset(out, 0, sizeof(double) * (size_t)w * w);
    for (int m = 0; m <= l; ++m)
        for (int k = 0; k <= l; ++k) {
            int a1 = (m + l) * w + (k + l), a2 = (m + l) * w + (l - k);
            double s = k & 1 ? -1.0 : 1.0;
            double c1r = cr[a1], c1i = ci[a1];
            double c2r = k > 0 ? s * cr[a2] : 0.0, c2i = k > 0 ? s * ci[a2] : 0.0;
            int rm = m == 0 ? 0 : 2 * m - 1, rk = k == 0 ? 0 : 2 * k - 1;
            out[rm * w + rk] += c1r + c2r;
            if (k > 0) out[rm * w + 2 * k] += c2i - c1i;
            if (m > 0) {
                out[2 * m * w + rk] += c1i + c2i;
                if (k > 0) out[2 * m * w + 2 * k] += c1r - c2r;
            }
        }
}

/* Per degree l, R_lm(Q x) = sum_k a_mk R_lk(x); the a_mk are projections computed by a
 * quadrature on the unit sphere that is exact for degree-2l products (Gauss-Legendre with
 * l+1 nodes in cos(theta), trapezoid with 2l+1 nodes in phi). Multipoles then transform as
 * w' = a w and locals as u_k = sum_m a_mk u'_m. */
/* t_m = sqrt((l+m)! (l-m)!) / l!, m = -l..l at index m + l: the R_lm times t_m are orthonormal over
 * the sphere up to a factor per degree, so the rotations are unitary in that basis */
static void unitary_scales(int l, double *t) {
    t[l] = 1.0;
    for (int j = l + 1; j <= 2 * l; ++j)
        t[j] = t[j - 1] * sqrt((double)j / (2 * l - j + 1)), t[2 * l - j] = t[j];
}

/* Complex block of degree l of the rotation x -> Qx, R_lm(Qx) = sum_k a_mk R_lk(x), rows and
 * columns m, k = -l..l at (m + l)(2l + 1) + k + l, by quadrature of the projections onto the R_lk
 * over the unit sphere (Gauss-Legendre in cos t, trapezoid in phi: exact for these polynomials).
 * O(l^4). */
static int rotation_block_quadrature(int l, const double Q[9], double *ar, double *ai) {
    const double pi = 3.14159265358979323846;
    const int w = 2 * l + 1, nt = l + 1, nphi = 2 * l + 1;
    double *t = malloc(sizeof(double) * 2 * nt), *wt = t + nt;
    double *re0 = malloc(sizeof(double) * TRI_MAX * 4), *im0 = re0 + TRI_MAX, *re1 = im0 + TRI_MAX,
           *im1 = re1 + TRI_MAX;
    double *norm = calloc(w, sizeof(double));
    if (!t || !re0 || !norm) {
        free(t), free(re0), free(norm);
        return 1;
    }
    harm_gauss_legendre(nt, t, wt);
    memset(ar, 0, sizeof(double) * (size_t)w * w);
    memset(ai, 0, sizeof(double) * (size_t)w * w);
    for (int it = 0; it < nt; ++it)
        for (int ip = 0; ip < nphi; ++ip) {
            double ph = 2 * pi * ip / nphi, st = sqrt(1 - t[it] * t[it]);
            double x[3] = {st * cos(ph), st * sin(ph), t[it]}, y[3];
            for (int r = 0; r < 3; ++r)
                y[r] = Q[3 * r] * x[0] + Q[3 * r + 1] * x[1] + Q[3 * r + 2] * x[2];
            double g = wt[it] * 2 * pi / nphi;
            regular_tri(l, x[0], x[1], x[2], re0, im0);
            regular_tri(l, y[0], y[1], y[2], re1, im1);
            /* degree-l values for m = -l..l */
            double xr[2 * HARM_PMAX + 1], xi[2 * HARM_PMAX + 1], yr[2 * HARM_PMAX + 1],
                yi[2 * HARM_PMAX + 1];
            for (int m = 0; m <= l; ++m) {
                double s = m & 1 ? -1.0 : 1.0;
                xr[l + m] = re0[TRI(l, m)], xi[l + m] = im0[TRI(l, m)];
                xr[l - m] = s * xr[l + m], xi[l - m] = -s * xi[l + m];
                yr[l + m] = re1[TRI(l, m)], yi[l + m] = im1[TRI(l, m)];
            }
            for (int k = 0; k < w; ++k) {
                /* g * conj(R_lk(x)); rows m >= 0 only, the others follow below */
                double cr = g * xr[k], ci = -g * xi[k];
                norm[k] += g * (xr[k] * xr[k] + xi[k] * xi[k]);
                for (int m = l; m < w; ++m) {
                    ar[m * w + k] += yr[m] * cr - yi[m] * ci;
                    ai[m * w + k] += yr[m] * ci + yi[m] * cr;
                }
            }
        }
    for (int m = l; m < w; ++m)
        for (int k = 0; k < w; ++k) ar[m * w + k] /= norm[k], ai[m * w + k] /= norm[k];
    /* X_{l,-m} = (-1)^m conj(X_lm) at real points gives a_{-m,-k} = (-1)^(m+k) conj(a_mk) */
    for (int m = 0; m < l; ++m)
        for (int k = 0; k < w; ++k) {
            double s = (m + k) & 1 ? -1.0 : 1.0;
            int src = (w - 1 - m) * w + (w - 1 - k);
            ar[m * w + k] = s * ar[src], ai[m * w + k] = -s * ai[src];
        }
    free(t), free(re0), free(norm);
    return 0;
}

/* Q = Rz(a) Ry(b) Rz(c) (z-y-z Euler angles, Rz(t) turning x towards y); 1 if Q is not a proper
 * rotation or not finite */
static int euler_zyz(const double Q[9], double *a, double *b, double *c) {
    const double sb = sqrt(Q[6] * Q[6] + Q[7] * Q[7]);
    *b = atan2(sb, Q[8]);
    if (sb > 1e-12) {
        *a = atan2(Q[5], Q[2]), *c = atan2(Q[7], -Q[6]);
    } else { /* b = 0: Q = Rz(a); b = pi: Q = Rz(a) Ry(pi) */
        *c = 0.0;
        *a = Q[8] > 0 ? atan2(Q[3], Q[0]) : atan2(-Q[3], Q[4]);
    }
    const double ca = cos(*a), sa = sin(*a), cb = cos(*b), s = sin(*b), cc = cos(*c), sc = sin(*c);
    const double R[9] = {ca * cb * cc - sa * sc,
                         -ca * cb * sc - sa * cc,
                         ca * s,
                         sa * cb * cc + ca * sc,
                         -sa * cb * sc + ca * cc,
                         sa * s,
                         -s * cc,
                         s * sc,
                         cb};
    for (int i = 0; i < 9; ++i) /* (written so that a NaN fails too) */
        if (!(fabs(R[i] - Q[i]) <= 1e-10)) return 1;
    return 0;
}

int harm_rotation_matrices(int p, int nq, const double *Q, double *Aw, double *Au, size_t stride) {
    /* a(Q) = Dz(a) a(P) Dz(b) a(P^-1) Dz(c) for Q = Rz(a) Ry(b) Rz(c): Ry(b) = P Rz(b) P^-1 with
     * P = Rx(-pi/2) (z onto y), a(Rz(t)) = Dz(t) = diag(e^{-i m t}), and P^-1 = Rz(pi) P Rz(pi),
     * so a(P^-1)_jk = (-1)^(j+k) a(P)_jk. Only a(P) needs the quadrature (O(p^5)); each rotation
     * is then O(p^4) (the 56 M2L classes at p 28 took 2.6 s with a quadrature each). The product
     * runs in the unitary basis (unitary_scales), U = T a T^-1: in the R_lm themselves the entries
     * span factorial ratios, and the sum over j lost all digits of the local rotations above
     * degree ~28. */
    const double P[9] = {1, 0, 0, 0, 0, 1, 0, -1, 0};
    size_t nb = 0;
    for (int l = 0; l <= p; ++l) nb += (size_t)(2 * l + 1) * (2 * l + 1);
    double *pr = malloc(sizeof(double) * 2 * nb), *pim = pr ? pr + nb : NULL;
    int fail = !pr;
    for (int l = 0, off = 0; l <= p && !fail; off += (2 * l + 1) * (2 * l + 1), ++l) {
        const int w = 2 * l + 1;
        double t[2 * HARM_PMAX + 1];
        fail = rotation_block_quadrature(l, P, pr + off, pim + off);
        unitary_scales(l, t);
        for (int m = 0; m < w; ++m)
            for (int k = 0; k < w; ++k)
                pr[off + m * w + k] *= t[m] / t[k], pim[off + m * w + k] *= t[m] / t[k];
    }
#pragma omp parallel for schedule(dynamic, 1) reduction(| : fail)
    for (int q = 0; q < nq; ++q) {
        double a, b, c;
        const int w2 = (2 * p + 1) * (2 * p + 1);
        double *ar = malloc(sizeof(double) * 4 * (size_t)w2), *ai = ar ? ar + w2 : NULL,
               *tr = ai ? ai + w2 : NULL, *ti = tr ? tr + w2 : NULL;
        double *Lr = malloc(sizeof(double) * 2 * (size_t)w2), *Li = Lr ? Lr + w2 : NULL;
        double eb[2 * (2 * HARM_PMAX + 1)], ec[2 * (2 * HARM_PMAX + 1)];
        if (fail || !ar || !Lr || euler_zyz(Q + 9 * q, &a, &b, &c)) {
            free(ar), free(Lr);
            fail = 1;
            continue;
        }
        double *bw = Aw + (size_t)q * stride, *bu = Au + (size_t)q * stride;
        for (int l = 0, off = 0; l <= p; off += (2 * l + 1) * (2 * l + 1), ++l) {
            const int w = 2 * l + 1;
            const double *Ar = pr + off, *Ai = pim + off;
            double t[2 * HARM_PMAX + 1];
            unitary_scales(l, t);
            /* L_jk = e^{-i j b} (-1)^(j+k) a(P)_jk e^{-i k c}, then a_mk = e^{-i m a} sum_j a(P)_mj
             * L_jk */
            for (int j = 0; j < w; ++j) {
                const double sg = (j & 1) ? -1.0 : 1.0; /* (-1)^(j - l + l) with the k part below */
                eb[2 * j] = sg * cos((j - l) * b), eb[2 * j + 1] = -sg * sin((j - l) * b);
                ec[2 * j] = sg * cos((j - l) * c), ec[2 * j + 1] = -sg * sin((j - l) * c);
            }
            for (int j = 0; j < w; ++j)
                for (int k = 0; k < w; ++k) {
                    const double pr2 = eb[2 * j] * ec[2 * k] - eb[2 * j + 1] * ec[2 * k + 1],
                                 pi2 = eb[2 * j] * ec[2 * k + 1] + eb[2 * j + 1] * ec[2 * k];
                    const double xr = Ar[j * w + k], xi = Ai[j * w + k];
                    Lr[j * w + k] = pr2 * xr - pi2 * xi, Li[j * w + k] = pr2 * xi + pi2 * xr;
                }
            for (int m = 0; m < w; ++m) {
                double *sr = ar + m * w, *si = ai + m * w;
                for (int k = 0; k < w; ++k) sr[k] = si[k] = 0.0;
                for (int j = 0; j < w; ++j) {
                    const double xr = Ar[m * w + j], xi = Ai[m * w + j];
                    const double *lr = Lr + j * w, *li = Li + j * w;
#pragma omp simd
                    for (int k = 0; k < w; ++k)
                        sr[k] += xr * lr[k] - xi * li[k], si[k] += xr * li[k] + xi * lr[k];
                }
                const double cr = cos((m - l) * a), ci = -sin((m - l) * a);
                for (int k = 0; k < w;
                     ++k) { /* back from the unitary basis: a_mk = U_mk t_k / t_m */
                    const double r = sr[k], i2 = si[k], f = t[k] / t[m];
                    sr[k] = f * (cr * r - ci * i2), si[k] = f * (cr * i2 + ci * r);
                }
            }
            block_to_real(l, ar, ai, bw);
            for (int m = 0; m < w; ++m) /* transpose for the locals */
                for (int k = 0; k < w; ++k)
                    tr[k * w + m] = ar[m * w + k], ti[k * w + m] = ai[m * w + k];
            block_to_real(l, tr, ti, bu);
            bw += w * w;
            bu += w * w;
        }
        free(ar), free(Lr);
    }
    free(pr);
    return fail;
}
