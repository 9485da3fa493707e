#include "core/sort.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_common.h"

#define DIGIT_BITS 11
#define NDIGIT (1 << DIGIT_BITS)

int fmm_radix_sort(long n, uint64_t *key, long *idx, int bits, int threads) {
    if (n < 2 || bits <= 0) return FMM_OK;
    int nth = threads > 0 ? threads : omp_get_max_threads();
    /* a thread per ~64k pairs at least: below that the histograms cost more than they save */
    if ((long)nth * 65536 > n) nth = (int)(n / 65536) > 1 ? (int)(n / 65536) : 1;
    uint64_t *k2 = malloc(sizeof(uint64_t) * (size_t)n);
    long *i2 = malloc(sizeof(long) * (size_t)n);
    long *cnt = malloc(sizeof(long) * (size_t)nth * NDIGIT);
    if (!k2 || !i2 || !cnt) {
        free(k2), free(i2), free(cnt);
        return FMM_ERR_NOMEM;
    }
    uint64_t *ka = key, *kb = k2;
    long *ia = idx, *ib = i2;
    for (int shift = 0; shift < bits; shift += DIGIT_BITS) {
#pragma omp parallel num_threads(nth)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            const long lo = n * t / nt, hi = n * (t + 1) / nt;
            long *c = cnt + (size_t)t * NDIGIT;
            memset(c, 0, sizeof(long) * NDIGIT);
            for (long i = lo; i < hi; ++i) c[(ka[i] >> shift) & (NDIGIT - 1)]++;
#pragma omp barrier
#pragma omp single
            {
                long s = 0;
                for (int d = 0; d < NDIGIT; ++d)
                    for (int u = 0; u < nt; ++u) {
                        long v = cnt[(size_t)u * NDIGIT + d];
                        cnt[(size_t)u * NDIGIT + d] = s;
                        s += v;
                    }
            } /* implicit barrier */
            for (long i = lo; i < hi; ++i) {
                long pos = c[(ka[i] >> shift) & (NDIGIT - 1)]++;
                kb[pos] = ka[i];
                ib[pos] = ia[i];
            }
        }
        uint64_t *tk = ka;
        ka = kb, kb = tk;
        long *ti = ia;
        ia = ib, ib = ti;
    }
    if (ka != key) {
#pragma omp parallel for schedule(static) num_threads(nth)
        for (long i = 0; i < n; ++i) key[i] = ka[i], idx[i] = ia[i];
    }
    free(k2), free(i2), free(cnt);
    return FMM_OK;
}
