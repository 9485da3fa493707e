/* bldtt/execute.c - bldtt_execute and its CPU evaluation: proxy charges up the source tree,
 * the four interaction types, proxy potentials down the target tree, and the targets
 * (docs/bldtt.md); a CUDA plan runs bldtt/bldtt_cuda_passes.cu instead. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "bldtt/bldtt_internal.h"
#include "core/scale.h"

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
static void interlevel(const double *cheb, int n1, const double *w, int parent, int child,
                       double *M) {
    for (int d = 0; d < 3; ++d) {
        const double *sp = cheb + ((size_t)parent * 3 + d) * n1;
        const double *sc = cheb + ((size_t)child * 3 + d) * n1;
        for (int kc = 0; kc < n1; ++kc) bt_lagrange(n1 - 1, sp, w, sc[kc], M + (d * n1 + kc) * n1);
    }
}

/* proxy coordinates of a node (flattened k1 + n1 (k2 + n1 k3)) */
static void proxies(const double *cheb, int n1, int node, double *px, double *py, double *pz) {
    const double *cx = cheb + (size_t)node * 3 * n1, *cy = cx + n1, *cz = cy + n1;
    for (int k3 = 0; k3 < n1; ++k3)
        for (int k2 = 0; k2 < n1; ++k2)
            for (int k1 = 0; k1 < n1; ++k1) {
                int j = k1 + n1 * (k2 + n1 * k3);
                px[j] = cx[k1], py[j] = cy[k2], pz[j] = cz[k3];
            }
}

/* proxy charges of the source tree: leaves from particles, parents from children */
static void upward(const bldtt_plan *p, const double *qs, double *qhat) {
    const ct_tree *S = &p->src;
    int n1 = p->n1, np = p->np;
    const double *w = p->w;
    memset(qhat, 0, sizeof(double) * (size_t)np * S->nnodes);
#pragma omp parallel
    {
        double L[3][BLDTT_DEGREE_MAX + 1];
#pragma omp for schedule(dynamic, 4)
        for (int k = 0; k < S->nleaves; ++k) {
            int nd = S->leaves[k];
            const ct_node *b = &S->nodes[nd];
            const double *cx = p->src_cheb + (size_t)nd * 3 * n1;
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
                const ct_node *b = &S->nodes[nd];
                if (!t1) continue;
                for (int c = 0; c < b->nchild; ++c) {
                    interlevel(p->src_cheb, n1, w, nd, b->child[c], M);
                    contract3(n1, M, M + n1 * n1, M + 2 * n1 * n1, 1,
                              qhat + (size_t)b->child[c] * np, qhat + (size_t)nd * np, t1, t1 + np);
                }
            }
            free(t1);
        }
    }
}

/* What the three steps of execute_cpu share: the charges in tree order (qs), the proxy charges
 * of the source clusters (qhat), the proxy values of the target clusters (tp: [node][v][np],
 * v = phi, d/dx, d/dy, d/dz), the outputs (out: phi, then the gradient) and the kernel loop. */
typedef struct exec_ctx {
    const bldtt_plan *p;
    const double *qs, *qhat;
    double *tp, *out;
    int nv, grad, need_down;
    bt_eval_fn ev;
} exec_ctx;

/* Step 1, cluster-particle and cluster-cluster: the target clusters' proxy values. Called by
 * every thread of the team (an orphaned omp for); buf: the thread's scratch of 7 np (NULL after
 * a failed allocation: the thread takes its share of the loop and skips it). */
static void far_to_proxies(const exec_ctx *e, double *buf) {
    const bldtt_plan *p = e->p;
    const ct_tree *S = &p->src, *T = p->trg;
    const int n1 = p->n1, np = p->np, nv = e->nv;
    const double prm = p->prm;
    double *tx = buf, *ty = tx + np, *tz = ty + np, *sx = tz + np, *sy = sx + np, *sz = sy + np;
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < T->nnodes; ++t) {
        const bt_list *cc = &p->lists[BT_CC], *cp = &p->lists[BT_CP];
        if (!buf || (cc->start[t] == cc->start[t + 1] && cp->start[t] == cp->start[t + 1]))
            continue;
        proxies(p->trg_cheb, n1, t, tx, ty, tz);
        double *v = e->tp + (size_t)t * nv * np;
        for (int j = cp->start[t]; j < cp->start[t + 1]; ++j) {
            const ct_node *b = &S->nodes[cp->src[j]];
            long ns = b->iend - b->ibeg;
            for (int l = 0; l < np; ++l) {
                double o4[4] = {0, 0, 0, 0};
                e->ev(prm, tx[l], ty[l], tz[l], ns, S->x + b->ibeg, S->y + b->ibeg, S->z + b->ibeg,
                      e->qs + b->ibeg, o4);
                for (int a = 0; a < nv; ++a) v[a * np + l] += o4[a];
            }
        }
        for (int j = cc->start[t]; j < cc->start[t + 1]; ++j) {
            int s = cc->src[j];
            proxies(p->src_cheb, n1, s, sx, sy, sz);
            const double *qh = e->qhat + (size_t)s * np;
            for (int l = 0; l < np; ++l) {
                double o4[4] = {0, 0, 0, 0};
                e->ev(prm, tx[l], ty[l], tz[l], np, sx, sy, sz, qh, o4);
                for (int a = 0; a < nv; ++a) v[a * np + l] += o4[a];
            }
        }
    }
}

