/*
 * Symmetric GPU M2L (Kohnke et al. 2021, approach 3): presorted lists per symmetry class and
 * reflection sign group, one subkernel per sign group launched on its own stream.
 *
 * The algebra. In the V list of a target box of parity b (m2l/m2l_gpu.h), the 189 offsets fall
 * into the 56 classes of m2l/operators.h. Within one class c (reference offset d >= 0) the
 * members are the reflections of d over the axes A_c where d_a is 1 or 2 (both signs are in the
 * range -2-b_a..3-b_a); on the other axes the sign is fixed: 0 is not reflected, 3 appears as +3
 * or -3 depending on the parity, giving the member-independent reflection f0. So a class has
 * beta = 2^|A| members gamma, reflection f_gamma = f0 | expand_A(gamma), and with the reflection
 * signs s_f[k] = (-1)^popc(pi(k) & f) (pi(k): the 3-bit "which axes flip coefficient k" bitset,
 * from the operator set's sign table),
 *
 *   sum_gamma S_fg T_c S_fg W_gamma = S_f0 T_c Z'   with   Z'[j] = Z_{kappa(k) ^ kappa(j)}[j],
 *   Z_h[j] = sum_gamma (-1)^popc(h & gamma) s_f0[j] W_gamma[j]   (a Walsh-Hadamard transform),
 *
 * kappa(k) = compress_A(pi(k) & A). Row k only needs the input "plane" of its row group
 * g = kappa(k): the beta translations of a class cost one operator application (2 nc^2 FLOPs)
 * plus beta log beta additions per input coefficient, so the whole V list costs 56 operator
 * applications instead of 189 (the paper shares the products of a class in the same way, but
 * still pays the additions of every member).
 *
 * The 56 classes form 8 sign groups of 7 classes each, one per axis set A (bitset 0..7; beta =
 * 1, 2, 2, 4, 2, 4, 4, 8): the paper's four symmetry subkernels (beta = 1, 2, 4, 8) with the
 * beta = 2 and 4 kinds split by their axis set. The plan presorts, per parity and sign group,
 * the (target, source) pairs of every class member into index lists (on the device, once per
 * level) and tabulates the rows of every row group. Each sign group's kernel runs on its own
 * stream: a block takes a tile of same-parity targets and some of the group's classes; for each
 * class and chunk of input coefficients it stages the signed operator rows of its warps (warp
 * w serves one row group) and the Hadamard planes of the gathered sources in shared memory, then
 * runs a register-blocked product (rows x targets per thread); the sums over its classes stay in
 * registers and are added to U atomically (U is cleared first).
 */
#include "m2l/m2l_sym_tables.cuh"

#define SYM_NSTREAM 8  /* one stream per sign group */

/* R: the arithmetic of the products (double, or float for the mixed-precision FMM: operator rows
 * and sources are rounded to float (the sources before their Hadamard combination), sums go to the
 * double U) */
template <int P, int B, typename R> struct sym_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int GW = 8 / B;                      /* warps per row group */
    static constexpr int RPT = sym_rpt(P, B);             /* rows per warp */
    static constexpr int NS = (RPT + 15) / 16;            /* row slices (blocks) when a warp has > 16 rows */
    static constexpr int RPTS = (RPT + NS - 1) / NS;      /* rows per warp and slice */
    static constexpr int RP2 = RPTS + (RPTS & 1);         /* even: double2 loads */
    static constexpr int COLS = RPTS <= 4 ? 8 : (RPTS <= 8 ? 4 : 2);
    static constexpr int TT = 32 * COLS;                  /* targets per block */
    static constexpr int XT = TT + 1;
    static constexpr int KC = B * 32 * TT <= 8192 ? 32 : (B * 16 * TT <= 8192 ? 16 : (B * 8 * TT <= 8192 ? 8 : 4));
    static constexpr int TS = 8 * RP2 + 2;                /* stride of one input coefficient in the operator stage */
    static constexpr int V = sizeof(R) == 4 ? 4 : 1; /* coefficients per gather (float4 in float) */
    static constexpr int WS =
        (NC + V - 1) / V * V; /* stride of the sources as the kernel reads them */
    static constexpr size_t SMEM = sizeof(R) * ((size_t)KC * TS + (size_t)B * KC * XT) + sizeof(int) * B * TT;
};

