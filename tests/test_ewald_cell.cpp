// The Ewald reference in every periodic cell GROMACS allows (fmm_ewald_cell, pbc/ewald.c): checks
// that no choice of parameters passes by accident. The sum does not depend on its splitting; the
// virial is the strain derivative of the energy (shear included); rock salt gives one Madelung
// constant from its cube and from its primitive cell; one configuration in equivalent bases, and a
// cell against a supercell of it, give one energy; the error stays within the tolerance; the
// outputs are bitwise the same for any thread count; bad input is refused with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

extern "C" {
#include "fmm.h"
#include "test_cells.h"
#include "pbc/cell.h"
#include "pbc/ewald.h"
}
#include "test_env.h"

namespace {

const double kSqrt2 = std::sqrt(2.0), kSqrt3 = std::sqrt(3.0), kSqrt6 = std::sqrt(6.0);

Cell dodecahedron(double d) {
    return {d, 0, 0, 0, d, 0, d / 2, d / 2, d * kSqrt2 / 2};
}
Cell octahedron(double d) {
    return {d, 0, 0, d / 3, 2 * kSqrt2 * d / 3, 0, -d / 3, kSqrt2 * d / 3, kSqrt6 * d / 3};
}
// A random cell within GROMACS's limits: diagonals 0.75 .. 1.3, off-diagonals up to `skew` times
// the limit (ax/2 for bx and cx, by/2 for cy).
Cell random_cell(std::mt19937_64 &g, double skew) {
    std::uniform_real_distribution<double> u(0.75, 1.3), o(-skew / 2, skew / 2);
    const double ax = u(g), by = u(g), cz = u(g);
    return {ax, 0, 0, o(g) * ax, by, 0, o(g) * ax, o(g) * by, cz};
}

struct Out {
    std::vector<double> phi, field;
    double energy = 0, virial[9] = {0};
};

// fmm_ewald_cell (split 1) or the internal sum at another splitting
Out ewald(const std::vector<double> &xyz, const std::vector<double> &q, const Cell &h,
          double tol = 1e-12, double split = 1.0, int threads = 0) {
    Out r;
    const long n = (long)q.size();
    r.phi.resize(n), r.field.resize(3 * n);
    const int rc = split == 1.0
                       ? fmm_ewald_cell(n, xyz.data(), q.data(), h.data(), tol, r.phi.data(),
                                        r.field.data(), &r.energy, r.virial, threads)
                       : pbc_ewald(n, xyz.data(), q.data(), h.data(), tol, split, r.phi.data(),
                                   r.field.data(), &r.energy, r.virial, threads);
    EXPECT_EQ(rc, FMM_OK) << fmm_strerror(rc);
    return r;
}

// n charges uniform in [-1, 1] at random fractional coordinates of the cell (and up to one cell
// beyond, which the sum wraps), shifted to a net charge Q
void random_set(std::mt19937_64 &g, long n, const Cell &h, double Q, std::vector<double> &xyz,
                std::vector<double> &q) {
    std::uniform_real_distribution<double> f(-0.5, 1.5), c(-1, 1);
    xyz.assign(3 * n, 0.0), q.resize(n);
    double s = 0;
    for (long i = 0; i < n; ++i) {
        for (int r = 0; r < 3; ++r) {
            const double t = f(g);
            for (int d = 0; d < 3; ++d) xyz[3 * i + d] += t * h[3 * r + d];
        }
        q[i] = c(g), s += q[i];
    }
    for (auto &v : q) v += (Q - s) / n;
}

double rel(const std::vector<double> &a, const std::vector<double> &b) {
    double e = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]), m += b[i] * b[i];
    return std::sqrt(e / m);
}

// The largest of the relative differences of phi and E (2-norms) and of U and W against
// 1/2 ||q|| ||phi||, the scale of the pair sums: an error of relative size eps in phi can move U
// by that much times eps (U itself, and W, can be small by cancellation).
double worst(const Out &a, const Out &b, const std::vector<double> &q) {
    double qn = 0, pn = 0, dw = 0;
    for (double v : q) qn += v * v;
    for (double v : b.phi) pn += v * v;
    for (int k = 0; k < 9; ++k) dw += (a.virial[k] - b.virial[k]) * (a.virial[k] - b.virial[k]);
    const double scale = 0.5 * std::sqrt(qn * pn);
    return std::max({rel(a.phi, b.phi), rel(a.field, b.field),
                     std::fabs(a.energy - b.energy) / scale, std::sqrt(dw) / scale});
}

} // namespace

