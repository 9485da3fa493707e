// The periodic FMM in every cell GROMACS allows (fmm_makeplan_cell, docs/periodic-cells.md
// section 9), against the Ewald sum of the same cell (fmm_ewald_cell) on fresh random inputs:
// the tolerance ladder for phi, E, U and every virial component in rectangular cells up to 1:1:3,
// the rhombic dodecahedron, the truncated octahedron and random allowed cells, neutral and
// charged, tin-foil and vacuum; physics checks that no tuning passes by accident (rock salt from
// its primitive cell and its cube, one configuration in equivalent cells, the virial as the strain
// derivative of the energy); bad cells refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

extern "C" {
#include "fmm.h"
#include "test_cells.h"
}

namespace {

uint64_t test_seed() {
    const char *e = std::getenv("FMM_TEST_SEED");
    uint64_t s = e ? std::strtoull(e, nullptr, 10) : std::random_device{}();
    std::printf("seed %llu (set FMM_TEST_SEED to repeat)\n", (unsigned long long)s);
    return s;
}

const double kSqrt2 = std::sqrt(2.0), kSqrt6 = std::sqrt(6.0);

Cell rect(double x, double y, double z) {
    return {x, 0, 0, 0, y, 0, 0, 0, z};
}
Cell dodecahedron(double d) {
    return {d, 0, 0, 0, d, 0, d / 2, d / 2, d * kSqrt2 / 2};
}
Cell octahedron(double d) {
    return {d, 0, 0, d / 3, 2 * kSqrt2 * d / 3, 0, -d / 3, kSqrt2 * d / 3, kSqrt6 * d / 3};
}
// diagonals 0.75 .. 1.3 times `scale`, off-diagonals anywhere within GROMACS's limits
Cell random_cell(std::mt19937_64 &g, double scale) {
    std::uniform_real_distribution<double> u(0.75, 1.3), o(-0.5, 0.5);
    const double ax = scale * u(g), by = scale * u(g), cz = scale * u(g);
    return {ax, 0, 0, o(g) * ax, by, 0, o(g) * ax, o(g) * by, cz};
}
double volume(const Cell &h) {
    return h[0] * h[4] * h[8];
}

// a point at fractional coordinates f of the cell
void at(const Cell &h, const double f[3], double *x) {
    for (int d = 0; d < 3; ++d) x[d] = f[0] * h[d] + f[1] * h[3 + d] + f[2] * h[6 + d];
}

// SPC/E-like water at water density (33.4 molecules per nm^3, lengths in nm): molecules at random
// places and orientations anywhere in the cell and up to one cell beyond (the plan wraps them)
void water(std::mt19937_64 &g, const Cell &h, std::vector<double> &xyz, std::vector<double> &q) {
    const long nmol = std::lround(33.4 * volume(h));
    std::uniform_real_distribution<double> f(-0.5, 1.5), s(-1, 1);
    xyz.resize(9 * nmol), q.resize(3 * nmol);
    const double oh = 0.1, ang = 109.47 * M_PI / 180;
    for (long m = 0; m < nmol; ++m) {
        double fo[3] = {f(g), f(g), f(g)}, o[3];
        at(h, fo, o);
        double u[3], v[3], nu = 0, nv = 0, uv = 0; // two random orthonormal directions
        for (int d = 0; d < 3; ++d) u[d] = s(g), v[d] = s(g), nu += u[d] * u[d];
        for (int d = 0; d < 3; ++d) u[d] /= std::sqrt(nu), uv += u[d] * v[d];
        for (int d = 0; d < 3; ++d) v[d] -= uv * u[d], nv += v[d] * v[d];
        for (int d = 0; d < 3; ++d) {
            v[d] /= std::sqrt(nv);
            xyz[9 * m + d] = o[d];
            xyz[9 * m + 3 + d] = o[d] + oh * u[d];
            xyz[9 * m + 6 + d] = o[d] + oh * (std::cos(ang) * u[d] + std::sin(ang) * v[d]);
        }
        q[3 * m] = -0.8476, q[3 * m + 1] = q[3 * m + 2] = 0.4238;
    }
}

// n charges uniform in [-1, 1] at random fractional coordinates, shifted to a net charge Q
void uniform(std::mt19937_64 &g, long n, const Cell &h, double Q, std::vector<double> &xyz,
             std::vector<double> &q) {
    std::uniform_real_distribution<double> f(-0.5, 1.5), c(-1, 1);
    xyz.resize(3 * n), q.resize(n);
    double sum = 0;
    for (long i = 0; i < n; ++i) {
        const double fr[3] = {f(g), f(g), f(g)};
        at(h, fr, &xyz[3 * i]);
        q[i] = c(g), sum += q[i];
    }
    for (auto &v : q) v += (Q - sum) / n;
}

struct Out {
    std::vector<double> phi, field;
    double energy = 0, virial[9] = {0};
};

Out ewald(const std::vector<double> &xyz, const std::vector<double> &q, const Cell &h) {
    Out r;
    const long n = (long)q.size();
    r.phi.resize(n), r.field.resize(3 * n);
    const int rc = fmm_ewald_cell(n, xyz.data(), q.data(), h.data(), 1e-12, r.phi.data(),
                                  r.field.data(), &r.energy, r.virial, 0);
    EXPECT_EQ(rc, FMM_OK) << fmm_strerror(rc);
    return r;
}

int run_fmm(const std::vector<double> &xyz, const std::vector<double> &q, const Cell &h,
            const fmm_opts &o, Out &r, const std::vector<int> *excl = nullptr) {
    fmm_plan *p = nullptr;
    int rc = fmm_makeplan_cell(&o, h.data(), &p);
    const long n = (long)q.size();
    r.phi.resize(n), r.field.resize(3 * n);
    if (!rc) rc = fmm_setpts(p, n, xyz.data());
    if (!rc && excl) rc = fmm_set_exclusions(p, (long)excl->size() / 2, excl->data());
    if (!rc) rc = fmm_execute(p, q.data(), r.phi.data(), r.field.data(), &r.energy, r.virial);
    fmm_destroy(p);
    return rc;
}

fmm_opts opts(double tol, int boundary = FMM_BOUNDARY_TINFOIL) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1, o.tolerance = tol, o.boundary = boundary;
    return o;
}

