/* core/cuda_status.cuh - a CUDA runtime status as the library's status code, for every .cu file. */
#ifndef FMM_CORE_CUDA_STATUS_CUH
#define FMM_CORE_CUDA_STATUS_CUH

#include <cuda_runtime.h>

#include "fmm_common.h"

/* FMM_OK, FMM_ERR_NOMEM for a failed allocation, FMM_ERR_CUDA otherwise. A failed call also
 * stays the thread's last error, which the next launch check (cudaGetLastError) would report
 * again, so a plan whose setpts ran out of device memory would fail its next, smaller one: the
 * error is cleared here (sticky errors, a lost context, stay). Host code only. */
static inline int fmm_cuda_status(cudaError_t e) {
    if (e == cudaSuccess) return FMM_OK;
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? FMM_ERR_NOMEM : FMM_ERR_CUDA;
}

/* returns the status of a failed runtime call from the enclosing function (which returns int) */
#define CU(call)                                                                                   \
    do {                                                                                           \
        int cu_rc_ = fmm_cuda_status(call);                                                        \
        if (cu_rc_) return cu_rc_;                                                                 \
    } while (0)

#endif
