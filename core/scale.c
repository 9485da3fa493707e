#include "core/scale.h"

#include <float.h>
#include <omp.h>

#include "fmm_common.h"

int fmm_scale_output(long n, const void *in, int in_f32, void *out, int out_f32, int e,
                     int threads) {
    const double f = ldexp(1.0, e);
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    int bad = 0;
    double amax_in = 0, amax_out = 0;
    // clang-format off
#pragma omp parallel for num_threads(nt) if (n > 50000) schedule(static) reduction(| : bad) \
    reduction(max : amax_in, amax_out)
    // clang-format on
    for (long i = 0; i < n; ++i) {
        const double x = in_f32 ? ((const float *)in)[i] : ((const double *)in)[i];
        double y = e ? fmm_pow2(x, f, e) : x;
        if (out_f32)
            y = ((float *)out)[i] = (float)y;
        else
            ((double *)out)[i] = y;
        bad |= !isfinite(y);
        amax_in = fabs(x) > amax_in ? fabs(x) : amax_in;
        amax_out = fabs(y) > amax_out ? fabs(y) : amax_out;
    }
    const double tiny = out_f32 ? FLT_MIN : DBL_MIN;
    return bad || (amax_in > 0 && amax_out < tiny) ? FMM_ERR_RANGE : FMM_OK;
}

int fmm_check_max_abs(long n, const double *v, double *amax, int threads) {
    int bad = 0;
    double m = *amax;
    // clang-format off
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    reduction(| : bad) reduction(max : m)
    // clang-format on
    for (long i = 0; i < n; ++i) {
        bad |= !isfinite(v[i]);
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    }
    if (bad) return FMM_ERR_NONFINITE;
    *amax = m;
    return FMM_OK;
}
