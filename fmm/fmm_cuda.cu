/* The Coulomb FMM on one CUDA device: see fmm/fmm_cuda.h. */
#include "fmm/fmm_cuda.h"

#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/cuda_status.cuh"
#include "fmm.h"
#include "fmm/exclusions.h"
#include "fmm/fmm_cuda_orders.cuh"
#include "m2l/m2l_gpu.h"
#include "pbc/cluster.h"
#include "pbc/lattice.h"

#define TRY(call)                                                                             \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_) return rc_;                                                                  \
    } while (0)

/* Every M2L level runs as the symmetric variant (one operator application per symmetry class
 * with Walsh-Hadamard combined sources: 56 instead of 189 per box; m2l/m2l_symmetric.cu), the
 * coarse levels too: that was faster at every size measured (docs/tuning.md). */
#define P2P_WIDE_DEPTH 3 /* P2P with 8 warps per leaf up to this depth, 4 below */
/* Scheduling of the evaluation graph's lanes: the tree chain with the coarse M2L levels, the
 * finest M2L level, the P2P (measurements: docs/tuning.md).
 * - From depth FMM_COARSE_NARROW_DEPTH the coarse levels' M2L plans spread each sign group's
 *   classes over blocks for FMM_COARSE_SPREAD / 2 multiprocessors instead of half the device:
 *   their target tiles are mostly empty (1, 8, 64 targets per parity on levels 1..3 at depth 4)
 *   and their latency-bound blocks held SM slots that the finest level's blocks need.
 * - Priorities: the P2P one step below the tree chain and the coarse levels (which must be done
 *   before the last L2L too, and are short), the finest M2L level two steps below, so that the
 *   long finest level fills what the others leave. */
/* The finest level from FMM_HALO_LEVEL on, in mixed precision, runs as the halo variant
 * (m2l/m2l_halo.cu: sources staged per tile, TF32 tensor cores); at depth 4 its 4 tiles per
 * parity do not fill the device, and the symmetric variant is faster there (docs/tuning.md). */
#ifndef FMM_HALO_LEVEL
#define FMM_HALO_LEVEL 5
#endif
#ifndef FMM_COARSE_NARROW_DEPTH
#define FMM_COARSE_NARROW_DEPTH 4
#endif
#ifndef FMM_COARSE_SPREAD
#define FMM_COARSE_SPREAD 32
#endif
#ifndef FMM_PRIO_FINEST
#define FMM_PRIO_FINEST 2
#endif
#ifndef FMM_PRIO_P2P
#define FMM_PRIO_P2P 1
#endif
#define KEYBITS 20 /* the CPU octree's integer grid (core/octree.c): 2^20 cells per axis */

/* The device route's evaluation (fmm_cuda_setptsf, fmm_cuda_forcesf) as one graph: the caller's
 * float positions dx widened (a non-finite one flagged in bad), the evaluation, and scale q E
 * into the caller's df. One launch instead of four runtime calls (the flag's reset, the widening,
 * the graph, the forces) halves the host time of an MD step (docs/tuning.md). */
typedef struct {
    const float *dx;
    float *df;
    double scale;
} dev_route;

struct fmm_gpu {
    int p, nc, periodic, tinfoil, depth, mixed;
    long n, cap;
    m2l_gpu_ops m2l;
    m2l_sym_plan *sym[11]; /* per level with M2L: the presorted symmetric M2L (m2l/m2l_symmetric.cu) */
    m2l_halo_plan
        *halo; /* or for the finest level, in mixed precision: halo tiles on the tensor cores */
    int sym_depth;
    int prio[3];         /* stream priorities: tree chain and coarse M2L, finest M2L, P2P */
    double *m2mT, *l2lT; /* [8 octants][nc in][nc out] */
    double *root_op;     /* periodic: [2][nc in][nc out], the root's local from its multipole
                            (root_operators) */
    double *xyz, *qin;   /* caller order: input positions, charges */
    float *stage;                 /* [4n]: single-precision caller data on its way in or out */
    unsigned *key;                /* caller order: leaf of each particle */
    int *rank;                    /* caller order: its slot within the leaf */
    int *perm;                    /* tree position -> caller index */
    void *pk;                     /* tree order: p2p_rec<float or double> (mixed or not) */
    int *cs, *ce;                 /* particles of leaf c: [cs[c], ce[c]) */
    int *cnt;                     /* per leaf: particles (the binning's counters) */
    int2 *lsum;                   /* per leaf: inclusive sums of (particles, 32-target chunks) */
    int *chunk_end;               /* per leaf: lsum.y */
    int *chunk_leaf;              /* per chunk: its leaf */
    long cap_chunk;
    void *stmp;                   /* the scan's temporary storage */
    size_t stmp_bytes;
    /* [4][n], phi, ex, ey, ez in tree order: far (depth 0), near; out: phi[n], field[3n] caller
     * order */
    double *far, *near, *out;
    double *W, *U;                /* all levels, level l at box offset (8^l - 1)/7 */
    long nbox, cap_box;
    double *geom, *red;
    cudaStream_t s0, s1, s2;
    cudaStream_t sl[11];     /* per coarse level: the stream its M2L forks from, so the levels run side by side */
    cudaStream_t simg; /* the virial's image forces (k_m2l_images), beside the downward pass */
    cudaStream_t sx;   /* the excluded pairs (k_exclusions), beside the placement and the P2P */
    cudaEvent_t fork, join, fork2, join2, t0, t1, forkl, joinl[11], forki, joini, forkx, joinx;
    cudaStream_t last; /* the stream the plan's work went on last (plan_stream) */
    int have_last;
    cudaEvent_t sw;          /* a switch of streams: the new one waits for the last one */
    int geom_moved;          /* a depth-0 graph moves the cell's corner in geom on the device */
    int *bad;                /* device-resident positions: set where one is not finite */
    int dev_pts; /* the current positions came from the device (the host never checked them) */
    const float *dev_xyz;    /* device-resident positions that no evaluation has read yet */
    double geom_host[G_N];   /* what g->geom holds */
    /* [GRAPH_PLAIN]; [GRAPH_PARTS]: gathering the periodic image forces; [GRAPH_DEVICE]: the
       device route around the plain evaluation, captured for the buffers and scale in route */
    cudaGraphExec_t exec[3];
    int graph_n[3], graph_depth[3], graph_excl[3];
    dev_route route;
    int *xstart, *xpartner; /* excluded pairs (fmm/exclusions.h), caller indices */
    double *xterm;          /* their direct terms, caller order: phi[xatoms], then the field [xatoms][3] */
    long xatoms;
    int excl_version;       /* bumped by each fmm_gpu_set_exclusions: the graphs are captured anew */
};

static inline long level_offset(int l) { return ((1L << (3 * l)) - 1) / 7; }

enum { GRAPH_PLAIN, GRAPH_PARTS, GRAPH_DEVICE, GRAPH_N };

/* ---------------------------------------------------------------- binning */

/* Binning is a counting sort: each particle takes the next slot of its leaf's counter, one scan
 * of the counts gives the leaves' ranges, and the particles are written to their slots (few graph
 * nodes: a radix sort's chain was mostly launch gaps, docs/tuning.md). The order within a leaf
 * follows the atomics, so it can change between runs: sums over a leaf change in their last bits
 * (float near field: 1e-7). */
/* a position coordinate, periodic: wrapped into [0, L) (k_bin bins it, k_place places it:
 * recomputed there rather than stored, 24 bytes per particle each way less) */
__device__ __forceinline__ double wrap_coord(double v, double L, int periodic) {
    if (!periodic) return v;
    v = v - L * floor(v / L);
    return v < L ? v : 0.0;
}

__global__ void k_bin(long n, const double *__restrict__ xyz, const double *__restrict__ geom,
                      int periodic, int depth, unsigned *__restrict__ key, int *__restrict__ cnt,
                      int *__restrict__ rank) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double L = geom[G_SIDE], scale = geom[G_SCALE];
    const long top = (1L << KEYBITS) - 1;
    unsigned c[3];
    for (int d = 0; d < 3; ++d) {
        const double v = wrap_coord(xyz[3 * i + d], L, periodic);
        long u = (long)floor((v - geom[G_LO + d]) * scale);
        u = u < 0 ? 0 : (u > top ? top : u);
        c[d] = (unsigned)(u >> (KEYBITS - depth));
    }
    const unsigned s = 1u << depth, k = c[0] + s * (c[1] + s * c[2]);
    key[i] = k;
    rank[i] = atomicAdd(cnt + k, 1);
}

/* a leaf's particles and 32-target chunks, the summands of the leaves' scan */
struct leaf_counts {
    __host__ __device__ int2 operator()(int c) const { return make_int2(c, (c + 31) / 32); }
};
struct int2_sum {
    __host__ __device__ int2 operator()(int2 a, int2 b) const { return make_int2(a.x + b.x, a.y + b.y); }
};
typedef thrust::transform_iterator<leaf_counts, const int *> leaf_count_iter;

/* Thread i < n writes particle i to its slot in tree order; thread i < nleaf writes leaf i's
 * range, its chunks' end, and its chunks into the chunk -> leaf map. Periodic: the blocks add the
 * cell's charge and sum of |q| into red, from the charges in double (the P2M adds the moments
 * that need positions). */
