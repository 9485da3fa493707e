/* FGP-RBF plan: options, centres (k-d tree, L-sets, local cardinal functions), the Krylov
 * iteration of Faul, Goodsell & Powell (digest A.2, with the corrected step 6), evaluation,
 * and mesh deformation. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
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

void fmm_rbf_default_opts(fmm_rbf_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->shape = 1.0;
    o->tolerance = 1e-8;
    o->lset_size = 0;
    o->max_iter = 500;
    o->matvec = FMM_RBF_MATVEC_AUTO;
    o->series_tol = 0;
    o->device = FMM_DEVICE_CPU;
    o->threads = 0;
    o->seed = 1;
    o->mixed_precision = 1;
    o->dense_max = FMM_RBF_DENSE_MAX;
}

static int check_opts(const fmm_rbf_opts *o) {
    if (!(isfinite(o->shape) && o->shape > 0)) return FMM_ERR_PARAM;
    if (!(o->tolerance >= FMM_RBF_TOL_MIN && o->tolerance <= FMM_RBF_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (o->lset_size != 0 && (o->lset_size < FMM_RBF_Q_MIN || o->lset_size > FMM_RBF_Q_MAX)) return FMM_ERR_PARAM;
    if (o->max_iter < 1) return FMM_ERR_PARAM;
    if (o->matvec < FMM_RBF_MATVEC_AUTO || o->matvec > FMM_RBF_MATVEC_BLDTT) return FMM_ERR_PARAM;
    if (!(o->series_tol == 0 || (o->series_tol > 0 && o->series_tol <= 1e-2))) return FMM_ERR_PARAM;
    if (o->mixed_precision != 0 && o->mixed_precision != 1) return FMM_ERR_PARAM;
    if (o->dense_max < 0 || o->dense_max > FMM_RBF_DENSE_LIMIT) return FMM_ERR_PARAM;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (o->device != FMM_DEVICE_CPU && o->device != FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
    if (o->device == FMM_DEVICE_CUDA) {
#ifdef FMM_HAVE_CUDA
        if (fmm_cuda_device_count() == 0) return FMM_ERR_DEVICE;
        if (o->matvec == FMM_RBF_MATVEC_SERIES) return FMM_ERR_UNSUPPORTED; /* CPU only */
#else
        return FMM_ERR_DEVICE;
#endif
    }
    return 0;
}

int fmm_rbf_makeplan(const fmm_rbf_opts *opts, fmm_rbf_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (!opts) return FMM_ERR_ARG;
    int rc = check_opts(opts);
    if (rc) return rc;
    fmm_rbf_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->o = *opts;
    p->threads = opts->threads > 0 ? opts->threads : omp_get_max_threads();
    *plan = p;
    return 0;
}

static void free_centres(fmm_rbf_plan *p) {
    free(p->x), free(p->y), free(p->z), free(p->perm), free(p->lcnt), free(p->lidx), free(p->lzeta);
    rbf_series_destroy(p->ser);
    bldtt_destroy(p->bl);
    rbf_dense_destroy(p->dense);
    p->bl = NULL, p->dense = NULL, p->fgp_off = 0;
#ifdef FMM_HAVE_CUDA
    rbf_cuda_destroy(p->gpu);
#endif
    p->x = p->y = p->z = NULL, p->perm = NULL, p->lcnt = NULL, p->lidx = NULL, p->lzeta = NULL;
    p->ser = NULL, p->gpu = NULL, p->n = 0;
}

void fmm_rbf_destroy(fmm_rbf_plan *p) {
    if (!p) return;
    free_centres(p);
    free(p);
}

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

/* BLDTT options for the plan's accuracy: the digest's (theta, degree) ladder, from about
 * 1e-8 relative (0.7, 8) to 1e-10 (0.5, 10) for the Coulomb kernel (docs/bldtt.md). */
static void bldtt_set_opts(const fmm_rbf_plan *p, bldtt_opts *bo) {
    bldtt_default_opts(bo);
    bo->kernel = BLDTT_MULTIQUADRIC;
    bo->param = p->c;
    /* tolerance / 1000 by default: BLDTT's error per max|f| runs some 50x its nominal relative
       accuracy (sum |lambda| is tens of max|f|); with tolerance / 100, (0.7, 8) at tolerance
       1e-6 and N = 8000 left operator errors of 0.01-0.9 of the tolerance (11 seeds) */
    double t = p->o.series_tol > 0 ? p->o.series_tol : p->o.tolerance / 1000;
    if (t >= 1e-5) bo->theta = 0.7, bo->degree = 5;
    else if (t >= 1e-8) bo->theta = 0.7, bo->degree = 8;
    else bo->theta = 0.5, bo->degree = 10;
    bo->device = p->o.device;
    bo->threads = p->o.threads;
}

