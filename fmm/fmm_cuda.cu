/* The CUDA FMM's plan and memory (fmm/fmm_cuda.h, stages: fmm/fmm_cuda_plan.cuh): create and
 * destroy, the operators' upload, the buffers of a point set, setpts. */
#include "fmm/fmm_cuda_plan.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "pbc/lattice.h"

/* Every M2L level runs as the symmetric variant (one operator application per symmetry class
 * with Walsh-Hadamard combined sources: 56 instead of 189 per box; m2l/m2l_symmetric.cu), the
 * coarse levels too: that was faster at every size measured (docs/tuning.md). */
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

/* the per-order kernels live in fmm_cuda_orders_*.cu (five translation units compiled in parallel)
 */
static_assert(FMM_GPU_PMAX == 20, "order_table covers the orders 1..20");
order_kernels fgpu_order_table(int p) {
    if (p <= 12) return fmm_gpu_orders_1_12(p);
    if (p <= 14) return fmm_gpu_orders_13_14(p);
    if (p <= 16) return fmm_gpu_orders_15_16(p);
    if (p <= 18) return fmm_gpu_orders_17_18(p);
    return fmm_gpu_orders_19_20(p);
}

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
    double *A = (double *)malloc(sizeof(double) * nn),
           *T = (double *)malloc(sizeof(double) * 8 * nn);
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
    g->W = g->U = NULL, g->cs = g->ce = g->cnt = g->chunk_end = NULL, g->lsum = NULL,
    g->stmp = NULL, g->cap_box = 0;
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
    void *ptrs[] = {g->m2mT, g->l2lT,   g->root_op,  g->geom, g->red,
                    g->bad,  g->xstart, g->xpartner, g->xterm};
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
    TRY(m2l_gpu_ops_init(&g->m2l, s->ops));
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
    order_kernels K = fgpu_order_table(p);
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
    TRY(fgpu_scan_bytes(g, nleaf));
    CU(cudaMalloc(&g->stmp, g->stmp_bytes));
    g->cap_box = nbox;
    return FMM_OK;
}

/* the chunk -> leaf map: at most n / 32 + 1 chunks per leaf count (ceil), nleaf + n / 32 in all */
static int alloc_chunk_leaf(fmm_gpu *g, long n, int depth) {
    const long need = (1L << (3 * depth)) + (n + 31) / 32;
    if (need <= g->cap_chunk) return FMM_OK;
    free_chunk_leaf(g);
    CU(cudaMalloc((void **)&g->chunk_leaf, sizeof(int) * need));
    g->cap_chunk = need;
    return FMM_OK;
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
    TRY(fgpu_graph_for(g, GRAPH_PLAIN, NULL, &ex));
    const int dev = src == FMM_GPU_DEVICE_F32;
    const cudaStream_t st = dev ? (cudaStream_t)stream : g->s0;
    g->dev_pts = dev;
    TRY(fgpu_plan_stream(g, st));
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
        TRY(fgpu_widen(3 * n, g->stage, g->xyz, st));
    } else {
        CU(cudaMemcpyAsync(g->xyz, xyz, sizeof(double) * 3 * n, cudaMemcpyHostToDevice, st));
    }
    CU(cudaStreamSynchronize(st));
    return FMM_OK;
}

extern "C" int fmm_gpu_set_exclusions(fmm_gpu *g, long natoms, long npairs, const int *start,
                                      const int *partner) {
    drop_graphs(g); /* they hold the arrays freed here (a replay by fmm_gpu_time read them) */
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
