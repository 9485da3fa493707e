#include "pbc/lattice.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"

#define LAT_P 40 /* internal order of the 3x3x3 block multipoles (recipe: 40 and 48 agree to 1e-13) */
#define LAT_K 20 /* renormalisation levels: each gains 1/9 */
/* The strained sums behind the virial tables enter through differences that carry ~1e-9
 * anyway: a lower internal order, 12 levels (9^-12 = 3e-12), central differences */
#define LAT_P_STRAIN 28
#define LAT_K_STRAIN 12

/* exact zeros of sums over cubic-symmetric point sets: odd L, L = 2, M mod 4 != 0 */
static int cubic_zero(int l, int m) { return (l & 1) || l == 2 || (((m % 4) + 4) % 4) != 0; }

/* Lattice sums of the cell spanned by the columns of A (unit cube: A = I, with its exact
 * zeros; strained: only the odd-L zeros of inversion symmetry). */
static int lattice_sums(int lmax, const double *A, int P, int K, double *are, double *aim) {
    const int lg = lmax + P, np = harm_ncoef(P), ng = harm_ncoef(lg), no = harm_ncoef(lmax);
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
                if (A) {
                    double m[3] = {a, b, c};
                    for (int r = 0; r < 3; ++r) n[r] = A[3 * r] * m[0] + A[3 * r + 1] * m[1] + A[3 * r + 2] * m[2];
                }
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
            if (!A) {
                G[f] = cubic_zero(l, m) ? 0.0 : creal(G[f]);
                if (l <= P) B[f] = cubic_zero(l, m) ? 0.0 : creal(B[f]);
            } else if (l & 1) {
                G[f] = 0.0;
                if (l <= P) B[f] = 0.0;
            }
        }
    B[0] = 27.0;
    /* renormalisation applied to a unit charge: level k adds the shell of 3^k-blocks */
    v[0] = 1.0;
    for (int k = 0; k <= K; ++k) {
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
        for (int l = 0; l <= P; ++l) {
            const double f = pow(3.0, -l);
            for (int m = -l; m <= l; ++m) {
                double complex s = 0;
                for (int j = 0; j <= l; ++j) {
                    int k0 = m - (l - j) > -j ? m - (l - j) : -j, k1 = m + (l - j) < j ? m + (l - j) : j;
                    for (int kk = k0; kk <= k1; ++kk) s += B[harm_full(l - j, m - kk)] * v[harm_full(j, kk)];
                }
                v2[harm_full(l, m)] = f * s;
            }
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
    harm_gauss_legendre(ng, t, w);
    for (int i = 0; i < ng; ++i) t[i] *= 0.5, w[i] *= 0.5; /* mapped to [-1/2, 1/2] */
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

int pbc_lattice_sums(int lmax, double *are, double *aim) {
    return lattice_sums(lmax, NULL, LAT_P, LAT_K, are, aim);
}

int pbc_near_sums(int lmax, double *nre, double *nim) {
    const int ng = harm_ncoef(lmax);
    double *re = malloc(sizeof(double) * 2 * (size_t)ng);
    if (!re) return 1;
    double *im = re + ng;
    for (int k = 0; k < ng; ++k) nre[k] = nim[k] = 0.0;
    for (int code = 0; code < 27; ++code) {
        if (code == 13) continue;
        const double n[3] = {code % 3 - 1, code / 3 % 3 - 1, code / 9 - 1};
        harm_irregular_full(lmax, n, re, im);
        for (int k = 0; k < ng; ++k) nre[k] += re[k], nim[k] += im[k];
    }
    for (int l = 0; l <= lmax; ++l)
        for (int m = -l; m <= l; ++m) {
            const int f = harm_full(l, m);
            if (cubic_zero(l, m)) nre[f] = 0.0;
            nim[f] = 0.0;
        }
    free(re);
    return 0;
}

/* The force of image n is bilinear in the root multipole: F_a(n) = sum_i v_a,i u_i(n), where v_a
 * is harm_local_force's gradient with respect to the local expansion u (it is linear in u) and
 * u_lm(n) = sum_jk (-1)^j I_{l+j,m+k}(n) w_jk is the image's M2L. Collected by L = l + j,
 * M = m + k: F_a(n) = sum_LM (Re I_LM(n) Hr_a,LM + Im I_LM(n) Hi_a,LM), with H_a a convolution
 * of v_a and w that no image changes. So one O(p^4) convolution and 13 O(p^2) tables and
 * contractions (images n and -n share one), where a dense M2L matrix per image took 26 O(p^4)
 * builds and products (p 7: 160 -> 22 us on the development machine; this runs on the host on
 * every virial step of a GPU plan). */
int pbc_near_image_forces(int p, double L, const double *w, double fshift[81]) {
    const int nc = harm_ncoef(p), n2 = harm_ncoef(2 * p);
    double *buf = calloc((size_t)(3 * nc + 2 * nc + 6 * n2 + 2 * n2), sizeof(double));
    if (!buf) return 1;
    double *v = buf, *wr = v + 3 * nc, *wi = wr + nc, *hr = wi + nc, *hi = hr + 3 * n2,
           *gr = hi + 3 * n2, *gi = gr + n2;
    /* v_a,i = F_a of the unit local expansion e_i (u is scratch: gr) */
    for (int i = 0; i < nc; ++i) {
        double F[3];
        gr[i] = 1.0;
        harm_local_force(p, L, gr, 1, w, F);
        gr[i] = 0.0;
        for (int a = 0; a < 3; ++a) v[a * nc + i] = F[a];
    }
    harm_real_to_full(p, w, wr, wi);
    /* F_a = sum_{l, m >= 0} v^re_a Re u_lm + v^im_a Im u_lm, Re u = sum (-1)^j (Gr wr - Gi wi),
       Im u = sum (-1)^j (Gr wi + Gi wr) */
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            double vre[3], vim[3];
            for (int a = 0; a < 3; ++a)
                vre[a] = v[a * nc + harm_re(l, m)], vim[a] = m ? v[a * nc + harm_im(l, m)] : 0.0;
            for (int j = 0; j <= p; ++j) {
                const double sg = j & 1 ? -1.0 : 1.0;
                for (int k = -j; k <= j; ++k) {
                    const int b = harm_full(j, k), o = harm_full(l + j, m + k);
                    for (int a = 0; a < 3; ++a) {
                        hr[a * n2 + o] += sg * (vre[a] * wr[b] + vim[a] * wi[b]);
                        hi[a * n2 + o] += sg * (vim[a] * wr[b] - vre[a] * wi[b]);
                    }
                }
            }
        }
    /* image `code` holds the sources shifted by n L (source centre - target centre = n L), and
       image 26 - code those shifted by -n L: I_LM(-n) = (-1)^L I_LM(n) */
    for (int code = 0; code < 13; ++code) {
        const double n[3] = {code % 3 - 1, code / 3 % 3 - 1, code / 9 - 1};
        harm_irregular_full(2 * p, n, gr, gi);
        for (int a = 0; a < 3; ++a) {
            double F[2] = {0.0, 0.0}; /* even and odd L */
            for (int l = 0; l <= 2 * p; ++l)
                for (int o = l * l; o < (l + 1) * (l + 1); ++o)
                    F[l & 1] += gr[o] * hr[a * n2 + o] + gi[o] * hi[a * n2 + o];
            fshift[3 * code + a] += F[0] + F[1];
            fshift[3 * (26 - code) + a] += F[0] - F[1];
        }
    }
    free(buf);
    return 0;
}

/* Tin-foil Ewald far Hessian at r = 0 of the unit cell spanned by A (alpha = 6): the second
 * derivative of the Ewald potential minus the 27 nearest images. Its traceless part gives the
 * degree-2 lattice terms, whose cube-ordered sums depend on the shape and are replaced by
 * Ewald's tin-foil values (recipe 5). */
static void far_hessian(const double *A, double H[9]) {
    const double a = 6.0, pi = 3.14159265358979323846, sp = sqrt(pi);
    double V = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
               A[2] * (A[3] * A[7] - A[4] * A[6]);
    V = fabs(V);
    for (int i = 0; i < 9; ++i) H[i] = (i % 4 == 0) ? 4 * a * a * a / (3 * sp) : 0.0;
    for (int i = -3; i <= 3; ++i)
        for (int j = -3; j <= 3; ++j)
            for (int k = -3; k <= 3; ++k) {
                if (!i && !j && !k) continue;
                double R[3], u[3];
                for (int r = 0; r < 3; ++r) R[r] = A[3 * r] * i + A[3 * r + 1] * j + A[3 * r + 2] * k;
                double r = sqrt(R[0] * R[0] + R[1] * R[1] + R[2] * R[2]);
                for (int d = 0; d < 3; ++d) u[d] = R[d] / r;
                double e = erfc(a * r), ex = 2 * a / sp * exp(-a * a * r * r);
                double g1 = -e / (r * r) - ex / r, g2 = 2 * e / (r * r * r) + 2 * ex / (r * r) + 2 * a * a * ex;
                int near = abs(i) <= 1 && abs(j) <= 1 && abs(k) <= 1;
                for (int x = 0; x < 3; ++x)
                    for (int y = 0; y < 3; ++y) {
                        double uu = u[x] * u[y], dl = x == y;
                        H[3 * x + y] += g2 * uu + g1 / r * (dl - uu);
                        if (near) H[3 * x + y] -= (3 * uu - dl) / (r * r * r);
                    }
            }
    /* reciprocal vectors: rows of 2 pi A^-T */
    double inv[9];
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                 A[2] * (A[3] * A[7] - A[4] * A[6]);
    inv[0] = (A[4] * A[8] - A[5] * A[7]) / det, inv[1] = (A[2] * A[7] - A[1] * A[8]) / det;
    inv[2] = (A[1] * A[5] - A[2] * A[4]) / det, inv[3] = (A[5] * A[6] - A[3] * A[8]) / det;
    inv[4] = (A[0] * A[8] - A[2] * A[6]) / det, inv[5] = (A[2] * A[3] - A[0] * A[5]) / det;
    inv[6] = (A[3] * A[7] - A[4] * A[6]) / det, inv[7] = (A[1] * A[6] - A[0] * A[7]) / det;
    inv[8] = (A[0] * A[4] - A[1] * A[3]) / det;
    const int km = 14;
    for (int i = -km; i <= km; ++i)
        for (int j = -km; j <= km; ++j)
            for (int k = -km; k <= km; ++k) {
                if (!i && !j && !k) continue;
                double K[3];
                for (int r = 0; r < 3; ++r) K[r] = 2 * pi * (inv[r] * i + inv[3 + r] * j + inv[6 + r] * k);
                double k2 = K[0] * K[0] + K[1] * K[1] + K[2] * K[2], f = exp(-k2 / (4 * a * a)) / k2;
                if (f < 1e-30) continue;
                for (int x = 0; x < 3; ++x)
                    for (int y = 0; y < 3; ++y) H[3 * x + y] -= 4 * pi / V * f * K[x] * K[y];
            }
}

double pbc_far_self_potential(void) {
    /* Ewald at alpha = 6: erfc(6 * 3.5) ~ 1e-193 and exp(-(2 pi 14)^2 / 144) ~ 1e-234 end the
     * sums */
    const double a = 6.0, pi = 3.14159265358979323846;
    double c = -pi / (a * a) - 2 * a / sqrt(pi);
    for (int i = -3; i <= 3; ++i)
        for (int j = -3; j <= 3; ++j)
            for (int k = -3; k <= 3; ++k) {
                if (!i && !j && !k) continue;
                double r = sqrt((double)(i * i + j * j + k * k));
                c += erfc(a * r) / r;
                if (abs(i) <= 1 && abs(j) <= 1 && abs(k) <= 1) c -= 1 / r;
            }
    const int km = 14;
    for (int i = -km; i <= km; ++i)
        for (int j = -km; j <= km; ++j)
            for (int k = -km; k <= km; ++k) {
                if (!i && !j && !k) continue;
                double k2 = 4 * pi * pi * (double)(i * i + j * j + k * k);
                c += 4 * pi / k2 * exp(-k2 / (4 * a * a));
            }
    return c;
}

int pbc_virial_tables(int lmax, double *vre, double *vim) {
    const int n = harm_ncoef(lmax);
    double *are = malloc(sizeof(double) * n), *aim = malloc(sizeof(double) * n);
    if (!are || !aim) {
        free(are), free(aim);
        return 1;
    }
    const double d = 2e-5, steps[2] = {d, -d}, cf[2] = {1, -1};
    int fail = 0;
    for (int a = 0; a < 3 && !fail; ++a)
        for (int b = a; b < 3 && !fail; ++b) {
            double *Vr = vre + (size_t)(3 * a + b) * n, *Vi = vim + (size_t)(3 * a + b) * n;
            memset(Vr, 0, sizeof(double) * n), memset(Vi, 0, sizeof(double) * n);
            for (int s = 0; s < 2 && !fail; ++s) {
                double A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, H[9];
                A[3 * a + b] += steps[s] / 2, A[3 * b + a] += steps[s] / 2;
                if (lattice_sums(lmax, A, LAT_P_STRAIN, LAT_K_STRAIN, are, aim)) {
                    fail = 1;
                    break;
                }
                /* degree 2 from the tin-foil Ewald Hessian: 1/2 r.H0.r = sum_M R_2M(r) A_2M */
                far_hessian(A, H);
                double tr = (H[0] + H[4] + H[8]) / 3;
                H[0] -= tr, H[4] -= tr, H[8] -= tr;
                if (lmax >= 2) {
                    are[harm_full(2, 0)] = H[8], aim[harm_full(2, 0)] = 0;
                    are[harm_full(2, 1)] = -H[2], aim[harm_full(2, 1)] = -H[5];
                    are[harm_full(2, -1)] = H[2], aim[harm_full(2, -1)] = -H[5];
                    are[harm_full(2, 2)] = 2 * H[0] + H[8], aim[harm_full(2, 2)] = 2 * H[1];
                    are[harm_full(2, -2)] = 2 * H[0] + H[8], aim[harm_full(2, -2)] = -2 * H[1];
                }
                for (int k = 0; k < n; ++k) Vr[k] += cf[s] * are[k] / (2 * d), Vi[k] += cf[s] * aim[k] / (2 * d);
            }
            /* odd degrees and the charge term do not contribute */
            for (int l = 0; l <= lmax; ++l)
                if ((l & 1) || l == 0)
                    for (int m = -l; m <= l; ++m) Vr[harm_full(l, m)] = Vi[harm_full(l, m)] = 0;
            memcpy(vre + (size_t)(3 * b + a) * n, Vr, sizeof(double) * n);
            memcpy(vim + (size_t)(3 * b + a) * n, Vi, sizeof(double) * n);
        }
    free(are), free(aim);
    return fail;
}
