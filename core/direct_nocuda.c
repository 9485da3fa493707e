/* Without CUDA the GPU direct sum is absent: the same entry point says so. */
#include "fmm.h"

#ifndef FMM_HAVE_CUDA
int fmm_direct_cuda(long n, const double *xyz, const double *q, double *phi, double *field, double *ms) {
    (void)n, (void)xyz, (void)q, (void)phi, (void)field, (void)ms;
    return FMM_ERR_DEVICE;
}
#else
typedef int fmm_direct_nocuda_unused; /* ISO C forbids an empty translation unit */
#endif
