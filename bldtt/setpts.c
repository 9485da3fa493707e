/* bldtt/setpts.c - bldtt_setpts: the source and target cluster trees (bldtt/interp.c) and the
 * interaction lists of the dual tree traversal (BLDTT) or of the treecode (BLTC) by the MAC of
 * docs/bldtt.md. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "bldtt/bldtt_internal.h"
#include "core/scale.h"

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
    const ct_tree *T, *S;
    double theta;
    long np;
    double osc; /* wavenumber of an oscillatory kernel, else 0 */
    int degree;
    pairbuf pb[4];
} dtt_ctx;

static long cnt(const ct_node *n) {
    return n->iend - n->ibeg;
}

/* (r_t + r_s) < theta R; for the oscillatory kernel also p r <= n for both clusters (a
 * degree-n interpolant resolves about n radians of sin(p r) per cluster radius) */
static int mac(const dtt_ctx *c, const ct_node *a, const ct_node *b) {
    double dx = a->c[0] - b->c[0], dy = a->c[1] - b->c[1], dz = a->c[2] - b->c[2];
    double R = sqrt(dx * dx + dy * dy + dz * dz);
    if (c->osc > 0 && (c->osc * a->r > c->degree || c->osc * b->r > c->degree)) return 0;
    return a->r + b->r < c->theta * R;
}

/* PP and PC write to target particles: emitted per target leaf (leaves own disjoint ranges) */
static void add_leaves(dtt_ctx *c, int type, int t, int s) {
    const ct_node *nt = &c->T->nodes[t];
    if (nt->nchild == 0) {
        pb_add(&c->pb[type], t, s);
        return;
    }
    for (int k = 0; k < nt->nchild; ++k) add_leaves(c, type, nt->child[k], s);
}

static void dtt(dtt_ctx *c, int t, int s) {
    const ct_node *nt = &c->T->nodes[t], *ns = &c->S->nodes[s];
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
    const ct_node *nt = &c->T->nodes[t], *ns = &c->S->nodes[s];
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
    const ct_tree *T = p->trg;
    p->tneed = calloc((size_t)T->nnodes, 1);
    if (!p->tneed) return FMM_ERR_NOMEM;
    for (int i = 0; i < T->nnodes; ++i) { /* breadth-first order: parents first */
        const ct_node *nd = &T->nodes[i];
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
    if (!rc) rc = bt_scale_lengths(plan->o.kernel, plan->o.param, amax, &elen, &prm);
    if (rc) goto out;
    /* build into a scratch plan so that a failure leaves the old geometry intact */
    bldtt_plan t = *plan;
    t.cuda = NULL;
    memset(&t.src, 0, sizeof t.src), memset(&t.trg_own, 0, sizeof t.trg_own);
    memset(t.lists, 0, sizeof t.lists);
    t.tneed = NULL;
    t.have_pts = 0;
    t.elen = elen, t.prm = prm;
    t.src_cheb = t.trg_cheb_own = NULL;
    rc = bt_tree_build(&t.src, &t.src_cheb, ns, sources, elen, t.leaf, t.o.degree, t.o.threads);
    if (!rc && targets)
        rc = bt_tree_build(&t.trg_own, &t.trg_cheb_own, nt, targets, elen, t.leaf, t.o.degree,
                           t.o.threads);
    if (!rc) {
        t.same = !targets;
        t.trg = targets ? &t.trg_own : &t.src;
        t.trg_cheb = targets ? t.trg_cheb_own : t.src_cheb;
        rc = build_lists(&t);
    }
    double t_dev = omp_get_wtime();
#ifdef FMM_HAVE_CUDA
    if (!rc && t.o.device == FMM_DEVICE_CUDA) rc = bt_cuda_setpts(&t);
#endif
    t_dev = omp_get_wtime() - t_dev;
    if (rc) {
        bt_free_geometry(&t);
        goto out;
    }
    bt_free_geometry(plan);
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
