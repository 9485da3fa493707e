/*
 * fmm_dist_mpi.h - the communication of a distributed plan (fmm_dist.h) over MPI: the library
 * fmm_mpi (CMake target fmm_mpi, built where CMake finds MPI: option FMM_MPI), beside libfmm,
 * which does not depend on MPI.
 */
#ifndef FMM_DIST_MPI_H
#define FMM_DIST_MPI_H

#include <mpi.h>

#include "fmm_dist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* comm: the ranks of the plan; its address is kept in the fmm_comm, so the variable must
 * outlive every plan that uses it. The collectives are MPI_Allreduce (MPI_SUM; the same bits on
 * every rank as far as the MPI library gives them, which its usual algorithms do), MPI_Allgather
 * and MPI_Alltoallv of bytes (each count and displacement below 2^31: a callback returns nonzero
 * otherwise). FMM_ERR_ARG for a NULL argument, FMM_ERR_COMM where MPI fails. */
int fmm_comm_mpi(MPI_Comm *comm, fmm_comm *out);

#ifdef __cplusplus
}
#endif

#endif /* FMM_DIST_MPI_H */
