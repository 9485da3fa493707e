/*
 * The periodic image M2L of the CUDA FMM's virial (fmm/fmm_cuda_orders.cuh instantiates it per
 * order): on a dense level (m2l/m2l_gpu.h) of side `*side` (device memory, the root cell's
 * side), the force of each periodic image on the cell from the V-list translations whose source
 * box wraps into that image; fshift[FSTRIDE * (3 * image + axis)] accumulates it.
 */
#ifndef FMM_M2L_M2L_IMAGES_CUH
#define FMM_M2L_M2L_IMAGES_CUH

#include "core/harmonics_device.cuh"
#include "m2l/m2l_gpu.h"
#include "m2l/warp_sums.cuh"

/* The total force sum_i q_i E(x_i) of a scaled local expansion u on the charges whose scaled
 * multipole about the same centre is w (core/harmonics.c harm_local_force) is linear in u:
 * F_a = sum_k G_a[k] u[k] / h^2. G_a[k] of coefficient k from w: harm_local_force's terms
 * regrouped by the coefficient of u they multiply. */
template <int P> __device__ void local_force_weights(int k, const double *w, double G[3]) {
    int l = 0;
    while ((l + 1) * (l + 1) <= k) ++l;
    const int off = k - l * l, m = (off + 1) / 2;
    G[0] = G[1] = G[2] = 0.0;
    if (l == 0) return;
#define WR(q) w[hd_re(l - 1, q)]
#define WI(q) ((q) ? w[hd_im(l - 1, q)] : 0.0)
    if (off == 0 || off % 2) { /* Re u_lm */
        if (m <= l - 1) G[2] = -(m ? 2.0 : 1.0) * WR(m);
        if (m >= 1) G[0] += WR(m - 1), G[1] += WI(m - 1);
        if (m <= l - 2) G[0] -= WR(m + 1), G[1] += WI(m + 1);
    } else { /* Im u_lm, m >= 1 */
        if (m <= l - 1) G[2] = 2.0 * WI(m);
        G[0] -= WI(m - 1), G[1] += WR(m - 1);
        if (m <= l - 2) G[0] += WI(m + 1), G[1] += WR(m + 1);
    }
#undef WR
#undef WI
}

/* Periodic virial: the force of each periodic image on the cell (fshift[FSTRIDE * (3 * image +
 * axis)]) through the M2L translations whose source box lies in that image. One block per V-list
 * entry of one parity (8 x M2L_VLIST blocks a level, IMG_TB threads): it stages the entry's
 * operator in shared memory (up to order IMG_STAGE_PMAX; beyond it the rows are read from global
 * memory) and applies it to every box of that parity whose source the entry wraps: u = S M S W_src,
 * F_a = G_a(W_t) . u / h^2 (local_force_weights), one operator product and three dot products a
 * box. The boxes are enumerated per axis among the planes next to the faces (at most two a side),
 * IMG_TB candidates at a time, gathered into a list, and the warps take them from it two at a time
 * (two independent chains of products per row, and the operator read once for both), instead of
 * one block per box near a face reading the operator by columns from global memory: about 9x
 * faster (docs/tuning.md). */
#define IMG_TB 256
#define IMG_STAGE_PMAX 9
__host__ __device__ constexpr int img_ld(int p) { /* a staged row's stride: bank-conflict free */
    return p <= IMG_STAGE_PMAX ? hd_ncoef(p) + 1 : hd_ncoef(p);
}
/* dynamic shared memory: the staged operator (to IMG_STAGE_PMAX), the signs, and per warp the
   source and target multipoles of two boxes */
