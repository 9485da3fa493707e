/* bldtt/direct.c - the kernel loops (one target against a run of sources) that the CPU
 * evaluation and the direct sums share, and the direct sums bldtt_direct, bldtt_direct_subset. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "bldtt/bldtt_internal.h"
#include "bldtt/kernels.h"
#include "core/scale.h"

/* ---- kernel loops: one target against a run of sources, accumulated ---------------------- */

/* out[0] += sum_j G q_j; with grad, out[1..3] += sum_j f (t - s_j) q_j as well */
static inline __attribute__((always_inline)) void
eval_impl(int K, int grad, double p, double tx, double ty, double tz, long ns, const double *sx,
          const double *sy, const double *sz, const double *q, double *out) {
    double a = 0, gx = 0, gy = 0, gz = 0;
    if (grad) {
#pragma omp simd reduction(+ : a, gx, gy, gz)
        for (long j = 0; j < ns; ++j) {
            double dx = tx - sx[j], dy = ty - sy[j], dz = tz - sz[j];
            double f, g = bt_kernel(K, dx * dx + dy * dy + dz * dz, p, &f);
            a += g * q[j];
            f *= q[j];
            gx += f * dx, gy += f * dy, gz += f * dz;
        }
        out[1] += gx, out[2] += gy, out[3] += gz;
    } else {
#pragma omp simd reduction(+ : a)
        for (long j = 0; j < ns; ++j) {
            double dx = tx - sx[j], dy = ty - sy[j], dz = tz - sz[j];
            a += bt_kernel(K, dx * dx + dy * dy + dz * dz, p, NULL) * q[j];
        }
    }
    out[0] += a;
}

#define BT_EVAL_DEF(K)                                                                             \
    static void eval_##K##_0(double p, double tx, double ty, double tz, long ns, const double *sx, \
                             const double *sy, const double *sz, const double *q, double *out) {   \
        eval_impl(K, 0, p, tx, ty, tz, ns, sx, sy, sz, q, out);                                    \
    }                                                                                              \
    static void eval_##K##_1(double p, double tx, double ty, double tz, long ns, const double *sx, \
                             const double *sy, const double *sz, const double *q, double *out) {   \
        eval_impl(K, 1, p, tx, ty, tz, ns, sx, sy, sz, q, out);                                    \
    }
BT_EVAL_DEF(0)
BT_EVAL_DEF(1)
BT_EVAL_DEF(2)
BT_EVAL_DEF(3)
BT_EVAL_DEF(4)
const bt_eval_fn bt_eval_table[BLDTT_NKERNELS][2] = {{eval_0_0, eval_0_1},
                                                     {eval_1_0, eval_1_1},
                                                     {eval_2_0, eval_2_1},
                                                     {eval_3_0, eval_3_1},
                                                     {eval_4_0, eval_4_1}};

/* ---- direct sums ------------------------------------------------------------------------- */

int bldtt_direct_subset(const bldtt_opts *o, long ns, const double *src, const double *q, long nt,
                        const double *trg, long m, const long *idx, double *phi, double *grad) {
    if (!o || !src || !q || (!phi && !grad) || (m > 0 && !idx)) return FMM_ERR_ARG;
    int rc = bt_check_kernel(o->kernel, o->param);
    if (rc) return rc;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (ns < 1 || (trg && nt < 1) || m < 0) return FMM_ERR_NPTS;
    long ntt = trg ? nt : ns;
    for (long k = 0; k < m; ++k)
        if (idx[k] < 0 || idx[k] >= ntt) return FMM_ERR_ARG;
    double amax = 0, qmax = 0;
    int elen = 0;
    double prm = 0;
    const int th = o->threads;
    if ((rc = fmm_check_max_abs(3 * ns, src, &amax, th)) ||
        (trg && (rc = fmm_check_max_abs(3 * nt, trg, &amax, th))))
        return rc;
    if ((rc = fmm_check_max_abs(ns, q, &qmax, th))) return rc;
    const int eq = fmm_scale_exponent(qmax);
    if ((rc = bt_scale_lengths(o->kernel, o->param, amax, &elen, &prm))) return rc;
    if ((rc = bt_check_device(o->device))) return rc;
    /* scaled copies (see "scales" above): sources by coordinate, the weights, and the targets
     * interleaved as given (the sources again when trg is NULL) */
    double *buf = malloc(sizeof(double) * (size_t)(4 * ns + 3 * ntt));
    if (!buf) return FMM_ERR_NOMEM;
    double *sx = buf, *sy = sx + ns, *sz = sy + ns, *qs = sz + ns, *tc = qs + ns;
    double *sd[3] = {sx, sy, sz};
    const double *tin = trg ? trg : src;
    const double fl = ldexp(1.0, -elen), fq = ldexp(1.0, -eq);
#pragma omp parallel for schedule(static)
    for (long j = 0; j < ns; ++j) {
        for (int a = 0; a < 3; ++a) sd[a][j] = fmm_pow2(src[3 * j + a], fl, -elen);
        qs[j] = fmm_pow2(q[j], fq, -eq);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < 3 * ntt; ++i) tc[i] = fmm_pow2(tin[i], fl, -elen);
#ifdef FMM_HAVE_CUDA
    if (o->device == FMM_DEVICE_CUDA)
        rc = bt_cuda_direct(o->kernel, prm, ns, sx, sy, sz, qs, tc, !trg, m, idx, phi, grad);
    else
#endif
    {
        bt_eval_fn ev = bt_eval_table[o->kernel][grad != NULL];
        int nthr = o->threads > 0 ? o->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthr)
        for (long k = 0; k < m; ++k) {
            long i = idx[k];
            double o4[4] = {0, 0, 0, 0}, x = tc[3 * i], y = tc[3 * i + 1], z = tc[3 * i + 2];
            if (!trg) {
                ev(prm, x, y, z, i, sx, sy, sz, qs, o4);
                ev(prm, x, y, z, ns - i - 1, sx + i + 1, sy + i + 1, sz + i + 1, qs + i + 1, o4);
            } else
                ev(prm, x, y, z, ns, sx, sy, sz, qs, o4);
            if (phi) phi[k] = o4[0];
            if (grad) grad[3 * k] = o4[1], grad[3 * k + 1] = o4[2], grad[3 * k + 2] = o4[3];
        }
    }
    free(buf);
    const int deg = bt_kernel_degree(o->kernel);
    if (!rc && phi) rc = fmm_scale_output(m, phi, 0, phi, 0, eq + deg * elen, th);
    if (!rc && grad) rc = fmm_scale_output(3 * m, grad, 0, grad, 0, eq + (deg - 1) * elen, th);
    return rc;
}

int bldtt_direct(const bldtt_opts *o, long ns, const double *src, const double *q, long nt,
                 const double *trg, double *phi, double *grad) {
    if (!o || !src || !q || (!phi && !grad)) return FMM_ERR_ARG;
    if (ns < 1 || (trg && nt < 1)) return FMM_ERR_NPTS;
    long m = trg ? nt : ns;
    long *idx = malloc(sizeof(long) * m);
    if (!idx) return FMM_ERR_NOMEM;
    for (long k = 0; k < m; ++k) idx[k] = k;
    int rc = bldtt_direct_subset(o, ns, src, q, nt, trg, m, idx, phi, grad);
    free(idx);
    return rc;
}
