/* bldtt/bldtt.c - the BLDTT / BLTC solver: plan, dual tree traversal, CPU (OpenMP) evaluation,
 * direct sums. The algorithm follows Wilson, Vaughn & Krasny (2021) as digested in
 * shared/design/digest-rbf-bldtt.md part B; docs/bldtt.md describes it. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "core/scale.h"
#include "bldtt/bldtt_internal.h"
#include "bldtt/kernels.h"

/* ---- kernel loops: one target against a run of sources, accumulated ---------------------- */

typedef void (*bt_eval_fn)(double p, double tx, double ty, double tz, long ns, const double *sx,
                           const double *sy, const double *sz, const double *q, double *out);

/* out[0] += sum_j G q_j; with grad, out[1..3] += sum_j f (t - s_j) q_j as well */
static inline __attribute__((always_inline)) void
eval_impl(int K, int grad, double p, double tx, double ty, double tz, long ns, const double *sx,
          const double *sy, const double *sz, const double *q, double *out) {
    double a = 0, gx = 0, gy = 0, gz = 0;
    if (grad) {
#pragma omp simd reduction(+ : a, gx, gy, gz)
        for (long j = 0; j < ns; ++j) {
            double dx = tx - sx[j], dy = ty - sy[j], dz = tz - sz[j];
            double f, g = bt_kernel(K, dx * dx + dy * dy + dz * dz, p, &f);
            a += g * q[j];
            f *= q[j];
            gx += f * dx, gy += f * dy, gz += f * dz;
        }
        out[1] += gx, out[2] += gy, out[3] += gz;
    } else {
#pragma omp simd reduction(+ : a)
        for (long j = 0; j < ns; ++j) {
            double dx = tx - sx[j], dy = ty - sy[j], dz = tz - sz[j];
            a += bt_kernel(K, dx * dx + dy * dy + dz * dz, p, NULL) * q[j];
        }
    }
    out[0] += a;
}

#define BT_EVAL_DEF(K)                                                                             \
    static void eval_##K##_0(double p, double tx, double ty, double tz, long ns, const double *sx, \
                             const double *sy, const double *sz, const double *q, double *out) {   \
        eval_impl(K, 0, p, tx, ty, tz, ns, sx, sy, sz, q, out);                                    \
    }                                                                                              \
    static void eval_##K##_1(double p, double tx, double ty, double tz, long ns, const double *sx, \
                             const double *sy, const double *sz, const double *q, double *out) {   \
        eval_impl(K, 1, p, tx, ty, tz, ns, sx, sy, sz, q, out);                                    \
    }
BT_EVAL_DEF(0)
BT_EVAL_DEF(1)
BT_EVAL_DEF(2)
BT_EVAL_DEF(3)
BT_EVAL_DEF(4)
static const bt_eval_fn eval_table[BLDTT_NKERNELS][2] = {{eval_0_0, eval_0_1},
                                                         {eval_1_0, eval_1_1},
                                                         {eval_2_0, eval_2_1},
                                                         {eval_3_0, eval_3_1},
                                                         {eval_4_0, eval_4_1}};

/* ---- kernels, names, parameters ---------------------------------------------------------- */

static const char *kernel_names[BLDTT_NKERNELS] = {"coulomb", "yukawa", "regularized", "sinc",
                                                   "multiquadric"};

const char *bldtt_kernel_name(int k) {
    return k >= 0 && k < BLDTT_NKERNELS ? kernel_names[k] : NULL;
}

int bldtt_kernel_from_name(const char *name, int *k) {
    if (!name || !k) return FMM_ERR_ARG;
    for (int i = 0; i < BLDTT_NKERNELS; ++i)
        if (!strcmp(name, kernel_names[i])) {
            *k = i;
            return FMM_OK;
        }
    return FMM_ERR_PARAM;
}

double bldtt_kernel_default_param(int k) {
    switch (k) {
    case BLDTT_YUKAWA:
        return 0.5;
    case BLDTT_REGULARIZED:
        return 0.005;
    case BLDTT_SINC:
        return BT_PI;
    case BLDTT_MULTIQUADRIC:
        return 1.0;
    default:
        return 0.0;
    }
}

double bldtt_kernel_value(int k, double p, double r) {
    if (k < 0 || k >= BLDTT_NKERNELS || !(r >= 0)) return NAN;
    if (r == 0 && bt_kernel_singular(k)) return INFINITY;
    switch (k) { /* constant k per call: the switch in bt_kernel needs a literal to fold */
    case BLDTT_COULOMB:
        return bt_kernel(BLDTT_COULOMB, r * r, p, NULL);
    case BLDTT_YUKAWA:
        return bt_kernel(BLDTT_YUKAWA, r * r, p, NULL);
    case BLDTT_REGULARIZED:
        return bt_kernel(BLDTT_REGULARIZED, r * r, p, NULL);
    case BLDTT_SINC:
        return bt_kernel(BLDTT_SINC, r * r, p, NULL);
    default:
        return bt_kernel(BLDTT_MULTIQUADRIC, r * r, p, NULL);
    }
}

