/* M2L from parent boxes, measured before building it (bench/results/fmm_gpu_h100.md, "Considered
 * and measured on the CPU, not built"). For a target box at level 4 of a uniform grid (16 random
 * charges per box, interior targets only), the V list's field is computed two ways and compared
 * with the direct sum over the same sources:
 *   standard   one M2L per V-list box (189);
 *   parents    the parent neighbours whose 8 children are all in the V list and whose centre is
 *              at least RMIN box sides away send one M2L from the parent (its multipole by P2M at
 *              the parent's scale) instead of 8; the other V-list boxes as before.
 * Dense operators from harm_m2l_matrix; the parent's operator is T(D) diag(2^l) (its multipole is
 * scaled by the parent side, twice the child's).
 *
 *   gcc -O2 -I. -Iinclude bench/m2l_parent_study.c build/libfmm.a -lm -fopenmp \
 *       -o /tmp/m2l_parent_study && /tmp/m2l_parent_study P RMIN     (e.g. 7 3.0)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"

#define S 16   /* boxes per axis at the level */
#define PER 16 /* charges per box */

static double frand(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}

static void matvec_add(int n, const double *A, const double *w, double *u) {
    for (int r = 0; r < n; ++r) {
        double a = 0;
        for (int m = 0; m < n; ++m) a += A[(size_t)r * n + m] * w[m];
        u[r] += a;
    }
}