double rel(const std::vector<double> &a, const std::vector<double> &b) {
    double e = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]), m += b[i] * b[i];
    return std::sqrt(e / m);
}

// The errors of phi and E (relative 2-norms), and of U and of the largest virial component
// against 1/2 ||q|| ||phi||, the scale of the pair sums (U and W can be small by cancellation)
struct Err {
    double phi, field, energy, virial;
};
Err errors(const Out &a, const Out &b, const std::vector<double> &q) {
    double qn = 0, pn = 0, dw = 0;
    for (double v : q) qn += v * v;
    for (double v : b.phi) pn += v * v;
    for (int k = 0; k < 9; ++k) dw = std::max(dw, std::fabs(a.virial[k] - b.virial[k]));
    const double scale = 0.5 * std::sqrt(qn * pn);
    return {rel(a.phi, b.phi), rel(a.field, b.field), std::fabs(a.energy - b.energy) / scale,
            dw / scale};
}

// The vacuum boundary's outputs from the tin-foil ones (docs/periodic-cells.md section 4; phi in
// the cube's convention, cli/coulomb.c), with D and S2 the dipole and second moment of the charges
// wrapped into the brick [0,ax) x [0,by) x [0,cz) about its centre
void to_vacuum(const std::vector<double> &xyz, const std::vector<double> &q, const Cell &h,
               Out &r) {
    const long n = (long)q.size();
    double D[3] = {0, 0, 0}, S2 = 0;
    const double c[3] = {h[0] / 2, h[4] / 2, h[8] / 2};
    for (long i = 0; i < n; ++i) {
        double y[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
        for (int d = 2; d >= 0; --d) { // wrap z by c, then y by b, then x by a
            const double k = std::floor(y[d] / h[4 * d]);
            for (int e = 0; e <= d; ++e) y[e] -= k * h[3 * d + e];
        }
        for (int d = 0; d < 3; ++d)
            D[d] += q[i] * (y[d] - c[d]), S2 += q[i] * (y[d] - c[d]) * (y[d] - c[d]);
    }
    const double k = 2 * M_PI / (3 * volume(h)), d2 = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    r.energy += k * d2;
    for (long i = 0; i < n; ++i) {
        double y[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
        for (int d = 2; d >= 0; --d) {
            const double m = std::floor(y[d] / h[4 * d]);
            for (int e = 0; e <= d; ++e) y[e] -= m * h[3 * d + e];
        }
        r.phi[i] +=
            2 * k * (D[0] * (y[0] - c[0]) + D[1] * (y[1] - c[1]) + D[2] * (y[2] - c[2])) - k * S2;
        for (int d = 0; d < 3; ++d) r.field[3 * i + d] -= 2 * k * D[d];
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) r.virial[3 * a + b] -= k * (2 * D[a] * D[b] - (a == b) * d2);
}

// The library's promise is on phi (relative 2-norm) and U (against the pair-sum scale); the
// field and the virial components follow the cube's tests (tests/test_periodic.cpp), which hold
// them to 10 times the tolerance (the virial error runs about 10 times the phi error,
// docs/periodic-cells.md section 5).
void ladder(const char *name, const Cell &h, const std::vector<double> &xyz,
            const std::vector<double> &q, int boundary, std::initializer_list<double> tols) {
    Out ref = ewald(xyz, q, h);
    if (boundary == FMM_BOUNDARY_VACUUM) to_vacuum(xyz, q, h, ref);
    for (double tol : tols) {
        Out r;
        ASSERT_EQ(run_fmm(xyz, q, h, opts(tol, boundary), r), FMM_OK);
        const Err e = errors(r, ref, q);
        std::printf("%-14s N %5zu %s tol %.0e: phi %.2e field %.2e U %.2e W %.2e\n", name, q.size(),
                    boundary ? "vacuum " : "tinfoil", tol, e.phi, e.field, e.energy, e.virial);
        EXPECT_LE(e.phi, tol) << name;
        EXPECT_LE(e.energy, tol) << name;
        EXPECT_LE(e.field, 10 * tol) << name;
        EXPECT_LE(e.virial, 10 * tol) << name;
    }
}

struct Named {
    const char *name;
    Cell h;
};

// water in the standard cells and a random one, uniform charges (neutral and Q = 3) in random
// cells, water with the vacuum boundary
void all_systems(std::initializer_list<double> tols) {
    std::mt19937_64 g(test_seed());
    const Named cells[] = {{"rect 1:1:3", rect(0.9, 0.9, 2.7)},
                           {"rect 2:1.5:1", rect(1.6, 1.2, 0.8)},
                           {"dodecahedron", dodecahedron(1.6)},
                           {"octahedron", octahedron(1.7)},
                           {"random water", random_cell(g, 1.5)}};
    for (const auto &c : cells) {
        std::vector<double> xyz, q;
        water(g, c.h, xyz, q);
        ladder(c.name, c.h, xyz, q, FMM_BOUNDARY_TINFOIL, tols);
    }
    for (double Q : {0.0, 3.0}) {
        const Cell h = random_cell(g, 1.0);
        std::vector<double> xyz, q;
        uniform(g, 300, h, Q, xyz, q);
        ladder(Q ? "random Q=3" : "random Q=0", h, xyz, q, FMM_BOUNDARY_TINFOIL, tols);
    }
    { // water with one molecule replaced by an anion at its oxygen: a charged cell
        const Cell h = dodecahedron(1.5);
        std::vector<double> xyz, q;
        water(g, h, xyz, q);
        xyz.resize(xyz.size() - 6), q.resize(q.size() - 2), q.back() = -1.0;
        ladder("dodec. Q=-1", h, xyz, q, FMM_BOUNDARY_TINFOIL, tols);
    }
    const Named vac[] = {{"vacuum dodec.", dodecahedron(1.4)},
                         {"vacuum 1:1:3", rect(0.8, 0.8, 2.4)}};
    for (const auto &c : vac) {
        std::vector<double> xyz, q;
        water(g, c.h, xyz, q);
        ladder(c.name, c.h, xyz, q, FMM_BOUNDARY_VACUUM, tols);
    }
}

} // namespace

TEST(PeriodicCells, Ladder) {
    all_systems({1e-3, 1e-5});
}
TEST(PeriodicCells, SlowLadderTight) {
    all_systems({1e-6, 1e-7});
}

// Small cells at tolerance 1e-5, for each two configurations of fixed generator seeds that missed
// it before the separation ratios of fmm/images.h and two fresh ones: water with an anion in a
// 1.5 nm dodecahedron (238 charges: a tree of depth 1, every image pair at its top; missed by
// 4.2x and 3.4x with sqrt(3)/2 for every pair) and water in a 1.7 nm octahedron (378 charges;
// missed by 2.3x and 1.5x with 0.835 at the root, where its second shell of images lies).
TEST(PeriodicCells, SmallCellsAtTheTolerance) {
    const uint64_t fresh = test_seed();
    for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 4; ++k) {
            const uint64_t fixed[2][2] = {{20, 41}, {209, 162}};
            const uint64_t seed = k < 2 ? fixed[c][k] : fresh + 4 * c + k;
            std::mt19937_64 g(seed);
            const Cell h = c ? octahedron(1.7) : dodecahedron(1.5);
            std::vector<double> xyz, q;
            water(g, h, xyz, q);
            if (!c) xyz.resize(xyz.size() - 6), q.resize(q.size() - 2), q.back() = -1.0;
            char name[40];
            std::snprintf(name, sizeof name, "%s %llu", c ? "octa." : "dodec.",
                          (unsigned long long)seed);
            ladder(name, h, xyz, q, FMM_BOUNDARY_TINFOIL, {1e-5});
        }
}

