/* The multiquadric far-field series (Martin & Haase 2014, Lemma 3.1, from Cherrie, Beatson &
 * Newsam 2002) on a k-d cluster tree: a treecode.
 *
 * For a cluster with centre z, source offsets t_i = y_i - z, weights w_i, a_i = |t_i|^2 + c^2,
 * and a target offset x = p - z with |x| > sqrt(|t_i|^2 + c^2),
 *   sum_i w_i sqrt(|x - t_i|^2 + c^2)
 *     = sum_{k,m >= 0} C(1/2, k+m) C(k+m, m) (-2)^k |x|^{1-2k-2m} sum_i w_i a_i^m (t_i . x)^k,
 * the moment form of P_l(a, -2 t.x, |x|^2) / |x|^{2l-1} with l = k + 2m (docs/rbf.md; checked
 * against the closed form). Truncated at l <= L, the error is at most about
 * 2 sqrt(|t|^2+c^2) rho^(L+1) / (1 - rho) per unit weight, rho = sqrt(|t|^2 + c^2) / |x|.
 * (t_i . x)^k = sum_{|alpha|=k} k!/alpha! t^alpha x^alpha, so each cluster stores the moments
 * B[k][m][alpha] = C(1/2,k+m) C(k+m,m) (-2)^k k!/alpha! sum_i w_i a_i^m t_i^alpha.
 * A cluster is used for a batch of targets (a leaf of the target tree, centre b, radius rb)
 * when sqrt(r_S^2 + c^2) <= theta (|b - z| - rb); otherwise its children are visited, and
 * leaves are summed directly. Only clusters with enough points for the expansion to be
 * cheaper than the direct sum carry moments. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rbf/rbf_internal.h"

#define SER_LEAF 48

struct rbf_series {
    ct_tree t;
    double c2, theta;
    int L, nmono, nblk;
    int *mstart;  /* first monomial of degree k (L + 2 entries) */
    int *bstart;  /* moment block (k, m): offset, index k * (L/2 + 1) + m; -1 if unused */
    double *mult; /* k!/alpha! */
    double *ck;   /* C(1/2,k+m) C(k+m,m) (-2)^k */
    int nterm;
    long nmin;
    long *moff; /* node -> offset into mom, -1 without moments */
    double *mom;
    double *wt; /* weights in tree order */
};

void rbf_series_params(double tol, int *L, double *theta) {
    /* per-term relative bound 2 theta^(L+1)/(1-theta) <= tol, with theta near 0.45 and L <= 16 */
    double th = 0.45;
    int l = (int)ceil(log(tol * (1 - th) / 2) / log(th)) - 1;
    if (l > 16) {
        l = 16;
        th = pow(tol / 4, 1.0 / (l + 1)); /* 2/(1-th) <= 4 for th <= 0.5 */
    }
    if (l < 2) l = 2;
    *L = l, *theta = th;
}

static void monomials(int L, const int *mstart, double x, double y, double z, double *mono) {
    mono[0] = 1;
    for (int k = 1; k <= L; ++k) {
        int prev = mstart[k - 1], np = k * (k + 1) / 2, cur = mstart[k];
        for (int i = 0; i < np; ++i) mono[cur + i] = x * mono[prev + i];
        for (int i = 0; i < k; ++i) mono[cur + np + i] = y * mono[prev + np - k + i];
        mono[cur + np + k] = z * mono[prev + np - 1];
    }
}

static double gbinom_half(int j) { /* C(1/2, j) */
    double r = 1;
    for (int i = 0; i < j; ++i) r *= (0.5 - i) / (i + 1);
    return r;
}

void rbf_series_destroy(rbf_series *s) {
    if (!s) return;
    ct_free(&s->t);
    free(s->mstart), free(s->bstart), free(s->mult), free(s->ck), free(s->moff), free(s->mom);
    free(s->wt);
    free(s);
}

