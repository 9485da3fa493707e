/* fmm/dist_internal.h - the state of a distributed plan (include/fmm_dist.h) that its two files
 * share: fmm/dist_setpts.c builds a rank's points, halo and boxes, fmm/dist.c holds the plan, the
 * evaluation and the collectives inside it. The collectives join every rank's status with the sum,
 * so that a failure on one rank ends the call on all of them. */
#ifndef FMM_FMM_DIST_INTERNAL_H
#define FMM_FMM_DIST_INTERNAL_H

#include "fmm_dist.h"

#include "fmm/fmm_internal.h"

struct fmm_dist_plan {
    fmm_comm comm;
    fmm_plan *P; /* this rank's plan: home particles, halo, stand-ins */
    fmm_dist_rank R;
    long nloc, nhalo;
    size_t *cnt;   /* [4 size]: halo particles sent to, and received from, each rank, and where */
    long *send;    /* [sum of the sent counts]: the home indices sent, rank by rank */
    double *qloc;  /* [nloc] charges in the plan's order: home, halo, stand-ins (0) */
    double ext[6]; /* the particles' extent in the plan's units: minima, minima of the negatives */
    double corner[6]; /* open boundaries: the corners of the set's bounding box (caller's units) */
    double mom[6];    /* the last evaluation's global Q, sum |q|, dipole, second moment */
    long nglobal;
};

/* ------------------------------------------------------------------ collectives */

static inline int comm_rc(int cb) {
    return cb ? FMM_ERR_COMM : FMM_OK;
}

/* Sums buf[0..n-1] over ranks together with the ranks' statuses: rc, or FMM_ERR_COMM where
 * this rank is fine and another is not. buf has n + 1 entries (the last is the flag). */
static inline int allreduce_rc(const fmm_dist_plan *D, double *buf, size_t n, int rc) {
    buf[n] = rc ? 1.0 : 0.0;
    int c = D->comm.allreduce_sum(D->comm.ctx, buf, n + 1);
    if (c) return rc ? rc : FMM_ERR_COMM;
    return rc ? rc : buf[n] > 0 ? FMM_ERR_COMM : FMM_OK;
}

static inline int agree(const fmm_dist_plan *D, int rc) {
    double f[1];
    return allreduce_rc(D, f, 0, rc);
}

/* frees what fmm_dist_setpts made (fmm/dist_setpts.c) and detaches the rank from its plan */
void fmm_dist_free_points(fmm_dist_plan *D);

#endif
