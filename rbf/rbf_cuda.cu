/* Direct multiquadric mat-vec on the GPU, double precision:
 *   out_i = sum_j w_j sqrt(|t_i - s_j|^2 + c^2),
 * for 1 .. RBF_MAXW weight vectors at once (each kernel value serves all of them), sources
 * resident on the device (uploaded once per plan), weights and targets per call.
 * Each thread sums two targets; sources are staged through shared memory in tiles.
 * sqrt(a) is computed as a * rsqrt(a) (a >= c^2 > 0), within 2 ulp. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "core/cuda_status.cuh"
#include "fmm_common.h"
#include "rbf/rbf_internal.h"

#define RBF_BLOCK 128
#define RBF_TPT 2

struct rbf_cuda {
    long n;
    double *sx, *sy, *sz, *w; /* sources, RBF_MAXW weight vectors */
    double *t;                /* targets (3 * tcap, SoA) */
    double *out;              /* ocap: the largest nw m so far (n at first) */
    long tcap, ocap;
};

/* w + k ns, out + k m for the NW weight vectors */
template <int NW>
__global__ void __launch_bounds__(RBF_BLOCK)
    k_mq(long ns, const double *__restrict__ sx, const double *__restrict__ sy,
         const double *__restrict__ sz, const double *__restrict__ w, double c2, long m,
         const double *__restrict__ tx, const double *__restrict__ ty,
         const double *__restrict__ tz, double *__restrict__ out) {
    __shared__ double shx[RBF_BLOCK], shy[RBF_BLOCK], shz[RBF_BLOCK], shw[NW][RBF_BLOCK];
    const long i0 = (long)blockIdx.x * (RBF_BLOCK * RBF_TPT) + threadIdx.x;
    const long i1 = i0 + RBF_BLOCK;
    const double x0 = i0 < m ? tx[i0] : 0.0, y0 = i0 < m ? ty[i0] : 0.0, z0 = i0 < m ? tz[i0] : 0.0;
    const double x1 = i1 < m ? tx[i1] : 0.0, y1 = i1 < m ? ty[i1] : 0.0, z1 = i1 < m ? tz[i1] : 0.0;
    double a0[NW], a1[NW];
#pragma unroll
    for (int v = 0; v < NW; ++v) a0[v] = a1[v] = 0.0;
    for (long b = 0; b < ns; b += RBF_BLOCK) {
        const long j = b + threadIdx.x;
        __syncthreads();
        const bool in = j < ns;
        shx[threadIdx.x] = in ? sx[j] : 0.0, shy[threadIdx.x] = in ? sy[j] : 0.0,
        shz[threadIdx.x] = in ? sz[j] : 0.0;
#pragma unroll
        for (int v = 0; v < NW; ++v) shw[v][threadIdx.x] = in ? w[v * ns + j] : 0.0;
        __syncthreads();
        /* a tile's sum first, then into the total: two chains of RBF_BLOCK and ns / RBF_BLOCK
           adds instead of one of ns, whose rounding is the floor of a fit near 1e-13 (the
           CPU's column sums, rbf/direct.c) */
        double b0[NW], b1[NW];
#pragma unroll
        for (int v = 0; v < NW; ++v) b0[v] = b1[v] = 0.0;
#pragma unroll 8
        for (int k = 0; k < RBF_BLOCK; ++k) {
            const double px = shx[k], py = shy[k], pz = shz[k];
            double dx = x0 - px, dy = y0 - py, dz = z0 - pz;
            double s = fma(dx, dx, fma(dy, dy, fma(dz, dz, c2)));
            const double k0 = s * rsqrt(s);
            dx = x1 - px, dy = y1 - py, dz = z1 - pz;
            s = fma(dx, dx, fma(dy, dy, fma(dz, dz, c2)));
            const double k1 = s * rsqrt(s);
#pragma unroll
            for (int v = 0; v < NW; ++v)
                b0[v] = fma(shw[v][k], k0, b0[v]), b1[v] = fma(shw[v][k], k1, b1[v]);
        }
#pragma unroll
        for (int v = 0; v < NW; ++v) a0[v] += b0[v], a1[v] += b1[v];
    }
#pragma unroll
    for (int v = 0; v < NW; ++v) {
        if (i0 < m) out[v * m + i0] = a0[v];
        if (i1 < m) out[v * m + i1] = a1[v];
    }
}

