/* Warp reductions of several sums at once, for the CUDA kernels of m2l/ and fmm/. */
#ifndef FMM_M2L_WARP_SUMS_CUH
#define FMM_M2L_WARP_SUMS_CUH

/* The warp's sums of v[0..K), K <= 32, by a transposing reduction: each step halves the values a
 * lane holds, keeping one half and sending the other to the lane across (16 double shuffles for
 * K = 10, against 50 for K separate sums). Returns, at every lane, the sum of v[k] for
 * k = lane / (32 / KP) (KP: K rounded up to a power of 2; none where k >= K). */
__host__ __device__ constexpr int pow2_ceil(int k) {
    return k <= 1 ? 1 : 2 * pow2_ceil((k + 1) / 2);
}
/* one step: lanes with bit O keep the upper half of x[0..2H), the others the lower half, and each
 * adds what the lane across sends; H = 0: x[0] summed over the lanes O, O/2, .. 1 apart */
template <int H, int O>
__device__ __forceinline__ double warp_sums_step(const double *x, int lane) {
    if constexpr (H == 0) {
        double r = x[0];
#pragma unroll
        for (int o = O; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
        return r;
    } else {
        double y[H];
        const bool up = lane & O;
#pragma unroll
        for (int i = 0; i < H; ++i)
            y[i] = (up ? x[i + H] : x[i]) + __shfl_xor_sync(0xffffffffu, up ? x[i] : x[i + H], O);
        return warp_sums_step<H / 2, O / 2>(y, lane);
    }
}
template <int K> __device__ __forceinline__ double warp_sums(const double (&v)[K]) {
    constexpr int KP = pow2_ceil(K);
    static_assert(K <= 32, "at most 32 sums per warp");
    double x[KP];
#pragma unroll
    for (int i = 0; i < KP; ++i) x[i] = i < K ? v[i] : 0.0;
    return warp_sums_step<KP / 2, 16>(x, threadIdx.x & 31);
}

#endif