int rbf_length_unit(long n, const double *xyz, double ctr[3], int *e) {
    int emax = INT_MIN; /* the exponent of the largest extent */
    for (int d = 0; d < 3; ++d) {
        double lo = xyz[d], hi = lo;
        for (long i = 1; i < n; ++i) {
            lo = xyz[3 * i + d] < lo ? xyz[3 * i + d] : lo;
            hi = xyz[3 * i + d] > hi ? xyz[3 * i + d] : hi;
        }
        ctr[d] = lo == hi ? lo : 0;
        if (lo == hi) continue;
        int ed;
        if (isfinite(hi - lo))
            frexp(hi - lo, &ed);
        else
            frexp(0.5 * hi - 0.5 * lo, &ed), ++ed; /* hi - lo overflows, half of it does not */
        emax = ed > emax ? ed : emax;
    }
    *e = emax == INT_MIN ? 0 : emax;
    return emax == INT_MIN ? FMM_ERR_COINCIDENT : 0;
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
    double *nxyz = NULL; /* the centres interleaved in the plan's units (series, BLDTT) */
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
    int coincident = 0, nomem = 0;
    long degenerate = 0;
    long nbatch = (ns + RBF_LANES - 1) / RBF_LANES;
#pragma omp parallel num_threads(p->threads) reduction(+ : degenerate)
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
                long l = tmp.perm[m];
                int c = lset_query(&kd, &tmp, m, nb, d2);
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
                int *ix = tmp.lidx + m * q;
                for (int i = 0; i < q; ++i) { /* past c: copies of the centre, ignored */
                    long j = nb[i < c ? i : 0];
                    if (i < c) ix[i] = (int)j;
                    int k = i * RBF_LANES + v;
                    px[k] = tmp.x[j], py[k] = tmp.y[j], pz[k] = tmp.z[j];
                }
                tmp.lcnt[m] = cnt[v] = c;
            }
            int bad = rbf_local_solve(q, cnt, px, py, pz, tmp.c2, work, zt);
            for (int v = 0; v < RBF_LANES && b * RBF_LANES + v < ns; ++v) {
                double *z = tmp.lzeta + (b * RBF_LANES + v) * q;
                for (int i = 0; i < cnt[v]; ++i) z[i] = zt[i * RBF_LANES + v];
                degenerate += bad >> v & 1;
            }
        }
        free(nb), free(d2), free(px);
    }
    if (nomem) rc = FMM_ERR_NOMEM;
    else if (coincident) rc = FMM_ERR_COINCIDENT;
    else if (degenerate > ns / 2) { /* c far too large for the spacing */
        if (n > p->o.dense_max) rc = FMM_ERR_NOCONVERGE;
        tmp.fgp_off = 1; /* the fit takes the dense fallback directly */
    }
    if (rc) goto fail;
    tmp.ndegenerate = degenerate;
    if (mv == FMM_RBF_MATVEC_SERIES || mv == FMM_RBF_MATVEC_BLDTT) {
        nxyz = malloc(sizeof(double) * 3 * n);
        if (!nxyz) {
            rc = FMM_ERR_NOMEM;
            goto fail;
        }
        for (long i = 0; i < n; ++i)
            nxyz[3 * i] = tmp.x[i], nxyz[3 * i + 1] = tmp.y[i], nxyz[3 * i + 2] = tmp.z[i];
    }
    if (mv == FMM_RBF_MATVEC_SERIES) {
        double stol = p->o.series_tol > 0 ? p->o.series_tol : p->o.tolerance / 100;
        if (stol < 1e-12) stol = 1e-12;
        rc = rbf_series_create(&tmp.ser, n, nxyz, tmp.c, stol);
        if (rc) goto fail;
    }
    if (mv == FMM_RBF_MATVEC_BLDTT) {
        bldtt_opts bo;
        bldtt_set_opts(&tmp, &bo);
        rc = bldtt_makeplan(&bo, &tmp.bl);
        if (!rc) rc = bldtt_setpts(tmp.bl, n, nxyz, 0, NULL);
        if (rc) goto fail;
    }
#ifdef FMM_HAVE_CUDA
    if (p->o.device == FMM_DEVICE_CUDA && mv == FMM_RBF_MATVEC_DIRECT) {
        rc = rbf_cuda_create(&tmp.gpu, n, tmp.x, tmp.y, tmp.z);
        if (rc) goto fail;
    }
#endif
    lset_free(&kd);
    free(nxyz);
    tmp.time_setup = omp_get_wtime() - t0;
    free_centres(p);
    *p = tmp;
    return 0;
fail:
    lset_free(&kd);
    free(nxyz);
    free_centres(&tmp);
    return rc;
}