// Two splittings of the sum (the real-space cut-off at its largest and at 0.7 of it: alpha and
// the reciprocal range 1.4 times as large) give one result: the real and reciprocal parts move by
// far more than the truncation error, so a wrong image search, reciprocal range or constant would
// show. Cells: dodecahedron, octahedron, a 1:1:3 brick and random allowed cells; neutral and Q = 2.
TEST(EwaldCell, SplittingDoesNotMatter) {
    std::mt19937_64 g(test_seed());
    const Cell cells[] = {dodecahedron(1.1), octahedron(0.9), Cell{0.7, 0, 0, 0, 0.7, 0, 0, 0, 2.1},
                          random_cell(g, 1.0), random_cell(g, 1.0)};
    for (const Cell &h : cells)
        for (double Q : {0.0, 2.0}) {
            std::vector<double> xyz, q;
            random_set(g, 80, h, Q, xyz, q);
            const Out a = ewald(xyz, q, h), b = ewald(xyz, q, h, 1e-12, 0.7);
            const double d = worst(a, b, q);
            std::printf("cell (%.4f %.4f %.4f %.4f %.4f %.4f) Q %g: largest difference %.2e\n",
                        h[0], h[3], h[4], h[6], h[7], h[8], Q, d);
            EXPECT_LT(d, 2e-12);
        }
}

// The error control holds for skewed cells: at each tolerance of the ladder, phi, E, U and W
// against the sum at 1e-12 (other splitting) within the tolerance.
TEST(EwaldCell, ErrorWithinTheTolerance) {
    std::mt19937_64 g(test_seed());
    const Cell cells[] = {dodecahedron(1.3), octahedron(1.0), random_cell(g, 1.0)};
    for (const Cell &h : cells) {
        std::vector<double> xyz, q;
        random_set(g, 100, h, 1.0, xyz, q);
        const Out ref = ewald(xyz, q, h, 1e-12, 0.7);
        for (double tol : {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10}) {
            const double d = worst(ewald(xyz, q, h, tol), ref, q);
            std::printf("cell (%.3f %.3f %.3f) tolerance %.0e: error %.2e\n", h[3], h[6], h[7], tol,
                        d);
            EXPECT_LT(d, tol);
        }
    }
}

// W_ab = -dU/d eps_ab with positions and cell strained together, every one of the nine
// components by central differences of the energy (4 points), neutral and charged; and
// tr W = U (the energy scales as 1/length).
TEST(EwaldCell, VirialIsTheStrainDerivative) {
    std::mt19937_64 g(test_seed());
    const Cell cells[] = {random_cell(g, 0.9), dodecahedron(1.2)};
    for (const Cell &h : cells)
        for (double Q : {0.0, 2.0}) {
            std::vector<double> xyz, q, xs;
            random_set(g, 40, h, Q, xyz, q);
            const Out r = ewald(xyz, q, h);
            double wn = 0;
            for (double v : r.virial) wn += v * v;
            wn = std::sqrt(wn);
            const double step = 1e-3;
            for (int k = 0; k < 9; ++k) {
                double U[4];
                for (int s = 0; s < 4; ++s) {
                    double e[9] = {0};
                    e[k] = step * (s < 2 ? (s ? -1 : 1) : (s == 2 ? 2 : -2));
                    Cell hs;
                    strained(h, xyz, e, hs, xs);
                    ASSERT_EQ(fmm_ewald_cell((long)q.size(), xs.data(), q.data(), hs.data(), 1e-12,
                                             nullptr, nullptr, &U[s], nullptr, 0),
                              FMM_OK);
                }
                const double fd = -(8 * (U[0] - U[1]) - (U[2] - U[3])) / (12 * step);
                std::printf("Q %g W[%d] %.12f difference %.12f (/|W| %.1e)\n", Q, k, r.virial[k],
                            fd, std::fabs(r.virial[k] - fd) / wn);
                EXPECT_NEAR(r.virial[k], fd, 1e-10 * wn) << k;
            }
            // the truncation errors at tolerance 1e-12, of W's terms and of U's
            EXPECT_NEAR(r.virial[0] + r.virial[4] + r.virial[8], r.energy,
                        1e-11 * (wn + std::fabs(r.energy)));
        }
}

