/* bldtt/bldtt_internal.h - data structures shared by the BLDTT CPU and CUDA code. */
#ifndef FMM_BLDTT_INTERNAL_H
#define FMM_BLDTT_INTERNAL_H

#define BT_PI 3.14159265358979323846

#include "core/cluster_tree.h"
#include "fmm_bldtt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Interaction lists in CSR form by target: entries start[t] .. start[t+1]-1 of src are the
 * source clusters of target cluster t (t a node of the target tree). */
typedef struct bt_list {
    int *start; /* target nodes + 1 */
    int *src;
    long count;
} bt_list;

enum { BT_PP = 0, BT_PC = 1, BT_CP = 2, BT_CC = 3 };

/* The plan (opaque in fmm_bldtt.h). */
struct bldtt_plan {
    bldtt_opts o;
    int elen;   /* the trees hold the coordinates divided by 2^elen (bt_scale_lengths) */
    double prm; /* the kernel parameter in those units */
    int leaf;   /* leaf size used for both trees */
    int n1, np; /* degree + 1 and (degree + 1)^3 */
    double w[BLDTT_DEGREE_MAX + 1]; /* barycentric weights */
    int have_pts;
    int same;             /* targets = sources: trg points at src */
    ct_tree src, trg_own; /* the cluster trees (core/cluster_tree.h, CT_SPLIT_BISECT) */
    ct_tree *trg;
    /* the Chebyshev points of every cluster of the source and target trees: [node][dim][n1] */
    double *src_cheb, *trg_cheb_own;
    const double *trg_cheb;
    bt_list lists[4]; /* PP, PC (by target leaf), CP, CC (by target cluster) */
    char *tneed;      /* target clusters whose proxy potentials are used */
    bldtt_info info;
    void *cuda; /* device state of a CUDA plan (bt_gpu::bt_dev, bldtt_cuda_plan.cuh) */
};

/* One target against a run of sources, accumulated: out[0] += sum_j G q_j and, for the
 * gradient variant, out[1..3] += sum_j f (t - s_j) q_j (bldtt/direct.c). bt_eval_table[k][g]:
 * kernel k, g = 1 with the gradient. */
typedef void (*bt_eval_fn)(double p, double tx, double ty, double tz, long ns, const double *sx,
                           const double *sy, const double *sz, const double *q, double *out);
extern const bt_eval_fn bt_eval_table[BLDTT_NKERNELS][2];

/* bldtt/plan.c: FMM_ERR_PARAM for a kernel or parameter out of range; FMM_ERR_DEVICE for CUDA
 * without a usable device */
int bt_check_kernel(int k, double p);
int bt_check_device(int device);
/* m of G_p(L r) = L^m G_p'(r): +1 for the multiquadric, -1 for the others */
int bt_kernel_degree(int k);
/* the exponent elen of the normalised units and the kernel parameter in them, for points whose
 * largest |coordinate| is amax (FMM_ERR_PARAM where the sinc's p r would leave double's range) */
int bt_scale_lengths(int k, double p, double amax, int *elen, double *ps);
/* frees the trees, lists and device state of a plan's points */
void bt_free_geometry(bldtt_plan *p);

/* Builds the cluster tree of the n points xyz, each coordinate multiplied by 2^-elen
 * (exactly), with leaves of at most leaf points, and the Chebyshev points of degree `degree` of
 * each cluster's box (*cheb, [node][dim][degree + 1]); threads as in bldtt_opts. FMM_OK or
 * FMM_ERR_NOMEM (nothing allocated then). */
int bt_tree_build(ct_tree *t, double **cheb, long n, const double *xyz, int elen, int leaf,
                  int degree, int threads);
/* Chebyshev points of the second kind on [a, b], k = 0..n: s_k = a + (cos(pi k/n)+1)/2 (b-a),
 * with s_0 = b and s_n = a exactly; barycentric weights w_k = (-1)^k delta_k. */
void bt_cheb_points(int n, double a, double b, double *s);
void bt_cheb_weights(int n, double *w);
/* Lagrange basis values L_k(x), k = 0..n, for the points s and weights w (barycentric form;
 * the Kronecker delta when x is within BT_NODE_HIT of a point, where w_k / (x - s_k) could
 * overflow; the points of a box are far further apart than that on the normalised
 * coordinates, below 2^66 in magnitude, unless the whole box is below the double range's
 * resolution). */
#define BT_NODE_HIT 0x1p-1000
void bt_lagrange(int n, const double *s, const double *w, double x, double *L);

#ifdef __cplusplus
}
#endif

#endif
