/* All-pairs direct sum on the GPU (fmm_direct_cuda): the open-boundary reference and the
 * baseline the FMM must beat. One thread per target, sources staged through shared memory. */
#include "core/cuda_status.cuh"
#include "fmm_reference.h"

#include <cuda_runtime_api.h>
#include <math.h>

#define TILE 256

__global__ void __launch_bounds__(TILE) k_direct(long n, const double *__restrict__ xyz, const double *__restrict__ q,
                                                 double *__restrict__ out) {
    __shared__ double sx[TILE], sy[TILE], sz[TILE], sq[TILE];
    const long i = (long)blockIdx.x * TILE + threadIdx.x;
    const bool ok = i < n;
    const double xi = ok ? xyz[3 * i] : 0.0, yi = ok ? xyz[3 * i + 1] : 0.0, zi = ok ? xyz[3 * i + 2] : 0.0;
    double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
    for (long b = 0; b < n; b += TILE) {
        const long j = b + threadIdx.x;
        __syncthreads();
        if (j < n) {
            sx[threadIdx.x] = xyz[3 * j], sy[threadIdx.x] = xyz[3 * j + 1], sz[threadIdx.x] = xyz[3 * j + 2];
            sq[threadIdx.x] = q[j];
        }
        __syncthreads();
        const int cnt = n - b < TILE ? (int)(n - b) : TILE;
        for (int k = 0; k < cnt; ++k) {
            const double dx = xi - sx[k], dy = yi - sy[k], dz = zi - sz[k];
            const double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 > 0.0) {
                const double rinv = rsqrt(r2), qr = sq[k] * rinv, qr3 = qr * rinv * rinv;
                p += qr, fx += qr3 * dx, fy += qr3 * dy, fz += qr3 * dz;
            }
        }
    }
    if (ok) out[i] = p, out[n + 3 * i] = fx, out[n + 3 * i + 1] = fy, out[n + 3 * i + 2] = fz;
}

extern "C" int fmm_direct_cuda(long n, const double *xyz, const double *q, double *phi, double *field, double *ms) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q) return FMM_ERR_ARG;
    for (long i = 0; i < n; ++i)
        if (!isfinite(q[i]) || !isfinite(xyz[3 * i]) || !isfinite(xyz[3 * i + 1]) || !isfinite(xyz[3 * i + 2]))
            return FMM_ERR_NONFINITE;
    if (fmm_cuda_device_count() < 1) return FMM_ERR_DEVICE;
    double *d = NULL;
    cudaEvent_t t0 = NULL, t1 = NULL;
    int rc = FMM_ERR_CUDA;
    cudaError_t e = cudaMalloc((void **)&d, sizeof(double) * 8 * n);
    if (e != cudaSuccess) return fmm_cuda_status(e);
    double *dx = d, *dq = d + 3 * n, *out = d + 4 * n;
    if (cudaEventCreate(&t0) != cudaSuccess || cudaEventCreate(&t1) != cudaSuccess) goto done;
    if (cudaMemcpy(dx, xyz, sizeof(double) * 3 * n, cudaMemcpyHostToDevice) != cudaSuccess) goto done;
    if (cudaMemcpy(dq, q, sizeof(double) * n, cudaMemcpyHostToDevice) != cudaSuccess) goto done;
    cudaEventRecord(t0);
    k_direct<<<(unsigned)((n + TILE - 1) / TILE), TILE>>>(n, dx, dq, out);
    cudaEventRecord(t1);
    if (cudaGetLastError() != cudaSuccess || cudaEventSynchronize(t1) != cudaSuccess) goto done;
    if (ms) {
        float t;
        cudaEventElapsedTime(&t, t0, t1);
        *ms = t;
    }
    if (phi && cudaMemcpy(phi, out, sizeof(double) * n, cudaMemcpyDeviceToHost) != cudaSuccess) goto done;
    if (field && cudaMemcpy(field, out + n, sizeof(double) * 3 * n, cudaMemcpyDeviceToHost) != cudaSuccess) goto done;
    rc = FMM_OK;
done:
    if (t0) cudaEventDestroy(t0);
    if (t1) cudaEventDestroy(t1);
    cudaFree(d);
    return rc;
}
