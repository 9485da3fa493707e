/* rbf/setpts.c - fmm_rbf_setpts: the centres in the plan's units and random order, their L-sets
 * (k-d trees over the shrinking rank ranges, rbf/kdtree.c) and local cardinal functions
 * (rbf/local.c), and the mat-vec the plan uses (direct, series, BLDTT, CUDA). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_bldtt.h"
#include "rbf/rbf_internal.h"

/* below this many centres the CPU plan uses the direct sum whatever the tolerance */
#define RBF_AUTO_SERIES_MIN 200000
/* from these many centres the automatic L-set size is 80, then 96, with the direct CPU mat-vec,
   else 50 */
#define RBF_AUTO_Q80_MIN 10000
#define RBF_AUTO_Q96_MIN 16000
/* from this many centres the CUDA plan uses BLDTT: one mat-vec on an H100 took 12.7 ms direct vs
   39.6 ms BLDTT at 89,702 centres and 1.13 s vs 0.63 s at 1e6 (bench/results/rbf_gpu_h100.txt);
   N^2 against N scaling puts the crossing near 5.6e5 */
#define RBF_AUTO_BLDTT_GPU_MIN 500000

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The L-set queries search a shrinking set (ranks >= m). One k-d tree per halving of it: level
 * k holds the centres of rank >= start[k], and start[k+1] = start[k] + (n - start[k]) / 2, so a
 * query for rank m in [start[k], start[k+1]) finds at least half of its tree eligible. In a
 * single tree the late ranks' queries scan mostly ineligible centres (measured: 1.45x the query
 * time at n = 20000, q = 80). */
#define RBF_LEVELS 64
/* leaf size of the L-set trees: 24-32 scan fewer nodes than 16 for q = 50..80 queries (knn CPU
   time at 20000 centres, q = 80: 0.35 s at 16, 0.28-0.29 s at 24 and 32) */
#define RBF_LSET_LEAF 32
typedef struct {
    int nlev;
    long start[RBF_LEVELS + 1];
    rbf_kdtree t[RBF_LEVELS];
} lset_index;

static void lset_free(lset_index *L) {
    for (int k = 0; k < L->nlev; ++k) rbf_kd_free(&L->t[k]);
    L->nlev = 0;
}

static int lset_build(lset_index *L, const fmm_rbf_plan *p) {
    long n = p->n;
    memset(L, 0, sizeof *L);
    double *sub = malloc(sizeof(double) * 3 * n);
    long *rk = malloc(sizeof(long) * n);
    int rc = (!sub || !rk) ? FMM_ERR_NOMEM : 0;
    for (long s = 0; s < n - 1 && !rc;) {
        long cnt = n - s;
        for (long i = 0; i < cnt; ++i) {
            long j = p->perm[s + i];
            sub[3 * i] = p->x[j], sub[3 * i + 1] = p->y[j], sub[3 * i + 2] = p->z[j];
            rk[i] = s + i;
        }
        rc = rbf_kd_build(&L->t[L->nlev], cnt, sub, rk, RBF_LSET_LEAF);
        if (rc) break;
        L->start[L->nlev++] = s;
        /* a small remainder stays one level: its queries scan few centres anyway */
        s += (cnt <= 4 * p->q || L->nlev == RBF_LEVELS) ? cnt : cnt / 2;
    }
    L->start[L->nlev] = n;
    free(sub), free(rk);
    if (rc) lset_free(L);
    return rc;
}

/* the L-set of rank m: its centres in nb, squared distances in d2; the count */
static int lset_query(const lset_index *L, const fmm_rbf_plan *p, long m, long *nb, double *d2) {
    int k = 0;
    while (L->start[k + 1] <= m) ++k;
    long l = p->perm[m];
    double pt[3] = {p->x[l], p->y[l], p->z[l]};
    int c = rbf_kd_knn_rank(&L->t[k], pt, m, p->q, nb, d2);
    for (int i = 0; i < c; ++i) nb[i] = p->perm[L->start[k] + nb[i]];
    return c;
}

/* The L-set of each centre but the last (its q nearest among the centres of higher rank) and
 * its local cardinal function, RBF_LANES centres at a time; *degenerate: how many of the local
 * systems were singular. FMM_ERR_NOMEM, or FMM_ERR_COINCIDENT for two centres at one place. */
