/*
 * Per-order kernels of the CUDA FMM (fmm/fmm_cuda_plan.cuh): P2M, L2P, M2M, L2L and the periodic
 * image-force M2L (m2l/m2l_images.cuh), templated on the order P so that the harmonics recurrences unroll. Each
 * order is instantiated in exactly one of fmm_cuda_orders_*.cu, so that nvcc compiles them in
 * parallel (the 20 orders in one file were the critical path of every build; the split follows
 * the compile times, docs/tuning.md).
 */
#ifndef FMM_FMM_CUDA_ORDERS_CUH
#define FMM_FMM_CUDA_ORDERS_CUH

#include <type_traits>

#include "core/harmonics_device.cuh"
#include "m2l/m2l_gpu.h"
#include "m2l/m2l_images.cuh"
#include "m2l/warp_sums.cuh"
#include "pbc/cluster.h"
#include "pbc/lattice.h"

/* the plan's geometry on the device: lower corner, root side, integer-grid scale */
enum { G_LO = 0, G_SIDE = 3, G_SCALE = 4, G_N = 5 };

/* The evaluation's sums (zeroed first); periodic depth 0 also keeps the bins' occupancy of each
 * axis and the largest |Y|^2 there, as the bits of unsigned 64-bit words (a non-negative double's
 * bits order like its value). The periodic virial's graph adds the charges' extent (RED_LOHI: per
 * axis the largest key of u and of -u, virial_key) and, where their middle is far from the cell's
 * centre, the sum F (x) Y about that middle (RED_VIRG, flagged by RED_FAR; k_virial_far). Sum k
 * lives at red[red_at(k)], each in its own 128-byte line: thousands of blocks add into them, and
 * atomics on one line serialise in its L2 slice (docs/tuning.md). */
// clang-format off
enum { RED_ENERGY = 0, RED_Q = 1, RED_D = 2, RED_S2 = 5, RED_VIR = 6, RED_FSHIFT = 15, RED_QABS = 96, RED_XVIR = 97,
       RED_OCC = 106, RED_R2 = 109, RED_VIRG = 110, RED_LOHI = 119, RED_FAR = 125, RED_N = 126 };
// clang-format on
#define RED_LINE 16
__host__ __device__ constexpr int red_at(int k) {
    return k * RED_LINE;
}

/* Particle record, tree order: position relative to the centre of the particle's own leaf, and
 * charge (T: float in mixed precision). The P2P's pair vectors stay accurate in float (the offset
 * between two leaf centres is an exact small multiple of the leaf side, and the periodic images
 * vanish from the arithmetic: a neighbour beyond the face is the image's leaf); P2M and L2P take
 * the same offsets, and the outputs add the leaf centre back. */
template <typename T> struct alignas(4 * sizeof(T)) p2p_rec { T x, y, z, q; };

/* P2M and L2P compute in float for float records up to this order (the scaled R_lm and local
 * coefficients grow like 1 / (l+m)! and (l+m)!: within float's range with a wide margin), else
 * in double */
#define FMM_GPU_FLOAT_PMAX 12
template <int P, typename T>
using particle_real =
    typename std::conditional<sizeof(T) == 4 && P <= FMM_GPU_FLOAT_PMAX, float, double>::type;

/* ---------------------------------------------------------------- reductions */

__device__ __forceinline__ void warp_add(double *dst, double v) {
    const double a[1] = {v};
    v = warp_sums(a);
    if ((threadIdx.x & 31) == 0) atomicAdd(dst, v);
}
/* dst[at[k]] += the block's sum of v[k], one atomic per block and k (per-warp atomics on a few
 * adjacent addresses serialise), through part
 * (K x 32 doubles of shared memory, free for the block to write): the warps' sums, then thread k
 * adds sum k over the warps in warp order (deterministic). Every thread of the block must call it;
 * at most 32 warps. */