/* one weight vector through the series or BLDTT mat-vec */
static int apply_approx(fmm_rbf_plan *p, const double *w, long m, const double *tx,
                        const double *ty, const double *tz, double *out) {
    if (p->matvec == FMM_RBF_MATVEC_SERIES) {
        if (!tx) return rbf_series_apply_self(p->ser, w, out, p->threads);
        return rbf_series_apply(p->ser, w, m, tx, ty, tz, out, p->threads);
    }
    if (p->matvec == FMM_RBF_MATVEC_BLDTT) {
        /* BLDTT leaves out the self term G(0) w_i = c w_i: added here */
        if (!tx) {
            int rc = bldtt_execute(p->bl, w, out, NULL);
            if (rc) return rc;
            for (long i = 0; i < p->n; ++i) out[i] += p->c * w[i];
            return 0;
        }
        bldtt_opts bo;
        bldtt_set_opts(p, &bo);
        bldtt_plan *b = NULL;
        double *t = malloc(sizeof(double) * 3 * m), *src = malloc(sizeof(double) * 3 * p->n);
        int rc = (!t || !src) ? FMM_ERR_NOMEM : 0;
        if (!rc) {
            for (long i = 0; i < m; ++i) t[3 * i] = tx[i], t[3 * i + 1] = ty[i], t[3 * i + 2] = tz[i];
            for (long i = 0; i < p->n; ++i) src[3 * i] = p->x[i], src[3 * i + 1] = p->y[i], src[3 * i + 2] = p->z[i];
            rc = bldtt_makeplan(&bo, &b);
        }
        if (!rc) rc = bldtt_setpts(b, p->n, src, m, t);
        if (!rc) rc = bldtt_execute(b, w, out, NULL);
        bldtt_destroy(b);
        free(t), free(src);
        return rc;
    }
    return FMM_ERR_PARAM;
}

int rbf_plan_apply(fmm_rbf_plan *p, int nw, const double *w, long m, const double *tx,
                   const double *ty, const double *tz, double *out) {
    const long mm = tx ? m : p->n;
    if (p->matvec != FMM_RBF_MATVEC_DIRECT) {
        int rc = 0;
        for (int k = 0; k < nw && !rc; ++k)
            rc = apply_approx(p, w + k * p->n, m, tx, ty, tz, out + k * mm);
        return rc;
    }
    /* the direct sums: one kernel value serves all nw vectors */
#ifdef FMM_HAVE_CUDA
    if (p->gpu) return rbf_cuda_matvec(p->gpu, p->c2, nw, w, mm, tx, ty, tz, out);
#endif
    if (!tx) return rbf_direct_self_cpu(p->n, p->x, p->y, p->z, nw, w, p->c2, 0, out, p->threads);
    return rbf_direct_cpu(p->n, p->x, p->y, p->z, nw, w, p->c2, m, tx, ty, tz, out, p->threads);
}

static double max_abs(long n, const double *v) {
    double m = 0;
    for (long i = 0; i < n; ++i)
        if (fabs(v[i]) > m) m = fabs(v[i]);
    return m;
}

/* rbf_plan_apply for weights w and results out in the caller's units (targets in the plan's):
 * each w + k n in units of 2^ew, its largest magnitude in [1/2, 1), the sums scaled back by
 * 2^(lexp + ew), all exact but where an output leaves double's range: FMM_ERR_RANGE for one that
 * overflows */
static int apply_scaled(fmm_rbf_plan *p, int nw, const double *w, long m, const double *tx,
                        const double *ty, const double *tz, double *out) {
    const long n = p->n, mm = tx ? m : n;
    double *ws = calloc((size_t)nw * n, sizeof(double));
    if (!ws) return FMM_ERR_NOMEM;
    int ew[RBF_MAXW];
    for (int k = 0; k < nw; ++k) {
        const double wm = max_abs(n, w + k * n);
        ew[k] = 0;
        if (wm > 0) frexp(wm, &ew[k]);
        for (long i = 0; i < n; ++i) ws[k * n + i] = ldexp(w[k * n + i], -ew[k]);
    }
    int rc = rbf_plan_apply(p, nw, ws, m, tx, ty, tz, out);
    free(ws);
    for (int k = 0; k < nw && !rc; ++k)
        for (long i = 0; i < mm; ++i) {
            out[k * mm + i] = ldexp(out[k * mm + i], p->lexp + ew[k]);
            if (!isfinite(out[k * mm + i])) rc = FMM_ERR_RANGE;
        }
    return rc;
}

int fmm_rbf_matvec(fmm_rbf_plan *p, const double *w, double *out, double *ms) {
    if (!p || !w || !out) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    for (long i = 0; i < p->n; ++i)
        if (!isfinite(w[i])) return FMM_ERR_NONFINITE;
    double t0 = omp_get_wtime();
    int rc = apply_scaled(p, 1, w, 0, NULL, NULL, NULL, out);
    if (ms) *ms = 1e3 * (omp_get_wtime() - t0);
    return rc;
}

int fmm_rbf_get_method(const fmm_rbf_plan *p, int *matvec, int *lset_size) {
    if (!p) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    if (matvec) *matvec = p->matvec;
    if (lset_size) *lset_size = p->q;
    return 0;
}

/* Centres at which the fit checks an approximate mat-vec (series, BLDTT) against the exact sum. */
#define RBF_CHECK_ROWS 1024

/* Estimated largest error of the approximate mat-vec d = ~Phi lambda: the largest difference
 * from the exact direct sum at RBF_CHECK_ROWS evenly spread centres (cost 1024 n kernel values,
 * a fraction of one mat-vec from a few thousand centres on; all rows below 1024). The largest
 * error over all centres was 1.1-4.3x the sampled one with 256 rows (N = 8000, 11 seeds).
 * 0 for the direct mat-vec. */
