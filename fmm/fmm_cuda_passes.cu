/* The CUDA FMM's evaluation (fmm/fmm_cuda_plan.cuh): the passes queued on their streams
 * (binning, near field, upward pass, M2L per level, downward pass, outputs), captured as CUDA
 * graphs, and the timing entry points. */
#include "fmm/fmm_cuda_plan.cuh"

/* periodic, depth >= 1: U_root = RT[0]^T W_root (root_operators), after the M2M chain, by one block
 * of 8 warps; at depth 0 the P2M applies the operator itself. */
__global__ void k_lattice(int nc, const double *__restrict__ RT, const double *__restrict__ W0,
                          double *__restrict__ U0) {
    __shared__ double w[hd_ncoef(FMM_GPU_PMAX)], part[8 * 32];
    for (int j = threadIdx.x; j < nc; j += blockDim.x) w[j] = W0[j];
    __syncthreads();
    block_root_local<8>(RT, w, nc, part, U0, false);
}

static int m2l_level(fmm_gpu *g, int l, cudaStream_t st) {
    const double *W = g->W + level_offset(l) * g->nc;
    double *U = g->U + level_offset(l) * g->nc;
    return g->sym[l] ? m2l_gpu_symmetric_run(g->sym[l], W, U, st)
                     : m2l_gpu_halo_run(g->halo, W, U, st);
}

/* the virial's periodic image forces through the V lists of the levels l1..depth (they read only
   the multipoles, and only the host reads fshift) */
static int launch_images(fmm_gpu *g, int l1, double *fshift, cudaStream_t st) {
    order_kernels K = fgpu_order_table(g->p);
    for (int l = l1; l <= g->depth; ++l)
        K.images<<<8 * M2L_VLIST, IMG_TB, img_smem_bytes(g->p), st>>>(
            g->m2l.cls, g->m2l.sign, g->m2l.vlist, l, g->geom + G_SIDE,
            g->W + level_offset(l) * g->nc, fshift);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* the whole evaluation, queued on s0, s1 for the near field and s2 for the finest M2L level
 * (it needs only the leaf multipoles, so it runs beside the M2M chain and the coarser levels;
 * the last L2L, which adds into the same local expansions, waits for it), and with the virial
 * simg for the periodic image forces (launch_images), sx for the excluded pairs; with ev
 * (profiling, not captured) everything goes on s0 in stage order and ev[0..FMM_GPU_NSTAGE] mark the
 * stage boundaries */
#define MARK(k)                                                                                    \
    if (ev) CU(cudaEventRecord(ev[k], s0))
static int enqueue(fmm_gpu *g, cudaEvent_t *ev, int virial, const dev_route *dr) {
    const long n = g->n;
    const int D = g->depth, nc = g->nc;
    const long nleaf = 1L << (3 * D);
    cudaStream_t s0 = g->s0, s1 = ev ? g->s0 : g->s1;
    order_kernels K = fgpu_order_table(g->p);
    /* periodic depth 0: two kernels centre the cell and place the particles (k_root_bins,
     * k_root_place) */
    const bool root = g->periodic && D == 0;
    MARK(0);
    if (dr) TRY(fgpu_launch_widen(g, dr->dx, s0));
    CU(cudaMemsetAsync(g->red, 0, sizeof(double) * red_at(RED_N), s0));
    const bool excl = g->xatoms > 0;
    if (excl && !ev) {
        CU(cudaEventRecord(g->forkx, s0));
        CU(cudaStreamWaitEvent(g->sx, g->forkx, 0));
        TRY(fgpu_exclusions(g, g->sx));
        CU(cudaEventRecord(g->joinx, g->sx));
    }
    TRY(fgpu_bin(g, s0));
    MARK(1);
    /* near field on s1 */
    CU(cudaEventRecord(g->fork, s0));
    CU(cudaStreamWaitEvent(s1, g->fork, 0));
    double *fshift = virial && g->periodic ? g->red + red_at(RED_FSHIFT) : NULL;
    TRY(fgpu_p2p(g, fshift, s1));
    if (excl && ev) TRY(fgpu_exclusions(g, s0));
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
    if (fshift) TRY(fgpu_virial_extent(g, si));
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
                                               g->geom, U, NULL, g->far, g->perm, g->near, n, NULL,
                                               0, g->red, g->out);
    CU(cudaStreamWaitEvent(s0, g->join, 0));
    if (excl && !ev) CU(cudaStreamWaitEvent(s0, g->joinx, 0));
    K.l2p[g->mixed]<<<pgrid, 128, 0, s0>>>(g->pk, g->cs, g->ce, D, g->periodic, g->tinfoil, g->geom,
                                           U, D ? NULL : g->far, NULL, g->perm, g->near, n,
                                           excl ? g->xterm : NULL, g->xatoms, g->red, g->out);
    CU(cudaGetLastError());
    MARK(7);
    if (dr) TRY(fgpu_launch_forces(g, dr->scale, dr->df, s0));
    if (fshift && !ev) CU(cudaStreamWaitEvent(s0, g->joini, 0));
    if (fshift) TRY(fgpu_virial_far(g, s0));
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
int fgpu_graph_for(fmm_gpu *g, int v, const dev_route *dr, cudaGraphExec_t *out) {
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
int fgpu_plan_stream(fmm_gpu *g, cudaStream_t st) {
    if (g->have_last && g->last != st) {
        CU(cudaEventRecord(g->sw, g->last));
        CU(cudaStreamWaitEvent(st, g->sw, 0));
    }
    g->last = st, g->have_last = 1;
    return FMM_OK;
}

/* (through fgpu_graph_for like execute: the plain graph is captured anew where the exclusions
   changed since, fmm_gpu_set_exclusions) */
extern "C" int fmm_gpu_time(fmm_gpu *g, int reps, double *ms) {
    if (g->n < 1 || reps < 1) return FMM_ERR_NOPTS;
    cudaGraphExec_t ex;
    TRY(fgpu_graph_for(g, GRAPH_PLAIN, NULL, &ex));
    TRY(fgpu_plan_stream(g, g->s0));
    TRY(fgpu_take_dev_xyz(g, g->s0));
    for (int r = 0; r < 3; ++r) CU(cudaGraphLaunch(ex, g->s0)); /* warm-up */
    for (int r = 0; r < reps; ++r) {
        CU(cudaEventRecord(g->t0, g->s0));
        CU(cudaGraphLaunch(ex, g->s0));
        CU(cudaEventRecord(g->t1, g->s0));
        CU(cudaEventSynchronize(g->t1));
        float t;
        CU(cudaEventElapsedTime(&t, g->t0, g->t1));
        ms[r] = t;
    }
    return FMM_OK;
}

extern "C" int fmm_gpu_stage_times(fmm_gpu *g, int reps, double *ms) {
    if (g->n < 1 || reps < 1) return FMM_ERR_NOPTS;
    TRY(fgpu_plan_stream(g, g->s0));
    TRY(fgpu_take_dev_xyz(g, g->s0));
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
