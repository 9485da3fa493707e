// fgt/fgt_cuda_passes.cu - the FGT's evaluation on the GPU: the four modes of fgt/execute.c, same
// boxes, same error control.
//
// setpts (host, fgt/fgt_cuda.cu): the plan's sorted points, boxes and tables are uploaded once,
// with three job lists. execute: the weights go up, three kernels run, the values come back:
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
#include "fgt/fgt_cuda_plan.cuh"

using namespace fgt_gpu;

namespace {

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
            for (long sb = fgt_lower_bound(d.skey, d.nsb, klo); sb < d.nsb && d.skey[sb] <= khi;
                 ++sb) {
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

__device__ void block_moments(int kind, const Dev &d, long s0, long s1, const double c[3],
                              const int pe[3], double *out, bool atomic,
                              double *sh /* 3*FGT_PMAX*TS + TILE */) {
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
            if (atomic)
                atomicAdd(o, acc);
            else
                *o += acc;
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
__device__ void block_h2t(const Dev &d, const double *A, double *B, const double *M0,
                          const double *M1, const double *M2, const int pe[3], double *T1,
                          double *T2) {
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

template <int NP>
__global__ void __launch_bounds__(EVAL_THREADS) k_evaluate(Dev d, const Job *jobs) {
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
                if (j < s1)
                    xs[0][threadIdx.x] = d.su0[j], xs[1][threadIdx.x] = d.su1[j],
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

template <int NP> void launch_eval_np(const Dev &d, const Job *jobs, long nje) {
    k_evaluate<NP><<<(unsigned)nje, EVAL_THREADS>>>(d, jobs);
}

void launch_eval(int P, const Dev &d, const Job *jobs, long nje) {
    switch (np_for(P)) {
    case 8:
        launch_eval_np<8>(d, jobs, nje);
        break;
    case 16:
        launch_eval_np<16>(d, jobs, nje);
        break;
    default:
        launch_eval_np<32>(d, jobs, nje);
        break;
    }
}

} // namespace

extern "C" int fgt_cuda_execute(fgt_plan *p, const double *q_sorted, double *g_sorted) {
    State *s = (State *)p->cuda;
    if (!s) return FMM_ERR_NOPTS;
    Dev &d = s->d;
    int rc = fmm_cuda_status(cudaEventRecord(s->ev[0]));
    if (!rc)
        rc = fmm_cuda_status(cudaMemcpy((void *)d.q, q_sorted, sizeof(double) * (p->ns + 8),
                                        cudaMemcpyHostToDevice));
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
    if (!rc)
        rc = fmm_cuda_status(
            cudaMemcpy(g_sorted, d.g, sizeof(double) * p->nt, cudaMemcpyDeviceToHost));
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
