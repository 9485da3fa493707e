/* Internals of the FGP-RBF solver (rbf/): plan, mat-vec back ends. */
#ifndef FMM_RBF_INTERNAL_H
#define FMM_RBF_INTERNAL_H

#include "core/simd.h"
#include "fmm_bldtt.h"
#include "fmm_rbf.h"
#include "rbf/kdtree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- direct sum on the CPU: out[i] = sum_j w[j] sqrt(|t_i - s_j|^2 + c2), OpenMP ---- */
#define RBF_MAXW 3 /* weight vectors per pass (mesh deformation: the three components) */
/* nw (1 .. RBF_MAXW) weight vectors w + k ns, results out + k m; FMM_ERR_NOMEM */
int rbf_direct_cpu(long ns, const double *sx, const double *sy, const double *sz, int nw,
                    const double *w, double c2, long m, const double *tx, const double *ty,
                    const double *tz, double *out, int threads);
/* the same at the centres themselves (Phi w, symmetric: each pair once), nw (1 .. RBF_MAXW)
   weight vectors w + k n, results out + k n; single: in single precision (rbf/direct.c: ~2.7x
   faster, absolute error up to ~RBF_SINGLE_ERR u_f phi_max ||w||_2 in a row, u_f = 2^-24 and
   phi_max the largest kernel value; the coordinates, c2 and w must fit float's range);
   FMM_ERR_NOMEM */
int rbf_direct_self_cpu(long n, const double *x, const double *y, const double *z, int nw,
                        const double *w, double c2, int single, double *out, int threads);
/* measured 3.0-3.7 (N = 5000-20000, uniform centres, the fit's search directions) and 2.6-3.2 in
   RbfFit.SinglePrecisionSumWithinItsBound (random weights) */
#define RBF_SINGLE_ERR 4.0
/* the fit takes back the single-precision passes' error (a double pass) once they may have moved
   its residual this far, relative to its size (rbf/fit.c) */
#define RBF_SINGLE_GAP 1e-4

/* ---- local cardinal functions of the L-sets (rbf/local.c), RBF_LANES sets at once ---- */
/* one set per lane of the machine's double vector (core/simd.h: 8 with AVX-512, 4 with AVX2):
   wider GCC vectors than the registers are split and spilled, which made the solves ~5x slower
   on Zen 3 (20000 centres, q = 80: 1.5 against 0.27 CPU-s) */
#define RBF_LANES SIMD_W
/* doubles of workspace (64-byte aligned) for rbf_local_solve with sets of up to q points */
long rbf_local_work(int q);
/* Set v (lane v) has cnt[v] points, 2 <= cnt[v] <= q, point i at px/py/pz[i * RBF_LANES + v],
 * point 0 its centre; entries past cnt[v] are ignored. zeta[i * RBF_LANES + v] (i < cnt[v])
 * receives the normalised coefficients (docs/rbf.md, step 5: zeta / sqrt(-zeta^T Phi zeta)).
 * Arrays 64-byte aligned. Returns the bit mask of degenerate sets (their zeta is 0). */
int rbf_local_solve(int q, const int *cnt, const double *px, const double *py, const double *pz,
                    double c2, double *work, double *zeta);

/* ---- multiquadric far-field series on a k-d cluster tree (rbf/series.c) ---- */
typedef struct rbf_series rbf_series;
/* sources in caller's order (interleaved); tol: relative accuracy of each far-field term */
int rbf_series_create(rbf_series **s, long n, const double *xyz, double c, double tol);
/* out (m) = Phi w at targets (SoA); w in caller's order of the sources */
int rbf_series_apply(rbf_series *s, const double *w, long m, const double *tx, const double *ty,
                     const double *tz, double *out, int threads);
/* same at the sources themselves (uses the source tree as target batches) */
int rbf_series_apply_self(rbf_series *s, const double *w, double *out, int threads);
void rbf_series_destroy(rbf_series *s);
/* order L and opening parameter theta chosen for tol */
void rbf_series_params(double tol, int *L, double *theta);

/* ---- CUDA direct sum (rbf/rbf_cuda.cu), double precision ---- */
typedef struct rbf_cuda rbf_cuda;
int rbf_cuda_create(rbf_cuda **g, long n, const double *x, const double *y, const double *z);
/* nw (1 .. RBF_MAXW) weight vectors w + k n, results out + k m; targets NULL: the sources
   themselves (m = n) */
int rbf_cuda_matvec(rbf_cuda *g, double c2, int nw, const double *w, long m, const double *tx,
                    const double *ty, const double *tz, double *out);
void rbf_cuda_destroy(rbf_cuda *g);