template <typename R>
__global__ void
k_place(long n, long nleaf, int depth, const unsigned *__restrict__ key,
        const int *__restrict__ rank, const int *__restrict__ cnt, const int2 *__restrict__ lsum,
        const double *__restrict__ geom, int periodic, const double *__restrict__ xyz,
        const double *__restrict__ qin, int *__restrict__ perm, p2p_rec<R> *__restrict__ pk,
        int *__restrict__ cs, int *__restrict__ ce, int *__restrict__ chunk_end,
        int *__restrict__ chunk_leaf, double *__restrict__ red) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    double qs[2] = {0.0, 0.0};
    if (i < n) {
        const unsigned k = key[i];
        const long at = lsum[k].x - cnt[k] + rank[i];
        const double L = geom[G_SIDE];
        const double xi = wrap_coord(xyz[3 * i], L, periodic),
                     yi = wrap_coord(xyz[3 * i + 1], L, periodic),
                     zi = wrap_coord(xyz[3 * i + 2], L, periodic), qi = qin[i];
        perm[at] = (int)i;
        double ctr[3], h;
        leaf_centre(k, depth, geom, ctr, &h);
        pk[at] = p2p_rec<R>{(R)(xi - ctr[0]), (R)(yi - ctr[1]), (R)(zi - ctr[2]), (R)qi};
        qs[0] = qi, qs[1] = fabs(qi);
    }
    if (i < nleaf) {
        const int2 s = lsum[i];
        const int c = cnt[i];
        cs[i] = s.x - c, ce[i] = s.x, chunk_end[i] = s.y;
        for (int ch = s.y - (c + 31) / 32; ch < s.y; ++ch) chunk_leaf[ch] = (int)i;
    }
    if (periodic) { /* (uniform over the block) */
        const int at[2] = {red_at(RED_Q), red_at(RED_QABS)};
        block_add(red, at, qs);
    }
}

/* periodic depth 0: whether the charges are compact (the P2P leaves the images to the root's M2L)
 */
__device__ __forceinline__ bool root_compact(const double *red, const double *geom) {
    return pbc_cluster_compact(red[red_at(RED_R2)], geom[G_SIDE]);
}

/* Depth 0, periodic (pbc/cluster.h): the cell centred on the charges, in two kernels over the
 * particles that stand for the binning's five graph nodes (one leaf: no sort). First the occupied
 * bins of each axis; then every block finds the centre from them and places its particles in
 * caller order, each wrapped to within L/2 of the centre, with the largest |Y|^2 (compactness)
 * and the cell's moments (in a tree k_place and the P2M sum them); block 0 writes the cell's corner
 * (geom), the leaf's range and chunk count, and a zero root multipole and local for the P2M's sums.
 * (Two kernels over all blocks are faster than one block doing all of it: docs/tuning.md.) */
__global__ void k_root_bins(long n, const double *__restrict__ xyz, const double *__restrict__ geom,
                            double *__restrict__ red) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const double L = geom[G_SIDE];
    unsigned long long o[3] = {0, 0, 0};
    if (i < n)
        for (int d = 0; d < 3; ++d) o[d] = 1ull << pbc_cluster_bin(xyz[3 * i + d], L);
    for (int d = 0; d < 3; ++d) {
        for (int s = 16; s > 0; s >>= 1) o[d] |= __shfl_xor_sync(0xffffffffu, o[d], s);
        if ((threadIdx.x & 31) == 0 && o[d])
            atomicOr((unsigned long long *)(red + red_at(RED_OCC + d)), o[d]);
    }
}

/* periodic depth 0: coordinate d of the cell's centre (with the tin-foil boundary, the middle of
   the charges' occupied bins; the vacuum boundary's dipole term is that of the charges wrapped
   into [0, L)^3, so there the centre of the box) */
__device__ __forceinline__ double root_centre(const double *red, double L, int tinfoil, int d) {
    return tinfoil ? pbc_cluster_centre(((const unsigned long long *)red)[red_at(RED_OCC + d)], L)
                   : 0.5 * L;
}

template <typename R>
__global__ void
k_root_place(long n, const double *__restrict__ xyz, const double *__restrict__ qin,
             double *__restrict__ geom, int *__restrict__ perm, p2p_rec<R> *__restrict__ pk,
             int *__restrict__ cs, int *__restrict__ ce, int *__restrict__ chunk_end,
             int *__restrict__ chunk_leaf, int tinfoil, int nc, double *__restrict__ W0,
             double *__restrict__ U0, double *__restrict__ red) {
    __shared__ double c[3];
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const double L = geom[G_SIDE];
    if (threadIdx.x < 3) c[threadIdx.x] = root_centre(red, L, tinfoil, threadIdx.x);
    __syncthreads();
    unsigned long long r2 = 0;
    double qi = 0.0, Y[3] = {0, 0, 0};
    if (i < n) {
        for (int d = 0; d < 3; ++d) Y[d] = pbc_cluster_offset(xyz[3 * i + d], c[d], L);
        qi = qin[i];
        const double y2 = Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2];
        perm[i] = (int)i;
        pk[i] = p2p_rec<R>{(R)Y[0], (R)Y[1], (R)Y[2], (R)qi};
        r2 = (unsigned long long)__double_as_longlong(y2);
    }
    for (int s = 16; s > 0; s >>= 1) {
        const unsigned long long b = __shfl_xor_sync(0xffffffffu, r2, s);
        r2 = b > r2 ? b : r2;
    }
    if ((threadIdx.x & 31) == 0 && r2) atomicMax((unsigned long long *)(red + red_at(RED_R2)), r2);
    double mom[6] = {0, 0, 0, 0, 0, 0};
    __shared__ double part[6][32];
    cell_moments_add(mom, qi, Y);
    cell_moments_store(red, mom, part);
    const int chunks = (int)((n + 31) / 32);
    if (i < chunks) chunk_leaf[i] = 0;
    if (blockIdx.x == 0) {
        for (int k = threadIdx.x; k < nc; k += blockDim.x) W0[k] = U0[k] = 0.0;
        if (threadIdx.x < 3) geom[G_LO + threadIdx.x] = c[threadIdx.x] - 0.5 * L;
        if (threadIdx.x == 0) cs[0] = 0, ce[0] = (int)n, chunk_end[0] = chunks;
    }
}

/* 1/sqrt(r2): in float the bare MUFU.RSQ, flushing a denormal r2 to 0 (rsqrtf also scales
 * denormal inputs, extra instructions on every pair; r2 < 1e-38 leaf sides^2 does not occur) */
__device__ __forceinline__ float pair_rsqrt(float r2) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(r2));
    return y;
}
__device__ __forceinline__ double pair_rsqrt(double r2) {
    return rsqrt(r2);
}

/* one pair: potential and field at the target of source s; CHECK: s may sit on the target
 * (r = 0, left out) */
template <typename R, bool CHECK>
__device__ __forceinline__ void p2p_pair(const p2p_rec<R> s, R tx, R ty, R tz, R &gp, R &gx, R &gy,
                                         R &gz) {
    const R dx = tx - s.x, dy = ty - s.y, dz = tz - s.z;
    const R r2 = dx * dx + dy * dy + dz * dz;
    const R rinv = CHECK ? (r2 > R(0) ? pair_rsqrt(r2) : R(0)) : pair_rsqrt(r2);
    const R qr = s.q * rinv, qr3 = qr * rinv * rinv;
    gp += qr, gx += qr3 * dx, gy += qr3 * dy, gz += qr3 * dz;
}

/* the pairs of one target with the staged sources k0, k0 + W, .. below cnt (cnt a multiple of
 * U; W = 1: all of them, unrolled) */
template <typename R, int U, bool CHECK>
__device__ __forceinline__ void p2p_pairs(const p2p_rec<R> *src, int k0, int cnt, int W, R tx, R ty,
                                          R tz, R &gp, R &gx, R &gy, R &gz) {
    if (W > 1) {
        for (int k = k0; k < cnt; k += W) p2p_pair<R, CHECK>(src[k], tx, ty, tz, gp, gx, gy, gz);
        return;
    }
#pragma unroll(U == 1 ? 4 : 1)
    for (int k0 = 0; k0 < cnt; k0 += U)
#pragma unroll
        for (int k = k0; k < k0 + U; ++k) p2p_pair<R, CHECK>(src[k], tx, ty, tz, gp, gx, gy, gz);
}

/* One block of NW warps per chunk of 32 target particles of a leaf (chunk_leaf: the chunk's leaf;
 * chunk_end: the inclusive sum of the leaves' chunk counts; blocks past the last chunk return),
 * so that a crowded leaf (a droplet in a large box) spreads over many blocks instead of looping
 * in one. Warp w takes the
 * neighbours w, w + NW, ... of the 27 (NW x more parallel work: a 24k box has only 512 leaves),
 * the warps' sums are added in a fixed order (deterministic). A chunk of r <= 16 targets (the
 * rest of a leaf beyond its full chunks, or a small leaf) gives each target W = 32 / r' lanes
 * (r' the power of 2 >= r), which split the sources and add their sums by shuffles in a fixed
 * order: a leaf of 36 atoms used to take two full passes over its neighbours, one of them for
 * 4 targets on 4 of the 32 lanes. Virial: the total force of each periodic image's sources on the
 * cell goes to fshift[27][3]. */
