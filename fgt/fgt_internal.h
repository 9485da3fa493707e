/* fgt_internal.h - the FGT plan and what the CPU (plan.c, tables.c, setpts.c, execute.c) and CUDA
 * (fgt_cuda.cu) code share.
 *
 * Geometry: coordinates are scaled, u = (x - lo) / h, so the kernel is exp(-|u - v|^2). That
 * is computed as (x 2^-elen - lo) / hs with lo and hs = h 2^-elen in the same units (elen the
 * fmm_scale_exponent of the larger of h and the largest |coordinate|, core/scale.h): x - lo
 * cannot overflow, and h may be as small as the points' own scale, subnormal included.
 * A d-dimensional problem lives in the LAST d of three axes (the others hold u = b/2, the
 * centre of their single box): the box key is (i0 * n1 + i1) * n2 + i2, so the boxes of one
 * (i0, i1) column are contiguous in key order, and so are their points.
 * Expansion coefficients are stored as tensors [a0][a1][a2] with stride P (the plan's
 * largest order) on the used axes and extent 1 on the unused ones.
 */
#ifndef FMM_FGT_INTERNAL_H
#define FMM_FGT_INTERNAL_H

#include <stdint.h>

#include "fmm_fgt.h"

#ifdef __CUDACC__
#define FGT_HD __host__ __device__
#else
#define FGT_HD
#endif

#define FGT_PMAX FGT_ORDER_MAX
#define FGT_RMAX 48 /* largest neighbour radius in boxes */

/* What a box pair at offset k (per-axis |k| folded into one index) needs: 0 = cut off. */
typedef struct fgt_offset {
    unsigned char keep;   /* 0: the pair is below the cut-off (dropped) */
    unsigned char p_herm; /* order of the Hermite or Taylor mode (same bound), 0 = none <= PMAX */
    unsigned char p_h2t;  /* order of the H2T mode, 0 = none <= PMAX */
} fgt_offset;

/* Cost model (arbitrary units ~ one fused multiply-add), per box pair. */
typedef struct fgt_cost {
    double direct; /* per source-target pair (vector exp) */
    double coef;   /* per coefficient of an evaluation or a build, per point */
    double fun;    /* per 1-D function value per point */
    double h2t;    /* per multiply-add of the separable translation */
    double pair;   /* fixed cost of visiting a box pair */
} fgt_cost;

struct fgt_plan {
    int dim;
    double h;
    fgt_opts o;
    int have_pts;
    int order_dims; /* number of unused leading axes: 3 - dim */

    /* geometry */
    long ns, nt;
    int elen;        /* coordinates and h are taken in units of 2^elen */
    double fl;       /* ldexp(1, -elen), for fmm_pow2 */
    double hs;       /* h in those units (<= 1) */
    double lo[3];    /* lower corner of the points, in those units */
    double b;        /* box side (scaled units) */
    long n[3];       /* boxes per axis (1 on unused axes) */
    int R;           /* neighbour radius (boxes) on used axes */
    int P;           /* largest order used (tensor stride) */
    int pe[3];       /* P on used axes, 1 on unused */
    long ncoef;      /* pe[0]*pe[1]*pe[2] */
    fgt_offset *off; /* (R+1)^3 entries, index (|k0|*(R+1) + |k1|)*(R+1) + |k2| */
    int *colR;       /* (2R+1)^2 entries: largest kept |k2| of column (k0,k1), -1 if none */
    double *M;       /* H2T 1-D matrices, (2R+1) of P*P8, transposed: M[k][alpha*P8+beta] */
    fgt_cost cost;

    /* sorted points: scaled coordinates, per axis, padded by 8 (q = 0 in the padding) */
    double *su[3], *tu[3];
    long *sperm, *tperm; /* sorted position -> caller's index */
    /* non-empty boxes, sorted by key; points of box i at [start[i], start[i+1]) */
    long nsb, ntb;
    int64_t *skey, *tkey;
    long *sstart, *tstart;
    long *aidx; /* source box -> index into the Hermite coefficient array, -1 if not needed */
    long na;
    long pairs[5];

