#include "fmm_common.h"

#include <stdlib.h>

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

void *fmm_host_alloc(size_t bytes) {
    if (bytes == 0) return NULL;
#ifdef FMM_HAVE_CUDA
    if (fmm_cuda_device_count() > 0) {
        void *p = NULL;
        if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
        (void)cudaGetLastError();
    }
#endif
    return malloc(bytes);
}

void fmm_host_free(void *p) {
    if (!p) return;
#ifdef FMM_HAVE_CUDA
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost) {
        cudaFreeHost(p);
        return;
    }
    (void)cudaGetLastError();
#endif
    free(p);
}