// Rock salt, nearest-neighbour distance d: the 8-ion cube of side 2d gives U = -4 M / d, the
// 2-ion primitive cell (the FCC basis (0,1,1), (1,0,1), (1,1,0) times d in GROMACS's form: the
// Cholesky factor of its Gram matrix, rows (sqrt2, 0, 0), (1/sqrt2, sqrt(3/2), 0),
// (1/sqrt2, 1/sqrt6, 2/sqrt3)) gives U = -M / d, both with M = 1.7475645946332.
TEST(EwaldCell, RockSaltMadelungFromCubeAndPrimitiveCell) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.3, 3.0), t(-5, 5);
    const double d = u(g), o[3] = {t(g), t(g), t(g)}, M = 1.7475645946332;
    std::vector<double> xyz, q;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            for (int k = 0; k < 2; ++k) {
                xyz.insert(xyz.end(), {d * i + o[0], d * j + o[1], d * k + o[2]});
                q.push_back((i + j + k) % 2 ? -1.0 : 1.0);
            }
    const Cell cube = {2 * d, 0, 0, 0, 2 * d, 0, 0, 0, 2 * d};
    const Cell prim = {d * kSqrt2, 0,          0,          d / kSqrt2,    d * kSqrt3 / kSqrt2,
                       0,          d / kSqrt2, d / kSqrt6, d * 2 / kSqrt3};
    const double Mc = -ewald(xyz, q, cube).energy * d / 4;
    // Na at the origin, Cl at (a + b + c) / 2 = d (1, 1, 1) in the FCC basis
    std::vector<double> xp = {o[0], o[1], o[2]};
    for (int e = 0; e < 3; ++e) xp.push_back(o[e] + 0.5 * (prim[e] + prim[3 + e] + prim[6 + e]));
    const double Mp = -ewald(xp, {1.0, -1.0}, prim).energy * d;
    std::printf("d %.6f: Madelung constant from the cube %.13f, from the primitive cell %.13f\n", d,
                Mc, Mp);
    EXPECT_NEAR(Mc, M, 2e-12);
    EXPECT_NEAR(Mp, M, 2e-12);
}

// One configuration in three bases of the dodecahedron's lattice (c, c - a, c - a - b: all within
// GROMACS's limits) gives one result; and the rectangular supercell (a, b, 2c - a - b) =
// (d, d, sqrt2 d) holding the configuration and its copy shifted by c gives twice the energy and
// the same potentials, fields and (twice) the virial: the triclinic and the rectangular sums agree.
TEST(EwaldCell, EquivalentCellsGiveOneResult) {
    std::mt19937_64 g(test_seed());
    const double d = std::uniform_real_distribution<double>(0.8, 1.6)(g);
    const Cell h = dodecahedron(d);
    std::vector<double> xyz, q;
    random_set(g, 60, h, 1.0, xyz, q);
    const Out ref = ewald(xyz, q, h);
    Cell t1 = h, t2 = h;
    for (int e = 0; e < 3; ++e) t1[6 + e] -= h[e], t2[6 + e] -= h[e] + h[3 + e];
    for (const Cell &t : {t1, t2}) {
        const double diff = worst(ewald(xyz, q, t), ref, q);
        std::printf("basis c = (%.4f %.4f %.4f): largest difference %.2e\n", t[6], t[7], t[8],
                    diff);
        EXPECT_LT(diff, 1e-12);
    }
    const long n = (long)q.size();
    std::vector<double> x2 = xyz, q2 = q;
    x2.resize(6 * n), q2.resize(2 * n);
    for (long i = 0; i < n; ++i) {
        for (int e = 0; e < 3; ++e) x2[3 * (n + i) + e] = xyz[3 * i + e] + h[6 + e];
        q2[n + i] = q[i];
    }
    const Cell super = {d, 0, 0, 0, d, 0, 0, 0, kSqrt2 * d};
    const Out s = ewald(x2, q2, super);
    Out half = s;
    half.phi.resize(n), half.field.resize(3 * n), half.energy /= 2;
    for (double &w : half.virial) w /= 2;
    const double diff = worst(half, ref, q);
    std::printf("rectangular supercell: largest difference %.2e\n", diff);
    EXPECT_LT(diff, 1e-12);
    const std::vector<double> copy(s.phi.begin() + n, s.phi.end());
    EXPECT_LT(rel(copy, half.phi), 1e-12) << "the copy's potentials";
}

