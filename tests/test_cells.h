// Helpers shared by the tests of periodic cells (test_ewald_cell, test_periodic_cells).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

using Cell = std::array<double, 9>; // rows a, b, c (GROMACS's lower-triangular form)

// The strained configuration x -> (I + e) x, h -> h (I + e)^T, brought back to GROMACS's
// lower-triangular form by a rotation (U does not change): the rows of the new cell are the
// Cholesky factor L of the strained Gram matrix, and each particle keeps its fractional
// coordinates, x' = f L.
inline void strained(const Cell &h, const std::vector<double> &xyz, const double e[9], Cell &hs,
                     std::vector<double> &xs) {
    double H[9], G[9] = {0}, L[9] = {0};
    for (int r = 0; r < 3; ++r) // row r of h (I + e)^T is (I + e) h_r
        for (int a = 0; a < 3; ++a) {
            H[3 * r + a] = h[3 * r + a];
            for (int b = 0; b < 3; ++b) H[3 * r + a] += e[3 * a + b] * h[3 * r + b];
        }
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
            for (int a = 0; a < 3; ++a) G[3 * r + s] += H[3 * r + a] * H[3 * s + a];
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s <= r; ++s) {
            double v = G[3 * r + s];
            for (int k = 0; k < s; ++k) v -= L[3 * r + k] * L[3 * s + k];
            L[3 * r + s] = r == s ? std::sqrt(v) : v / L[3 * s + s];
        }
    std::copy(L, L + 9, hs.begin());
    // f = x h^-1 by forward substitution (h lower triangular: x_d = sum_r f_r h_rd, r >= d)
    const long n = (long)xyz.size() / 3;
    xs.resize(3 * n);
    for (long i = 0; i < n; ++i) {
        double f[3];
        for (int d = 2; d >= 0; --d) {
            double v = xyz[3 * i + d];
            for (int r = d + 1; r < 3; ++r) v -= f[r] * h[3 * r + d];
            f[d] = v / h[3 * d + d];
        }
        for (int d = 0; d < 3; ++d) {
            xs[3 * i + d] = 0;
            for (int r = 0; r < 3; ++r) xs[3 * i + d] += f[r] * L[3 * r + d];
        }
    }
}
