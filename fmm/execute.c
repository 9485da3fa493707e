/* The Coulomb FMM's evaluation (fmm/fmm_internal.h): the charges checked and scaled, the passes in
 * order on the CPU or the device, the outputs in the caller's units. */
#include "fmm/fmm_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/reduce.h"
#include "core/scale.h"
#include "pbc/cell_table.h"
#include "pbc/lattice.h"

int fmm_charge_sums(long n, const void *q, int f32, int e, int threads, double sum[2], double *qmax,
                    int *bad) {
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    double *slots = calloc(2 * (size_t)nt, sizeof(double)), m = 0.0;
    if (!slots) return FMM_ERR_NOMEM;
    const double f = ldexp(1.0, -e);
    int b = 0;
#pragma omp parallel num_threads(nt) if (n > 50000) reduction(max : m) reduction(| : b)
    {
        double *s = slots + 2 * omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i) {
            const double v = f32 ? ((const float *)q)[i] : ((const double *)q)[i];
            b |= !isfinite(v);
            m = fabs(v) > m ? fabs(v) : m;
            const double w = e ? fmm_pow2(v, f, -e) : v;
            s[0] += w, s[1] += fabs(w);
        }
    }
    fmm_sum_slots(slots, nt, 2, sum);
    free(slots);
    *qmax = m, *bad = b;
    return FMM_OK;
}

/* Checks the charges q (double, or float with f32): FMM_ERR_NONFINITE, or FMM_OK with
 * *charged (a net charge, PBC_CHARGED) and *qexp (their scale exponent, core/scale.h). */
static int charge_check(long n, const void *q, int f32, int threads, int *charged, int *qexp) {
    double sum[2], qmax;
    int bad, rc = fmm_charge_sums(n, q, f32, 0, threads, sum, &qmax, &bad);
    if (rc) return rc;
    if (bad) return FMM_ERR_NONFINITE;
    *qexp = fmm_scale_exponent(qmax);
    /* sums of extreme charges are taken again in their units, where they cannot overflow */
    if (*qexp && (rc = fmm_charge_sums(n, q, f32, *qexp, threads, sum, &qmax, &bad))) return rc;
    *charged = PBC_CHARGED(sum[0], sum[1]);
    return FMM_OK;
}

static long plan_points(const fmm_plan *P) {
    return P->gpu ? P->gpu_n : P->tree.n;
}

/* The outputs from the plan's units to the caller's (core/scale.h) and their range check:
 * phi x 2^ephi, field x 2^(ephi - lexp), energy and virial x 2^(ephi + qexp); each may be NULL,
 * phi and field in double or (f32) float. */
static int finish_outputs(const fmm_plan *P, long n, void *phi, void *field, int f32,
                          double *energy, double *virial, int qexp) {
    const int ephi = qexp - P->lexp, th = P->opts.threads;
    int rc = FMM_OK, r;
    if (phi && (r = fmm_scale_output(n, phi, f32, phi, f32, ephi, th))) rc = r;
    if (field && (r = fmm_scale_output(3 * n, field, f32, field, f32, ephi - P->lexp, th))) rc = r;
    if (energy && (r = fmm_scale_output(1, energy, 0, energy, 0, ephi + qexp, th))) rc = r;
    if (virial && (r = fmm_scale_output(9, virial, 0, virial, 0, ephi + qexp, th))) rc = r;
    return rc;
}

#ifdef FMM_HAVE_CUDA
/* One evaluation on the device (execute's arguments). Charges of an extreme scale go as a scaled
 * copy in their own precision (exact: powers of two), so the device works in the plan's units. */