__host__ __device__ constexpr int img_smem_bytes(int p) {
    return (int)sizeof(double) * ((p <= IMG_STAGE_PMAX ? hd_ncoef(p) * img_ld(p) : 0) +
                                  hd_ncoef(p) * (1 + 4 * IMG_TB / 32));
}
template <int P, int FSTRIDE>
__global__ void __launch_bounds__(IMG_TB)
    k_m2l_images(const double *__restrict__ cls, const double *__restrict__ sign,
                 const int *__restrict__ vlist, int level, const double *__restrict__ side,
                 const double *__restrict__ W, double *__restrict__ fshift) {
    constexpr int NC = hd_ncoef(P), LD = img_ld(P), NW = IMG_TB / 32, KR = (NC + 31) / 32;
    constexpr bool STAGED = P <= IMG_STAGE_PMAX;
    extern __shared__ double sm[];
    __shared__ double fs[81];
    __shared__ int xs_n[3], xs_v[3][2], list_n, list_t[IMG_TB], list_s[IMG_TB], list_c[IMG_TB];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int parity = blockIdx.x / M2L_VLIST, pk = vlist[blockIdx.x];
    const int s = 1 << level, hs = s >> 1,
              d[3] = {(pk & 7) - 3, (pk >> 3 & 7) - 3, (pk >> 6 & 7) - 3};
    /* per axis, the (at most two) coordinates of this parity whose source crosses a face */
    if (threadIdx.x < 3) {
        const int a = threadIdx.x, b = parity >> a & 1;
        int n = 0;
        for (int x = b; x < s; x += 2)
            if (x + d[a] < 0 || x + d[a] >= s) xs_v[a][n++] = x;
        xs_n[a] = n;
    }
    double *Ms = sm, *sg = sm + (STAGED ? NC * LD : 0), *xs = sg + NC + warp * 4 * NC,
           *wt = xs + 2 * NC; /* xs[2][NC], wt[2][NC] */
    const double *Mg = cls + (size_t)(pk >> 9 & 63) * NC * NC;
    if constexpr (STAGED)
        for (int i = threadIdx.x; i < NC * NC; i += IMG_TB) Ms[(i / NC) * LD + i % NC] = Mg[i];
    for (int k = threadIdx.x; k < NC; k += IMG_TB) sg[k] = sign[(pk >> 15) * NC + k];
    for (int k = threadIdx.x; k < 81; k += IMG_TB) fs[k] = 0.0;
    __syncthreads();
    const double *M = STAGED ? Ms : Mg;
    const double h = side[0] / s, ih2 = 1.0 / (h * h);
    for (int a = 0; a < 3; ++a) { /* boxes with coordinate a in xs_v[a] and none earlier in xs_v */
        const int a1 = (a + 1) % 3, a2 = (a + 2) % 3;
        const long cnt = (long)xs_n[a] * hs * hs;
        for (long base = 0; base < cnt; base += IMG_TB) {
            if (threadIdx.x == 0) list_n = 0;
            __syncthreads();
            const long id = base + threadIdx.x;
            if (id < cnt) {
                int ix[3];
                ix[a] = xs_v[a][id / ((long)hs * hs)];
                ix[a1] = 2 * (int)(id % hs) + (parity >> a1 & 1);
                ix[a2] = 2 * (int)(id / hs % hs) + (parity >> a2 & 1);
                bool dup = false;
                for (int e = 0; e < a; ++e)
                    for (int q = 0; q < xs_n[e]; ++q) dup |= ix[e] == xs_v[e][q];
                if (!dup) {
                    int c[3], code = 0;
                    for (int e = 0, mul = 1; e < 3; ++e, mul *= 3) {
                        c[e] = ix[e] + d[e];
                        const int img = c[e] < 0 ? -1 : (c[e] >= s ? 1 : 0);
                        c[e] -= img * s, code += mul * (img + 1);
                    }
                    const int at = atomicAdd(&list_n, 1);
                    list_t[at] = ix[0] + s * (ix[1] + s * ix[2]);
                    list_s[at] = c[0] + s * (c[1] + s * c[2]), list_c[at] = code;
                }
            }
            __syncthreads();
            for (int q = 2 * warp; q < list_n; q += 2 * NW) {
                const bool two = q + 1 < list_n; /* a missing second box: zero multipoles */
                __syncwarp();
                for (int j = lane; j < NC; j += 32) {
                    xs[j] = sg[j] * W[(size_t)list_s[q] * NC + j],
                    wt[j] = W[(size_t)list_t[q] * NC + j];
                    xs[NC + j] = two ? sg[j] * W[(size_t)list_s[q + 1] * NC + j] : 0.0;
                    wt[NC + j] = two ? W[(size_t)list_t[q + 1] * NC + j] : 0.0;
                }
                __syncwarp();
                double u0[KR] = {}, u1[KR] = {}; /* rows lane, lane + 32, ... of both boxes */
#pragma unroll 4
                for (int j = 0; j < NC; ++j) {
                    const double x0 = xs[j], x1 = xs[NC + j];
#pragma unroll
                    for (int r = 0; r < KR; ++r)
                        if (lane + 32 * r < NC) {
                            const double m = M[(size_t)(lane + 32 * r) * LD + j];
                            u0[r] = fma(m, x0, u0[r]), u1[r] = fma(m, x1, u1[r]);
                        }
                }
                double F[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
#pragma unroll
                for (int r = 0; r < KR; ++r) {
                    const int k = lane + 32 * r;
                    if (k >= NC) continue;
                    double G0[3], G1[3];
                    local_force_weights<P>(k, wt, G0);
                    local_force_weights<P>(k, wt + NC, G1);
                    const double v0 = sg[k] * u0[r], v1 = sg[k] * u1[r];
                    for (int e = 0; e < 3; ++e)
                        F[e] = fma(G0[e], v0, F[e]), F[3 + e] = fma(G1[e], v1, F[3 + e]);
                }
                const double f = warp_sums(F); /* lanes 0, 4, .. 20: box 0's axes, then box 1's */
                if (lane % 4 == 0 && lane < (two ? 24 : 12))
                    atomicAdd(fs + 3 * list_c[q + lane / 12] + lane / 4 % 3, f * ih2);
            }
            __syncthreads();
        }
    }
    for (int k = threadIdx.x; k < 81; k += IMG_TB)
        if (fs[k] != 0.0) atomicAdd(fshift + FSTRIDE * k, fs[k]);
}

#endif