// Rock salt (ions at the points of the simple cubic lattice of spacing 1, alternating charges):
// the 2-ion rhombohedral primitive cell (the FCC basis (0,1,1), (1,0,1), (1,1,0) in GROMACS's form
// by the Cholesky factor of its Gram matrix) and the 8-ion cube of edge 2 give the Madelung
// energy per ion pair, -1.7475645946332 (docs/periodic-cells.md section 1), at each tolerance.
TEST(PeriodicCells, RockSaltPrimitiveCellAndCube) {
    const double M = 1.7475645946332, r2 = std::sqrt(2.0), r3 = std::sqrt(3.0);
    const Cell prim = {r2, 0, 0, r2 / 2, std::sqrt(1.5), 0, r2 / 2, 1 / std::sqrt(6.0), 2 / r3};
    // Cl at (1, 0, 0) of the cubic frame: fractional (-1/2, 1/2, 1/2) of the FCC basis
    std::vector<double> pxyz = {0, 0, 0, 0, 0, 0}, pq = {1, -1};
    const double f[3] = {-0.5, 0.5, 0.5};
    at(prim, f, &pxyz[3]);
    std::vector<double> cxyz, cq;
    for (int k = 0; k < 8; ++k) {
        const int i = k & 1, j = k >> 1 & 1, l = k >> 2;
        cxyz.insert(cxyz.end(), {(double)i, (double)j, (double)l});
        cq.push_back((i + j + l) & 1 ? -1.0 : 1.0);
    }
    for (double tol : {1e-3, 1e-5, 1e-7}) {
        Out a, b;
        ASSERT_EQ(run_fmm(pxyz, pq, prim, opts(tol), a), FMM_OK);
        ASSERT_EQ(run_fmm(cxyz, cq, rect(2, 2, 2), opts(tol), b), FMM_OK);
        const double up = a.energy, uc = b.energy / 4;
        std::printf("tol %.0e: primitive %.13f cube %.13f exact %.13f\n", tol, up, uc, -M);
        EXPECT_LE(std::fabs(up + M), tol * M);
        EXPECT_LE(std::fabs(uc + M), tol * M);
    }
}