/* the V list in m2l_gpu_ops's packed form, from the host operator set */
static void sym_vlist_host(const m2l_operators *ops, int *vl) {
    for (int par = 0; par < 8; ++par) {
        int b[3] = {par & 1, par >> 1 & 1, par >> 2 & 1}, e = 0;
        for (int dz = -2 - b[2]; dz <= 3 - b[2]; ++dz)
            for (int dy = -2 - b[1]; dy <= 3 - b[1]; ++dy)
                for (int dx = -2 - b[0]; dx <= 3 - b[0]; ++dx) {
                    if (abs(dx) <= 1 && abs(dy) <= 1 && abs(dz) <= 1) continue;
                    int o = (dx + 3) + 7 * (dy + 3) + 49 * (dz + 3);
                    vl[par * M2L_VLIST + e++] =
                        (dx + 3) | (dy + 3) << 3 | (dz + 3) << 6 | ops->cls[o] << 9 | ops->flags[o] << 15;
                }
    }
}

/* ---- CPU emulation: the plan's tables and algebra, one target at a time ---- */

extern "C" int m2l_symmetric_emulate(const m2l_operators *ops, int level, int periodic, const double *W,
                                     double *U) {
    if (!ops || !W || !U || level < 1 || ops->p < 1 || ops->p > M2L_GPU_PMAX) return FMM_ERR_ARG;
    const int p = ops->p, nc = ops->ncoef;
    const size_t nn = (size_t)nc * nc;
    int *vl = (int *)malloc(sizeof(int) * 8 * M2L_VLIST);
    double *sg = (double *)malloc(sizeof(double) * 8 * nc), *T = (double *)malloc(sizeof(double) * nn * M2L_NCLASS);
    double *Z = (double *)malloc(sizeof(double) * 8 * nc);
    int rc = FMM_ERR_NOMEM;
    sym_tables t;
    memset(&t, 0, sizeof t);
    if (!vl || !sg || !T || !Z) goto done;
    sym_vlist_host(ops, vl);
    for (int f = 0; f < 8; ++f)
        for (int k = 0; k < nc; ++k) sg[f * nc + k] = ops->sign[f * ops->npad + k];
    for (int c = 0; c < M2L_NCLASS; ++c)
        if ((rc = m2l_operator_dense(ops, ops->ref[c][0], ops->ref[c][1], ops->ref[c][2], T + c * nn))) goto done;
    if ((rc = sym_tables_build(p, vl, sg, &t))) goto done;
    {
        const long s = 1L << level, ntp = s * s * s / 8;
        memset(U, 0, sizeof(double) * nc * 8 * ntp);
        for (int par = 0; par < 8; ++par)
            for (long k = 0; k < ntp; ++k) {
                const long tb = sym_target(k, par, level);
                for (int A = 0; A < SYM_NQ; ++A) {
                    const int beta = 1 << sym_popc3(A), gw = 8 / beta;
                    for (int r = 0; r < SYM_NR; ++r) {
                        const int info = t.info[par][A][r], c = info & 63, f0 = info >> 6;
                        const double *s0 = sg + f0 * nc, *Tc = T + c * nn;
                        long src[8];
                        for (int gm = 0; gm < beta; ++gm)
                            src[gm] = sym_source(k, par, t.memb[par][sym_qbase(A) + r * beta + gm], level, periodic);
                        for (int j = 0; j < nc; ++j) {
                            double x[8];
                            for (int gm = 0; gm < beta; ++gm) x[gm] = src[gm] >= 0 ? s0[j] * W[src[gm] * nc + j] : 0.0;
                            for (int len = 1; len < beta; len <<= 1)
                                for (int gm = 0; gm < beta; ++gm)
                                    if (!(gm & len)) {
                                        double a = x[gm], b = x[gm | len];
                                        x[gm] = a + b, x[gm | len] = a - b;
                                    }
                            for (int h = 0; h < beta; ++h) Z[(h ^ t.kap[A * nc + j]) * nc + j] = x[h];
                        }
                        for (int w = 0; w < 8; ++w)
                            for (int i = 0; i < t.rstride; ++i) {
                                const int row = t.rows[(A * 8 + w) * t.rstride + i];
                                if (row < 0) continue;
                                const double *z = Z + (w / gw) * nc;
                                double acc = 0.0;
                                for (int j = 0; j < nc; ++j) acc += s0[row] * Tc[row * nc + j] * z[j];
                                U[tb * nc + row] += acc;
                            }
                    }
                }
            }
    }
    rc = FMM_OK;
done:
    sym_tables_free(&t);
    free(vl), free(sg), free(T), free(Z);
    return rc;
}