    /* execute buffers */
    double *sq, *A, *gs;

    void *cuda; /* fgt_gpu::State (fgt/fgt_cuda_plan.cuh), made by fgt_cuda.cu */
};

/* The mode of a pair with ns sources, nt targets at offset entry e; *p receives its order. */
FGT_HD static inline int fgt_choose_mode(const fgt_offset *e, int dim, long ns, long nt, int force,
                                         const fgt_cost *c, int *p) {
    double best = c->direct * (double)ns * (double)nt;
    int mode = FGT_MODE_DIRECT;
    *p = 0;
    int ph = e->p_herm, pt = e->p_h2t;
    double ph_d = 1, pt_d = 1;
    for (int d = 0; d < dim; ++d) ph_d *= ph, pt_d *= pt;
    if (force) {
        if ((force == FGT_MODE_HERMITE || force == FGT_MODE_TAYLOR) && ph)
            *p = ph, mode = force;
        else if (force == FGT_MODE_H2T && pt)
            *p = pt, mode = force;
        return mode;
    }
    if (ph) {
        double ch = (double)nt * (c->coef * ph_d + c->fun * dim * ph);
        double ct = (double)ns * (c->coef * ph_d + c->fun * dim * ph);
        if (ch < best) best = ch, mode = FGT_MODE_HERMITE, *p = ph;
        if (ct < best) best = ct, mode = FGT_MODE_TAYLOR, *p = ph;
    }
    if (pt) {
        double c4 = c->h2t * dim * pt_d * pt;
        if (c4 < best) best = c4, mode = FGT_MODE_H2T, *p = pt;
    }
    return mode;
}

FGT_HD static inline const fgt_offset *fgt_off(const fgt_offset *off, int R, long k0, long k1,
                                               long k2) {
    if (k0 < 0) k0 = -k0;
    if (k1 < 0) k1 = -k1;
    if (k2 < 0) k2 = -k2;
    return off + ((k0 * (R + 1) + k1) * (R + 1) + k2);
}

FGT_HD static inline int64_t fgt_key(const long n[3], long i0, long i1, long i2) {
    return ((int64_t)i0 * n[1] + i1) * n[2] + i2;
}

/* the first of the n sorted keys k that is >= v (n if none) */
FGT_HD static inline long fgt_lower_bound(const int64_t *k, long n, int64_t v) {
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (k[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#ifdef __cplusplus
extern "C" {
#endif
/* fgt/plan.c: frees the plan's points, boxes, tables and device state */
void fgt_free_geometry(fgt_plan *p);
/* fgt/tables.c: the cost model's default weights; the box side and its tables (b, R, P, off,
 * colR, M) for points of scaled extents ext, by t's dimension, options and cost model */
fgt_cost fgt_default_cost(void);
int fgt_choose_boxes(fgt_plan *t, const double ext[3], long ns, long nt);
/* fgt/setpts.c: the box indices of a key; fgt_traverse calls visit(ctx, sb, k, mode, order)
 * for every kept source box sb of target box tb, in key order (k: the box offset) */
typedef void (*fgt_visit_fn)(void *ctx, long sb, const long k[3], int mode, int order);
void fgt_box_index(const fgt_plan *p, int64_t key, long i[3]);
void fgt_traverse(const fgt_plan *p, long tb, fgt_visit_fn visit, void *ctx);
/* fgt_cuda.cu (setpts, free), fgt_cuda_passes.cu (execute, stage times), fgt_cuda_bench.cu
   (absent without CUDA: the CPU files do not call them then) */
int fgt_cuda_setpts(fgt_plan *p);
int fgt_cuda_execute(fgt_plan *p, const double *q_sorted, double *g_sorted);
void fgt_cuda_free(fgt_plan *p);
int fgt_cuda_stage_times_impl(const fgt_plan *p, double ms[4]);
int fgt_cuda_hermite_bench_impl(long n, int p, int nclusters, double side, double *ms);
#ifdef __cplusplus
}
#endif

#endif
