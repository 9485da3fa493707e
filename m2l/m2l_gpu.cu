/* GPU M2L variants on dense tree levels (m2l/m2l_gpu.h): operator upload, tiled, naive. */
#include "m2l/m2l_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "core/octree.h"
#include "core/cuda_status.cuh"
#include "fmm.h"


static int pack_offset(int dx, int dy, int dz, int cls, int flag) {
    return (dx + 3) | (dy + 3) << 3 | (dz + 3) << 6 | cls << 9 | flag << 15;
}

static int tiled_prepare(int p);

extern "C" void m2l_gpu_ops_free(m2l_gpu_ops *g) {
    if (!g) return;
    cudaFree(g->cls), cudaFree(g->dense), cudaFree(g->sign), cudaFree(g->vlist);
    memset(g, 0, sizeof *g);
}

extern "C" int m2l_gpu_ops_init(m2l_gpu_ops *g, const m2l_operators *ops, int dense) {
    memset(g, 0, sizeof *g);
    if (ops->p > M2L_GPU_PMAX) return FMM_ERR_ORDER;
    const int nc = ops->ncoef;
    const size_t nn = (size_t)nc * nc;
    g->p = ops->p, g->nc = nc;
    {
        int dev = 0, major = 0, minor = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&g->nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
            return FMM_ERR_CUDA;
        g->cc = 10 * major + minor;
    }
    double *h = (double *)malloc(sizeof(double) * nn * (dense ? M2L_NOFFSET : M2L_NCLASS));
    double *sg = (double *)malloc(sizeof(double) * 8 * nc);
    int *vl = (int *)malloc(sizeof(int) * 8 * M2L_VLIST);
    int rc = FMM_ERR_NOMEM;
    if (!h || !sg || !vl) goto done;
    for (int c = 0; c < M2L_NCLASS; ++c)
        if ((rc = m2l_operator_dense(ops, ops->ref[c][0], ops->ref[c][1], ops->ref[c][2], h + c * nn)))
            goto done;
    for (int f = 0; f < 8; ++f)
        for (int k = 0; k < nc; ++k) sg[f * nc + k] = ops->sign[f * ops->npad + k];
    for (int par = 0; par < 8; ++par) {
        int b[3] = {par & 1, par >> 1 & 1, par >> 2 & 1}, e = 0;
        for (int dz = -2 - b[2]; dz <= 3 - b[2]; ++dz)
            for (int dy = -2 - b[1]; dy <= 3 - b[1]; ++dy)
                for (int dx = -2 - b[0]; dx <= 3 - b[0]; ++dx) {
                    if (abs(dx) <= 1 && abs(dy) <= 1 && abs(dz) <= 1) continue;
                    int o = oct_offset_index(dx, dy, dz);
                    vl[par * M2L_VLIST + e++] = pack_offset(dx, dy, dz, ops->cls[o], ops->flags[o]);
                }
    }
    rc = FMM_ERR_CUDA;
    {
        cudaError_t e = cudaMalloc((void **)&g->cls, sizeof(double) * nn * M2L_NCLASS);
        if (e == cudaSuccess) e = cudaMalloc((void **)&g->sign, sizeof(double) * 8 * nc);
        if (e == cudaSuccess) e = cudaMalloc((void **)&g->vlist, sizeof(int) * 8 * M2L_VLIST);
        if (e == cudaSuccess) e = cudaMemcpy(g->cls, h, sizeof(double) * nn * M2L_NCLASS, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(g->sign, sg, sizeof(double) * 8 * nc, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(g->vlist, vl, sizeof(int) * 8 * M2L_VLIST, cudaMemcpyHostToDevice);
        if (e == cudaSuccess && dense) {
            /* every offset's operator, transposed ([j][k]) so that threads of consecutive
             * output coefficients k read consecutive words */
            memset(h, 0, sizeof(double) * nn * M2L_NOFFSET);
            double *T = (double *)malloc(sizeof(double) * nn);
            if (!T) {
                rc = FMM_ERR_NOMEM;
                goto done;
            }
            for (int o = 0; o < M2L_NOFFSET; ++o) {
                if (ops->cls[o] < 0) continue;
                if (m2l_operator_dense(ops, o % 7 - 3, o / 7 % 7 - 3, o / 49 - 3, T)) {
                    free(T);
                    rc = FMM_ERR_NOMEM;
                    goto done;
                }
                for (int k = 0; k < nc; ++k)
                    for (int j = 0; j < nc; ++j) h[o * nn + (size_t)j * nc + k] = T[(size_t)k * nc + j];
            }
            free(T);
            e = cudaMalloc((void **)&g->dense, sizeof(double) * nn * M2L_NOFFSET);
            if (e == cudaSuccess)
                e = cudaMemcpy(g->dense, h, sizeof(double) * nn * M2L_NOFFSET, cudaMemcpyHostToDevice);
        }
        rc = fmm_cuda_status(e);
    }
    /* the shared-memory opt-in is set here, outside any stream capture */
    if (rc == FMM_OK) rc = tiled_prepare(g->p);
done:
    free(h), free(sg), free(vl);
    if (rc) m2l_gpu_ops_free(g);
    return rc;
}

/* source box of target (ix, iy, iz) at offset d on a grid of side s; -1 if absent (open) */
__device__ __forceinline__ long source_box(int ix, int iy, int iz, int pk, int s, int periodic) {
    int sx = ix + (pk & 7) - 3, sy = iy + (pk >> 3 & 7) - 3, sz = iz + (pk >> 6 & 7) - 3;
    if (periodic) {
        sx = (sx + 4 * s) % s, sy = (sy + 4 * s) % s, sz = (sz + 4 * s) % s;
    } else if (sx < 0 || sy < 0 || sz < 0 || sx >= s || sy >= s || sz >= s) {
        return -1;
    }
    return sx + (long)s * (sy + (long)s * sz);
}

/* ---- tiled: per-offset class GEMM over a tile of same-parity targets ---- */

template <int P> struct tiled_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int RPT = (NC + 7) / 8; /* output rows per thread (8 warps) */
    static constexpr int COLS = RPT <= 8 ? 4 : (RPT <= 16 ? 2 : 1);
    static constexpr int T = 32 * COLS;      /* targets per block */
    static constexpr int JT = 16;            /* input coefficients per stage */
    static constexpr int NR = 8 * RPT;
    static constexpr int XT = T + 1;         /* padded row of the source stage */
    static constexpr size_t SMEM = sizeof(double) * (NR * JT + JT * XT);
};

template <int P>
__global__ void __launch_bounds__(256) k_m2l_tiled(const double *__restrict__ cls, const double *__restrict__ sign,
                                                   const int *__restrict__ vlist, int level, int periodic,
                                                   const double *__restrict__ W, double *__restrict__ U) {
    using S = tiled_shape<P>;
    constexpr int NC = S::NC, RPT = S::RPT, COLS = S::COLS, T = S::T, JT = S::JT, XT = S::XT;
    extern __shared__ double smem[];
    double *Ms = smem, *Xs = smem + S::NR * JT;
    __shared__ long src[T];
    const int parity = blockIdx.y, half = 1 << (level - 1), s = 1 << level;
    const int e0 = blockIdx.z * M2L_VLIST / gridDim.z, e1 = (blockIdx.z + 1) * M2L_VLIST / gridDim.z;
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
                int a = (int)(k % half), b = (int)(k / half % half), c = (int)(k / ((long)half * half));
                sb = source_box(2 * a + (parity & 1), 2 * b + (parity >> 1 & 1), 2 * c + (parity >> 2 & 1), pk, s,
                                periodic);
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
        long t = (2 * a + (parity & 1)) + (long)s * ((2 * b + (parity >> 1 & 1)) + (long)s * (2 * cz + (parity >> 2 & 1)));
#pragma unroll
        for (int i = 0; i < RPT; ++i) {
            const int row = warp + 8 * i;
            if (row < NC) atomicAdd(U + t * NC + row, acc[c][i]);
        }
    }
}