const char *bldtt_strerror(int status) {
    return fmm_strerror(status);
}

void bldtt_default_opts(bldtt_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->kernel = BLDTT_COULOMB;
    o->param = 0;
    o->theta = 0.7;
    o->degree = 8;
    o->leaf_size = 0;
    o->method = BLDTT_METHOD_DTT;
    o->device = FMM_DEVICE_CPU;
    o->threads = 0;
}

static int check_kernel(int k, double p) {
    if (k < 0 || k >= BLDTT_NKERNELS) return FMM_ERR_PARAM;
    if (k == BLDTT_COULOMB) return FMM_OK;
    if (!isfinite(p)) return FMM_ERR_PARAM;
    if ((k == BLDTT_REGULARIZED || k == BLDTT_SINC) && !(p > 0)) return FMM_ERR_PARAM;
    if (!(p >= 0)) return FMM_ERR_PARAM;
    return FMM_OK;
}

static int check_device(int device) {
    if (device == FMM_DEVICE_CPU) return FMM_OK;
    if (device != FMM_DEVICE_CUDA) return FMM_ERR_PARAM;
#ifdef FMM_HAVE_CUDA
    return fmm_cuda_device_count() > 0 ? FMM_OK : FMM_ERR_DEVICE;
#else
    return FMM_ERR_DEVICE;
#endif
}

static int check_opts(const bldtt_opts *o) {
    int rc = check_kernel(o->kernel, o->param);
    if (rc) return rc;
    if (!(o->theta > 0 && o->theta < 1)) return FMM_ERR_PARAM;
    if (o->degree < 0 || o->degree > BLDTT_DEGREE_MAX) return FMM_ERR_PARAM;
    if (o->leaf_size < 0 || o->leaf_size > BLDTT_LEAF_MAX) return FMM_ERR_PARAM;
    if (o->method != BLDTT_METHOD_DTT && o->method != BLDTT_METHOD_BLTC) return FMM_ERR_PARAM;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    return check_device(o->device);
}

/* ---- scales ------------------------------------------------------------------------------ */

/* The sums are computed in normalised units (core/scale.h): coordinates divided by L = 2^elen
 * with elen = fmm_scale_exponent of the largest |coordinate| (for the regularised and
 * multiquadric kernels, of the parameter if it is larger, so that r^2 + p^2 stays in range),
 * and weights by 2^eq likewise. A power of two changes no digit, so the results are those of
 * the unscaled sum wherever that stays in the double range; but 1/r^3, r^2 + p^2 and the like
 * no longer leave it for coordinates near 1e-300 or 1e300. Every kernel is homogeneous under the
 * matching change of its parameter, G_p(L r) = L^m G_p'(r) (m = +1 for the multiquadric, -1 for
 * the others; p' = p L for Yukawa and sinc, p / L for the regularised and multiquadric
 * kernels), so the outputs are scaled back exactly: phi by 2^(eq + m elen), grad by
 * 2^(eq + (m - 1) elen). */

static int kernel_degree(int k) {
    return k == BLDTT_MULTIQUADRIC ? 1 : -1;
}

/* elen and the parameter in those units for points whose largest |coordinate| is amax.
 * FMM_ERR_PARAM where the sinc wavenumber times amax leaves [2^-960, 2^1018): p r would be
 * subnormal or overflow at some distances of the set (docs/bldtt.md, "Scales"). */
static int scale_lengths(int k, double p, double amax, int *elen, double *ps) {
    int len_param = k == BLDTT_REGULARIZED || k == BLDTT_MULTIQUADRIC;
    int e = fmm_scale_exponent(len_param && p > amax ? p : amax);
    *elen = e;
    *ps = k == BLDTT_COULOMB ? 0 : ldexp(p, len_param ? -e : e);
    /* Yukawa: above DBL_MAX exp(-p r) is 0 at every nonzero distance, as it is at DBL_MAX */
    if (k == BLDTT_YUKAWA && *ps > DBL_MAX) *ps = DBL_MAX;
    if (k == BLDTT_SINC && amax > 0) {
        int pa = ilogb(p) + ilogb(amax); /* p amax in [2^pa, 2^(pa + 2)) */
        if (pa < -960 || pa > 1017) return FMM_ERR_PARAM;
    }
    return FMM_OK;
}

/* ---- plan -------------------------------------------------------------------------------- */

int bldtt_makeplan(const bldtt_opts *opts, bldtt_plan **plan) {
    if (plan) *plan = NULL;
    if (!opts || !plan) return FMM_ERR_ARG;
    int rc = check_opts(opts);
    if (rc) return rc;
    bldtt_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->o = *opts;
    p->n1 = opts->degree + 1;
    p->np = p->n1 * p->n1 * p->n1;
    if (opts->leaf_size > 0)
        p->leaf = opts->leaf_size;
    else if (opts->device == FMM_DEVICE_CUDA)
        p->leaf = 2000;
    else {
        int l = (int)(0.7 * p->np); /* measured at N = 1e5, n = 4 and 8, 2 threads */
        p->leaf = l < 200 ? 200 : l > 2000 ? 2000 : l;
    }
    bt_cheb_weights(opts->degree, p->w);
    *plan = p;
    return FMM_OK;
}