static int matvec_error(fmm_rbf_plan *p, const double *lambda, const double *d, double *err) {
    *err = 0;
    if (p->matvec == FMM_RBF_MATVEC_DIRECT) return 0;
    long m = p->n < RBF_CHECK_ROWS ? p->n : RBF_CHECK_ROWS;
    double t[3 * RBF_CHECK_ROWS] = {0}, s[RBF_CHECK_ROWS];
    long row[RBF_CHECK_ROWS];
    for (long k = 0; k < m; ++k) {
        row[k] = (long)((double)k * p->n / m);
        t[k] = p->x[row[k]], t[m + k] = p->y[row[k]], t[2 * m + k] = p->z[row[k]];
    }
    int rc = rbf_direct_cpu(p->n, p->x, p->y, p->z, 1, lambda, p->c2, m, t, t + m, t + 2 * m, s,
                            p->threads);
    for (long k = 0; k < m && !rc; ++k) *err = fmax(*err, fabs(s[k] - d[row[k]]));
    return rc;
}

/* tau = sum_l (zeta_l . r) zeta_l over the L-sets; tb: threads * n doubles */
static void precondition(const fmm_rbf_plan *p, const double *r, double *tau, double *tb) {
    long n = p->n, ns = n - 1;
    int q = p->q, nt = p->threads;
#pragma omp parallel num_threads(nt)
    {
        int tid = omp_get_thread_num();
        double *tl = tb + (long)tid * n;
        memset(tl, 0, sizeof(double) * n);
#pragma omp for schedule(static)
        for (long m = 0; m < ns; ++m) {
            const int *ix = p->lidx + m * q;
            const double *z = p->lzeta + m * q;
            int c = p->lcnt[m];
            double mu = 0;
            for (int i = 0; i < c; ++i) mu += z[i] * r[ix[i]];
            for (int i = 0; i < c; ++i) tl[ix[i]] += mu * z[i];
        }
        /* implicit barrier; then sum the thread buffers */
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i) {
            double s = 0;
            for (int t = 0; t < omp_get_num_threads(); ++t) s += tb[(long)t * n + i];
            tau[i] = s;
        }
    }
}

/* doubles per thread in the slots of par_dots (a cache line: no false sharing) */
#define RBF_DOT_SLOT 8

/* out[k] = sum_i a[k][i] b[k][i], or sum_i |a[k][i]| where b[k] is NULL, for k < nd (<= 3),
 * i < n: each thread sums a static share into its slot (slots: RBF_DOT_SLOT doubles per
 * thread), the slots are added in thread order, so the same thread count gives the same bits
 * (core/reduce.h) */
static void par_dots(const fmm_rbf_plan *p, double *slots, int nd, const double *const *a,
                     const double *const *b, double *out) {
    const long n = p->n;
    int used = 1;
#pragma omp parallel num_threads(p->threads)
    {
        double acc[3] = {0, 0, 0};
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i)
            for (int k = 0; k < nd; ++k) acc[k] += b[k] ? a[k][i] * b[k][i] : fabs(a[k][i]);
        double *sl = slots + (long)omp_get_thread_num() * RBF_DOT_SLOT;
        for (int k = 0; k < RBF_DOT_SLOT; ++k) sl[k] = k < nd ? acc[k] : 0;
#pragma omp single nowait
        used = omp_get_num_threads();
    }
    double sum[RBF_DOT_SLOT];
    fmm_sum_slots(slots, used, RBF_DOT_SLOT, sum);
    for (int k = 0; k < nd; ++k) out[k] = sum[k];
}

/* out + v n = Phi w[v] for nv vectors (win: nv n scratch): with the direct sums one pass for all
   (they share its square roots); single: the CPU direct sum in single precision */
static int apply_many(fmm_rbf_plan *p, int nv, const double *const *w, double *win, double *out,
                      int single) {
    for (int v = 0; v < nv; ++v) memcpy(win + v * p->n, w[v], sizeof(double) * p->n);
    if (single)
        return rbf_direct_self_cpu(p->n, p->x, p->y, p->z, nv, win, p->c2, 1, out, p->threads);
    return rbf_plan_apply(p, nv, win, 0, NULL, NULL, NULL, out);
}

