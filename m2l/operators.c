#include "m2l/operators.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/octree.h"
#include "core/panel.h"
#include "fmm_common.h"

static double reflection_sign(int f, int l, int m, int imag) {
    double s = 1.0;
    if (f & 1) s *= (m & 1 ? -1.0 : 1.0) * (imag ? -1.0 : 1.0);
    if (f & 2) s *= imag ? -1.0 : 1.0;
    if (f & 4) s *= ((l + m) & 1) ? -1.0 : 1.0;
    return s;
}

void m2l_frame_along(const double d[3], double Q[9]) {
    double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    double z[3] = {d[0] / r, d[1] / r, d[2] / r}, a[3] = {1, 0, 0};
    if (fabs(z[0]) > 0.9) a[0] = 0, a[1] = 1;
    double x[3] = {a[1] * z[2] - a[2] * z[1], a[2] * z[0] - a[0] * z[2], a[0] * z[1] - a[1] * z[0]};
    double nx = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    for (int i = 0; i < 3; ++i) x[i] /= nx;
    double y[3] = {z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]};
    for (int i = 0; i < 3; ++i) Q[i] = x[i], Q[3 + i] = y[i], Q[6 + i] = z[i];
}

/* the sizes of the factored form, and with `classes` the 56 classes' operators */
static int init_factored(m2l_operators *ops, int classes) {
    int p = ops->p;
    ops->nrot = (p + 1) * (2 * p + 1) * (2 * p + 3) / 3;
    ops->zoff = malloc(sizeof(int) * (p + 2));
    if (!ops->zoff) return FMM_ERR_NOMEM;
    ops->nz = panel_zsize(p, ops->zoff);
    if (!classes) return 0;
    ops->rot_w = malloc(sizeof(double) * M2L_NCLASS * (size_t)ops->nrot);
    ops->rot_u = malloc(sizeof(double) * M2L_NCLASS * (size_t)ops->nrot);
    ops->zre = malloc(sizeof(double) * M2L_NCLASS * (size_t)ops->nz);
    ops->zim = malloc(sizeof(double) * M2L_NCLASS * (size_t)ops->nz);
    int fail = !ops->rot_w || !ops->rot_u || !ops->zre || !ops->zim;
    double Q[M2L_NCLASS][9];
    for (int c = 0; c < M2L_NCLASS; ++c) {
        const double dd[3] = {ops->ref[c][0], ops->ref[c][1], ops->ref[c][2]};
        m2l_frame_along(dd, Q[c]);
    }
    if (!fail)
        fail =
            harm_rotation_matrices(p, M2L_NCLASS, Q[0], ops->rot_w, ops->rot_u, (size_t)ops->nrot);
    /* the 56 classes' z translations */
    for (int c = 0; c < M2L_NCLASS && !fail; ++c) {
        const int *d = ops->ref[c];
        harm_m2l_zblocks(p, sqrt((double)(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])),
                         ops->zre + (size_t)c * ops->nz, ops->zim + (size_t)c * ops->nz);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

static int init(m2l_operators *ops, int p, int classes) {
    memset(ops, 0, sizeof *ops);
    int n = harm_ncoef(p), npad = (n + 7) / 8 * 8;
    ops->p = p;
    ops->ncoef = n;
    ops->npad = npad;
    ops->sign = aligned_alloc(64, sizeof(double) * 8 * (size_t)npad);
    if (!ops->sign) {
        m2l_operators_free(ops);
        return FMM_ERR_NOMEM;
    }
    memset(ops->sign, 0, sizeof(double) * 8 * (size_t)npad);
    for (int f = 0; f < 8; ++f)
        for (int l = 0; l <= p; ++l)
            for (int m = 0; m <= l; ++m)
                for (int im = 0; im <= (m > 0); ++im) {
                    int k = im ? harm_im(l, m) : harm_re(l, m);
                    double s = reflection_sign(f, l, m, im);
                    ops->sign[f * npad + k] = s;
                }
    int c = 0;
    for (int z = 0; z <= 3; ++z)
        for (int y = 0; y <= 3; ++y)
            for (int x = 0; x <= 3; ++x)
                if (x >= 2 || y >= 2 || z >= 2)
                    ops->ref[c][0] = x, ops->ref[c][1] = y, ops->ref[c++][2] = z;
    if (init_factored(ops, classes)) {
        m2l_operators_free(ops);
        return FMM_ERR_NOMEM;
    }
    for (int dz = -3; dz <= 3; ++dz)
        for (int dy = -3; dy <= 3; ++dy)
            for (int dx = -3; dx <= 3; ++dx) {
                int o = oct_offset_index(dx, dy, dz), ax = abs(dx), ay = abs(dy), az = abs(dz);
                ops->cls[o] = -1;
                ops->flags[o] = (unsigned char)((dx < 0) | (dy < 0) << 1 | (dz < 0) << 2);
                if (ax < 2 && ay < 2 && az < 2) continue;
                for (int k = 0; k < M2L_NCLASS; ++k)
                    if (ops->ref[k][0] == ax && ops->ref[k][1] == ay && ops->ref[k][2] == az)
                        ops->cls[o] = (signed char)k;
            }
    return 0;
}

int m2l_operators_init(m2l_operators *ops, int p) {
    return init(ops, p, 1);
}

int m2l_operators_init_sizes(m2l_operators *ops, int p) {
    return init(ops, p, 0);
}

void m2l_operators_free(m2l_operators *ops) {
    free(ops->sign);
    free(ops->rot_w), free(ops->rot_u), free(ops->zre), free(ops->zim), free(ops->zoff);
    memset(ops, 0, sizeof *ops);
}

int m2l_operator_dense(const m2l_operators *ops, int dx, int dy, int dz, double *T) {
    int o = oct_offset_index(dx, dy, dz), n = ops->ncoef, c = ops->cls[o], f = ops->flags[o];
    double *A = malloc(sizeof(double) * (size_t)n * n);
    if (!A) return FMM_ERR_NOMEM;
    double d[3] = {ops->ref[c][0], ops->ref[c][1], ops->ref[c][2]};
    harm_m2l_matrix(ops->p, d, A);
    const double *s = ops->sign + f * ops->npad;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) T[(size_t)i * n + k] = s[i] * A[(size_t)i * n + k] * s[k];
    free(A);
    return 0;
}