/* ---- the kernels ---- */

/* blocks per SM the register allocation must allow: 2 caps the kernels at 128 registers (a few
 * spill up to ~100 bytes, in exchange for one block's staging overlapping the other's products);
 * 1 lets them use ~150 registers without spills. Build with -DM2L_SYM_MINBLOCKS=1 to compare.
 * The float kernels (mixed precision) are compiled for 3 blocks (80 registers, spills of 0-28
 * bytes), faster at depth 5 and the same at depth 4 (M2L_SYM_MINBLOCKS_FLOAT; docs/tuning.md). */
#ifndef M2L_SYM_MINBLOCKS
#define M2L_SYM_MINBLOCKS 2
#endif
#ifndef M2L_SYM_MINBLOCKS_FLOAT
#define M2L_SYM_MINBLOCKS_FLOAT 3
#endif

template <typename R> struct sym_vec2;
template <> struct sym_vec2<double> { typedef double2 type; };
template <> struct sym_vec2<float> { typedef float2 type; };
__device__ inline double sym_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ inline float sym_fma(float a, float b, float c) { return fmaf(a, b, c); }

template <int P, int B, typename R>
__global__ void __launch_bounds__(256, sizeof(R) == 4 ? M2L_SYM_MINBLOCKS_FLOAT : M2L_SYM_MINBLOCKS)
    k_m2l_sym(const R *__restrict__ cls, const double *__restrict__ sign,
              const int *__restrict__ info, const short *__restrict__ rows,
              const unsigned char *__restrict__ kap, const int *__restrict__ srcl, int A, int qbase,
              int rstride, int level, long ntp, int csplit, const R *__restrict__ W,
              double *__restrict__ U) {
    using S = sym_shape<P, B, R>;
    using R2 = typename sym_vec2<R>::type;
    constexpr int NC = S::NC, GW = S::GW, RPTS = S::RPTS, RP2 = S::RP2, COLS = S::COLS, TT = S::TT,
                  XT = S::XT, KC = S::KC, TS = S::TS, V = S::V, WS = S::WS;
    extern __shared__ __align__(16) unsigned char sym_smem[]; /* 16-byte aligned: pair loads of Ts */
    R *Ts = reinterpret_cast<R *>(sym_smem), *Zs = Ts + KC * TS;
    int *srcs = (int *)(Zs + B * KC * XT);
    const int parity = blockIdx.y, slice = blockIdx.z / csplit, cs = blockIdx.z % csplit;
    const int r0 = cs * SYM_NR / csplit, r1 = (cs + 1) * SYM_NR / csplit;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = warp / GW;
    const long k0 = (long)blockIdx.x * TT;
    const short *rq = rows + (size_t)A * 8 * rstride + slice * RPTS;
    const unsigned char *kq = kap + A * NC;
    R acc[RPTS][COLS];
#pragma unroll
    for (int i = 0; i < RPTS; ++i)
#pragma unroll
        for (int c = 0; c < COLS; ++c) acc[i][c] = 0;
    for (int r = r0; r < r1; ++r) {
        const int inf = info[(parity * SYM_NQ + A) * SYM_NR + r], c = inf & 63, f0 = inf >> 6;
        const R *T = cls + (size_t)c * NC * NC;
        const double *s0 = sign + f0 * NC;
        const int *sl = srcl + ((size_t)parity * M2L_VLIST + qbase + r * B) * ntp;
        __syncthreads(); /* the previous class's stages are consumed */
        for (int idx = threadIdx.x; idx < B * TT; idx += 256) {
            const int gm = idx / TT, col = idx % TT;
            const long k = k0 + col;
            srcs[idx] = k < ntp ? sl[gm * ntp + k] : -1;
        }
        for (int j0 = 0; j0 < NC; j0 += KC) {
            __syncthreads();
            /* operator rows of every warp, row signs folded in: Ts[jj][warp][i] */
            for (int idx = threadIdx.x; idx < 8 * RP2 * KC; idx += 256) {
                const int jj = idx % KC, wi = idx / KC, w = wi / RP2, i = wi % RP2, j = j0 + jj;
                const int row = i < RPTS ? rq[w * rstride + i] : -1;
                Ts[jj * TS + w * RP2 + i] =
                    (row >= 0 && j < NC) ? (R)s0[row] * T[(size_t)row * NC + j] : (R)0;
            }
            /* Hadamard planes of the members' signed sources, stored by row group g = h ^ kappa(j);
               V consecutive coefficients per gather (the float sources' rows are padded to WS) */
            for (int idx = threadIdx.x; idx < KC / V * TT; idx += 256) {
                const int jv = idx % (KC / V), col = idx / (KC / V), jj0 = jv * V, j = j0 + jj0;
                R x[V][B];
#pragma unroll
                for (int gm = 0; gm < B; ++gm) {
                    const int sb = srcs[gm * TT + col];
                    if (sb >= 0 && j < WS) {
                        if constexpr (V == 4) {
                            const float4 v =
                                *reinterpret_cast<const float4 *>(W + (size_t)sb * WS + j);
                            x[0][gm] = v.x, x[1][gm] = v.y, x[2][gm] = v.z, x[3][gm] = v.w;
                        } else {
                            x[0][gm] = W[(size_t)sb * WS + j];
                        }
                    } else {
#pragma unroll
                        for (int e = 0; e < V; ++e) x[e][gm] = 0;
                    }
                }
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const int je = j + e;
                    const R sj = je < NC ? (R)s0[je] : (R)0;
#pragma unroll
                    for (int gm = 0; gm < B; ++gm) x[e][gm] *= sj;
#pragma unroll
                    for (int len = 1; len < B; len <<= 1)
#pragma unroll
                        for (int gm = 0; gm < B; ++gm)
                            if (!(gm & len)) {
                                const R a = x[e][gm], b = x[e][gm | len];
                                x[e][gm] = a + b, x[e][gm | len] = a - b;
                            }
                    const int kj = B > 1 && je < NC ? kq[je] : 0;
#pragma unroll
                    for (int h = 0; h < B; ++h) Zs[((h ^ kj) * KC + jj0 + e) * XT + col] = x[e][h];
                }
            }
            __syncthreads();
            const R *Zg = Zs + grp * KC * XT + lane;
            const R *Tw = Ts + warp * RP2;
            const int jn = NC - j0 < KC ? NC - j0 : KC;
#pragma unroll 4
            for (int jj = 0; jj < jn; ++jj) {
                R xv[COLS], tv[RP2];
#pragma unroll
                for (int c2 = 0; c2 < COLS; ++c2) xv[c2] = Zg[jj * XT + 32 * c2];
#pragma unroll
                for (int i = 0; i < RP2; i += 2) {
                    const R2 t2 = *reinterpret_cast<const R2 *>(Tw + jj * TS + i);
                    tv[i] = t2.x, tv[i + 1] = t2.y;
                }
#pragma unroll
                for (int i = 0; i < RPTS; ++i)
#pragma unroll
                    for (int c2 = 0; c2 < COLS; ++c2) acc[i][c2] = sym_fma(tv[i], xv[c2], acc[i][c2]);
            }
        }
    }