/* the FGP iteration of rbf_fit, in the plan's units; res is filled in (not NULL) */
static int fgp_fit(fmm_rbf_plan *p, int nw, const double *f, double *lambda, double *alpha,
                   fmm_rbf_result *res) {
    const long n = p->n;
    double t0 = omp_get_wtime(), tmv = 0;
    /* With the direct sums (CPU or GPU) further weight vectors cost little (the square roots
       bound them): the right-hand sides share each pass, and a side whose next step is expected
       to reach the tolerance also sends lambda through it, so that its fresh residual needs no
       pass of its own (where the pass has room: RBF_MAXW vectors).
       Single precision: on the CPU, Phi del may come from the single-precision direct sum (~2.7x
       faster), where every active side has room for one more vector in a pass. Its error, up to
       RBF_SINGLE_ERR u_f phi_max ||del||_2 a row, times the step g, adds to gap: how far the
       residual of the recurrence may have drifted from the true one. Once gap exceeds
       RBF_SINGLE_GAP times the residual, the sum of those steps, ls = sum g del, rides in the
       next pass, in double, and r takes back what the single-precision passes took off, fs =
       sum g Phi~ del, less Phi ls: the recurrence then carries the rounding of double passes
       only, and the conjugate directions go on. (Replacing r by f - Phi lambda - alpha instead
       would put the rounding of Phi lambda, ~1e-14 max|f| at N = 20000, into every replaced
       residual: near the tolerance 1e-13 that cost 1-5 iterations.) The passes then alternate.
       buf: r, tau, del, d, ls, fs of each side, then the passes' inputs and outputs. */
    const int multi = p->matvec == FMM_RBF_MATVEC_DIRECT;
    const int nvmax = multi ? (2 * nw < RBF_MAXW ? 2 * nw : RBF_MAXW) : nw; /* vectors per pass */
    /* the largest kernel value, and whether the single-precision sum may take these centres
       (their squared extent, and later the weights, well inside float's range) */
    const double phimax2 = simd_extent2(n, p->x, p->y, p->z, 0, NULL, NULL, NULL, NULL) + p->c2;
    int single_ok = multi && !p->gpu && p->o.mixed_precision && phimax2 < 1e30;
    const double phimax = sqrt(phimax2);
    const long side = 6 * n; /* doubles of buf per side */
    double *buf = malloc(sizeof(double) * n * (6 * nw + 2 * nvmax));
    double *tb = malloc(sizeof(double) * n * p->threads);
    double *slots = malloc(sizeof(double) * RBF_DOT_SLOT * p->threads);
    if (!buf || !tb || !slots) {
        free(buf), free(tb), free(slots);
        return FMM_ERR_NOMEM;
    }
    double *win = buf + nw * side, *out = win + nvmax * n;
    double thr[RBF_MAXW], fscale[RBF_MAXW], a[RBF_MAXW], rmax[RBF_MAXW], operr[RBF_MAXW],
        ddprev[RBF_MAXW], rlast[RBF_MAXW], gap[RBF_MAXW];
    int it[RBF_MAXW], first[RBF_MAXW], replaced[RBF_MAXW], last[RBF_MAXW], carry[RBF_MAXW],
        nsingle = 0, rc = 0;
    enum { CARRY_NONE, CARRY_LAMBDA, CARRY_LS }; /* what rides with a side's del in a pass */
    for (int k = 0; k < nw; ++k) {
        const double *fk = f + k * n;
        double *r = buf + k * side, *lam = lambda + k * n;
        double fmin = fk[0], fmax = fk[0];
        for (long i = 0; i < n; ++i) {
            if (fk[i] < fmin) fmin = fk[i];
            if (fk[i] > fmax) fmax = fk[i];
        }
        fscale[k] = max_abs(n, fk), thr[k] = p->o.tolerance * (fscale[k] > 0 ? fscale[k] : 1);
        a[k] = 0.5 * (fmin + fmax);
        for (long i = 0; i < n; ++i) lam[i] = 0, r[i] = fk[i] - a[k];
        memset(r + 4 * n, 0, sizeof(double) * 2 * n); /* ls, fs */
        rmax[k] = max_abs(n, r), operr[k] = ddprev[k] = rlast[k] = gap[k] = 0;
        it[k] = replaced[k] = last[k] = 0, first[k] = 1;
    }
    for (;;) {
        int act[RBF_MAXW], na = 0;
        for (int k = 0; k < nw; ++k)
            if (rmax[k] + 2 * operr[k] > thr[k]) act[na++] = k;
        if (!na) break;
        const double *vec[RBF_MAXW];
        int slot[RBF_MAXW], lslot[RBF_MAXW], nv = 0, single = single_ok && 2 * na <= nvmax;
        for (int q = 0; q < na && !rc; ++q) {
            const int k = act[q];
            double *r = buf + k * side, *tau = r + n, *del = tau + n, *d = del + n;
            if (it[k] >= p->o.max_iter) {
                rc = FMM_ERR_NOCONVERGE;
                break;
            }
            ++it[k];
            precondition(p, r, tau, tb);
            if (first[k]) {
                memcpy(del, tau, sizeof(double) * n);
            } else {
                double num;
                par_dots(p, slots, 1, (const double *[]){tau}, (const double *[]){d}, &num);
                double beta = num / ddprev[k];
#pragma omp parallel for num_threads(p->threads)
                for (long i = 0; i < n; ++i) del[i] = tau[i] - beta * del[i];
            }
            first[k] = 0;
            vec[nv] = del, slot[k] = nv++;
            single = single && max_abs(n, del) * phimax * n < 1e30;
        }
        if (rc) break;
        for (int q = 0; q < na; ++q) {
            const int k = act[q];
            carry[k] = nv == nvmax                         ? CARRY_NONE
                       : last[k]                           ? CARRY_LAMBDA
                       : gap[k] > RBF_SINGLE_GAP * rmax[k] ? CARRY_LS
                                                           : CARRY_NONE;
            if (carry[k] == CARRY_LAMBDA) vec[nv] = lambda + k * n;
            if (carry[k] == CARRY_LS) vec[nv] = buf + k * side + 4 * n;
            if (carry[k] != CARRY_NONE) lslot[k] = nv++, single = 0;
        }
        double tm = omp_get_wtime();
        rc = apply_many(p, nv, vec, win, out, single);
        /* del^T Phi del < 0 (the descent) must hold beyond the single-precision pass's error,
           |del^T (Phi~ - Phi) del| <= ||del||_1 RBF_SINGLE_ERR u_f phi_max ||del||_2; where it
           does not (an ill-conditioned system), the pass is redone in double, and so is every
           later one */
        for (int q = 0; q < na && single && !rc; ++q) {
            const double *del = vec[slot[act[q]]], *d = out + slot[act[q]] * n;
            double s3[3];
            par_dots(p, slots, 3, (const double *[]){del, del, del},
                     (const double *[]){d, NULL, del}, s3);
            const double dd = s3[0], l1 = s3[1], l2 = s3[2];
            if (!(dd < -l1 * RBF_SINGLE_ERR * 0x1p-24 * phimax * sqrt(l2))) {
                single = single_ok = 0;
                rc = apply_many(p, nv, vec, win, out, 0);
            }
        }
        nsingle += single;
        tmv += omp_get_wtime() - tm;
        if (rc) break;
        int fresh[RBF_MAXW], nf = 0, checked[RBF_MAXW] = {0};
        for (int q = 0; q < na && !rc; ++q) {
            const int k = act[q];
            double *r = buf + k * side, *del = r + 2 * n, *d = del + n, *ls = d + n, *fs = ls + n,
                   *lam = lambda + k * n;
            memcpy(d, out + slot[k] * n, sizeof(double) * n);
            double s3[3];
            par_dots(p, slots, 3, (const double *[]){del, del, del}, (const double *[]){d, r, del},
                     s3);
            const double dd = s3[0], dr = s3[1], dl2 = s3[2];
            if (!(dd < 0) || !isfinite(dd) || !isfinite(dr)) {
                /* no descent possible: the search direction vanished or lost definiteness */
                rc = FMM_ERR_NOCONVERGE;
                break;
            }
            double g = dr / dd, vmin = INFINITY, vmax = -INFINITY;
#pragma omp parallel for reduction(min : vmin) reduction(max : vmax) num_threads(p->threads)
            for (long i = 0; i < n; ++i) {
                double v = r[i] - g * d[i];
                r[i] = v;
                vmin = v < vmin ? v : vmin;
                vmax = v > vmax ? v : vmax;
                lam[i] += g * del[i];
                if (single) ls[i] += g * del[i], fs[i] += g * d[i];
            }
            double om = 0.5 * (vmin + vmax), rm = 0;
#pragma omp parallel for reduction(max : rm) num_threads(p->threads)
            for (long i = 0; i < n; ++i) {
                r[i] -= om;
                rm = fabs(r[i]) > rm ? fabs(r[i]) : rm;
            }
            rmax[k] = rm, a[k] += om, ddprev[k] = dd;
            if (single) gap[k] += RBF_SINGLE_ERR * 0x1p-24 * phimax * fabs(g) * sqrt(dl2);
            if (carry[k] == CARRY_LS) {
                const double *pl = out + lslot[k] * n;
                for (long i = 0; i < n; ++i) r[i] += fs[i] - pl[i];
                memset(ls, 0, sizeof(double) * 2 * n);
                rmax[k] = max_abs(n, r), gap[k] = 0;
            }
            if (rmax[k] + 2 * operr[k] > thr[k]) continue;
            checked[k] = 1;
            /* the true residual (the recurrence may have drifted): Phi lambda is Phi (lambda
               before this step) + g Phi del from this pass, or from a pass of its own below */
            if (carry[k] == CARRY_LAMBDA) {
                const double *fk = f + k * n, *pl = out + lslot[k] * n;
                for (long i = 0; i < n; ++i) r[i] = fk[i] - (pl[i] + g * d[i]) - a[k];
                memset(ls, 0, sizeof(double) * 2 * n);
                rmax[k] = max_abs(n, r), gap[k] = 0;
            } else {
                vec[nf] = lam, fresh[nf++] = k;
            }
        }
        if (rc) break;
        if (nf) {
            tm = omp_get_wtime();
            rc = apply_many(p, nf, vec, win, out, 0);
            tmv += omp_get_wtime() - tm;
            if (rc) break;
            for (int q = 0; q < nf; ++q) {
                const int k = fresh[q];
                const double *fk = f + k * n, *pl = out + q * n;
                double *r = buf + k * side;
                for (long i = 0; i < n; ++i) r[i] = fk[i] - pl[i] - a[k];
                memset(r + 4 * n, 0, sizeof(double) * 2 * n);
                /* the sampled error times 2 stands for its maximum over all centres */
                rc = matvec_error(p, lambda + k * n, pl, &operr[k]);
                if (rc) break;
                rmax[k] = max_abs(n, r), gap[k] = 0;
            }
            if (rc) break;
        }
        for (int q = 0; q < na; ++q) {
            const int k = act[q];
            if (checked[k] && rmax[k] + 2 * operr[k] > thr[k]) {
                /* past 5 restarts, or an operator too coarse for the tolerance: no iterate helps */
                if (++replaced[k] > 5 || 2 * operr[k] >= thr[k]) {
                    rc = FMM_ERR_NOCONVERGE;
                    break;
                }
                first[k] = 1; /* restart the conjugate directions from the true residual */
            }
            /* the next step is expected to reach the tolerance where this one's reduction,
               repeated, gets within 4x of it (cheap to be wrong that way: the pass takes one
               more vector) */
            last[k] = multi && rlast[k] > 0 && rmax[k] * (rmax[k] / rlast[k]) <= 4 * thr[k];
            rlast[k] = rmax[k];
        }
        if (rc) break;
    }
    for (int k = 0; k < nw; ++k) alpha[k] = a[k];
    res->iterations = 0, res->max_residual = 0;
    for (int k = 0; k < nw; ++k) {
        res->iterations = it[k] > res->iterations ? it[k] : res->iterations;
        const double e = (rmax[k] + operr[k]) / (fscale[k] > 0 ? fscale[k] : 1);
        res->max_residual = e > res->max_residual ? e : res->max_residual;
    }
    res->time_setup_s = p->time_setup;
    res->time_fit_s = omp_get_wtime() - t0;
    res->time_matvec_s = tmv;
    res->single_passes = nsingle;
    res->matvec = p->matvec;
    res->device = p->o.device;
    res->solver = FMM_RBF_SOLVER_FGP;
    free(buf), free(tb), free(slots);
    return rc;
}

