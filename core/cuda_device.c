#include "fmm.h"

#ifdef FMM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int fmm_cuda_device_count(void) {
#ifdef FMM_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error for later calls */
        return 0;
    }
    return n;
#else
    return 0;
#endif
}