// One configuration in three bases of the dodecahedron's lattice (c, c - a, c - a - b, all within
// GROMACS's limits) gives one energy, one set of forces and one virial.
TEST(PeriodicCells, EquivalentCells) {
    std::mt19937_64 g(test_seed());
    const Cell h = dodecahedron(1.6);
    Cell h1 = h, h2 = h;
    for (int d = 0; d < 3; ++d) h1[6 + d] -= h[d], h2[6 + d] -= h[d] + h[3 + d];
    std::vector<double> xyz, q;
    water(g, h, xyz, q);
    const double tol = 1e-6;
    Out r[3];
    const Cell *cells[3] = {&h, &h1, &h2};
    for (int k = 0; k < 3; ++k) ASSERT_EQ(run_fmm(xyz, q, *cells[k], opts(tol), r[k]), FMM_OK);
    for (int k = 1; k < 3; ++k) {
        const Err e = errors(r[k], r[0], q);
        std::printf("basis %d: phi %.2e field %.2e U %.2e W %.2e\n", k, e.phi, e.field, e.energy,
                    e.virial);
        EXPECT_LE(e.phi, tol);
        EXPECT_LE(e.field, tol);
        EXPECT_LE(e.energy, tol);
        EXPECT_LE(e.virial, tol);
    }
}

