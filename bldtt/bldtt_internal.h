/* bldtt/bldtt_internal.h - data structures shared by the BLDTT CPU and CUDA code. */
#ifndef FMM_BLDTT_INTERNAL_H
#define FMM_BLDTT_INTERNAL_H

#define BT_PI 3.14159265358979323846

#include "fmm_bldtt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One cluster: a shrunk bounding box of the particles ibeg..iend-1 (tree order). Nodes are
 * stored breadth first, so parents precede children and each level is a contiguous range. */
typedef struct bt_node {
    long ibeg, iend;
    int child[8];
    int nchild;
    int parent; /* -1 for the root */
    int level;
    double lo[3], hi[3]; /* shrunk bounding box */
    double c[3], r;      /* box centre and half diagonal */
} bt_node;

typedef struct bt_tree {
    long n;
    double *x, *y, *z; /* coordinates in tree order */
    long *perm;        /* tree position -> caller's index */
    bt_node *nodes;
    int nnodes;
    int depth;        /* deepest level */
    int *level_start; /* nodes of level l: level_start[l] .. level_start[l+1]-1 */
    int *leaves;      /* leaf node indices */
    int nleaves;
    double *cheb; /* per node 3 (n+1) Chebyshev points: [node][dim][k] */
} bt_tree;

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
    int same; /* targets = sources: trg points at src */
    bt_tree src, trg_own;
    bt_tree *trg;
    bt_list lists[4]; /* PP, PC (by target leaf), CP, CC (by target cluster) */
    char *tneed;      /* target clusters whose proxy potentials are used */
    bldtt_info info;
    void *cuda; /* device state of a CUDA plan (bldtt_cuda.cu) */
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

/* Builds the tree of the n points xyz, each coordinate multiplied by 2^-elen (exactly). */
int bt_tree_build(bt_tree *t, long n, const double *xyz, int elen, int leaf, int degree);
void bt_tree_free(bt_tree *t);

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