#pragma unroll
    for (int c2 = 0; c2 < COLS; ++c2) {
        const long k = k0 + lane + 32 * c2;
        if (k >= ntp) continue;
        const long tb = sym_target(k, parity, level);
#pragma unroll
        for (int i = 0; i < RPTS; ++i) {
            const int row = rq[warp * rstride + i];
            if (row >= 0) atomicAdd(U + tb * NC + row, (double)acc[i][c2]);
        }
    }
}

/* presorted source lists: srcl[parity][entry][k] = source box of target k (-1: absent) */
__global__ void k_sym_lists(int *__restrict__ srcl, const int *__restrict__ memb, int level, int periodic,
                            long ntp) {
    const long n = 8L * M2L_VLIST * ntp;
    for (long idx = (long)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (long)gridDim.x * blockDim.x) {
        const long k = idx % ntp, pe = idx / ntp;
        const int par = (int)(pe / M2L_VLIST);
        srcl[idx] = (int)sym_source(k, par, memb[pe], level, periodic);
    }
}

struct m2l_sym_plan {
    int p, nc, level, periodic, single, nsm, rstride, priority;
    long ntp;                /* targets per parity */
    const double *cls, *sign; /* the operator set's (not owned) */
    /* single: the class operators rounded to float, and the level's sources as the float kernels
       read them (refreshed by every run; halves the bytes of the gathers, which bound the kernel)
     */
    float *clsf, *Wf;
    int ws;
    int *info, *memb, *srcl;
    short *rows;
    unsigned char *kap;
    cudaStream_t st[SYM_NSTREAM];
    cudaEvent_t fork, join[SYM_NSTREAM];
};

