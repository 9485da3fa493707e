/*
 * fmm_fgt.h - public C API of the fast Gauss transform (FGT).
 *
 * Computes, for ns sources x_i with weights q_i and nt targets y_j in 1, 2 or 3 dimensions,
 *
 *     G(y_j) = sum_i q_i exp(-|y_j - x_i|^2 / h^2)
 *
 * (FIGTree's bandwidth convention: h is the distance at which a source's weight has fallen
 * to 1/e; a Gaussian of standard deviation sigma has h = sqrt(2) sigma). Sources and targets
 * are independent point sets (targets may be the sources). Units: coordinates and h in the
 * same length unit, G in the unit of q.
 *
 * Accuracy promise: max_j |G(y_j) - G_exact(y_j)| <= tolerance * sum_i |q_i|, plus the rounding
 * of the positions in units of h: coordinates are carried as (x - lo) / h relative to the set's
 * lower corner lo, which can add up to about 2^-50 (extent / h) sum_i |q_i| (extent: the largest
 * side of the sources' and targets' bounding box). That is below the tolerance up to about
 * tolerance * 2^50 bandwidths (1e9 at 1e-6), and comparable to what the rounding of the input
 * coordinates themselves implies when the set lies near the origin.
 *
 * Scales. Only (x - y) / h enters, and the plan and fgt_direct compute in units where the
 * coordinates and h are at most about 1 (divided by a power of two, unless within 2^-64..2^64)
 * and the weights likewise, scaling G back exactly: coordinates and h scaled by the same 2^k give
 * bitwise the same G anywhere in the double range (h subnormal included), and weights scaled by 2^k
 * give G times 2^k bitwise. A G beyond DBL_MAX, or a nonzero G whose largest value is below
 * DBL_MIN, is FMM_ERR_RANGE. An extent beyond DBL_MAX bandwidths is FMM_ERR_PARAM (fgt_setpts).
 *
 * Algorithm (Greengard & Strain 1991, on a uniform grid): boxes of side b*h (b chosen by a
 * cost model, about 0.5..2), only non-empty boxes are stored (sorted by box key, so tiny
 * bandwidths with 1e9 possible boxes cost nothing). Every (target box, source box) pair
 * within the cut-off radius (exp(-r^2/h^2) < tolerance/2) uses one of four modes, chosen by
 * cost: direct sum; Hermite expansion of the source box evaluated at the targets; Taylor
 * expansion about the target box built from the sources; Hermite-to-Taylor translation.
 * Expansions are tensor products of order p per dimension; p is chosen per box pair and per
 * mode from a per-dimension bound on the truncation error (the maximum of the 1-D truncation
 * error over the two boxes, measured at plan time on a fine grid, combined over dimensions
 * with a product rule), so distant box pairs use lower orders. See docs/fgt.md.
 *
 * Shape (FINUFFT style):
 *     fgt_opts o; fgt_default_opts(&o); o.tolerance = 1e-6;
 *     fgt_plan *p; int rc = fgt_makeplan(3, h, &o, &p);
 *     rc = fgt_setpts(p, ns, src, nt, trg);    // trg NULL: targets = sources
 *     rc = fgt_execute(p, q, g);               // g: nt values, target order
 *     fgt_destroy(p); puts(fgt_strerror(rc));
 *
 * Lifetime and threads. After fgt_destroy(p) the plan is gone: any further use of p, a second
 * fgt_destroy(p) included, is undefined behaviour (as for free()); fgt_destroy(NULL) does
 * nothing. One plan must not be called from two threads at once (undefined: fgt_execute writes
 * the plan's weight, coefficient and output buffers, and a CUDA plan's device buffers and
 * timings); different plans may be used from different threads at the same time (they share no
 * state). fgt_direct keeps no state.
 *
 * Repeatability. On the CPU the same input gives bitwise the same G, call after call, for any
 * thread count (each target box is summed by one thread in a fixed order; no sum over threads).
 * On the GPU this is not promised: where a source box holds more than 8192 sources, several
 * blocks add its Hermite moments atomically in arrival order, so the last digits (about 1e-16
 * of sum |q|) may differ from run to run; GPU and CPU differ at that level too.
 *
 * Library code never prints, exits or aborts: every failure is a status code of
 * enum fmm_status (include/fmm_common.h). A failed call leaves the plan as it was.
 */
#ifndef FMM_FGT_H
#define FMM_FGT_H

#include "fmm_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FGT_TOL_MIN 1e-12 /* smallest accepted tolerance */
#define FGT_TOL_MAX 1e-1  /* largest accepted tolerance */
#define FGT_ORDER_MAX 32  /* largest expansion order per dimension */

/* Interaction modes (fgt_opts.force_mode and fgt_info.pairs[]). */
enum fgt_mode {
    FGT_MODE_AUTO = 0,    /* chosen per box pair by cost (default) */
    FGT_MODE_DIRECT = 1,  /* direct sum over the box pair */
    FGT_MODE_HERMITE = 2, /* Hermite expansion of the source box, evaluated at each target */
    FGT_MODE_TAYLOR = 3,  /* Taylor expansion about the target box, built from each source */
    FGT_MODE_H2T = 4      /* Hermite expansion translated to the target box's Taylor expansion */
};

