/* fmm/dist_setpts.c - the points of a distributed plan's rank (fmm_dist_setpts,
 * docs/distributed.md): the depth of the global uniform tree from the global count, every rank's
 * home leaves exchanged, the halo (the home particles next to another rank's leaves) sent, a
 * stand-in for each leaf of the global tree this rank has no particle in, the rank's plan built
 * over them, and the boxes this rank owns with their V lists split into its own and shared. */
#include "fmm_dist.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmm/dist_internal.h"

/* ------------------------------------------------------------------ leaves of the global tree */

static uint64_t leaf_key(const int64_t ix[3]) {
    return (uint64_t)ix[0] | (uint64_t)ix[1] << 21 | (uint64_t)ix[2] << 42;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static long unique_u64(uint64_t *k, long n) {
    long m = 0;
    for (long i = 0; i < n; ++i)
        if (m == 0 || k[i] != k[m - 1]) k[m++] = k[i];
    return m;
}

static int in_sorted(const uint64_t *k, long n, uint64_t v) {
    return bsearch(&v, k, (size_t)n, sizeof *k, cmp_u64) != NULL;
}

/* The uniform depth of the global tree: the plan's, or the smallest (at least 1) whose leaves
 * hold at most the plan's leaf size on average. */
static int global_depth(const fmm_plan *P, long n) {
    if (P->opts.depth > 0) return P->opts.depth;
    int d = 1;
    while (d < FMM_DEPTH_MAX && (double)n > P->leaf * ldexp(1.0, 3 * d)) ++d;
    return d;
}

/* ------------------------------------------------------------------ setpts */

static void free_rank(fmm_dist_rank *R) {
    free(R->qh), free(R->home), free(R->own);
    free(R->vown.start), free(R->vown.box), free(R->vown.aux);
    free(R->vshared.start), free(R->vshared.box), free(R->vshared.aux);
    memset(&R->vown, 0, sizeof R->vown), memset(&R->vshared, 0, sizeof R->vshared);
    R->qh = NULL, R->home = NULL, R->own = NULL, R->nhome = 0;
}

void fmm_dist_free_points(fmm_dist_plan *D) {
    free_rank(&D->R);
    free(D->cnt), free(D->send), free(D->qloc);
    D->cnt = NULL, D->send = NULL, D->qloc = NULL;
    D->nloc = D->nhalo = D->nglobal = 0;
    D->P->dist = NULL;
}

/* a home leaf as the other ranks see it: its key, the rank, and the position of one of its
   particles (the caller's coordinates), which stands for the leaf where a rank has no particle */
typedef struct leaf_rec {
    uint64_t key, rank;
    double x[3];
} leaf_rec;

/* a halo particle: the caller's coordinates and its leaf */
typedef struct halo_rec {
    double x[3];
    uint64_t key;
} halo_rec;

/* by key, then rank */
static int cmp_rec(const void *a, const void *b) {
    const leaf_rec *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* the first of the m sorted records whose key is >= k */
static long lower_rec(const leaf_rec *pr, long m, uint64_t k) {
    long lo = 0, hi = m;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (pr[mid].key < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The halo: for each home leaf, the ranks with home particles in a leaf next to it (periodic
 * images included where periodic) get its particles. pr: every rank's home leaves, sorted (m of
 * them); key[i]: home particle i's leaf, ord: the home particles grouped by leaf. Fills
 * cnt[0..size) (particles to each rank) and, with send non-NULL, the indices rank by rank. */
static int halo_sends(const fmm_dist_plan *D, int depth, const leaf_rec *pr, long m,
                      const uint64_t *key, const long *ord, long nhome, size_t *cnt, long *send) {
    const int size = D->comm.size, me = D->comm.rank, periodic = D->P->opts.periodic;
    const int64_t nl = (int64_t)1 << depth;
    size_t *pos = cnt + size; /* scratch: where each rank's indices go next */
    if (send) {
        pos[0] = 0;
        for (int r = 1; r < size; ++r) pos[r] = pos[r - 1] + cnt[r - 1];
    }
    for (int r = 0; r < size; ++r) cnt[r] = 0;
    long *mark = malloc(sizeof(long) * (size_t)size); /* the leaf that last marked a rank */
    int *dest = malloc(sizeof(int) * (size_t)size);
    if (!mark || !dest) {
        free(mark), free(dest);
        return FMM_ERR_NOMEM;
    }
    for (int r = 0; r < size; ++r) mark[r] = -1;
    for (long a = 0; a < nhome;) {
        const uint64_t k = key[ord[a]];
        long b = a;
        while (b < nhome && key[ord[b]] == k) ++b;
        const int64_t c[3] = {(int64_t)(k & 0x1fffff), (int64_t)(k >> 21 & 0x1fffff),
                              (int64_t)(k >> 42)};
        int nd = 0;
        for (int s = 0; s < 27; ++s) {
            int64_t j[3] = {c[0] + s % 3 - 1, c[1] + s / 3 % 3 - 1, c[2] + s / 9 - 1};
            int out = 0;
            for (int d = 0; d < 3; ++d) {
                out |= j[d] < 0 || j[d] >= nl;
                j[d] = (j[d] + nl) % nl;
            }
            if (out && !periodic) continue;
            const uint64_t kj = leaf_key(j);
            for (long e = lower_rec(pr, m, kj); e < m && pr[e].key == kj; ++e) {
                const int r = (int)pr[e].rank;
                if (r != me && mark[r] != a) mark[r] = a, dest[nd++] = r;
            }
        }
        for (int t = 0; t < nd; ++t) {
            const int r = dest[t];
            if (send)
                for (long i = a; i < b; ++i) send[pos[r] + cnt[r] + (size_t)(i - a)] = ord[i];
            cnt[r] += (size_t)(b - a);
        }
        a = b;
    }
    free(mark), free(dest);
    return FMM_OK;
}

/* After the plan's setpts: the charges' buffer, the home boxes, the boxes this rank owns (the
 * lowest rank with home particles below a box owns it), and the two V lists. */
static int build_rank(fmm_dist_plan *D, const leaf_rec *pr, long m) {
    fmm_plan *P = D->P;
    const octree *t = &P->tree;
    fmm_dist_rank *R = &D->R;
    const int nbox = t->nbox;
    R->qh = malloc(sizeof(double) * (size_t)(t->n > 0 ? t->n : 1));
    R->home = calloc((size_t)nbox, 1);
    R->own = malloc((size_t)nbox);
    int *owner = malloc(sizeof(int) * (size_t)nbox);
    R->vown.start = calloc((size_t)nbox + 1, sizeof(long));
    R->vshared.start = calloc((size_t)nbox + 1, sizeof(long));
    if (!R->qh || !R->home || !R->own || !owner || !R->vown.start || !R->vshared.start) {
        free(owner);
        return FMM_ERR_NOMEM;
    }
    for (int b = 0; b < nbox; ++b) owner[b] = D->comm.size;
    for (int i = 0; i < t->nleaf; ++i) {
        const int b = t->leaves[i];
        const oct_box *B = &t->box[b];
        for (long j = B->begin; j < B->end; ++j) R->home[b] |= t->perm[j] < R->nhome;
        const int64_t ix[3] = {B->ix[0], B->ix[1], B->ix[2]}; /* a leaf of the uniform tree */
        const uint64_t k = leaf_key(ix);
        long e = lower_rec(pr, m, k);
        if (e < m && pr[e].key == k) owner[b] = (int)pr[e].rank;
    }
    /* boxes come level by level, so children follow their parents */
    for (int b = nbox - 1; b > 0; --b) {
        const int a = t->box[b].parent;
        R->home[a] |= R->home[b];
        if (owner[b] < owner[a]) owner[a] = owner[b];
    }
    const oct_list *V = &t->V;
    for (int b = 0; b < nbox; ++b) {
        const long len = R->home[b] ? V->start[b + 1] - V->start[b] : 0;
        const int own = R->own[b] = owner[b] == D->comm.rank;
        R->vown.start[b + 1] = R->vown.start[b] + (own ? len : 0);
        R->vshared.start[b + 1] = R->vshared.start[b] + (own ? 0 : len);
    }
    oct_list *L[2] = {&R->vown, &R->vshared};
    int fail = 0;
    for (int k = 0; k < 2; ++k) {
        const size_t len = (size_t)L[k]->start[nbox] + 1;
        L[k]->box = malloc(sizeof(int) * len);
        L[k]->aux = malloc(sizeof(unsigned short) * len);
        fail |= !L[k]->box || !L[k]->aux;
    }
    for (int b = 0; b < nbox && !fail; ++b) {
        if (!R->home[b]) continue;
        oct_list *to = R->own[b] ? &R->vown : &R->vshared;
        const long len = V->start[b + 1] - V->start[b];
        memcpy(to->box + to->start[b], V->box + V->start[b], sizeof(int) * (size_t)len);
        memcpy(to->aux + to->start[b], V->aux + V->start[b], sizeof(unsigned short) * (size_t)len);
    }
    free(owner);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

/* Open boundaries: the corners of the global set's bounding box appended to the n points pts
 * (room for two more), each unless one of the points is that corner. With them every rank's
 * plan has the global set's root cube, which the plan takes from the points' bounding box. */
static long add_corners(const fmm_dist_plan *D, double *pts, long n) {
    if (D->P->opts.periodic) return n;
    for (int k = 0; k < 2; ++k) { /* (one point only: its corners are the same) */
        const double *c = D->corner + 3 * k;
        long i = 0;
        while (i < n && !(pts[3 * i] == c[0] && pts[3 * i + 1] == c[1] && pts[3 * i + 2] == c[2]))
            ++i;
        if (i == n) memcpy(pts + 3 * n++, c, 3 * sizeof(double));
    }
    return n;
}

/* This rank's home particles (the first nhome of the npts points pts; the others are the corners
 * of add_corners) in the global tree's leaves: the plan's own tree of them (depth `depth`) gives
 * each its leaf key (key[i]), the home leaves (hk, *nh of them) with a particle each (rep), the
 * particles grouped by leaf (ord), and their extent in the plan's units (ext: minima, then minima
 * of the negatives). No home particles: nothing (*nh = 0). */
static int home_leaves(fmm_plan *P, long nhome, long npts, const double *pts, int depth,
                       uint64_t *key, uint64_t *hk, long *nh, long *ord, long *rep, double ext[6]) {
    *nh = 0;
    if (nhome == 0) return FMM_OK;
    P->opts.depth = depth;
    int rc = fmm_setpts(P, npts, pts);
    if (rc) return rc;
    const octree *t = &P->tree;
    const double *xs[3] = {t->x, t->y, t->z};
    long k = 0;
    for (int i = 0; i < t->nleaf; ++i) {
        const oct_box *B = &t->box[t->leaves[i]];
        const int64_t ix[3] = {B->ix[0], B->ix[1], B->ix[2]};
        for (long j = B->begin; j < B->end; ++j) {
            const long h = t->perm[j];
            if (h >= nhome) continue; /* a corner */
            if (*nh == 0 || hk[*nh - 1] != leaf_key(ix)) rep[*nh] = h, hk[(*nh)++] = leaf_key(ix);
            key[h] = hk[*nh - 1], ord[k++] = h;
            for (int d = 0; d < 3; ++d)
                ext[d] = fmin(ext[d], xs[d][j]), ext[3 + d] = fmin(ext[3 + d], -xs[d][j]);
        }
    }
    return FMM_OK;
}

/* Every rank's count, status and bounding box (minima, minima of the negatives), gathered into
 * all (8 doubles per rank; NULL: the allgather fails here): the global count (D->nglobal) gives
 * the depth, the box an open set's corners (D->corner). rc: this rank's status so far; returns
 * the joint one. */
static int global_extent(fmm_dist_plan *D, long nhome, const double *xyz, int rc, double *all) {
    const fmm_comm *C = &D->comm;
    double ext[8] = {
        (double)(rc ? 0 : nhome), 0, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    for (long i = 0; !rc && i < 3 * nhome; ++i) {
        if (!isfinite(xyz[i])) rc = FMM_ERR_NONFINITE;
        ext[2 + i % 3] = fmin(ext[2 + i % 3], xyz[i]),
                    ext[5 + i % 3] = fmin(ext[5 + i % 3], -xyz[i]);
    }
    ext[1] = rc != 0;
    const int ca = comm_rc(!all || C->allgather(C->ctx, ext, sizeof ext, all));
    D->nglobal = 0;
    for (int r = 0; !ca && r < C->size; ++r) {
        D->nglobal += (long)all[8 * r];
        if (all[8 * r + 1] != 0 && !rc) rc = FMM_ERR_COMM;
        for (int k = 0; k < 3; ++k)
            D->corner[k] = fmin(r ? D->corner[k] : INFINITY, all[8 * r + 2 + k]),
            D->corner[3 + k] = -fmin(r ? -D->corner[3 + k] : INFINITY, all[8 * r + 5 + k]);
    }
    if (!rc && ca) rc = ca;
    if (!rc && D->nglobal < 1) rc = FMM_ERR_NPTS;
    return rc;
}

/* The rank's points: home (the first nhome, xyz), halo (hr, nhalo of them), a stand-in of charge 0
 * for each leaf of the global tree that has no particle here (a particle of that leaf from the
 * rank that has it; pr: every rank's home leaves, m of them), and for an open set the corners of
 * its bounding box (charge 0; their leaves are in every rank's tree). loc has room for all;
 * *nloc: their count. */
static int local_points(const fmm_dist_plan *D, const double *xyz, long nhome, const uint64_t *key,
                        const halo_rec *hr, long nhalo, const leaf_rec *pr, long m, double *loc,
                        long *nloc) {
    uint64_t *lk = malloc(sizeof(uint64_t) * (size_t)(nhome + nhalo + 1));
    if (!lk) return FMM_ERR_NOMEM;
    long n = nhome + nhalo;
    if (nhome) memcpy(loc, xyz, sizeof(double) * 3 * (size_t)nhome);
    memcpy(lk, key, sizeof(uint64_t) * (size_t)nhome);
    for (long i = 0; i < nhalo; ++i) {
        memcpy(loc + 3 * (nhome + i), hr[i].x, sizeof hr[i].x);
        lk[nhome + i] = hr[i].key;
    }
    qsort(lk, (size_t)n, sizeof *lk, cmp_u64);
    const long nk = unique_u64(lk, n);
    for (long e = 0; e < m; ++e) {
        if ((e > 0 && pr[e - 1].key == pr[e].key) || in_sorted(lk, nk, pr[e].key)) continue;
        memcpy(loc + 3 * n++, pr[e].x, sizeof pr[e].x);
    }
    *nloc = add_corners(D, loc, n);
    free(lk);
    return FMM_OK;
}

/* Every rank's home leaves into pr (all: 8 doubles per rank, the first its count of home leaves),
 * from this rank's nh (keys hk, a particle of each at xyz + 3 rep[i]); sendpr and cn (4 size
 * counts) are scratch. */
static int exchange_leaves(const fmm_dist_plan *D, const double *all, long nh, const uint64_t *hk,
                           const long *rep, const double *xyz, leaf_rec *sendpr, size_t *cn,
                           leaf_rec *pr) {
    const fmm_comm *C = &D->comm;
    const int size = C->size;
    for (long i = 0; i < nh; ++i) {
        sendpr[i].key = hk[i], sendpr[i].rank = (uint64_t)C->rank;
        memcpy(sendpr[i].x, xyz + 3 * rep[i], sizeof sendpr[i].x);
    }
    size_t off = 0;
    for (int r = 0; r < size; ++r) {
        cn[r] = sizeof(leaf_rec) * (size_t)nh, cn[size + r] = 0;
        cn[2 * size + r] = sizeof(leaf_rec) * (size_t)all[8 * r], cn[3 * size + r] = off;
        off += cn[2 * size + r];
    }
    return comm_rc(C->alltoallv(C->ctx, sendpr, cn, cn + size, pr, cn + 2 * size, cn + 3 * size));
}

/* The halo's particles to send (the nsend of D->send) into sbuf, and the counts exchanged: hc
 * holds [0, size) the counts sent to each rank (halo_sends), then [size, 2 size) their offsets,
 * [2 size, 3 size) the counts received, then theirs; cn (4 size counts) is scratch. */
static int halo_counts(const fmm_dist_plan *D, const double *xyz, const uint64_t *key, long nsend,
                       halo_rec *sbuf, size_t *hc, size_t *cn) {
    const fmm_comm *C = &D->comm;
    const int size = C->size;
    for (long i = 0; i < nsend; ++i) {
        memcpy(sbuf[i].x, xyz + 3 * D->send[i], sizeof sbuf[i].x);
        sbuf[i].key = key[D->send[i]];
    }
    for (int r = 0; r < size; ++r) {
        hc[size + r] = r ? hc[size + r - 1] + hc[r - 1] : 0;
        cn[r] = sizeof(size_t), cn[size + r] = sizeof(size_t) * (size_t)r;
        cn[2 * size + r] = sizeof(size_t), cn[3 * size + r] = sizeof(size_t) * (size_t)r;
    }
    return comm_rc(
        C->alltoallv(C->ctx, hc, cn, cn + size, hc + 2 * size, cn + 2 * size, cn + 3 * size));
}

int fmm_dist_setpts(fmm_dist_plan *D, long nhome, const double *xyz) {
    if (!D) return FMM_ERR_ARG;
    const fmm_comm *C = &D->comm;
    const int size = C->size;
    fmm_plan *P = D->P;
    int rc = nhome < 0 || (nhome > 0 && !xyz) ? FMM_ERR_ARG : FMM_OK;
    if (!rc && nhome > (long)(SIZE_MAX / 64)) rc = FMM_ERR_NOMEM;
    fmm_dist_free_points(D);
    double *all = malloc(sizeof(double) * 8 * (size_t)size);
    rc = global_extent(D, nhome, xyz, rc, all);
    if (rc) {
        free(all);
        return rc;
    }
    const int depth = global_depth(P, D->nglobal);
    /* the home particles' leaves */
    const size_t nh1 = (size_t)nhome + 3;
    uint64_t *key = malloc(sizeof(uint64_t) * nh1), *hk = malloc(sizeof(uint64_t) * nh1);
    long *ord = malloc(sizeof(long) * nh1), *rep = malloc(sizeof(long) * nh1), nh = 0;
    double *pts = malloc(sizeof(double) * 3 * nh1);
    double ext[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    if (!key || !hk || !ord || !rep || !pts) rc = FMM_ERR_NOMEM;
    if (!rc && nhome > 0) {
        memcpy(pts, xyz, sizeof(double) * 3 * (size_t)nhome);
        rc = home_leaves(P, nhome, add_corners(D, pts, nhome), pts, depth, key, hk, &nh, ord, rep,
                         ext);
    }
    free(pts);
    rc = agree(D, rc);
    /* every rank's count of home leaves and extent */
    double mine[8] = {(double)nh, ext[0], ext[1], ext[2], ext[3], ext[4], ext[5], 0};
    if (!rc) rc = comm_rc(C->allgather(C->ctx, mine, sizeof mine, all));
    size_t *cn = NULL;
    leaf_rec *pr = NULL, *sendpr = NULL;
    long m = 0;
    if (!rc) {
        for (int r = 0; r < size; ++r) m += (long)all[8 * r];
        double g[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
        for (int r = 0; r < size; ++r)
            for (int k = 0; k < 6; ++k) g[k] = fmin(g[k], all[8 * r + 1 + k]);
        memcpy(D->ext, g, sizeof D->ext);
        cn = malloc(sizeof(size_t) * 4 * (size_t)size);
        pr = malloc(sizeof(leaf_rec) * (size_t)(m + 1));
        sendpr = malloc(sizeof(leaf_rec) * (size_t)(nh + 1));
        if (!cn || !pr || !sendpr) rc = FMM_ERR_NOMEM;
    }
    rc = agree(D, rc);
    /* every rank's home leaves, sorted by key and rank */
    if (!rc) rc = exchange_leaves(D, all, nh, hk, rep, xyz, sendpr, cn, pr);
    if (!rc) qsort(pr, (size_t)m, sizeof *pr, cmp_rec);
    /* the halo: counts, then the particles */
    size_t *hc = NULL;
    halo_rec *sbuf = NULL;
    double *loc = NULL;
    long nsend = 0, nhalo = 0;
    if (!rc && !(hc = calloc(8 * (size_t)size, sizeof(size_t)))) rc = FMM_ERR_NOMEM;
    if (!rc) rc = halo_sends(D, depth, pr, m, key, ord, nhome, hc, NULL);
    if (!rc) {
        for (int r = 0; r < size; ++r) nsend += (long)hc[r];
        D->send = malloc(sizeof(long) * (size_t)(nsend + 1));
        sbuf = malloc(sizeof(halo_rec) * (size_t)(nsend + 1));
        if (!D->send || !sbuf) rc = FMM_ERR_NOMEM;
    }
    if (!rc) rc = halo_sends(D, depth, pr, m, key, ord, nhome, hc, D->send);
    rc = agree(D, rc);
    if (!rc) rc = halo_counts(D, xyz, key, nsend, sbuf, hc, cn);
    halo_rec *hr = NULL;
    if (!rc) {
        for (int r = 0; r < size; ++r) {
            hc[3 * size + r] = r ? hc[3 * size + r - 1] + hc[2 * size + r - 1] : 0;
            nhalo += (long)hc[2 * size + r];
        }
        loc = malloc(sizeof(double) * 3 * (size_t)(nhome + nhalo + m + 2));
        hr = malloc(sizeof(halo_rec) * (size_t)(nhalo + 1));
        if (!loc || !hr) rc = FMM_ERR_NOMEM;
    }
    rc = agree(D, rc);
    if (!rc) {
        size_t *bc = hc + 4 * size; /* the same counts and offsets in bytes */
        for (int k = 0; k < 4 * size; ++k) bc[k] = sizeof(halo_rec) * hc[k];
        rc = comm_rc(C->alltoallv(C->ctx, sbuf, bc, bc + size, hr, bc + 2 * size, bc + 3 * size));
    }
    long nloc = nhome + nhalo;
    if (!rc) rc = local_points(D, xyz, nhome, key, hr, nhalo, pr, m, loc, &nloc);
    /* the rank's plan over the global tree's geometry */
    if (!rc) {
        P->opts.depth = depth;
        rc = fmm_setpts(P, nloc, loc);
    }
    if (!rc) {
        /* the origin of the virial's sum (fmm/periodic.c fmm_virial_sum) from the global extent of
           the home particles, the same on every rank (fmm/execute.c keeps a periodic rank's) */
        const double hi[3] = {-D->ext[3], -D->ext[4], -D->ext[5]};
        fmm_virial_origin(D->ext, hi, P->tree.box[0].c, P->vorg);
        D->R.nhome = nhome;
        D->nloc = nloc, D->nhalo = nhalo;
        rc = build_rank(D, pr, m);
        D->qloc = calloc((size_t)nloc, sizeof(double));
        D->cnt = hc, hc = NULL;
        if (!rc && !D->qloc) rc = FMM_ERR_NOMEM;
    }
    rc = agree(D, rc);
    if (rc)
        fmm_dist_free_points(D);
    else
        P->dist = &D->R;
    free(key), free(hk), free(ord), free(rep), free(all), free(cn), free(pr), free(sendpr);
    free(hc), free(sbuf), free(hr), free(loc);
    return rc;
}
