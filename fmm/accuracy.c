#include "fmm/accuracy.h"

/* Largest relative L2 potential error measured at each order p (one-box separation,
 * scaled spherical-harmonic expansions), over uniform-cube, Plummer and sphere-surface sets
 * of N = 30000 random charges (N = 8000 for p > 20), adaptive tree. Odd orders between
 * measured ones are interpolated geometrically. Measured with the driver used for
 * bench/accuracy_sweep; see docs/accuracy.md. */
static const double err_at_order[31] = {
    1.0,     4.0e-2,  1.22e-2, 4.0e-3,  1.28e-3, 5.0e-4,  1.75e-4, 7.0e-5,
    2.6e-5,  1.1e-5,  4.6e-6,  2.1e-6,  9.8e-7,  4.6e-7,  2.2e-7,  1.1e-7,
    5.4e-8,  2.7e-8,  1.4e-8,  8.0e-9,  4.6e-9,  1.9e-9,  1.1e-9,  5.5e-10,
    2.7e-10, 2.0e-10, 1.4e-10, 7.0e-11, 3.3e-11, 2.4e-11, 1.8e-11};

/* The tree and the data vary the error around the table by up to about 2x, so the order
 * is the lowest whose tabulated error is 3x below the tolerance. Periodic boxes err about
 * 5x more at the same order (the images beyond the 27 nearest enter through one M2L at the
 * root with a one-cell separation; measured on the 2934-atom SPC/E box and random neutral
 * and charged sets against the Ewald sum). Below what order 30 reaches (about 5e-11 open,
 * 3e-10 periodic) the tolerance cannot be guaranteed; order 30 is used. */
int fmm_order_for_tolerance(double tol, int periodic) {
    double margin = periodic ? 15.0 : 3.0;
    for (int p = 1; p <= 30; ++p)
        if (margin * err_at_order[p] <= tol) return p;
    return 30;
}

/* Leaf capacity: balances the near field (P2P, O(s) pairs per particle) against the far
 * field (up to 189 M2L of O(p^3) per box). Split boxes hold s/8..s particles; on the
 * CI-class CPU (2 cores, AVX-512), uniform N = 2e5, the optimum mean leaf occupancy was
 * 50-100 particles for p = 6..14. */
int fmm_leaf_for_order(int p) { return p <= 10 ? 128 : 200; }
