/* Device helpers shared by the bench-only M2L variants (m2l/bench/m2l_variants.h). */
#ifndef FMM_M2L_BENCH_M2L_VARIANTS_CUH
#define FMM_M2L_BENCH_M2L_VARIANTS_CUH

/* source box of target (ix, iy, iz) at packed offset pk (m2l_gpu_ops::vlist) on a grid of side s;
 * -1 if absent (open boundary) */
__device__ __forceinline__ long m2l_source_box(int ix, int iy, int iz, int pk, int s,
                                               int periodic) {
    int sx = ix + (pk & 7) - 3, sy = iy + (pk >> 3 & 7) - 3, sz = iz + (pk >> 6 & 7) - 3;
    if (periodic) {
        sx = (sx + 4 * s) % s, sy = (sy + 4 * s) % s, sz = (sz + 4 * s) % s;
    } else if (sx < 0 || sy < 0 || sz < 0 || sx >= s || sy >= s || sz >= s) {
        return -1;
    }
    return sx + (long)s * (sy + (long)s * sz);
}

#endif
