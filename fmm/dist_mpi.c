/* The communication of a distributed plan over MPI (include/fmm_dist_mpi.h): the library
 * fmm_mpi, so that libfmm itself does not depend on MPI. */
#include "fmm_dist_mpi.h"

#include <limits.h>
#include <stdlib.h>

static MPI_Comm comm_of(void *ctx) {
    return *(MPI_Comm *)ctx;
}

/* in chunks below 2^31 doubles */
static int mpi_allreduce(void *ctx, double *data, size_t n) {
    for (size_t k = 0; k < n; k += INT_MAX / 2) {
        const size_t m = n - k < INT_MAX / 2 ? n - k : INT_MAX / 2;
        if (MPI_Allreduce(MPI_IN_PLACE, data + k, (int)m, MPI_DOUBLE, MPI_SUM, comm_of(ctx)) !=
            MPI_SUCCESS)
            return 1;
    }
    return 0;
}

static int mpi_allgather(void *ctx, const void *send, size_t nbytes, void *recv) {
    if (nbytes > INT_MAX) return 1;
    return MPI_Allgather(send, (int)nbytes, MPI_BYTE, recv, (int)nbytes, MPI_BYTE, comm_of(ctx)) !=
           MPI_SUCCESS;
}

static int mpi_alltoallv(void *ctx, const void *send, const size_t *scount, const size_t *sdispl,
                         void *recv, const size_t *rcount, const size_t *rdispl) {
    int size;
    if (MPI_Comm_size(comm_of(ctx), &size) != MPI_SUCCESS) return 1;
    int *v = malloc(sizeof(int) * 4 * (size_t)size), bad = !v;
    for (int r = 0; !bad && r < size; ++r) {
        bad = scount[r] > INT_MAX || sdispl[r] > INT_MAX || rcount[r] > INT_MAX ||
              rdispl[r] > INT_MAX;
        if (!bad)
            v[r] = (int)scount[r], v[size + r] = (int)sdispl[r], v[2 * size + r] = (int)rcount[r],
            v[3 * size + r] = (int)rdispl[r];
    }
    /* every rank takes part, so that a rank whose counts do not fit does not leave the others
       waiting; it sends and receives nothing and reports the failure */
    if (bad && v)
        for (int k = 0; k < 4 * size; ++k) v[k] = 0;
    int rc = 1;
    if (v)
        rc = MPI_Alltoallv(send, v, v + size, MPI_BYTE, recv, v + 2 * size, v + 3 * size, MPI_BYTE,
                           comm_of(ctx)) != MPI_SUCCESS;
    free(v);
    return rc || bad;
}

int fmm_comm_mpi(MPI_Comm *comm, fmm_comm *out) {
    if (!comm || !out) return FMM_ERR_ARG;
    int rank, size;
    if (MPI_Comm_rank(*comm, &rank) != MPI_SUCCESS || MPI_Comm_size(*comm, &size) != MPI_SUCCESS)
        return FMM_ERR_COMM;
    *out = (fmm_comm){rank, size, comm, mpi_allreduce, mpi_allgather, mpi_alltoallv};
    return FMM_OK;
}
