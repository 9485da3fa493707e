/* The CUDA FMM's binning (fmm/fmm_cuda_plan.cuh): the particles into the leaves of the uniform
 * tree and into tree order, or at periodic depth 0 into the cell centred on the charges. */
#include "fmm/fmm_cuda_plan.cuh"

#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>

/* Binning is a counting sort: each particle takes the next slot of its leaf's counter, one scan
 * of the counts gives the leaves' ranges, and the particles are written to their slots (few graph
 * nodes: a radix sort's chain was mostly launch gaps, docs/tuning.md). The order within a leaf
 * follows the atomics, so it can change between runs: sums over a leaf change in their last bits
 * (float near field: 1e-7). */

__global__ void k_bin(long n, const double *__restrict__ xyz, const double *__restrict__ geom,
                      int periodic, int depth, unsigned *__restrict__ key, int *__restrict__ cnt,
                      int *__restrict__ rank) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double L = geom[G_SIDE], scale = geom[G_SCALE];
    const long top = (1L << KEYBITS) - 1;
    unsigned c[3];
    for (int d = 0; d < 3; ++d) {
        const double v = wrap_coord(xyz[3 * i + d], geom[G_LO + d], L, periodic);
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
    __host__ __device__ int2 operator()(int2 a, int2 b) const {
        return make_int2(a.x + b.x, a.y + b.y);
    }
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
        const double xi = wrap_coord(xyz[3 * i], geom[G_LO], L, periodic),
                     yi = wrap_coord(xyz[3 * i + 1], geom[G_LO + 1], L, periodic),
                     zi = wrap_coord(xyz[3 * i + 2], geom[G_LO + 2], L, periodic), qi = qin[i];
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

/* the particles placed in tree order (R: the records' precision) */
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

int fgpu_scan_bytes(fmm_gpu *g, long nleaf) {
    g->stmp_bytes = 0;
    CU(cub::DeviceScan::InclusiveScan(NULL, g->stmp_bytes, leaf_count_iter(g->cnt, leaf_counts()),
                                      g->lsum, int2_sum(), (int)nleaf));
    return FMM_OK;
}

int fgpu_bin(const fmm_gpu *g, cudaStream_t st) {
    const long n = g->n, nleaf = 1L << (3 * g->depth);
    if (!(g->periodic && g->depth == 0)) {
        CU(cudaMemsetAsync(g->cnt, 0, sizeof(int) * nleaf, st));
        k_bin<<<blocks(n, 256), 256, 0, st>>>(n, g->xyz, g->geom, g->periodic, g->depth, g->key,
                                              g->cnt, g->rank);
        size_t sb = g->stmp_bytes;
        CU(cub::DeviceScan::InclusiveScan(g->stmp, sb, leaf_count_iter(g->cnt, leaf_counts()),
                                          g->lsum, int2_sum(), (int)nleaf, st));
        if (g->depth == 0)
            CU(cudaMemsetAsync(g->W, 0, sizeof(double) * g->nc, st)); /* the P2M adds into it */
    }
    if (g->mixed)
        launch_place<float>(g, st);
    else
        launch_place<double>(g, st);
    CU(cudaGetLastError());
    return FMM_OK;
}
