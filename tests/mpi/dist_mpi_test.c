/* The distributed FMM over MPI (include/fmm_dist_mpi.h), run by ctest under mpiexec -n 1..4
 * (tests/CMakeLists.txt). Every rank draws the same random set (a periodic cube, then open) (seed:
 * FMM_TEST_SEED, or one drawn by rank 0 and broadcast; printed), takes its home particles under two
 * splits (slabs in x with rank 0 empty, and a non-spatial random split) and checks its phi and
 * field, and the global energy and virial, against the one-rank fmm_execute of the whole set with
 * the same order and depth: 1e-12 relative (the virial: relative to the magnitude of its terms).
 * Exit status 0 when every rank passes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fmm.h"
#include "fmm_dist_mpi.h"

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
    return (double)(splitmix(s) >> 11) * 0x1p-53;
}

static double rel(double a, double b, double scale) {
    return fabs(a - b) / scale;
}

/* one split: this rank's particles are those with owner[i] == rank; returns the worst error. The
 * plans p (distributed) and *p1 (one rank, made on the first call) serve every split. */
static double check(fmm_dist_plan *p, fmm_plan **p1, int rank, long n, const double *xyz,
                    const double *q, const int *owner, double L, const fmm_opts *o, int *fail) {
    long nh = 0;
    for (long i = 0; i < n; ++i) nh += owner[i] == rank;
    double *x = malloc(sizeof(double) * 3 * (size_t)(nh + 1)),
           *qh = malloc(sizeof(double) * (nh + 1));
    double *phi = malloc(sizeof(double) * (nh + 1)), *f = malloc(sizeof(double) * 3 * (nh + 1));
    long *idx = malloc(sizeof(long) * (nh + 1));
    double *phi1 = malloc(sizeof(double) * n), *f1 = malloc(sizeof(double) * 3 * n);
    if (!x || !qh || !phi || !f || !idx || !phi1 || !f1) {
        *fail = 1;
        return INFINITY;
    }
    for (long i = 0, j = 0; i < n; ++i)
        if (owner[i] == rank) {
            idx[j] = i, qh[j] = q[i];
            for (int d = 0; d < 3; ++d) x[3 * j + d] = xyz[3 * i + d];
            ++j;
        }
    const double box[3] = {L, L, L};
    double U, W[9], U1, W1[9];
    fmm_info info;
    int rc = fmm_dist_setpts(p, nh, x);
    if (!rc) rc = fmm_dist_execute(p, qh, phi, f, &U, W);
    if (!rc) rc = fmm_dist_get_info(p, &info);
    if (rc) {
        fprintf(stderr, "rank %d: %s\n", rank, fmm_strerror(rc));
        *fail = 1;
        return INFINITY;
    }
    fmm_opts o1 = *o;
    o1.order = info.order, o1.depth = info.depth;
    if (!*p1) rc = fmm_makeplan(&o1, o->periodic ? box : NULL, p1);
    if (!rc) rc = fmm_setpts(*p1, n, xyz);
    if (!rc) rc = fmm_execute(*p1, q, phi1, f1, &U1, W1);
    if (rc) {
        fprintf(stderr, "rank %d, one-rank plan: %s\n", rank, fmm_strerror(rc));
        *fail = 1;
        return INFINITY;
    }
    /* the virial against the magnitude of its terms (tests/test_dist.cpp expect_equal says why) */
    double pmax = 0, fmax_ = 0, wmax = 0, err = 0;
    for (long i = 0; i < n; ++i) {
        pmax = fmax(pmax, fabs(phi1[i]));
        for (int d = 0; d < 3; ++d) fmax_ = fmax(fmax_, fabs(f1[3 * i + d]));
        wmax += info.side * fabs(q[i]) * hypot(hypot(f1[3 * i], f1[3 * i + 1]), f1[3 * i + 2]);
    }
    for (int k = 0; k < 9; ++k) wmax = fmax(wmax, fabs(W1[k]));
    for (long j = 0; j < nh; ++j) {
        err = fmax(err, rel(phi[j], phi1[idx[j]], pmax));
        for (int d = 0; d < 3; ++d) err = fmax(err, rel(f[3 * j + d], f1[3 * idx[j] + d], fmax_));
    }
    err = fmax(err, rel(U, U1, fabs(U1)));
    for (int k = 0; k < 9; ++k) err = fmax(err, rel(W[k], W1[k], wmax));
    free(x), free(qh), free(phi), free(f), free(idx), free(phi1), free(f1);
    return err;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned long long seed = 0;
    const char *env = getenv("FMM_TEST_SEED");
    if (rank == 0)
        seed = env && *env ? strtoull(env, NULL, 0)
                           : (unsigned long long)time(NULL) ^ (unsigned long long)clock() << 32;
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (rank == 0)
        printf("ranks %d seed %llu (replay with FMM_TEST_SEED=%llu)\n", size, seed, seed);
    const long n = 2000;
    const double L = 2.0;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    int *owner = malloc(sizeof(int) * n), fail = !xyz || !q || !owner;
    uint64_t s = seed;
    double Q = 0;
    for (long i = 0; !fail && i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = uniform(&s) * L;
        q[i] = 2 * uniform(&s) - 1, Q += q[i];
    }
    for (long i = 0; !fail && i < n; ++i) q[i] -= Q / n; /* neutral, then one net charge */
    if (!fail) q[0] += 1.0;
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1, o.order = 8, o.threads = 1;
    double err = 0;
    const double box[3] = {L, L, L};
    fmm_comm c;
    for (int periodic = 1; periodic >= 0 && !fail; --periodic) { /* a periodic cube, then open */
        fmm_dist_plan *p = NULL;
        fmm_plan *p1 = NULL;
        o.periodic = periodic;
        int rc = fmm_comm_mpi(&comm, &c);
        if (!rc) rc = fmm_dist_makeplan(&o, periodic ? box : NULL, &c, &p);
        if (rc) fprintf(stderr, "rank %d: %s\n", rank, fmm_strerror(rc)), fail = 1;
        if (!fail) {
            /* slabs in x over ranks 1 .. size-1 (rank 0 empty), or all on rank 0 alone */
            for (long i = 0; i < n; ++i)
                owner[i] = size == 1 ? 0 : 1 + (int)fmin(size - 2, xyz[3 * i] / L * (size - 1));
            err = fmax(err, check(p, &p1, rank, n, xyz, q, owner, L, &o, &fail));
            for (long i = 0; i < n; ++i) owner[i] = (int)(splitmix(&s) % (uint64_t)size);
            if (!fail) err = fmax(err, check(p, &p1, rank, n, xyz, q, owner, L, &o, &fail));
        }
        fmm_dist_destroy(p);
        fmm_destroy(p1);
    }
    double worst;
    int anyfail;
    MPI_Allreduce(&err, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&fail, &anyfail, 1, MPI_INT, MPI_MAX, comm);
    const int ok = !anyfail && worst <= 1e-12;
    if (rank == 0) printf("worst relative difference %.3g: %s\n", worst, ok ? "ok" : "FAILED");
    free(xyz), free(q), free(owner);
    MPI_Finalize();
    return ok ? 0 : 1;
}
