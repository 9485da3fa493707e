/* hermite_bench: throughput of the GPU Hermite-evaluation kernel (the seed's Tables 4-5):
 * n targets, each evaluating NCL clusters of order p per dimension (3-D), for the seed's
 * N = 25600 .. 6553600 and p = 5, 9, 12. Prints particles/s and coefficient terms/s. */
#include <stdio.h>
#include <stdlib.h>

#include "fmm_fgt.h"

int main(int argc, char **argv) {
    int ncl = argc > 1 ? atoi(argv[1]) : 27;
    long ns[] = {25600, 102400, 409600, 1638400, 6553600};
    int ps[] = {5, 9, 12};
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 5; ++b) {
            double ms;
            int rc = fgt_cuda_hermite_bench(ns[b], ps[a], ncl, 4.0, &ms);
            if (rc) {
                printf("p=%d n=%ld error=%s\n", ps[a], ns[b], fgt_strerror(rc));
                continue;
            }
            double pps = ns[b] / (ms * 1e-3), terms = pps * ncl * ps[a] * ps[a] * ps[a];
            printf("p=%d n=%ld clusters=%d ms=%.3f particles_per_s=%.3e terms_per_s=%.3e\n", ps[a], ns[b],
                   ncl, ms, pps, terms);
        }
    return 0;
}
