#include "pbc/lattice.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"

#define LAT_P 40 /* internal order of the 3x3x3 block multipoles (recipe: 40 and 48 agree to 1e-13) */
#define LAT_K 20 /* renormalisation levels: each gains 1/9 */

/* exact zeros of sums over cubic-symmetric point sets: odd L, L = 2, M mod 4 != 0 */
static int cubic_zero(int l, int m) { return (l & 1) || l == 2 || (((m % 4) + 4) % 4) != 0; }

int pbc_lattice_sums(int lmax, double *are, double *aim) {
    const int P = LAT_P, lg = lmax + P, np = harm_ncoef(P), ng = harm_ncoef(lg), no = harm_ncoef(lmax);
    double *re = malloc(sizeof(double) * ng), *im = malloc(sizeof(double) * ng);
    double complex *G = calloc((size_t)ng, sizeof(double complex)), *B = calloc((size_t)np, sizeof(double complex));
    double complex *v = calloc((size_t)np, sizeof(double complex)), *v2 = calloc((size_t)np, sizeof(double complex));
    double complex *out = calloc((size_t)no, sizeof(double complex));
    if (!re || !im || !G || !B || !v || !v2 || !out) {
        free(re), free(im), free(G), free(B), free(v), free(v2), free(out);
        return 1;
    }
    /* G: the 702 cells with 2 <= |n|_inf <= 4; B: the 27 cells |n|_inf <= 1 */
    for (int a = -4; a <= 4; ++a)
        for (int b = -4; b <= 4; ++b)
            for (int c = -4; c <= 4; ++c) {
                int inf = abs(a) > abs(b) ? abs(a) : abs(b);
                inf = inf > abs(c) ? inf : abs(c);
                double n[3] = {a, b, c};
                if (inf >= 2) {
                    harm_irregular_full(lg, n, re, im);
                    for (int k = 0; k < ng; ++k) G[k] += CMPLX(re[k], im[k]);
                } else if (inf <= 1) {
                    harm_regular_full(P, n, re, im);
                    for (int k = 0; k < np; ++k) B[k] += CMPLX(re[k], im[k]);
                }
            }
    for (int l = 0; l <= lg; ++l)
        for (int m = -l; m <= l; ++m) {
            int f = harm_full(l, m);
            G[f] = cubic_zero(l, m) ? 0.0 : creal(G[f]);
            if (l <= P) B[f] = cubic_zero(l, m) ? 0.0 : creal(B[f]);
        }
    B[0] = 27.0;
    /* renormalisation applied to a unit charge: level k adds the shell of 3^k-blocks */
    v[0] = 1.0;
    for (int k = 0; k <= LAT_K; ++k) {
        for (int l = 0; l <= lmax; ++l) {
            double f = pow(3.0, -(double)k * (l + 1));
            if (f < 1e-300) break;
            for (int m = -l; m <= l; ++m) {
                double complex s = 0;
                for (int j = 0; j <= P; ++j) {
                    double sg = j & 1 ? -1.0 : 1.0;
                    for (int kk = -j; kk <= j; ++kk) {
                        if (abs(m + kk) > l + j) continue;
                        s += sg * G[harm_full(l + j, m + kk)] * v[harm_full(j, kk)];
                    }
                }
                out[harm_full(l, m)] += f * s;
            }
        }
        /* v <- 3^-l (S v): M2M of the 27 copies, rescaled so the block has size 1 again */
        for (int l = 0; l <= P; ++l)
            for (int m = -l; m <= l; ++m) {
                double complex s = 0;
                for (int j = 0; j <= l; ++j)
                    for (int kk = -j; kk <= j; ++kk)
                        if (abs(m - kk) <= l - j) s += B[harm_full(l - j, m - kk)] * v[harm_full(j, kk)];
                v2[harm_full(l, m)] = pow(3.0, -l) * s;
            }
        memcpy(v, v2, sizeof(double complex) * np);
    }
    out[0] = 0.0; /* the charge term diverges; the caller neutralises the cell */
    for (int k = 0; k < no; ++k) are[k] = creal(out[k]), aim[k] = cimag(out[k]);
    free(re), free(im), free(G), free(B), free(v), free(v2), free(out);
    return 0;
}

void pbc_background_multipole(int p, double *b) {
    /* tensor Gauss-Legendre with p/2 + 2 nodes per axis integrates the degree-p polynomials
     * exactly */
    int ng = p / 2 + 2;
    double t[64], w[64];
    for (int i = 0; i < ng; ++i) {
        double x = cos(3.14159265358979323846 * (i + 0.75) / (ng + 0.5)), dp = 1;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1, p1 = x;
            for (int k = 2; k <= ng; ++k) {
                double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            dp = ng * (x * p1 - p0) / (x * x - 1);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-16) break;
        }
        t[i] = 0.5 * x, w[i] = 1.0 / ((1 - x * x) * dp * dp); /* mapped to [-1/2, 1/2] */
    }
    int n = harm_ncoef(p);
    memset(b, 0, sizeof(double) * n);
    double xs[1], ys[1], zs[1], qs[1];
    const double c0[3] = {0, 0, 0};
    for (int i = 0; i < ng; ++i)
        for (int j = 0; j < ng; ++j)
            for (int k = 0; k < ng; ++k) {
                xs[0] = t[i], ys[0] = t[j], zs[0] = t[k], qs[0] = w[i] * w[j] * w[k];
                harm_p2m(p, 1.0, c0, 1, xs, ys, zs, qs, b);
            }
}

static double F(double x, double y, double z) {
    double r = sqrt(x * x + y * y + z * z);
    return y * z * log(x + r) + x * z * log(y + r) + x * y * log(z + r) - 0.5 * x * x * atan(y * z / (x * r)) -
           0.5 * y * y * atan(x * z / (y * r)) - 0.5 * z * z * atan(x * y / (z * r));
}

static double Fx(double x, double y, double z) {
    double r = sqrt(x * x + y * y + z * z);
    return y * log(z + r) + z * log(y + r) - x * atan(y * z / (x * r));
}

void pbc_cube_potential(double h, const double Y[3], double *phi, double grad[3]) {
    double p = 0, g[3] = {0, 0, 0};
    for (int sx = 0; sx < 2; ++sx)
        for (int sy = 0; sy < 2; ++sy)
            for (int sz = 0; sz < 2; ++sz) {
                double s = ((3 - sx - sy - sz) & 1) ? -1.0 : 1.0; /* + at the upper corner */
                double u[3] = {(sx ? h : -h) - Y[0], (sy ? h : -h) - Y[1], (sz ? h : -h) - Y[2]};
                p += s * F(u[0], u[1], u[2]);
                g[0] -= s * Fx(u[0], u[1], u[2]);
                g[1] -= s * Fx(u[1], u[2], u[0]);
                g[2] -= s * Fx(u[2], u[0], u[1]);
            }
    *phi = p;
    for (int d = 0; d < 3; ++d) grad[d] = g[d];
}