template <int P> static int prepare_tiled() {
    CU(cudaFuncSetAttribute(k_m2l_tiled<P>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)tiled_shape<P>::SMEM));
    return FMM_OK;
}

template <int P> static int launch_tiled(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                                         cudaStream_t st) {
    using S = tiled_shape<P>;
    const long half = 1L << (level - 1), ntarget = half * half * half;
    const long tiles = 8 * ((ntarget + S::T - 1) / S::T);
    /* coarse levels have few tiles: split the V list over blocks so that every SM has work */
    long groups = (4L * g->nsm + tiles - 1) / tiles;
    groups = groups < 1 ? 1 : (groups > 48 ? 48 : groups);
    CU(cudaMemsetAsync(U, 0, sizeof(double) * S::NC * 8 * ntarget, st));
    dim3 grid((unsigned)(tiles / 8), 8, (unsigned)groups);
    k_m2l_tiled<P><<<grid, 256, S::SMEM, st>>>(g->cls, g->sign, g->vlist, level, periodic, W, U);
    CU(cudaGetLastError());
    return FMM_OK;
}

typedef int (*tiled_fn)(const m2l_gpu_ops *, int, int, const double *, double *, cudaStream_t);
typedef int (*prepare_fn)();
template <int... Ps> struct tiled_table {
    tiled_fn run[sizeof...(Ps)] = {launch_tiled<Ps>...};
    prepare_fn prepare[sizeof...(Ps)] = {prepare_tiled<Ps>...};
};
static const tiled_table<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20> tiled_fns;


