/* rbf/fit.c - the Krylov iteration of Faul, Goodsell & Powell (docs/rbf.md, with the corrected
 * step 6) that fits lambda and alpha to the data, the check of an approximate mat-vec against
 * the exact sum, and the dense fallback where the iteration cannot work. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "rbf/rbf_internal.h"

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

/* the FGP iteration of rbf_fit, in the plan's units; res is filled in (not NULL). One function
 * of some 220 lines, for a reason: each step's phases (the directions, the shared mat-vec pass
 * and its single-precision check, the updates, the true residuals, the restarts; in that order
 * below) all read and write the per-side state declared at its top, a dozen arrays of RBF_MAXW
 * entries that functions of their own would pass around as one struct. */
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
        fscale[k] = rbf_max_abs(n, fk), thr[k] = p->o.tolerance * (fscale[k] > 0 ? fscale[k] : 1);
        a[k] = 0.5 * (fmin + fmax);
        for (long i = 0; i < n; ++i) lam[i] = 0, r[i] = fk[i] - a[k];
        memset(r + 4 * n, 0, sizeof(double) * 2 * n); /* ls, fs */
        rmax[k] = rbf_max_abs(n, r), operr[k] = ddprev[k] = rlast[k] = gap[k] = 0;
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
            single = single && rbf_max_abs(n, del) * phimax * n < 1e30;
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
                rmax[k] = rbf_max_abs(n, r), gap[k] = 0;
            }
            if (rmax[k] + 2 * operr[k] > thr[k]) continue;
            checked[k] = 1;
            /* the true residual (the recurrence may have drifted): Phi lambda is Phi (lambda
               before this step) + g Phi del from this pass, or from a pass of its own below */
            if (carry[k] == CARRY_LAMBDA) {
                const double *fk = f + k * n, *pl = out + lslot[k] * n;
                for (long i = 0; i < n; ++i) r[i] = fk[i] - (pl[i] + g * d[i]) - a[k];
                memset(ls, 0, sizeof(double) * 2 * n);
                rmax[k] = rbf_max_abs(n, r), gap[k] = 0;
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
                rmax[k] = rbf_max_abs(n, r), gap[k] = 0;
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
        const double fm = rbf_max_abs(n, f + k * n);
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
