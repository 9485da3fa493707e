/*
 * fmm_rbf.h - multiquadric radial basis function interpolation by the Faul-Goodsell-Powell
 * (FGP) Krylov iteration with fast mat-vecs, evaluation of the interpolant, and RBF mesh
 * deformation with legacy-VTK input and output.
 *
 * What it computes. Given N distinct centres x_i in R^3 with values f_i and a shape parameter
 * c > 0, the interpolant
 *     s(x) = sum_i lambda_i phi(|x - x_i|) + alpha,   phi(r) = sqrt(r^2 + c^2),
 * with s(x_i) = f_i for every i and the side condition sum_i lambda_i = 0 (the multiquadric is
 * conditionally negative definite of order 1, so this system has exactly one solution for
 * N >= 2 distinct centres). Units: whatever the caller's coordinates use; c has the same unit.
 * Any finite scale works the same: the plan stores the centres in units of a power of 2 near
 * their extent and the values f in units of a power of 2 near max|f| (exact scalings), so
 * coordinates at 1e-300 or 1e300 give the fit they give at 1 (scaled); a result that double
 * cannot hold in the caller's units is FMM_ERR_RANGE, never inf, NaN or zeros. A c below
 * 2^-511 of the extent acts as that (no difference in double).
 *
 * Algorithm (docs/rbf.md, with the corrected step 6 of the FGP iteration): for a random
 * order sigma of the centres, the L-set of sigma(m) is the set of the q centres nearest to it
 * among sigma(m..N-1) (k-d tree queries); the local cardinal function
 * on each L-set (its saddle-point system reduced to a positive definite one of order |L| - 1,
 * solved by Cholesky) defines the preconditioned Krylov direction; each iteration needs one
 * mat-vec (Phi delta)_i at the centres, which is the direct sum (CPU: symmetric, each pair
 * once; or CUDA in double precision), BLDTT, or the multiquadric far-field series on a
 * tree (Martin & Haase 2014 / Cherrie, Beatson & Newsam 2002, with a corrected recurrence:
 * docs/rbf.md). The constant alpha is shifted every iteration so that max|r| is minimal.
 * Where the iteration fails (fmm_rbf_opts.dense_max), a dense LU solve of the same system
 * takes over (rbf/dense.c, docs/rbf.md) and fmm_rbf_result.solver says so.
 * The iteration stops when max_i |r_i| <= tolerance * max_i |f_i|, where r_i = f_i - s(x_i);
 * on convergence the residual is recomputed from scratch with one fresh mat-vec and the
 * iteration continues if that exceeds the tolerance (so drift of the recurrence cannot end it
 * early). With an approximate mat-vec (series, BLDTT) that check also evaluates the exact
 * direct sum at 1024 evenly spread centres; their largest difference e from the approximate
 * mat-vec estimates the operator's error, the fit ends only when max|r| + 2e <= tolerance
 * max|f|, and FMM_ERR_NOCONVERGE says the operator is too coarse for the tolerance when
 * 2e alone exceeds it (series_tol sets its accuracy; see docs/rbf.md).
 *
 * Shape (FINUFFT style, as fmm.h):
 *     fmm_rbf_opts o; fmm_rbf_default_opts(&o); o.shape = 0.1; o.tolerance = 1e-8;
 *     fmm_rbf_plan *p; int rc = fmm_rbf_makeplan(&o, &p);
 *     rc = fmm_rbf_setpts(p, n, xyz);                 // centres: k-d tree, L-sets, local solves
 *     rc = fmm_rbf_execute(p, f, lambda, &alpha, &res); // fit (as often as needed, new f)
 *     rc = fmm_rbf_eval(p, lambda, alpha, m, pts, s);  // s at m new points
 *     fmm_rbf_destroy(p); if (rc) puts(fmm_rbf_strerror(rc));
 *
 * Library code never prints, exits or aborts: every failure is a status code of enum
 * fmm_status (fmm_common.h). A failed call leaves the plan as it was before the call.
 *
 * What a caller must not do (undefined behaviour, not checked): use a plan after
 * fmm_rbf_destroy, or destroy it twice (fmm_rbf_destroy(NULL) does nothing); call functions on
 * one plan from two threads at once: a fit, an evaluation and a mat-vec write the plan's
 * buffers (the series mat-vec's weights and moments, the BLDTT and GPU buffers, the dense
 * fallback's factors, made on first use). Different plans may be used from different threads
 * at once (rbf/ keeps no global state), each with its own OpenMP threads.
 *
 * Repeatability: on the CPU the same input, options and thread count give bitwise the same
 * outputs (fit, evaluation, mat-vec, mean spacing, deformation): every sum over threads adds
 * per-thread parts in thread order (core/reduce.h), and no work that feeds a sum is handed out
 * in arrival order. Another thread count rounds differently (and may take another number of
 * iterations). On the GPU the direct mat-vec sums each target in a fixed order (no atomics,
 * rbf/rbf_cuda.cu), and the rest of the fit runs on the CPU as above: repeated fits on the same
 * device agree bitwise (RbfRepeat.BitwiseForTheSameThreadCount checks it where a GPU is
 * present); with the BLDTT mat-vec on the GPU, what fmm_bldtt.h says of BLDTT holds.
 */