template <typename R, int NW>
__global__ void __launch_bounds__(32 * NW)
    k_p2p(const p2p_rec<R> *__restrict__ pk, const int *__restrict__ cs, const int *__restrict__ ce,
          const int *__restrict__ chunk_end, const int *__restrict__ chunk_leaf, int depth,
          int periodic, const double *__restrict__ geom, const double *__restrict__ red, long n,
          double *__restrict__ near, double *__restrict__ fshift) {
    /* the warps' source batches, then (after a barrier) their partial sums */
    __shared__ union {
        p2p_rec<R> src[NW][32];
        double part[NW][4][32];
    } sm;
    /* the 27 neighbours, found once per block: source range (empty where an open boundary has no
       neighbour), image code, offset of the source leaf's centre from the target leaf's */
    __shared__ int nb_b[27], nb_e[27], nb_code[27];
    __shared__ R nb_off[27][3];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int s = 1 << depth;
    const long nleaf = (long)s * s * s, item = blockIdx.x;
    if (item >= chunk_end[nleaf - 1]) return; /* the whole block */
    const long t = chunk_leaf[item];
    const R h = (R)(geom[G_SIDE] / s);
    if (threadIdx.x < 27) {
        const int nb = threadIdx.x,
                  tix[3] = {(int)(t % s), (int)(t / s % s), (int)(t / ((long)s * s))};
        const int a[3] = {nb % 3 - 1, nb / 3 % 3 - 1, nb / 9 - 1};
        int c[3], code = 0;
        bool skip = false;
        for (int d = 0, mul = 1; d < 3; ++d, mul *= 3) {
            c[d] = tix[d] + a[d];
            const int img = c[d] < 0 ? -1 : (c[d] >= s ? 1 : 0);
            if (img && !periodic) skip = true;
            c[d] -= img * s, code += mul * (img + 1);
            nb_off[nb][d] = a[d] * h;
        }
        const long sl = c[0] + (long)s * (c[1] + (long)s * c[2]);
        nb_b[nb] = skip ? 0 : cs[sl], nb_e[nb] = skip ? 0 : ce[sl], nb_code[nb] = code;
    }
    __syncthreads();
    p2p_rec<R> *src = sm.src[warp];
    const int tb = cs[t] + 32 * (int)(item - (t ? chunk_end[t - 1] : 0)), r = min(32, ce[t] - tb);
    int W = 32; /* lanes per target */
    while (W > 1 && r > 32 / W) W >>= 1;
    const int sub = lane & (W - 1), i = tb + lane / W;
    const bool ok = lane / W < r;
    const p2p_rec<R> pi = ok ? pk[i] : p2p_rec<R>{0, 0, 0, 0};
    R pt = 0, fx = 0, fy = 0, fz = 0;
    /* depth 0, open or with compact charges (pbc/cluster.h): the cell with itself only, its
       sources split among the warps (the 26 images act by M2L at the root) */
    const bool alone = depth == 0 && (!periodic || root_compact(red, geom));
    for (int it = alone ? 0 : warp; it < (alone ? 1 : 27); it += alone ? 1 : NW) {
        const int nb = alone ? 13 : it, code = nb_code[nb];
        int b = nb_b[nb], e = nb_e[nb];
        if (alone) {
            const long len = e - b;
            e = b + (int)(len * (warp + 1) / NW), b += (int)(len * warp / NW);
        }
        if (b == e) continue;
        /* target relative to the source leaf's centre */
        const R tx = pi.x - nb_off[nb][0], ty = pi.y - nb_off[nb][1], tz = pi.z - nb_off[nb][2];
        R gp = 0, gx = 0, gy = 0, gz = 0;
        /* Double: the inner loop runs in unrolled steps of 8 over sources padded with zero
         * charges (far enough that r2 stays positive and finite), which is faster. Float: no
         * padding (its P2P is bound by the arithmetic pipes, so padded pairs cost more than the
         * unrolling gains), unrolled by 4 with a remainder (docs/tuning.md). Only the target's own
         * leaf holds a pair at r = 0 (the target itself; coincident charges get equal keys, and
         * fmm_setpts refuses them), so only there is r2 tested. (In float, two charges of
         * neighbouring leaves closer than ~1e-7 h would round to r = 0 and give inf: README, mixed
         * mode.) */
        constexpr int U = sizeof(R) == 8 ? 8 : 1;
        const bool own = nb == 13;
        for (int sb = b; sb < e; sb += 32) {
            const int j = sb + lane, cnt = (min(32, e - sb) + U - 1) / U * U;
            __syncwarp();
            src[lane] = j < e ? pk[j] : p2p_rec<R>{R(1e3), R(1e3), R(1e3), R(0)};
            __syncwarp();
            if (!ok) continue;
            if (own)
                p2p_pairs<R, U, true>(src, sub, cnt, W, tx, ty, tz, gp, gx, gy, gz);
            else
                p2p_pairs<R, U, false>(src, sub, cnt, W, tx, ty, tz, gp, gx, gy, gz);
        }
        pt += gp, fx += gx, fy += gy, fz += gz;
        if (fshift && code != 13) {
            warp_add(fshift + red_at(3 * code), (double)(pi.q * gx));
            warp_add(fshift + red_at(3 * code + 1), (double)(pi.q * gy));
            warp_add(fshift + red_at(3 * code + 2), (double)(pi.q * gz));
        }
    }
    for (int o = 1; o < W; o <<= 1) { /* the W lanes of a target: every one gets their sum */
        pt += __shfl_xor_sync(0xffffffffu, pt, o), fx += __shfl_xor_sync(0xffffffffu, fx, o);
        fy += __shfl_xor_sync(0xffffffffu, fy, o), fz += __shfl_xor_sync(0xffffffffu, fz, o);
    }
    __syncthreads(); /* every warp is done with its sources */
    double(*part)[4][32] = sm.part;
    part[warp][0][lane] = pt, part[warp][1][lane] = fx, part[warp][2][lane] = fy, part[warp][3][lane] = fz;
    __syncthreads();
    if (warp == 0 && ok && sub == 0)
        for (int k = 0; k < 4; ++k) {
            double v = 0.0;
#pragma unroll
            for (int w = 0; w < NW; ++w) v += part[w][k][lane];
            near[k * n + i] = v;
        }
}

/* periodic, depth >= 1: U_root = RT[0]^T W_root (root_operators), after the M2M chain, by one block
 * of 8 warps; at depth 0 the P2M applies the operator itself. */
__global__ void k_lattice(int nc, const double *__restrict__ RT, const double *__restrict__ W0,
                          double *__restrict__ U0) {
    __shared__ double w[hd_ncoef(FMM_GPU_PMAX)], part[8 * 32];
    for (int j = threadIdx.x; j < nc; j += blockDim.x) w[j] = W0[j];
    __syncthreads();
    block_root_local<8>(RT, w, nc, part, U0, false);
}

/* ---------------------------------------------------------------- outputs */

/* the excluded pairs' direct terms, for the outputs pass to take out (term: caller order,
 * phi[natoms] then the field [natoms][3]), and their energy out of RED_ENERGY; their virial into
 * RED_XVIR for the host to subtract. It needs only the positions, so it runs beside the placement
 * and the P2P (after them, on the tree chain's stream, it lengthened a small MD step:
 * docs/tuning.md) */
__global__ void k_exclusions(long natoms, const int *__restrict__ start, const int *__restrict__ partner,
                             const double *__restrict__ xyz, const double *__restrict__ q, int periodic,
                             const double *__restrict__ geom, double *__restrict__ red, double *__restrict__ term) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const double L = periodic ? geom[G_SIDE] : 0.0;
    double acc[EXCL_N] = {0};
    if (i < natoms) {
        for (int k = start[i]; k < start[i + 1]; ++k) {
            const long j = partner[k];
            excl_term(xyz[3 * i] - xyz[3 * j], xyz[3 * i + 1] - xyz[3 * j + 1], xyz[3 * i + 2] - xyz[3 * j + 2], L,
                      q[i], q[j], acc);
        }
        term[i] = acc[EXCL_PHI];
        for (int d = 0; d < 3; ++d) term[natoms + 3 * i + d] = acc[EXCL_E + d];
    }
    const double v[10] = {-acc[EXCL_ENERGY], acc[EXCL_VIR], acc[EXCL_VIR + 1], acc[EXCL_VIR + 2], acc[EXCL_VIR + 3],
                          acc[EXCL_VIR + 4], acc[EXCL_VIR + 5], acc[EXCL_VIR + 6], acc[EXCL_VIR + 7], acc[EXCL_VIR + 8]};
    const int at[10] = {red_at(RED_ENERGY),   red_at(RED_XVIR),     red_at(RED_XVIR + 1),
                        red_at(RED_XVIR + 2), red_at(RED_XVIR + 3), red_at(RED_XVIR + 4),
                        red_at(RED_XVIR + 5), red_at(RED_XVIR + 6), red_at(RED_XVIR + 7),
                        red_at(RED_XVIR + 8)};
    block_add(red, at, v);
}

/* ---------------------------------------------------------------- periodic virial about the middle
 */

/* The periodic virial's sum_i F_i (x) Y_i may take Y about any point, since sum_i F_i = 0; about
 * the cell's centre (the L2P's sum, RED_VIR) its terms are |Y| / extent times larger than the sum
 * and lose as many digits where the charges fill a small part of a large cell. There (their
 * middle more than 2^16 of their extent from the centre) it is taken about the middle instead, as
 * the CPU does (fmm/fmm.c periodic_virial_cpu): k_virial_extent finds the extent, k_virial_far
 * sums about its middle, from the positions themselves (the leaf-relative records would add a
 * leaf centre's rounding to every Y). Both run in the virial's graph only. */

/* coordinate d of position v in the frame of the cell's virial: wrapped into [0, L) in a tree
 * (cell centre lo + L/2), relative to the cell's centre at periodic depth 0 (k_root_place's Y) */
