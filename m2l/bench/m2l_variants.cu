/* The bench-only GPU M2L variants tiled, tensor and naive on dense tree levels
 * (m2l/bench/m2l_variants.h). */
#include "m2l/bench/m2l_variants.h"

#include <stdlib.h>

#include "core/cuda_status.cuh"
#include "fmm_common.h"
#include "m2l/bench/m2l_variants.cuh"

/* ---- tiled: per-offset class GEMM over a tile of same-parity targets ---- */

template <int P> struct tiled_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int RPT = (NC + 7) / 8; /* output rows per thread (8 warps) */
    static constexpr int COLS = RPT <= 8 ? 4 : (RPT <= 16 ? 2 : 1);
    static constexpr int T = 32 * COLS; /* targets per block */
    static constexpr int JT = 16;       /* input coefficients per stage */
    static constexpr int NR = 8 * RPT;
    static constexpr int XT = T + 1; /* padded row of the source stage */
    static constexpr size_t SMEM = sizeof(double) * (NR * JT + JT * XT);
};

template <int P>
__global__ void __launch_bounds__(256)
    k_m2l_tiled(const double *__restrict__ cls, const double *__restrict__ sign,
                const int *__restrict__ vlist, int level, int periodic,
                const double *__restrict__ W, double *__restrict__ U) {
    using S = tiled_shape<P>;
    constexpr int NC = S::NC, RPT = S::RPT, COLS = S::COLS, T = S::T, JT = S::JT, XT = S::XT;
    extern __shared__ double smem[];
    double *Ms = smem, *Xs = smem + S::NR * JT;
    __shared__ long src[T];
    const int parity = blockIdx.y, half = 1 << (level - 1), s = 1 << level;
    const int e0 = blockIdx.z * M2L_VLIST / gridDim.z,
              e1 = (blockIdx.z + 1) * M2L_VLIST / gridDim.z;
    const long ntarget = (long)half * half * half, k0 = (long)blockIdx.x * T;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    double acc[COLS][RPT];
#pragma unroll
    for (int c = 0; c < COLS; ++c)
#pragma unroll
        for (int i = 0; i < RPT; ++i) acc[c][i] = 0.0;
    for (int e = e0; e < e1; ++e) {
        const int pk = vlist[parity * M2L_VLIST + e];
        const double *M = cls + (size_t)(pk >> 9 & 63) * NC * NC, *sg = sign + (pk >> 15) * NC;
        __syncthreads(); /* the previous offset's stages are consumed */
        if (threadIdx.x < T) {
            long k = k0 + threadIdx.x;
            long sb = -1;
            if (k < ntarget) {
                int a = (int)(k % half), b = (int)(k / half % half),
                    c = (int)(k / ((long)half * half));
                sb = m2l_source_box(2 * a + (parity & 1), 2 * b + (parity >> 1 & 1),
                                    2 * c + (parity >> 2 & 1), pk, s, periodic);
            }
            src[threadIdx.x] = sb;
        }
        for (int j0 = 0; j0 < NC; j0 += JT) {
            __syncthreads();
            for (int idx = threadIdx.x; idx < JT * T; idx += 256) {
                const int jj = idx % JT, col = idx / JT, j = j0 + jj;
                const long sb = src[col];
                Xs[jj * XT + col] = (sb >= 0 && j < NC) ? sg[j] * W[sb * NC + j] : 0.0;
            }
            for (int idx = threadIdx.x; idx < S::NR * JT; idx += 256) {
                const int jj = idx % JT, row = idx / JT, j = j0 + jj;
                Ms[idx] = (row < NC && j < NC) ? sg[row] * M[(size_t)row * NC + j] : 0.0;
            }
            __syncthreads();
#pragma unroll
            for (int jj = 0; jj < JT; ++jj) {
                double xv[COLS];
#pragma unroll
                for (int c = 0; c < COLS; ++c) xv[c] = Xs[jj * XT + lane + 32 * c];
#pragma unroll
                for (int i = 0; i < RPT; ++i) {
                    const double m = Ms[(warp + 8 * i) * JT + jj];
#pragma unroll
                    for (int c = 0; c < COLS; ++c) acc[c][i] = fma(m, xv[c], acc[c][i]);
                }
            }
        }
    }
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
        const long k = k0 + lane + 32 * c;
        if (k >= ntarget) continue;
        int a = (int)(k % half), b = (int)(k / half % half), cz = (int)(k / ((long)half * half));
        long t = (2 * a + (parity & 1)) +
                 (long)s * ((2 * b + (parity >> 1 & 1)) + (long)s * (2 * cz + (parity >> 2 & 1)));
#pragma unroll
        for (int i = 0; i < RPT; ++i) {
            const int row = warp + 8 * i;
            if (row < NC) atomicAdd(U + t * NC + row, acc[c][i]);
        }
    }
}