extern "C" int m2l_gpu_tiled(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                             cudaStream_t stream) {
    if (level < 1 || g->p < 1 || g->p > M2L_GPU_PMAX) return FMM_ERR_ARG;
    return tiled_fns.run[g->p - 1](g, level, periodic, W, U, stream);
}

/* ---- tensor: the tiled scheme on the FP64 tensor cores (mma m8n8k4), orders <= 10 ---- */

template <int P> struct tensor_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int RT = (NC + 7) / 8;            /* 8-row output tiles: every warp owns all of them */
    static constexpr int NT = RT >= 16 ? 1 : 16 / RT; /* 8-column tiles per warp: 16..32 accumulators */
    static constexpr int T = 8 * 8 * NT;               /* targets per block: 8 warps x NT tiles x 8 */
    static constexpr int KC = 16;                      /* input coefficients per stage */
    static constexpr int MS = KC + 4;                  /* padded rows: conflict-free fragment loads */
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
__global__ void __launch_bounds__(256) k_m2l_tensor(const double *__restrict__ cls, const double *__restrict__ sign,
                                                    const int *__restrict__ vlist, int level, int periodic,
                                                    const double *__restrict__ W, double *__restrict__ U) {
    using S = tensor_shape<P>;
    constexpr int NC = S::NC, RT = S::RT, NT = S::NT, T = S::T, KC = S::KC, MS = S::MS, XS = S::XS;
    extern __shared__ double smem[];
    double *Ms = smem, *Xs = smem + 8 * RT * MS;
    __shared__ long src[T];
    const int parity = blockIdx.y, half = 1 << (level - 1), s = 1 << level;
    const int e0 = blockIdx.z * M2L_VLIST / gridDim.z, e1 = (blockIdx.z + 1) * M2L_VLIST / gridDim.z;
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
                int a = (int)(k % half), b = (int)(k / half % half), c = (int)(k / ((long)half * half));
                sb = source_box(2 * a + (parity & 1), 2 * b + (parity >> 1 & 1), 2 * c + (parity >> 2 & 1), pk, s,
                                periodic);
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
            int a = (int)(k % half), b = (int)(k / half % half), cz = (int)(k / ((long)half * half));
            long t = (2 * a + (parity & 1)) +
                     (long)s * ((2 * b + (parity >> 1 & 1)) + (long)s * (2 * cz + (parity >> 2 & 1)));
#pragma unroll
            for (int r = 0; r < RT; ++r) {
                const int row = r * 8 + gid;
                if (row < NC) atomicAdd(U + t * NC + row, acc[r][c][h]);
            }
        }
}

