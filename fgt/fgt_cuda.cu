// fgt_cuda.cu - the FGT on the GPU: the four modes of fgt/execute.c, same boxes, same error control.
//
// setpts (host): the plan's sorted points, boxes and tables are uploaded once, with three job
// lists. execute: the weights go up, three kernels run, the values come back:
//   1. hermite_moments: Hermite coefficients A of every source box some pair needs; one block
//      per chunk of <= 8192 sources of one box, one thread per coefficient, the sources'
//      1-D factors (powers / factorials computed on the fly) in shared memory, atomicAdd.
//   2. taylor_build: one block per target box (grid-stride): walks the box's neighbours like
//      the CPU, adds the Taylor-mode pairs (built from the sources, in shared tiles) and the
//      H2T pairs (three separable contractions through global scratch owned by the block) to
//      the box's Taylor coefficients B.
//   3. evaluate: one thread per target, blocks of 128 targets of one box: walks the same
//      neighbours; direct pairs from source tiles in shared memory (cooperative loads),
//      Hermite pairs from the source box's coefficients loaded one slice (a0 fixed) at a time
//      into shared memory (the seed's batched clusters), with the target's Hermite functions
//      in registers (recurrences unrolled for a compile-time maximum order, the seed's
//      hand-unrolled Horner polynomials); then the box's Taylor expansion, the same way.
// Every CUDA call is checked; failures are FMM_ERR_CUDA or FMM_ERR_NOMEM.
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "core/cuda_status.cuh"
#include "fgt/fgt_internal.h"

namespace {

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

// f(sb, k[3], mode, order) for every kept source box of target box tb (same order as the CPU)
template <typename F> __device__ void traverse(const Dev &d, long tb, F f) {
    int64_t key = d.tkey[tb];
    long it[3];
    it[2] = key % d.n[2];
    key /= d.n[2];
    it[1] = key % d.n[1];
    it[0] = key / d.n[1];
    const int R = d.R, R0 = d.dim >= 3 ? R : 0, R1 = d.dim >= 2 ? R : 0;
    const long nt = d.tstart[tb + 1] - d.tstart[tb];
    for (int k0 = -R0; k0 <= R0; ++k0) {
        long j0 = it[0] - k0;
        if (j0 < 0 || j0 >= d.n[0]) continue;
        for (int k1 = -R1; k1 <= R1; ++k1) {
            long j1 = it[1] - k1;
            if (j1 < 0 || j1 >= d.n[1]) continue;
            int rz = d.colR[(k0 + R) * (2 * R + 1) + (k1 + R)];
            if (rz < 0) continue;
            long lo2 = it[2] - rz < 0 ? 0 : it[2] - rz;
            long hi2 = it[2] + rz >= d.n[2] ? d.n[2] - 1 : it[2] + rz;
            int64_t klo = fgt_key(d.n, j0, j1, lo2), khi = fgt_key(d.n, j0, j1, hi2);
            for (long sb = fgt_lower_bound(d.skey, d.nsb, klo); sb < d.nsb && d.skey[sb] <= khi; ++sb) {
                long k[3] = {k0, k1, it[2] - d.skey[sb] % d.n[2]};
                const fgt_offset *e = fgt_off(d.off, R, k[0], k[1], k[2]);
                int order;
                int mode = fgt_choose_mode(e, d.dim, d.sstart[sb + 1] - d.sstart[sb], nt, d.force,
                                           &d.cost, &order);
                f(sb, k, mode, order);
            }
        }
    }
}

__device__ void box_centre(const Dev &d, int64_t key, double c[3]) {
    long i2 = key % d.n[2];
    key /= d.n[2];
    long i1 = key % d.n[1], i0 = key / d.n[1];
    c[0] = (i0 + 0.5) * d.b, c[1] = (i1 + 0.5) * d.b, c[2] = (i2 + 0.5) * d.b;
}

// ---------------------------------------------------------------------------------------
// Moments: out[(a0*st1 + a1)*st2 + a2] (+)= sum_j q_j prod f_a(u_j - c), orders pe, for the
// points [s0, s1). kind 0: f_n = x^n/n!, kind 1: f_n = h_n(x)/n!. Whole block; atomic or not.
constexpr int TILE = 32;
constexpr int TS = TILE + 1; // padded stride of the factor rows: no shared-memory bank conflicts

__device__ void block_moments(int kind, const Dev &d, long s0, long s1, const double c[3], const int pe[3],
                              double *out, bool atomic, double *sh /* 3*FGT_PMAX*TS + TILE */) {
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2];
    const long nc = (long)p0 * p1 * p2;
    const int st1 = d.pe[1], st2 = d.pe[2];
    double *f = sh, *qs = sh + 3 * FGT_PMAX * TS;
    const double *u[3] = {d.su0, d.su1, d.su2};
    for (long c0 = 0; c0 < nc; c0 += blockDim.x) {
        long ci = c0 + threadIdx.x;
        int i0 = 0, i1 = 0, i2 = 0;
        if (ci < nc) {
            i2 = (int)(ci % p2);
            i1 = (int)((ci / p2) % p1);
            i0 = (int)(ci / ((long)p2 * p1));
        }
        double acc = 0;
        for (long j0 = s0; j0 < s1; j0 += TILE) {
            __syncthreads();
            // threads [0, 3*TILE) each make one (axis, source) column of factors
            if (threadIdx.x < 3 * TILE) {
                int a = threadIdx.x / TILE, jj = threadIdx.x % TILE;
                long j = j0 + jj;
                int pa = pe[a];
                double x = j < s1 ? u[a][j] - c[a] : 0.0;
                double *fa = f + (a * FGT_PMAX) * TS + jj;
                if (kind == 0) {
                    double v = 1;
                    for (int n = 0; n < pa; ++n) {
                        fa[n * TS] = v;
                        v *= x / (n + 1); // factorial on the fly
                    }
                } else {
                    double g0 = exp(-x * x), g1 = 2 * x * g0;
                    fa[0] = g0;
                    if (pa > 1) fa[TS] = g1;
                    for (int n = 1; n + 1 < pa; ++n) {
                        double g2 = (2 * x * g1 - 2 * g0) / (n + 1);
                        fa[(n + 1) * TS] = g2;
                        g0 = g1, g1 = g2;
                    }
                }
            } else if (threadIdx.x < 4 * TILE) {
                int jj = threadIdx.x - 3 * TILE;
                long j = j0 + jj;
                qs[jj] = j < s1 ? d.q[j] : 0.0;
            }
            __syncthreads();
            if (ci < nc) {
                const double *fa = f + i0 * TS, *fb = f + (FGT_PMAX + i1) * TS,
                             *fc = f + (2 * FGT_PMAX + i2) * TS;
                int m = s1 - j0 < TILE ? (int)(s1 - j0) : TILE;
                for (int jj = 0; jj < m; ++jj) acc += qs[jj] * fa[jj] * fb[jj] * fc[jj];
            }
        }
        if (ci < nc) {
            double *o = out + ((long)i0 * st1 + i1) * st2 + i2;
            if (atomic) atomicAdd(o, acc);
            else *o += acc;
        }
    }
}