/* The tiled and tensor kernels' launch: a grid of (tiles, 8 parities, V-list groups) after U is
 * cleared; coarse levels have few tiles, so the V list is split over blocks until every SM has
 * work. */
template <typename S, typename K>
static int launch_tiles(K kernel, const m2l_gpu_ops *g, int level, int periodic, const double *W,
                        double *U, cudaStream_t st) {
    const long half = 1L << (level - 1), ntarget = half * half * half;
    const long tiles = 8 * ((ntarget + S::T - 1) / S::T);
    long groups = (4L * g->nsm + tiles - 1) / tiles;
    groups = groups < 1 ? 1 : (groups > 48 ? 48 : groups);
    CU(cudaMemsetAsync(U, 0, sizeof(double) * S::NC * 8 * ntarget, st));
    dim3 grid((unsigned)(tiles / 8), 8, (unsigned)groups);
    kernel<<<grid, 256, S::SMEM, st>>>(g->cls, g->sign, g->vlist, level, periodic, W, U);
    CU(cudaGetLastError());
    return FMM_OK;
}

template <typename S, typename K> static int prepare_tiles(K kernel) {
    CU(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)S::SMEM));
    return FMM_OK;
}

typedef int (*tiled_fn)(const m2l_gpu_ops *, int, int, const double *, double *, cudaStream_t);
typedef int (*prepare_fn)();
/* the launch and the shared-memory opt-in of variant V at every order Ps */
template <template <int> class V, int... Ps> struct order_table {
    tiled_fn run[sizeof...(Ps)] = {V<Ps>::run...};
    prepare_fn prepare[sizeof...(Ps)] = {V<Ps>::prepare...};
};

template <int P> struct tiled_variant {
    static int run(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                   cudaStream_t st) {
        return launch_tiles<tiled_shape<P>>(k_m2l_tiled<P>, g, level, periodic, W, U, st);
    }
    static int prepare() { return prepare_tiles<tiled_shape<P>>(k_m2l_tiled<P>); }
};
static const order_table<tiled_variant, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                         18, 19, 20>
    tiled_fns;

extern "C" int m2l_gpu_tiled(const m2l_gpu_ops *g, int level, int periodic, const double *W,
                             double *U, cudaStream_t stream) {
    if (level < 1 || g->p < 1 || g->p > M2L_GPU_PMAX) return FMM_ERR_ARG;
    return tiled_fns.run[g->p - 1](g, level, periodic, W, U, stream);
}

/* ---- tensor: the tiled scheme on the FP64 tensor cores (mma m8n8k4), orders <= 10 ---- */

template <int P> struct tensor_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int RT = (NC + 7) / 8; /* 8-row output tiles: every warp owns all of them */
    static constexpr int NT =
        RT >= 16 ? 1 : 16 / RT;          /* 8-column tiles per warp: 16..32 accumulators */
    static constexpr int T = 8 * 8 * NT; /* targets per block: 8 warps x NT tiles x 8 */
    static constexpr int KC = 16;        /* input coefficients per stage */
    static constexpr int MS = KC + 4;    /* padded rows: conflict-free fragment loads */
    static constexpr int XS = T + 4;
    static constexpr size_t SMEM = sizeof(double) * (8 * RT * MS + KC * XS);
};

__device__ __forceinline__ void mma884(double &c0, double &c1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c0), "+d"(c1)
                 : "d"(a), "d"(b));
#else
    (void)c0, (void)c1, (void)a, (void)b;
    __trap(); /* unreachable: m2l_gpu_tensor refuses devices below compute capability 8.0 */