/* Whether coefficients lambda' (the plan's units, for values f in units of 2^ef) lose more than
 * 1% of the tolerance thr when written in the caller's units, 2^(ef - lexp) lambda': those below
 * double's smallest normal number keep only a fixed absolute precision, 2^-1075 each, which
 * moves s(x_i) by up to n 2^-1075 phi_max in the caller's units. */
static int lambda_underflows(const fmm_rbf_plan *p, int ef, double thr) {
    const double phimax =
        sqrt(simd_extent2(p->n, p->x, p->y, p->z, 0, NULL, NULL, NULL, NULL) + p->c2);
    return log2((double)p->n * phimax) - 1075.0 + (p->lexp - ef) > log2(0.01 * thr);
}

int rbf_fit(fmm_rbf_plan *p, int nw, const double *f, double *lambda, double *alpha,
            fmm_rbf_result *res) {
    if (!p || !f || !lambda || !alpha || nw < 1 || nw > RBF_MAXW) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    const long n = p->n;
    for (long i = 0; i < nw * n; ++i)
        if (!isfinite(f[i])) return FMM_ERR_NONFINITE;
    const double t0 = omp_get_wtime();
    /* each side's values in units of 2^ef[k], their largest magnitude in [1/2, 1): the fit is
       linear in f, and scaling by a power of 2 is exact */
    double *fs = malloc(sizeof(double) * nw * n), *keep = malloc(sizeof(double) * nw * n);
    if (!fs || !keep) {
        free(fs), free(keep);
        return FMM_ERR_NOMEM;
    }
    int ef[RBF_MAXW];
    double thr[RBF_MAXW], akeep[RBF_MAXW], rmax[RBF_MAXW];
    for (int k = 0; k < nw; ++k) {
        const double fm = max_abs(n, f + k * n);
        ef[k] = 0;
        if (fm > 0) frexp(fm, &ef[k]);
        for (long i = 0; i < n; ++i) fs[k * n + i] = ldexp(f[k * n + i], -ef[k]);
        thr[k] = p->o.tolerance * (fm > 0 ? ldexp(fm, -ef[k]) : 1);
    }
    fmm_rbf_result r;
    memset(&r, 0, sizeof r);
    int rc;
    if (p->fgp_off) { /* the local systems said it: FGP cannot work here */
        rc = FMM_ERR_NOCONVERGE, r.max_residual = INFINITY;
        r.time_setup_s = p->time_setup, r.matvec = p->matvec, r.device = p->o.device;
        for (long i = 0; i < nw * n; ++i) lambda[i] = 0;
        for (int k = 0; k < nw; ++k) alpha[k] = 0;
    } else {
        rc = fgp_fit(p, nw, fs, lambda, alpha, &r);
    }
    if (rc == FMM_ERR_NOCONVERGE && n <= p->o.dense_max) {
        /* the dense fallback; where it fails too, the better of the two iterates is returned */
        memcpy(keep, lambda, sizeof(double) * nw * n);
        memcpy(akeep, alpha, sizeof(double) * nw);
        const int rd = rbf_dense_fit(p, nw, fs, thr, lambda, alpha, rmax);
        double e = 0;
        for (int k = 0; k < nw; ++k) e = fmax(e, rmax[k] / (thr[k] / p->o.tolerance));
        if (rd == 0 || (rd == FMM_ERR_NOCONVERGE && e < r.max_residual)) {
            r.solver = FMM_RBF_SOLVER_DENSE, r.max_residual = e;
        } else {
            memcpy(lambda, keep, sizeof(double) * nw * n);
            memcpy(alpha, akeep, sizeof(double) * nw);
        }
        rc = rd;
    }
    /* back to the caller's units: lambda 2^(ef - lexp), alpha 2^ef */
    for (int k = 0; k < nw; ++k) {
        alpha[k] = ldexp(alpha[k], ef[k]);
        for (long i = 0; i < n; ++i) {
            double *l = lambda + k * n + i;
            *l = ldexp(*l, ef[k] - p->lexp);
            if (!isfinite(*l) && !rc) rc = FMM_ERR_RANGE;
        }
        if (!rc && lambda_underflows(p, ef[k], thr[k])) rc = FMM_ERR_RANGE;
    }
    free(fs), free(keep);
    r.time_fit_s = omp_get_wtime() - t0;
    if (res) *res = r;
    return rc;
}