// A rectangular cell through fmm_ewald_cell is fmm_ewald, bitwise; and the 1:1:3 brick holding
// three copies of a cube's configuration gives three times its energy.
TEST(EwaldCell, RectangularCellIsFmmEwald) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.6, 1.6);
    const double box[3] = {u(g), u(g), u(g)};
    const Cell h = {box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]};
    std::vector<double> xyz, q;
    random_set(g, 120, h, -1.0, xyz, q);
    const Out a = ewald(xyz, q, h);
    Out b = a;
    ASSERT_EQ(fmm_ewald((long)q.size(), xyz.data(), q.data(), box, 1e-12, b.phi.data(),
                        b.field.data(), &b.energy, b.virial, 0),
              FMM_OK);
    EXPECT_TRUE(a.phi == b.phi && a.field == b.field && a.energy == b.energy &&
                std::equal(a.virial, a.virial + 9, b.virial));
    const double L = box[0];
    const Cell cube = {L, 0, 0, 0, L, 0, 0, 0, L}, slab = {L, 0, 0, 0, L, 0, 0, 0, 3 * L};
    random_set(g, 50, cube, 0.5, xyz, q);
    std::vector<double> x3, q3;
    for (int c = 0; c < 3; ++c)
        for (size_t i = 0; i < q.size(); ++i) {
            x3.insert(x3.end(), {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2] + c * L});
            q3.push_back(q[i]);
        }
    const double U1 = ewald(xyz, q, cube).energy, U3 = ewald(x3, q3, slab).energy;
    std::printf("cube U %.15g, 1:1:3 brick U / 3 %.15g\n", U1, U3 / 3);
    EXPECT_NEAR(U3 / 3, U1, 1e-11 * std::fabs(U1));
}

// The same input gives bitwise the same outputs at 1, 2 and 3 threads (every sum over particles
// or wave vectors adds in index order).
TEST(EwaldCell, BitwiseTheSameForAnyThreadCount) {
    std::mt19937_64 g(test_seed());
    const Cell h = octahedron(1.1);
    std::vector<double> xyz, q;
    random_set(g, 400, h, 1.0, xyz, q);
    const Out one = ewald(xyz, q, h, 1e-8, 1.0, 1);
    for (int threads : {2, 3}) {
        const Out r = ewald(xyz, q, h, 1e-8, 1.0, threads);
        EXPECT_TRUE(r.phi == one.phi && r.field == one.field && r.energy == one.energy &&
                    std::equal(r.virial, r.virial + 9, one.virial))
            << threads << " threads";
    }
    // the rectangular path too
    const double box[3] = {1.1, 0.9, 1.3};
    double W1[9], W[9], U1, U;
    ASSERT_EQ(
        fmm_ewald((long)q.size(), xyz.data(), q.data(), box, 1e-8, nullptr, nullptr, &U1, W1, 1),
        FMM_OK);
    for (int threads : {2, 3}) {
        ASSERT_EQ(fmm_ewald((long)q.size(), xyz.data(), q.data(), box, 1e-8, nullptr, nullptr, &U,
                            W, threads),
                  FMM_OK);
        EXPECT_TRUE(U == U1 && std::equal(W, W + 9, W1)) << threads << " threads";
    }
}