static int gpu_execute(fmm_plan *P, const void *q, void *phi, void *field, int f32, double *energy,
                       double *virial, float *d_force, double scale, void *stream, int charged,
                       int qexp) {
    const long n = P->gpu_n;
    void *qs = NULL;
    if (q && qexp) {
        qs = malloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)n);
        if (!qs) return FMM_ERR_NOMEM;
        const double f = ldexp(1.0, -qexp);
        for (long i = 0; i < n; ++i)
            if (f32)
                ((float *)qs)[i] = (float)fmm_pow2(((const float *)q)[i], f, -qexp);
            else
                ((double *)qs)[i] = fmm_pow2(((const double *)q)[i], f, -qexp);
    }
    /* the forces q_i E_i come out of the device in the caller's units through their scale */
    const double fscale = ldexp(scale, 2 * (qexp - P->lexp));
    if (d_force && !(isfinite(fscale) && (fscale != 0 || scale == 0))) {
        free(qs);
        return FMM_ERR_RANGE;
    }
    int rc;
    int compact = -1;
    fmm_gpu_exec e = {qs ? qs : q, phi,     field,  f32,    energy,  virial,
                      NULL,        d_force, fscale, stream, &compact};
    if (!P->virial) {
        rc = fmm_gpu_execute(P->gpu, &e);
    } else {
        fmm_gpu_virial_parts vp;
        vp.wroot = malloc(sizeof(double) * P->ncoef);
        if (!vp.wroot) {
            free(qs);
            return FMM_ERR_NOMEM;
        }
        e.virial = NULL, e.parts = &vp;
        rc = fmm_gpu_execute(P->gpu, &e);
        if (rc == FMM_OK && vp.compact &&
            pbc_near_image_forces(P->p, P->gpu_side, vp.wroot, vp.fshift))
            rc = FMM_ERR_NOMEM;
        if (rc == FMM_OK) {
            fmm_periodic_virial(P->p, P->gpu_side, P->opts.boundary == FMM_BOUNDARY_TINFOIL,
                                vp.wroot, P->vtab, P->far_c0, vp.fy, vp.fshift, vp.dip, vp.s2,
                                virial);
            for (int k = 0; k < 9; ++k) virial[k] -= vp.xvir[k];
        }
        free(vp.wroot);
    }
    free(qs);
    if (rc == FMM_OK && q) P->q_n = n, P->q_charged = charged, P->q_exp = qexp;
    if (compact >= 0) P->compact_hint = compact;
    /* outputs on the host in the plan's units only where an exponent is not 0 (the device
       reports a sum that is not finite itself) */
    if (rc == FMM_OK && (qexp || P->lexp))
        rc = finish_outputs(P, n, phi, field, f32, energy, virial, qexp);
    return rc;
}
#endif

/* q, phi, field in double or (f32, CUDA plans only) in single precision; d_force (CUDA plans only,
   phi and field NULL): the forces scale q_i E_i on the device, ordered against `stream` */

/* The evaluation after the charges' check (execute's arguments, with the charges' net charge and
 * scale exponent). A distributed rank (P->dist) writes the outputs of its home particles and
 * joins the collectives of fmm/dist.c whatever its status, so that no other rank waits on it. */