template <int P, int B, typename R> static int sym_prepare() {
    CU(cudaFuncSetAttribute(k_m2l_sym<P, B, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)sym_shape<P, B, R>::SMEM));
    return FMM_OK;
}

template <int P, int B, typename R>
static int sym_launch(const m2l_sym_plan *pl, int A, const double *W, double *U, cudaStream_t st) {
    using S = sym_shape<P, B, R>;
    const long tiles = (pl->ntp + S::TT - 1) / S::TT;
    /* 8 sign-group kernels run side by side: each wants about half the SMs' worth of blocks */
    long csplit = (pl->nsm / 2 + tiles * 8 * S::NS - 1) / (tiles * 8 * S::NS);
    csplit = csplit < 1 ? 1 : (csplit > SYM_NR ? SYM_NR : csplit);
    dim3 grid((unsigned)tiles, 8, (unsigned)(S::NS * csplit));
    const R *cls = sizeof(R) == 4 ? (const R *)pl->clsf : (const R *)pl->cls;
    const R *Wr = sizeof(R) == 4 ? (const R *)pl->Wf : (const R *)W;
    k_m2l_sym<P, B, R><<<grid, 256, S::SMEM, st>>>(cls, pl->sign, pl->info, pl->rows, pl->kap,
                                                   pl->srcl, A, sym_qbase(A), pl->rstride,
                                                   pl->level, pl->ntp, (int)csplit, Wr, U);
    CU(cudaGetLastError());
    return FMM_OK;
}

typedef int (*sym_launch_fn)(const m2l_sym_plan *, int, const double *, double *, cudaStream_t);
typedef int (*sym_prepare_fn)();
template <typename R, int... Ps> struct sym_table {
    sym_launch_fn run[sizeof...(Ps)][4] = {
        {sym_launch<Ps, 1, R>, sym_launch<Ps, 2, R>, sym_launch<Ps, 4, R>, sym_launch<Ps, 8, R>}...};
    sym_prepare_fn prepare[sizeof...(Ps)][4] = {
        {sym_prepare<Ps, 1, R>, sym_prepare<Ps, 2, R>, sym_prepare<Ps, 4, R>, sym_prepare<Ps, 8, R>}...};
};
/* [single]: double, float arithmetic */
static const sym_table<double, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20> sym_fns_d;
static const sym_table<float, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20> sym_fns_f;
static const sym_launch_fn (*const sym_run[2])[4] = {sym_fns_d.run, sym_fns_f.run};
static const sym_prepare_fn (*const sym_prep[2])[4] = {sym_fns_d.prepare, sym_fns_f.prepare};

extern "C" void m2l_gpu_symmetric_free(m2l_sym_plan *pl) {
    if (!pl) return;
    for (int i = 0; i < SYM_NSTREAM; ++i) {
        if (pl->st[i]) cudaStreamDestroy(pl->st[i]);
        if (pl->join[i]) cudaEventDestroy(pl->join[i]);
    }
    if (pl->fork) cudaEventDestroy(pl->fork);
    cudaFree(pl->info), cudaFree(pl->memb), cudaFree(pl->srcl), cudaFree(pl->rows), cudaFree(pl->kap);
    cudaFree(pl->clsf), cudaFree(pl->Wf);
    free(pl);
}

