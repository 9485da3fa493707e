/* core/harmonics_translations.c - the dense translation matrices of scaled expansions in the
 * real layout (core/harmonics.h): M2M child to parent, L2L parent to child, M2L between boxes of
 * one size (from the irregular harmonics, or from a given table as the lattice sums' is), and
 * the M2L along +z in the z blocks of core/panel.h. One builder (build_matrix) turns each
 * operator's complex coefficients into the real layout. */
#include "core/harmonics.h"

#include "fmm_common.h"

#include <complex.h>
#include <math.h>
#include <string.h>

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
