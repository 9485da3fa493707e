/* bench/dist_cpu.c - strong scaling of the distributed FMM (include/fmm_dist.h) over thread ranks
 * on the CPU: N random charges at water density (100.2 atoms per nm^3, neutral) in a periodic
 * cube, split into slabs in x over K = 1 .. KMAX ranks of one OpenMP thread each; per K the wall
 * time of fmm_dist_setpts and the median and minimum of REPS fmm_dist_execute calls (energy and
 * field, no virial), and the speed-up and efficiency of the execute median against K = 1. The
 * plans are made before the clock starts (their tables do not depend on the points).
 *
 *   gcc -O2 -fopenmp -Iinclude bench/dist_cpu.c -o dist_cpu build/libfmm.a -lm -lpthread
 *   ./dist_cpu N TOL KMAX [REPS]
 */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmm.h"
#include "fmm_dist.h"

typedef struct job {
    fmm_comm_threads *g;
    int rank, k, reps, rc;
    long n;
    const double *xyz, *q;
    double L, tol, t_set, *t_exec;
    fmm_info info;
} job;

static void *rank_main(void *arg) {
    job *J = arg;
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1, o.tolerance = J->tol, o.threads = 1;
    const double box[3] = {J->L, J->L, J->L};
    long nh = 0;
    double *x = malloc(sizeof(double) * 3 * (size_t)J->n), *q = malloc(sizeof(double) * J->n);
    double *phi = malloc(sizeof(double) * J->n), *f = malloc(sizeof(double) * 3 * J->n), U;
    for (long i = 0; x && q && i < J->n; ++i)
        if ((int)fmin(J->k - 1, J->xyz[3 * i] / J->L * J->k) == J->rank) {
            for (int d = 0; d < 3; ++d) x[3 * nh + d] = J->xyz[3 * i + d];
            q[nh++] = J->q[i];
        }
    fmm_comm c;
    fmm_dist_plan *p = NULL;
    int rc = !x || !q || !phi || !f ? FMM_ERR_NOMEM : fmm_comm_threads_rank(J->g, J->rank, &c);
    if (!rc) rc = fmm_dist_makeplan(&o, box, &c, &p);
    double t0 = omp_get_wtime();
    if (!rc) rc = fmm_dist_setpts(p, nh, x);
    J->t_set = omp_get_wtime() - t0;
    for (int r = 0; !rc && r < J->reps; ++r) {
        t0 = omp_get_wtime();
        rc = fmm_dist_execute(p, q, phi, f, &U, NULL);
        J->t_exec[r] = omp_get_wtime() - t0;
    }
    if (!rc) rc = fmm_dist_get_info(p, &J->info);
    fmm_dist_destroy(p);
    free(x), free(q), free(phi), free(f);
    J->rc = rc;
    return NULL;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s N TOL KMAX [REPS]\n", argv[0]);
        return 2;
    }
    const long n = atol(argv[1]);
    const double tol = atof(argv[2]), L = cbrt(n / 100.2);
    const int kmax = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 5;
    double *xyz = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * n);
    if (n < 1 || kmax < 1 || reps < 1 || !xyz || !q) return 2;
    srand(1);
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = L * rand() / ((double)RAND_MAX + 1);
        q[i] = i % 3 == 0 ? -0.8476 : 0.4238; /* SPC/E-like, neutral per triple */
    }
    printf("# n %ld L %.4f nm tol %g, slabs in x, 1 thread per rank, %d executes\n", n, L, tol,
           reps);
    printf("# ranks order depth setpts_s execute_median_s execute_min_s speedup efficiency\n");
    double base = 0;
    for (int k = 1; k <= kmax; ++k) {
        fmm_comm_threads *g;
        job *J = calloc((size_t)k, sizeof(job));
        pthread_t *th = malloc(sizeof(pthread_t) * (size_t)k);
        if (!J || !th || fmm_comm_threads_create(k, &g)) return 1;
        for (int r = 0; r < k; ++r) {
            J[r] =
                (job){g, r, k, reps, 0, n, xyz, q, L, tol, 0, malloc(sizeof(double) * reps), {0}};
            pthread_create(&th[r], NULL, rank_main, &J[r]);
        }
        for (int r = 0; r < k; ++r) pthread_join(th[r], NULL);
        fmm_comm_threads_destroy(g);
        /* the slowest rank's time per call */
        double *te = malloc(sizeof(double) * reps), ts = 0;
        for (int i = 0; i < reps; ++i) {
            te[i] = 0;
            for (int r = 0; r < k; ++r) te[i] = fmax(te[i], J[r].t_exec[i]);
        }
        for (int r = 0; r < k; ++r) {
            ts = fmax(ts, J[r].t_set);
            if (J[r].rc) printf("# rank %d: %s\n", r, fmm_strerror(J[r].rc));
        }
        qsort(te, (size_t)reps, sizeof *te, cmp);
        const double med = te[reps / 2];
        if (k == 1) base = med;
        printf("%d %d %d %.4f %.4f %.4f %.2f %.2f\n", k, J[0].info.order, J[0].info.depth, ts, med,
               te[0], base / med, base / med / k);
        for (int r = 0; r < k; ++r) free(J[r].t_exec);
        free(te), free(J), free(th);
    }
    free(xyz), free(q);
    return 0;
}
