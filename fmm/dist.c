/* The distributed Coulomb FMM (include/fmm_dist.h, docs/distributed.md): each rank builds the
 * global tree's geometry over its home particles, its halo and stand-ins (fmm/dist_setpts.c), and
 * runs the passes of fmm/passes.c over its home boxes; the multipoles, the charge moments, the
 * energy and the virial are summed over ranks through the caller's fmm_comm. This file: the plan,
 * the evaluation, and the collectives inside it. */
#include "fmm_dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "fmm/dist_internal.h"
#include "pbc/lattice.h"

/* ------------------------------------------------------------------ plan */

int fmm_dist_makeplan(const fmm_opts *opts, const double *box, const fmm_comm *comm,
                      fmm_dist_plan **plan) {
    if (!opts || !plan || !comm) return FMM_ERR_ARG;
    *plan = NULL;
    if (comm->size < 1 || comm->rank < 0 || comm->rank >= comm->size || !comm->allreduce_sum ||
        !comm->allgather || !comm->alltoallv)
        return FMM_ERR_ARG;
    if (opts->device == FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
    if (opts->depth == 0) return FMM_ERR_DEPTH;
    fmm_dist_plan *D = calloc(1, sizeof *D);
    if (!D) return FMM_ERR_NOMEM;
    int rc = fmm_makeplan(opts, box, &D->P);
    if (rc == FMM_OK && D->P->is_cell) rc = FMM_ERR_UNSUPPORTED; /* a cube only, for now */
    if (rc) {
        fmm_destroy(D->P);
        free(D);
        return rc;
    }
    D->comm = *comm;
    D->R.plan = D;
    *plan = D;
    return FMM_OK;
}

void fmm_dist_destroy(fmm_dist_plan *D) {
    if (!D) return;
    fmm_dist_free_points(D);
    fmm_destroy(D->P);
    free(D);
}

int fmm_dist_get_info(const fmm_dist_plan *D, fmm_info *info) {
    if (!D || !info) return FMM_ERR_ARG;
    return fmm_get_info(D->P, info);
}

/* ------------------------------------------------------------------ execute */

int fmm_dist_execute(fmm_dist_plan *D, const double *q, double *phi, double *field, double *energy,
                     double *virial) {
    if (!D) return FMM_ERR_ARG;
    fmm_plan *P = D->P;
    if (!P->dist) return FMM_ERR_NOPTS;
    const fmm_comm *C = &D->comm;
    const int size = C->size;
    const long nhome = D->R.nhome;
    int rc = nhome > 0 && !q ? FMM_ERR_ARG : FMM_OK;
    /* every rank's largest |q|, a charge that is not finite, what it asks for */
    double sum[2], qmax = 0.0, mine[4], *all = malloc(sizeof(double) * 4 * (size_t)size);
    int bad = 0;
    if (!rc && nhome > 0) rc = fmm_charge_sums(nhome, q, 0, 0, P->opts.threads, sum, &qmax, &bad);
    if (!all && !rc) rc = FMM_ERR_NOMEM;
    rc = agree(D, rc);
    mine[0] = qmax, mine[1] = bad, mine[2] = virial != NULL, mine[3] = 0;
    if (!rc) rc = comm_rc(C->allgather(C->ctx, mine, sizeof mine, all));
    if (!rc) {
        double vir = 0;
        for (int r = 0; r < size; ++r) {
            qmax = fmax(qmax, all[4 * r]), bad |= all[4 * r + 1] != 0;
            vir += all[4 * r + 2];
        }
        if (bad)
            rc = FMM_ERR_NONFINITE;
        else if (vir != 0 && vir != size)
            rc = FMM_ERR_ARG; /* the virial on some ranks only */
    }
    free(all);
    if (rc) return rc;
    /* the halo's charges, and the net charge in the charges' units */
    const int qexp = fmm_scale_exponent(qmax);
    const size_t *hc = D->cnt;
    double *sbuf = malloc(sizeof(double) * (size_t)(hc[size - 1] + hc[2 * size - 1] + 1));
    size_t *bc = malloc(sizeof(size_t) * 4 * (size_t)size);
    rc = agree(D, !sbuf || !bc ? FMM_ERR_NOMEM : FMM_OK);
    if (!rc) {
        for (int k = 0; k < 4 * size; ++k) bc[k] = sizeof(double) * hc[k];
        for (size_t i = 0; i < hc[size - 1] + hc[2 * size - 1]; ++i) sbuf[i] = q[D->send[i]];
        if (nhome) memcpy(D->qloc, q, sizeof(double) * (size_t)nhome);
        rc = comm_rc(C->alltoallv(C->ctx, sbuf, bc, bc + size, D->qloc + nhome, bc + 2 * size,
                                  bc + 3 * size));
    }
    free(sbuf), free(bc);
    if (rc) return rc;
    double qs[3] = {0, 0, 0};
    if (nhome > 0) rc = fmm_charge_sums(nhome, q, 0, qexp, P->opts.threads, qs, &qmax, &bad);
    rc = allreduce_rc(D, qs, 2, rc);
    if (rc) return rc;
    return fmm_execute_checked(P, D->qloc, PBC_CHARGED(qs[0], qs[1]), qexp, phi, field, energy,
                               virial);
}

/* ------------------------------------------------------------------ inside the evaluation */

int fmm_dist_sum_level(fmm_plan *P, int level, int rc) {
    const fmm_dist_plan *D = P->dist->plan;
    const int *ls = P->tree.level_start;
    rc = agree(D, rc);
    if (rc) return rc;
    /* a box's multipole is nonzero on its owner only: the sum adds zeros to it, exactly */
    return comm_rc(D->comm.allreduce_sum(D->comm.ctx, P->W + (size_t)ls[level] * P->npad,
                                         (size_t)(ls[level + 1] - ls[level]) * P->npad));
}

int fmm_dist_corrections(fmm_plan *P, int rc) {
    if (!P->opts.periodic) return rc; /* open boundaries have none */
    fmm_dist_plan *D = P->dist->plan;
    double m[7] = {0, 0, 0, 0, 0, 0, 0}; /* the moments of fmm/periodic.c, summed over ranks */
    if (!rc) fmm_charge_moments(P, P->dist->qh, m);
    rc = allreduce_rc(D, m, 6, rc);
    if (rc) return rc;
    memcpy(D->mom, m, sizeof D->mom);
    fmm_periodic_apply(P, m);
    return FMM_OK;
}

int fmm_dist_outputs(fmm_plan *P, int rc, double ehome, double *energy, double *virial) {
    fmm_dist_plan *D = P->dist->plan;
    const octree *t = &P->tree;
    /* the energy; periodic: sum F (x) (x - g) - vpair over the home charges and the far pairs of
       the owned boxes (fmm/periodic.c fmm_virial_sum), and the image forces; open: the home
       particles' part of the virial (fmm/execute.c) */
    double s[92] = {0};
    s[0] = ehome;
    if (!rc && virial && !P->opts.periodic) memcpy(s + 1, virial, 9 * sizeof(double));
    if (!rc && virial && P->opts.periodic) fmm_virial_sum(P, P->dist->qh, s + 1);
    if (virial) memcpy(s + 10, P->fshift, sizeof P->fshift);
    rc = allreduce_rc(D, s, 91, rc);
    if (rc) return rc;
    if (energy) *energy = s[0];
    if (virial && !P->opts.periodic) memcpy(virial, s + 1, 9 * sizeof(double));
    if (virial && P->opts.periodic)
        fmm_periodic_virial(P->p, t->side, P->opts.boundary == FMM_BOUNDARY_TINFOIL, P->W, P->vtab,
                            P->far_c0, s + 1, s + 10, D->mom + 2, D->mom[5], virial);
    return FMM_OK;
}