#endif
}

template <int P>
__global__ void __launch_bounds__(256)
    k_m2l_tensor(const double *__restrict__ cls, const double *__restrict__ sign,
                 const int *__restrict__ vlist, int level, int periodic,
                 const double *__restrict__ W, double *__restrict__ U) {
    using S = tensor_shape<P>;
    constexpr int NC = S::NC, RT = S::RT, NT = S::NT, T = S::T, KC = S::KC, MS = S::MS, XS = S::XS;
    extern __shared__ double smem[];
    double *Ms = smem, *Xs = smem + 8 * RT * MS;
    __shared__ long src[T];
    const int parity = blockIdx.y, half = 1 << (level - 1), s = 1 << level;
    const int e0 = blockIdx.z * M2L_VLIST / gridDim.z,
              e1 = (blockIdx.z + 1) * M2L_VLIST / gridDim.z;
    const long ntarget = (long)half * half * half, k0 = (long)blockIdx.x * T;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
    double acc[RT][NT][2];
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int c = 0; c < NT; ++c) acc[r][c][0] = acc[r][c][1] = 0.0;
    for (int e = e0; e < e1; ++e) {
        const int pk = vlist[parity * M2L_VLIST + e];
        const double *M = cls + (size_t)(pk >> 9 & 63) * NC * NC, *sg = sign + (pk >> 15) * NC;
        __syncthreads();
        for (int col = threadIdx.x; col < T; col += 256) {
            const long k = k0 + col;
            long sb = -1;
            if (k < ntarget) {
                int a = (int)(k % half), b = (int)(k / half % half),
                    c = (int)(k / ((long)half * half));
                sb = m2l_source_box(2 * a + (parity & 1), 2 * b + (parity >> 1 & 1),
                                    2 * c + (parity >> 2 & 1), pk, s, periodic);
            }
            src[col] = sb;
        }
        for (int j0 = 0; j0 < NC; j0 += KC) {
            __syncthreads();
            for (int idx = threadIdx.x; idx < KC * T; idx += 256) {
                const int jj = idx % KC, col = idx / KC, j = j0 + jj;
                const long sb = src[col];
                Xs[jj * XS + col] = (sb >= 0 && j < NC) ? sg[j] * W[sb * NC + j] : 0.0;
            }
            for (int idx = threadIdx.x; idx < 8 * RT * KC; idx += 256) {
                const int jj = idx % KC, row = idx / KC, j = j0 + jj;
                Ms[row * MS + jj] = (row < NC && j < NC) ? sg[row] * M[(size_t)row * NC + j] : 0.0;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < KC; kk += 4) {
                double b[NT];
#pragma unroll
                for (int c = 0; c < NT; ++c) b[c] = Xs[(kk + tig) * XS + (warp * NT + c) * 8 + gid];
#pragma unroll
                for (int r = 0; r < RT; ++r) {
                    const double a = Ms[(r * 8 + gid) * MS + kk + tig];
#pragma unroll
                    for (int c = 0; c < NT; ++c) mma884(acc[r][c][0], acc[r][c][1], a, b[c]);
                }
            }
        }
    }
#pragma unroll
    for (int c = 0; c < NT; ++c)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long k = k0 + (warp * NT + c) * 8 + 2 * tig + h;
            if (k >= ntarget) continue;
            int a = (int)(k % half), b = (int)(k / half % half),
                cz = (int)(k / ((long)half * half));
            long t = (2 * a + (parity & 1)) + (long)s * ((2 * b + (parity >> 1 & 1)) +
                                                         (long)s * (2 * cz + (parity >> 2 & 1)));
#pragma unroll
            for (int r = 0; r < RT; ++r) {
                const int row = r * 8 + gid;
                if (row < NC) atomicAdd(U + t * NC + row, acc[r][c][h]);
            }
        }
}

template <int P> struct tensor_variant {
    static int run(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                   cudaStream_t st) {
        return launch_tiles<tensor_shape<P>>(k_m2l_tensor<P>, g, level, periodic, W, U, st);
    }
    static int prepare() { return prepare_tiles<tensor_shape<P>>(k_m2l_tensor<P>); }
};
static const order_table<tensor_variant, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10> tensor_fns;