typedef struct fgt_opts {
    double tolerance; /* max_j |G - G_exact| <= tolerance * sum |q| ; [1e-12, 1e-1], default 1e-6 */
    int threads;      /* OpenMP threads (CPU); 0 = the OpenMP default */
    int device;       /* enum fmm_device: FMM_DEVICE_CPU (default) or FMM_DEVICE_CUDA */
    double box_side;  /* box side in units of h; 0 = chosen by the cost model (default),
                         otherwise in [0.125, 8] */
    int force_mode;   /* enum fgt_mode; FGT_MODE_AUTO (default). A forced expansion mode is
                         used for every box pair within the cut-off where an order <=
                         FGT_ORDER_MAX meets the tolerance; the other pairs are direct.
                         For tests and benchmarks. */
} fgt_opts;

/* What the plan chose (after fgt_setpts) and did (after fgt_execute). */
typedef struct fgt_info {
    int dim;
    double box_side;   /* box side / h */
    int order;         /* largest expansion order per dimension used by any mode */
    int radius;        /* neighbour radius in boxes (cut-off) */
    long source_boxes; /* non-empty source boxes */
    long target_boxes; /* non-empty target boxes */
    long pairs[5];     /* box pairs per mode (index enum fgt_mode; [0] = cut off) */
} fgt_info;

typedef struct fgt_plan fgt_plan;

void fgt_default_opts(fgt_opts *opts);

/* dim: 1, 2 or 3 (FMM_ERR_PARAM otherwise). bandwidth h > 0 and finite (FMM_ERR_PARAM).
 * opts may be NULL (defaults). Errors: FMM_ERR_ARG (plan NULL), FMM_ERR_TOLERANCE,
 * FMM_ERR_THREADS, FMM_ERR_PARAM (box_side, force_mode), FMM_ERR_DEVICE (CUDA asked for but
 * not built in or no device), FMM_ERR_NOMEM. */
int fgt_makeplan(int dim, double bandwidth, const fgt_opts *opts, fgt_plan **plan);

/* sources: ns * dim interleaved coordinates (x0 [y0 [z0]] x1 ...); targets: nt * dim, or
 * NULL for targets = sources (nt is then ignored). Both are copied. Builds the boxes.
 * Errors: FMM_ERR_ARG (NULL), FMM_ERR_NPTS (ns < 1 or nt < 1), FMM_ERR_NONFINITE,
 * FMM_ERR_PARAM (an extent beyond DBL_MAX bandwidths), FMM_ERR_NOMEM, FMM_ERR_CUDA. */
int fgt_setpts(fgt_plan *plan, long ns, const double *sources, long nt, const double *targets);

/* q: ns weights (source order); g: nt outputs (target order), overwritten.
 * Errors: FMM_ERR_ARG (NULL), FMM_ERR_NOPTS (before a successful fgt_setpts),
 * FMM_ERR_NONFINITE (NaN/Inf weight), FMM_ERR_RANGE (G beyond the double range, see "Scales";
 * g is then unspecified), FMM_ERR_NOMEM, FMM_ERR_CUDA. */
int fgt_execute(fgt_plan *plan, const double *q, double *g);

int fgt_get_info(const fgt_plan *plan, fgt_info *info);

void fgt_destroy(fgt_plan *plan);

const char *fgt_strerror(int status);

/* The direct O(ns*nt) sum, OpenMP-parallel (threads 0 = default): the reference, from exact
 * differences of the given coordinates divided by h (in the normalised units of "Scales").
 * Same arguments and errors as the plan (targets NULL = sources). */
int fgt_direct(int dim, double bandwidth, long ns, const double *sources, const double *q, long nt,
               const double *targets, double *g, int threads);

/* CUDA plans, for benchmarks: time (ms, CUDA events) of the last fgt_execute's device work
 * per stage: ms[0] = Hermite moments, [1] = Taylor build + H2T, [2] = direct + Hermite
 * evaluation + Taylor evaluation, [3] = total including transfers. FMM_ERR_DEVICE for a CPU
 * plan. */
int fgt_cuda_stage_times(const fgt_plan *plan, double ms[4]);

/* Benchmark of the Hermite-evaluation kernel alone (the seed's Table 4-5 measurement, 3-D):
 * n targets uniform in a cube of side `side` (units of h), `nclusters` source clusters of
 * random Hermite coefficients of order p per dimension (p <= FGT_ORDER_MAX) whose centres are
 * spread over the same cube; every target evaluates every cluster. *ms = kernel time (ms).
 * FMM_ERR_DEVICE without CUDA. */
int fgt_cuda_hermite_bench(long n, int p, int nclusters, double side, double *ms);

#ifdef __cplusplus
}
#endif

#endif /* FMM_FGT_H */
