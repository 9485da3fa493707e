/*
 * fmm_bldtt.h - kernel-independent fast summation by barycentric Lagrange interpolation on a
 * dual tree traversal (BLDTT; Wilson, Vaughn & Krasny, Comput. Phys. Commun. 2021), and the
 * barycentric Lagrange treecode (BLTC, particle-cluster only) for comparison.
 *
 * What it computes. For M targets x_i and N sources y_j with weights q_j,
 *     phi(x_i) = sum_j G(|x_i - y_j|) q_j,        grad phi(x_i) = sum_j grad_x G q_j,
 * where G is one of the radial kernels below (p = bldtt_opts.param):
 *     BLDTT_COULOMB       1/r                     (p ignored)
 *     BLDTT_YUKAWA        exp(-p r)/r             (screened Coulomb, kappa = p >= 0)
 *     BLDTT_REGULARIZED   1/sqrt(r^2 + p^2)       (regularised Coulomb, eps = p > 0)
 *     BLDTT_SINC          sin(p r)/r              (oscillatory, wavenumber p > 0; the paper's
 *                                                  sin(pi r)/r is p = pi)
 *     BLDTT_MULTIQUADRIC  sqrt(r^2 + p^2)         (Hardy's multiquadric, shape c = p >= 0; the
 *                                                  kernel of fmm_rbf.h)
 * bldtt_kernel_default_param() gives the paper's values (kappa 0.5, eps 0.005, pi, c 1).
 * Units: whatever the caller's coordinates use; p has the unit of 1/length (Yukawa, sinc) or of
 * length (regularised, multiquadric). No 1/(4 pi eps0) or other prefactor.
 *
 * Scales. The plan and the direct sums compute in normalised units: coordinates divided by the
 * power of two of the largest |coordinate| (for the regularised and multiquadric kernels, of p
 * when it is larger; none within 2^-64..2^64, core/scale.h), p made dimensionless to match,
 * weights divided by the power of two of the largest |q|; phi and grad are scaled back exactly
 * (G_p(L r) = L^m G_p'(r), m = -1, or +1 for the multiquadric). Powers of two change no digit:
 * scaling the coordinates (and p with them) by 2^k scales phi by 2^(m k) and grad by 2^((m-1) k)
 * bitwise, anywhere in the double range. An output that is not representable (a value beyond
 * DBL_MAX, or a nonzero output whose largest value is below DBL_MIN; e.g. the Coulomb gradient of a
 * set 1e-160 wide) is FMM_ERR_RANGE rather than Inf, NaN or zeros; ask for phi alone (or grad
 * alone) if the other is in range. Limits: the sinc wavenumber times the largest |coordinate| must
 * lie in [2^-960, 2^1017] to a factor 4 (FMM_ERR_PARAM: p r would be subnormal or overflow); pairs
 * closer than about 2^-450 times the largest |coordinate| may lose digits of r^2 (subnormal)
 * or count as coincident (r^2 underflows to 0).
 *
 * Targets = sources (bldtt_setpts with targets NULL): the self term j == i is left out of
 * phi_i. Note for the multiquadric and the other kernels that are finite at r = 0: the
 * omitted self term is G(0) q_i (multiquadric: c q_i; regularised: q_i/eps; sinc: p q_i);
 * a caller that needs the full matrix-vector product (RBF interpolation) adds it itself.
 * Pairs at distance zero otherwise (coincident distinct points, or a target on a source) are
 * left out for the singular kernels (Coulomb, Yukawa) and included with G(0) for the others.
 *
 * Algorithm (docs/bldtt.md): source and target cluster trees (midpoint bisection of the
 * shrunk bounding box into 2, 4 or 8 children so that no box is more elongated than sqrt(2),
 * fewer children for small clusters; leaves hold at most leaf_size particles); on every
 * cluster a tensor grid of (n+1)^3 Chebyshev points of the second kind (proxy particles);
 * proxy charges by barycentric Lagrange interpolation at the leaves and interlevel
 * interpolation upwards; a dual tree traversal with the MAC (r_t + r_s) < theta R that emits
 * the four interaction types particle-particle, particle-cluster, cluster-particle and
 * cluster-cluster (proxies are used only for clusters with more than (n+1)^3 particles);
 * proxy potentials interpolated down to the children and the targets. BLTC: each target leaf
 * traverses the source tree (particle-particle and particle-cluster only). The error is
 * controlled by theta (smaller: more accurate) and the degree n (larger: more accurate); the
 * Coulomb error for uniform sets runs from about 1e-1 (theta 0.9, n 1) to 1e-10 (theta 0.5,
 * n 10); theta 0.7, n 8 gives about 1e-8 (docs/bldtt.md has the measured table).
 *
 * Shape (FINUFFT style, as fmm.h):
 *     bldtt_opts o; bldtt_default_opts(&o);
 *     o.kernel = BLDTT_MULTIQUADRIC; o.param = 0.1; o.theta = 0.7; o.degree = 8;
 *     bldtt_plan *p; int rc = bldtt_makeplan(&o, &p);
 *     rc = bldtt_setpts(p, ns, sources, 0, NULL);   // targets = sources; builds trees + lists
 *     rc = bldtt_execute(p, q, phi, NULL);           // as often as needed, new q each time
 *     bldtt_destroy(p); if (rc) puts(bldtt_strerror(rc));
 *
 * Lifetime and threads. After bldtt_destroy(p) the plan is gone: any further use of p, a second
 * bldtt_destroy(p) included, is undefined behaviour (as for free()); bldtt_destroy(NULL) does
 * nothing. One plan must not be called from two threads at once (undefined: its calls write
 * the plan's trees, buffers, timings and, for a CUDA plan, its device buffers); different plans
 * may be used from different threads at the same time, CPU or CUDA (they share no state), and
 * each call is OpenMP-parallel within its thread. The direct sums and the kernel functions keep
 * no state.
 *
 * Repeatability. On the CPU the same input gives bitwise the same outputs, call after call,
 * for any thread count (every output is summed by one thread in a fixed order; no sum over
 * threads). On the GPU this is not promised: on trees with few target leaves the
 * particle-particle sums are split over several blocks per target that add atomically in
 * arrival order, so the last digits (about 1e-16 relative) may differ from run to run; GPU and
 * CPU differ at that level too.
 *
 * Library code never prints, exits or aborts: every failure is a status code of enum
 * fmm_status (fmm_common.h). A failed call leaves the plan as it was before the call.
 */
