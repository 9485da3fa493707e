#include "fmm/exclusions.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "fmm.h"

static int cmp_int(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int excl_build(long npairs, const int *pairs, excl_list *x) {
    if (npairs < 0 || (npairs > 0 && !pairs) || npairs > 1073741823L) return FMM_ERR_ARG;
    long natoms = 0;
    for (long k = 0; k < 2 * npairs; ++k) {
        if (pairs[k] < 0) return FMM_ERR_ARG;
        if (pairs[k] >= natoms) natoms = pairs[k] + 1L;
    }
    for (long k = 0; k < npairs; ++k)
        if (pairs[2 * k] == pairs[2 * k + 1]) return FMM_ERR_ARG;
    excl_list e = {natoms, npairs, NULL, NULL};
    if (npairs > 0) {
        e.start = calloc((size_t)natoms + 1, sizeof(int));
        e.partner = malloc(sizeof(int) * 2 * (size_t)npairs);
        int *fill = malloc(sizeof(int) * (size_t)natoms);
        if (!e.start || !e.partner || !fill) {
            free(fill), excl_free(&e);
            return FMM_ERR_NOMEM;
        }
        for (long k = 0; k < 2 * npairs; ++k) e.start[pairs[k] + 1]++;
        for (long i = 0; i < natoms; ++i) e.start[i + 1] += e.start[i];
        memcpy(fill, e.start, sizeof(int) * (size_t)natoms);
        for (long k = 0; k < npairs; ++k) {
            const int i = pairs[2 * k], j = pairs[2 * k + 1];
            e.partner[fill[i]++] = j;
            e.partner[fill[j]++] = i;
        }
        free(fill);
        /* a pair listed twice (in either orientation) repeats a partner of both atoms */
        for (long i = 0; i < natoms; ++i) {
            int *p = e.partner + e.start[i];
            const int m = e.start[i + 1] - e.start[i];
            qsort(p, (size_t)m, sizeof(int), cmp_int);
            for (int k = 1; k < m; ++k)
                if (p[k] == p[k - 1]) {
                    excl_free(&e);
                    return FMM_ERR_ARG;
                }
        }
    }
    excl_free(x);
    *x = e;
    return FMM_OK;
}

void excl_free(excl_list *x) {
    free(x->start), free(x->partner);
    x->start = x->partner = NULL;
    x->natoms = x->npairs = 0;
}

int excl_apply(const excl_list *x, const double *X, const double *Y, const double *Z,
               const double *q, const int *at, double L, const pbc_min_image *mi, int threads,
               double *phi, double *field, double *energy, double *virial) {
    if (x->npairs == 0) return FMM_OK;
    const long natoms = x->natoms;
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    /* energy and virial per thread, added in thread order (core/reduce.h) */
    double *slots = calloc(10 * (size_t)nt, sizeof(double)), sum[10];
    if (!slots) return FMM_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
    {
        double *s = slots + 10 * omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < natoms; ++i) {
            if (x->start[i] == x->start[i + 1]) continue;
            const long si = at ? at[i] : i;
            double acc[EXCL_N] = {0};
            for (int k = x->start[i]; k < x->start[i + 1]; ++k) {
                const long sj = at ? at[x->partner[k]] : x->partner[k];
                double d[3] = {X[si] - X[sj], Y[si] - Y[sj], Z[si] - Z[sj]};
                if (mi) pbc_min_image_apply(mi, d);
                excl_term(d[0], d[1], d[2], L, q[si], q[sj], acc);
            }
            if (phi) phi[i] -= acc[EXCL_PHI];
            if (field)
                for (int a = 0; a < 3; ++a) field[3 * i + a] -= acc[EXCL_E + a];
            s[0] += acc[EXCL_ENERGY];
            for (int k = 0; k < 9; ++k) s[1 + k] += acc[EXCL_VIR + k];
        }
    }
    fmm_sum_slots(slots, nt, 10, sum);
    free(slots);
    if (energy) *energy -= sum[0];
    if (virial)
        for (int k = 0; k < 9; ++k) virial[k] -= sum[1 + k];
    return FMM_OK;
}
