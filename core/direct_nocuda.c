/* Without CUDA the GPU direct sum is absent: the same entry point says so. */
#include "fmm_reference.h"

#ifndef FMM_HAVE_CUDA
#include <math.h>

/* the same argument checks as the CUDA version, then the missing device */
int fmm_direct_cuda(long n, const double *xyz, const double *q, double *phi, double *field, double *ms) {
    (void)phi, (void)field, (void)ms;
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q) return FMM_ERR_ARG;
    for (long i = 0; i < n; ++i)
        if (!isfinite(q[i]) || !isfinite(xyz[3 * i]) || !isfinite(xyz[3 * i + 1]) || !isfinite(xyz[3 * i + 2]))
            return FMM_ERR_NONFINITE;
    return FMM_ERR_DEVICE;
}
#else
typedef int fmm_direct_nocuda_unused; /* ISO C forbids an empty translation unit */
#endif