// The virial is the strain derivative of the energy, W_ab = -dU/d eps_ab, for positions and cell
// strained together (every component, shear included), by central differences of the FMM's own
// energy in one leaf (depth 0: the near images summed directly, the far ones through the table,
// both smooth under strain): a neutral set in a random cell, a charged one in the octahedron.
TEST(PeriodicCells, VirialIsTheStrainDerivative) {
    std::mt19937_64 g(test_seed());
    const Cell cells[] = {random_cell(g, 1.0), octahedron(1.1)};
    for (int c = 0; c < 2; ++c) {
        const Cell &h = cells[c];
        const double Q = c ? 2.0 : 0.0;
        {
            std::vector<double> xyz, q, xs;
            uniform(g, 40, h, Q, xyz, q);
            fmm_opts o = opts(1e-6);
            o.order = 30, o.depth = 0;
            Out r;
            ASSERT_EQ(run_fmm(xyz, q, h, o, r), FMM_OK);
            double wn = 0;
            for (double v : r.virial) wn += v * v;
            wn = std::sqrt(wn);
            const double step = 1e-5;
            for (int k = 0; k < 9; ++k) {
                double U[2];
                for (int s = 0; s < 2; ++s) {
                    double e[9] = {0};
                    e[k] = s ? -step : step;
                    Cell hs;
                    strained(h, xyz, e, hs, xs);
                    Out rs;
                    ASSERT_EQ(run_fmm(xs, q, hs, o, rs), FMM_OK);
                    U[s] = rs.energy;
                }
                const double fd = -(U[0] - U[1]) / (2 * step);
                std::printf("Q %g W[%d] %.10f strain derivative %.10f\n", Q, k, r.virial[k], fd);
                EXPECT_LE(std::fabs(r.virial[k] - fd), 1e-7 * wn) << k;
            }
            EXPECT_NEAR(r.virial[0] + r.virial[4] + r.virial[8], r.energy, 1e-9 * wn);
        }
    }
}

