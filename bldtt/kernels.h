/*
 * bldtt/kernels.h - the interaction kernels of the BLDTT solver, shared by the CPU (C) and the
 * CUDA code: the one file to edit to add a kernel (docs/bldtt.md, "Adding a kernel").
 *
 * bt_kernel(k, r2, p, &f) returns G(r) for kernel k at squared distance r2 >= 0 with
 * parameter p, and stores f = G'(r)/r (so that grad_x G(|x - y|) = f (x - y)) when f is not
 * NULL. k is a compile-time constant at every call site (the CPU loops and the CUDA kernels
 * are instantiated per kernel), so the switch folds away and the loops vectorise.
 *
 * Conventions at r2 == 0: singular kernels return 0 and f = 0 (the pair is left out); finite
 * kernels return the limit G(0) and f = 0, taken from p itself rather than from p * p, which
 * underflows for a parameter far below the point set's extent.
 */
#ifndef FMM_BLDTT_KERNELS_H
#define FMM_BLDTT_KERNELS_H

#include <math.h>

#include "fmm_bldtt.h"

#ifdef __CUDACC__
#define BT_HD static __host__ __device__ __forceinline__
#else
#define BT_HD static inline __attribute__((always_inline))
#endif

/* 1/sqrt(x): the device's correctly rounded-to-1-ulp rsqrt on the GPU, a division on the CPU */
BT_HD double bt_rsqrt(double x) {
#ifdef __CUDA_ARCH__
    return rsqrt(x);
#else
    return 1.0 / sqrt(x);
#endif
}

/* The barycentric weight w_k of the Chebyshev points of the second kind, k = 0..n:
 * (-1)^k, halved at both ends (1 for n = 0). Computed where used, so that the CUDA kernels need
 * no per-degree table shared by all plans. */
BT_HD double bt_cheb_weight(int k, int n) {
    if (n == 0) return 1.0;
    return ((k & 1) ? -1.0 : 1.0) * ((k == 0 || k == n) ? 0.5 : 1.0);
}

/* 1 if G is infinite at r = 0 (pairs at zero distance are then left out) */
BT_HD int bt_kernel_singular(int k) {
    return k == BLDTT_COULOMB || k == BLDTT_YUKAWA;
}

BT_HD double bt_kernel(int k, double r2, double p, double *f) {
    double g = 0, d = 0;
    switch (k) {
    case BLDTT_COULOMB: { /* 1/r */
        double ir = bt_rsqrt(r2);
        ir = r2 > 0 ? ir : 0.0;
        g = ir;
        d = -ir * ir * ir;
        break;
    }
    case BLDTT_YUKAWA: { /* exp(-p r)/r */
        double ir = bt_rsqrt(r2);
        ir = r2 > 0 ? ir : 0.0;
        double r = r2 * ir, e = exp(-p * r);
        g = e * ir;
        /* p (r e), not e (1 + p r): p r may overflow where e is 0 (0 * inf would be NaN) */
        d = -(e + p * (r * e)) * ir * ir * ir;
        break;
    }
    case BLDTT_REGULARIZED: { /* 1/sqrt(r^2 + p^2), 1/p at r = 0 */
        double s = r2 > 0 ? bt_rsqrt(r2 + p * p) : 1.0 / p;
        g = s;
        d = r2 > 0 ? -s * s * s : 0.0;
        break;
    }
    case BLDTT_SINC: { /* sin(p r)/r, p at r = 0 */
        double r = sqrt(r2), sn = sin(p * r), cs = cos(p * r);
        double ir = r > 0 ? 1.0 / r : 0.0;
        g = r > 0 ? sn * ir : p;
        d = (p * r * cs - sn) * ir * ir * ir;
        break;
    }
    case BLDTT_MULTIQUADRIC: { /* sqrt(r^2 + p^2), p at r = 0 */
        double s = r2 > 0 ? sqrt(r2 + p * p) : p;
        g = s;
        d = r2 > 0 ? 1.0 / s : 0.0;
        break;
    }
    default:
        break;
    }
    if (f) *f = d;
    return g;
}

#endif /* FMM_BLDTT_KERNELS_H */