// pbc/cell.h's searches: the shortest lattice vector (not a row, not a diagonal entry), and the
// brick shifts against a brute-force search over a wide range of n.
TEST(EwaldCell, CellSearches) {
    pbc_cell c;
    ASSERT_EQ(pbc_cell_init(&c, dodecahedron(1.0).data()), FMM_OK);
    EXPECT_NEAR(pbc_cell_shortest(&c), 1.0, 1e-15); // cz = 0.707 is no lattice vector's length
    const Cell thin = {1, 0, 0, 0, 1, 0, 0.5, 0.5, 1e-3}; // 2c - a - b = (0, 0, 2e-3)
    ASSERT_EQ(pbc_cell_init(&c, thin.data()), FMM_OK);
    EXPECT_NEAR(pbc_cell_shortest(&c), 2e-3, 1e-15);
    const Cell rect = {1, 0, 0, 0, 2, 0, 0, 0, 3};
    ASSERT_EQ(pbc_cell_init(&c, rect.data()), FMM_OK);
    EXPECT_EQ(pbc_cell_brick_shifts(&c, 0.5, nullptr, 0), 1); // n = 0 alone
    EXPECT_EQ(pbc_cell_brick_shifts(&c, 0.0, nullptr, 0), -1);
    std::mt19937_64 g(test_seed());
    for (int t = 0; t < 20; ++t) {
        const Cell h = random_cell(g, 1.0);
        ASSERT_EQ(pbc_cell_init(&c, h.data()), FMM_OK);
        const double reach = std::uniform_real_distribution<double>(0.1, 1.0)(g);
        std::vector<int> n(3 * 4096);
        const long k = pbc_cell_brick_shifts(&c, reach, n.data(), 4096);
        ASSERT_GT(k, 0);
        ASSERT_LE(k, 4096);
        long brute = 0;
        for (int i = -8; i <= 8; ++i)
            for (int j = -8; j <= 8; ++j)
                for (int l = -8; l <= 8; ++l) {
                    const int m[3] = {i, j, l};
                    double R[3], d2 = 0;
                    pbc_cell_vector(&c, m, R);
                    for (int e = 0; e < 3; ++e) {
                        const double v = std::max(std::fabs(R[e]) - 0.5 * h[4 * e], 0.0);
                        d2 += v * v;
                    }
                    if (d2 >= reach * reach) continue;
                    ++brute;
                    bool found = false;
                    for (long s = 0; s < k && !found; ++s)
                        found = n[3 * s] == i && n[3 * s + 1] == j && n[3 * s + 2] == l;
                    EXPECT_TRUE(found) << i << " " << j << " " << l;
                }
        EXPECT_EQ(brute, k);
    }
}

