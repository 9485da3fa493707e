#include "core/harmonics.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRI(l, m) ((l) * ((l) + 1) / 2 + (m))
#define HARM_PMAX 64 /* internal limit of the stack tables (orders up to 2*30+2) */
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

void harm_irregular_full(int p, const double v[3], double *fre, double *fim) {
    double re[TRI_MAX], im[TRI_MAX];
    irregular_tri(p, v[0], v[1], v[2], re, im);
    tri_to_full(p, re, im, fre, fim);
}

/* acc (real layout) += q * X (triangle) */
static void accumulate(int p, double q, const double *re, const double *im, double *acc) {
    for (int l = 0; l <= p; ++l) {
        double *a = acc + l * l;
        const double *r = re + TRI(l, 0), *i = im + TRI(l, 0);
        a[0] += q * r[0];
        for (int m = 1; m <= l; ++m) {
            a[2 * m - 1] += q * r[m];
            a[2 * m] += q * i[m];
        }
    }
}

void harm_p2m(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *w) {
    double re[TRI_MAX], im[TRI_MAX], ih = 1.0 / h;
    for (long i = 0; i < n; ++i) {
        regular_tri(p, (x[i] - c[0]) * ih, (y[i] - c[1]) * ih, (z[i] - c[2]) * ih, re, im);
        accumulate(p, q[i], re, im, w);
    }
}

void harm_p2l(int p, double h, const double c[3], long n, const double *x, const double *y,
              const double *z, const double *q, double *u) {
    double re[TRI_MAX], im[TRI_MAX], ih = 1.0 / h;
    for (long i = 0; i < n; ++i) {
        irregular_tri(p, (x[i] - c[0]) * ih, (y[i] - c[1]) * ih, (z[i] - c[2]) * ih, re, im);
        accumulate(p, q[i], re, im, u);
    }
}

/* Local expansion at a point: phi = sum_lm u_lm R_lm(v) (full m range),
 * grad_x + i grad_y and grad_z from dR_lm/dz = R_{l-1,m},
 * dR_lm/dx = (R_{l-1,m+1} - R_{l-1,m-1})/2, dR_lm/dy = i (R_{l-1,m+1} + R_{l-1,m-1})/2. */
void harm_l2p(int p, double h, const double c[3], const double *u, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez) {
    double re[TRI_MAX], im[TRI_MAX], ih = 1.0 / h, ih2 = ih * ih;
    for (long i = 0; i < n; ++i) {
        regular_tri(p, (x[i] - c[0]) * ih, (y[i] - c[1]) * ih, (z[i] - c[2]) * ih, re, im);
        double f = 0.0, dz = 0.0, sr = 0.0, si = 0.0; /* S- = sum u_lm R_{l-1,m-1} */
        for (int l = 0; l <= p; ++l) {
            const double *a = u + l * l;
            const double *r = re + TRI(l, 0), *im_ = im + TRI(l, 0);
            double fl = 0.0;
            for (int m = 1; m <= l; ++m) fl += a[2 * m - 1] * r[m] - a[2 * m] * im_[m];
            f += a[0] * r[0] + 2.0 * fl;
            if (l == 0) continue;
            const double *r1 = re + TRI(l - 1, 0), *i1 = im + TRI(l - 1, 0);
            /* dz: sum_m u_lm R_{l-1,m} */
            double dzl = 0.0;
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
                double pr = ur * r1[m + 1] - ui * i1[m + 1];
                double pi = ur * i1[m + 1] + ui * r1[m + 1];
                sr -= pr;
                si += pi;
            }
        }
        if (phi) phi[i] += f * ih;
        if (ex) {
            ex[i] += sr * ih2;
            ey[i] += si * ih2;
            ez[i] -= dz * ih2;
        }
    }
}

/* Multipole at a point: phi = sum w_lm I_lm(v); dI_lm/dz = -I_{l+1,m},
 * (d/dx + i d/dy) I_lm = I_{l+1,m+1}. */
void harm_m2p(int p, double h, const double c[3], const double *w, long n, const double *x,
              const double *y, const double *z, double *phi, double *ex, double *ey, double *ez) {
    double re[TRI_MAX], im[TRI_MAX], ih = 1.0 / h, ih2 = ih * ih;
    for (long i = 0; i < n; ++i) {
        irregular_tri(p + 1, (x[i] - c[0]) * ih, (y[i] - c[1]) * ih, (z[i] - c[2]) * ih, re, im);
        double f = 0.0, zs = 0.0, tr = 0.0, ti = 0.0; /* T+ = sum w_lm I_{l+1,m+1} */
        for (int l = 0; l <= p; ++l) {
            const double *a = w + l * l;
            const double *r = re + TRI(l, 0), *im_ = im + TRI(l, 0);
            const double *r1 = re + TRI(l + 1, 0), *i1 = im + TRI(l + 1, 0);
            double fl = 0.0, zl = 0.0;
            for (int m = 1; m <= l; ++m) {
                fl += a[2 * m - 1] * r[m] - a[2 * m] * im_[m];
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
        if (phi) phi[i] += f * ih;
        if (ex) {
            ex[i] -= tr * ih2;
            ey[i] -= ti * ih2;
            ez[i] += zs * ih2;
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
                    /* out_lm = c1 a + c2 conj(a), a = in_jk, since in_{j,-k} = (-1)^k conj(in_jk) */
                    double complex c1 = f(l, m, j, k, ctx);
                    double complex c2 = k > 0 ? (k & 1 ? -1.0 : 1.0) * f(l, m, j, -k, ctx) : 0.0;
                    double c1r = creal(c1), c1i = cimag(c1), c2r = creal(c2), c2i = cimag(c2);
                    double *rowr = A + (size_t)harm_re(l, m) * nin;
                    double *rowi = m > 0 ? A + (size_t)harm_im(l, m) * nin : NULL;
                    /* Re out = (c1r + c2r) ar + (c2i - c1i) ai ; Im out = (c1i + c2i) ar + (c1r - c2r) ai */
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

static double complex table_at(const struct table_ctx *c, int l, int m) {
    if (l < 0 || m > l || m < -l) return 0.0;
    return CMPLX(c->re[harm_full(l, m)], c->im[harm_full(l, m)]);
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

#define FULL_MAX ((HARM_PMAX + 1) * (HARM_PMAX + 1))

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

void harm_m2l_matrix(int p, const double d[3], double *A) {
    double re[FULL_MAX], im[FULL_MAX];
    harm_irregular_full(2 * p, d, re, im);
    struct table_ctx c = {re, im};
    build_matrix(p, p, m2l_coef, &c, A);
}