int rbf_series_create(rbf_series **out, long n, const double *xyz, double c, double tol) {
    *out = NULL;
    rbf_series *s = calloc(1, sizeof *s);
    if (!s) return FMM_ERR_NOMEM;
    s->c2 = c * c;
    rbf_series_params(tol, &s->L, &s->theta);
    int L = s->L, M = L / 2 + 1;
    s->nmono = (L + 1) * (L + 2) * (L + 3) / 6;
    s->mstart = malloc(sizeof(int) * (L + 2));
    s->bstart = malloc(sizeof(int) * (L + 1) * M);
    s->mult = malloc(sizeof(double) * s->nmono);
    s->ck = malloc(sizeof(double) * (L + 1) * M);
    s->wt = malloc(sizeof(double) * (n > 0 ? n : 1));
    int *ea = malloc(sizeof(int) * 3 * s->nmono);
    if (!s->mstart || !s->bstart || !s->mult || !s->ck || !s->wt || !ea) {
        free(ea);
        rbf_series_destroy(s);
        return FMM_ERR_NOMEM;
    }
    for (int k = 0; k <= L + 1; ++k) s->mstart[k] = k * (k + 1) * (k + 2) / 6;
    /* exponents in the order of monomials() */
    ea[0] = ea[1] = ea[2] = 0;
    for (int k = 1; k <= L; ++k) {
        int prev = s->mstart[k - 1], np = k * (k + 1) / 2, cur = s->mstart[k];
        for (int i = 0; i < np; ++i)
            ea[3 * (cur + i)] = ea[3 * (prev + i)] + 1,
                          ea[3 * (cur + i) + 1] = ea[3 * (prev + i) + 1],
                          ea[3 * (cur + i) + 2] = ea[3 * (prev + i) + 2];
        for (int i = 0; i < k; ++i) {
            int q = prev + np - k + i;
            ea[3 * (cur + np + i)] = ea[3 * q], ea[3 * (cur + np + i) + 1] = ea[3 * q + 1] + 1,
                               ea[3 * (cur + np + i) + 2] = ea[3 * q + 2];
        }
        ea[3 * (cur + np + k)] = 0, ea[3 * (cur + np + k) + 1] = 0, ea[3 * (cur + np + k) + 2] = k;
    }
    double fact[64];
    fact[0] = 1;
    for (int i = 1; i < 64; ++i) fact[i] = fact[i - 1] * i;
    for (int i = 0; i < s->nmono; ++i) {
        int a = ea[3 * i], b = ea[3 * i + 1], cc = ea[3 * i + 2];
        s->mult[i] = fact[a + b + cc] / (fact[a] * fact[b] * fact[cc]);
    }
    free(ea);
    s->nterm = 0;
    for (int k = 0; k <= L; ++k)
        for (int m = 0; m < M; ++m) {
            if (k + 2 * m > L) {
                s->bstart[k * M + m] = -1;
                continue;
            }
            s->bstart[k * M + m] = s->nterm;
            s->nterm += (k + 1) * (k + 2) / 2;
            double cm = 1; /* C(k+m, m) */
            for (int i = 1; i <= m; ++i) cm = cm * (k + i) / i;
            s->ck[k * M + m] = gbinom_half(k + m) * cm * pow(-2.0, k);
        }
    /* an expansion term costs about one direct pair; use clusters worth ~ 1/2 their terms */
    s->nmin = s->nterm / 2 > 2 * SER_LEAF ? s->nterm / 2 : 2 * SER_LEAF;
    int rc = ct_build(&s->t, n, xyz, 0, SER_LEAF, CT_SPLIT_MEDIAN, 1, 1);
    if (rc) {
        rbf_series_destroy(s);
        return rc;
    }
    s->moff = malloc(sizeof(long) * s->t.nnodes);
    if (!s->moff) {
        rbf_series_destroy(s);
        return FMM_ERR_NOMEM;
    }
    long tot = 0;
    for (int b = 0; b < s->t.nnodes; ++b) {
        const ct_node *nd = &s->t.nodes[b];
        if (nd->iend - nd->ibeg >= s->nmin)
            s->moff[b] = tot, tot += s->nterm;
        else
            s->moff[b] = -1;
    }
    s->mom = malloc(sizeof(double) * (tot > 0 ? tot : 1));
    if (!s->mom) {
        rbf_series_destroy(s);
        return FMM_ERR_NOMEM;
    }
    *out = s;
    return 0;
}