__device__ __forceinline__ double virial_coord(double v, int d, int depth, int tinfoil,
                                               const double *geom, const double *red) {
    const double L = geom[G_SIDE];
    return depth ? wrap_coord(v, L, 1) : pbc_cluster_offset(v, root_centre(red, L, tinfoil, d), L);
}

/* a double as an unsigned key of the same order (the zeroed word is below every key of a number) */
__device__ __forceinline__ unsigned long long virial_key(double v) {
    const unsigned long long u = (unsigned long long)__double_as_longlong(v);
    return u >> 63 ? ~u : u | 0x8000000000000000ull;
}
__device__ __forceinline__ double virial_unkey(unsigned long long k) {
    return __longlong_as_double((long long)(k >> 63 ? k & 0x7fffffffffffffffull : ~k));
}

/* RED_LOHI + d: the largest key of u_d; RED_LOHI + 3 + d: of -u_d (u: virial_coord) */
__global__ void k_virial_extent(long n, const double *__restrict__ xyz, int depth, int tinfoil,
                                const double *__restrict__ geom, double *__restrict__ red) {
    __shared__ unsigned long long top[6];
    if (threadIdx.x < 6) top[threadIdx.x] = 0;
    __syncthreads();
    unsigned long long k[6] = {0, 0, 0, 0, 0, 0};
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        for (int d = 0; d < 3; ++d) {
            const double u = virial_coord(xyz[3 * i + d], d, depth, tinfoil, geom, red);
            k[d] = max(k[d], virial_key(u)), k[3 + d] = max(k[3 + d], virial_key(-u));
        }
    for (int m = 0; m < 6; ++m) {
        for (int o = 16; o > 0; o >>= 1) k[m] = max(k[m], __shfl_xor_sync(0xffffffffu, k[m], o));
        if ((threadIdx.x & 31) == 0 && k[m]) atomicMax(top + m, k[m]);
    }
    __syncthreads();
    if (threadIdx.x < 6 && top[threadIdx.x])
        atomicMax((unsigned long long *)(red + red_at(RED_LOHI + threadIdx.x)), top[threadIdx.x]);
}

/* Where the charges' middle g is more than 2^16 of their extent from the cell's centre: RED_FAR
 * set, and RED_VIRG = sum_i q_i E_i (x) (u_i - g) from the outputs (caller order, out: phi[n],
 * then the field [n][3]) with the excluded pairs' terms added back (the L2P's sum has them; the
 * host subtracts their pair virial) */
__global__ void k_virial_far(long n, const double *__restrict__ xyz, const double *__restrict__ q,
                             const double *__restrict__ out, const double *__restrict__ xterm,
                             long nx, int depth, int tinfoil, const double *__restrict__ geom,
                             double *__restrict__ red) {
    const unsigned long long *key = (const unsigned long long *)red;
    double g[3], off = 0.0, ext = 0.0;
    for (int d = 0; d < 3; ++d) {
        const double hi = virial_unkey(key[red_at(RED_LOHI + d)]),
                     lo = -virial_unkey(key[red_at(RED_LOHI + 3 + d)]);
        const double centre = depth ? geom[G_LO + d] + 0.5 * geom[G_SIDE] : 0.0;
        g[d] = 0.5 * (lo + hi);
        off = fmax(off, fabs(g[d] - centre)), ext = fmax(ext, hi - lo);
    }
    if (!(off > 0x1p16 * ext)) return; /* (uniform over the grid) */
    if (blockIdx.x == 0 && threadIdx.x == 0) red[red_at(RED_FAR)] = 1.0;
    double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        double Y[3], F[3];
        for (int d = 0; d < 3; ++d) {
            Y[d] = virial_coord(xyz[3 * i + d], d, depth, tinfoil, geom, red) - g[d];
            F[d] = q[i] * (out[n + 3 * i + d] + (xterm && i < nx ? xterm[nx + 3 * i + d] : 0.0));
        }
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) v[3 * a + b] += F[a] * Y[b];
    }
    int at[9];
    for (int k = 0; k < 9; ++k) at[k] = red_at(RED_VIRG + k);
    block_add(red, at, v);
}

/* single-precision caller data: widened on the way in, rounded on the way out */
template <typename A, typename B> __global__ void k_convert(long n, const A *__restrict__ a, B *__restrict__ b) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) b[i] = (B)a[i];
}
template <typename A, typename B> static int convert(long n, const A *a, B *b, cudaStream_t st) {
    const long nb = (n + 255) / 256;
    k_convert<A, B><<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(n, a, b);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* positions that the caller keeps on the device: widened, and *bad set where one is not finite
   (the host never sees them; a NaN is binned like 0 and poisons the sums, not the memory) */
__global__ void k_widen_check(long n, const float *__restrict__ a, double *__restrict__ b,
                              int *__restrict__ bad) {
    int nonfinite = 0;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        b[i] = a[i];
        nonfinite |= !isfinite(a[i]);
    }
    if (__syncthreads_or(nonfinite) && threadIdx.x == 0) *bad = 1;
}

/* q_i E_i * scale as float, caller order (out: phi[n], then the field [3n]) */
__global__ void k_forces(long n, const double *__restrict__ q, const double *__restrict__ out,
                         double scale, float *__restrict__ f) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < 3 * n;
         i += (long)gridDim.x * blockDim.x)
        f[i] = (float)(scale * q[i / 3] * out[n + i]);
}