#ifndef FMM_BLDTT_H
#define FMM_BLDTT_H

#include "fmm_common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum bldtt_kernel {
    BLDTT_COULOMB = 0,
    BLDTT_YUKAWA = 1,
    BLDTT_REGULARIZED = 2,
    BLDTT_SINC = 3,
    BLDTT_MULTIQUADRIC = 4,
    BLDTT_NKERNELS
};

enum bldtt_method {
    BLDTT_METHOD_DTT = 0, /* BLDTT: dual tree traversal, PP + PC + CP + CC (default) */
    BLDTT_METHOD_BLTC = 1 /* barycentric Lagrange treecode: target leaves against the source
                             tree, PP + PC only (for comparison) */
};

#define BLDTT_DEGREE_MAX 16   /* degree n in [0, BLDTT_DEGREE_MAX] */
#define BLDTT_LEAF_MAX 100000 /* leaf_size in [1, BLDTT_LEAF_MAX] (0 = automatic) */

typedef struct bldtt_opts {
    int kernel;    /* enum bldtt_kernel (default BLDTT_COULOMB) */
    double param;  /* kernel parameter, see the table above (default 0; Coulomb ignores it).
                      FMM_ERR_PARAM when out of range for the kernel or not finite */
    double theta;  /* MAC parameter, 0 < theta < 1 (default 0.7) */
    int degree;    /* interpolation degree n, 0..BLDTT_DEGREE_MAX (default 8): (n+1)^3 proxy
                      particles per cluster */
    int leaf_size; /* max particles per leaf, same for both trees (N0 = M0); 0 = automatic
                      (CPU: 0.7 (n+1)^3 clamped to [200, 2000]; CUDA: 2000, the paper's value) */
    int method;    /* enum bldtt_method (default BLDTT_METHOD_DTT) */
    int device;    /* enum fmm_device: FMM_DEVICE_CPU (default, OpenMP) or FMM_DEVICE_CUDA
                      (trees and lists on the CPU, everything else on the GPU; double) */
    int threads;   /* OpenMP threads; 0 = the OpenMP default */
} bldtt_opts;

/* What the plan built (after bldtt_setpts) and did (after bldtt_execute). */
typedef struct bldtt_info {
    long nsources, ntargets;
    int same;      /* 1 if targets = sources (one tree) */
    int leaf_size; /* the leaf size used */
    long source_clusters, target_clusters;
    long source_leaves, target_leaves;
    int source_depth, target_depth; /* deepest level (root = 0) */
    long pairs[4];                  /* cluster pairs per interaction type: [0] PP, [1] PC, [2] CP,
                                       [3] CC (PP and PC counted per target leaf) */
    double evals[4];                /* kernel evaluations per type in one execute (same order) */
    double time_setup_s;            /* last bldtt_setpts: trees and interaction lists (and, for a
                                       CUDA plan, their upload) */
    double time_setup_device_s;     /* the part of time_setup_s spent on the device's allocations
                                     and uploads (0 for a CPU plan) */
    double time_execute_s;          /* last bldtt_execute, wall clock (including transfers) */
} bldtt_info;

