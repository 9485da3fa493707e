/*
 * Per-order kernels of the CUDA FMM (fmm/fmm_cuda.cu): P2M, L2P, M2M, L2L and the periodic
 * image-force M2L, templated on the order P so that the harmonics recurrences unroll. Each
 * order is instantiated in exactly one of fmm_cuda_orders_*.cu: the 20 orders in one file took
 * nvcc four minutes on one core, the critical path of every build (now about 1 minute; the
 * split follows the measured compile times: orders 13..18 cost the most).
 */
#ifndef FMM_FMM_CUDA_ORDERS_CUH
#define FMM_FMM_CUDA_ORDERS_CUH

#include "core/harmonics_device.cuh"
#include "m2l/m2l_gpu.h"
#include "pbc/cluster.h"

/* the plan's geometry on the device: lower corner, root side, integer-grid scale */
enum { G_LO = 0, G_SIDE = 3, G_SCALE = 4, G_N = 5 };

/* ---------------------------------------------------------------- reductions */

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ void warp_add(double *dst, double v) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) atomicAdd(dst, v);
}
/* dst[at[k]] += the block's sum of v[k], one atomic per block and k (per-warp atomics on a few
 * adjacent addresses serialise: ~0.5 ms for 10 sums over 1M particles on an H100). Every thread
 * of the block must call it; at most 32 warps. */
template <int K> __device__ __forceinline__ void block_add(double *dst, const int (&at)[K], const double (&v)[K]) {
    __shared__ double part[K][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const double s = warp_sum(v[k]);
        if (lane == 0) part[k][w] = s;
    }
    __syncthreads();
    if (w == 0)
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const double s = warp_sum(lane < nw ? part[k][lane] : 0.0);
            if (lane == 0 && s != 0.0) atomicAdd(dst + at[k], s);
        }
}

/* U[k] = (or += with add) sum_j RT[j][k] w[j], the root's local from its multipole w through a root
 * operator RT ([in][out]: fmm_cuda.cu's root_operators), by the whole block of NW warps: lanes over
 * k, warps over j (a few loads each: with one thread per k, 64 dependent steps, the depth-0 P2M
 * took 0.0036 ms longer on an H100); w and part (NW x 32 doubles) in shared memory. Every thread
 * of the block calls it. */
template <int NW>
__device__ void block_root_local(const double *__restrict__ RT, const double *w, int nc,
                                 double *part, double *__restrict__ U, bool add) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int k0 = 0; k0 < nc; k0 += 32) {
        const int k = k0 + lane;
        double s = 0.0;
        if (k < nc)
#pragma unroll 4
            for (int j = warp; j < nc; j += NW) s = fma(RT[(size_t)j * nc + k], w[j], s);
        __syncthreads(); /* part is free */
        part[warp * 32 + lane] = s;
        __syncthreads();
        if (warp == 0 && k < nc) {
            double t = 0.0;
#pragma unroll
            for (int v = 0; v < NW; ++v) t += part[v * 32 + lane];
            if (add)
                atomicAdd(U + k, t);
            else
                U[k] = t;
        }
    }
}

/* ---------------------------------------------------------------- particle operators */

__device__ __forceinline__ void leaf_centre(long c, int depth, const double *geom, double ctr[3], double *h) {
    const long s = 1L << depth;
    const long ix[3] = {c % s, c / s % s, c / (s * s)};
    *h = geom[G_SIDE] / (double)s;
    for (int d = 0; d < 3; ++d) ctr[d] = geom[G_LO + d] + (ix[d] + 0.5) * *h;
}

/* P2M accumulator of one warp: lane i's terms q_i R_lm go to column k of buf[i][k] (k: the
 * visit's slot), and every 32 slots the lanes add one column each into the leaf's expansion
 * (lane k: coefficient idx[k]). A warp-shuffle sum per coefficient (5 double shuffles each)
 * made the P2M shuffle-bound. */
