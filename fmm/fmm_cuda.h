/*
 * The Coulomb FMM on one CUDA device (fmm_opts.device = FMM_DEVICE_CUDA).
 *
 * A uniform tree of depth D over the root cube: every level is a dense grid of 8^l boxes.
 * Positions and charges stay on the device; one evaluation is one CUDA graph (captured at
 * setpts): wrap and bin the particles into leaves (radix sort by leaf), gather, then
 * the far field (P2M, M2M, lattice operator at the root if periodic, M2L per level, L2L, L2P)
 * on one stream and the near field (P2P over the 27 neighbours, periodic images included) on
 * another, joined for the periodic corrections, the energy and the scatter back to the
 * caller's order. The operators are the CPU plan's, so the GPU and CPU FMM at equal (p, D)
 * compute the same sums.
 */
#ifndef FMM_FMM_CUDA_H
#define FMM_FMM_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

#include "m2l/operators.h"

#define FMM_GPU_PMAX 20
/* Periodic sets of at most this many charges go to depth 0 while they are compact (pbc/cluster.h):
 * one all-pairs near field of the cell with itself, the 26 nearest images by M2L at the root,
 * and a handful of kernels, where a tree of depth 2 is a chain of ~20 small ones. */
#define FMM_GPU_COMPACT_NMAX 8192

typedef struct fmm_gpu fmm_gpu;

typedef struct fmm_gpu_setup {
    int p, periodic, tinfoil;
    int mixed; /* near field (P2P) in float on leaf-relative positions */
    const m2l_operators *ops;
    const double *lattice; /* periodic: [nc][nc] root operator of the far images, else NULL */
    const double *near;    /* periodic: [nc][nc] root operator of the 26 nearest images (depth 0,
                              compact charges: pbc/cluster.h), else NULL */
    const double *bg;      /* periodic: [nc] multipole of the unit-cube background */
} fmm_gpu_setup;

/* Returns FMM_OK, FMM_ERR_DEVICE (no CUDA device), FMM_ERR_ORDER (p > FMM_GPU_PMAX),
 * FMM_ERR_NOMEM or FMM_ERR_CUDA. */
int fmm_gpu_create(const fmm_gpu_setup *s, fmm_gpu **g);
void fmm_gpu_destroy(fmm_gpu *g);

/* Positions in caller order for a tree of the given depth over the cube [lo, lo + side)^3
 * (periodic: lo = 0, side = L, positions are wrapped on the device; at depth 0 each evaluation
 * centres the cell on the charges itself, pbc/cluster.h): on the host, checked finite,
 * double or float; or float on the device (the caller's memory, read in order after the work the
 * caller queued on `stream`, a cudaStream_t; not waited for, and a non-finite one is reported by
 * every execute that waits, until positions come from the host again). */
enum { FMM_GPU_HOST_F64, FMM_GPU_HOST_F32, FMM_GPU_DEVICE_F32 };
int fmm_gpu_setpts(fmm_gpu *g, long n, const void *xyz, int src, const double lo[3], double side,
                   int depth, void *stream);

/* What the periodic virial needs from an evaluation (fmm/execute.c assembles it with the lattice
 * strain tables): sum_i F_i (x) Y_i (Y about the cell centre, or about the charges' middle where
 * that is more than 2^16 of their extent from it, as fmm/periodic.c takes it on the CPU), the total
 * force on the cell from each of the 27 nearest image codes, the dipole and the second moment
 * sum_i q_i |Y_i|^2 (about the centre), and the scaled root multipole. */
typedef struct fmm_gpu_virial_parts {
    double fy[9], fshift[81], dip[3], s2;
    double xvir[9]; /* the excluded pairs' virial (minimum images), to subtract */
    int compact;    /* the 26 nearest images acted by M2L at the root (their forces are not in
                       fshift: pbc_near_image_forces adds them from wroot) */
    double *wroot; /* [nc], the caller's */
} fmm_gpu_virial_parts;

/* Excluded pairs as per-atom lists (fmm/exclusions.h; natoms = 0 clears them): uploaded once,
 * subtracted by the evaluation graph after the outputs (captured anew on the next execute). */
int fmm_gpu_set_exclusions(fmm_gpu *g, long natoms, long npairs, const int *start, const int *partner);

/* One evaluation. q NULL: the charges on the device from the last call; q, phi, field in double,
 * or float with f32; any output may be NULL. virial: open boundary only; periodic: pass parts (the
 * first such call captures a second graph that also gathers the image forces). d_force (device,
 * float, 3n, caller order; phi and field NULL then): force_scale q_i E_i, ordered against the
 * caller's `stream` like a device-resident fmm_gpu_setpts; such a call waits for the device only
 * if it reports energy or parts (then FMM_ERR_NONFINITE for non-finite device positions). A call
 * that waits returns FMM_ERR_RANGE where the energy or the sum q_i E_i (x) Y_i is not finite
 * (which a phi or E that is not finite makes them). */
typedef struct fmm_gpu_exec {
    const void *q;
    void *phi, *field;
    int f32;
    double *energy, *virial;
    fmm_gpu_virial_parts *parts;
    float *d_force;
    double force_scale;
    void *stream;
    int *compact; /* if not NULL: set where the call waits for the device after a periodic depth-0
                     evaluation (whether its charges were compact), else left as it is */
} fmm_gpu_exec;
int fmm_gpu_execute(fmm_gpu *g, const fmm_gpu_exec *e);

/* Replay the evaluation graph `reps` times (charges as last uploaded) and return each replay's
 * time in milliseconds from CUDA events. */
int fmm_gpu_time(fmm_gpu *g, int reps, double *ms);

/* Mean time of each stage over `reps` evaluations run stage by stage on one stream (no graph,
 * no overlap): ms[FMM_GPU_NSTAGE] = bin+sort+gather, P2P with the excluded pairs, P2M (with the
 * cell's moments), M2M, lattice+M2L, L2L, L2P with the corrections and outputs (one kernel), the
 * device route's forces. */
#define FMM_GPU_NSTAGE 8
int fmm_gpu_stage_times(fmm_gpu *g, int reps, double *ms);

/* Uniform depth the GPU picks for n particles at order p (about 32 per leaf). */
int fmm_gpu_auto_depth(long n, int p);

#ifdef __cplusplus
}
#endif

#endif