static int evaluate(fmm_plan *P, const void *q, int charged, int qexp, void *phi, void *field,
                    int f32, double *energy, double *virial, float *d_force, double scale,
                    void *stream) {
    const octree *t = &P->tree;
    const long n = plan_points(P), nout = P->dist ? P->dist->nhome : n;
    /* vacuum (dipole) boundary diverges for a charged cell */
    if (P->opts.periodic && P->opts.boundary == FMM_BOUNDARY_VACUUM && charged)
        return FMM_ERR_BOUNDARY;
    P->virial = virial && P->opts.periodic;
    int rc = FMM_OK;
    if (P->virial && !P->vtab) {
        int n2 = harm_ncoef(2 * P->p);
        rc = FMM_ERR_NOMEM;
        P->vtab = malloc(sizeof(double) * 18 * (size_t)n2);
        if (P->vtab && P->is_cell) { /* the cell's table again, with its strain derivatives */
            double *a = malloc(sizeof(double) * 2 * (size_t)n2);
            pbc_cell cu;
            rc = !a ? FMM_ERR_NOMEM
                 : fmm_unit_cell(P, &cu)
                     ? FMM_ERR_BOX
                     : pbc_cell_far_table(&cu, P->img_n, P->nimg, 2 * P->p, a, a + n2, P->vtab,
                                          P->vtab + 9 * (size_t)n2);
            free(a);
        } else if (P->vtab) {
            rc = pbc_virial_tables(2 * P->p, P->vtab, P->vtab + 9 * (size_t)n2) ? FMM_ERR_NOMEM
                                                                                : FMM_OK;
            P->far_c0 = pbc_far_self_potential();
        }
        if (rc) {
            free(P->vtab);
            P->vtab = NULL;
            if (!P->dist) return rc;
        }
    }
#ifdef FMM_HAVE_CUDA
    if (P->gpu)
        return gpu_execute(P, q, phi, field, f32, energy, virial, d_force, scale, stream, charged,
                           qexp);
#else
    (void)f32, (void)d_force, (void)scale, (void)stream; /* CUDA plans only */
#endif
    if (q && P->q_n < n) { /* room to keep these charges for a later q = NULL */
        double *k = realloc(P->qkeep, sizeof(double) * (size_t)n);
        if (k)
            P->qkeep = k;
        else if (!rc)
            rc = FMM_ERR_NOMEM;
    }
    int *iperm = NULL; /* caller index -> tree position, for the exclusions */
    const int nt = P->opts.threads > 0 ? P->opts.threads : omp_get_max_threads();
    double *uslot = calloc((size_t)nt, sizeof(double)); /* the energy, per thread (core/reduce.h) */
    if (!uslot || (P->excl.npairs > 0 && !(iperm = malloc(sizeof(int) * (size_t)n))))
        rc = FMM_ERR_NOMEM;
    if (rc && !P->dist) {
        free(uslot), free(iperm);
        return rc;
    }
    const double *qc = q ? q : P->qkeep;
    double *phid = phi, *fieldd = field;
    memset(P->fshift, 0, sizeof P->fshift);
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    const double fq = ldexp(1.0, -qexp);
    double *qh = P->dist ? P->dist->qh : NULL;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        P->q[i] = qexp ? fmm_pow2(qc[t->perm[i]], fq, -qexp) : qc[t->perm[i]];
        if (iperm) iperm[t->perm[i]] = (int)i;
        if (qh) qh[i] = t->perm[i] < nout ? P->q[i] : 0.0;
    }
    if (P->is_cell && P->virial) memset(P->fimg, 0, sizeof(double) * 3 * (size_t)P->nimg);
    /* the far pairs' terms of the virial about its origin (a distributed rank's periodic origin
       is that of all ranks' particles, set with its points) */
    P->vpairs = virial != NULL;
    memset(P->vpair, 0, sizeof P->vpair);
    if (virial && !(P->dist && P->opts.periodic)) fmm_virial_point(P, P->vorg);
    if (rc == FMM_OK || P->dist) rc = fmm_upward(P, rc);
    if (rc == FMM_OK) rc = fmm_interactions(P);
    if (rc == FMM_OK && P->is_cell) {
        /* the far images (one M2L at the root, charge included) and the near ones */
        fmm_matvec_add(P->ncoef, P->lattice, P->W, P->U);
        rc = img_to_local(&P->img, &P->ops, t, P->q, P->W, P->U, P->virial ? P->fimg : NULL);
    }
    if (rc == FMM_OK) rc = fmm_downward(P);
    if (rc == FMM_OK) rc = fmm_leaves(P);
    if (rc == FMM_OK && P->is_cell)
        rc = img_to_particles(&P->img, P->p, P->npad, t, P->q, P->W, P->phi, P->ex, P->ey, P->ez,
                              P->virial ? P->fimg : NULL);
    if (P->dist) {
        rc = fmm_dist_corrections(P, rc);
    } else if (rc == FMM_OK) {
        if (t->periodic) fmm_periodic_corrections(P);
        if (P->is_cell) fmm_cell_corrections(P);
    }
    double ehome = 0.0; /* the energy of the particles whose outputs this plan writes */
    if (rc == FMM_OK) {
        const double *qo = fmm_home_charges(P);
#pragma omp parallel num_threads(nt)
        {
            double *u = uslot + omp_get_thread_num();
#pragma omp for schedule(static)
            for (long i = 0; i < n; ++i) {
                long j = t->perm[i];
                if (j >= nout) continue; /* a distributed rank's halo or stand-in */
                if (phid) phid[j] = P->phi[i];
                if (fieldd)
                    fieldd[3 * j] = P->ex[i], fieldd[3 * j + 1] = P->ey[i],
                               fieldd[3 * j + 2] = P->ez[i];
                *u += 0.5 * qo[i] * P->phi[i];
            }
        }
        fmm_sum_slots(uslot, nt, 1, &ehome);
        if (energy) *energy = ehome;
        if (virial && P->opts.periodic) {
            if (!P->dist) rc = fmm_periodic_virial_cpu(P, virial); /* a rank's: below */
        } else if (virial) {
            /* open boundary: W_ab = sum_i q_i E_i,a (x_i - c)_b - vpair, symmetrised, c the centre
               of the particles' bounding cube (a distributed rank: its home particles' part) */
            double Wv[9];
            fmm_virial_sum(P, qo, Wv);
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b)
                    virial[3 * a + b] = 0.5 * (Wv[3 * a + b] + Wv[3 * b + a]);
        }
    }
    if (P->dist) rc = fmm_dist_outputs(P, rc, ehome, energy, virial);
    if (rc == FMM_OK) {
        rc = excl_apply(&P->excl, t->x, t->y, t->z, P->q, iperm, t->periodic ? t->side : 0.0,
                        P->is_cell ? &P->mi : NULL, P->opts.threads, phid, fieldd, energy, virial);
    }
    if (rc == FMM_OK) {
        if (q) {
            memcpy(P->qkeep, q, sizeof(double) * (size_t)n);
            P->q_n = n, P->q_charged = charged, P->q_exp = qexp;
        }
        rc = finish_outputs(P, nout, phid, fieldd, 0, energy, virial, qexp);
    }
    free(iperm), free(uslot);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    return rc;
}

