/* Local cardinal functions of the FGP L-sets (docs/rbf.md, step 5), RBF_LANES sets at once, one
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

#include "core/simd.h"
#include "rbf/rbf_internal.h"

typedef simd_d vd;

/* rows of the factor computed together: R x 4 accumulators and R + 4 operands in registers
   (32 with AVX-512, 16 with AVX2) */
#define RBF_CHOL_ROWS (SIMD_W == 8 ? 4 : 2)

long rbf_local_work(int q) {
    return (long)RBF_LANES * (q + (long)q * (q - 1) / 2);
}

/* sqrt of every lane: SIMD (core/simd.h), or exactly where the arguments leave the estimate's
   range */
static inline void vsqrt(vd *a, int exact) {
    if (!exact) *a = simd_sqrt(*a);
    else
        for (int v = 0; v < RBF_LANES; ++v) (*a)[v] = sqrt((*a)[v]);
}

/* Columns b .. b+3 of R (1 or RBF_CHOL_ROWS) rows of the packed factor (rows[r], all rows
 * > b + 3): each pass over k loads every factor entry once for R x 4 independent FMA chains.
 * With 8 lanes (AVX-512) per entry a batch's factor (200 KiB at q = 80) lives in L2, so the
 * loads per FMA ((R + 4) / 4R) are what limits the speed (measured with AVX-512 at 20000
 * centres, q = 80: R = 4 takes 15% less time than one row at a time). The diagonal holds
 * 1 / L_cc. */
static inline __attribute__((always_inline)) void chol_cols4(int R, vd *const *rows, const vd *M,
                                                            int b) {
    const vd *rc[4];
    rc[0] = M + (long)b * (b + 1) / 2;
    for (int c = 1; c < 4; ++c) rc[c] = rc[c - 1] + b + c;
    vd acc[RBF_CHOL_ROWS][4];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = rows[r][b + c];
    for (int k = 0; k < b; ++k)
        for (int r = 0; r < R; ++r) {
            vd x = rows[r][k];
            for (int c = 0; c < 4; ++c) acc[r][c] -= x * rc[c][k];
        }
    for (int r = 0; r < R; ++r) /* the 4 x 4 triangle: column c needs the row's entries < c */
        for (int c = 0; c < 4; ++c) {
            for (int e = 0; e < c; ++e) acc[r][c] -= acc[r][e] * rc[c][b + e];
            rows[r][b + c] = acc[r][c] *= rc[c][b + c];
        }
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
    /* r^2 + c^2 within a set is at most its squared extent + c^2 */
    double e2 = 0;
    for (int v = 0; v < RBF_LANES; ++v) {
        double s2 = 0;
        for (int d = 0; d < 3; ++d) {
            const vd *pd = d == 0 ? px : d == 1 ? py : pz;
            double lo = pd[0][v], hi = lo;
            for (int i = 1; i < cnt[v]; ++i) {
                lo = pd[i][v] < lo ? pd[i][v] : lo;
                hi = pd[i][v] > hi ? pd[i][v] : hi;
            }
            s2 += (hi - lo) * (hi - lo);
        }
        e2 = s2 > e2 ? s2 : e2;
    }
    const int exact = !simd_rsqrt_range_ok(c2, e2 + c2);
    for (int i = 1; i < s; ++i) {
        vd dx = px[i] - px[0], dy = py[i] - py[0], dz = pz[i] - pz[0];
        d0[i] = dx * dx + dy * dy + dz * dz + c2;
        vsqrt(&d0[i], exact);
    }
    /* M, packed lower rows: row a (point a + 1) starts at a (a + 1) / 2 */
    for (int a = 0; a < m; ++a) {
        vd *row = M + (long)a * (a + 1) / 2, xa = px[a + 1], ya = py[a + 1], za = pz[a + 1];
        vd da = d0[a + 1] - c;
        for (int b = 0; b <= a; ++b) {
            vd dx = xa - px[b + 1], dy = ya - py[b + 1], dz = za - pz[b + 1];
            vd r = dx * dx + dy * dy + dz * dz + c2;
            vsqrt(&r, exact);
            row[b] = da + d0[b + 1] - r;
        }
    }
    /* a set with fewer points: its rows beyond them become identity rows (right-hand side 0
       below), which leaves y = 0 there */
    if (!full)
        for (int v = 0; v < RBF_LANES; ++v)
            for (int a = cnt[v] - 1; a < m; ++a)
                for (int b = 0; b <= a; ++b) M[(long)a * (a + 1) / 2 + b][v] = a == b;
    /* Cholesky-Banachiewicz, RBF_CHOL_ROWS rows at a time */
    int bad = 0;
    for (int a = 0; a < m; a += RBF_CHOL_ROWS) {
        vd *rows[RBF_CHOL_ROWS];
        int R = a + RBF_CHOL_ROWS <= m ? RBF_CHOL_ROWS : m - a, b = 0;
        for (int r = 0; r < R; ++r) rows[r] = M + (long)(a + r) * (a + r + 1) / 2;
        for (; b + 4 <= a; b += 4)
            if (R == RBF_CHOL_ROWS) chol_cols4(RBF_CHOL_ROWS, rows, M, b);
            else
                for (int r = 0; r < R; ++r) chol_cols4(1, rows + r, M, b);
        for (int r = 0; r < R; ++r) { /* the remaining columns (through the rows above), diagonal */
            vd *ra = rows[r];
            int row = a + r;
            for (int c = b; c < row; ++c) {
                const vd *rc = M + (long)c * (c + 1) / 2;
                vd acc = ra[c];
                for (int k = 0; k < c; ++k) acc -= ra[k] * rc[k];
                ra[c] = acc * rc[c];
            }
            vd acc = ra[row];
            for (int k = 0; k < row; ++k) acc -= ra[k] * ra[k];
            for (int v = 0; v < RBF_LANES; ++v) {
                int ok = acc[v] > 0; /* false for NaN too */
                bad |= !ok << v;
                ra[row][v] = 1 / sqrt(ok ? acc[v] : 1.0);
            }
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