// Exclusions leave out the minimum image of each pair in the cell: the FMM with the water's
// intramolecular pairs excluded against Ewald minus those pairs' nearest-image terms.
TEST(PeriodicCells, ExclusionsByTheMinimumImage) {
    std::mt19937_64 g(test_seed());
    const Cell h = octahedron(1.5);
    std::vector<double> xyz, q;
    water(g, h, xyz, q);
    const long n = (long)q.size();
    std::vector<int> pairs;
    for (long m = 0; m < n / 3; ++m)
        pairs.insert(pairs.end(), {(int)(3 * m), (int)(3 * m + 1), (int)(3 * m), (int)(3 * m + 2),
                                   (int)(3 * m + 1), (int)(3 * m + 2)});
    Out ref = ewald(xyz, q, h);
    for (size_t k = 0; k < pairs.size(); k += 2) {
        const int i = pairs[k], j = pairs[k + 1];
        double best[3] = {0, 0, 0}, b2 = INFINITY; // the nearest image by a search over shifts
        for (int a = -2; a <= 2; ++a)
            for (int b = -2; b <= 2; ++b)
                for (int c = -2; c <= 2; ++c) {
                    double d[3], d2 = 0;
                    for (int e = 0; e < 3; ++e) {
                        d[e] = xyz[3 * i + e] - xyz[3 * j + e] + a * h[e] + b * h[3 + e] +
                               c * h[6 + e];
                        d2 += d[e] * d[e];
                    }
                    if (d2 < b2) b2 = d2, std::copy(d, d + 3, best);
                }
        const double r = std::sqrt(b2), r3 = r * b2;
        ref.phi[i] -= q[j] / r, ref.phi[j] -= q[i] / r, ref.energy -= q[i] * q[j] / r;
        for (int e = 0; e < 3; ++e) {
            ref.field[3 * i + e] -= q[j] * best[e] / r3,
                ref.field[3 * j + e] += q[i] * best[e] / r3;
            for (int f = 0; f < 3; ++f)
                ref.virial[3 * e + f] -= q[i] * q[j] * best[e] * best[f] / r3;
        }
    }
    Out r;
    ASSERT_EQ(run_fmm(xyz, q, h, opts(1e-6), r, &pairs), FMM_OK);
    const Err e = errors(r, ref, q);
    std::printf("exclusions: phi %.2e field %.2e U %.2e W %.2e\n", e.phi, e.field, e.energy,
                e.virial);
    EXPECT_LE(e.phi, 1e-6);
    EXPECT_LE(e.energy, 1e-6);
    EXPECT_LE(e.field, 1e-5);
    EXPECT_LE(e.virial, 1e-5);
}

// The image M2L operators that a plan keeps across fmm_setpts calls (fmm/images.h): one plan given
// sets of different sizes (trees of different depths, so operators gained and dropped) in turn
// gives what a fresh plan gives for each set.
TEST(PeriodicCells, OperatorsKeptAcrossSetpts) {
    std::mt19937_64 g(test_seed());
    const Cell h = dodecahedron(1.6);
    std::vector<double> xyz[3], q[3];
    const long n[3] = {200, 1500, 200};
    for (int k = 0; k < 3; ++k) uniform(g, n[k], h, 0.0, xyz[k], q[k]);
    fmm_plan *p = nullptr;
    const fmm_opts o = opts(1e-4);
    ASSERT_EQ(fmm_makeplan_cell(&o, h.data(), &p), FMM_OK);
    for (int k = 0; k < 3; ++k) {
        Out r, fresh;
        r.phi.resize(n[k]), r.field.resize(3 * n[k]);
        ASSERT_EQ(fmm_setpts(p, n[k], xyz[k].data()), FMM_OK);
        ASSERT_EQ(fmm_execute(p, q[k].data(), r.phi.data(), r.field.data(), &r.energy, r.virial),
                  FMM_OK);
        ASSERT_EQ(run_fmm(xyz[k], q[k], h, o, fresh), FMM_OK);
        const Err e = errors(r, fresh, q[k]);
        std::printf("set %d (N %ld): phi %.2e field %.2e U %.2e W %.2e\n", k, n[k], e.phi, e.field,
                    e.energy, e.virial);
        EXPECT_LE(std::max(std::max(e.phi, e.field), std::max(e.energy, e.virial)), 1e-14);
    }
    fmm_destroy(p);
}

// A compact set in a cell far larger than it (a droplet in a vacuum-sized box): 300 charges in
// [-1, 1]^3 (negative coordinates too) in a 1:1:3 brick, the dodecahedron and a random cell, each
// 1e12 times the set, against Ewald. The tin-foil translation that keeps lattices off the tree's
// box corners once moved the charges by 0.118 of the brick first, which rounded their coordinates
// to 1e-5 (phi 1e-3 off); it is now a fraction of the set's own extent. The reference gets the set
// moved by (1, 1, 1) into the brick (tin-foil sums do not depend on a common translation), as
// fmm_ewald_cell wraps positions into the brick, which would round away negative ones.
TEST(PeriodicCells, CompactSetInAHugeCell) {
    std::mt19937_64 g(test_seed());
    const double s = 1e12, tol = 1e-6;
    const Named cells[] = {{"rect 1:1:3 1e12", rect(s, s, 3 * s)},
                           {"dodec. 1e12", dodecahedron(s)},
                           {"random 1e12", random_cell(g, s)}};
    for (const auto &c : cells) {
        std::vector<double> xyz, q;
        uniform(g, 300, rect(2, 2, 2), 0.0, xyz, q); // in [-1, 3]^3
        for (double &v : xyz) v = 0.5 * v + 0.5;     // in [0, 2]^3, exactly
        Out ref = ewald(xyz, q, c.h), r;
        for (double &v : xyz) v -= 1.0;
        ASSERT_EQ(run_fmm(xyz, q, c.h, opts(tol), r), FMM_OK);
        const Err e = errors(r, ref, q);
        std::printf("%-16s phi %.2e field %.2e U %.2e W %.2e\n", c.name, e.phi, e.field, e.energy,
                    e.virial);
        EXPECT_LE(e.phi, tol) << c.name;
        EXPECT_LE(e.energy, tol) << c.name;
        EXPECT_LE(e.field, 10 * tol) << c.name;
        EXPECT_LE(e.virial, 10 * tol) << c.name;
    }
}