static void free_lists(bt_list *l) {
    for (int k = 0; k < 4; ++k)
        free(l[k].start), free(l[k].src), l[k].start = NULL, l[k].src = NULL, l[k].count = 0;
}

static void free_geometry(bldtt_plan *p) {
#ifdef FMM_HAVE_CUDA
    if (p->cuda) bt_cuda_free(p);
#endif
    p->cuda = NULL;
    bt_tree_free(&p->src);
    bt_tree_free(&p->trg_own);
    free_lists(p->lists);
    free(p->tneed);
    p->tneed = NULL;
    p->have_pts = 0;
}

void bldtt_destroy(bldtt_plan *p) {
    if (!p) return;
    free_geometry(p);
    free(p);
}

int bldtt_get_info(const bldtt_plan *p, bldtt_info *info) {
    if (!p || !info) return FMM_ERR_ARG;
    *info = p->info;
    return FMM_OK;
}

/* ---- dual tree traversal ----------------------------------------------------------------- */

typedef struct pairbuf {
    int *t, *s;
    long n, cap;
    int fail;
} pairbuf;

static void pb_add(pairbuf *b, int t, int s) {
    if (b->fail) return;
    if (b->n == b->cap) {
        long nc = b->cap ? 2 * b->cap : 1024;
        int *nt = realloc(b->t, sizeof(int) * nc);
        if (!nt) {
            b->fail = 1;
            return;
        }
        b->t = nt;
        int *ns = realloc(b->s, sizeof(int) * nc);
        if (!ns) {
            b->fail = 1;
            return;
        }
        b->s = ns, b->cap = nc;
    }
    b->t[b->n] = t, b->s[b->n] = s, ++b->n;
}

typedef struct dtt_ctx {
    const bt_tree *T, *S;
    double theta;
    long np;
    double osc; /* wavenumber of an oscillatory kernel, else 0 */
    int degree;
    pairbuf pb[4];
} dtt_ctx;

static long cnt(const bt_node *n) {
    return n->iend - n->ibeg;
}

/* (r_t + r_s) < theta R; for the oscillatory kernel also p r <= n for both clusters (a
 * degree-n interpolant resolves about n radians of sin(p r) per cluster radius) */
static int mac(const dtt_ctx *c, const bt_node *a, const bt_node *b) {
    double dx = a->c[0] - b->c[0], dy = a->c[1] - b->c[1], dz = a->c[2] - b->c[2];
    double R = sqrt(dx * dx + dy * dy + dz * dz);
    if (c->osc > 0 && (c->osc * a->r > c->degree || c->osc * b->r > c->degree)) return 0;
    return a->r + b->r < c->theta * R;
}

/* PP and PC write to target particles: emitted per target leaf (leaves own disjoint ranges) */
static void add_leaves(dtt_ctx *c, int type, int t, int s) {
    const bt_node *nt = &c->T->nodes[t];
    if (nt->nchild == 0) {
        pb_add(&c->pb[type], t, s);
        return;
    }
    for (int k = 0; k < nt->nchild; ++k) add_leaves(c, type, nt->child[k], s);
}

static void dtt(dtt_ctx *c, int t, int s) {
    const bt_node *nt = &c->T->nodes[t], *ns = &c->S->nodes[s];
    if (mac(c, nt, ns)) {
        int bt = cnt(nt) > c->np, bs = cnt(ns) > c->np;
        if (bt && bs)
            pb_add(&c->pb[BT_CC], t, s);
        else if (bt)
            pb_add(&c->pb[BT_CP], t, s);
        else if (bs)
            add_leaves(c, BT_PC, t, s);
        else
            add_leaves(c, BT_PP, t, s);
        return;
    }
    int lt = nt->nchild == 0, ls = ns->nchild == 0;
    if (lt && ls)
        pb_add(&c->pb[BT_PP], t, s);
    else if (ls || (!lt && cnt(nt) > cnt(ns)))
        for (int k = 0; k < nt->nchild; ++k) dtt(c, nt->child[k], s);
    else
        for (int k = 0; k < ns->nchild; ++k) dtt(c, t, ns->child[k]);
}

/* BLTC: a target leaf against the source tree */
static void bltc(dtt_ctx *c, int t, int s) {
    const bt_node *nt = &c->T->nodes[t], *ns = &c->S->nodes[s];
    if (mac(c, nt, ns)) {
        pb_add(&c->pb[cnt(ns) > c->np ? BT_PC : BT_PP], t, s);
        return;
    }
    if (ns->nchild == 0) {
        pb_add(&c->pb[BT_PP], t, s);
        return;
    }
    for (int k = 0; k < ns->nchild; ++k) bltc(c, t, ns->child[k]);
}