int main(int argc, char **argv) {
    const int p = argc > 1 ? atoi(argv[1]) : 7;
    const double rmin = argc > 2 ? atof(argv[2]) : 3.0;
    if (p < 1 || p > 20) return fprintf(stderr, "order 1..20\n"), 2;
    const int s = S, sp = S / 2, nb = S * S * S, nc = (p + 1) * (p + 1);
    const long n = (long)nb * PER;
    const double h = 1.0 / S;
    double *x = malloc(8 * n), *y = malloc(8 * n), *z = malloc(8 * n), *q = malloc(8 * n);
    double *W = calloc((size_t)nb * nc, 8), *WP = calloc((size_t)nb / 8 * nc, 8);
    double **co = calloc(343, sizeof(double *)), **po = calloc(17 * 17 * 17, sizeof(double *));
    double *u = malloc(8 * nc), *u2 = malloc(8 * nc), *e3 = malloc(8 * 3 * PER);
    if (!x || !y || !z || !q || !W || !WP || !co || !po || !u || !u2 || !e3) return fprintf(stderr, "out of memory\n"), 1;
    unsigned long long sd = 12345;
    for (int b = 0; b < nb; ++b) { /* PER charges in each box, stored box by box */
        const int i = b % s, j = b / s % s, k = b / (s * s);
        for (int t = 0; t < PER; ++t) {
            const long a = (long)b * PER + t;
            x[a] = (i + frand(&sd)) * h, y[a] = (j + frand(&sd)) * h, z[a] = (k + frand(&sd)) * h, q[a] = frand(&sd) - 0.5;
        }
    }
    for (int b = 0; b < nb; ++b) {
        const int i = b % s, j = b / s % s, k = b / (s * s), P = i / 2 + sp * (j / 2 + sp * (k / 2));
        const double c[3] = {(i + .5) * h, (j + .5) * h, (k + .5) * h};
        const double cp[3] = {(i / 2 + .5) * 2 * h, (j / 2 + .5) * 2 * h, (k / 2 + .5) * 2 * h};
        const long a = (long)b * PER;
        harm_p2m(p, h, c, PER, x + a, y + a, z + a, q + a, W + (size_t)b * nc);
        harm_p2m(p, 2 * h, cp, PER, x + a, y + a, z + a, q + a, WP + (size_t)P * nc);
    }
    double err2[2] = {0, 0}, ref2 = 0;
    long cnt[2] = {0, 0}, nparents = 0;
    for (int b = 0; b < nb; ++b) {
        const int i = b % s, j = b / s % s, k = b / (s * s);
        if (i < 2 || j < 2 || k < 2 || i >= s - 2 || j >= s - 2 || k >= s - 2) continue; /* whole V list */
        const double c[3] = {(i + .5) * h, (j + .5) * h, (k + .5) * h};
        double ref[PER] = {0}, phi[PER] = {0}, phi2[PER] = {0};
        memset(u, 0, 8 * nc), memset(u2, 0, 8 * nc);
        for (int dk = -1; dk <= 1; ++dk)
            for (int dj = -1; dj <= 1; ++dj)
                for (int di = -1; di <= 1; ++di) {
                    const int Pi = i / 2 + di, Pj = j / 2 + dj, Pk = k / 2 + dk;
                    if (Pi < 0 || Pj < 0 || Pk < 0 || Pi >= sp || Pj >= sp || Pk >= sp) continue;
                    int all = 1; /* every child well separated from b */
                    for (int o = 0; o < 8; ++o)
                        if (abs(2 * Pi + (o & 1) - i) <= 1 && abs(2 * Pj + (o >> 1 & 1) - j) <= 1 && abs(2 * Pk + (o >> 2) - k) <= 1) all = 0;
                    double D[3] = {2 * Pi + 1 - (i + .5), 2 * Pj + 1 - (j + .5), 2 * Pk + 1 - (k + .5)};
                    const int use_parent = all && sqrt(D[0] * D[0] + D[1] * D[1] + D[2] * D[2]) >= rmin;
                    if (use_parent) {
                        const int key = ((int)(2 * (D[0] + 4)) * 17 + (int)(2 * (D[1] + 4))) * 17 + (int)(2 * (D[2] + 4));
                        if (!po[key]) {
                            if (!(po[key] = malloc(8 * (size_t)nc * nc))) return fprintf(stderr, "out of memory\n"), 1;
                            harm_m2l_matrix(p, D, po[key]);
                            for (int r = 0; r < nc; ++r)
                                for (int l = 0; l <= p; ++l)
                                    for (int m = l * l; m < (l + 1) * (l + 1); ++m) po[key][(size_t)r * nc + m] *= ldexp(1.0, l);
                        }
                        matvec_add(nc, po[key], WP + (size_t)(Pi + sp * (Pj + sp * Pk)) * nc, u2);
                        cnt[1]++, nparents++;
                    }
                    for (int o = 0; o < 8; ++o) {
                        const int ci = 2 * Pi + (o & 1), cj = 2 * Pj + (o >> 1 & 1), ck = 2 * Pk + (o >> 2);
                        const int dx = ci - i, dy = cj - j, dz = ck - k, C = ci + s * (cj + s * ck);
                        if (abs(dx) <= 1 && abs(dy) <= 1 && abs(dz) <= 1) continue;
                        const int key = (dx + 3) + 7 * ((dy + 3) + 7 * (dz + 3));
                        if (!co[key]) {
                            const double d[3] = {dx, dy, dz};
                            if (!(co[key] = malloc(8 * (size_t)nc * nc))) return fprintf(stderr, "out of memory\n"), 1;
                            harm_m2l_matrix(p, d, co[key]);
                        }
                        matvec_add(nc, co[key], W + (size_t)C * nc, u);
                        if (!use_parent) matvec_add(nc, co[key], W + (size_t)C * nc, u2), cnt[1]++;
                        cnt[0]++;
                        for (int t = 0; t < PER; ++t) /* the direct sum over the same sources */
                            for (int v = 0; v < PER; ++v) {
                                const long a = (long)b * PER + t, sv = (long)C * PER + v;
                                const double rx = x[a] - x[sv], ry = y[a] - y[sv], rz = z[a] - z[sv];
                                ref[t] += q[sv] / sqrt(rx * rx + ry * ry + rz * rz);
                            }
                    }
                }
        const long a = (long)b * PER;
        harm_l2p(p, h, c, u, PER, x + a, y + a, z + a, phi, e3, e3 + PER, e3 + 2 * PER);
        harm_l2p(p, h, c, u2, PER, x + a, y + a, z + a, phi2, e3, e3 + PER, e3 + 2 * PER);
        for (int t = 0; t < PER; ++t)
            err2[0] += pow(phi[t] - ref[t], 2), err2[1] += pow(phi2[t] - ref[t], 2), ref2 += ref[t] * ref[t];
    }
    const double targets = cnt[0] / 189.0;
    printf("p %d rmin %.2f: translations per target 189 -> %.1f (%.1f of them from parents); "
           "rel L2 error of the V-list potential: standard %.3e, with parents %.3e (x%.2f)\n",
           p, rmin, cnt[1] / targets, nparents / targets, sqrt(err2[0] / ref2), sqrt(err2[1] / ref2), sqrt(err2[1] / err2[0]));
    return 0;
}