template <int P> static int prepare_tensor() {
    CU(cudaFuncSetAttribute(k_m2l_tensor<P>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)tensor_shape<P>::SMEM));
    return FMM_OK;
}

template <int P> static int launch_tensor(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                                          cudaStream_t st) {
    using S = tensor_shape<P>;
    const long half = 1L << (level - 1), ntarget = half * half * half;
    const long tiles = 8 * ((ntarget + S::T - 1) / S::T);
    long groups = (4L * g->nsm + tiles - 1) / tiles;
    groups = groups < 1 ? 1 : (groups > 48 ? 48 : groups);
    CU(cudaMemsetAsync(U, 0, sizeof(double) * S::NC * 8 * ntarget, st));
    dim3 grid((unsigned)(tiles / 8), 8, (unsigned)groups);
    k_m2l_tensor<P><<<grid, 256, S::SMEM, st>>>(g->cls, g->sign, g->vlist, level, periodic, W, U);
    CU(cudaGetLastError());
    return FMM_OK;
}

static const tiled_fn tensor_run[M2L_TENSOR_PMAX] = {launch_tensor<1>, launch_tensor<2>, launch_tensor<3>,
                                                     launch_tensor<4>, launch_tensor<5>, launch_tensor<6>,
                                                     launch_tensor<7>, launch_tensor<8>, launch_tensor<9>,
                                                     launch_tensor<10>};
static const prepare_fn tensor_prepare[M2L_TENSOR_PMAX] = {
    prepare_tensor<1>, prepare_tensor<2>, prepare_tensor<3>, prepare_tensor<4>, prepare_tensor<5>,
    prepare_tensor<6>, prepare_tensor<7>, prepare_tensor<8>, prepare_tensor<9>, prepare_tensor<10>};

extern "C" int m2l_gpu_tensor(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                              cudaStream_t stream) {
    if (level < 1 || g->p < 1 || g->p > M2L_TENSOR_PMAX || g->cc < 80) return FMM_ERR_ARG;
    return tensor_run[g->p - 1](g, level, periodic, W, U, stream);
}

static int tiled_prepare(int p) {
    int rc = tiled_fns.prepare[p - 1]();
    return rc || p > M2L_TENSOR_PMAX ? rc : tensor_prepare[p - 1]();
}

/* ---- naive: one thread per (target, coefficient), dense operators from memory ---- */

__global__ void k_m2l_naive(const double *__restrict__ dense, const int *__restrict__ vlist, int nc, int level,
                            int periodic, const double *__restrict__ W, double *__restrict__ U) {
    const int s = 1 << level;
    const long nbox = (long)s * s * s, id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nbox * nc) return;
    const long t = id / nc;
    const int k = (int)(id % nc), ix = (int)(t % s), iy = (int)(t / s % s), iz = (int)(t / ((long)s * s));
    const int parity = (ix & 1) | (iy & 1) << 1 | (iz & 1) << 2;
    const size_t nn = (size_t)nc * nc;
    double acc = 0.0;
    for (int e = 0; e < M2L_VLIST; ++e) {
        const int pk = vlist[parity * M2L_VLIST + e];
        const long sb = source_box(ix, iy, iz, pk, s, periodic);
        if (sb < 0) continue;
        const int o = (pk & 7) + 7 * (pk >> 3 & 7) + 49 * (pk >> 6 & 7);
        const double *T = dense + o * nn + k, *w = W + sb * nc;
        for (int j = 0; j < nc; ++j) acc = fma(T[(size_t)j * nc], w[j], acc);
    }
    U[t * nc + k] = acc;
}

extern "C" int m2l_gpu_naive(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                             cudaStream_t stream) {
    if (level < 1 || !g->dense) return FMM_ERR_ARG;
    const long s = 1L << level, total = s * s * s * g->nc;
    k_m2l_naive<<<(unsigned)((total + 255) / 256), 256, 0, stream>>>(g->dense, g->vlist, g->nc, level, periodic, W, U);
    CU(cudaGetLastError());
    return FMM_OK;
}