static int local_functions(fmm_rbf_plan *t, const lset_index *kd, long *degenerate_out) {
    const long ns = t->n - 1;
    const int q = t->q;
    int coincident = 0, nomem = 0;
    long degenerate = 0;
    long nbatch = (ns + RBF_LANES - 1) / RBF_LANES;
#pragma omp parallel num_threads(t->threads) reduction(+ : degenerate)
    {
        long *nb = malloc(sizeof(long) * q);
        double *d2 = malloc(sizeof(double) * q);
        /* lane-interleaved coordinates, zeta and the solver's workspace, 64-byte aligned */
        size_t sz = sizeof(double) * (4 * (size_t)q * RBF_LANES + (size_t)rbf_local_work(q));
        double *px = aligned_alloc(64, (sz + 63) / 64 * 64);
        if (!nb || !d2 || !px) {
#pragma omp atomic write
            nomem = 1;
        }
        double *py = px + q * RBF_LANES, *pz = py + q * RBF_LANES, *zt = pz + q * RBF_LANES;
        double *work = zt + q * RBF_LANES;
#pragma omp for schedule(dynamic, 8)
        for (long b = 0; b < nbatch; ++b) {
            if (!nb || !d2 || !px || coincident) continue;
            int cnt[RBF_LANES];
            for (int v = 0; v < RBF_LANES; ++v) {
                long m = b * RBF_LANES + v;
                if (m >= ns) { /* the last batch: idle lanes repeat lane 0 */
                    cnt[v] = cnt[0];
                    for (int i = 0; i < q; ++i) {
                        int k = i * RBF_LANES;
                        px[k + v] = px[k], py[k + v] = py[k], pz[k + v] = pz[k];
                    }
                    continue;
                }
                long l = t->perm[m];
                int c = lset_query(kd, t, m, nb, d2);
                /* l itself is at distance 0; a second point there is a duplicate centre */
                int zeros = 0;
                for (int i = 0; i < c; ++i) zeros += d2[i] == 0;
                if (zeros > 1) {
#pragma omp atomic write
                    coincident = 1;
                }
                for (int i = 0; i < c; ++i)
                    if (nb[i] == l) {
                        nb[i] = nb[0], nb[0] = l;
                        break;
                    }
                int *ix = t->lidx + m * q;
                for (int i = 0; i < q; ++i) { /* past c: copies of the centre, ignored */
                    long j = nb[i < c ? i : 0];
                    if (i < c) ix[i] = (int)j;
                    int k = i * RBF_LANES + v;
                    px[k] = t->x[j], py[k] = t->y[j], pz[k] = t->z[j];
                }
                t->lcnt[m] = cnt[v] = c;
            }
            int bad = rbf_local_solve(q, cnt, px, py, pz, t->c2, work, zt);
            for (int v = 0; v < RBF_LANES && b * RBF_LANES + v < ns; ++v) {
                double *z = t->lzeta + (b * RBF_LANES + v) * q;
                for (int i = 0; i < cnt[v]; ++i) z[i] = zt[i * RBF_LANES + v];
                degenerate += bad >> v & 1;
            }
        }
        free(nb), free(d2), free(px);
    }
    *degenerate_out = degenerate;
    return nomem ? FMM_ERR_NOMEM : coincident ? FMM_ERR_COINCIDENT : FMM_OK;
}

/* The mat-vec mv of the plan t (its centres set): the series or BLDTT structures over the
 * centres in the plan's units, or the CUDA direct sum's device copy. On failure the caller
 * frees what was made (rbf_free_centres). */
static int matvec_setup(fmm_rbf_plan *t, int mv) {
    int rc = FMM_OK;
    if (mv == FMM_RBF_MATVEC_SERIES || mv == FMM_RBF_MATVEC_BLDTT) {
        /* the centres interleaved in the plan's units */
        double *nxyz = malloc(sizeof(double) * 3 * t->n);
        if (!nxyz) return FMM_ERR_NOMEM;
        for (long i = 0; i < t->n; ++i)
            nxyz[3 * i] = t->x[i], nxyz[3 * i + 1] = t->y[i], nxyz[3 * i + 2] = t->z[i];
        if (mv == FMM_RBF_MATVEC_SERIES) {
            double stol = t->o.series_tol > 0 ? t->o.series_tol : t->o.tolerance / 100;
            if (stol < 1e-12) stol = 1e-12;
            rc = rbf_series_create(&t->ser, t->n, nxyz, t->c, stol);
        } else {
            bldtt_opts bo;
            rbf_bldtt_opts(t, &bo);
            rc = bldtt_makeplan(&bo, &t->bl);
            if (!rc) rc = bldtt_setpts(t->bl, t->n, nxyz, 0, NULL);
        }
        free(nxyz);
    }
#ifdef FMM_HAVE_CUDA
    if (t->o.device == FMM_DEVICE_CUDA && mv == FMM_RBF_MATVEC_DIRECT)
        rc = rbf_cuda_create(&t->gpu, t->n, t->x, t->y, t->z);
#endif
    return rc;
}