#ifndef FMM_RBF_H
#define FMM_RBF_H

#include "fmm_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FMM_RBF_TOL_MIN 1e-13 /* tolerance range of fmm_rbf_opts.tolerance */
#define FMM_RBF_TOL_MAX 0.5
#define FMM_RBF_Q_MIN 2 /* L-set size range */
#define FMM_RBF_Q_MAX 200
/* fmm_rbf_opts.dense_max: its default and its largest value (the dense system takes
   8 (n + 1)^2 bytes: 128 MB at 4000 centres, 3.2 GB at 20000) */
#define FMM_RBF_DENSE_MAX 4000
#define FMM_RBF_DENSE_LIMIT 20000

/* How the mat-vec (Phi w)_i = sum_j w_j sqrt(|x_i - x_j|^2 + c^2) is computed. */
enum fmm_rbf_matvec {
    FMM_RBF_MATVEC_AUTO = 0,   /* the plan picks the fastest for the size and device */
    FMM_RBF_MATVEC_DIRECT = 1, /* O(N^2) direct sum in double (CPU OpenMP or CUDA) */
    FMM_RBF_MATVEC_SERIES = 2, /* multiquadric far-field series on a k-d cluster tree (CPU) */
    FMM_RBF_MATVEC_BLDTT = 3   /* barycentric Lagrange dual tree traversal (fmm_bldtt.h) with
                                  the multiquadric kernel, CPU or CUDA; (theta, degree) from
                                  series_tol: (0.7, 5) >= 1e-5, (0.7, 8) >= 1e-8, else (0.5, 10) */
};

typedef struct fmm_rbf_opts {
    double shape;      /* c > 0, same unit as the coordinates (default 1) */
    double tolerance;  /* stop when max|r| <= tolerance * max|f|; [1e-13, 0.5] (default 1e-8) */
    int lset_size;     /* q, the L-set size, [2, 200], or 0 (default): automatic, for the
                          direct CPU mat-vec 80 from 10000 centres and 96 from 16000 (where its
                          O(n^2) cost makes fewer iterations worth the O(n q^3) setup), else 50 */
    int max_iter;      /* FMM_ERR_NOCONVERGE after this many iterations (default 500; >= 1) */
    int matvec;        /* enum fmm_rbf_matvec (default AUTO) */
    double series_tol; /* series mat-vec: relative accuracy of each far-field term bound;
                          BLDTT: picks (theta, degree) as above; 0 = automatic (series:
                          tolerance / 100, at least 1e-12; BLDTT: tolerance / 1000);
                          else (0, 1e-2] */
    int device;        /* enum fmm_device: FMM_DEVICE_CUDA runs the direct mat-vec and the
                          evaluation on the GPU (FMM_ERR_DEVICE without one) */
    int threads;       /* OpenMP threads; 0 = the OpenMP default */
    unsigned long long seed; /* seed of the random order sigma (default 1): fits are
                                reproducible for a given seed */
    int mixed_precision;     /* 1 (default): a fit with the direct CPU mat-vec takes some of its
                                passes in single precision (~2.7x faster each; the iteration keeps
                                their error well below its residual, and the final residual is
                                computed in double either way: rbf/fit.c); 0: double throughout */
    int dense_max;           /* a fit of at most this many centres that the FGP iteration does not
                                finish (max_iter, a breakdown, an operator too coarse, or more than
                                half of the local systems singular) falls back to a dense LU solve
                                of the same system (rbf/dense.c: O(n^3) time, 8 (n + 1)^2 bytes
                                kept in the plan), refined until its residual, recomputed with the
                                exact direct sum in double, meets the tolerance; the result says
                                which solver gave it. [0, FMM_RBF_DENSE_LIMIT]; 0: never;
                                default FMM_RBF_DENSE_MAX */
} fmm_rbf_opts;