template <int P> struct p2m_visitor {
    double q;
    double *acc;       /* [NC]: the leaf's multipole */
    double (*buf)[33]; /* [32][33] (odd stride: the column reads hit 32 banks) */
    int *idx;          /* [32]: coefficient of each slot */
    int k;             /* slots filled; a constant wherever the visit is unrolled */
    __device__ __forceinline__ void flush() {
        const int lane = threadIdx.x & 31;
        __syncwarp();
        if (lane < k) {
            double s = 0.0;
#pragma unroll 8
            for (int i = 0; i < 32; ++i) s += buf[i][lane];
            acc[idx[lane]] += s;
        }
        __syncwarp();
        k = 0;
    }
    __device__ __forceinline__ void put(int coef, double v) {
        buf[threadIdx.x & 31][k] = v;
        idx[k] = coef;
        if (++k == 32) flush();
    }
    __device__ __forceinline__ void operator()(int l, int m, double re, double im) {
        put(hd_re(l, m), q * re);
        if (m) put(hd_im(l, m), q * im);
    }
};

/* The particles of warp `wid`: a whole leaf (depth >= 1), or at depth 0, where the one leaf holds
 * them all, 32 of them (the warps of a grid over the particles share the root): its range
 * [*b, *e), and which leaf. False for a warp past the end. */
__device__ __forceinline__ bool warp_particles(long wid, int depth, const int *cs, const int *ce,
                                               long *leaf, int *b, int *e) {
    if (depth == 0) {
        *leaf = 0, *b = (int)(32 * wid), *e = min(ce[0], (int)(32 * wid + 32));
        return *b < ce[0];
    }
    if (wid >= 1L << (3 * depth)) return false;
    *leaf = wid, *b = cs[wid], *e = ce[wid];
    return true;
}

/* one warp per leaf: W_leaf = sum q R((x - c)/h); at depth 0 one warp per 32 particles, the block's
 * sum added into W (zeroed before), and with RT (periodic depth 0) its share of the root's local
 * into U (zeroed before): RT[1] where the charges are compact (r2max: the largest |Y|^2), else
 * RT[0] */