/* pairs -> CSR by target node (stable: the traversal order within a target) */
static int to_csr(const pairbuf *b, int ntn, bt_list *l) {
    l->start = calloc((size_t)ntn + 1, sizeof(int));
    l->src = malloc(sizeof(int) * (b->n ? b->n : 1));
    if (!l->start || !l->src) return FMM_ERR_NOMEM;
    for (long k = 0; k < b->n; ++k) l->start[b->t[k] + 1]++;
    for (int t = 0; t < ntn; ++t) l->start[t + 1] += l->start[t];
    int *pos = malloc(sizeof(int) * (ntn ? ntn : 1));
    if (!pos) return FMM_ERR_NOMEM;
    memcpy(pos, l->start, sizeof(int) * ntn);
    for (long k = 0; k < b->n; ++k) l->src[pos[b->t[k]]++] = b->s[k];
    free(pos);
    l->count = b->n;
    return FMM_OK;
}

static int build_lists(bldtt_plan *p) {
    dtt_ctx c;
    memset(&c, 0, sizeof c);
    c.T = p->trg, c.S = &p->src, c.theta = p->o.theta, c.np = p->np;
    c.osc = p->o.kernel == BLDTT_SINC ? p->prm : 0;
    c.degree = p->o.degree;
    if (p->o.method == BLDTT_METHOD_BLTC)
        for (int k = 0; k < p->trg->nleaves; ++k) bltc(&c, p->trg->leaves[k], 0);
    else
        dtt(&c, 0, 0);
    int rc = FMM_OK;
    for (int k = 0; k < 4; ++k)
        if (c.pb[k].fail) rc = FMM_ERR_NOMEM;
    for (int k = 0; k < 4 && !rc; ++k) rc = to_csr(&c.pb[k], p->trg->nnodes, &p->lists[k]);
    for (int k = 0; k < 4; ++k) free(c.pb[k].t), free(c.pb[k].s);
    if (rc) return rc;
    /* target clusters whose proxy potentials are needed: CP/CC targets and their subtrees */
    const bt_tree *T = p->trg;
    p->tneed = calloc((size_t)T->nnodes, 1);
    if (!p->tneed) return FMM_ERR_NOMEM;
    for (int i = 0; i < T->nnodes; ++i) { /* breadth-first order: parents first */
        const bt_node *nd = &T->nodes[i];
        p->tneed[i] = p->lists[BT_CC].start[i + 1] > p->lists[BT_CC].start[i] ||
                      p->lists[BT_CP].start[i + 1] > p->lists[BT_CP].start[i] ||
                      (nd->parent >= 0 && p->tneed[nd->parent]);
    }
    /* statistics */
    memset(p->info.pairs, 0, sizeof p->info.pairs);
    memset(p->info.evals, 0, sizeof p->info.evals);
    for (int k = 0; k < 4; ++k) {
        p->info.pairs[k] = p->lists[k].count;
        double e = 0;
        for (int t = 0; t < T->nnodes; ++t) {
            double nt = (k == BT_PP || k == BT_PC) ? (double)cnt(&T->nodes[t]) : (double)p->np;
            for (int j = p->lists[k].start[t]; j < p->lists[k].start[t + 1]; ++j) {
                double ns = (k == BT_PP || k == BT_CP)
                                ? (double)cnt(&p->src.nodes[p->lists[k].src[j]])
                                : (double)p->np;
                e += nt * ns;
            }
        }
        p->info.evals[k] = e;
    }
    return FMM_OK;
}

/* ---- setpts ------------------------------------------------------------------------------ */

int bldtt_setpts(bldtt_plan *plan, long ns, const double *sources, long nt, const double *targets) {
    if (!plan || !sources) return FMM_ERR_ARG;
    if (ns < 1 || (targets && nt < 1)) return FMM_ERR_NPTS;
    if (ns > (long)1 << 40 || (targets && nt > (long)1 << 40)) return FMM_ERR_NPTS;
    int saved = omp_get_max_threads();
    if (plan->o.threads > 0) omp_set_num_threads(plan->o.threads);
    double t0 = omp_get_wtime();
    double amax = 0;
    int elen = 0;
    double prm = 0;
    int rc = fmm_check_max_abs(3 * ns, sources, &amax, 0);
    if (!rc && targets) rc = fmm_check_max_abs(3 * nt, targets, &amax, 0);
    if (!rc) rc = scale_lengths(plan->o.kernel, plan->o.param, amax, &elen, &prm);
    if (rc) goto out;
    /* build into a scratch plan so that a failure leaves the old geometry intact */
    bldtt_plan t = *plan;
    t.cuda = NULL;
    memset(&t.src, 0, sizeof t.src), memset(&t.trg_own, 0, sizeof t.trg_own);
    memset(t.lists, 0, sizeof t.lists);
    t.tneed = NULL;
    t.have_pts = 0;
    t.elen = elen, t.prm = prm;
    rc = bt_tree_build(&t.src, ns, sources, elen, t.leaf, t.o.degree);
    if (!rc && targets) rc = bt_tree_build(&t.trg_own, nt, targets, elen, t.leaf, t.o.degree);
    if (!rc) {
        t.same = !targets;
        t.trg = targets ? &t.trg_own : &t.src;
        rc = build_lists(&t);
    }
    double t_dev = omp_get_wtime();
#ifdef FMM_HAVE_CUDA
    if (!rc && t.o.device == FMM_DEVICE_CUDA) rc = bt_cuda_setpts(&t);
#endif
    t_dev = omp_get_wtime() - t_dev;
    if (rc) {
        free_geometry(&t);
        goto out;
    }
    free_geometry(plan);
    *plan = t;
    if (!plan->same)
        plan->trg = &plan->trg_own;
    else
        plan->trg = &plan->src;
    plan->have_pts = 1;
    bldtt_info *I = &plan->info;
    I->nsources = ns, I->ntargets = targets ? nt : ns, I->same = plan->same;
    I->leaf_size = plan->leaf;
    I->source_clusters = plan->src.nnodes, I->target_clusters = plan->trg->nnodes;
    I->source_leaves = plan->src.nleaves, I->target_leaves = plan->trg->nleaves;
    I->source_depth = plan->src.depth, I->target_depth = plan->trg->depth;
    I->time_setup_s = omp_get_wtime() - t0;
    I->time_setup_device_s = plan->o.device == FMM_DEVICE_CUDA ? t_dev : 0;
    I->time_execute_s = 0;
out:
    if (plan->o.threads > 0) omp_set_num_threads(saved);
    return rc;
}