static int execute(fmm_plan *P, const void *q, void *phi, void *field, int f32, double *energy,
                   double *virial, float *d_force, double scale, void *stream) {
    if (!P) return FMM_ERR_ARG;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    const long n = plan_points(P);
    if (!q && !P->q_n) return FMM_ERR_ARG;
    if (P->excl.natoms > n) return FMM_ERR_NPTS;
    int charged = P->q_charged, qexp = P->q_exp;
    if (q) {
        int rc = charge_check(n, q, f32, P->opts.threads, &charged, &qexp);
        if (rc) return rc;
    }
    return evaluate(P, q, charged, qexp, phi, field, f32, energy, virial, d_force, scale, stream);
}

int fmm_execute_checked(fmm_plan *P, const double *q, int charged, int qexp, double *phi,
                        double *field, double *energy, double *virial) {
    return evaluate(P, q, charged, qexp, phi, field, 0, energy, virial, NULL, 0.0, NULL);
}

int fmm_execute(fmm_plan *P, const double *q, double *phi, double *field, double *energy,
                double *virial) {
    return execute(P, q, phi, field, 0, energy, virial, NULL, 0.0, NULL);
}

int fmm_executef(fmm_plan *P, const float *q, float *phi, float *field, double *energy,
                 double *virial) {
    if (!P || !P->have_pts || P->gpu)
        return execute(P, q, phi, field, 1, energy, virial, NULL, 0.0, NULL);
    /* CPU plans: the double evaluation on widened copies */
    const long n = plan_points(P);
    double *qd = q ? malloc(sizeof(double) * (size_t)n) : NULL;
    double *pd = phi ? malloc(sizeof(double) * (size_t)n) : NULL;
    double *fd = field ? malloc(sizeof(double) * 3 * (size_t)n) : NULL;
    int rc = (q && !qd) || (phi && !pd) || (field && !fd) ? FMM_ERR_NOMEM : FMM_OK;
    if (!rc) {
        for (long i = 0; qd && i < n; ++i) qd[i] = q[i];
        rc = execute(P, qd, pd, fd, 0, energy, virial, NULL, 0.0, NULL);
    }
    /* rounded to float, where a value may leave float's range */
    const int th = P->opts.threads;
    if (!rc && pd) rc = fmm_scale_output(n, pd, 0, phi, 1, 0, th);
    if (!rc && fd) rc = fmm_scale_output(3 * n, fd, 0, field, 1, 0, th);
    free(qd), free(pd), free(fd);
    return rc;
}

int fmm_cuda_forcesf(fmm_plan *P, const float *q, float *d_force, double scale, double *energy,
                     double *virial, void *stream) {
    if (!P || !d_force) return FMM_ERR_ARG;
    if (!P->gpu) return FMM_ERR_DEVICE;
    return execute(P, q, NULL, NULL, 1, energy, virial, d_force, scale, stream);
}

int fmm_cuda_time_replays(fmm_plan *P, int reps, double *ms) {
    if (!P || !ms || reps < 1) return FMM_ERR_ARG;
#ifdef FMM_HAVE_CUDA
    if (!P->gpu) return FMM_ERR_DEVICE;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    return fmm_gpu_time(P->gpu, reps, ms);
#else
    return FMM_ERR_DEVICE;
#endif
}

int fmm_cuda_stage_times(fmm_plan *P, int reps, double *ms) {
    if (!P || !ms || reps < 1) return FMM_ERR_ARG;
#ifdef FMM_HAVE_CUDA
    if (!P->gpu) return FMM_ERR_DEVICE;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    return fmm_gpu_stage_times(P->gpu, reps, ms);
#else
    return FMM_ERR_DEVICE;
#endif
}