int fmm_rbf_execute(fmm_rbf_plan *p, const double *f, double *lambda, double *alpha,
                    fmm_rbf_result *res) {
    return rbf_fit(p, 1, f, lambda, alpha, res);
}

int rbf_eval(fmm_rbf_plan *p, int nw, const double *lambda, const double *alpha, long m,
             const double *xyz, double *s) {
    if (!p || !lambda || !alpha || m < 0 || (m > 0 && (!xyz || !s))) return FMM_ERR_ARG;
    if (p->n == 0) return FMM_ERR_NOPTS;
    for (int k = 0; k < nw; ++k)
        if (!isfinite(alpha[k])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < nw * p->n; ++i)
        if (!isfinite(lambda[i])) return FMM_ERR_NONFINITE;
    for (long i = 0; i < 3 * m; ++i)
        if (!isfinite(xyz[i])) return FMM_ERR_NONFINITE;
    if (m == 0) return 0;
    double *t = malloc(sizeof(double) * 3 * m);
    if (!t) return FMM_ERR_NOMEM;
    for (long i = 0; i < m; ++i) /* the points in the plan's units */
        for (int d = 0; d < 3; ++d) t[d * m + i] = ldexp(xyz[3 * i + d] - p->ctr[d], -p->lexp);
    int rc = apply_scaled(p, nw, lambda, m, t, t + m, t + 2 * m, s);
    free(t);
    for (int k = 0; k < nw && !rc; ++k)
        for (long i = 0; i < m; ++i) {
            s[k * m + i] += alpha[k];
            if (!isfinite(s[k * m + i])) rc = FMM_ERR_RANGE;
        }
    return rc;
}