/* ---- CPU evaluation ---------------------------------------------------------------------- */

/* dims: contraction out[a,b,c] (+)= sum over one index per step, as three 1-D passes.
 * A(o, i) = trans ? M[i n1 + o] : M[o n1 + i] for each of the three matrices. */
static void contract3(int n1, const double *Mx, const double *My, const double *Mz, int trans,
                      const double *in, double *out, double *t1, double *t2) {
#define MA(M, o, i) (trans ? (M)[(i)*n1 + (o)] : (M)[(o)*n1 + (i)])
    for (int c = 0; c < n1; ++c)
        for (int b = 0; b < n1; ++b)
            for (int a = 0; a < n1; ++a) {
                double s = 0;
                for (int i = 0; i < n1; ++i) s += MA(Mx, a, i) * in[i + n1 * (b + n1 * c)];
                t1[a + n1 * (b + n1 * c)] = s;
            }
    for (int c = 0; c < n1; ++c)
        for (int b = 0; b < n1; ++b)
            for (int a = 0; a < n1; ++a) {
                double s = 0;
                for (int i = 0; i < n1; ++i) s += MA(My, b, i) * t1[a + n1 * (i + n1 * c)];
                t2[a + n1 * (b + n1 * c)] = s;
            }
    for (int c = 0; c < n1; ++c)
        for (int b = 0; b < n1; ++b)
            for (int a = 0; a < n1; ++a) {
                double s = 0;
                for (int i = 0; i < n1; ++i) s += MA(Mz, c, i) * t2[a + n1 * (b + n1 * i)];
                out[a + n1 * (b + n1 * c)] += s;
            }
#undef MA
}

/* M_d[kc n1 + k] = L^parent_k(s^child_{d,kc}) for the three dimensions */
static void interlevel(const bt_tree *T, int n1, const double *w, int parent, int child,
                       double *M) {
    for (int d = 0; d < 3; ++d) {
        const double *sp = T->cheb + ((size_t)parent * 3 + d) * n1;
        const double *sc = T->cheb + ((size_t)child * 3 + d) * n1;
        for (int kc = 0; kc < n1; ++kc) bt_lagrange(n1 - 1, sp, w, sc[kc], M + (d * n1 + kc) * n1);
    }
}

/* proxy coordinates of a node (flattened k1 + n1 (k2 + n1 k3)) */
static void proxies(const bt_tree *T, int n1, int node, double *px, double *py, double *pz) {
    const double *cx = T->cheb + (size_t)node * 3 * n1, *cy = cx + n1, *cz = cy + n1;
    for (int k3 = 0; k3 < n1; ++k3)
        for (int k2 = 0; k2 < n1; ++k2)
            for (int k1 = 0; k1 < n1; ++k1) {
                int j = k1 + n1 * (k2 + n1 * k3);
                px[j] = cx[k1], py[j] = cy[k2], pz[j] = cz[k3];
            }
}