static int sym_plan_fill(m2l_sym_plan *pl, const m2l_gpu_ops *g) {
    const int nc = g->nc;
    sym_tables t;
    int rc = sym_tables_from_device(g, &t);
    if (rc) return rc;
    pl->rstride = t.rstride;
    {
        const size_t nrows = (size_t)SYM_NQ * 8 * t.rstride, nlist = (size_t)8 * M2L_VLIST * pl->ntp;
        cudaError_t e = cudaMalloc((void **)&pl->info, sizeof t.info);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->memb, sizeof t.memb);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->rows, sizeof(short) * nrows);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->kap, (size_t)SYM_NQ * nc);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->srcl, sizeof(int) * nlist);
        if (e == cudaSuccess && pl->single)
            e = cudaMalloc((void **)&pl->clsf, sizeof(float) * M2L_NCLASS * nc * nc);
        if (e == cudaSuccess && pl->single)
            e = cudaMalloc((void **)&pl->Wf, sizeof(float) * 8 * pl->ntp * pl->ws);
        if (e == cudaSuccess) e = cudaMemcpy(pl->info, t.info, sizeof t.info, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(pl->memb, t.memb, sizeof t.memb, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(pl->rows, t.rows, sizeof(short) * nrows, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(pl->kap, t.kap, (size_t)SYM_NQ * nc, cudaMemcpyHostToDevice);
        /* a graph instantiated with node priorities keeps the priority of the stream each kernel
           was captured on */
        for (int i = 0; i < SYM_NSTREAM && e == cudaSuccess; ++i) {
            e = cudaStreamCreateWithPriority(&pl->st[i], cudaStreamNonBlocking, pl->priority);
            if (e == cudaSuccess) e = cudaEventCreateWithFlags(&pl->join[i], cudaEventDisableTiming);
        }
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&pl->fork, cudaEventDisableTiming);
        if (e == cudaSuccess) {
            long blocks = ((long)nlist + 255) / 256;
            blocks = blocks > 65535 ? 65535 : blocks;
            k_sym_lists<<<(unsigned)blocks, 256, 0, pl->st[0]>>>(pl->srcl, pl->memb, pl->level, pl->periodic,
                                                                 pl->ntp);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess && pl->single) { /* the operators as a float "level" of nc-wide rows */
            k_sym_tofloat<<<256, 256, 0, pl->st[0]>>>((long)M2L_NCLASS * nc, nc, nc, pl->cls,
                                                      pl->clsf);
            e = cudaGetLastError();
        }
        if (e == cudaSuccess) e = cudaStreamSynchronize(pl->st[0]);
        if (e != cudaSuccess) {
            rc = fmm_cuda_status(e);
            goto done;
        }
    }
    /* the shared-memory opt-in of the four subkernels, outside any stream capture */
    for (int b = 0; b < 4 && !rc; ++b) rc = sym_prep[pl->single][g->p - 1][b]();
done:
    sym_tables_free(&t);
    return rc;
}

extern "C" int m2l_gpu_symmetric_plan(const m2l_gpu_ops *g, int level, int periodic, int single,
                                      int spread, int priority, m2l_sym_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (!g || !g->cls || !g->sign || !g->vlist || level < 1 || level > 10 || g->p < 1 || g->p > M2L_GPU_PMAX ||
        (single && g->p > M2L_SYM_FLOAT_PMAX))
        return FMM_ERR_ARG;
    m2l_sym_plan *pl = (m2l_sym_plan *)calloc(1, sizeof *pl);
    if (!pl) return FMM_ERR_NOMEM;
    pl->p = g->p, pl->nc = g->nc, pl->level = level, pl->periodic = periodic ? 1 : 0, pl->single = single ? 1 : 0;
    pl->nsm = spread > 0 ? spread : (g->nsm > 0 ? g->nsm : 1);
    pl->priority = priority;
    pl->ntp = 1L << (3 * (level - 1));
    pl->cls = g->cls, pl->sign = g->sign;
    pl->ws = (g->nc + 3) / 4 * 4;
    int rc = sym_plan_fill(pl, g);
    if (rc) {
        m2l_gpu_symmetric_free(pl);
        return rc;
    }
    *plan = pl;
    return FMM_OK;
}

extern "C" int m2l_gpu_symmetric_run(const m2l_sym_plan *pl, const double *W, double *U, cudaStream_t stream) {
    if (!pl || !W || !U) return FMM_ERR_ARG;
    CU(cudaMemsetAsync(U, 0, sizeof(double) * pl->nc * 8 * pl->ntp, stream));
    if (pl->single) {
        const long n = 8 * pl->ntp * pl->ws;
        k_sym_tofloat<<<(unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256, 0,
                        stream>>>(8 * pl->ntp, pl->nc, pl->ws, W, pl->Wf);
        CU(cudaGetLastError());
    }
    CU(cudaEventRecord(pl->fork, stream));
    for (int A = 0; A < SYM_NQ; ++A) {
        const int b = sym_popc3(A); /* beta = 2^b */
        CU(cudaStreamWaitEvent(pl->st[A], pl->fork, 0));
        int rc = sym_run[pl->single][pl->p - 1][b](pl, A, W, U, pl->st[A]);
        if (rc) return rc;
        CU(cudaEventRecord(pl->join[A], pl->st[A]));
        CU(cudaStreamWaitEvent(stream, pl->join[A], 0));
    }
    return FMM_OK;
}
