/*
 * Device versions of the particle-side harmonics (core/harmonics.c conventions: regular
 * R_lm = r^l/(l+m)! P_lm e^{-i m phi}, real layout, expansions scaled by the box side).
 *
 * The regular harmonics of one point are produced one coefficient at a time by the same
 * recurrences as regular_tri() (diagonal R_mm from R_{m-1,m-1}, then upwards in l at fixed m),
 * and handed to a visitor with compile-time (l, m), so that every loop unrolls and nothing but
 * the few recurrence values lives in registers: P2M reduces each coefficient over the warp,
 * L2P contracts it with the local expansion as it goes.
 */
#ifndef FMM_CORE_HARMONICS_DEVICE_CUH
#define FMM_CORE_HARMONICS_DEVICE_CUH

__host__ __device__ constexpr int hd_ncoef(int p) { return (p + 1) * (p + 1); }
__host__ __device__ constexpr int hd_re(int l, int m) { return l * l + (m == 0 ? 0 : 2 * m - 1); }
__host__ __device__ constexpr int hd_im(int l, int m) { return l * l + 2 * m; }

/* visit(l, m, re, im) for every 0 <= m <= l <= P of R_lm(x, y, z), in the arithmetic of R (float
 * only where the scaled R_lm and expansions stay within its range: p <= FMM_GPU_FLOAT_PMAX) */
template <int P, typename R, class V>
__device__ __forceinline__ void regular_visit(R x, R y, R z, V &visit) {
    const R r2 = x * x + y * y + z * z;
    R dr = 1, di = 0;
#pragma unroll
    for (int m = 0; m <= P; ++m) {
        if (m > 0) {
            const R f = R(-0.5 / m);
            const R nr = f * (dr * x + di * y), ni = f * (di * x - dr * y);
            dr = nr, di = ni;
        }
        R pr = 0, pi = 0, cr = dr, ci = di;
        visit(m, m, cr, ci);
#pragma unroll
        for (int l = m; l < P; ++l) {
            const R inv = R(1.0 / ((double)(l + 1) * (l + 1) - (double)m * m));
            const R a = R(2 * l + 1) * z;
            const R nr = (a * cr - r2 * pr) * inv, ni = (a * ci - r2 * pi) * inv;
            pr = cr, pi = ci, cr = nr, ci = ni;
            visit(l + 1, m, cr, ci);
        }
    }
}

/* L2P accumulator: phi = sum u_lm R_lm, and the field from R_{l-1, .} (harm_l2p). u: scaled
 * local expansion (real layout). After the visit: phi/h, E = (sr, si, -dz)/h^2. */
template <int P, typename R> struct l2p_visitor {
    const R *u;
    R f, dz, sr, si;
    __device__ __forceinline__ void operator()(int j, int k, R rr, R ri) {
        const R ur = u[hd_re(j, k)], ui = k ? u[hd_im(j, k)] : R(0);
        f += R(k ? 2 : 1) * (ur * rr - ui * ri);
        if (j + 1 <= P) {
            const int l = j + 1;
            const R ar = u[hd_re(l, k)], ai = k ? u[hd_im(l, k)] : R(0);
            dz += R(k ? 2 : 1) * (ar * rr - ai * ri);
            const R br = u[hd_re(l, k + 1)], bi = u[hd_im(l, k + 1)];
            sr += br * rr - bi * ri;
            si += br * ri + bi * rr;
            if (k >= 1) {
                const R cr = u[hd_re(l, k - 1)], ci = k - 1 ? u[hd_im(l, k - 1)] : R(0);
                sr -= cr * rr - ci * ri;
                si += cr * ri + ci * rr;
            }
        }
    }
};

#endif