template <int K>
__device__ __forceinline__ void block_add(double *dst, const int (&at)[K], const double (&v)[K],
                                          double (*part)[32]) {
    constexpr int G = 32 / pow2_ceil(K); /* lanes per sum */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    const double s = warp_sums(v);
    if (lane % G == 0 && lane / G < K) part[lane / G][w] = s;
    __syncthreads();
    if (threadIdx.x < K) {
        double t = 0.0;
        for (int i = 0; i < nw; ++i) t += part[threadIdx.x][i];
#pragma unroll
        for (int k = 0; k < K; ++k) /* (at[] by a constant index: no local memory) */
            if (threadIdx.x == k && t != 0.0) atomicAdd(dst + at[k], t);
    }
}
template <int K>
__device__ __forceinline__ void block_add(double *dst, const int (&at)[K], const double (&v)[K]) {
    __shared__ double part[K][32];
    block_add(dst, at, v, part);
}

/* U[k] = (or += with add) sum_j RT[j][k] w[j], the root's local from its multipole w through a root
 * operator RT ([in][out]: fmm_cuda.cu's root_operators), by the whole block of NW warps: lanes over
 * k, warps over j (a few loads each, where one thread per k made a chain of 64 dependent steps);
 * w and part (NW x 32 doubles) in shared memory. Every thread of the block calls it. */
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

/* The cell's charge moments about its centre (Y: the offset from it) for the outputs' periodic
 * corrections: charge, dipole, second moment, sum of |q|; one particle's terms added to v, and a
 * block's v added into red (every thread of the block calls it). */
__device__ __forceinline__ void cell_moments_add(double (&v)[6], double q, const double Y[3]) {
    v[0] += q, v[1] += q * Y[0], v[2] += q * Y[1], v[3] += q * Y[2];
    v[4] += q * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]), v[5] += fabs(q);
}
__device__ __forceinline__ void cell_moments_store(double *red, const double (&v)[6],
                                                   double (*part)[32]) {
    const int at[6] = {red_at(RED_Q),     red_at(RED_D),  red_at(RED_D + 1),
                       red_at(RED_D + 2), red_at(RED_S2), red_at(RED_QABS)};
    block_add(red, at, v, part);
}

/* potential of the uniform unit-density cube [-h, h]^3 (pbc/lattice.c); cube_potential is not
 * inlined: the charged-cell path is rare, and inlined it made the output kernel spill */
__device__ inline double cube_F(double x, double y, double z) {
    double r = sqrt(x * x + y * y + z * z);
    return y * z * log(x + r) + x * z * log(y + r) + x * y * log(z + r) -
           0.5 * x * x * atan(y * z / (x * r)) - 0.5 * y * y * atan(x * z / (y * r)) -
           0.5 * z * z * atan(x * y / (z * r));
}
__device__ inline double cube_Fx(double x, double y, double z) {
    double r = sqrt(x * x + y * y + z * z);
    return y * log(z + r) + z * log(y + r) - x * atan(y * z / (x * r));
}
static __device__ __noinline__ void cube_potential(double h, const double Y[3], double *phi,
                                                   double g[3]) {
    double p = 0;
    g[0] = g[1] = g[2] = 0;
    for (int sx = 0; sx < 2; ++sx)
        for (int sy = 0; sy < 2; ++sy)
            for (int sz = 0; sz < 2; ++sz) {
                double s = ((3 - sx - sy - sz) & 1) ? -1.0 : 1.0;
                double u[3] = {(sx ? h : -h) - Y[0], (sy ? h : -h) - Y[1], (sz ? h : -h) - Y[2]};
                p += s * cube_F(u[0], u[1], u[2]);
                g[0] -= s * cube_Fx(u[0], u[1], u[2]);
                g[1] -= s * cube_Fx(u[1], u[2], u[0]);
                g[2] -= s * cube_Fx(u[2], u[0], u[1]);
            }
    *phi = p;
}

/* P2M accumulator of one warp: lane i's terms q_i R_lm go to column k of buf[i][k] (k: the
 * visit's slot), and every 32 slots the lanes add one column each into the leaf's expansion
 * (lane k: coefficient idx[k]). A warp-shuffle sum per coefficient (5 double shuffles each)
 * made the P2M shuffle-bound. */