/* proxy charges of the source tree: leaves from particles, parents from children */
static void upward(const bldtt_plan *p, const double *qs, double *qhat) {
    const bt_tree *S = &p->src;
    int n1 = p->n1, np = p->np;
    const double *w = p->w;
    memset(qhat, 0, sizeof(double) * (size_t)np * S->nnodes);
#pragma omp parallel
    {
        double L[3][BLDTT_DEGREE_MAX + 1];
#pragma omp for schedule(dynamic, 4)
        for (int k = 0; k < S->nleaves; ++k) {
            int nd = S->leaves[k];
            const bt_node *b = &S->nodes[nd];
            const double *cx = S->cheb + (size_t)nd * 3 * n1;
            double *qh = qhat + (size_t)nd * np;
            for (long i = b->ibeg; i < b->iend; ++i) {
                bt_lagrange(n1 - 1, cx, w, S->x[i], L[0]);
                bt_lagrange(n1 - 1, cx + n1, w, S->y[i], L[1]);
                bt_lagrange(n1 - 1, cx + 2 * n1, w, S->z[i], L[2]);
                for (int k3 = 0; k3 < n1; ++k3)
                    for (int k2 = 0; k2 < n1; ++k2) {
                        double a = qs[i] * L[2][k3] * L[1][k2];
                        double *row = qh + n1 * (k2 + n1 * k3);
#pragma omp simd
                        for (int k1 = 0; k1 < n1; ++k1) row[k1] += a * L[0][k1];
                    }
            }
        }
    }
    for (int lev = S->depth - 1; lev >= 0; --lev) {
#pragma omp parallel
        {
            double M[3 * (BLDTT_DEGREE_MAX + 1) * (BLDTT_DEGREE_MAX + 1)];
            double *t1 = malloc(sizeof(double) * 2 * np);
#pragma omp for schedule(dynamic, 1)
            for (int nd = S->level_start[lev]; nd < S->level_start[lev + 1]; ++nd) {
                const bt_node *b = &S->nodes[nd];
                if (!t1) continue;
                for (int c = 0; c < b->nchild; ++c) {
                    interlevel(S, n1, w, nd, b->child[c], M);
                    contract3(n1, M, M + n1 * n1, M + 2 * n1 * n1, 1,
                              qhat + (size_t)b->child[c] * np, qhat + (size_t)nd * np, t1, t1 + np);
                }
            }
            free(t1);
        }
    }
}

static int execute_cpu(bldtt_plan *p, const double *qs, double *out, int grad) {
    const bt_tree *S = &p->src, *T = p->trg;
    int n1 = p->n1, np = p->np, nv = grad ? 4 : 1;
    double prm = p->prm;
    bt_eval_fn ev = eval_table[p->o.kernel][grad];
    int need_up = p->lists[BT_PC].count + p->lists[BT_CC].count > 0;
    int need_down = p->lists[BT_CP].count + p->lists[BT_CC].count > 0;
    double *qhat = need_up ? malloc(sizeof(double) * (size_t)np * S->nnodes) : NULL;
    /* target proxy values: [node][v][np], v = phi, d/dx, d/dy, d/dz */
    double *tp = need_down ? calloc((size_t)np * nv * T->nnodes, sizeof(double)) : NULL;
    int fail = (need_up && !qhat) || (need_down && !tp);
    if (fail) {
        free(qhat), free(tp);
        return FMM_ERR_NOMEM;
    }
    if (need_up) upward(p, qs, qhat);
    const double *w = p->w;
#pragma omp parallel reduction(| : fail)
    {
        double *buf = malloc(sizeof(double) * 7 * np);
        fail |= !buf;
        double *tx = buf, *ty = tx + np, *tz = ty + np, *sx = tz + np, *sy = sx + np, *sz = sy + np;
        double *t1 = sz + np;
        (void)t1;
        /* 1. cluster-particle and cluster-cluster: target proxy values */
        if (need_down) {
#pragma omp for schedule(dynamic, 1)
            for (int t = 0; t < T->nnodes; ++t) {
                const bt_list *cc = &p->lists[BT_CC], *cp = &p->lists[BT_CP];
                if (!buf || (cc->start[t] == cc->start[t + 1] && cp->start[t] == cp->start[t + 1]))
                    continue;
                proxies(T, n1, t, tx, ty, tz);
                double *v = tp + (size_t)t * nv * np;
                for (int j = cp->start[t]; j < cp->start[t + 1]; ++j) {
                    const bt_node *b = &S->nodes[cp->src[j]];
                    long ns = b->iend - b->ibeg;
                    for (int l = 0; l < np; ++l) {
                        double o4[4] = {0, 0, 0, 0};
                        ev(prm, tx[l], ty[l], tz[l], ns, S->x + b->ibeg, S->y + b->ibeg,
                           S->z + b->ibeg, qs + b->ibeg, o4);
                        for (int a = 0; a < nv; ++a) v[a * np + l] += o4[a];
                    }
                }
                for (int j = cc->start[t]; j < cc->start[t + 1]; ++j) {
                    int s = cc->src[j];
                    proxies(S, n1, s, sx, sy, sz);
                    const double *qh = qhat + (size_t)s * np;
                    for (int l = 0; l < np; ++l) {
                        double o4[4] = {0, 0, 0, 0};
                        ev(prm, tx[l], ty[l], tz[l], np, sx, sy, sz, qh, o4);
                        for (int a = 0; a < nv; ++a) v[a * np + l] += o4[a];
                    }
                }
            }
        }
        /* 2. downward: parents' proxy values interpolated to their children, level by level */
        if (need_down)
            for (int lev = 0; lev < T->depth; ++lev) {
                double M[3 * (BLDTT_DEGREE_MAX + 1) * (BLDTT_DEGREE_MAX + 1)];
#pragma omp for schedule(dynamic, 1)
                for (int nd = T->level_start[lev]; nd < T->level_start[lev + 1]; ++nd) {
                    const bt_node *b = &T->nodes[nd];
                    if (!buf || !p->tneed[nd]) continue;
                    for (int c = 0; c < b->nchild; ++c) {
                        int ch = b->child[c];
                        interlevel(T, n1, w, nd, ch, M);
                        for (int a = 0; a < nv; ++a)
                            contract3(n1, M, M + n1 * n1, M + 2 * n1 * n1, 0,
                                      tp + ((size_t)nd * nv + a) * np,
                                      tp + ((size_t)ch * nv + a) * np, sx, sy);
                    }
                }
            }
        /* 3. target leaves: leaf proxy values to the targets, particle-particle, particle-cluster
         */
        double L[3][BLDTT_DEGREE_MAX + 1];
#pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < T->nleaves; ++k) {
            int t = T->leaves[k];
            const bt_node *b = &T->nodes[t];
            if (!buf) continue;
            const bt_list *pp = &p->lists[BT_PP], *pc = &p->lists[BT_PC];
            const double *cx = T->cheb + (size_t)t * 3 * n1;
            for (long i = b->ibeg; i < b->iend; ++i) {
                double o4[4] = {0, 0, 0, 0};
                double xi = T->x[i], yi = T->y[i], zi = T->z[i];
                if (need_down && p->tneed[t]) {
                    bt_lagrange(n1 - 1, cx, w, xi, L[0]);
                    bt_lagrange(n1 - 1, cx + n1, w, yi, L[1]);
                    bt_lagrange(n1 - 1, cx + 2 * n1, w, zi, L[2]);
                    const double *v = tp + (size_t)t * nv * np;
                    for (int a = 0; a < nv; ++a) {
                        double s = 0;
                        for (int k3 = 0; k3 < n1; ++k3)
                            for (int k2 = 0; k2 < n1; ++k2) {
                                const double *row = v + a * np + n1 * (k2 + n1 * k3);
                                double r = 0;
#pragma omp simd reduction(+ : r)
                                for (int k1 = 0; k1 < n1; ++k1) r += row[k1] * L[0][k1];
                                s += r * L[1][k2] * L[2][k3];
                            }
                        o4[a] += s;
                    }
                }
                for (int j = pp->start[t]; j < pp->start[t + 1]; ++j) {
                    const bt_node *sb = &S->nodes[pp->src[j]];
                    long b0 = sb->ibeg, b1 = sb->iend;
                    if (p->same && i >= b0 && i < b1) { /* leave out the self term */
                        ev(prm, xi, yi, zi, i - b0, S->x + b0, S->y + b0, S->z + b0, qs + b0, o4);
                        ev(prm, xi, yi, zi, b1 - i - 1, S->x + i + 1, S->y + i + 1, S->z + i + 1,
                           qs + i + 1, o4);
                    } else
                        ev(prm, xi, yi, zi, b1 - b0, S->x + b0, S->y + b0, S->z + b0, qs + b0, o4);
                }
                for (int j = pc->start[t]; j < pc->start[t + 1]; ++j) {
                    int s = pc->src[j];
                    proxies(S, n1, s, sx, sy, sz);
                    ev(prm, xi, yi, zi, np, sx, sy, sz, qhat + (size_t)s * np, o4);
                }
                long o = T->perm[i];
                if (out) {
                    out[o] = o4[0];
                    if (grad)
                        out[T->n + 3 * o] = o4[1], out[T->n + 3 * o + 1] = o4[2],
                                       out[T->n + 3 * o + 2] = o4[3];
                }
            }
        }
        free(buf);
    }
    free(qhat), free(tp);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

