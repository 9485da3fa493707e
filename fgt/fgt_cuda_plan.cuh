// fgt/fgt_cuda_plan.cuh - what the CUDA FGT's files share: a plan's device state (the uploaded
// points, boxes, tables and job lists, made by fgt/fgt_cuda.cu), the block size of the evaluation,
// and the evaluation of one expansion at a block's targets that the passes
// (fgt/fgt_cuda_passes.cu) and the Hermite benchmark (fgt/fgt_cuda_bench.cu) run. Kernels are
// launched from the file that defines them (no device link: CMakeLists.txt).
#ifndef FMM_FGT_CUDA_PLAN_CUH
#define FMM_FGT_CUDA_PLAN_CUH

#include <cuda_runtime.h>

#include "core/cuda_status.cuh"
#include "fgt/fgt_internal.h"

namespace fgt_gpu {

struct Job {
    long box, p0, p1; // box index, point range
};

struct Dev {
    int dim, R, P, P8, force;
    long n[3];
    int pe[3];
    long ncoef, nsb, ntb;
    double b;
    fgt_cost cost;
    const double *su0, *su1, *su2, *tu0, *tu1, *tu2, *q;
    const int64_t *skey, *tkey;
    const long *sstart, *tstart, *aidx;
    const fgt_offset *off;
    const int *colR;
    const double *M;
    double *A, *B, *scratch, *g;
    int *hasB; // per target box: largest order accumulated into B (0 = none)
};

struct State {
    Dev d;
    Job *jobs_moments, *jobs_eval;
    long njm, nje;
    int grid_build;
    void *buf[24];
    int nbuf;
    cudaEvent_t ev[5];
    int have_events;
    double ms[4];
};

// threads of an evaluation block: a job of the evaluation list is at most this many targets
constexpr int EVAL_THREADS = 128;

// Evaluation of one expansion C (stride st, orders pe) about centre c at the thread's target
// (t = x - c). kind 0: Hermite functions h_n(t); kind 1: powers t^n. NP: compile-time bound
// on the order, so the 1-D factors live in registers (unrolled recurrences). Whole block.
template <int NP>
__device__ double block_eval(int kind, const double *C, const int st[3], const int pe[3],
                             const double c[3], const double x[3], double *slice /* NP*NP */) {
    double f[3][NP];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        double t = x[a] - c[a];
        if (kind == 0) {
            double h0 = exp(-t * t), h1 = 2 * t * h0;
            f[a][0] = h0;
#pragma unroll
            for (int n = 1; n < NP; ++n) {
                f[a][n] = h1;
                double h2 = 2 * t * h1 - 2 * n * h0;
                h0 = h1, h1 = h2;
            }
        } else {
            double v = 1;
#pragma unroll
            for (int n = 0; n < NP; ++n) f[a][n] = v, v *= t;
        }
    }
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    double s0 = 0;
#pragma unroll
    for (int i0 = 0; i0 < NP; ++i0) {
        if (i0 >= p0) break;
        __syncthreads();
        for (int ci = threadIdx.x; ci < p1 * p2; ci += blockDim.x) {
            int i1 = ci / p2, i2 = ci % p2;
            slice[ci] = C[((long)i0 * st[1] + i1) * st[2] + i2];
        }
        __syncthreads();
        double s1 = 0;
#pragma unroll
        for (int i1 = 0; i1 < NP; ++i1) {
            if (i1 >= p1) break;
            double s2 = 0;
            const double *cc = slice + i1 * p2;
#pragma unroll
            for (int i2 = 0; i2 < NP; ++i2) {
                if (i2 >= p2) break;
                s2 = fma(cc[i2], f[2][i2], s2);
            }
            s1 = fma(s2, f[1][i1], s1);
        }
        s0 = fma(s1, f[0][i0], s0);
    }
    return s0;
}

template <int NP>
__device__ double block_eval_rolled(int kind, const double *C, const int st[3], const int pe[3],
                                    const double c[3], const double x[3],
                                    double *slice /* NP*NP */) {
    double f[3][NP];
#pragma unroll 1
    for (int a = 0; a < 3; ++a) {
        double t = x[a] - c[a];
        if (kind == 0) {
            double h0 = exp(-t * t), h1 = 2 * t * h0;
            f[a][0] = h0;
#pragma unroll 1
            for (int n = 1; n < NP; ++n) {
                f[a][n] = h1;
                double h2 = 2 * t * h1 - 2 * n * h0;
                h0 = h1, h1 = h2;
            }
        } else {
            double v = 1;
#pragma unroll 1
            for (int n = 0; n < NP; ++n) f[a][n] = v, v *= t;
        }
    }
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    double s0 = 0;
#pragma unroll 1
    for (int i0 = 0; i0 < NP; ++i0) {
        if (i0 >= p0) break;
        __syncthreads();
        for (int ci = threadIdx.x; ci < p1 * p2; ci += blockDim.x) {
            int i1 = ci / p2, i2 = ci % p2;
            slice[ci] = C[((long)i0 * st[1] + i1) * st[2] + i2];
        }
        __syncthreads();
        double s1 = 0;
#pragma unroll 1
        for (int i1 = 0; i1 < NP; ++i1) {
            if (i1 >= p1) break;
            double s2 = 0;
            const double *cc = slice + i1 * p2;
#pragma unroll 1
            for (int i2 = 0; i2 < NP; ++i2) {
                if (i2 >= p2) break;
                s2 = fma(cc[i2], f[2][i2], s2);
            }
            s1 = fma(s2, f[1][i1], s1);
        }
        s0 = fma(s1, f[0][i0], s0);
    }
    return s0;
}

template <int NP>
__device__ double eval_any(int kind, const double *C, const int st[3], const int pe[3],
                           const double c[3], const double x[3], double *slice) {
    if constexpr (NP <= 16)
        return block_eval<NP>(kind, C, st, pe, c, x, slice);
    else
        return block_eval_rolled<NP>(kind, C, st, pe, c, x, slice);
}

// orders <= 16: unrolled in registers (8 or 16 bound); above: rolled loops, bound 32
inline int np_for(int P) {
    if (P <= 8) return 8;
    if (P <= 16) return 16;
    return 32;
}

} // namespace fgt_gpu

#endif
