/* Local cardinal functions of the FGP L-sets (digest A.2 step 5), RBF_LANES sets at once, one
 * per SIMD lane: all sets but the last few have exactly q points, so the lanes run in lock step
 * and every operation is a full vector operation.
 *
 * The saddle system [Phi 1; 1^T 0][zeta; psi] = [e_0; 0] of a set of s points is reduced to a
 * positive definite one. With zeta = (-sum_k y_k, y_1, .., y_{s-1}) the side condition holds for
 * every y, and rows 1..s-1 of Phi zeta + psi 1 = e_0 minus row 0 give M y = 1 with
 *     M_ij = Phi_i0 + Phi_0j - Phi_ij - Phi_00   (i, j = 1 .. s-1),
 * M = -Z^T Phi Z for the full-rank Z whose columns e_i - e_0 span 1^perp, positive definite since
 * the multiquadric is conditionally negative definite of order 1. Cholesky M = L L^T (s^3/6
 * FMAs, no pivoting: a quarter of the LU's flops), w = L^-1 1, y = L^-T w. The local function's
 * squared semi-norm -zeta^T Phi zeta = y^T M y = |w|^2, so the normalised zeta is zeta / |w|
 * with no further sum; a pivot that is not positive marks the set degenerate (numerically
 * singular for this c). The eliminated point 0 is the set's own centre, nearest to the others,
 * so M's entries lose the least to cancellation. */
#include <math.h>

#include "rbf/mq_sqrt.h"
#include "rbf/rbf_internal.h"

typedef double vd __attribute__((vector_size(8 * RBF_LANES)));

long rbf_local_work(int q) {
    return (long)RBF_LANES * (q + (long)q * (q - 1) / 2);
}

static inline void vsqrt(vd *a) {
#if defined(__AVX512F__) && RBF_LANES == 8
    *a = (vd)rbf_mq_sqrt((__m512d)*a);
#else
    for (int v = 0; v < RBF_LANES; ++v) (*a)[v] = sqrt((*a)[v]);
#endif
}

int rbf_local_solve(int q, const int *cnt, const double *px_, const double *py_,
                    const double *pz_, double c2, double *work, double *zeta_) {
    const vd *px = (const vd *)px_, *py = (const vd *)py_, *pz = (const vd *)pz_;
    vd *d0 = (vd *)work, *M = d0 + q, *zeta = (vd *)zeta_;
    int s = 2, full = 1;
    for (int v = 0; v < RBF_LANES; ++v) {
        s = cnt[v] > s ? cnt[v] : s;
        full &= cnt[v] == q;
    }
    int m = s - 1;
    double c = sqrt(c2);
    for (int i = 1; i < s; ++i) {
        vd dx = px[i] - px[0], dy = py[i] - py[0], dz = pz[i] - pz[0];
        d0[i] = dx * dx + dy * dy + dz * dz + c2;
        vsqrt(&d0[i]);
    }
    /* M, packed lower rows: row a (point a + 1) starts at a (a + 1) / 2 */
    for (int a = 0; a < m; ++a) {
        vd *row = M + (long)a * (a + 1) / 2, xa = px[a + 1], ya = py[a + 1], za = pz[a + 1];
        vd da = d0[a + 1] - c;
        for (int b = 0; b <= a; ++b) {
            vd dx = xa - px[b + 1], dy = ya - py[b + 1], dz = za - pz[b + 1];
            vd r = dx * dx + dy * dy + dz * dz + c2;
            vsqrt(&r);
            row[b] = da + d0[b + 1] - r;
        }
    }
    /* a set with fewer points: its rows beyond them become identity rows (right-hand side 0
       below), which leaves y = 0 there */
    if (!full)
        for (int v = 0; v < RBF_LANES; ++v)
            for (int a = cnt[v] - 1; a < m; ++a)
                for (int b = 0; b <= a; ++b) M[(long)a * (a + 1) / 2 + b][v] = a == b;
    /* Cholesky-Banachiewicz, row by row, four entries of a row per pass over k (each load of
       the row's own entries feeds four independent FMA chains); the diagonal keeps 1 / L_aa */
    int bad = 0;
    for (int a = 0; a < m; ++a) {
        vd *ra = M + (long)a * (a + 1) / 2;
        int b = 0;
        for (; b + 4 <= a; b += 4) {
            const vd *r0 = M + (long)b * (b + 1) / 2, *r1 = r0 + b + 1, *r2 = r1 + b + 2, *r3 = r2 + b + 3;
            vd a0 = ra[b], a1 = ra[b + 1], a2 = ra[b + 2], a3 = ra[b + 3];
            for (int k = 0; k < b; ++k) {
                vd x = ra[k];
                a0 -= x * r0[k], a1 -= x * r1[k], a2 -= x * r2[k], a3 -= x * r3[k];
            }
            ra[b] = a0 *= r0[b];
            a1 -= a0 * r1[b], a2 -= a0 * r2[b], a3 -= a0 * r3[b];
            ra[b + 1] = a1 *= r1[b + 1];
            a2 -= a1 * r2[b + 1], a3 -= a1 * r3[b + 1];
            ra[b + 2] = a2 *= r2[b + 2];
            a3 -= a2 * r3[b + 2];
            ra[b + 3] = a3 * r3[b + 3];
        }
        for (; b < a; ++b) {
            const vd *rb = M + (long)b * (b + 1) / 2;
            vd acc = ra[b];
            for (int k = 0; k < b; ++k) acc -= ra[k] * rb[k];
            ra[b] = acc * rb[b];
        }
        vd acc = ra[a];
        for (int k = 0; k < a; ++k) acc -= ra[k] * ra[k];
        for (int v = 0; v < RBF_LANES; ++v) {
            int ok = acc[v] > 0; /* false for NaN too */
            bad |= !ok << v;
            ra[a][v] = 1 / sqrt(ok ? acc[v] : 1.0);
        }
    }
    /* w = L^-1 1 (0 on identity rows) into d0, then y = L^-T w in place */
    vd *w = d0, nrm = {0}, sum = {0};
    for (int a = 0; a < m; ++a) {
        const vd *ra = M + (long)a * (a + 1) / 2;
        vd acc;
        for (int v = 0; v < RBF_LANES; ++v) acc[v] = a + 1 < cnt[v];
        for (int k = 0; k < a; ++k) acc -= ra[k] * w[k];
        w[a] = acc * ra[a];
        nrm += w[a] * w[a];
    }
    for (int a = m - 1; a >= 0; --a) {
        const vd *ra = M + (long)a * (a + 1) / 2;
        w[a] *= ra[a];
        for (int k = 0; k < a; ++k) w[k] -= ra[k] * w[a];
        sum += w[a];
    }
    vd sc;
    for (int v = 0; v < RBF_LANES; ++v) {
        sc[v] = 1 / sqrt(nrm[v]);
        if (!isfinite(sc[v]) || !isfinite(sum[v] * sc[v])) bad |= 1 << v;
        if (bad >> v & 1) sc[v] = 0;
    }
    zeta[0] = -sum * sc;
    for (int a = 0; a < m; ++a) zeta[a + 1] = w[a] * sc;
    for (int v = 0; v < RBF_LANES; ++v)
        for (int i = 0; i < s && (bad >> v & 1); ++i) zeta[i][v] = 0;
    return bad;
}