int bldtt_execute(bldtt_plan *p, const double *q, double *phi, double *grad) {
    if (!p || !q || (!phi && !grad)) return FMM_ERR_ARG;
    if (!p->have_pts) return FMM_ERR_NOPTS;
    long ns = p->src.n, nt = p->trg->n;
    int saved = omp_get_max_threads();
    if (p->o.threads > 0) omp_set_num_threads(p->o.threads);
    double t0 = omp_get_wtime();
    int rc = FMM_OK;
    double *qs = malloc(sizeof(double) * ns);
    double *out = malloc(sizeof(double) * nt * (grad ? 4 : 1));
    if (!qs || !out) rc = FMM_ERR_NOMEM;
    double qmax = 0;
    if (!rc) rc = fmm_check_max_abs(ns, q, &qmax, 0);
    const int eq = fmm_scale_exponent(qmax);
    if (!rc) {
        const double f = ldexp(1.0, -eq);
#pragma omp parallel for schedule(static)
        for (long i = 0; i < ns; ++i) qs[i] = fmm_pow2(q[p->src.perm[i]], f, -eq);
#ifdef FMM_HAVE_CUDA
        if (p->o.device == FMM_DEVICE_CUDA)
            rc = bt_cuda_execute(p, qs, out, grad != NULL);
        else
#endif
            rc = execute_cpu(p, qs, out, grad != NULL);
    }
    const int m = kernel_degree(p->o.kernel);
    if (!rc && phi) rc = fmm_scale_output(nt, out, 0, out, 0, eq + m * p->elen, 0);
    if (!rc && grad)
        rc = fmm_scale_output(3 * nt, out + nt, 0, out + nt, 0, eq + (m - 1) * p->elen, 0);
    if (!rc) {
        if (phi) memcpy(phi, out, sizeof(double) * nt);
        if (grad) memcpy(grad, out + nt, sizeof(double) * 3 * nt);
    }
    free(qs), free(out);
    p->info.time_execute_s = omp_get_wtime() - t0;
    if (p->o.threads > 0) omp_set_num_threads(saved);
    return rc;
}