/* the caller's device positions into xyz, bad reset and set where one is not finite */
static int launch_widen(fmm_gpu *g, const float *dx, cudaStream_t st) {
    CU(cudaMemsetAsync(g->bad, 0, sizeof(int), st));
    const long nb = (3 * g->n + 255) / 256;
    k_widen_check<<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(3 * g->n, dx, g->xyz, g->bad);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* device positions that no evaluation has read yet: widened now, ahead of work that does not read
   them itself */
static int take_dev_xyz(fmm_gpu *g, cudaStream_t st) {
    if (g->dev_xyz) TRY(launch_widen(g, g->dev_xyz, st));
    g->dev_xyz = NULL;
    return FMM_OK;
}

static int launch_forces(fmm_gpu *g, double scale, float *df, cudaStream_t st) {
    const long nb = (3 * g->n + 255) / 256;
    k_forces<<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(g->n, g->qin, g->out, scale, df);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* ---------------------------------------------------------------- per-order dispatch */

/* the per-order kernels live in fmm_cuda_orders_*.cu (five translation units compiled in parallel) */
static_assert(FMM_GPU_PMAX == 20, "order_table covers the orders 1..20");
static order_kernels order_table(int p) {
    if (p <= 12) return fmm_gpu_orders_1_12(p);
    if (p <= 14) return fmm_gpu_orders_13_14(p);
    if (p <= 16) return fmm_gpu_orders_15_16(p);
    if (p <= 18) return fmm_gpu_orders_17_18(p);
    return fmm_gpu_orders_19_20(p);
}

/* ---------------------------------------------------------------- host side */

static int upload(double **d, const double *h, size_t count) {
    CU(cudaMalloc((void **)d, sizeof(double) * count));
    CU(cudaMemcpy(*d, h, sizeof(double) * count, cudaMemcpyHostToDevice));
    return FMM_OK;
}

/* The periodic images beyond the 27 nearest act on the root through the lattice operator Lambda on
 * the neutralised multipole, U = Lambda (W - Q b) with the charge term dropped (Q = W_0, b the
 * background's multipole: pbc/lattice.h), and with compact charges at depth 0 the 26 nearest images
 * add N W (pbc/cluster.h). Both are linear in W: RT[i] = (Lambda (I - b e_0^T) with column 0 of
 * Lambda dropped, + i N), transposed to [in][out] so that lanes over the outputs read it along
 * rows. One matrix per case instead of three operands: at depth 0 each P2M warp applies it to its
 * own share of W (k_p2m), which saves the root's lattice kernel on the path to the L2P. */
static int root_operators(const fmm_gpu_setup *s, int nc, double **d) {
    const size_t nn = (size_t)nc * nc;
    double *h = (double *)malloc(sizeof(double) * 2 * nn);
    if (!h) return FMM_ERR_NOMEM;
    for (int k = 0; k < nc; ++k) {
        const double *lk = s->lattice + (size_t)k * nc;
        double b = 0.0;
        for (int j = 1; j < nc; ++j) b += lk[j] * s->bg[j];
        for (int j = 0; j < nc; ++j) {
            const double m = j ? lk[j] : -b;
            h[(size_t)j * nc + k] = m;
            h[nn + (size_t)j * nc + k] = m + s->near[(size_t)k * nc + j];
        }
    }
    int rc = upload(d, h, 2 * nn);
    free(h);
    return rc;
}

/* dense child<->parent translation of each octant o (bit a set: child in the upper half of
 * axis a), transposed to [in][out] */
static int child_matrices(int p, int up, double **d) {
    const int nc = harm_ncoef(p);
    const size_t nn = (size_t)nc * nc;
    double *A = (double *)malloc(sizeof(double) * nn), *T = (double *)malloc(sizeof(double) * 8 * nn);
    int rc = FMM_ERR_NOMEM;
    if (A && T) {
        for (int o = 0; o < 8; ++o) {
            const double s[3] = {o & 1 ? 0.25 : -0.25, o & 2 ? 0.25 : -0.25, o & 4 ? 0.25 : -0.25};
            if (up)
                harm_m2m_matrix(p, s, A);
            else
                harm_l2l_matrix(p, s, A);
            for (int k = 0; k < nc; ++k)
                for (int j = 0; j < nc; ++j) T[o * nn + (size_t)j * nc + k] = A[(size_t)k * nc + j];
        }
        rc = upload(d, T, 8 * nn);
    }
    free(A), free(T);
    return rc;
}

extern "C" int fmm_gpu_auto_depth(long n, int p) {
    const double per_leaf = p <= 8 ? 32.0 : 64.0;
    const double d = log((double)n / per_leaf) / log(8.0);
    int D = (int)floor(d + 0.5);
    return D < 0 ? 0 : (D > 8 ? 8 : D);
}

/* The captured evaluation graphs hold the device buffers' addresses: whatever frees or moves a
 * buffer drops them (a setpts that ran out of memory, then one of the earlier size and depth,
 * would otherwise replay a graph on freed memory). */
static void drop_graphs(fmm_gpu *g) {
    for (int v = 0; v < GRAPH_N; ++v) {
        if (g->exec[v]) cudaGraphExecDestroy(g->exec[v]);
        g->exec[v] = NULL;
    }
}

/* The buffers that depend on the point count and the depth, in four groups: each group's
 * alloc_ frees it and allocates it anew when it must grow; a failed setpts frees all four. */
static void free_particles(fmm_gpu *g) {
    drop_graphs(g);
    void *ptrs[] = {g->xyz, g->qin, g->key,  g->rank, g->perm,
                    g->pk,  g->far, g->near, g->out,  g->stage};
    for (void *p : ptrs) cudaFree(p);
    g->xyz = g->qin = g->far = g->near = g->out = NULL;
    g->stage = NULL;
    g->key = NULL, g->rank = g->perm = NULL, g->pk = NULL;
    g->cap = 0;
}

static void free_tree(fmm_gpu *g) {
    drop_graphs(g);
    void *ptrs[] = {g->W, g->U, g->cs, g->ce, g->cnt, g->lsum, g->chunk_end, g->stmp};
    for (void *p : ptrs) cudaFree(p);
    g->W = g->U = NULL, g->cs = g->ce = g->cnt = g->chunk_end = NULL, g->lsum = NULL, g->stmp = NULL, g->cap_box = 0;
}

static void free_chunk_leaf(fmm_gpu *g) {
    drop_graphs(g);
    cudaFree(g->chunk_leaf);
    g->chunk_leaf = NULL, g->cap_chunk = 0;
}

static void free_sym_plans(fmm_gpu *g) {
    drop_graphs(g);
    for (int l = 0; l < 11; ++l) {
        m2l_gpu_symmetric_free(g->sym[l]);
        g->sym[l] = NULL;
    }
    m2l_gpu_halo_free(g->halo);
    g->halo = NULL;
    g->sym_depth = -1;
}

extern "C" void fmm_gpu_destroy(fmm_gpu *g) {
    if (!g) return;
    free_particles(g), free_tree(g), free_chunk_leaf(g), free_sym_plans(g);
    m2l_gpu_ops_free(&g->m2l);
    void *ptrs[] = {g->m2mT, g->l2lT, g->root_op, g->geom, g->red, g->bad, g->xstart, g->xpartner, g->xterm};
    for (void *p : ptrs) cudaFree(p);
    if (g->s0) cudaStreamDestroy(g->s0);
    if (g->s1) cudaStreamDestroy(g->s1);
    if (g->s2) cudaStreamDestroy(g->s2);
    if (g->simg) cudaStreamDestroy(g->simg);
    if (g->sx) cudaStreamDestroy(g->sx);
    if (g->forki) cudaEventDestroy(g->forki);
    if (g->joini) cudaEventDestroy(g->joini);
    if (g->forkx) cudaEventDestroy(g->forkx);
    if (g->joinx) cudaEventDestroy(g->joinx);
    if (g->fork) cudaEventDestroy(g->fork);
    if (g->join) cudaEventDestroy(g->join);
    if (g->fork2) cudaEventDestroy(g->fork2);
    if (g->join2) cudaEventDestroy(g->join2);
    if (g->t0) cudaEventDestroy(g->t0);
    if (g->t1) cudaEventDestroy(g->t1);
    if (g->forkl) cudaEventDestroy(g->forkl);
    if (g->sw) cudaEventDestroy(g->sw);
    for (int l = 0; l < 11; ++l) {
        if (g->sl[l]) cudaStreamDestroy(g->sl[l]);
        if (g->joinl[l]) cudaEventDestroy(g->joinl[l]);
    }
    free(g);
}

static int create(const fmm_gpu_setup *s, fmm_gpu *g) {
    const int p = s->p, nc = harm_ncoef(p);
    g->p = p, g->nc = nc, g->periodic = s->periodic, g->tinfoil = s->tinfoil, g->mixed = s->mixed;
    TRY(m2l_gpu_ops_init(&g->m2l, s->ops, 0));
    TRY(child_matrices(p, 1, &g->m2mT));
    TRY(child_matrices(p, 0, &g->l2lT));
    if (s->periodic) TRY(root_operators(s, nc, &g->root_op));
    CU(cudaMalloc((void **)&g->geom, sizeof(double) * G_N));
    CU(cudaMalloc((void **)&g->red, sizeof(double) * red_at(RED_N)));
    CU(cudaMalloc((void **)&g->bad, sizeof(int)));
    /* the device's greatest stream priorities: in an MD step the FMM shares the GPU with the
     * short-range kernels, and its result is what the host waits for. The graph keeps each node's
     * priority (cudaGraphInstantiateFlagUseNodePriority), so where the lanes wait for a
     * multiprocessor together, the tree chain's blocks go first, then the P2P's, then the finest
     * M2L level's (see FMM_PRIO_FINEST; docs/tuning.md). The M2L kernels are not put at the
     * lowest priority: in an MD step they would then queue behind the short-range kernels. */
    int least, greatest;
    CU(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (int k = 0; k < 3; ++k) { /* greatest is the numerically smallest */
        const int step = k == 0 ? 0 : (k == 1 ? FMM_PRIO_FINEST : FMM_PRIO_P2P);
        g->prio[k] = greatest + step < least ? greatest + step : least;
    }
    CU(cudaStreamCreateWithPriority(&g->s0, cudaStreamNonBlocking, g->prio[0]));
    CU(cudaStreamCreateWithPriority(&g->s1, cudaStreamNonBlocking, g->prio[2]));
    CU(cudaStreamCreateWithPriority(&g->s2, cudaStreamNonBlocking, g->prio[1]));
    CU(cudaStreamCreateWithPriority(&g->simg, cudaStreamNonBlocking, g->prio[1]));
    CU(cudaStreamCreateWithPriority(&g->sx, cudaStreamNonBlocking, g->prio[1]));
    CU(cudaEventCreateWithFlags(&g->forki, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->joini, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->forkx, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->joinx, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->fork2, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->join2, cudaEventDisableTiming));
    CU(cudaEventCreate(&g->t0));
    CU(cudaEventCreate(&g->t1));
    CU(cudaEventCreateWithFlags(&g->forkl, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&g->sw, cudaEventDisableTiming));
    for (int l = 0; l < 11; ++l) {
        CU(cudaStreamCreateWithPriority(&g->sl[l], cudaStreamNonBlocking, g->prio[0]));
        CU(cudaEventCreateWithFlags(&g->joinl[l], cudaEventDisableTiming));
    }
    /* shared-memory opt-ins of this order's kernels, outside any capture */
    order_kernels K = order_table(p);
    CU(cudaFuncSetAttribute((const void *)K.m2m, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)(sizeof(double) * PB * 8 * nc)));
    CU(cudaFuncSetAttribute((const void *)K.images, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            img_smem_bytes(p)));
    return FMM_OK;
}

extern "C" int fmm_gpu_create(const fmm_gpu_setup *s, fmm_gpu **out) {
    *out = NULL;
    if (s->p < 1 || s->p > FMM_GPU_PMAX) return FMM_ERR_ORDER;
    if (fmm_cuda_device_count() < 1) return FMM_ERR_DEVICE;
    fmm_gpu *g = (fmm_gpu *)calloc(1, sizeof *g);
    if (!g) return FMM_ERR_NOMEM;
    g->sym_depth = -1;
    int rc = create(s, g);
    if (rc) {
        fmm_gpu_destroy(g);
        return rc;
    }
    *out = g;
    return FMM_OK;
}

static int alloc_particles(fmm_gpu *g, long n) {
    if (n <= g->cap) return FMM_OK;
    free_particles(g);
    CU(cudaMalloc((void **)&g->xyz, sizeof(double) * 3 * n));
    CU(cudaMalloc((void **)&g->qin, sizeof(double) * n));
    CU(cudaMalloc((void **)&g->stage, sizeof(float) * 4 * n));
    CU(cudaMalloc((void **)&g->key, sizeof(unsigned) * n));
    CU(cudaMalloc((void **)&g->rank, sizeof(int) * n));
    CU(cudaMalloc((void **)&g->perm, sizeof(int) * n));
    CU(cudaMalloc(&g->pk, g->mixed ? sizeof(p2p_rec<float>) * n : sizeof(p2p_rec<double>) * n));
    CU(cudaMalloc((void **)&g->far, sizeof(double) * 4 * n));
    CU(cudaMalloc((void **)&g->near, sizeof(double) * 4 * n));
    CU(cudaMalloc((void **)&g->out, sizeof(double) * 4 * n));
    g->cap = n;
    return FMM_OK;
}

static int alloc_tree(fmm_gpu *g, int depth) {
    const long nleaf = 1L << (3 * depth), nbox = level_offset(depth + 1);
    if (nbox <= g->cap_box) return FMM_OK;
    free_tree(g);
    CU(cudaMalloc((void **)&g->W, sizeof(double) * g->nc * nbox));
    CU(cudaMalloc((void **)&g->U, sizeof(double) * g->nc * nbox));
    CU(cudaMalloc((void **)&g->cs, sizeof(int) * nleaf));
    CU(cudaMalloc((void **)&g->ce, sizeof(int) * nleaf));
    CU(cudaMalloc((void **)&g->cnt, sizeof(int) * nleaf));
    CU(cudaMalloc((void **)&g->lsum, sizeof(int2) * nleaf));
    CU(cudaMalloc((void **)&g->chunk_end, sizeof(int) * nleaf));
    g->stmp_bytes = 0;
    CU(cub::DeviceScan::InclusiveScan(NULL, g->stmp_bytes, leaf_count_iter(g->cnt, leaf_counts()), g->lsum, int2_sum(),
                                      (int)nleaf));
    CU(cudaMalloc(&g->stmp, g->stmp_bytes));
    g->cap_box = nbox;
    return FMM_OK;
}

static inline unsigned blocks(long n, int t) { return (unsigned)((n + t - 1) / t); }

/* the chunk -> leaf map: at most n / 32 + 1 chunks per leaf count (ceil), nleaf + n / 32 in all */
static int alloc_chunk_leaf(fmm_gpu *g, long n, int depth) {
    const long need = (1L << (3 * depth)) + (n + 31) / 32;
    if (need <= g->cap_chunk) return FMM_OK;
    free_chunk_leaf(g);
    CU(cudaMalloc((void **)&g->chunk_leaf, sizeof(int) * need));
    g->cap_chunk = need;
    return FMM_OK;
}

static int m2l_level(fmm_gpu *g, int l, cudaStream_t st) {
    const double *W = g->W + level_offset(l) * g->nc;
    double *U = g->U + level_offset(l) * g->nc;
    return g->sym[l] ? m2l_gpu_symmetric_run(g->sym[l], W, U, st)
                     : m2l_gpu_halo_run(g->halo, W, U, st);
}

/* the symmetric M2L plans of the levels with M2L (periodic 1..depth, open 2..depth) */
static int sym_plans(fmm_gpu *g, int depth) {
    if (g->sym_depth == depth) return FMM_OK;
    free_sym_plans(g);
    for (int l = g->periodic ? 1 : 2; l <= depth; ++l) {
        if (l == depth && g->mixed && l >= FMM_HALO_LEVEL &&
            m2l_gpu_halo_supported(g->p, l, g->m2l.cc)) {
            TRY(m2l_gpu_halo_plan(&g->m2l, l, g->periodic, &g->halo));
            continue;
        }
        const int coarse = l < depth && depth >= FMM_COARSE_NARROW_DEPTH;
        TRY(m2l_gpu_symmetric_plan(&g->m2l, l, g->periodic, g->mixed && g->p <= M2L_SYM_FLOAT_PMAX,
                                   coarse ? FMM_COARSE_SPREAD : 0,
                                   l < depth ? g->prio[0] : g->prio[1], &g->sym[l]));
    }
    g->sym_depth = depth;
    return FMM_OK;
}

template <typename R> static void launch_place(const fmm_gpu *g, cudaStream_t st) {
    if (g->periodic && g->depth == 0) {
        k_root_bins<<<blocks(g->n, 256), 256, 0, st>>>(g->n, g->xyz, g->geom, g->red);
        k_root_place<R><<<blocks(g->n, 256), 256, 0, st>>>(
            g->n, g->xyz, g->qin, g->geom, g->perm, (p2p_rec<R> *)g->pk, g->cs, g->ce, g->chunk_end,
            g->chunk_leaf, g->tinfoil, g->nc, g->W, g->U, g->red);
        return;
    }
    const long nleaf = 1L << (3 * g->depth);
    k_place<R><<<blocks(g->n > nleaf ? g->n : nleaf, 256), 256, 0, st>>>(
        g->n, nleaf, g->depth, g->key, g->rank, g->cnt, g->lsum, g->geom, g->periodic, g->xyz,
        g->qin, g->perm, (p2p_rec<R> *)g->pk, g->cs, g->ce, g->chunk_end, g->chunk_leaf, g->red);
}

/* small trees get more warps per chunk to fill the device (24k water: 512 leaves; at depth 0
 * the warps split the one leaf's sources, 32 of them: docs/tuning.md); the grid is the most chunks
 * n particles can make in nleaf leaves */
template <typename R> static void launch_p2p(const fmm_gpu *g, double *fshift, cudaStream_t st) {
    const long nl = 1L << (3 * g->depth);
    const unsigned nb = (unsigned)(nl + (g->n + 31) / 32);
    const p2p_rec<R> *pk = (const p2p_rec<R> *)g->pk;
    if (g->depth == 0)
        k_p2p<R, 32><<<nb, 1024, 0, st>>>(pk, g->cs, g->ce, g->chunk_end, g->chunk_leaf, g->depth,
                                          g->periodic, g->geom, g->red, g->n, g->near, fshift);
    else if (g->depth <= P2P_WIDE_DEPTH)
        k_p2p<R, 8><<<nb, 256, 0, st>>>(pk, g->cs, g->ce, g->chunk_end, g->chunk_leaf, g->depth,
                                        g->periodic, g->geom, g->red, g->n, g->near, fshift);
    else
        k_p2p<R, 4><<<nb, 128, 0, st>>>(pk, g->cs, g->ce, g->chunk_end, g->chunk_leaf, g->depth,
                                        g->periodic, g->geom, g->red, g->n, g->near, fshift);
}

/* the virial's periodic image forces through the V lists of the levels l1..depth (they read only
   the multipoles, and only the host reads fshift) */
static int launch_images(fmm_gpu *g, int l1, double *fshift, cudaStream_t st) {
    order_kernels K = order_table(g->p);
    for (int l = l1; l <= g->depth; ++l)
        K.images<<<8 * M2L_VLIST, IMG_TB, img_smem_bytes(g->p), st>>>(
            g->m2l.cls, g->m2l.sign, g->m2l.vlist, l, g->geom, g->W + level_offset(l) * g->nc,
            fshift);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* the periodic virial's sum about the charges' middle (k_virial_extent on st_extent, beside the
   downward pass; k_virial_far on st after the outputs and the extent) */
static int launch_virial_extent(fmm_gpu *g, cudaStream_t st) {
    const unsigned nb = blocks(g->n, 256) < 1024 ? blocks(g->n, 256) : 1024;
    k_virial_extent<<<nb, 256, 0, st>>>(g->n, g->xyz, g->depth, g->tinfoil, g->geom, g->red);
    CU(cudaGetLastError());
    return FMM_OK;
}
static int launch_virial_far(fmm_gpu *g, cudaStream_t st) {
    const unsigned nb = blocks(g->n, 256) < 1024 ? blocks(g->n, 256) : 1024;
    k_virial_far<<<nb, 256, 0, st>>>(g->n, g->xyz, g->qin, g->out, g->xatoms ? g->xterm : NULL,
                                     g->xatoms, g->depth, g->tinfoil, g->geom, g->red);
    CU(cudaGetLastError());
    return FMM_OK;
}

static int launch_exclusions(fmm_gpu *g, cudaStream_t st) {
    k_exclusions<<<blocks(g->xatoms, 256), 256, 0, st>>>(g->xatoms, g->xstart, g->xpartner, g->xyz, g->qin,
                                                         g->periodic, g->geom, g->red, g->xterm);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* the whole evaluation, queued on s0, s1 for the near field and s2 for the finest M2L level
 * (it needs only the leaf multipoles, so it runs beside the M2M chain and the coarser levels;
 * the last L2L, which adds into the same local expansions, waits for it), and with the virial
 * simg for the periodic image forces (launch_images), sx for the excluded pairs; with ev (profiling,
 * not captured) everything goes on s0 in stage order and ev[0..FMM_GPU_NSTAGE] mark the stage
 * boundaries */
#define MARK(k) \
    if (ev) CU(cudaEventRecord(ev[k], s0))
static int enqueue(fmm_gpu *g, cudaEvent_t *ev, int virial, const dev_route *dr) {
    const long n = g->n;
    const int D = g->depth, nc = g->nc;
    const long nleaf = 1L << (3 * D);
    cudaStream_t s0 = g->s0, s1 = ev ? g->s0 : g->s1;
    order_kernels K = order_table(g->p);
    /* periodic depth 0: two kernels centre the cell and place the particles (k_root_bins,
     * k_root_place) */
    const bool root = g->periodic && D == 0;
    MARK(0);
    if (dr) TRY(launch_widen(g, dr->dx, s0));
    CU(cudaMemsetAsync(g->red, 0, sizeof(double) * red_at(RED_N), s0));
    const bool excl = g->xatoms > 0;
    if (excl && !ev) {
        CU(cudaEventRecord(g->forkx, s0));
        CU(cudaStreamWaitEvent(g->sx, g->forkx, 0));
        TRY(launch_exclusions(g, g->sx));
        CU(cudaEventRecord(g->joinx, g->sx));
    }
    if (!root) {
        CU(cudaMemsetAsync(g->cnt, 0, sizeof(int) * nleaf, s0));
        k_bin<<<blocks(n, 256), 256, 0, s0>>>(n, g->xyz, g->geom, g->periodic, D, g->key, g->cnt,
                                              g->rank);
        size_t sb = g->stmp_bytes;
        CU(cub::DeviceScan::InclusiveScan(g->stmp, sb, leaf_count_iter(g->cnt, leaf_counts()),
                                          g->lsum, int2_sum(), (int)nleaf, s0));
        if (D == 0)
            CU(cudaMemsetAsync(g->W, 0, sizeof(double) * nc, s0)); /* the P2M adds into it */
    }
    if (g->mixed)
        launch_place<float>(g, s0);
    else
        launch_place<double>(g, s0);
    CU(cudaGetLastError());
    MARK(1);
    /* near field on s1 */
    CU(cudaEventRecord(g->fork, s0));
    CU(cudaStreamWaitEvent(s1, g->fork, 0));
    double *fshift = virial && g->periodic ? g->red + red_at(RED_FSHIFT) : NULL;
    if (g->mixed)
        launch_p2p<float>(g, fshift, s1);
    else
        launch_p2p<double>(g, fshift, s1);
    CU(cudaGetLastError());
    if (excl && ev) TRY(launch_exclusions(g, s0));
    CU(cudaEventRecord(g->join, s1));
    MARK(2);
    /* far field on s0 */
    const unsigned pgrid =
        D ? blocks(nleaf, 4) : blocks(n, 128); /* warps: one per leaf, or per 32 at depth 0 */
    K.p2m[g->mixed]<<<pgrid, 128, 0, s0>>>(g->pk, g->cs, g->ce, D, g->geom,
                                           g->W + level_offset(D) * nc, root ? g->root_op : NULL,
                                           g->U, g->red, g->periodic && !root);
    MARK(3);
    const int split = !ev && D >= (g->periodic ? 1 : 2); /* the finest level has M2L: on s2 */
    if (split) {
        CU(cudaEventRecord(g->fork2, s0));
        CU(cudaStreamWaitEvent(g->s2, g->fork2, 0));
        TRY(m2l_level(g, D, g->s2));
        CU(cudaEventRecord(g->join2, g->s2));
    }
    for (int l = D - 1; l >= 0; --l)
        K.m2m<<<blocks(1L << (3 * l), PB), TB_TREE, sizeof(double) * PB * 8 * nc, s0>>>(
            g->m2mT, l, g->W + level_offset(l + 1) * nc, g->W + level_offset(l) * nc);
    CU(cudaGetLastError());
    MARK(4);
    /* the coarse levels' M2L read W and write U of their own level only: side by side, each
     * forking its sign-group kernels from its own stream (one after another they were a chain of
     * latency-bound launches) */
    const int l1 = g->periodic ? 1 : 2;
    /* the virial's image forces need the multipoles only: beside the M2L and the downward pass,
       joined at the end */
    const cudaStream_t si = ev ? s0 : g->simg;
    if (fshift && !ev) {
        CU(cudaEventRecord(g->forki, s0));
        CU(cudaStreamWaitEvent(si, g->forki, 0));
    }
    if (fshift) TRY(launch_virial_extent(g, si));
    if (fshift) TRY(launch_images(g, l1, fshift, si));
    if (fshift && !ev) CU(cudaEventRecord(g->joini, si));
    if (!ev) CU(cudaEventRecord(g->forkl, s0));
    for (int l = l1; l <= D - split; ++l) {
        cudaStream_t sl = ev ? s0 : g->sl[l];
        if (!ev) CU(cudaStreamWaitEvent(sl, g->forkl, 0));
        TRY(m2l_level(g, l, sl));
        if (!ev) CU(cudaEventRecord(g->joinl[l], sl));
    }
    if (g->periodic && !root) /* (at depth 0 the P2M has added the root's local) */
        k_lattice<<<1, 256, 0, s0>>>(nc, g->root_op, g->W, g->U);
    else if (!g->periodic) /* levels 0 and 1 have no well-separated boxes */
        CU(cudaMemsetAsync(g->U, 0, sizeof(double) * nc * level_offset(D < 1 ? 1 : 2), s0));
    for (int l = l1; l <= D - split && !ev; ++l) CU(cudaStreamWaitEvent(s0, g->joinl[l], 0));
    MARK(5);
    for (int l = 0; l < D; ++l) {
        if (split && l == D - 1) CU(cudaStreamWaitEvent(s0, g->join2, 0));
        K.l2l<<<blocks(1L << (3 * l), PB), TB_TREE, sizeof(double) * PB * nc, s0>>>(
            g->l2lT, l, g->U + level_offset(l) * nc, g->U + level_offset(l + 1) * nc);
    }
    MARK(6);
    /* L2P with the outputs, once the P2P is done; at depth 0, where the P2P is most of the
     * evaluation, the far field goes to memory beside it and the outputs take it from there (one
     * pass after the P2P was slower: docs/tuning.md) */
    const double *U = g->U + level_offset(D) * nc;
    if (D == 0)
        K.l2p[g->mixed]<<<pgrid, 128, 0, s0>>>(g->pk, g->cs, g->ce, D, g->periodic, g->tinfoil,
                                               g->geom, U, NULL, g->far, g->perm, g->near, n,
                                               NULL, 0, g->red, g->out);
    CU(cudaStreamWaitEvent(s0, g->join, 0));
    if (excl && !ev) CU(cudaStreamWaitEvent(s0, g->joinx, 0));
    K.l2p[g->mixed]<<<pgrid, 128, 0, s0>>>(g->pk, g->cs, g->ce, D, g->periodic, g->tinfoil, g->geom,
                                           U, D ? NULL : g->far, NULL, g->perm, g->near, n,
                                           excl ? g->xterm : NULL, g->xatoms, g->red, g->out);
    CU(cudaGetLastError());
    MARK(7);
    if (dr) TRY(launch_forces(g, dr->scale, dr->df, s0));
    if (fshift && !ev) CU(cudaStreamWaitEvent(s0, g->joini, 0));
    if (fshift) TRY(launch_virial_far(g, s0));
    MARK(8);
    return FMM_OK;
}
#undef MARK

static int capture(fmm_gpu *g, int v) {
    if (g->exec[v]) cudaGraphExecDestroy(g->exec[v]);
    g->exec[v] = NULL;
    cudaGraph_t graph;
    CU(cudaStreamBeginCapture(g->s0, cudaStreamCaptureModeThreadLocal));
    int rc = enqueue(g, NULL, v == GRAPH_PARTS, v == GRAPH_DEVICE ? &g->route : NULL);
    cudaError_t e = cudaStreamEndCapture(g->s0, &graph);
    if (rc) {
        if (e == cudaSuccess) cudaGraphDestroy(graph);
        return rc;
    }
    CU(e);
    e = cudaGraphInstantiateWithFlags(&g->exec[v], graph, cudaGraphInstantiateFlagUseNodePriority);
    cudaGraphDestroy(graph);
    CU(e);
    g->graph_n[v] = (int)g->n, g->graph_depth[v] = g->depth, g->graph_excl[v] = g->excl_version;
    return FMM_OK;
}

/* the graph of this kind for the current points (and dr: the device route's buffers and scale),
   captured on first use */
static int graph_for(fmm_gpu *g, int v, const dev_route *dr, cudaGraphExec_t *out) {
    const int moved = v == GRAPH_DEVICE && (dr->dx != g->route.dx || dr->df != g->route.df ||
                                            dr->scale != g->route.scale);
    if (moved) g->route = *dr;
    if (!g->exec[v] || moved || g->graph_n[v] != g->n || g->graph_depth[v] != g->depth ||
        g->graph_excl[v] != g->excl_version)
        TRY(capture(g, v));
    *out = g->exec[v];
    return FMM_OK;
}

/* The plan's work goes on one stream at a time: s0 for the host entry points, the caller's stream
 * for device-resident calls, so that an MD code's steps, which pass the same stream each time, pay
 * no events (an event pair on the way in and one on the way out cost host time: docs/tuning.md).
 * A call on another stream than the last first has it wait for all the plan queued before. */
static int plan_stream(fmm_gpu *g, cudaStream_t st) {
    if (g->have_last && g->last != st) {
        CU(cudaEventRecord(g->sw, g->last));
        CU(cudaStreamWaitEvent(st, g->sw, 0));
    }
    g->last = st, g->have_last = 1;
    return FMM_OK;
}

extern "C" int fmm_gpu_setpts(fmm_gpu *g, long n, const void *xyz, int src, const double lo[3],
                              double side, int depth, void *stream) {
    if (n > 2147483647L) return FMM_ERR_NPTS;
    if (depth < 0 || depth > 10) return FMM_ERR_DEPTH;
    const int recapture = n != g->n || depth != g->depth;
    /* a device-resident caller does not wait for the plan: its last evaluation may still run */
    if (recapture && g->have_last) CU(cudaStreamSynchronize(g->last));
    int rc = alloc_particles(g, n);
    if (!rc) rc = alloc_tree(g, depth);
    if (!rc) rc = alloc_chunk_leaf(g, n, depth);
    if (!rc) rc = sym_plans(g, depth);
    if (rc) { /* hold nothing for a set that did not fit: the plan has no points now */
        free_particles(g), free_tree(g), free_chunk_leaf(g), free_sym_plans(g);
        g->n = 0;
        return rc;
    }
    const double geom[G_N] = {lo[0], lo[1], lo[2], side, (double)(1L << KEYBITS) / side};
    g->n = n, g->depth = depth;
    cudaGraphExec_t ex;
    TRY(graph_for(g, GRAPH_PLAIN, NULL, &ex));
    const int dev = src == FMM_GPU_DEVICE_F32;
    const cudaStream_t st = dev ? (cudaStream_t)stream : g->s0;
    g->dev_pts = dev;
    TRY(plan_stream(g, st));
    /* (the stack array is staged before this returns); a depth-0 evaluation writes the corner of
       its cell itself, which a deeper tree must not inherit */
    if (memcmp(geom, g->geom_host, sizeof geom) || (g->geom_moved && depth > 0)) {
        CU(cudaMemcpyAsync(g->geom, geom, sizeof geom, cudaMemcpyHostToDevice, st));
        memcpy(g->geom_host, geom, sizeof geom);
        g->geom_moved = 0;
    }
    if (g->periodic && depth == 0) g->geom_moved = 1;
    /* device positions: read by the next evaluation (in the device route's graph, or widened
       ahead of another) */
    g->dev_xyz = dev ? (const float *)xyz : NULL;
    if (dev) return FMM_OK;
    if (src == FMM_GPU_HOST_F32) {
        CU(cudaMemcpyAsync(g->stage, xyz, sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st));
        TRY(convert(3 * n, g->stage, g->xyz, st));
    } else {
        CU(cudaMemcpyAsync(g->xyz, xyz, sizeof(double) * 3 * n, cudaMemcpyHostToDevice, st));
    }
    CU(cudaStreamSynchronize(st));
    return FMM_OK;
}

extern "C" int fmm_gpu_set_exclusions(fmm_gpu *g, long natoms, long npairs, const int *start, const int *partner) {
    CU(cudaFree(g->xstart));
    CU(cudaFree(g->xpartner));
    CU(cudaFree(g->xterm));
    g->xstart = g->xpartner = NULL;
    g->xterm = NULL;
    g->xatoms = 0;
    g->excl_version++;
    if (npairs == 0) return FMM_OK;
    CU(cudaMalloc((void **)&g->xstart, sizeof(int) * (natoms + 1)));
    CU(cudaMalloc((void **)&g->xpartner, sizeof(int) * 2 * npairs));
    CU(cudaMalloc((void **)&g->xterm, sizeof(double) * 4 * natoms));
    CU(cudaMemcpy(g->xstart, start, sizeof(int) * (natoms + 1), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(g->xpartner, partner, sizeof(int) * 2 * npairs, cudaMemcpyHostToDevice));
    g->xatoms = natoms;
    return FMM_OK;
}

extern "C" int fmm_gpu_execute(fmm_gpu *g, const fmm_gpu_exec *e) {
    if (e->virial && g->periodic)
        return FMM_ERR_ARG; /* periodic: the caller assembles it from parts */
    const long n = g->n;
    const int f32 = e->f32, dev = e->d_force != NULL, gather = e->parts && g->periodic;
    const int route = dev && g->dev_xyz && !gather; /* positions and forces in one graph */
    const dev_route dr = {g->dev_xyz, e->d_force, e->force_scale};
    cudaGraphExec_t ex;
    TRY(graph_for(g, route ? GRAPH_DEVICE : gather ? GRAPH_PARTS : GRAPH_PLAIN, &dr, &ex));
    const cudaStream_t st = dev ? (cudaStream_t)e->stream : g->s0;
    TRY(plan_stream(g, st));
    if (route)
        g->dev_xyz = NULL;
    else
        TRY(take_dev_xyz(g, st));
    if (e->q && f32) {
        CU(cudaMemcpyAsync(g->stage, e->q, sizeof(float) * n, cudaMemcpyHostToDevice, st));
        TRY(convert(n, g->stage, g->qin, st));
    } else if (e->q) {
        CU(cudaMemcpyAsync(g->qin, e->q, sizeof(double) * n, cudaMemcpyHostToDevice, st));
    }
    CU(cudaGraphLaunch(ex, st));
    const size_t w = f32 ? sizeof(float) : sizeof(double);
    const char *out = (const char *)g->out;
    void *phi = e->phi, *field = e->field;
    if (dev && !route) {
        TRY(launch_forces(g, e->force_scale, e->d_force, st));
    } else if (f32 && (phi || field)) { /* out is phi[n] then field[3n]: round what is asked for */
        const long first = phi ? 0 : n;
        TRY(convert(4 * n - first - (field ? 0 : 3 * n), g->out + first, g->stage + first, st));
        out = (const char *)g->stage;
    }
    if (phi) CU(cudaMemcpyAsync(phi, out, w * n, cudaMemcpyDeviceToHost, st));
    if (field) CU(cudaMemcpyAsync(field, out + w * n, w * 3 * n, cudaMemcpyDeviceToHost, st));
    /* a device-resident call returns at once unless it reports the energy or virial */
    if (dev && !e->energy && !e->parts) return FMM_OK;
    fmm_gpu_virial_parts *parts = e->parts;
    double red[red_at(RED_N)];
    int bad = 0;
    if (parts)
        CU(cudaMemcpyAsync(parts->wroot, g->W, sizeof(double) * g->nc, cudaMemcpyDeviceToHost, st));
    CU(cudaMemcpyAsync(red, g->red, sizeof red, cudaMemcpyDeviceToHost, st));
    if (g->dev_pts) CU(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    if (bad) return FMM_ERR_NONFINITE;
    /* the range check of the outputs, without a pass over them: a phi or E_a that is not finite
       (an overflow at pairs far closer than the set's extent) makes q phi or q E_a Y_b, and so
       the energy or the virial's sums, not finite too (0 x Inf is NaN) */
    for (int k = 0; k < 19; ++k)
        if (!isfinite(red[red_at(k < 10 ? (k ? RED_VIR + k - 1 : RED_ENERGY) : RED_VIRG + k - 10)]))
            return FMM_ERR_RANGE;
    const int compact = g->periodic && g->depth == 0 &&
                        pbc_cluster_compact(red[red_at(RED_R2)], g->geom_host[G_SIDE]);
    if (e->compact && g->periodic && g->depth == 0) *e->compact = compact;
    if (e->energy) *e->energy = red[red_at(RED_ENERGY)];
    if (e->virial)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                e->virial[3 * a + b] =
                    0.5 * (red[red_at(RED_VIR + 3 * a + b)] + red[red_at(RED_VIR + 3 * b + a)]) -
                    red[red_at(RED_XVIR + 3 * a + b)];
    if (parts) {
        const int far = red[red_at(RED_FAR)] != 0.0; /* the sum about the charges' middle */
        for (int k = 0; k < 9; ++k)
            parts->fy[k] = red[red_at((far ? RED_VIRG : RED_VIR) + k)],
            parts->xvir[k] = red[red_at(RED_XVIR + k)];
        for (int k = 0; k < 81; ++k) parts->fshift[k] = red[red_at(RED_FSHIFT + k)];
        for (int k = 0; k < 3; ++k) parts->dip[k] = red[red_at(RED_D + k)];
        parts->s2 = red[red_at(RED_S2)];
        parts->compact = compact;
    }
    return FMM_OK;
}

extern "C" int fmm_gpu_time(fmm_gpu *g, int reps, double *ms) {
    if (!g->exec[GRAPH_PLAIN] || reps < 1) return FMM_ERR_NOPTS;
    TRY(plan_stream(g, g->s0));
    TRY(take_dev_xyz(g, g->s0));
    for (int r = 0; r < 3; ++r) CU(cudaGraphLaunch(g->exec[GRAPH_PLAIN], g->s0)); /* warm-up */
    for (int r = 0; r < reps; ++r) {
        CU(cudaEventRecord(g->t0, g->s0));
        CU(cudaGraphLaunch(g->exec[GRAPH_PLAIN], g->s0));
        CU(cudaEventRecord(g->t1, g->s0));
        CU(cudaEventSynchronize(g->t1));
        float t;
        CU(cudaEventElapsedTime(&t, g->t0, g->t1));
        ms[r] = t;
    }
    return FMM_OK;
}

extern "C" int fmm_gpu_stage_times(fmm_gpu *g, int reps, double *ms) {
    if (!g->exec[GRAPH_PLAIN] || reps < 1) return FMM_ERR_NOPTS;
    TRY(plan_stream(g, g->s0));
    TRY(take_dev_xyz(g, g->s0));
    cudaEvent_t ev[FMM_GPU_NSTAGE + 1] = {0};
    int rc = FMM_OK;
    for (int k = 0; k <= FMM_GPU_NSTAGE && !rc; ++k)
        if (cudaEventCreate(&ev[k]) != cudaSuccess) rc = FMM_ERR_CUDA;
    for (int k = 0; k < FMM_GPU_NSTAGE; ++k) ms[k] = 0.0;
    for (int r = 0; r <= reps && !rc; ++r) { /* r = 0 warms up */
        rc = enqueue(g, ev, 0, NULL);
        if (!rc && cudaEventSynchronize(ev[FMM_GPU_NSTAGE]) != cudaSuccess) rc = FMM_ERR_CUDA;
        for (int k = 0; k < FMM_GPU_NSTAGE && !rc && r; ++k) {
            float t;
            if (cudaEventElapsedTime(&t, ev[k], ev[k + 1]) != cudaSuccess) rc = FMM_ERR_CUDA;
            ms[k] += t / reps;
        }
    }
    for (int k = 0; k <= FMM_GPU_NSTAGE; ++k)
        if (ev[k]) cudaEventDestroy(ev[k]);
    return rc;
}