/* Which solver gave a fit (fmm_rbf_result.solver). */
enum fmm_rbf_solver {
    FMM_RBF_SOLVER_FGP = 0,  /* the FGP iteration */
    FMM_RBF_SOLVER_DENSE = 1 /* the dense LU fallback (opts.dense_max), on the CPU */
};

/* Result of a fit. */
typedef struct fmm_rbf_result {
    int iterations;      /* FGP iterations (mat-vecs in the Krylov loop), with the dense
                            fallback those before it (0 where the FGP iteration was not tried:
                            more than half of the local systems singular) */
    double max_residual; /* max_i |f_i - s(x_i)| / max_i |f_i| (plain max|r| if f = 0),
                            recomputed with a fresh mat-vec at the end; for the series
                            and BLDTT, that of the approximate operator plus e (above); after
                            the dense fallback, from the direct sum (long double) plus a
                            bound on its kernel values' rounding: an upper bound on the
                            exact residual at the caller's coordinates */
    double time_setup_s; /* fmm_rbf_setpts time: k-d tree, L-sets, local solves */
    double time_fit_s;   /* this fmm_rbf_execute */
    double time_matvec_s;/* of which in mat-vecs */
    int single_passes;   /* mat-vec passes in single precision (CPU direct sums: rbf/fit.c) */
    int matvec;          /* the mat-vec used (DIRECT, SERIES or BLDTT) */
    int device;          /* where it ran */
    int solver;          /* enum fmm_rbf_solver: the solver that gave lambda and alpha */
} fmm_rbf_result;

typedef struct fmm_rbf_plan fmm_rbf_plan;

void fmm_rbf_default_opts(fmm_rbf_opts *opts);

/* Checks the options: FMM_ERR_ARG (NULL), FMM_ERR_PARAM (shape not finite and > 0, lset_size,
 * mixed_precision not 0 or 1,
 * max_iter, matvec or series_tol out of range), FMM_ERR_TOLERANCE, FMM_ERR_THREADS,
 * FMM_ERR_DEVICE (CUDA asked for, none usable), FMM_ERR_UNSUPPORTED (series on CUDA). */
int fmm_rbf_makeplan(const fmm_rbf_opts *opts, fmm_rbf_plan **plan);

/* The centres: n interleaved coordinates (copied). FMM_ERR_NPTS (n < 2), FMM_ERR_NONFINITE,
 * FMM_ERR_COINCIDENT (two equal centres, or two too close to tell apart in double relative to
 * the set's extent), FMM_ERR_NOMEM, FMM_ERR_NOCONVERGE (c so large against the extent that
 * every kernel value is the same in double; or more than half of the local systems numerically
 * singular, c far too large for the spacing or centres nearly coincident for this c, with more
 * than dense_max centres: up to dense_max the fit then goes to the dense solve directly; fewer
 * are skipped). Builds the k-d trees, the L-sets and their local cardinal functions; O(N q^3). */
int fmm_rbf_setpts(fmm_rbf_plan *plan, long n, const double *xyz);

/* Fit: f (n values at the centres, setpts order) -> lambda (n), alpha. result may be NULL.
 * FMM_ERR_NOPTS before setpts, FMM_ERR_NONFINITE for NaN/Inf in f, FMM_ERR_NOCONVERGE after
 * max_iter iterations or on a breakdown, where the dense fallback is off (n > dense_max) or
 * does not reach the tolerance either (then lambda, alpha hold the iterate with the smaller
 * residual and result that residual), FMM_ERR_NOMEM (also for the dense fallback's matrix),
 * FMM_ERR_RANGE where lambda in the caller's units leaves double's range (coordinates far
 * larger or smaller than the values f allow: lambda ~ f / extent). */
int fmm_rbf_execute(fmm_rbf_plan *plan, const double *f, double *lambda, double *alpha,
                    fmm_rbf_result *result);

/* s(y_k) = sum_i lambda_i sqrt(|y_k - x_i|^2 + c^2) + alpha at m points (interleaved xyz),
 * by the plan's mat-vec method (direct on CPU/GPU, or the series with the plan's accuracy).
 * m = 0 is allowed. FMM_ERR_NONFINITE for NaN/Inf in lambda, alpha or the points,
 * FMM_ERR_RANGE where an s overflows (or a point lies beyond double's range in the plan's
 * units: more than ~1e308 extents of the centres away). */
