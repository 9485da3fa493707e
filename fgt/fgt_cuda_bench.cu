// fgt/fgt_cuda_bench.cu - the Hermite evaluation alone, for the benchmark fgt_cuda_hermite_bench:
// every target evaluates every cluster's Hermite expansion (random targets, coefficients and
// centres), timed on the device; the second of two runs is reported.
#include <stdint.h>
#include <stdlib.h>

#include "fgt/fgt_cuda_plan.cuh"

using namespace fgt_gpu;

namespace {

// Seed-style benchmark: every target evaluates every cluster's Hermite expansion.
template <int NP>
__global__ void __launch_bounds__(EVAL_THREADS)
    k_hermite_bench(long n, int p, int nclusters, const double *tx, const double *C,
                    const double *centres, double *g) {
    __shared__ double slice[NP * NP];
    long i = (long)blockIdx.x * EVAL_THREADS + threadIdx.x;
    double x[3] = {0, 0, 0};
    if (i < n) x[0] = tx[3 * i], x[1] = tx[3 * i + 1], x[2] = tx[3 * i + 2];
    const int st[3] = {p, p, p}, pe[3] = {p, p, p};
    double acc = 0;
    for (int c = 0; c < nclusters; ++c)
        acc += eval_any<NP>(0, C + (long)c * p * p * p, st, pe, centres + 3 * c, x, slice);
    if (i < n) g[i] = acc;
}

} // namespace

extern "C" int fgt_cuda_hermite_bench_impl(long n, int p, int nclusters, double side, double *ms) {
    size_t nc = (size_t)p * p * p * nclusters;
    double *hx = (double *)malloc(sizeof(double) * 3 * n),
           *hc = (double *)malloc(sizeof(double) * nc),
           *hz = (double *)malloc(sizeof(double) * 3 * nclusters);
    double *dx = nullptr, *dc = nullptr, *dz = nullptr, *dg = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    int rc = (!hx || !hc || !hz) ? FMM_ERR_NOMEM : FMM_OK;
    if (!rc) {
        uint64_t st = 0x9e3779b97f4a7c15ull;
        auto rnd = [&]() {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            return (double)(st >> 11) / 9007199254740992.0;
        };
        for (long i = 0; i < 3 * n; ++i) hx[i] = side * rnd();
        for (size_t i = 0; i < nc; ++i) hc[i] = 2 * rnd() - 1;
        for (int i = 0; i < 3 * nclusters; ++i) hz[i] = side * rnd();
    }
    if (!rc) rc = fmm_cuda_status(cudaMalloc(&dx, sizeof(double) * 3 * n));
    if (!rc) rc = fmm_cuda_status(cudaMalloc(&dc, sizeof(double) * nc));
    if (!rc) rc = fmm_cuda_status(cudaMalloc(&dz, sizeof(double) * 3 * nclusters));
    if (!rc) rc = fmm_cuda_status(cudaMalloc(&dg, sizeof(double) * n));
    if (!rc)
        rc = fmm_cuda_status(cudaMemcpy(dx, hx, sizeof(double) * 3 * n, cudaMemcpyHostToDevice));
    if (!rc) rc = fmm_cuda_status(cudaMemcpy(dc, hc, sizeof(double) * nc, cudaMemcpyHostToDevice));
    if (!rc)
        rc = fmm_cuda_status(
            cudaMemcpy(dz, hz, sizeof(double) * 3 * nclusters, cudaMemcpyHostToDevice));
    if (!rc) rc = fmm_cuda_status(cudaEventCreate(&e0));
    if (!rc) rc = fmm_cuda_status(cudaEventCreate(&e1));
    unsigned blocks = (unsigned)((n + EVAL_THREADS - 1) / EVAL_THREADS);
    for (int rep = 0; rep < 2 && !rc; ++rep) { // the first run warms up
        rc = fmm_cuda_status(cudaEventRecord(e0));
        switch (np_for(p)) {
        case 8:
            k_hermite_bench<8><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg);
            break;
        case 16:
            k_hermite_bench<16><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg);
            break;
        default:
            k_hermite_bench<32><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg);
            break;
        }
        if (!rc) rc = fmm_cuda_status(cudaGetLastError());
        if (!rc) rc = fmm_cuda_status(cudaEventRecord(e1));
        if (!rc) rc = fmm_cuda_status(cudaEventSynchronize(e1));
    }
    if (!rc) {
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        *ms = t;
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(dx), cudaFree(dc), cudaFree(dz), cudaFree(dg);
    free(hx), free(hc), free(hz);
    return rc;
}