template <int P, typename R> struct p2m_visitor {
    R q;
    double *acc;  /* [NC]: the leaf's multipole */
    R (*buf)[33]; /* [32][33] (odd stride: the column reads hit 32 banks) */
    int *idx;     /* [32]: coefficient of each slot */
    int k;        /* slots filled; a constant wherever the visit is unrolled */
    __device__ __forceinline__ void flush() {
        const int lane = threadIdx.x & 31;
        __syncwarp();
        if (lane < k) {
            double s = 0.0; /* (in float, the sum's rounding followed the order of the particles in
                               the leaf, which the binning's atomics change from run to run) */
#pragma unroll 8
            for (int i = 0; i < 32; ++i) s += buf[i][lane];
            acc[idx[lane]] += s;
        }
        __syncwarp();
        k = 0;
    }
    __device__ __forceinline__ void put(int coef, R v) {
        buf[threadIdx.x & 31][k] = v;
        idx[k] = coef;
        if (++k == 32) flush();
    }
    __device__ __forceinline__ void operator()(int l, int m, R re, R im) {
        put(hd_re(l, m), q * re);
        if (m) put(hd_im(l, m), q * im);
    }
};

/* The particles of warp `wid`: a whole leaf (depth >= 1), or at depth 0, where the one leaf holds
 * them all, 32 of them (the warps of a grid over the particles share the root): its range
 * [*b, *e), and which leaf. False for a warp past the end (then *b >= *e). */
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

/* One warp per leaf: W_leaf = sum q R(Y/h), Y the particle records' offsets from the leaf centre;
 * at depth 0 one warp per 32 particles, the block's sum added into W (zeroed before), and with RT
 * (periodic depth 0) its share of the root's local into U (zeroed before): RT[1] where the
 * charges are compact (red's largest |Y|^2), else RT[0]. With moments (periodic, depth >= 1) the
 * blocks also add the cell's dipole and second moment into red (at depth 0 k_root_place adds all
 * the moments): the P2M holds each leaf's centre, which the records need to give positions in
 * the cell. */