extern "C" void rbf_cuda_destroy(rbf_cuda *g) {
    if (!g) return;
    cudaFree(g->sx), cudaFree(g->sy), cudaFree(g->sz), cudaFree(g->w), cudaFree(g->t), cudaFree(g->out);
    free(g);
}

extern "C" int rbf_cuda_create(rbf_cuda **out, long n, const double *x, const double *y,
                               const double *z) {
    *out = NULL;
    rbf_cuda *g = (rbf_cuda *)calloc(1, sizeof *g);
    if (!g) return FMM_ERR_NOMEM;
    g->n = n;
    cudaError_t e;
    size_t b = sizeof(double) * (size_t)n;
    if ((e = cudaMalloc((void **)&g->sx, b)) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->sy, b)) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->sz, b)) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->w, RBF_MAXW * b)) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->out, b)) != cudaSuccess ||
        (e = cudaMemcpy(g->sx, x, b, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(g->sy, y, b, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(g->sz, z, b, cudaMemcpyHostToDevice)) != cudaSuccess) {
        rbf_cuda_destroy(g);
        (void)cudaGetLastError();
        return fmm_cuda_status(e);
    }
    g->ocap = n;
    *out = g;
    return 0;
}

extern "C" int rbf_cuda_matvec(rbf_cuda *g, double c2, int nw, const double *w, long m,
                               const double *tx, const double *ty, const double *tz, double *out) {
    cudaError_t e;
    if (m <= 0) return 0;
    if (nw < 1 || nw > RBF_MAXW) return FMM_ERR_ARG;
    if (tx && m > g->tcap) {
        cudaFree(g->t);
        g->t = NULL, g->tcap = 0;
        if ((e = cudaMalloc((void **)&g->t, sizeof(double) * 3 * (size_t)m)) != cudaSuccess) {
            (void)cudaGetLastError();
            return fmm_cuda_status(e);
        }
        g->tcap = m;
    }
    if (nw * m > g->ocap) {
        cudaFree(g->out);
        g->out = NULL, g->ocap = 0;
        if ((e = cudaMalloc((void **)&g->out, sizeof(double) * (size_t)(nw * m))) != cudaSuccess) {
            (void)cudaGetLastError();
            return fmm_cuda_status(e);
        }
        g->ocap = nw * m;
    }
    if ((e = cudaMemcpy(g->w, w, sizeof(double) * nw * g->n, cudaMemcpyHostToDevice)) !=
        cudaSuccess)
        return fmm_cuda_status(e);
    const double *dx = g->sx, *dy = g->sy, *dz = g->sz;
    if (tx) {
        size_t b = sizeof(double) * (size_t)m;
        if ((e = cudaMemcpy(g->t, tx, b, cudaMemcpyHostToDevice)) != cudaSuccess ||
            (e = cudaMemcpy(g->t + m, ty, b, cudaMemcpyHostToDevice)) != cudaSuccess ||
            (e = cudaMemcpy(g->t + 2 * m, tz, b, cudaMemcpyHostToDevice)) != cudaSuccess)
            return fmm_cuda_status(e);
        dx = g->t, dy = g->t + m, dz = g->t + 2 * m;
    }
    const long per = RBF_BLOCK * RBF_TPT;
    const unsigned nb = (unsigned)((m + per - 1) / per);
    if (nw == 1)
        k_mq<1><<<nb, RBF_BLOCK>>>(g->n, g->sx, g->sy, g->sz, g->w, c2, m, dx, dy, dz, g->out);
    else if (nw == 2)
        k_mq<2><<<nb, RBF_BLOCK>>>(g->n, g->sx, g->sy, g->sz, g->w, c2, m, dx, dy, dz, g->out);
    else
        k_mq<3><<<nb, RBF_BLOCK>>>(g->n, g->sx, g->sy, g->sz, g->w, c2, m, dx, dy, dz, g->out);
    if ((e = cudaGetLastError()) != cudaSuccess) return fmm_cuda_status(e);
    if ((e = cudaMemcpy(out, g->out, sizeof(double) * (size_t)(nw * m), cudaMemcpyDeviceToHost)) !=
        cudaSuccess)
        return fmm_cuda_status(e);
    return 0;
}
