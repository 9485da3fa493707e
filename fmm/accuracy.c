#include "fmm/accuracy.h"

#include <math.h>

#include "fmm.h"

/* Largest relative L2 potential error measured at each order p = 1..FMM_ORDER_MAX (index
 * p-1), made monotone (each entry is the largest error at that order or any higher one).
 * Written by bench/accuracy_table.py from bench/accuracy_sweep.sh's runs
 * (bench/results/accuracy_sweep.csv: orders 1-24; accuracy_sweep_high.csv: every fourth
 * order from 26 to 50, geometric interpolation between them):
 *   open: uniform cube, Plummer, sphere surface (20000 charges each) and water-like
 *         (6666 SPC/E molecules) against the direct sum; the water-like set is the worst;
 *   periodic: the 2934-atom SPC/E box, a 300-atom water box and 2000 uniform charges
 *         against the Ewald sum.
 * With one-box separation the error falls by only ~0.6x per order at high order, so 1e-12
 * needs order 44 (open) and 50 (periodic). The periodic column holds one box of each kind:
 * other random 300-atom water boxes came out up to ~10x above it at orders 28-50, more than
 * the 3x margin below covers (the promise for periodic boxes stops at 1e-7, README).
 * Crystals (charges at simple fractions of the cell) hold the periodic column down to 1e-7 too,
 * since the tin-foil tree is moved by an irrational fraction of the cell (fmm/setpts.c), which
 * keeps them off the corners of its boxes; at 1e-9 a rock-salt lattice on a forced depth-1 tree
 * still came out ~5x above (test_periodic CrystalsKeepTheTolerance, SlowCrystalsTight). */
/* open: swept orders 1-24, 26, 30, 34, 38, 42, 46, 50, the others interpolated */
static const double err_open[] = {
    5.09e-02, 1.48e-02, 5.02e-03, 1.75e-03, 6.26e-04, 2.47e-04,
    9.91e-05, 4.35e-05, 1.78e-05, 8.16e-06, 3.70e-06, 1.76e-06,
    8.40e-07, 4.61e-07, 2.49e-07, 1.28e-07, 6.67e-08, 3.31e-08,
    1.86e-08, 1.14e-08, 7.24e-09, 3.98e-09, 2.19e-09, 1.45e-09,
    9.18e-10, 5.80e-10, 3.64e-10, 2.29e-10, 1.44e-10, 9.03e-11,
    6.05e-11, 4.06e-11, 2.72e-11, 1.83e-11, 1.20e-11, 7.92e-12,
    5.21e-12, 3.43e-12, 2.30e-12, 1.54e-12, 1.04e-12, 6.95e-13,
    4.69e-13, 3.17e-13, 2.14e-13, 1.44e-13, 9.60e-14, 6.38e-14,
    4.25e-14, 2.82e-14};
/* periodic: swept orders 1-24, 26, 30, 34, 38, 42, 46, 50, the others interpolated */
static const double err_periodic[] = {
    5.51e-02, 2.08e-02, 8.36e-03, 2.60e-03, 8.68e-04, 3.56e-04,
    1.80e-04, 6.48e-05, 3.26e-05, 1.67e-05, 7.63e-06, 3.50e-06,
    1.85e-06, 1.19e-06, 7.13e-07, 4.41e-07, 4.41e-07, 1.06e-07,
    1.06e-07, 6.82e-08, 3.96e-08, 3.96e-08, 1.28e-08, 1.10e-08,
    4.13e-09, 1.55e-09, 1.43e-09, 1.31e-09, 1.21e-09, 1.11e-09,
    6.06e-10, 3.30e-10, 1.80e-10, 9.82e-11, 7.20e-11, 5.28e-11,
    3.87e-11, 2.84e-11, 1.86e-11, 1.22e-11, 7.96e-12, 5.21e-12,
    3.03e-12, 1.76e-12, 1.02e-12, 5.95e-13, 4.55e-13, 3.49e-13,
    2.67e-13, 2.05e-13};

_Static_assert(sizeof err_open / sizeof *err_open == FMM_ORDER_MAX, "one entry per order");
_Static_assert(sizeof err_periodic / sizeof *err_periodic == FMM_ORDER_MAX, "one entry per order");

/* Other data and trees scatter around the table by up to about 2x, so the order is the
 * lowest whose tabulated error is 3x below the tolerance; every tolerance in
 * [FMM_TOL_MIN, FMM_TOL_MAX] has one. */
int fmm_order_for_tolerance(double tol, int periodic) {
    const double *err = periodic ? err_periodic : err_open;
    for (int p = 1; p < FMM_ORDER_MAX; ++p)
        if (3.0 * err[p - 1] <= tol) return p;
    return FMM_ORDER_MAX;
}

/* Leaf capacity: balances the near field (P2P, O(s) pairs per particle) against the far
 * field (up to 189 M2L of O(p^3) per box), so it grows with the order. Split boxes hold
 * s/8..s particles. 128 (p / 8)^1.3 lies in the best range measured at every order swept
 * (docs/tuning.md, "Leaf capacity"). */
int fmm_leaf_for_order(int p) { return p <= 8 ? 128 : (int)(128 * pow(p / 8.0, 1.3)); }