// Every error code, and nothing written on failure (the outputs keep their sentinel).
TEST(EwaldCell, BadInputIsRefusedAndWritesNothing) {
    const Cell h = dodecahedron(1.0);
    std::vector<double> xyz = {0.1, 0.2, 0.3, 0.6, 0.5, 0.4}, q = {1.0, -1.0};
    const double S = 12345.0;
    std::vector<double> phi(2, S), field(6, S);
    double U = S, W[9];
    std::fill(W, W + 9, S);
    auto call = [&](long n, const double *x, const double *c, const double *cell, double tol,
                    int threads) {
        return fmm_ewald_cell(n, x, c, cell, tol, phi.data(), field.data(), &U, W, threads);
    };
    auto untouched = [&] {
        return std::all_of(phi.begin(), phi.end(), [&](double v) { return v == S; }) &&
               std::all_of(field.begin(), field.end(), [&](double v) { return v == S; }) &&
               U == S && std::all_of(W, W + 9, [&](double v) { return v == S; });
    };
    EXPECT_EQ(call(0, xyz.data(), q.data(), h.data(), 1e-8, 0), FMM_ERR_NPTS);
    EXPECT_EQ(call(2, nullptr, q.data(), h.data(), 1e-8, 0), FMM_ERR_ARG);
    EXPECT_EQ(call(2, xyz.data(), nullptr, h.data(), 1e-8, 0), FMM_ERR_ARG);
    EXPECT_EQ(call(2, xyz.data(), q.data(), nullptr, 1e-8, 0), FMM_ERR_ARG);
    for (double split : {0.0, -0.5, 1.5, (double)NAN})
        EXPECT_EQ(pbc_ewald(2, xyz.data(), q.data(), h.data(), 1e-8, split, nullptr, nullptr, &U,
                            nullptr, 0),
                  FMM_ERR_ARG);
    for (double tol : {1e-2, 1e-13, (double)NAN})
        EXPECT_EQ(call(2, xyz.data(), q.data(), h.data(), tol, 0), FMM_ERR_TOLERANCE);
    EXPECT_EQ(call(2, xyz.data(), q.data(), h.data(), 1e-8, -1), FMM_ERR_THREADS);
    EXPECT_EQ(call(2, xyz.data(), q.data(), h.data(), 1e-8, FMM_THREADS_MAX + 1), FMM_ERR_THREADS);
    // cells: an upper entry, an off-diagonal beyond GROMACS's limit, a diagonal 0 or < 0, NaN, Inf
    const std::pair<int, double> bad[] = {{1, 0.1},  {2, 0.1}, {5, 0.1},  {3, 0.51}, {6, -0.51},
                                          {7, 0.51}, {0, 0.0}, {4, -1.0}, {8, NAN},  {6, INFINITY}};
    for (const auto &b : bad) {
        Cell c = h;
        c[b.first] = b.second;
        EXPECT_EQ(call(2, xyz.data(), q.data(), c.data(), 1e-8, 0), FMM_ERR_BOX)
            << "entry " << b.first << " = " << b.second;
    }
    const double box_bad[3] = {1.0, -1.0, 1.0};
    EXPECT_EQ(fmm_ewald(2, xyz.data(), q.data(), box_bad, 1e-8, nullptr, nullptr, &U, nullptr, 0),
              FMM_ERR_BOX);
    std::vector<double> xn = xyz, qn = q;
    xn[4] = NAN, qn[1] = INFINITY;
    EXPECT_EQ(call(2, xn.data(), q.data(), h.data(), 1e-8, 0), FMM_ERR_NONFINITE);
    EXPECT_EQ(call(2, xyz.data(), qn.data(), h.data(), 1e-8, 0), FMM_ERR_NONFINITE);
    // a cell of edge 2^-600: phi ~ 2^600 fits, E ~ 2^1200 does not, and phi is not written either
    Cell tiny = h;
    std::vector<double> xt = xyz;
    for (double &v : tiny) v = std::ldexp(v, -600);
    for (double &v : xt) v = std::ldexp(v, -600);
    EXPECT_EQ(call(2, xt.data(), q.data(), tiny.data(), 1e-8, 0), FMM_ERR_RANGE);
    EXPECT_EQ(fmm_ewald_cell(2, xt.data(), q.data(), tiny.data(), 1e-8, phi.data(), nullptr,
                             nullptr, nullptr, 0),
              FMM_OK);
    EXPECT_GT(std::fabs(phi[0]), std::ldexp(1.0, 590));
    std::fill(phi.begin(), phi.end(), S);
    // a position some 2^1030 cell lengths away: its place in the cell is beyond double's range
    std::vector<double> xf = xyz;
    xf[0] = 1e300;
    Cell small = h;
    for (double &v : small) v *= 1e-20;
    EXPECT_EQ(call(2, xf.data(), q.data(), small.data(), 1e-8, 0), FMM_ERR_RANGE);
    // cells so thin that the reciprocal sum would need more than 2^28 wave vectors, rectangular
    // and skewed (2c - a - b = (0, 0, 2e-9))
    const Cell flat = {1, 0, 0, 0, 1e-9, 0, 0, 0, 1e-9}, sheet = {1, 0, 0, 0, 1, 0, 0.5, 0.5, 1e-9};
    const double box_flat[3] = {1, 1e-9, 1e-9};
    EXPECT_EQ(call(2, xyz.data(), q.data(), flat.data(), 1e-8, 0), FMM_ERR_NOMEM);
    EXPECT_EQ(call(2, xyz.data(), q.data(), sheet.data(), 1e-8, 0), FMM_ERR_NOMEM);
    EXPECT_EQ(
        fmm_ewald(2, xyz.data(), q.data(), box_flat, 1e-8, phi.data(), field.data(), &U, W, 0),
        FMM_ERR_NOMEM);
    EXPECT_TRUE(untouched());
}
