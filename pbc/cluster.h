/*
 * A compact cluster in a large periodic cell (a droplet in vacuum, a solute without solvent):
 * where the periodic cell should be centred, and whether the 26 nearest images may act
 * through one M2L at the root instead of 26 copies of the all-pairs near field.
 *
 * The cell of a periodic sum can be any translate of the box (with the tin-foil boundary; the
 * vacuum boundary's dipole term is that of the charges wrapped into [0, L)^3, so there the cell
 * stays the box). At depth 0 (one leaf) the FMM centres it on the charges: per axis, the occupied
 * bins of a coarse histogram of the wrapped coordinates, and the middle of the arc they leave once
 * the longest empty run (circularly) is cut out. Every charge is then wrapped to within L/2 of that
 * centre C. If all of them lie within rho L/2 of C (rho = PBC_COMPACT_RHO), the images n (0 <
 * |n|_inf <= 1) are separated from the cell by L with source and target radii rho L/2 each: the M2L
 * from image n converges as rho^(p+1), against the tree's worst well-separated pair of boxes, (a +
 * b) / d = sqrt(3)/2 (0.87). So the near field is the cell with itself only, and the 26 images join
 * the lattice operator at the root.
 *
 * CPU and GPU use these same functions on the same doubles, so they pick the same centre.
 */
#ifndef FMM_PBC_CLUSTER_H
#define FMM_PBC_CLUSTER_H

#include <math.h>

#ifdef __CUDACC__
#define PBC_HD static __host__ __device__ inline
#else
#define PBC_HD static inline
#endif

#define PBC_CLUSTER_BINS 64 /* one bit per bin in a 64-bit word per axis */
#define PBC_COMPACT_RHO 0.6 /* compact: every charge within 0.6 L/2 of the centre */

/* coordinate v wrapped into [0, L) and its histogram bin */
PBC_HD int pbc_cluster_bin(double v, double L) {
    const double w = v - L * floor(v / L);
    const int b = (int)(w * (PBC_CLUSTER_BINS / L));
    return b < 0 ? 0 : (b >= PBC_CLUSTER_BINS ? PBC_CLUSTER_BINS - 1 : b);
}

/* trailing zero bits of x != 0 */
PBC_HD int pbc_ctz64(unsigned long long x) {
#ifdef __CUDA_ARCH__
    return __ffsll((long long)x) - 1;
#else
    return __builtin_ctzll(x);
#endif
}

/* centre in [0, L) of the occupied bins of one axis (occ: bit b set where bin b holds a
 * charge): the middle of the circular arc left by the longest run of empty bins (the one that
 * starts at the lowest bin on a tie); L/2 where no bin or every bin is empty */
PBC_HD double pbc_cluster_centre(unsigned long long occ, double L) {
    const int nb = PBC_CLUSTER_BINS;
    if (occ == 0 || occ == ~0ull) return 0.5 * L;
    int best = 0, best_start = 0;
    for (int s = 0; s < nb; ++s) {
        /* s starts a run: empty, after an occupied bin; its length, the zeros from s on */
        if ((occ >> s & 1ull) || !(occ >> ((s + nb - 1) % nb) & 1ull)) continue;
        const unsigned long long rot = s ? occ >> s | occ << (nb - s) : occ;
        const int run = pbc_ctz64(rot);
        if (run > best) best = run, best_start = s;
    }
    const double mid = best_start + best + 0.5 * (nb - best); /* in bins, may pass nb */
    const double c = mid * (L / nb);
    return c < L ? c : c - L;
}

/* v relative to the centre c, wrapped into [-L/2, L/2) */
PBC_HD double pbc_cluster_offset(double v, double c, double L) {
    const double y = v - c;
    return y - L * floor(y / L + 0.5);
}

/* whether charges at most sqrt(r2max) from the centre are compact in a cell of side L */
PBC_HD int pbc_cluster_compact(double r2max, double L) {
    return 4.0 * r2max <= PBC_COMPACT_RHO * PBC_COMPACT_RHO * L * L;
}

#endif