int fmm_rbf_eval(fmm_rbf_plan *p, const double *lambda, double alpha, long m, const double *xyz,
                 double *s) {
    return rbf_eval(p, 1, lambda, &alpha, m, xyz, s);
}

const char *fmm_rbf_strerror(int status) {
    switch (status) {
    case FMM_ERR_NPTS: return "rbf: at least 2 centres are needed";
    case FMM_ERR_NONFINITE: return "rbf: non-finite (NaN or Inf) coordinate, value or coefficient";
    case FMM_ERR_TOLERANCE: return "rbf: tolerance out of range [1e-13, 0.5]";
    case FMM_ERR_PARAM:
        return "rbf: parameter out of range (shape c must be finite and > 0; L-set size 0 or "
               "2..200; max_iter >= 1; series_tol 0 or (0, 1e-2]; mixed_precision 0 or 1; "
               "dense_max 0..20000)";
    case FMM_ERR_COINCIDENT:
        return "rbf: two centres at the same position (duplicate centres), or too close to tell "
               "apart in double precision relative to the extent of the set";
    case FMM_ERR_NOPTS: return "rbf: no centres set: call fmm_rbf_setpts first";
    case FMM_ERR_NOCONVERGE:
        return "rbf: the fit did not reach the tolerance: the FGP iteration stopped (max_iter, a "
               "breakdown, or local systems singular), and the dense LU fallback (up to dense_max "
               "centres) was not taken or could not solve the system either (shape c far too large "
               "for the spacing of the centres, or centres nearly coincident)";
    case FMM_ERR_RANGE:
        return "rbf: a result beyond the range of double precision (coefficients lambda for "
               "coordinates far larger or smaller than the values f, or s or Phi w overflowing): "
               "change the units of the input";
    case FMM_ERR_UNSUPPORTED: return "rbf: mat-vec not available (the series mat-vec runs on the CPU only)";
    default: return fmm_strerror(status);
    }
}