/* moments of every cluster that carries them, for the weights in s->wt */
static int series_moments(rbf_series *s, int threads) {
    const ct_tree *t = &s->t;
    int L = s->L, M = L / 2 + 1, fail = 0;
#pragma omp parallel num_threads(threads)
    {
        double *mono = malloc(sizeof(double) * 2 * s->nmono);
        if (!mono) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < t->nnodes; ++b) {
            if (s->moff[b] < 0 || !mono) continue;
            const ct_node *nd = &t->nodes[b];
            double *B = s->mom + s->moff[b], *tm = mono + s->nmono;
            memset(B, 0, sizeof(double) * s->nterm);
            for (long i = nd->ibeg; i < nd->iend; ++i) {
                double w = s->wt[i];
                if (w == 0) continue;
                double dx = t->x[i] - nd->c[0], dy = t->y[i] - nd->c[1], dz = t->z[i] - nd->c[2];
                double a = dx * dx + dy * dy + dz * dz + s->c2;
                monomials(L, s->mstart, dx, dy, dz, mono);
                for (int j = 0; j < s->nmono; ++j) tm[j] = mono[j] * s->mult[j];
                for (int k = 0; k <= L; ++k) {
                    double am = w;
                    int nk = (k + 1) * (k + 2) / 2;
                    const double *tk = tm + s->mstart[k];
                    for (int m = 0; k + 2 * m <= L; ++m, am *= a) {
                        double coef = am * s->ck[k * M + m];
                        double *Bk = B + s->bstart[k * M + m];
#pragma omp simd
                        for (int j = 0; j < nk; ++j) Bk[j] += coef * tk[j];
                    }
                }
            }
        }
        free(mono);
    }
    return fail ? FMM_ERR_NOMEM : 0;
}

static double series_eval(const rbf_series *s, const double *B, const double cz[3], double px,
                          double py, double pz, double *mono) {
    int L = s->L, M = L / 2 + 1;
    double dx = px - cz[0], dy = py - cz[1], dz = pz - cz[2];
    double r2 = dx * dx + dy * dy + dz * dz, sinv = 1 / r2;
    monomials(L, s->mstart, dx, dy, dz, mono);
    double sum = 0, sk = 1;
    for (int k = 0; k <= L; ++k, sk *= sinv) {
        int nk = (k + 1) * (k + 2) / 2;
        const double *mk = mono + s->mstart[k];
        double inner = 0, sm = 1;
        for (int m = 0; k + 2 * m <= L; ++m, sm *= sinv) {
            const double *Bk = B + s->bstart[k * M + m];
            double d = 0;
#pragma omp simd reduction(+ : d)
            for (int j = 0; j < nk; ++j) d += Bk[j] * mk[j];
            inner += sm * d;
        }
        sum += sk * inner;
    }
    return sqrt(r2) * sum;
}

