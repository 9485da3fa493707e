/*
 * GPU M2L by dynamic parallelism (Kohnke et al. 2021, approach 2; m2l/bench/m2l_variants.h): a
 * parent kernel with one thread per target box launches, from the device, a child grid for that
 * box's V list: DYN_CHUNKS blocks of 27 V-list entries each; in a block, warp w computes the output
 * rows k = w, w + 8, ... with the lanes over the input coefficients (coalesced reads of the
 * class operator row and of the source multipole), reduced by shuffles and added atomically.
 * The operators are the 56 class operators with the reflection signs of each offset,
 * T(f d)[k][j] = s_f[k] T_c[k][j] s_f[j].
 *
 * The parents are launched in batches of DYN_BATCH target boxes so that the device runtime's
 * pending-launch buffer (2048 launches by default) never fills: a parent grid completes only
 * after its children. A child launch that fails anyway is replaced by the parent thread summing
 * its box's V list itself, so the result stays right (only slower). The point of this variant
 * is the cost of device-side launches, not speed.
 */
#include "core/cuda_status.cuh"
#include "fmm_common.h"
#include "m2l/bench/m2l_variants.cuh"
#include "m2l/bench/m2l_variants.h"

#define DYN_CHUNKS 7   /* child blocks per target box: 189 = 7 x 27 V-list entries */
#define DYN_BATCH 1024 /* target boxes per parent grid */

__global__ void k_m2l_dyn_child(const double *__restrict__ cls, const double *__restrict__ sign,
                                const int *__restrict__ vlist, int nc, int level, int periodic,
                                long t, const double *__restrict__ W, double *__restrict__ U) {
    const int s = 1 << level, ix = (int)(t % s), iy = (int)(t / s % s),
              iz = (int)(t / ((long)s * s));
    const int parity = (ix & 1) | (iy & 1) << 1 | (iz & 1) << 2;
    const int e0 = blockIdx.x * M2L_VLIST / gridDim.x,
              e1 = (blockIdx.x + 1) * M2L_VLIST / gridDim.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const size_t nn = (size_t)nc * nc;
    for (int k = warp; k < nc; k += nw) {
        double acc = 0.0;
        for (int e = e0; e < e1; ++e) {
            const int pk = vlist[parity * M2L_VLIST + e];
            const long sb = m2l_source_box(ix, iy, iz, pk, s, periodic);
            if (sb < 0) continue;
            const double *T = cls + (pk >> 9 & 63) * nn + (size_t)k * nc,
                         *sg = sign + (pk >> 15) * nc, *w = W + sb * nc;
            double part = 0.0;
            for (int j = lane; j < nc; j += 32) part = fma(T[j], sg[j] * w[j], part);
            acc = fma(sg[k], part, acc);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (lane == 0) atomicAdd(U + t * nc + k, acc);
    }
}

__global__ void k_m2l_dyn_parent(const double *__restrict__ cls, const double *__restrict__ sign,
                                 const int *__restrict__ vlist, int nc, int level, int periodic,
                                 long b0, long b1, const double *__restrict__ W,
                                 double *__restrict__ U) {
    const long t = b0 + (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= b1) return;
    k_m2l_dyn_child<<<DYN_CHUNKS, 256, 0, cudaStreamFireAndForget>>>(cls, sign, vlist, nc, level,
                                                                     periodic, t, W, U);
    if (cudaGetLastError() == cudaSuccess) return;
    /* the launch failed (e.g. the pending-launch buffer is full): sum the V list here */
    const int s = 1 << level, ix = (int)(t % s), iy = (int)(t / s % s),
              iz = (int)(t / ((long)s * s));
    const int parity = (ix & 1) | (iy & 1) << 1 | (iz & 1) << 2;
    const size_t nn = (size_t)nc * nc;
    for (int k = 0; k < nc; ++k) {
        double acc = 0.0;
        for (int e = 0; e < M2L_VLIST; ++e) {
            const int pk = vlist[parity * M2L_VLIST + e];
            const long sb = m2l_source_box(ix, iy, iz, pk, s, periodic);
            if (sb < 0) continue;
            const double *T = cls + (pk >> 9 & 63) * nn + (size_t)k * nc,
                         *sg = sign + (pk >> 15) * nc, *w = W + sb * nc;
            double part = 0.0;
            for (int j = 0; j < nc; ++j) part = fma(T[j], sg[j] * w[j], part);
            acc = fma(sg[k], part, acc);
        }
        atomicAdd(U + t * nc + k, acc);
    }
}

extern "C" int m2l_gpu_dynamic(const m2l_gpu_ops *g, int level, int periodic, const double *W,
                               double *U, cudaStream_t stream) {
    if (!g || !g->cls || !g->sign || !g->vlist || !W || !U || level < 1 || level > 10)
        return FMM_ERR_ARG;
    const long s = 1L << level, nbox = s * s * s;
    CU(cudaMemsetAsync(U, 0, sizeof(double) * g->nc * nbox, stream));
    for (long b0 = 0; b0 < nbox; b0 += DYN_BATCH) {
        const long b1 = b0 + DYN_BATCH < nbox ? b0 + DYN_BATCH : nbox;
        k_m2l_dyn_parent<<<(unsigned)((b1 - b0 + 127) / 128), 128, 0, stream>>>(
            g->cls, g->sign, g->vlist, g->nc, level, periodic ? 1 : 0, b0, b1, W, U);
        CU(cudaGetLastError());
    }
    return FMM_OK;
}