extern "C" int m2l_gpu_tensor(const m2l_gpu_ops *g, int level, int periodic, const double *W,
                              double *U, cudaStream_t stream) {
    if (level < 1 || g->p < 1 || g->p > M2L_TENSOR_PMAX || g->cc < 80) return FMM_ERR_ARG;
    return tensor_fns.run[g->p - 1](g, level, periodic, W, U, stream);
}

extern "C" int m2l_gpu_variants_prepare(const m2l_gpu_ops *g) {
    if (!g || g->p < 1 || g->p > M2L_GPU_PMAX) return FMM_ERR_ARG;
    const int rc = tiled_fns.prepare[g->p - 1]();
    return rc || g->p > M2L_TENSOR_PMAX ? rc : tensor_fns.prepare[g->p - 1]();
}

extern "C" int m2l_gpu_naive_init(m2l_gpu_ops *g, const m2l_operators *ops) {
    if (!g || !ops || g->dense || ops->p != g->p) return FMM_ERR_ARG;
    const int nc = g->nc;
    const size_t nn = (size_t)nc * nc;
    /* every offset's operator, transposed ([j][k]) so that threads of consecutive output
     * coefficients k read consecutive words */
    double *h = (double *)calloc(nn * M2L_NOFFSET, sizeof(double)),
           *T = (double *)malloc(sizeof(double) * nn);
    int rc = FMM_ERR_NOMEM;
    if (!h || !T) goto done;
    for (int o = 0; o < M2L_NOFFSET; ++o) {
        if (ops->cls[o] < 0) continue;
        if (m2l_operator_dense(ops, o % 7 - 3, o / 7 % 7 - 3, o / 49 - 3, T)) goto done;
        for (int k = 0; k < nc; ++k)
            for (int j = 0; j < nc; ++j) h[o * nn + (size_t)j * nc + k] = T[(size_t)k * nc + j];
    }
    {
        cudaError_t e = cudaMalloc((void **)&g->dense, sizeof(double) * nn * M2L_NOFFSET);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->dense, h, sizeof(double) * nn * M2L_NOFFSET, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) cudaFree(g->dense), g->dense = NULL;
        rc = fmm_cuda_status(e);
    }
done:
    free(h), free(T);
    return rc;
}

/* ---- naive: one thread per (target, coefficient), dense operators from memory ---- */

__global__ void k_m2l_naive(const double *__restrict__ dense, const int *__restrict__ vlist, int nc,
                            int level, int periodic, const double *__restrict__ W,
                            double *__restrict__ U) {
    const int s = 1 << level;
    const long nbox = (long)s * s * s, id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nbox * nc) return;
    const long t = id / nc;
    const int k = (int)(id % nc), ix = (int)(t % s), iy = (int)(t / s % s),
              iz = (int)(t / ((long)s * s));
    const int parity = (ix & 1) | (iy & 1) << 1 | (iz & 1) << 2;
    const size_t nn = (size_t)nc * nc;
    double acc = 0.0;
    for (int e = 0; e < M2L_VLIST; ++e) {
        const int pk = vlist[parity * M2L_VLIST + e];
        const long sb = m2l_source_box(ix, iy, iz, pk, s, periodic);
        if (sb < 0) continue;
        const int o = (pk & 7) + 7 * (pk >> 3 & 7) + 49 * (pk >> 6 & 7);
        const double *T = dense + o * nn + k, *w = W + sb * nc;
        for (int j = 0; j < nc; ++j) acc = fma(T[(size_t)j * nc], w[j], acc);
    }
    U[t * nc + k] = acc;
}

extern "C" int m2l_gpu_naive(const m2l_gpu_ops *g, int level, int periodic, const double *W,
                             double *U, cudaStream_t stream) {
    if (level < 1 || !g->dense) return FMM_ERR_ARG;
    const long s = 1L << level, total = s * s * s * g->nc;
    k_m2l_naive<<<(unsigned)((total + 255) / 256), 256, 0, stream>>>(g->dense, g->vlist, g->nc,
                                                                     level, periodic, W, U);
    CU(cudaGetLastError());
    return FMM_OK;
}