template <int P>
__global__ void __launch_bounds__(128)
    k_p2m(const double *__restrict__ x, const double *__restrict__ y, const double *__restrict__ z,
          const double *__restrict__ q, const int *__restrict__ cs, const int *__restrict__ ce,
          int depth, const double *__restrict__ geom, double *__restrict__ W,
          const double *__restrict__ RT, const double *__restrict__ r2max, double *__restrict__ U) {
    constexpr int NC = hd_ncoef(P);
    __shared__ double acc_all[4][NC];
    __shared__ double buf_all[4][32][33];
    __shared__ int idx_all[4][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long c;
    int b, e;
    /* (at depth 0 a warp past the end has no particles and stays for the block's sums) */
    if (!warp_particles((long)blockIdx.x * 4 + warp, depth, cs, ce, &c, &b, &e) && depth) return;
    double *acc = acc_all[warp];
    for (int k = lane; k < NC; k += 32) acc[k] = 0.0;
    double ctr[3], h;
    leaf_centre(c, depth, geom, ctr, &h);
    const double ih = 1.0 / h;
    p2m_visitor<P> vis{0.0, acc, buf_all[warp], idx_all[warp], 0};
    for (int base = b; base < e; base += 32) {
        const int i = base + lane;
        const bool ok = i < e;
        vis.q = ok ? q[i] : 0.0;
        regular_visit<P>(ok ? (x[i] - ctr[0]) * ih : 0.0, ok ? (y[i] - ctr[1]) * ih : 0.0,
                         ok ? (z[i] - ctr[2]) * ih : 0.0, vis);
        vis.flush();
    }
    __syncwarp();
    if (depth) {
        for (int k = lane; k < NC; k += 32) W[c * NC + k] = acc[k];
        return;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < NC; k += blockDim.x) {
        acc_all[0][k] += acc_all[1][k] + acc_all[2][k] + acc_all[3][k];
        atomicAdd(W + k, acc_all[0][k]);
    }
    if (!RT) return;
    __syncthreads();
    const double *R = RT + (pbc_cluster_compact(*r2max, geom[G_SIDE]) ? (size_t)NC * NC : 0);
    block_root_local<4>(R, acc_all[0], NC, &buf_all[0][0][0], U, true);
}

/* one warp per leaf (depth 0: per 32 particles): far-field potential and field of the leaf's
 * local expansion. Up to p 10 at
 * most 168 registers (3 blocks per SM): at p 7 it took 250, 2 blocks per SM, and ran 129 us for
 * 1M particles against 111 us capped (H100; a cap of 128 registers spilled: 148 us) */
template <int P>
__global__ void __launch_bounds__(128, P <= 10 ? 3 : 1)
    k_l2p(const double *__restrict__ x, const double *__restrict__ y, const double *__restrict__ z,
          const int *__restrict__ cs, const int *__restrict__ ce, int depth,
          const double *__restrict__ geom, const double *__restrict__ U, long n,
          double *__restrict__ far) {
    constexpr int NC = hd_ncoef(P);
    __shared__ double u_all[4][NC];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long c;
    int b, e;
    if (!warp_particles((long)blockIdx.x * 4 + warp, depth, cs, ce, &c, &b, &e)) return;
    double *u = u_all[warp];
    for (int k = lane; k < NC; k += 32) u[k] = U[c * NC + k];
    __syncwarp();
    double ctr[3], h;
    leaf_centre(c, depth, geom, ctr, &h);
    const double ih = 1.0 / h, ih2 = ih * ih;
    for (int i = b + lane; i < e; i += 32) {
        l2p_visitor<P> vis{u, 0.0, 0.0, 0.0, 0.0};
        regular_visit<P>((x[i] - ctr[0]) * ih, (y[i] - ctr[1]) * ih, (z[i] - ctr[2]) * ih, vis);
        far[i] = vis.f * ih;
        far[n + i] = vis.sr * ih2;
        far[2 * n + i] = vis.si * ih2;
        far[3 * n + i] = -vis.dz * ih2;
    }
}

/* ---------------------------------------------------------------- translations between levels */

#define PB 4         /* parents per block: each operator entry loaded once serves PB parents */
#define TB_TREE 256  /* threads per M2M / L2L block: one (octant, coefficient) pair each */

/* W(parent level lp) = sum over the 8 children of M2M_o W(child): thread (o, k) sums child o's
 * contribution to coefficient k, then the 8 partial sums are added through shared memory.
 * (With one thread per k the coarse levels ran 2 warps per SM and took ~25 us each.) */
template <int P>
__global__ void __launch_bounds__(TB_TREE) k_m2m(const double *__restrict__ MT, int lp, const double *__restrict__ Wc,
                                                 double *__restrict__ Wp) {
    constexpr int NC = hd_ncoef(P), NO = 8 * NC, NPT = (NO + TB_TREE - 1) / TB_TREE;
    extern __shared__ double ws[]; /* [PB][8][NC]: the children's multipoles, then the partial sums */
    const long sp = 1L << lp, np = sp * sp * sp, p0 = (long)blockIdx.x * PB, sc = 2 * sp;
    for (int id = threadIdx.x; id < PB * 8 * NC; id += blockDim.x) {
        const int j = id % NC, o = id / NC % 8, pb = id / (8 * NC);
        const long par = p0 + pb;
        double v = 0.0;
        if (par < np) {
            const long px = par % sp, py = par / sp % sp, pz = par / (sp * sp);
            const long ch = (2 * px + (o & 1)) + sc * ((2 * py + (o >> 1 & 1)) + sc * (2 * pz + (o >> 2 & 1)));
            v = Wc[ch * NC + j];
        }
        ws[id] = v;
    }
    __syncthreads();
    double acc[NPT][PB];
#pragma unroll
    for (int t = 0; t < NPT; ++t) {
        const int id = threadIdx.x + t * TB_TREE, o = id / NC, k = id % NC;
#pragma unroll
        for (int pb = 0; pb < PB; ++pb) acc[t][pb] = 0.0;
        if (id < NO)
            for (int j = 0; j < NC; ++j) {
                const double m = MT[((size_t)o * NC + j) * NC + k];
#pragma unroll
                for (int pb = 0; pb < PB; ++pb) acc[t][pb] = fma(m, ws[(pb * 8 + o) * NC + j], acc[t][pb]);
            }
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < NPT; ++t) {
        const int id = threadIdx.x + t * TB_TREE, o = id / NC, k = id % NC;
        if (id < NO)
#pragma unroll
            for (int pb = 0; pb < PB; ++pb) ws[(pb * 8 + o) * NC + k] = acc[t][pb];
    }
    __syncthreads();
    for (int id = threadIdx.x; id < PB * NC; id += TB_TREE) {
        const int pb = id / NC, k = id % NC;
        double w = 0.0;
#pragma unroll
        for (int o = 0; o < 8; ++o) w += ws[(pb * 8 + o) * NC + k];
        if (p0 + pb < np) Wp[(p0 + pb) * NC + k] = w;
    }
}

/* U(children of level lp) += L2L_o U(parent): thread (o, k) makes coefficient k of child o */
template <int P>
__global__ void __launch_bounds__(TB_TREE) k_l2l(const double *__restrict__ LT, int lp, const double *__restrict__ Up,
                                                 double *__restrict__ Uc) {
    constexpr int NC = hd_ncoef(P);
    extern __shared__ double us[]; /* [PB][NC] */
    const long sp = 1L << lp, np = sp * sp * sp, p0 = (long)blockIdx.x * PB, sc = 2 * sp;
    for (int id = threadIdx.x; id < PB * NC; id += blockDim.x) {
        const long par = p0 + id / NC;
        us[id] = par < np ? Up[par * NC + id % NC] : 0.0;
    }
    __syncthreads();
    for (int id = threadIdx.x; id < 8 * NC; id += TB_TREE) {
        const int o = id / NC, k = id % NC;
        double acc[PB] = {0.0};
        for (int j = 0; j < NC; ++j) {
            const double m = LT[((size_t)o * NC + j) * NC + k];
#pragma unroll
            for (int pb = 0; pb < PB; ++pb) acc[pb] = fma(m, us[pb * NC + j], acc[pb]);
        }
#pragma unroll
        for (int pb = 0; pb < PB; ++pb) {
            const long par = p0 + pb;
            if (par >= np) continue;
            const long px = par % sp, py = par / sp % sp, pz = par / (sp * sp);
            const long ch = (2 * px + (o & 1)) + sc * ((2 * py + (o >> 1 & 1)) + sc * (2 * pz + (o >> 2 & 1)));
            Uc[ch * NC + k] += acc[pb];
        }
    }
}

/* Total force sum_i q_i E(x_i) of a scaled local expansion u on the charges whose scaled
 * multipole about the same centre is w (core/harmonics.c harm_local_force). */
template <int P> __device__ void local_force(double h, const double *u, const double *w, double F[3]) {
    double dz = 0, sr = 0, si = 0;
    for (int l = 1; l <= P; ++l) {
#define WR(m) w[hd_re(l - 1, m)]
#define WI(m) ((m) ? w[hd_im(l - 1, m)] : 0.0)
        double dzl = 0;
        for (int m = 1; m <= l - 1; ++m) dzl += u[hd_re(l, m)] * WR(m) - u[hd_im(l, m)] * WI(m);
        dz += u[hd_re(l, 0)] * WR(0) + 2.0 * dzl;
        for (int m = 1; m <= l; ++m) {
            const double ur = u[hd_re(l, m)], ui = u[hd_im(l, m)];
            sr += ur * WR(m - 1) - ui * WI(m - 1);
            si += ur * WI(m - 1) + ui * WR(m - 1);
        }
        for (int m = 0; m <= l - 2; ++m) {
            const double ur = u[hd_re(l, m)], ui = m ? u[hd_im(l, m)] : 0.0;
            sr -= ur * WR(m + 1) - ui * WI(m + 1);
            si += ur * WI(m + 1) + ui * WR(m + 1);
        }
#undef WR
#undef WI
    }
    const double ih2 = 1.0 / (h * h);
    F[0] = sr * ih2, F[1] = si * ih2, F[2] = -dz * ih2;
}

/* Periodic virial: the M2L translations whose source is a periodic image, again, one block
 * per target box near a face, to gather the force of each image on the cell (fshift[27][3]). */
template <int P>
__global__ void __launch_bounds__(128) k_m2l_images(const double *__restrict__ cls, const double *__restrict__ sign,
                                                    const int *__restrict__ vlist, int level,
                                                    const double *__restrict__ geom, const double *__restrict__ W,
                                                    double *__restrict__ fshift) {
    constexpr int NC = hd_ncoef(P);
    __shared__ double xs[NC], us[NC], wt[NC], fs[81];
    const int s = 1 << level;
    const long t = blockIdx.x;
    const int ix[3] = {(int)(t % s), (int)(t / s % s), (int)(t / ((long)s * s))};
    if (ix[0] >= 3 && ix[0] < s - 3 && ix[1] >= 3 && ix[1] < s - 3 && ix[2] >= 3 && ix[2] < s - 3) return;
    const int parity = (ix[0] & 1) | (ix[1] & 1) << 1 | (ix[2] & 1) << 2;
    const double h = geom[G_SIDE] / s;
    for (int k = threadIdx.x; k < NC; k += blockDim.x) wt[k] = W[t * NC + k];
    for (int k = threadIdx.x; k < 81; k += blockDim.x) fs[k] = 0.0;
    for (int e = 0; e < M2L_VLIST; ++e) {
        const int pk = vlist[parity * M2L_VLIST + e];
        int c[3] = {ix[0] + (pk & 7) - 3, ix[1] + (pk >> 3 & 7) - 3, ix[2] + (pk >> 6 & 7) - 3}, code = 0;
        for (int d = 0, mul = 1; d < 3; ++d, mul *= 3) {
            const int img = c[d] < 0 ? -1 : (c[d] >= s ? 1 : 0);
            c[d] -= img * s, code += mul * (img + 1);
        }
        if (code == 13) continue;
        const long src = c[0] + (long)s * (c[1] + (long)s * c[2]);
        const double *M = cls + (size_t)(pk >> 9 & 63) * NC * NC, *sg = sign + (pk >> 15) * NC;
        __syncthreads();
        for (int j = threadIdx.x; j < NC; j += blockDim.x) xs[j] = sg[j] * W[src * NC + j];
        __syncthreads();
        for (int k = threadIdx.x; k < NC; k += blockDim.x) {
            double a = 0.0;
            for (int j = 0; j < NC; ++j) a = fma(M[(size_t)k * NC + j], xs[j], a);
            us[k] = sg[k] * a;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            double F[3];
            local_force<P>(h, us, wt, F);
            for (int a = 0; a < 3; ++a) fs[3 * code + a] += F[a];
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < 81; k += blockDim.x)
        if (fs[k] != 0.0) atomicAdd(fshift + k, fs[k]);
}

/* ---------------------------------------------------------------- per-order dispatch */

struct order_kernels {
    void (*p2m)(const double *, const double *, const double *, const double *, const int *,
                const int *, int, const double *, double *, const double *, const double *,
                double *);
    void (*l2p)(const double *, const double *, const double *, const int *, const int *, int, const double *,
                const double *, long, double *);
    void (*m2m)(const double *, int, const double *, double *);
    void (*l2l)(const double *, int, const double *, double *);
    void (*images)(const double *, const double *, const int *, int, const double *, const double *, double *);
};

/* the kernels of order p in [LO, HI] (empty outside) */
template <int LO, int HI> order_kernels order_kernels_in(int p) {
    if constexpr (LO > HI)
        return order_kernels{};
    else if (p == LO)
        return {k_p2m<LO>, k_l2p<LO>, k_m2m<LO>, k_l2l<LO>, k_m2l_images<LO>};
    else
        return order_kernels_in<LO + 1, HI>(p);
}

order_kernels fmm_gpu_orders_1_12(int p);
order_kernels fmm_gpu_orders_13_14(int p);
order_kernels fmm_gpu_orders_15_16(int p);
order_kernels fmm_gpu_orders_17_18(int p);
order_kernels fmm_gpu_orders_19_20(int p);

#endif
