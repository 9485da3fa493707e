#include "m2l/operators.h"

#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/octree.h"
#include "fmm.h"

static double reflection_sign(int f, int l, int m, int imag) {
    double s = 1.0;
    if (f & 1) s *= (m & 1 ? -1.0 : 1.0) * (imag ? -1.0 : 1.0);
    if (f & 2) s *= imag ? -1.0 : 1.0;
    if (f & 4) s *= ((l + m) & 1) ? -1.0 : 1.0;
    return s;
}

int m2l_operators_init(m2l_operators *ops, int p) {
    memset(ops, 0, sizeof *ops);
    int n = harm_ncoef(p), mpad = (n + 7) / 8 * 8, words = (n + 63) / 64;
    ops->p = p;
    ops->ncoef = n;
    ops->mpad = mpad;
    ops->At = aligned_alloc(64, sizeof(double) * (size_t)M2L_NCLASS * n * mpad);
    ops->sign = malloc(sizeof(double) * 8 * (size_t)n);
    ops->signbits = calloc((size_t)8 * words, sizeof(uint64_t));
    double *T = malloc(sizeof(double) * (size_t)n * n);
    if (!ops->At || !ops->sign || !ops->signbits || !T) {
        free(T);
        m2l_operators_free(ops);
        return FMM_ERR_NOMEM;
    }
    for (int f = 0; f < 8; ++f)
        for (int l = 0; l <= p; ++l)
            for (int m = 0; m <= l; ++m)
                for (int im = 0; im <= (m > 0); ++im) {
                    int k = im ? harm_im(l, m) : harm_re(l, m);
                    double s = reflection_sign(f, l, m, im);
                    ops->sign[f * n + k] = s;
                    if (s < 0) ops->signbits[f * words + k / 64] |= (uint64_t)1 << (k % 64);
                }
    int c = 0;
    for (int z = 0; z <= 3; ++z)
        for (int y = 0; y <= 3; ++y)
            for (int x = 0; x <= 3; ++x)
                if (x >= 2 || y >= 2 || z >= 2) {
                    ops->ref[c][0] = x, ops->ref[c][1] = y, ops->ref[c][2] = z;
                    double d[3] = {x, y, z};
                    harm_m2l_matrix(p, d, T);
                    double *A = ops->At + (size_t)c * n * mpad;
                    memset(A, 0, sizeof(double) * (size_t)n * mpad);
                    for (int i = 0; i < n; ++i)
                        for (int k = 0; k < n; ++k) A[(size_t)k * mpad + i] = T[(size_t)i * n + k];
                    c++;
                }
    free(T);
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

void m2l_operators_free(m2l_operators *ops) {
    free(ops->At);
    free(ops->sign);
    free(ops->signbits);
    memset(ops, 0, sizeof *ops);
}

void m2l_operator_dense(const m2l_operators *ops, int dx, int dy, int dz, double *T) {
    int o = oct_offset_index(dx, dy, dz), n = ops->ncoef, c = ops->cls[o], f = ops->flags[o];
    const double *A = ops->At + (size_t)c * n * ops->mpad, *s = ops->sign + f * n;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) T[(size_t)i * n + k] = s[i] * A[(size_t)k * ops->mpad + i] * s[k];
}
