/*
 * The CUDA FMM's plan state and the functions its files share (fmm/fmm_cuda.h is the interface).
 * The files follow the stages of one evaluation:
 *   fmm/fmm_cuda.cu           plan and memory: create, destroy, operator upload, buffers, setpts
 *   fmm/fmm_cuda_bin.cu       binning: the particles into their leaves, in tree order
 *   fmm/fmm_cuda_p2p.cu       near field: P2P over the 27 neighbours, the excluded pairs
 *   fmm/fmm_cuda_orders.cuh   per-order kernels: P2M, M2M, L2L, L2P (m2l/m2l_images.cuh: the
 *                             periodic image M2L of the virial), instantiated in
 * fmm_cuda_orders_*.cu fmm/fmm_cuda_passes.cu    the evaluation's passes on their streams, graph
 * capture, timing fmm/fmm_cuda_outputs.cu   execute: the outputs, the periodic virial, the device
 * route's data Kernels are launched from the file that defines them (no device link:
 * CMakeLists.txt), except the per-order kernels, which the passes launch through fgpu_order_table.
 */
#ifndef FMM_FMM_CUDA_PLAN_CUH
#define FMM_FMM_CUDA_PLAN_CUH

#include <cuda_runtime.h>

#include "core/cuda_status.cuh"
#include "fmm.h"
#include "fmm/fmm_cuda.h"
#include "fmm/fmm_cuda_orders.cuh"
#include "m2l/m2l_gpu.h"
#include "pbc/cluster.h"

#define TRY(call)                                                                                  \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_) return rc_;                                                                       \
    } while (0)

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
    m2l_sym_plan
        *sym[11]; /* per level with M2L: the presorted symmetric M2L (m2l/m2l_symmetric.cu) */
    m2l_halo_plan
        *halo; /* or for the finest level, in mixed precision: halo tiles on the tensor cores */
    int sym_depth;
    int prio[3];         /* stream priorities: tree chain and coarse M2L, finest M2L, P2P */
    double *m2mT, *l2lT; /* [8 octants][nc in][nc out] */
    double *root_op;     /* periodic: [2][nc in][nc out], the root's local from its multipole
                            (root_operators) */
    double *xyz, *qin;   /* caller order: input positions, charges */
    float *stage;        /* [4n]: single-precision caller data on its way in or out */
    unsigned *key;       /* caller order: leaf of each particle */
    int *rank;           /* caller order: its slot within the leaf */
    int *perm;           /* tree position -> caller index */
    void *pk;            /* tree order: p2p_rec<float or double> (mixed or not) */
    int *cs, *ce;        /* particles of leaf c: [cs[c], ce[c]) */
    int *cnt;            /* per leaf: particles (the binning's counters) */
    int2 *lsum;          /* per leaf: inclusive sums of (particles, 32-target chunks) */
    int *chunk_end;      /* per leaf: lsum.y */
    int *chunk_leaf;     /* per chunk: its leaf */
    long cap_chunk;
    void *stmp; /* the scan's temporary storage */
    size_t stmp_bytes;
    /* [4][n], phi, ex, ey, ez in tree order: far (depth 0), near; out: phi[n], field[3n] caller
     * order */
    double *far, *near, *out;
    double *W, *U; /* all levels, level l at box offset (8^l - 1)/7 */
    long nbox, cap_box;
    double *geom, *red;
    cudaStream_t s0, s1, s2;
    cudaStream_t sl[11]; /* per coarse level: the stream its M2L forks from, so the levels run side
                            by side */
    cudaStream_t simg;   /* the virial's image forces (k_m2l_images), beside the downward pass */
    cudaStream_t sx;     /* the excluded pairs (k_exclusions), beside the placement and the P2P */
    cudaEvent_t fork, join, fork2, join2, t0, t1, forkl, joinl[11], forki, joini, forkx, joinx;
    cudaStream_t last; /* the stream the plan's work went on last (plan_stream) */
    int have_last;
    cudaEvent_t sw; /* a switch of streams: the new one waits for the last one */
    int geom_moved; /* a depth-0 graph moves the cell's corner in geom on the device */
    int *bad;       /* device-resident positions: set where one is not finite */
    int dev_pts;    /* the current positions came from the device (the host never checked them) */
    const float *dev_xyz;  /* device-resident positions that no evaluation has read yet */
    double geom_host[G_N]; /* what g->geom holds */
    /* [GRAPH_PLAIN]; [GRAPH_PARTS]: gathering the periodic image forces; [GRAPH_DEVICE]: the
       device route around the plain evaluation, captured for the buffers and scale in route */
    cudaGraphExec_t exec[3];
    int graph_n[3], graph_depth[3], graph_excl[3];
    dev_route route;
    int *xstart, *xpartner; /* excluded pairs (fmm/exclusions.h), caller indices */
    double *xterm; /* their direct terms, caller order: phi[xatoms], then the field [xatoms][3] */
    long xatoms;
    int excl_version; /* bumped by each fmm_gpu_set_exclusions: the graphs are captured anew */
};