// Every bad cell is refused with FMM_ERR_BOX (FMM_ERR_ARG for NULL or a plan that is not
// periodic), and the plan pointer is left NULL.
TEST(PeriodicCells, BadCellsAreRefused) {
    const double nan = std::nan("");
    const Cell bad[] = {{1, 0.1, 0, 0, 1, 0, 0, 0, 1},   // a_y != 0
                        {1, 0, 0, 0, 1, 0.1, 0, 0, 1},   // b_z != 0
                        {1, 0, 0, 0, 1, 0, 0, 0, -1},    // cz < 0
                        {0, 0, 0, 0, 1, 0, 0, 0, 1},     // ax = 0
                        {1, 0, 0, 0.6, 1, 0, 0, 0, 1},   // |bx| > ax/2 (beyond the margin 1.005)
                        {1, 0, 0, 0, 1, 0, -0.51, 0, 1}, // |cx| > ax/2
                        {1, 0, 0, 0, 1, 0, 0, 0.6, 1},   // |cy| > by/2
                        {1, 0, 0, 0, nan, 0, 0, 0, 1},   // not finite
                        {1, 0, 0, 0, 1, 0, 0, 0, INFINITY}};
    fmm_opts o = opts(1e-4);
    for (const Cell &h : bad) {
        fmm_plan *p = reinterpret_cast<fmm_plan *>(&o);
        EXPECT_EQ(fmm_makeplan_cell(&o, h.data(), &p), FMM_ERR_BOX);
        EXPECT_EQ(p, nullptr);
    }
    const double box_bad[3] = {1, -2, 1};
    fmm_plan *p = nullptr;
    EXPECT_EQ(fmm_makeplan(&o, box_bad, &p), FMM_ERR_BOX);
    EXPECT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_ERR_BOX);
    const Cell good = dodecahedron(1.0);
    EXPECT_EQ(fmm_makeplan_cell(&o, nullptr, &p), FMM_ERR_ARG);
    EXPECT_EQ(fmm_makeplan_cell(nullptr, good.data(), &p), FMM_ERR_ARG);
    EXPECT_EQ(fmm_makeplan_cell(&o, good.data(), nullptr), FMM_ERR_ARG);
    o.periodic = 0;
    EXPECT_EQ(fmm_makeplan_cell(&o, good.data(), &p), FMM_ERR_ARG);
    o.periodic = 1;
    // within GROMACS's margin: accepted; the info reports the cell and its near set
    const Cell edge = {1, 0, 0, 0.5025, 1, 0, -0.5, 0.5, 1};
    ASSERT_EQ(fmm_makeplan_cell(&o, edge.data(), &p), FMM_OK);
    fmm_info info;
    ASSERT_EQ(fmm_get_info(p, &info), FMM_OK);
    EXPECT_GT(info.images, 27);
    for (int k = 0; k < 9; ++k) EXPECT_EQ(info.cell[k], edge[k]);
    fmm_destroy(p);
#ifdef FMM_HAVE_CUDA
    o.device = FMM_DEVICE_CUDA; // CUDA plans take cubes for now
    EXPECT_EQ(fmm_makeplan_cell(&o, good.data(), &p), FMM_ERR_BOX);
#endif
}