typedef struct bldtt_plan bldtt_plan;

void bldtt_default_opts(bldtt_opts *opts);

/* Checks and copies the options. Errors: FMM_ERR_ARG (opts or plan NULL), FMM_ERR_PARAM
 * (kernel, param, theta, degree, leaf_size or method out of range), FMM_ERR_THREADS
 * (threads outside [0, FMM_THREADS_MAX]), FMM_ERR_DEVICE (CUDA asked for but not built in or no
 * device), FMM_ERR_NOMEM. On failure *plan = NULL. */
int bldtt_makeplan(const bldtt_opts *opts, bldtt_plan **plan);

/* sources: ns interleaved coordinates x0 y0 z0 x1 ...; targets: nt interleaved coordinates, or
 * NULL for targets = sources (nt is then ignored; the self term is left out). Both copied.
 * Builds the trees and the interaction lists (and uploads them for a CUDA plan).
 * Errors: FMM_ERR_ARG (plan or sources NULL), FMM_ERR_NPTS (ns < 1, or nt < 1 with targets),
 * FMM_ERR_NONFINITE (NaN/Inf coordinate), FMM_ERR_PARAM (sinc wavenumber out of range for the
 * set's size, see "Scales"), FMM_ERR_NOMEM, FMM_ERR_CUDA. */
int bldtt_setpts(bldtt_plan *plan, long ns, const double *sources, long nt, const double *targets);

/* q: ns source weights (caller's source order). phi: nt potentials (target order, overwritten;
 * may be NULL only if grad is given). grad: 3 nt values d phi / d x_i interleaved (the
 * gradient with respect to the target position, i.e. minus the field for Coulomb), or NULL.
 * Errors: FMM_ERR_ARG (q NULL, or phi and grad both NULL), FMM_ERR_NOPTS (before a successful
 * bldtt_setpts), FMM_ERR_NONFINITE (NaN/Inf weight), FMM_ERR_RANGE (a requested output beyond
 * the double range, see "Scales"; phi and grad are then unspecified), FMM_ERR_NOMEM,
 * FMM_ERR_CUDA. */
int bldtt_execute(bldtt_plan *plan, const double *q, double *phi, double *grad);

int bldtt_get_info(const bldtt_plan *plan, bldtt_info *info);

void bldtt_destroy(bldtt_plan *plan);

/* Messages for the codes above (fmm_strerror's text). */
const char *bldtt_strerror(int status);

/* The O(N M) direct sum with the same kernel and conventions (targets NULL = sources, self
 * term left out): the reference for tests and --reference. Uses opts->kernel, param, device
 * (CPU OpenMP, or CUDA in double) and threads; grad may be NULL, phi may be NULL if grad is
 * given. The same normalised units as the plan ("Scales"). Errors as makeplan/setpts/execute. */
int bldtt_direct(const bldtt_opts *opts, long ns, const double *sources, const double *q, long nt,
                 const double *targets, double *phi, double *grad);

/* The same at m selected targets: idx[k] indexes the targets (or the sources when targets is
 * NULL, leaving out j == idx[k]); phi and grad have m (3m) entries. For error estimates. */
int bldtt_direct_subset(const bldtt_opts *opts, long ns, const double *sources, const double *q,
                        long nt, const double *targets, long m, const long *idx, double *phi,
                        double *grad);

/* Kernel names "coulomb", "yukawa", "regularized", "sinc", "multiquadric" (NULL out of range),
 * the reverse lookup (FMM_ERR_PARAM for an unknown name), and the paper's default parameter
 * (Coulomb 0, Yukawa 0.5, regularised 0.005, sinc pi, multiquadric 1). */
const char *bldtt_kernel_name(int kernel);
int bldtt_kernel_from_name(const char *name, int *kernel);
double bldtt_kernel_default_param(int kernel);

/* G(r) of a kernel (r >= 0; the limit at r = 0 for the finite kernels, +Inf for Coulomb and
 * Yukawa). For callers that need the self term (see above). NaN for a bad kernel index. */
double bldtt_kernel_value(int kernel, double param, double r);

#ifdef __cplusplus
}
#endif

#endif /* FMM_BLDTT_H */
