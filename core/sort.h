/* Stable LSD radix sort of (key, index) pairs, OpenMP-parallel: each pass histograms static
 * chunks per thread, offsets the (digit, thread) counts in that order and scatters each chunk
 * in order, so equal keys keep their input order. Used for the octree's Morton keys and the
 * FGT's box keys. */
#ifndef FMM_CORE_SORT_H
#define FMM_CORE_SORT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sorts key[0..n) ascending, carrying idx along; keys must be < 2^bits (bits <= 64).
 * threads <= 0: OpenMP's default. Returns 0 or FMM_ERR_NOMEM (key and idx untouched then). */
int fmm_radix_sort(long n, uint64_t *key, long *idx, int bits, int threads);

#ifdef __cplusplus
}
#endif

#endif
