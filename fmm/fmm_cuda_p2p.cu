/* The CUDA FMM's near field (fmm/fmm_cuda_plan.cuh): P2P over the 27 neighbours of each leaf,
 * periodic images included, and the excluded pairs' direct terms. */
#include "fmm/fmm_cuda_plan.cuh"

#include "fmm/exclusions.h"

#define P2P_WIDE_DEPTH 3 /* P2P with 8 warps per leaf up to this depth, 4 below */

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
    part[warp][0][lane] = pt, part[warp][1][lane] = fx, part[warp][2][lane] = fy,
    part[warp][3][lane] = fz;
    __syncthreads();
    if (warp == 0 && ok && sub == 0)
        for (int k = 0; k < 4; ++k) {
            double v = 0.0;
#pragma unroll
            for (int w = 0; w < NW; ++w) v += part[w][k][lane];
            near[k * n + i] = v;
        }
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

int fgpu_p2p(const fmm_gpu *g, double *fshift, cudaStream_t st) {
    if (g->mixed)
        launch_p2p<float>(g, fshift, st);
    else
        launch_p2p<double>(g, fshift, st);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* the excluded pairs' direct terms, for the outputs pass to take out (term: caller order,
 * phi[natoms] then the field [natoms][3]), and their energy out of RED_ENERGY; their virial into
 * RED_XVIR for the host to subtract. It needs only the positions, so it runs beside the placement
 * and the P2P (after them, on the tree chain's stream, it lengthened a small MD step:
 * docs/tuning.md) */
__global__ void k_exclusions(long natoms, const int *__restrict__ start,
                             const int *__restrict__ partner, const double *__restrict__ xyz,
                             const double *__restrict__ q, int periodic,
                             const double *__restrict__ geom, double *__restrict__ red,
                             double *__restrict__ term) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const double L = periodic ? geom[G_SIDE] : 0.0;
    double acc[EXCL_N] = {0};
    if (i < natoms) {
        for (int k = start[i]; k < start[i + 1]; ++k) {
            const long j = partner[k];
            excl_term(xyz[3 * i] - xyz[3 * j], xyz[3 * i + 1] - xyz[3 * j + 1],
                      xyz[3 * i + 2] - xyz[3 * j + 2], L, q[i], q[j], acc);
        }
        term[i] = acc[EXCL_PHI];
        for (int d = 0; d < 3; ++d) term[natoms + 3 * i + d] = acc[EXCL_E + d];
    }
    const double v[10] = {-acc[EXCL_ENERGY], acc[EXCL_VIR],     acc[EXCL_VIR + 1],
                          acc[EXCL_VIR + 2], acc[EXCL_VIR + 3], acc[EXCL_VIR + 4],
                          acc[EXCL_VIR + 5], acc[EXCL_VIR + 6], acc[EXCL_VIR + 7],
                          acc[EXCL_VIR + 8]};
    const int at[10] = {red_at(RED_ENERGY),   red_at(RED_XVIR),     red_at(RED_XVIR + 1),
                        red_at(RED_XVIR + 2), red_at(RED_XVIR + 3), red_at(RED_XVIR + 4),
                        red_at(RED_XVIR + 5), red_at(RED_XVIR + 6), red_at(RED_XVIR + 7),
                        red_at(RED_XVIR + 8)};
    block_add(red, at, v);
}

int fgpu_exclusions(fmm_gpu *g, cudaStream_t st) {
    k_exclusions<<<blocks(g->xatoms, 256), 256, 0, st>>>(
        g->xatoms, g->xstart, g->xpartner, g->xyz, g->qin, g->periodic, g->geom, g->red, g->xterm);
    CU(cudaGetLastError());
    return FMM_OK;
}