__global__ void k_hermite_moments(Dev d, const Job *jobs) {
    __shared__ double sh[3 * FGT_PMAX * TS + TILE];
    const Job j = jobs[blockIdx.x];
    double c[3];
    box_centre(d, d.skey[j.box], c);
    block_moments(0, d, j.p0, j.p1, c, d.pe, d.A + d.aidx[j.box] * d.ncoef, true, sh);
}

// B += H2T(A) for orders pe with 1-D matrices M_a (transposed, stride P8), whole block.
__device__ void block_h2t(const Dev &d, const double *A, double *B, const double *M0, const double *M1,
                          const double *M2, const int pe[3], double *T1, double *T2) {
    const int p0 = pe[0], p1 = pe[1], p2 = pe[2], st1 = d.pe[1], st2 = d.pe[2], P8 = d.P8;
    const long nc = (long)p0 * p1 * p2;
    __syncthreads();
    for (long ci = threadIdx.x; ci < nc; ci += blockDim.x) { // T1[i0][i1][b2]
        int b2 = (int)(ci % p2), i1 = (int)((ci / p2) % p1), i0 = (int)(ci / ((long)p2 * p1));
        const double *a = A + ((long)i0 * st1 + i1) * st2;
        double s = 0;
        for (int a2 = 0; a2 < p2; ++a2) s += a[a2] * M2[a2 * P8 + b2];
        T1[ci] = s;
    }
    __syncthreads();
    for (long ci = threadIdx.x; ci < nc; ci += blockDim.x) { // T2[i0][b1][b2]
        int b2 = (int)(ci % p2), b1 = (int)((ci / p2) % p1), i0 = (int)(ci / ((long)p2 * p1));
        double s = 0;
        for (int a1 = 0; a1 < p1; ++a1) s += M1[a1 * P8 + b1] * T1[((long)i0 * p1 + a1) * p2 + b2];
        T2[ci] = s;
    }
    __syncthreads();
    for (long ci = threadIdx.x; ci < nc; ci += blockDim.x) { // B[b0][b1][b2]
        int b2 = (int)(ci % p2), b1 = (int)((ci / p2) % p1), b0 = (int)(ci / ((long)p2 * p1));
        double s = 0;
        for (int a0 = 0; a0 < p0; ++a0) s += M0[a0 * P8 + b0] * T2[((long)a0 * p1 + b1) * p2 + b2];
        B[((long)b0 * st1 + b1) * st2 + b2] += s;
    }
    __syncthreads();
}

