/* core/reduce.h - sums over OpenMP threads that give bitwise the same result on every run.
 *
 * OpenMP's reduction clause and `omp critical` / `omp atomic` sums add the threads' parts in the
 * order the threads arrive, so the last digits of a sum change from run to run. The library's
 * promise (include/fmm.h) is that the same input and thread count give bitwise the same outputs
 * on the CPU. So every floating-point sum over threads is written as:
 *   1. each thread adds its share into its own slot, slots[t * width + k] (t = omp_get_thread_num()),
 *      over a static schedule (schedule(static), or a partition that depends only on the input and
 *      the thread count: dynamic schedules hand out work in arrival order and break this);
 *   2. after the parallel region, fmm_sum_slots adds the slots in thread order.
 * Sums whose terms are produced per item (a box, a particle) in any order may instead store one
 * term per item and add the items in index order. */
#ifndef FMM_CORE_REDUCE_H
#define FMM_CORE_REDUCE_H

/* out[k] = sum over t = 0 .. nslots-1 of slots[t * width + k], added in that order (k < width). */
static inline void fmm_sum_slots(const double *slots, int nslots, int width, double *out) {
    for (int k = 0; k < width; k++) {
        double s = 0.0;
        for (int t = 0; t < nslots; t++) s += slots[(long)t * width + k];
        out[k] = s;
    }
}

#endif /* FMM_CORE_REDUCE_H */
