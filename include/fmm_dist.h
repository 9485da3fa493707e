/*
 * fmm_dist.h - the Coulomb FMM over several ranks (docs/distributed.md).
 *
 * Each rank holds the particles of its part of the system (its home particles: any split, any
 * counts, none allowed) and gets their phi and field; the energy and the virial are the global
 * ones, on every rank. The result is the one-rank fmm_execute's on the union of the particles
 * with the same order and tree depth (fmm_dist_get_info), up to rounding.
 *
 *     fmm_comm c;                          // the caller's communication: fmm_comm_threads_rank,
 *                                          // fmm_comm_mpi (fmm_dist_mpi.h), or its own callbacks
 *     fmm_dist_plan *p;
 *     int rc = fmm_dist_makeplan(&opts, box, &c, &p);          // a periodic cube, or open
 *     rc = fmm_dist_setpts(p, n_home, xyz_home);               // collective
 *     rc = fmm_dist_execute(p, q_home, phi, field, &U, W);     // collective
 *     fmm_dist_destroy(p);                                     // local
 *
 * For now: on the CPU, periodic cubes and open boundaries, a uniform tree of depth >= 1
 * (opts.depth >= 1, or -1: chosen from the global count and the leaf size; an open set's root is
 * the bounding cube of all ranks' particles), no excluded pairs; other plans give
 * FMM_ERR_UNSUPPORTED (periodic cells other than a cube), FMM_ERR_DEVICE (CUDA) or FMM_ERR_DEPTH
 * (depth 0).
 *
 * Collective calls: every rank of the communicator calls fmm_dist_setpts and fmm_dist_execute
 * the same number of times in the same order, with the same options and box at fmm_dist_makeplan.
 * A failure on one rank is seen by all: that rank returns its reason, the others
 * FMM_ERR_COMM, and the plan stays usable for a new fmm_dist_setpts.
 */
#ifndef FMM_DIST_H
#define FMM_DIST_H

#include <stddef.h>

#include "fmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The communication a distributed plan uses: the caller's, through these callbacks (MPI, GROMACS's
 * thread-MPI, threads of one process). Each returns 0 on success, nonzero on failure; each is
 * collective (every rank calls it, in the same order). ctx is passed back unchanged. Sizes are in
 * doubles (allreduce_sum) or bytes (allgather, alltoallv).
 *   allreduce_sum: data[k] = the sum over ranks of data[k], k < n, the same bits on every rank.
 *   allgather: recv[r * nbytes ..] = rank r's send (nbytes from each rank, the same nbytes).
 *   alltoallv: rank r's send + sdispl[s] (scount[s] bytes) goes to rank s's recv + rdispl[r]
 *     (rcount[r] bytes there); send regions may overlap. */
typedef struct fmm_comm {
    int rank, size;
    void *ctx;
    int (*allreduce_sum)(void *ctx, double *data, size_t n);
    int (*allgather)(void *ctx, const void *send, size_t nbytes, void *recv);
    int (*alltoallv)(void *ctx, const void *send, const size_t *scount, const size_t *sdispl,
                     void *recv, const size_t *rcount, const size_t *rdispl);
} fmm_comm;

typedef struct fmm_dist_plan fmm_dist_plan;

/* opts and box as fmm_makeplan's; comm is copied (its ctx must outlive the plan). Local: no
 * communication. */
int fmm_dist_makeplan(const fmm_opts *opts, const double *box, const fmm_comm *comm,
                      fmm_dist_plan **plan);

/* This rank's n_home >= 0 home particles (xyz interleaved, copied; NULL allowed for 0). Builds
 * the tree of the global set and exchanges the halo (the particles of other ranks in the leaves
 * next to this rank's, across the periodic faces too). Collective. At least one rank must have
 * particles (FMM_ERR_NPTS on every rank otherwise). Open boundaries: box, where given, as
 * fmm_makeplan's (FMM_ERR_OUTSIDE for a particle outside it). */
int fmm_dist_setpts(fmm_dist_plan *plan, long n_home, const double *xyz);

/* q_home: the n_home charges (NULL only for n_home = 0; q = NULL does not reuse charges here).
 * phi (n_home), field (3 n_home), energy and virial (9, row-major) as fmm_execute's, each may be
 * NULL; energy and virial are global, the same on every rank. The ranks ask for the virial all or
 * none (FMM_ERR_ARG on every rank otherwise). A charge that is not finite on one rank gives
 * FMM_ERR_NONFINITE on every rank. Collective. */
int fmm_dist_execute(fmm_dist_plan *plan, const double *q_home, double *phi, double *field,
                     double *energy, double *virial);

/* fmm_get_info of the global tree (after fmm_dist_setpts; nboxes and nleaves of the global set). */
int fmm_dist_get_info(const fmm_dist_plan *plan, fmm_info *info);

void fmm_dist_destroy(fmm_dist_plan *plan);

/* Ranks as threads of one process: fmm_comm_threads_create(size, &g) once, then thread r
 * (0 <= r < size) takes its comm from fmm_comm_threads_rank(g, r, &c) and uses it from that
 * thread only; g is destroyed after every thread is done with it. Each rank's plan runs its own
 * OpenMP threads (opts.threads; 0, the OpenMP default, on every rank oversubscribes the cores). */
typedef struct fmm_comm_threads fmm_comm_threads;
int fmm_comm_threads_create(int size, fmm_comm_threads **group);
int fmm_comm_threads_rank(fmm_comm_threads *group, int rank, fmm_comm *comm);
void fmm_comm_threads_destroy(fmm_comm_threads *group);

#ifdef __cplusplus
}
#endif

#endif /* FMM_DIST_H */