int fmm_rbf_setpts(fmm_rbf_plan *p, long n, const double *xyz) {
    if (!p || (!xyz && n > 0)) return FMM_ERR_ARG;
    if (n < 2) return FMM_ERR_NPTS;
    if (n > 2147483646L) return FMM_ERR_NPTS;
    for (long i = 0; i < 3 * n; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    double t0 = omp_get_wtime();
    fmm_rbf_plan tmp = *p; /* built here, swapped in on success */
    tmp.x = tmp.y = tmp.z = NULL, tmp.perm = NULL, tmp.lcnt = NULL, tmp.lidx = NULL;
    tmp.lzeta = NULL, tmp.ser = NULL, tmp.gpu = NULL, tmp.bl = NULL, tmp.dense = NULL;
    tmp.fgp_off = 0;
    tmp.n = n;
    /* the plan's unit of length (all centres at one position: FMM_ERR_COINCIDENT) */
    int rc = rbf_length_unit(n, xyz, tmp.ctr, &tmp.lexp);
    if (rc) return rc;
    const double c = ldexp(p->o.shape, -tmp.lexp);
    tmp.c2 = c * c > DBL_MIN ? c * c : DBL_MIN; /* inf where c is beyond any extent */
    tmp.c = sqrt(tmp.c2);
    int mv = p->o.matvec;
    if (mv == FMM_RBF_MATVEC_AUTO)
        mv = p->o.device == FMM_DEVICE_CPU
                 ? (n >= RBF_AUTO_SERIES_MIN && p->o.tolerance >= 1e-5 ? FMM_RBF_MATVEC_SERIES
                                                                       : FMM_RBF_MATVEC_DIRECT)
                 : (n >= RBF_AUTO_BLDTT_GPU_MIN ? FMM_RBF_MATVEC_BLDTT : FMM_RBF_MATVEC_DIRECT);
    tmp.matvec = mv;
    /* Automatic q: larger L-sets cost O(n q^3) once and save iterations (n = 20000, tolerance
       1e-12: 38, 22, 19, 16, 14 iterations at q = 30, 50, 64, 80, 100; docs/rbf.md), which pays
       where the O(n^2) CPU mat-vec dominates, the more the larger n (tolerance 1e-13, 2 threads:
       q = 96 against 80 slower at 10000, even at 15000, 5% faster at 20000 and 40000) */
    int q = p->o.lset_size;
    if (q == 0 && mv == FMM_RBF_MATVEC_DIRECT && p->o.device == FMM_DEVICE_CPU)
        q = n >= RBF_AUTO_Q96_MIN ? 96 : (n >= RBF_AUTO_Q80_MIN ? 80 : 50);
    else if (q == 0)
        q = 50;
    tmp.q = q;
    long ns = n - 1;
    tmp.x = malloc(sizeof(double) * n), tmp.y = malloc(sizeof(double) * n);
    tmp.z = malloc(sizeof(double) * n), tmp.perm = malloc(sizeof(long) * n);
    tmp.lcnt = malloc(sizeof(int) * ns);
    tmp.lidx = malloc(sizeof(int) * ns * q);
    tmp.lzeta = malloc(sizeof(double) * ns * q);
    lset_index kd;
    memset(&kd, 0, sizeof kd);
    if (!tmp.x || !tmp.y || !tmp.z || !tmp.perm || !tmp.lcnt || !tmp.lidx || !tmp.lzeta) {
        rc = FMM_ERR_NOMEM;
        goto fail;
    }
    for (long i = 0; i < n; ++i)
        tmp.x[i] = ldexp(xyz[3 * i] - tmp.ctr[0], -tmp.lexp),
        tmp.y[i] = ldexp(xyz[3 * i + 1] - tmp.ctr[1], -tmp.lexp),
        tmp.z[i] = ldexp(xyz[3 * i + 2] - tmp.ctr[2], -tmp.lexp);
    /* c so large that r^2 + c^2 rounds to c^2 over the whole set: every kernel value is the
       same, no solver can tell the centres apart */
    if (!(tmp.c2 + simd_extent2(n, tmp.x, tmp.y, tmp.z, 0, NULL, NULL, NULL, NULL) > tmp.c2)) {
        rc = FMM_ERR_NOCONVERGE;
        goto fail;
    }
    /* the random order sigma (Fisher-Yates) */
    uint64_t st = p->o.seed;
    for (long i = 0; i < n; ++i) tmp.perm[i] = i;
    for (long i = n - 1; i > 0; --i) {
        long j = (long)(splitmix(&st) % (uint64_t)(i + 1));
        long t = tmp.perm[i];
        tmp.perm[i] = tmp.perm[j], tmp.perm[j] = t;
    }
    rc = lset_build(&kd, &tmp);
    if (rc) goto fail;
    long degenerate = 0;
    rc = local_functions(&tmp, &kd, &degenerate);
    if (!rc && degenerate > ns / 2) { /* c far too large for the spacing */
        if (n > p->o.dense_max) rc = FMM_ERR_NOCONVERGE;
        tmp.fgp_off = 1; /* the fit takes the dense fallback directly */
    }
    if (rc) goto fail;
    tmp.ndegenerate = degenerate;
    rc = matvec_setup(&tmp, mv);
    if (rc) goto fail;
    lset_free(&kd);
    tmp.time_setup = omp_get_wtime() - t0;
    rbf_free_centres(p);
    *p = tmp;
    return 0;
fail:
    lset_free(&kd);
    rbf_free_centres(&tmp);
    return rc;
}