/* ---- direct sums ------------------------------------------------------------------------- */

int bldtt_direct_subset(const bldtt_opts *o, long ns, const double *src, const double *q, long nt,
                        const double *trg, long m, const long *idx, double *phi, double *grad) {
    if (!o || !src || !q || (!phi && !grad) || (m > 0 && !idx)) return FMM_ERR_ARG;
    int rc = check_kernel(o->kernel, o->param);
    if (rc) return rc;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (ns < 1 || (trg && nt < 1) || m < 0) return FMM_ERR_NPTS;
    long ntt = trg ? nt : ns;
    for (long k = 0; k < m; ++k)
        if (idx[k] < 0 || idx[k] >= ntt) return FMM_ERR_ARG;
    double amax = 0, qmax = 0;
    int elen = 0;
    double prm = 0;
    const int th = o->threads;
    if ((rc = fmm_check_max_abs(3 * ns, src, &amax, th)) ||
        (trg && (rc = fmm_check_max_abs(3 * nt, trg, &amax, th))))
        return rc;
    if ((rc = fmm_check_max_abs(ns, q, &qmax, th))) return rc;
    const int eq = fmm_scale_exponent(qmax);
    if ((rc = scale_lengths(o->kernel, o->param, amax, &elen, &prm))) return rc;
    if ((rc = check_device(o->device))) return rc;
    /* scaled copies (see "scales" above): sources by coordinate, the weights, and the targets
     * interleaved as given (the sources again when trg is NULL) */
    double *buf = malloc(sizeof(double) * (size_t)(4 * ns + 3 * ntt));
    if (!buf) return FMM_ERR_NOMEM;
    double *sx = buf, *sy = sx + ns, *sz = sy + ns, *qs = sz + ns, *tc = qs + ns;
    double *sd[3] = {sx, sy, sz};
    const double *tin = trg ? trg : src;
    const double fl = ldexp(1.0, -elen), fq = ldexp(1.0, -eq);
#pragma omp parallel for schedule(static)
    for (long j = 0; j < ns; ++j) {
        for (int a = 0; a < 3; ++a) sd[a][j] = fmm_pow2(src[3 * j + a], fl, -elen);
        qs[j] = fmm_pow2(q[j], fq, -eq);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < 3 * ntt; ++i) tc[i] = fmm_pow2(tin[i], fl, -elen);
#ifdef FMM_HAVE_CUDA
    if (o->device == FMM_DEVICE_CUDA)
        rc = bt_cuda_direct(o->kernel, prm, ns, sx, sy, sz, qs, tc, !trg, m, idx, phi, grad);
    else
#endif
    {
        bt_eval_fn ev = eval_table[o->kernel][grad != NULL];
        int nthr = o->threads > 0 ? o->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthr)
        for (long k = 0; k < m; ++k) {
            long i = idx[k];
            double o4[4] = {0, 0, 0, 0}, x = tc[3 * i], y = tc[3 * i + 1], z = tc[3 * i + 2];
            if (!trg) {
                ev(prm, x, y, z, i, sx, sy, sz, qs, o4);
                ev(prm, x, y, z, ns - i - 1, sx + i + 1, sy + i + 1, sz + i + 1, qs + i + 1, o4);
            } else
                ev(prm, x, y, z, ns, sx, sy, sz, qs, o4);
            if (phi) phi[k] = o4[0];
            if (grad) grad[3 * k] = o4[1], grad[3 * k + 1] = o4[2], grad[3 * k + 2] = o4[3];
        }
    }
    free(buf);
    const int deg = kernel_degree(o->kernel);
    if (!rc && phi) rc = fmm_scale_output(m, phi, 0, phi, 0, eq + deg * elen, th);
    if (!rc && grad) rc = fmm_scale_output(3 * m, grad, 0, grad, 0, eq + (deg - 1) * elen, th);
    return rc;
}

int bldtt_direct(const bldtt_opts *o, long ns, const double *src, const double *q, long nt,
                 const double *trg, double *phi, double *grad) {
    if (!o || !src || !q || (!phi && !grad)) return FMM_ERR_ARG;
    if (ns < 1 || (trg && nt < 1)) return FMM_ERR_NPTS;
    long m = trg ? nt : ns;
    long *idx = malloc(sizeof(long) * m);
    if (!idx) return FMM_ERR_NOMEM;
    for (long k = 0; k < m; ++k) idx[k] = k;
    int rc = bldtt_direct_subset(o, ns, src, q, nt, trg, m, idx, phi, grad);
    free(idx);
    return rc;
}