template <int P, typename T>
__global__ void __launch_bounds__(128)
    k_p2m(const void *__restrict__ pkv, const int *__restrict__ cs, const int *__restrict__ ce,
          int depth, const double *__restrict__ geom, double *__restrict__ W,
          const double *__restrict__ RT, double *__restrict__ U, double *__restrict__ red,
          int moments) {
    using R = particle_real<P, T>;
    constexpr int NC = hd_ncoef(P);
    const p2p_rec<T> *pk = (const p2p_rec<T> *)pkv;
    __shared__ double acc_all[4][NC];
    __shared__ union {
        R buf[4][32][33];
        double part[6][32]; /* after the sums: cell_moments_store's, block_root_local's */
    } sm;
    __shared__ int idx_all[4][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long c = 0;
    int b = 0, e = 0;
    const bool has = warp_particles((long)blockIdx.x * 4 + warp, depth, cs, ce, &c, &b, &e);
    double *acc = acc_all[warp];
    for (int k = lane; k < NC; k += 32) acc[k] = 0.0;
    double ctr[3], h;
    leaf_centre(c, depth, geom, ctr, &h);
    const double ih = 1.0 / h, hL = 0.5 * geom[G_SIDE];
    p2m_visitor<P, R> vis{0, acc, sm.buf[warp], idx_all[warp], 0};
    double mom[6] = {0, 0, 0, 0, 0, 0};
    for (int base = b; base < e; base += 32) {
        const int i = base + lane;
        const p2p_rec<T> r = i < e ? pk[i] : p2p_rec<T>{0, 0, 0, 0};
        vis.q = (R)r.q;
        regular_visit<P, R>(R(r.x * ih), R(r.y * ih), R(r.z * ih), vis);
        vis.flush();
        if (moments) {
            const double Y[3] = {r.x + (ctr[0] - geom[G_LO] - hL),
                                 r.y + (ctr[1] - geom[G_LO + 1] - hL),
                                 r.z + (ctr[2] - geom[G_LO + 2] - hL)};
            cell_moments_add(mom, r.q, Y);
        }
    }
    __syncthreads(); /* every warp is done with sm.buf */
    if (moments) {   /* the dipole and second moment; the charge sums come from k_place, which has
                        the charges in double (float charges of a neutral cell need not sum to 0,
                        and PBC_CHARGED would take it for a charged one) */
        const int at[4] = {red_at(RED_D), red_at(RED_D + 1), red_at(RED_D + 2), red_at(RED_S2)};
        const double v[4] = {mom[1], mom[2], mom[3], mom[4]};
        block_add(red, at, v, sm.part);
    }
    if (depth) {
        if (has)
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
    const double *M =
        RT + (pbc_cluster_compact(red[red_at(RED_R2)], geom[G_SIDE]) ? (size_t)NC * NC : 0);
    block_root_local<4>(M, acc_all[0], NC, &sm.part[0][0], U, true);
}

/* One warp per leaf (depth 0: per 32 particles): at each particle the far field of the leaf's
 * local expansion plus the near field (near[4][n], the P2P's) and, periodic, the cell's
 * corrections (a charged cell's neutralising background, tinfoil's dipole term), written to out
 * in caller order (perm: phi[n], then the field [n][3]) less the excluded pairs' terms (xterm,
 * caller atoms below nx); the blocks' energy and virial sums, which k_exclusions corrects itself,
 * go into red. In two passes instead: with far_out, the far field only, to far_out[4][n] (tree
 * order); then with far_in, the rest, the far field taken from there. (One kernel for L2P and
 * outputs, where two sent the far field out to memory and back.) Up to p 10 at most 168 registers
 * in double (3 blocks per SM: uncapped, 2 blocks per SM, it was slower, and a cap of 128 spilled),
 * 128 in float (4 blocks per SM, a few bytes of spills); docs/tuning.md has the timings. */
template <int P, typename T>
__global__ void __launch_bounds__(128, sizeof(particle_real<P, T>) == 4 ? 4 : (P <= 10 ? 3 : 1))
    k_l2p(const void *__restrict__ pkv, const int *__restrict__ cs, const int *__restrict__ ce,
          int depth, int periodic, int tinfoil, const double *__restrict__ geom,
          const double *__restrict__ U, const double *__restrict__ far_in,
          double *__restrict__ far_out, const int *__restrict__ perm,
          const double *__restrict__ near, long n, const double *__restrict__ xterm, long nx,
          double *__restrict__ red, double *__restrict__ out) {
    using R = particle_real<P, T>;
    constexpr int NC = hd_ncoef(P);
    const p2p_rec<T> *pk = (const p2p_rec<T> *)pkv;
    __shared__ R u_all[4][NC];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long c = 0;
    int b = 0, e = 0;
    warp_particles((long)blockIdx.x * 4 + warp, depth, cs, ce, &c, &b, &e);
    R *u = u_all[warp];
    if (!far_in)
        for (int k = lane; k < NC; k += 32) u[k] = (R)U[c * NC + k];
    __syncwarp();
    double ctr[3], h;
    leaf_centre(c, depth, geom, ctr, &h);
    const double ih = 1.0 / h, ih2 = ih * ih, L = geom[G_SIDE];
    double off[3]; /* leaf centre - cell centre */
    for (int d = 0; d < 3; ++d) off[d] = ctr[d] - geom[G_LO + d] - 0.5 * L;
    double cq = 0.0, k0 = 0.0, kd = 0.0, D[3] = {0, 0, 0};
    bool charged = false;
    if (periodic && !far_out) {
        const double V = L * L * L, pi = 3.14159265358979323846, Q = red[red_at(RED_Q)];
        charged = PBC_CHARGED(Q, red[red_at(RED_QABS)]);
        cq = Q / V;
        if (tinfoil) {
            kd = 4 * pi / (3 * V);
            k0 = 2 * pi / (3 * V) * (red[red_at(RED_S2)] - Q * L * L / 4);
            for (int d = 0; d < 3; ++d) D[d] = red[red_at(RED_D + d)];
        }
    }
    double v[10] = {0}; /* energy, virial */
    for (int i = b + lane; i < e; i += 32) {
        /* the loads first, so that their latency passes under the L2P's arithmetic */
        const p2p_rec<T> r = pk[i];
        const long j = far_out ? 0 : perm[i];
        double ph = 0, E[3] = {0, 0, 0};
        if (!far_out)
            ph = near[i], E[0] = near[n + i], E[1] = near[2 * n + i], E[2] = near[3 * n + i];
        if (far_in) {
            ph += far_in[i], E[0] += far_in[n + i], E[1] += far_in[2 * n + i],
                E[2] += far_in[3 * n + i];
        } else {
            l2p_visitor<P, R> vis{u, 0, 0, 0, 0};
            regular_visit<P, R>(R(r.x * ih), R(r.y * ih), R(r.z * ih), vis);
            ph += vis.f * ih, E[0] += vis.sr * ih2, E[1] += vis.si * ih2, E[2] -= vis.dz * ih2;
        }
        if (far_out) {
            far_out[i] = ph, far_out[n + i] = E[0], far_out[2 * n + i] = E[1],
            far_out[3 * n + i] = E[2];
            continue;
        }
        const double Y[3] = {r.x + off[0], r.y + off[1], r.z + off[2]};
        if (charged) {
            double pb, gb[3];
            cube_potential(1.5 * L, Y, &pb, gb);
            ph -= cq * pb;
            for (int d = 0; d < 3; ++d) E[d] += cq * gb[d];
        }
        ph += k0 - kd * (D[0] * Y[0] + D[1] * Y[1] + D[2] * Y[2]);
        for (int d = 0; d < 3; ++d) E[d] += kd * D[d];
        const bool x = xterm && j < nx;
        out[j] = x ? ph - xterm[j] : ph;
        for (int d = 0; d < 3; ++d) out[n + 3 * j + d] = x ? E[d] - xterm[nx + 3 * j + d] : E[d];
        const double q = r.q;
        v[0] += 0.5 * q * ph;
        for (int a = 0; a < 3; ++a)
            for (int bb = 0; bb < 3; ++bb) v[1 + 3 * a + bb] += q * E[a] * Y[bb];
    }
    if (far_out) return; /* (uniform over the block) */
    const int at[10] = {red_at(RED_ENERGY),  red_at(RED_VIR),     red_at(RED_VIR + 1),
                        red_at(RED_VIR + 2), red_at(RED_VIR + 3), red_at(RED_VIR + 4),
                        red_at(RED_VIR + 5), red_at(RED_VIR + 6), red_at(RED_VIR + 7),
                        red_at(RED_VIR + 8)};
    block_add(red, at, v);
}

/* ---------------------------------------------------------------- translations between levels */

#define PB                                                                                         \
    4                /* parents per block: each operator entry loaded once serves PB parents       \
                        (more made the finest L2L and the coarse levels' single blocks slower:     \
                        docs/tuning.md) */
#define TB_TREE 256  /* threads per M2M / L2L block: one (octant, coefficient) pair each */

/* W(parent level lp) = sum over the 8 children of M2M_o W(child): thread (o, k) sums child o's
 * contribution to coefficient k, then the 8 partial sums are added through shared memory.
 * (With one thread per k the coarse levels ran 2 warps per SM, latency-bound.) */
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

/* ---------------------------------------------------------------- per-order dispatch */

struct order_kernels {
    /* [0]: double particle records, [1]: float (mixed precision) */
    void (*p2m[2])(const void *, const int *, const int *, int, const double *, double *,
                   const double *, double *, double *, int);
    void (*l2p[2])(const void *, const int *, const int *, int, int, int, const double *,
                   const double *, const double *, double *, const int *, const double *, long,
                   const double *, long, double *, double *);
    void (*m2m)(const double *, int, const double *, double *);
    void (*l2l)(const double *, int, const double *, double *);
    void (*images)(const double *, const double *, const int *, int, const double *, const double *, double *);
};

/* the kernels of order p in [LO, HI] (empty outside) */
template <int LO, int HI> order_kernels order_kernels_in(int p) {
    if constexpr (LO > HI)
        return order_kernels{};
    else if (p == LO)
        return {{k_p2m<LO, double>, k_p2m<LO, float>},
                {k_l2p<LO, double>, k_l2p<LO, float>},
                k_m2m<LO>,
                k_l2l<LO>,
                k_m2l_images<LO, RED_LINE>};
    else
        return order_kernels_in<LO + 1, HI>(p);
}

order_kernels fmm_gpu_orders_1_12(int p);
order_kernels fmm_gpu_orders_13_14(int p);
order_kernels fmm_gpu_orders_15_16(int p);
order_kernels fmm_gpu_orders_17_18(int p);
order_kernels fmm_gpu_orders_19_20(int p);

#endif