static inline long level_offset(int l) {
    return ((1L << (3 * l)) - 1) / 7;
}

static inline unsigned blocks(long n, int t) {
    return (unsigned)((n + t - 1) / t);
}

enum { GRAPH_PLAIN, GRAPH_PARTS, GRAPH_DEVICE, GRAPH_N };

/* a position coordinate, periodic: wrapped into the root's [lo, lo + L) (k_bin bins it, k_place
 * places it: recomputed there rather than stored, 24 bytes per particle each way less); as the CPU
 * wraps it (fmm/setpts.c), so that both build the same tree */
__device__ __forceinline__ double wrap_coord(double v, double lo, double L, int periodic) {
    if (!periodic) return v;
    v = v - L * floor((v - lo) / L);
    return v >= lo && v < lo + L ? v : lo;
}

/* periodic depth 0: whether the charges are compact (the P2P leaves the images to the root's M2L)
 */
__device__ __forceinline__ bool root_compact(const double *red, const double *geom) {
    return pbc_cluster_compact(red[red_at(RED_R2)], geom[G_SIDE]);
}

/* periodic depth 0: coordinate d of the cell's centre (with the tin-foil boundary, the middle of
   the charges' occupied bins; the vacuum boundary's dipole term is that of the charges wrapped
   into [0, L)^3, so there the centre of the box) */
__device__ __forceinline__ double root_centre(const double *red, double L, int tinfoil, int d) {
    return tinfoil ? pbc_cluster_centre(((const unsigned long long *)red)[red_at(RED_OCC + d)], L)
                   : 0.5 * L;
}

/* fmm/fmm_cuda.cu: the kernels of order p (fmm_cuda_orders_*.cu) */
order_kernels fgpu_order_table(int p);

/* fmm/fmm_cuda_bin.cu: the scan's temporary storage for nleaf leaves (into g->stmp_bytes); the
 * binning of the current points (k_bin and the scan, or at periodic depth 0 the cell centred on
 * the charges) and their placement in tree order, queued on st */
int fgpu_scan_bytes(fmm_gpu *g, long nleaf);
int fgpu_bin(const fmm_gpu *g, cudaStream_t st);

/* fmm/fmm_cuda_p2p.cu: the near field into g->near (fshift: the virial's image forces, or NULL);
 * the excluded pairs' direct terms */
int fgpu_p2p(const fmm_gpu *g, double *fshift, cudaStream_t st);
int fgpu_exclusions(fmm_gpu *g, cudaStream_t st);

/* fmm/fmm_cuda_passes.cu: the graph of kind v for the current points, captured on first use;
 * the stream the plan's next work goes on */
int fgpu_graph_for(fmm_gpu *g, int v, const dev_route *dr, cudaGraphExec_t *out);
int fgpu_plan_stream(fmm_gpu *g, cudaStream_t st);

/* fmm/fmm_cuda_outputs.cu: float caller data widened to double; the device route's positions in
 * and forces out; the periodic virial's sums about the charges' middle */
int fgpu_widen(long n, const float *a, double *b, cudaStream_t st);
int fgpu_launch_widen(fmm_gpu *g, const float *dx, cudaStream_t st);
int fgpu_take_dev_xyz(fmm_gpu *g, cudaStream_t st);
int fgpu_launch_forces(fmm_gpu *g, double scale, float *df, cudaStream_t st);
int fgpu_virial_extent(fmm_gpu *g, cudaStream_t st);
int fgpu_virial_far(fmm_gpu *g, cudaStream_t st);

#endif
