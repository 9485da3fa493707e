/* Ranks as threads of one process (include/fmm_dist.h fmm_comm_threads): each collective
 * publishes the rank's buffers in its slot, waits at a barrier, reads what it needs from the
 * other slots, and waits again, so that no buffer is reused while another rank reads it. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_dist.h"

typedef struct slot {
    const void *send; /* allgather, alltoallv: the rank's send buffer */
    const size_t *scount, *sdispl;
    const double *data; /* allreduce_sum */
    size_t n;
    int ok; /* the rank could take part (its scratch was allocated) */
} slot;

typedef struct rank_ctx {
    fmm_comm_threads *g;
    int rank;
} rank_ctx;

struct fmm_comm_threads {
    int size;
    pthread_barrier_t bar;
    slot *slots;
    rank_ctx *ctx;
};

int fmm_comm_threads_create(int size, fmm_comm_threads **group) {
    if (!group) return FMM_ERR_ARG;
    *group = NULL;
    if (size < 1) return FMM_ERR_ARG;
    fmm_comm_threads *g = calloc(1, sizeof *g);
    if (!g) return FMM_ERR_NOMEM;
    g->size = size;
    g->slots = calloc((size_t)size, sizeof(slot));
    g->ctx = calloc((size_t)size, sizeof(rank_ctx));
    if (!g->slots || !g->ctx || pthread_barrier_init(&g->bar, NULL, (unsigned)size)) {
        free(g->slots), free(g->ctx), free(g);
        return FMM_ERR_NOMEM;
    }
    for (int r = 0; r < size; ++r) g->ctx[r].g = g, g->ctx[r].rank = r;
    *group = g;
    return FMM_OK;
}

void fmm_comm_threads_destroy(fmm_comm_threads *g) {
    if (!g) return;
    pthread_barrier_destroy(&g->bar);
    free(g->slots), free(g->ctx), free(g);
}

/* after the first barrier: whether every rank could take part */
static int all_ok(const fmm_comm_threads *g) {
    for (int r = 0; r < g->size; ++r)
        if (!g->slots[r].ok) return 0;
    return 1;
}

/* the sums in rank order, the same bits on every rank */
static int th_allreduce(void *ctx, double *data, size_t n) {
    rank_ctx *c = ctx;
    fmm_comm_threads *g = c->g;
    double *sum = malloc(sizeof(double) * (n ? n : 1));
    g->slots[c->rank] = (slot){NULL, NULL, NULL, data, n, sum != NULL};
    pthread_barrier_wait(&g->bar);
    int ok = all_ok(g);
    for (int r = 0; ok && r < g->size; ++r) ok = g->slots[r].n == n;
    for (size_t k = 0; ok && k < n; ++k) {
        double s = g->slots[0].data[k];
        for (int r = 1; r < g->size; ++r) s += g->slots[r].data[k];
        sum[k] = s;
    }
    pthread_barrier_wait(&g->bar);
    if (ok) memcpy(data, sum, sizeof(double) * n);
    free(sum);
    return !ok;
}

static int th_allgather(void *ctx, const void *send, size_t nbytes, void *recv) {
    rank_ctx *c = ctx;
    fmm_comm_threads *g = c->g;
    g->slots[c->rank] = (slot){send, NULL, NULL, NULL, nbytes, 1};
    pthread_barrier_wait(&g->bar);
    int ok = 1;
    for (int r = 0; ok && r < g->size; ++r) ok = g->slots[r].n == nbytes;
    for (int r = 0; ok && r < g->size; ++r)
        memcpy((char *)recv + (size_t)r * nbytes, g->slots[r].send, nbytes);
    pthread_barrier_wait(&g->bar);
    return !ok;
}

static int th_alltoallv(void *ctx, const void *send, const size_t *scount, const size_t *sdispl,
                        void *recv, const size_t *rcount, const size_t *rdispl) {
    rank_ctx *c = ctx;
    fmm_comm_threads *g = c->g;
    const int me = c->rank;
    g->slots[me] = (slot){send, scount, sdispl, NULL, 0, 1};
    pthread_barrier_wait(&g->bar);
    int ok = 1;
    for (int r = 0; ok && r < g->size; ++r) ok = g->slots[r].scount[me] == rcount[r];
    for (int r = 0; ok && r < g->size; ++r)
        if (rcount[r])
            memcpy((char *)recv + rdispl[r],
                   (const char *)g->slots[r].send + g->slots[r].sdispl[me], rcount[r]);
    pthread_barrier_wait(&g->bar);
    return !ok;
}

int fmm_comm_threads_rank(fmm_comm_threads *g, int rank, fmm_comm *comm) {
    if (!g || !comm || rank < 0 || rank >= g->size) return FMM_ERR_ARG;
    *comm = (fmm_comm){rank, g->size, &g->ctx[rank], th_allreduce, th_allgather, th_alltoallv};
    return FMM_OK;
}