/* Step 2, downward: the parents' proxy values interpolated to their children, level by level
 * (called by every thread of the team, as step 1) */
static void proxies_down(const exec_ctx *e, double *buf) {
    const bldtt_plan *p = e->p;
    const ct_tree *T = p->trg;
    const int n1 = p->n1, np = p->np, nv = e->nv;
    double *t1 = buf ? buf + 3 * np : NULL, *t2 = buf ? buf + 4 * np : NULL;
    for (int lev = 0; lev < T->depth; ++lev) {
        double M[3 * (BLDTT_DEGREE_MAX + 1) * (BLDTT_DEGREE_MAX + 1)];
#pragma omp for schedule(dynamic, 1)
        for (int nd = T->level_start[lev]; nd < T->level_start[lev + 1]; ++nd) {
            const ct_node *b = &T->nodes[nd];
            if (!buf || !p->tneed[nd]) continue;
            for (int c = 0; c < b->nchild; ++c) {
                int ch = b->child[c];
                interlevel(p->trg_cheb, n1, p->w, nd, ch, M);
                for (int a = 0; a < nv; ++a)
                    contract3(n1, M, M + n1 * n1, M + 2 * n1 * n1, 0,
                              e->tp + ((size_t)nd * nv + a) * np,
                              e->tp + ((size_t)ch * nv + a) * np, t1, t2);
            }
        }
    }
}

/* Step 3, the target leaves: the leaf's proxy values interpolated to its targets, then the
 * particle-particle and particle-cluster sums (called by every thread of the team, as step 1) */
static void leaves(const exec_ctx *e, double *buf) {
    const bldtt_plan *p = e->p;
    const ct_tree *S = &p->src, *T = p->trg;
    const int n1 = p->n1, np = p->np, nv = e->nv;
    const double prm = p->prm, *w = p->w, *qs = e->qs;
    const bt_eval_fn ev = e->ev;
    double *sx = buf ? buf + 3 * np : NULL, *sy = buf ? sx + np : NULL, *sz = buf ? sy + np : NULL;
    double *out = e->out;
    double L[3][BLDTT_DEGREE_MAX + 1];
#pragma omp for schedule(dynamic, 1)
    for (int k = 0; k < T->nleaves; ++k) {
        int t = T->leaves[k];
        const ct_node *b = &T->nodes[t];
        if (!buf) continue;
        const bt_list *pp = &p->lists[BT_PP], *pc = &p->lists[BT_PC];
        const double *cx = p->trg_cheb + (size_t)t * 3 * n1;
        for (long i = b->ibeg; i < b->iend; ++i) {
            double o4[4] = {0, 0, 0, 0};
            double xi = T->x[i], yi = T->y[i], zi = T->z[i];
            if (e->need_down && p->tneed[t]) {
                bt_lagrange(n1 - 1, cx, w, xi, L[0]);
                bt_lagrange(n1 - 1, cx + n1, w, yi, L[1]);
                bt_lagrange(n1 - 1, cx + 2 * n1, w, zi, L[2]);
                const double *v = e->tp + (size_t)t * nv * np;
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
                const ct_node *sb = &S->nodes[pp->src[j]];
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
                proxies(p->src_cheb, n1, s, sx, sy, sz);
                ev(prm, xi, yi, zi, np, sx, sy, sz, e->qhat + (size_t)s * np, o4);
            }
            long o = T->perm[i];
            if (out) {
                out[o] = o4[0];
                if (e->grad)
                    out[T->n + 3 * o] = o4[1], out[T->n + 3 * o + 1] = o4[2],
                                   out[T->n + 3 * o + 2] = o4[3];
            }
        }
    }
}

static int execute_cpu(bldtt_plan *p, const double *qs, double *out, int grad) {
    const ct_tree *S = &p->src, *T = p->trg;
    const int np = p->np, nv = grad ? 4 : 1;
    int need_up = p->lists[BT_PC].count + p->lists[BT_CC].count > 0;
    int need_down = p->lists[BT_CP].count + p->lists[BT_CC].count > 0;
    double *qhat = need_up ? malloc(sizeof(double) * (size_t)np * S->nnodes) : NULL;
    double *tp = need_down ? calloc((size_t)np * nv * T->nnodes, sizeof(double)) : NULL;
    int fail = (need_up && !qhat) || (need_down && !tp);
    if (fail) {
        free(qhat), free(tp);
        return FMM_ERR_NOMEM;
    }
    if (need_up) upward(p, qs, qhat);
    const exec_ctx e = {
        p, qs, qhat, tp, out, nv, grad, need_down, bt_eval_table[p->o.kernel][grad]};
#pragma omp parallel reduction(| : fail)
    {
        double *buf = malloc(sizeof(double) * 7 * np);
        fail |= !buf;
        if (need_down) far_to_proxies(&e, buf), proxies_down(&e, buf);
        leaves(&e, buf);
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
    const int m = bt_kernel_degree(p->o.kernel);
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