int fmm_rbf_eval(fmm_rbf_plan *plan, const double *lambda, double alpha, long m,
                 const double *xyz, double *s);

/* One mat-vec at the centres, out_i = sum_j w_j sqrt(|x_i - x_j|^2 + c^2), by the plan's
 * method (for benchmarks). ms (may be NULL) receives its wall time in milliseconds.
 * FMM_ERR_RANGE where an out_i overflows. */
int fmm_rbf_matvec(fmm_rbf_plan *plan, const double *w, double *out, double *ms);

/* The method the plan picked (enum fmm_rbf_matvec) and the L-set size; after setpts. */
int fmm_rbf_get_method(const fmm_rbf_plan *plan, int *matvec, int *lset_size);

void fmm_rbf_destroy(fmm_rbf_plan *plan);

/* Messages for the codes above, worded for this solver. */
const char *fmm_rbf_strerror(int status);

/* ---- mesh deformation ---------------------------------------------------------------- */

/* Moves mesh nodes by RBF interpolation of prescribed displacements: one interpolant per
 * component is fitted to the nb boundary points bxyz (interleaved) with displacements disp
 * (interleaved dx dy dz), all three with one plan (the L-sets are shared) and side by side (with
 * the direct mat-vec, CPU or GPU, the three iterations share each pass over the kernel values), and
 * evaluated at the m nodes xyz (interleaved, updated in place: x += s(x)). A node that coincides
 * with a boundary point receives that point's displacement exactly (the interpolant reproduces it
 * to the tolerance; the exact value is then written). result (may be NULL) gets the largest
 * iteration count and residual of the three fits. Errors as makeplan/setpts/execute. */
int fmm_rbf_deform(const fmm_rbf_opts *opts, long nb, const double *bxyz, const double *disp,
                   long m, double *xyz, fmm_rbf_result *result);

/* Mean distance from each point to its nearest neighbour (a starting value for the shape c
 * in mesh deformation). FMM_ERR_NPTS for n < 2, FMM_ERR_NONFINITE, FMM_ERR_NOMEM. */
int fmm_rbf_mean_spacing(long n, const double *xyz, double *h);

/* ---- legacy VTK unstructured grids (ASCII) ------------------------------------------- */

/* A mesh: points and cells in VTK's legacy layout. Cell c has the node indices
 * conn[offset[c] .. offset[c+1]-1] and the VTK cell type types[c] (10 tetra, 12 hexahedron,
 * 13 wedge, 14 pyramid, 5 triangle, 9 quad, ...). */
typedef struct fmm_vtk_mesh {
    long npoints;
    double *xyz;  /* 3 * npoints */
    long ncells;
    long *offset; /* ncells + 1 */
    long *conn;   /* offset[ncells] */
    int *types;   /* ncells */
} fmm_vtk_mesh;

/* Reads a legacy ASCII "DATASET UNSTRUCTURED_GRID" file: POINTS, CELLS, CELL_TYPES; other
 * sections (POINT_DATA, CELL_DATA, FIELD, ...) are skipped. FMM_ERR_IO (cannot open or read),
 * FMM_ERR_FORMAT (not legacy VTK, not an unstructured grid, BINARY, counts that do not match,
 * node indices out of range, non-numeric or non-finite values), FMM_ERR_NOMEM. On failure the
 * mesh is left empty (all zero). */
int fmm_vtk_read(const char *path, fmm_vtk_mesh *mesh);

/* Writes the mesh as legacy ASCII VTK 3.0 (the points with %.17g). FMM_ERR_ARG, FMM_ERR_IO.
 * title may be NULL. */
int fmm_vtk_write(const char *path, const fmm_vtk_mesh *mesh, const char *title);

void fmm_vtk_free(fmm_vtk_mesh *mesh);

/* Smallest signed volume ratio over the 3-D cells (tetra, hexahedron, wedge, pyramid) of a
 * deformed mesh relative to the same cells of the original: the minimum over cells of
 * V_new / V_old, with V from the decomposition into tetrahedra of each cell (for a hexahedron,
 * the minimum over its 8 corner tetrahedra). A value <= 0 means an inverted (or collapsed)
 * cell. FMM_ERR_ARG if the meshes do not have the same cells, FMM_ERR_FORMAT if there is no
 * 3-D cell. */
int fmm_vtk_min_volume_ratio(const fmm_vtk_mesh *before, const fmm_vtk_mesh *after,
                             double *ratio);

#ifdef __cplusplus
}
#endif

#endif