__global__ void k_taylor_build(Dev d) {
    __shared__ double sh[3 * FGT_PMAX * TS + TILE];
    double *T1 = d.scratch + (size_t)blockIdx.x * 2 * d.ncoef, *T2 = T1 + d.ncoef;
    for (long tb = blockIdx.x; tb < d.ntb; tb += gridDim.x) {
        double *B = d.B + tb * d.ncoef;
        for (long ci = threadIdx.x; ci < d.ncoef; ci += blockDim.x) B[ci] = 0;
        __syncthreads();
        double c[3];
        box_centre(d, d.tkey[tb], c);
        int pB = 0;
        traverse(d, tb, [&](long sb, const long k[3], int mode, int order) {
            if (mode != FGT_MODE_TAYLOR && mode != FGT_MODE_H2T) return;
            int pe[3];
            for (int a = 0; a < 3; ++a) pe[a] = d.pe[a] > 1 ? order : 1;
            if (order > pB) pB = order;
            if (mode == FGT_MODE_TAYLOR) {
                block_moments(1, d, d.sstart[sb], d.sstart[sb + 1], c, pe, B, false, sh);
                __syncthreads();
            } else {
                const long PP = (long)d.P * d.P8;
                block_h2t(d, d.A + d.aidx[sb] * d.ncoef, B, d.M + (k[0] + d.R) * PP,
                          d.M + (k[1] + d.R) * PP, d.M + (k[2] + d.R) * PP, pe, T1, T2);
            }
        });
        if (threadIdx.x == 0) d.hasB[tb] = pB;
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------------------
// Evaluation of one expansion C (stride st, orders pe) about centre c at the thread's target
// (t = x - c). kind 0: Hermite functions h_n(t); kind 1: powers t^n. NP: compile-time bound
// on the order, so the 1-D factors live in registers (unrolled recurrences). Whole block.
constexpr int EVAL_THREADS = 128;

template <int NP>
__device__ double block_eval(int kind, const double *C, const int st[3], const int pe[3], const double c[3],
                             const double x[3], double *slice /* NP*NP */) {
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
__device__ double block_eval_rolled(int kind, const double *C, const int st[3], const int pe[3], const double c[3],
                             const double x[3], double *slice /* NP*NP */) {
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
__device__ double eval_any(int kind, const double *C, const int st[3], const int pe[3], const double c[3],
                           const double x[3], double *slice) {
    if constexpr (NP <= 16) return block_eval<NP>(kind, C, st, pe, c, x, slice);
    else return block_eval_rolled<NP>(kind, C, st, pe, c, x, slice);
}

template <int NP> __global__ void __launch_bounds__(EVAL_THREADS) k_evaluate(Dev d, const Job *jobs) {
    __shared__ double slice[NP * NP];
    __shared__ double xs[4][EVAL_THREADS];
    const Job jb = jobs[blockIdx.x];
    const long tb = jb.box, i = jb.p0 + threadIdx.x;
    const bool active = i < jb.p1;
    double x[3] = {0, 0, 0};
    if (active) x[0] = d.tu0[i], x[1] = d.tu1[i], x[2] = d.tu2[i];
    double ct[3];
    box_centre(d, d.tkey[tb], ct);
    double acc = 0;
    const int st[3] = {d.pe[0], d.pe[1], d.pe[2]};
    traverse(d, tb, [&](long sb, const long k[3], int mode, int order) {
        if (mode == FGT_MODE_DIRECT) {
            const long s0 = d.sstart[sb], s1 = d.sstart[sb + 1];
            for (long j0 = s0; j0 < s1; j0 += EVAL_THREADS) {
                __syncthreads();
                long j = j0 + threadIdx.x;
                if (j < s1) xs[0][threadIdx.x] = d.su0[j], xs[1][threadIdx.x] = d.su1[j],
                            xs[2][threadIdx.x] = d.su2[j], xs[3][threadIdx.x] = d.q[j];
                __syncthreads();
                int m = s1 - j0 < EVAL_THREADS ? (int)(s1 - j0) : EVAL_THREADS;
                for (int jj = 0; jj < m; ++jj) {
                    double d0 = x[0] - xs[0][jj], d1 = x[1] - xs[1][jj], d2 = x[2] - xs[2][jj];
                    acc += xs[3][jj] * exp(-(d0 * d0 + d1 * d1 + d2 * d2));
                }
            }
        } else if (mode == FGT_MODE_HERMITE) {
            int pe[3];
            for (int a = 0; a < 3; ++a) pe[a] = d.pe[a] > 1 ? order : 1;
            double cs[3];
            for (int a = 0; a < 3; ++a) cs[a] = ct[a] - k[a] * d.b;
            acc += eval_any<NP>(0, d.A + d.aidx[sb] * d.ncoef, st, pe, cs, x, slice);
        }
    });
    const int pB = d.hasB ? d.hasB[tb] : 0;
    if (pB > 0) {
        int pe[3];
        for (int a = 0; a < 3; ++a) pe[a] = d.pe[a] > 1 ? pB : 1;
        acc += eval_any<NP>(1, d.B + tb * d.ncoef, st, pe, ct, x, slice);
    }
    if (active) d.g[i] = acc;
}

// Seed-style benchmark: every target evaluates every cluster's Hermite expansion.
template <int NP>
__global__ void __launch_bounds__(EVAL_THREADS) k_hermite_bench(long n, int p, int nclusters, const double *tx,
                                                               const double *C, const double *centres,
                                                               double *g) {
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

// orders <= 16: unrolled in registers (8 or 16 bound); above: rolled loops, bound 32
int np_for(int P) {
    if (P <= 8) return 8;
    if (P <= 16) return 16;
    return 32;
}

template <int NP> void launch_eval_np(const Dev &d, const Job *jobs, long nje) {
    k_evaluate<NP><<<(unsigned)nje, EVAL_THREADS>>>(d, jobs);
}

void launch_eval(int P, const Dev &d, const Job *jobs, long nje) {
    switch (np_for(P)) {
    case 8: launch_eval_np<8>(d, jobs, nje); break;
    case 16: launch_eval_np<16>(d, jobs, nje); break;
    default: launch_eval_np<32>(d, jobs, nje); break;
    }
}

void state_free(State *s) {
    if (!s) return;
    for (int i = 0; i < s->nbuf; ++i) cudaFree(s->buf[i]);
    if (s->have_events)
        for (int i = 0; i < 5; ++i) cudaEventDestroy(s->ev[i]);
    free(s);
}

template <typename T> int upload(State *s, T **dst, const T *src, size_t n) {
    void *p = nullptr;
    int rc = fmm_cuda_status(cudaMalloc(&p, n * sizeof(T) > 0 ? n * sizeof(T) : 1));
    if (rc) return rc;
    s->buf[s->nbuf++] = p;
    *dst = (T *)p;
    if (src) return fmm_cuda_status(cudaMemcpy(p, src, n * sizeof(T), cudaMemcpyHostToDevice));
    return FMM_OK;
}

} // namespace

extern "C" void fgt_cuda_free(fgt_plan *p) {
    state_free((State *)p->cuda);
    p->cuda = nullptr;
}

extern "C" int fgt_cuda_setpts(fgt_plan *p) {
    State *s = (State *)calloc(1, sizeof(State));
    if (!s) return FMM_ERR_NOMEM;
    Dev &d = s->d;
    d.dim = p->dim, d.R = p->R, d.P = p->P, d.P8 = (p->P + 7) / 8 * 8, d.force = p->o.force_mode;
    for (int a = 0; a < 3; ++a) d.n[a] = p->n[a], d.pe[a] = p->pe[a];
    d.ncoef = p->ncoef, d.nsb = p->nsb, d.ntb = p->ntb, d.b = p->b, d.cost = p->cost;
    const size_t R21 = 2 * (size_t)p->R + 1, R1 = (size_t)p->R + 1;
    // job lists: source-box chunks needing A, target chunks of EVAL_THREADS
    long njm = 0, nje = 0;
    for (long sb = 0; sb < p->nsb; ++sb)
        if (p->aidx[sb] >= 0) njm += (p->sstart[sb + 1] - p->sstart[sb] + 8191) / 8192;
    for (long tb = 0; tb < p->ntb; ++tb) nje += (p->tstart[tb + 1] - p->tstart[tb] + EVAL_THREADS - 1) / EVAL_THREADS;
    Job *jm = (Job *)malloc(sizeof(Job) * (njm > 0 ? njm : 1)), *je = (Job *)malloc(sizeof(Job) * nje);
    int rc = (!jm || !je) ? FMM_ERR_NOMEM : FMM_OK;
    if (!rc) {
        long m = 0;
        for (long sb = 0; sb < p->nsb; ++sb)
            if (p->aidx[sb] >= 0)
                for (long j = p->sstart[sb]; j < p->sstart[sb + 1]; j += 8192)
                    jm[m++] = Job{sb, j, j + 8192 < p->sstart[sb + 1] ? j + 8192 : p->sstart[sb + 1]};
        m = 0;
        for (long tb = 0; tb < p->ntb; ++tb)
            for (long j = p->tstart[tb]; j < p->tstart[tb + 1]; j += EVAL_THREADS)
                je[m++] = Job{tb, j, j + EVAL_THREADS < p->tstart[tb + 1] ? j + EVAL_THREADS : p->tstart[tb + 1]};
    }
    s->njm = njm, s->nje = nje;
    const size_t ns8 = (size_t)p->ns + 8, nt8 = (size_t)p->nt + 8;
    double *q = nullptr;
    if (!rc) rc = upload(s, (double **)&d.su0, (const double *)p->su[0], ns8);
    if (!rc) rc = upload(s, (double **)&d.su1, (const double *)p->su[1], ns8);
    if (!rc) rc = upload(s, (double **)&d.su2, (const double *)p->su[2], ns8);
    if (!rc) rc = upload(s, (double **)&d.tu0, (const double *)p->tu[0], nt8);
    if (!rc) rc = upload(s, (double **)&d.tu1, (const double *)p->tu[1], nt8);
    if (!rc) rc = upload(s, (double **)&d.tu2, (const double *)p->tu[2], nt8);
    if (!rc) rc = upload(s, &q, (const double *)nullptr, ns8);
    d.q = q;
    if (!rc) rc = upload(s, (int64_t **)&d.skey, (const int64_t *)p->skey, (size_t)p->nsb);
    if (!rc) rc = upload(s, (int64_t **)&d.tkey, (const int64_t *)p->tkey, (size_t)p->ntb);
    if (!rc) rc = upload(s, (long **)&d.sstart, (const long *)p->sstart, (size_t)p->nsb + 1);
    if (!rc) rc = upload(s, (long **)&d.tstart, (const long *)p->tstart, (size_t)p->ntb + 1);
    if (!rc) rc = upload(s, (long **)&d.aidx, (const long *)p->aidx, (size_t)p->nsb);
    if (!rc) rc = upload(s, (fgt_offset **)&d.off, (const fgt_offset *)p->off, R1 * R1 * R1);
    if (!rc) rc = upload(s, (int **)&d.colR, (const int *)p->colR, R21 * R21);
    if (!rc) rc = upload(s, (double **)&d.M, (const double *)p->M, R21 * p->P * d.P8);
    if (!rc) rc = upload(s, &d.g, (const double *)nullptr, nt8);
    if (!rc && p->na > 0) rc = upload(s, &d.A, (const double *)nullptr, (size_t)p->na * p->ncoef);
    d.hasB = nullptr;
    if (!rc && p->pairs[FGT_MODE_TAYLOR] + p->pairs[FGT_MODE_H2T] > 0) {
        long grid = p->ntb < 1024 ? p->ntb : 1024;
        long cap = (256L << 20) / (16 * p->ncoef); // scratch <= 256 MB
        if (grid > cap) grid = cap > 1 ? cap : 1;
        s->grid_build = (int)grid;
        rc = upload(s, &d.B, (const double *)nullptr, (size_t)p->ntb * p->ncoef);
        if (!rc) rc = upload(s, &d.scratch, (const double *)nullptr, (size_t)grid * 2 * p->ncoef);
        if (!rc) rc = upload(s, &d.hasB, (const int *)nullptr, (size_t)p->ntb);
    }
    if (!rc) rc = upload(s, &s->jobs_moments, jm, njm > 0 ? njm : 1);
    if (!rc) rc = upload(s, &s->jobs_eval, je, nje);
    free(jm), free(je);
    if (!rc) {
        for (int i = 0; i < 5 && !rc; ++i) rc = fmm_cuda_status(cudaEventCreate(&s->ev[i]));
        s->have_events = !rc;
    }
    if (rc) {
        state_free(s);
        return rc;
    }
    p->cuda = s;
    return FMM_OK;
}

extern "C" int fgt_cuda_execute(fgt_plan *p, const double *q_sorted, double *g_sorted) {
    State *s = (State *)p->cuda;
    if (!s) return FMM_ERR_NOPTS;
    Dev &d = s->d;
    int rc = fmm_cuda_status(cudaEventRecord(s->ev[0]));
    if (!rc) rc = fmm_cuda_status(cudaMemcpy((void *)d.q, q_sorted, sizeof(double) * (p->ns + 8), cudaMemcpyHostToDevice));
    if (!rc && d.A) rc = fmm_cuda_status(cudaMemset(d.A, 0, sizeof(double) * p->na * p->ncoef));
    if (!rc) rc = fmm_cuda_status(cudaEventRecord(s->ev[1]));
    if (!rc && d.A && s->njm > 0) {
        k_hermite_moments<<<(unsigned)s->njm, 256>>>(d, s->jobs_moments);
        rc = fmm_cuda_status(cudaGetLastError());
    }
    if (!rc) rc = fmm_cuda_status(cudaEventRecord(s->ev[2]));
    if (!rc && d.hasB) {
        k_taylor_build<<<(unsigned)s->grid_build, 256>>>(d);
        rc = fmm_cuda_status(cudaGetLastError());
    }
    if (!rc) rc = fmm_cuda_status(cudaEventRecord(s->ev[3]));
    if (!rc) {
        launch_eval(p->P, d, s->jobs_eval, s->nje);
        rc = fmm_cuda_status(cudaGetLastError());
    }
    if (!rc) rc = fmm_cuda_status(cudaMemcpy(g_sorted, d.g, sizeof(double) * p->nt, cudaMemcpyDeviceToHost));
    if (!rc) rc = fmm_cuda_status(cudaEventRecord(s->ev[4]));
    if (!rc) rc = fmm_cuda_status(cudaEventSynchronize(s->ev[4]));
    if (!rc) {
        float t[4];
        cudaEventElapsedTime(&t[0], s->ev[1], s->ev[2]);
        cudaEventElapsedTime(&t[1], s->ev[2], s->ev[3]);
        cudaEventElapsedTime(&t[2], s->ev[3], s->ev[4]); // evaluation + copy back
        cudaEventElapsedTime(&t[3], s->ev[0], s->ev[4]);
        for (int i = 0; i < 4; ++i) s->ms[i] = t[i];
    }
    return rc;
}

extern "C" int fgt_cuda_stage_times_impl(const fgt_plan *p, double ms[4]) {
    const State *s = (const State *)p->cuda;
    if (!s) return FMM_ERR_NOPTS;
    for (int i = 0; i < 4; ++i) ms[i] = s->ms[i];
    return FMM_OK;
}

extern "C" int fgt_cuda_hermite_bench_impl(long n, int p, int nclusters, double side, double *ms) {
    size_t nc = (size_t)p * p * p * nclusters;
    double *hx = (double *)malloc(sizeof(double) * 3 * n), *hc = (double *)malloc(sizeof(double) * nc),
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
    if (!rc) rc = fmm_cuda_status(cudaMemcpy(dx, hx, sizeof(double) * 3 * n, cudaMemcpyHostToDevice));
    if (!rc) rc = fmm_cuda_status(cudaMemcpy(dc, hc, sizeof(double) * nc, cudaMemcpyHostToDevice));
    if (!rc) rc = fmm_cuda_status(cudaMemcpy(dz, hz, sizeof(double) * 3 * nclusters, cudaMemcpyHostToDevice));
    if (!rc) rc = fmm_cuda_status(cudaEventCreate(&e0));
    if (!rc) rc = fmm_cuda_status(cudaEventCreate(&e1));
    unsigned blocks = (unsigned)((n + EVAL_THREADS - 1) / EVAL_THREADS);
    for (int rep = 0; rep < 2 && !rc; ++rep) { // the first run warms up
        rc = fmm_cuda_status(cudaEventRecord(e0));
        switch (np_for(p)) {
        case 8: k_hermite_bench<8><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg); break;
        case 16: k_hermite_bench<16><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg); break;
        default: k_hermite_bench<32><<<blocks, EVAL_THREADS>>>(n, p, nclusters, dx, dc, dz, dg); break;
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