/* targets: the leaves of tree tt, values to out[tt->perm[i]] */
static int series_traverse(rbf_series *s, const ct_tree *tt, double *out, int threads) {
    const ct_tree *t = &s->t;
    int fail = 0;
    /* target leaves */
    int nl = 0;
    long maxleaf = 1;
    for (int b = 0; b < tt->nnodes; ++b)
        if (tt->nodes[b].nchild == 0) {
            ++nl;
            if (tt->nodes[b].iend - tt->nodes[b].ibeg > maxleaf)
                maxleaf = tt->nodes[b].iend - tt->nodes[b].ibeg;
        }
    int *leaves = malloc(sizeof(int) * (nl > 0 ? nl : 1));
    if (!leaves) return FMM_ERR_NOMEM;
    nl = 0;
    for (int b = 0; b < tt->nnodes; ++b)
        if (tt->nodes[b].nchild == 0) leaves[nl++] = b;
#pragma omp parallel num_threads(threads)
    {
        double *mono = malloc(sizeof(double) * s->nmono);
        double *acc = malloc(sizeof(double) * maxleaf);
        int *stack = malloc(sizeof(int) * 256);
        if (!mono || !acc || !stack) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (int li = 0; li < nl; ++li) {
            if (!mono || !acc || !stack) continue;
            const ct_node *tb = &tt->nodes[leaves[li]];
            long nt = tb->iend - tb->ibeg;
            for (long i = 0; i < nt; ++i) acc[i] = 0;
            int sp = 0;
            stack[sp++] = 0;
            while (sp > 0) {
                int b = stack[--sp];
                const ct_node *nd = &t->nodes[b];
                double ex = nd->c[0] - tb->c[0], ey = nd->c[1] - tb->c[1], ez = nd->c[2] - tb->c[2];
                double dist = sqrt(ex * ex + ey * ey + ez * ez) - tb->rad;
                if (s->moff[b] >= 0 && dist > 0 &&
                    sqrt(nd->rad * nd->rad + s->c2) <= s->theta * dist) {
                    const double *B = s->mom + s->moff[b];
                    for (long i = 0; i < nt; ++i) {
                        long k = tb->ibeg + i;
                        acc[i] += series_eval(s, B, nd->c, tt->x[k], tt->y[k], tt->z[k], mono);
                    }
                } else if (nd->nchild == 0) {
                    for (long i = 0; i < nt; ++i) {
                        long k = tb->ibeg + i;
                        double xi = tt->x[k], yi = tt->y[k], zi = tt->z[k], a = 0;
#pragma omp simd reduction(+ : a)
                        for (long j = nd->ibeg; j < nd->iend; ++j) {
                            double dx = xi - t->x[j], dy = yi - t->y[j], dz = zi - t->z[j];
                            a += s->wt[j] * sqrt(dx * dx + dy * dy + dz * dz + s->c2);
                        }
                        acc[i] += a;
                    }
                } else if (sp + 2 <= 256) {
                    stack[sp++] = nd->child[0], stack[sp++] = nd->child[1];
                }
            }
            for (long i = 0; i < nt; ++i) out[tt->perm[tb->ibeg + i]] = acc[i];
        }
        free(mono), free(acc), free(stack);
    }
    free(leaves);
    return fail ? FMM_ERR_NOMEM : 0;
}

int rbf_series_apply_self(rbf_series *s, const double *w, double *out, int threads) {
    for (long i = 0; i < s->t.n; ++i) s->wt[i] = w[s->t.perm[i]];
    int rc = series_moments(s, threads);
    if (!rc) rc = series_traverse(s, &s->t, out, threads);
    return rc;
}

int rbf_series_apply(rbf_series *s, const double *w, long m, const double *tx, const double *ty,
                     const double *tz, double *out, int threads) {
    if (m == 0) return 0;
    double *xyz = malloc(sizeof(double) * 3 * m);
    if (!xyz) return FMM_ERR_NOMEM;
    for (long i = 0; i < m; ++i) xyz[3 * i] = tx[i], xyz[3 * i + 1] = ty[i], xyz[3 * i + 2] = tz[i];
    ct_tree tt;
    int rc = ct_build(&tt, m, xyz, 0, SER_LEAF, CT_SPLIT_MEDIAN, 1, 1);
    free(xyz);
    if (rc) return rc;
    for (long i = 0; i < s->t.n; ++i) s->wt[i] = w[s->t.perm[i]];
    rc = series_moments(s, threads);
    if (!rc) rc = series_traverse(s, &tt, out, threads);
    ct_free(&tt);
    return rc;
}