/* ---- the dense fallback of the fit (rbf/dense.c) ---- */
typedef struct rbf_dense rbf_dense; /* the LU factors of the plan's saddle-point system */
/* nw (1 .. RBF_MAXW) sides f + k n (the plan's units) solved with the LU factors (factored on
 * first use, kept in the plan), each refined with the exact direct sum until max|r| <= thr[k];
 * lambda + k n, alpha[k] receive the best iterate, rmax[k] its max|r| (INFINITY where none was
 * finite). FMM_ERR_NOCONVERGE where a side stays above thr[k] or the matrix is singular to
 * working precision, FMM_ERR_NOMEM. */
int rbf_dense_fit(fmm_rbf_plan *p, int nw, const double *f, const double *thr, double *lambda,
                  double *alpha, double *rmax);
void rbf_dense_destroy(rbf_dense *d);

/* ---- lengths in the plan's units ---- */
/* The unit of a set of n points (interleaved xyz): 2^e with the largest half-extent of their
 * bounding box in [2^(e-1), 2^e), so that scaling by it is exact; ctr[d] the coordinate that
 * all points share in dimension d (subtracted exactly: the only case where x / 2^e could
 * overflow), else 0. A point x is ldexp(x[d] - ctr[d], -e) in these units. Returns 0, or
 * FMM_ERR_COINCIDENT where all points are at one position (e = 0, ctr = that position). */
int rbf_length_unit(long n, const double *xyz, double ctr[3], int *e);

struct fmm_rbf_plan {
    fmm_rbf_opts o;
    int threads;   /* resolved */
    /* The plan works in its own unit of length (rbf_length_unit of the centres: extent 1 to 2),
       where every kernel value is that in the caller's units times 2^-lexp exactly; the public
       entry points convert. c2: c^2 in these units, at least DBL_MIN (below, c makes no
       difference in double: extent^2 is ~1), c = sqrt(c2) */
    int lexp;
    double ctr[3], c, c2;
    /* centres, in the plan's units */
    long n;
    double *x, *y, *z;
    /* L-sets: set m (for centre perm[m], m = 0 .. n-2) holds lcnt[m] entries at m*q */
    int q;
    long *perm;
    int *lcnt;
    int *lidx;
    double *lzeta; /* zeta / sqrt(-zeta^T Phi zeta): the normalised local cardinal coefficients */
    long ndegenerate; /* sets skipped: their local system was numerically singular */
    int fgp_off;      /* more than half of them: the fit goes to the dense solve directly */
    rbf_dense *dense; /* LU factors of the fallback, once a fit needed them (else NULL) */
    int matvec;    /* resolved method */
    rbf_series *ser;
    rbf_cuda *gpu;
    struct bldtt_plan *bl; /* BLDTT mat-vec at the centres (targets = sources) */
    double time_setup;
};

/* mat-vec of nw (1 .. RBF_MAXW) weight vectors w + k n at m targets (NULL: the centres, m = n)
 * into out + k m, by the plan's method (the direct sums take all nw in one pass); targets and
 * results in the plan's units */
int rbf_plan_apply(fmm_rbf_plan *p, int nw, const double *w, long m, const double *tx,
                   const double *ty, const double *tz, double *out);
/* the fit of nw (1 .. RBF_MAXW) right-hand sides f + k n at once (lambda + k n, alpha[k]; the
 * caller's units): by the FGP iteration, each side with its own iteration and stop, their
 * mat-vecs sharing the direct sums' passes; then, where it fails, the dense fallback for all
 * sides. res: the most iterations and the largest residual of the nw. fmm_rbf_execute is
 * nw = 1. */
int rbf_fit(fmm_rbf_plan *p, int nw, const double *f, double *lambda, double *alpha,
            fmm_rbf_result *res);
/* s_k(y) = sum_i lambda[k n + i] phi(|y - x_i|) + alpha[k] at m points (interleaved xyz) into
 * s + k m, for nw (1 .. RBF_MAXW) interpolants (the caller's units); the checks of
 * fmm_rbf_eval */
int rbf_eval(fmm_rbf_plan *p, int nw, const double *lambda, const double *alpha, long m,
             const double *xyz, double *s);

/* rbf/plan.c: frees the centres, L-sets and mat-vec structures of a plan (its options stay);
 * the BLDTT options of the plan's accuracy and kernel */
void rbf_free_centres(fmm_rbf_plan *p);
void rbf_bldtt_opts(const fmm_rbf_plan *p, bldtt_opts *bo);
/* rbf/apply.c: the largest |v_i| of n values */
double rbf_max_abs(long n, const double *v);

#ifdef __cplusplus
}
#endif

#endif
