/* core/maxabs.h - the check of an input array before the solvers normalise it (core/scale.h):
 * every value finite, and the largest magnitude, whose fmm_scale_exponent is the power of two to
 * divide by. */
#ifndef FMM_CORE_MAXABS_H
#define FMM_CORE_MAXABS_H

#include <math.h>
#include <omp.h>

#include "fmm.h"

/* FMM_ERR_NONFINITE if one of v[0..n-1] is NaN or Inf; else FMM_OK and *amax = max(*amax,
 * largest |v[i]|) (a maximum: the same for any thread count). nth: OpenMP threads, 0 = default. */
static inline int fmm_check_max_abs(long n, const double *v, double *amax, int nth) {
    int bad = 0;
    double m = *amax;
#pragma omp parallel for schedule(static) reduction(|                                              \
                                                    : bad) reduction(max                           \
                                                                     : m)                          \
    num_threads(nth > 0 ? nth : omp_get_max_threads())
    for (long i = 0; i < n; ++i) {
        bad |= !isfinite(v[i]);
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    }
    if (bad) return FMM_ERR_NONFINITE;
    *amax = m;
    return FMM_OK;
}

#endif /* FMM_CORE_MAXABS_H */
