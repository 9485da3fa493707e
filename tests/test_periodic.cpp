// Periodic cubic boxes against the Ewald sum (tin-foil, neutralising background):
// Madelung constants, random neutral and charged sets over a range of orders, the tolerance
// ladder, translation invariance, the vacuum boundary, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "fmm.h"
#include "pointsets.h"

namespace {

uint64_t test_seed() {
    const char *e = std::getenv("FMM_TEST_SEED");
    uint64_t s = e ? std::strtoull(e, nullptr, 10) : std::random_device{}();
    std::cout << "seed " << s << " (set FMM_TEST_SEED to repeat)\n";
    return s;
}

struct Result {
    std::vector<double> phi, field;
    double energy = 0;
};

int run_fmm(const std::vector<double> &xyz, const std::vector<double> &q, double L, fmm_opts o,
            Result &r) {
    o.periodic = 1;
    const double box[3] = {L, L, L};
    fmm_plan *p = nullptr;
    int rc = fmm_makeplan(&o, box, &p);
    if (rc) return rc;
    long n = (long)q.size();
    r.phi.resize(n), r.field.resize(3 * n);
    rc = fmm_setpts(p, n, xyz.data());
    if (!rc) rc = fmm_execute(p, q.data(), r.phi.data(), r.field.data(), &r.energy, nullptr);
    fmm_destroy(p);
    return rc;
}

Result ewald(const std::vector<double> &xyz, const std::vector<double> &q, double L) {
    Result r;
    long n = (long)q.size();
    r.phi.resize(n), r.field.resize(3 * n);
    const double box[3] = {L, L, L};
    EXPECT_EQ(fmm_ewald(n, xyz.data(), q.data(), box, 1e-12, r.phi.data(), r.field.data(),
                        &r.energy, nullptr, 0),
              FMM_OK);
    return r;
}

double rel(const std::vector<double> &a, const std::vector<double> &b) {
    double e = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]), m += b[i] * b[i];
    return std::sqrt(e / m);
}

// 1/2 ||q|| ||phi||: what an error of relative size eps in phi can move U = 1/2 sum q phi by, at
// most (Cauchy-Schwarz). Energy errors are measured on this scale: |U| itself can be far
// smaller where the sum cancels, which makes the energy's own relative error meaningless.
double energy_scale(const std::vector<double> &q, const std::vector<double> &phi) {
    double qq = 0, pp = 0;
    for (size_t i = 0; i < q.size(); ++i) qq += q[i] * q[i], pp += phi[i] * phi[i];
    return 0.5 * std::sqrt(qq * pp);
}

void random_set(std::mt19937_64 &g, long n, double L, double extra_charge, std::vector<double> &xyz,
                std::vector<double> &q) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    xyz.resize(3 * n), q.resize(n);
    double s = 0;
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = L * u(g);
        q[i] = 2 * u(g) - 1, s += q[i];
    }
    for (auto &v : q) v += (extra_charge - s) / n;
}

}  // namespace

// Rock salt: 8 ions in a cube of side 2, nearest-neighbour distance 1; U = -4 M.
// Caesium chloride: 2 ions in a unit cube, nearest-neighbour distance sqrt(3)/2; U = -M/d.
TEST(PeriodicMadelung, NaClAndCsClTo1e10) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.order = 20;
    std::vector<double> xyz, q;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            for (int k = 0; k < 2; ++k) {
                xyz.insert(xyz.end(), {i + 0.5, j + 0.5, k + 0.5});
                q.push_back((i + j + k) % 2 ? -1.0 : 1.0);
            }
    Result r;
    ASSERT_EQ(run_fmm(xyz, q, 2.0, o, r), FMM_OK);
    EXPECT_NEAR(-r.energy / 4, 1.747564594633182, 1e-10);
    std::vector<double> cs = {0.1, 0.2, 0.3, 0.6, 0.7, 0.8}, qc = {1.0, -1.0};
    ASSERT_EQ(run_fmm(cs, qc, 1.0, o, r), FMM_OK);
    EXPECT_NEAR(-r.energy * std::sqrt(3.0) / 2, 1.762674773070988, 1e-10);
}

// One unit charge in a cube with the neutralising background: U = xi / (2L) with the simple
// cubic lattice constant xi = -2.837297479480620 (Nijboer and De Wette), wherever the charge
// sits; by symmetry the virial is U/3 on the diagonal (the net-charge terms of the virial,
// nearly all of it here).
TEST(PeriodicMadelung, SingleChargeInACube) {
    const double xi = -2.837297479480620, L = 1.7, box[3] = {L, L, L};
    std::vector<double> xyz = {0.3, 1.1, 0.9}, q = {1.0};
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1, o.order = 20;
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    ASSERT_EQ(fmm_setpts(p, 1, xyz.data()), FMM_OK);
    double U, W[9], Ue;
    ASSERT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, &U, W), FMM_OK);
    fmm_destroy(p);
    ASSERT_EQ(fmm_ewald(1, xyz.data(), q.data(), box, 1e-12, nullptr, nullptr, &Ue, nullptr, 0), FMM_OK);
    EXPECT_NEAR(Ue, xi / (2 * L), 1e-10);
    EXPECT_NEAR(U, xi / (2 * L), 1e-10);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) EXPECT_NEAR(W[3 * a + b], a == b ? U / 3 : 0.0, 1e-8) << a << b;
}

// Random neutral and charged sets, forced orders and depths: error against Ewald falls with
// the order; the one-cell separation of the root M2L gives about a factor 2 per order.
TEST(PeriodicEwald, OrderSweepNeutralAndCharged) {
    std::mt19937_64 g(test_seed());
    for (double Qnet : {0.0, 3.0}) {
        std::vector<double> xyz, q;
        random_set(g, 600, 1.7, Qnet, xyz, q);
        Result ref = ewald(xyz, q, 1.7);
        for (int depth : {0, 2, -1}) {
            double prev = 1.0;
            for (int p : {4, 8, 12, 16, 20}) {
                fmm_opts o;
                fmm_default_opts(&o);
                o.order = p, o.depth = depth;
                Result r;
                ASSERT_EQ(run_fmm(xyz, q, 1.7, o, r), FMM_OK);
                double ep = rel(r.phi, ref.phi), ef = rel(r.field, ref.field);
                double eu = std::fabs(r.energy - ref.energy) / energy_scale(q, ref.phi);
                std::cout << "Q " << Qnet << " depth " << depth << " p " << p << ": phi " << ep
                          << " field " << ef << " energy " << eu << " (relative "
                          << std::fabs(r.energy - ref.energy) / std::fabs(ref.energy) << ")\n";
                // 10 * 0.5^p: the measured decay with a factor 10 of room (p=4: 0.6, p=20: 1e-5)
                EXPECT_LT(ep, 10 * std::pow(0.5, p));
                EXPECT_LT(ef, 10 * std::pow(0.5, p));
                EXPECT_LT(eu, 10 * std::pow(0.5, p));
                EXPECT_LT(ep, prev);
                prev = ep;
            }
        }
    }
}

// The tolerance is the relative L2 error of the potential; the energy error follows within
// tol/2 ||q|| ||phi||. 1e-10 and 1e-12 (orders ~38 and 50: lattice sums to degree ~100 in the
// plan) are the slow part, on the random neutral and charged sets only: the 300-atom water box (tree depth
// 1) scatters up to ~10x above the order table from one random box to the next (README "Error
// control"), so below ~1e-7 the tolerance is not promised for such small clustered boxes.
namespace {
void periodic_ladder(std::initializer_list<double> tols, bool small_water) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q, cxyz, cq;
    random_set(g, 1500, 2.0, 0.0, xyz, q);
    random_set(g, 1200, 1.5, 7.0, cxyz, cq);  // a net charge: the neutralising background
    std::vector<double> wxyz(3 * 300), wq(300);
    double edge = 0;
    ASSERT_EQ(pts_water(100, g(), wxyz.data(), wq.data(), &edge), 0);
    struct Case {
        const std::vector<double> &x, &q;
        double L;
    } cases[] = {{xyz, q, 2.0}, {cxyz, cq, 1.5}, {wxyz, wq, edge}};
    for (const Case &c : cases) {
        if (&c.q == &wq && !small_water) continue;
        Result ref = ewald(c.x, c.q, c.L);
        for (double tol : tols) {
            fmm_opts o;
            fmm_default_opts(&o);
            o.tolerance = tol;
            Result r;
            ASSERT_EQ(run_fmm(c.x, c.q, c.L, o, r), FMM_OK);
            double ep = rel(r.phi, ref.phi), eu = std::fabs(r.energy - ref.energy) / std::fabs(ref.energy);
            std::cout << "N " << c.q.size() << " tol " << tol << ": phi " << ep << " energy " << eu << "\n";
            EXPECT_LE(ep, tol) << "tolerance " << tol << " N " << c.q.size();
            // the energy bound that the promise on phi implies (Cauchy-Schwarz); the energy's
            // own relative error can exceed the tolerance where U = 1/2 sum q phi cancels
            EXPECT_LE(std::fabs(r.energy - ref.energy), tol * energy_scale(c.q, ref.phi))
                << "tolerance " << tol << " N " << c.q.size();
        }
    }
}
}  // namespace

TEST(PeriodicEwald, ToleranceLadder) { periodic_ladder({1e-3, 1e-5, 1e-7}, true); }
TEST(PeriodicEwald, SlowToleranceLadderTight) { periodic_ladder({1e-10, 1e-12}, false); }

// Crystals: rock-salt-like lattices (k^3 ions at (i, j, l) / k of the cell, charges (-1)^(i+j+l))
// put charges exactly on the corners of the tree's boxes (k = 16, k = 8 on trees of depth <= 3),
// the worst case of the one-box separation, for which the order table (fmm/accuracy.c,
// measured on random sets) was not made. The tin-foil tree is moved by an irrational fraction of
// the cell (fmm/setpts.c), so they keep the tolerance down to 1e-7 (the periodic promise); without
// that k = 16 (the automatic tree: depth 2) missed 1e-4 by 1.3x and 1e-9 by 30x, k = 4 on a tree
// of depth 2 1e-3 by 1.6x and 1e-7 by 90x. At 1e-9 a lattice still misses by up to ~5x (k = 8 on a
// forced depth-1 tree: a plane of charges near each box face), within the ~10x that include/fmm.h
// allows below 1e-7. Lattices at other simple fractions, shifted by a random vector, and a charged
// one (a vacancy) too; forced depths 1..3 besides the automatic tree.
namespace {
void crystals(std::initializer_list<double> tols) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.0, 1.0);
    struct Lattice {
        int k, depth, vacancy, shifted;
    } lattices[] = {{16, -1, 0, 0}, {8, 1, 0, 0},   {12, -1, 0, 1},
                    {6, 3, 1, 0},   {10, -1, 1, 1}, {4, 2, 0, 0}};
    for (const Lattice &c : lattices) {
        const double L = 1.0 + 0.5 * (c.k % 3);
        const double s[3] = {c.shifted ? u(g) : 0.0, c.shifted ? u(g) : 0.0,
                             c.shifted ? u(g) : 0.0};
        std::vector<double> xyz, q;
        for (int i = 0; i < c.k; ++i)
            for (int j = 0; j < c.k; ++j)
                for (int l = 0; l < c.k; ++l) {
                    if (c.vacancy && i + j + l == 0) continue;
                    xyz.insert(xyz.end(),
                               {L * (i / double(c.k) + s[0]), L * (j / double(c.k) + s[1]),
                                L * (l / double(c.k) + s[2])});
                    q.push_back((i + j + l) % 2 ? -1.0 : 1.0);
                }
        Result ref = ewald(xyz, q, L);
        for (double tol : tols) {
            fmm_opts o;
            fmm_default_opts(&o);
            o.tolerance = tol, o.depth = c.depth;
            Result r;
            ASSERT_EQ(run_fmm(xyz, q, L, o, r), FMM_OK);
            const double ep = rel(r.phi, ref.phi),
                         eu = std::fabs(r.energy - ref.energy) / energy_scale(q, ref.phi);
            std::cout << "k " << c.k << " depth " << c.depth << (c.vacancy ? " vacancy" : "")
                      << (c.shifted ? " shifted" : "") << " tol " << tol << ": phi " << ep
                      << " energy " << eu << "\n";
            // the promise for periodic boxes reaches 1e-7; below, include/fmm.h allows up to ~10x
            const double bound = tol < 1e-7 ? 10 * tol : tol;
            EXPECT_LE(ep, bound) << "k " << c.k << " depth " << c.depth << " tolerance " << tol;
            EXPECT_LE(eu, bound) << "k " << c.k << " depth " << c.depth << " tolerance " << tol;
        }
    }
}
} // namespace

TEST(PeriodicEwald, CrystalsKeepTheTolerance) {
    crystals({1e-3, 1e-4, 1e-6, 1e-7});
}
TEST(PeriodicEwald, SlowCrystalsTight) {
    crystals({1e-9});
}

// Shifting every particle by the same vector (and wrapping) changes nothing physical.
TEST(PeriodicEwald, TranslationInvariance) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(-5.0, 5.0);
    std::vector<double> xyz, q;
    random_set(g, 800, 1.0, 1.5, xyz, q);
    fmm_opts o;
    fmm_default_opts(&o);
    o.tolerance = 1e-7;
    Result a, b;
    ASSERT_EQ(run_fmm(xyz, q, 1.0, o, a), FMM_OK);
    double s[3] = {u(g), u(g), u(g)};
    for (size_t i = 0; i < xyz.size(); ++i) xyz[i] += s[i % 3];
    ASSERT_EQ(run_fmm(xyz, q, 1.0, o, b), FMM_OK);
    // each energy is within tol/2 ||q|| ||phi|| of the exact one (the promise on phi)
    EXPECT_LT(std::fabs(a.energy - b.energy), 2 * 1e-7 * energy_scale(q, a.phi));
    EXPECT_LT(rel(b.phi, a.phi), 1e-7);
    EXPECT_LT(rel(b.field, a.field), 1e-6);
}

// Virial (tin-foil), neutral and charged cells: the forces of each image gathered through the
// tree, plus the strain derivatives of the lattice sums (and, for a net charge, the isotropic
// terms of the far potential), against the Ewald virial.
TEST(PeriodicEwald, VirialNeutralAndChargedTinfoil) {
    std::mt19937_64 g(test_seed());
    for (double Qnet : {0.0, 2.5, -40.0}) {
        std::vector<double> xyz, q;
        random_set(g, 500, 1.3, Qnet, xyz, q);
        const double box[3] = {1.3, 1.3, 1.3};
        double Wref[9], Uref;
        ASSERT_EQ(fmm_ewald(500, xyz.data(), q.data(), box, 1e-12, nullptr, nullptr, &Uref, Wref, 0), FMM_OK);
        EXPECT_NEAR(Wref[0] + Wref[4] + Wref[8], Uref, 1e-9 * std::fabs(Uref));  // tr W = U for 1/r
        for (int depth : {0, 2}) {
            for (int p : {4, 6, 12, 20}) {
                fmm_opts o;
                fmm_default_opts(&o);
                o.periodic = 1, o.order = p, o.depth = depth;
                fmm_plan *plan = nullptr;
                ASSERT_EQ(fmm_makeplan(&o, box, &plan), FMM_OK);
                ASSERT_EQ(fmm_setpts(plan, 500, xyz.data()), FMM_OK);
                double W[9], U;
                ASSERT_EQ(fmm_execute(plan, q.data(), nullptr, nullptr, &U, W), FMM_OK);
                fmm_destroy(plan);
                double e = 0, s = 0;
                for (int k = 0; k < 9; ++k) e += (W[k] - Wref[k]) * (W[k] - Wref[k]), s += Wref[k] * Wref[k];
                std::cout << "Q " << Qnet << " depth " << depth << " p " << p << ": virial " << std::sqrt(e / s)
                          << " trace - U " << (W[0] + W[4] + W[8] - U) / std::sqrt(s) << "\n";
                EXPECT_LT(std::sqrt(e / s), 10 * std::pow(0.5, p));
                EXPECT_DOUBLE_EQ(W[1], W[3]);  // symmetric
            }
        }
    }
}

// A compact cluster straddling the corner of a large box, one leaf (depth 0): the cell is
// centred on it and its 26 nearest images act through one M2L at the root (pbc/cluster.h), so
// the error is that of the images' expansion, (2R/L)^(p+1); the virial takes their forces from
// the root multipole. A cluster too wide for that (2R/L = 0.8) keeps the images' direct sums.
TEST(PeriodicEwald, CompactClusterInOneLeaf) {
    std::mt19937_64 g(test_seed());
    const double L = 3.0, box[3] = {L, L, L};
    for (double R : {0.25 * L, 0.4 * L})
        for (double Qnet : {0.0, 2.5}) {
            const long n = 400;
            const double ctr[3] = {0.1 * L, 0.97 * L, 0.5 * L};
            std::vector<double> xyz(3 * n), q(n);
            ASSERT_EQ(pts_ball(n, g(), xyz.data(), q.data()), PTS_OK);
            for (long i = 0; i < 3 * n; ++i) xyz[i] = std::fmod(ctr[i % 3] + R * xyz[i] + L, L);
            for (auto &v : q) v += Qnet / n;
            Result ref;
            ref.phi.resize(n), ref.field.resize(3 * n);
            double Wref[9];
            ASSERT_EQ(fmm_ewald(n, xyz.data(), q.data(), box, 1e-12, ref.phi.data(),
                                ref.field.data(), &ref.energy, Wref, 0),
                      FMM_OK);
            for (int p : {4, 8, 12, 16}) {
                fmm_opts o;
                fmm_default_opts(&o);
                o.periodic = 1, o.order = p, o.depth = 0;
                fmm_plan *plan = nullptr;
                ASSERT_EQ(fmm_makeplan(&o, box, &plan), FMM_OK);
                ASSERT_EQ(fmm_setpts(plan, n, xyz.data()), FMM_OK);
                Result r;
                r.phi.resize(n), r.field.resize(3 * n);
                double W[9];
                ASSERT_EQ(fmm_execute(plan, q.data(), r.phi.data(), r.field.data(), &r.energy, W),
                          FMM_OK);
                fmm_info info;
                ASSERT_EQ(fmm_get_info(plan, &info), FMM_OK);
                fmm_destroy(plan);
                // the cell's centre: the middle of the charges' extent, to half a histogram bin
                // (bins L / 64 wide: each end of the occupied bins lies less than a bin beyond the
                // extreme charge on its side, so their middle is less than half a bin off). The
                // sample's extremes fall short of the ball's by up to a few % of L, so the ball's
                // centre itself was a bound that failed for some seeds.
                for (int d = 0; d < 3; ++d) {
                    double lo = L, hi = -L;
                    for (long i = 0; i < n; ++i) {
                        const double o = std::remainder(xyz[3 * i + d] - ctr[d], L);
                        lo = std::min(lo, o), hi = std::max(hi, o);
                    }
                    EXPECT_LT(
                        std::fabs(std::remainder(info.center[d] - ctr[d] - 0.5 * (lo + hi), L)),
                        L / 128)
                        << "axis " << d;
                }
                double e = 0, m = 0;
                for (int k = 0; k < 9; ++k)
                    e += (W[k] - Wref[k]) * (W[k] - Wref[k]), m += Wref[k] * Wref[k];
                const double ep = rel(r.phi, ref.phi), ef = rel(r.field, ref.field),
                             ev = std::sqrt(e / m);
                std::cout << "2R/L " << 2 * R / L << " Q " << Qnet << " p " << p << ": phi " << ep
                          << " field " << ef << " virial " << ev << "\n";
                const double bound =
                    std::pow(0.5, p + 1); // 2R/L = 0.5; the wide one is exact nearer
                EXPECT_LT(ep, bound);
                EXPECT_LT(ef, bound);
                EXPECT_LT(ev, 20 * bound);
            }
        }
}

// The cluster the test above uses: inside the unit ball, neutral, and bad arguments refused.
TEST(PointSets, BallIsInsideAndNeutral) {
    std::vector<double> xyz(3 * 5000), q(5000);
    ASSERT_EQ(pts_ball(5000, test_seed(), xyz.data(), q.data()), PTS_OK);
    double qs = 0, qa = 0, rmax = 0;
    for (long i = 0; i < 5000; ++i) {
        const double *v = &xyz[3 * i];
        rmax = std::max(rmax, v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        qs += q[i], qa += std::fabs(q[i]);
    }
    EXPECT_LE(rmax, 1.0);
    EXPECT_GT(rmax, 0.99); // it fills the ball
    EXPECT_LT(std::fabs(qs), 1e-12 * qa);
    EXPECT_EQ(pts_ball(0, 1, xyz.data(), q.data()), PTS_ERR_ARG);
    EXPECT_EQ(pts_ball(10, 1, nullptr, q.data()), PTS_ERR_ARG);
    EXPECT_EQ(pts_ball(10, 1, xyz.data(), nullptr), PTS_ERR_ARG);
}

// The reference itself: Ewald's virial is W_ab = -dU/d eps_ab with the particles and the box
// strained together. A diagonal strain keeps the box orthorhombic, which the Ewald sum takes,
// so central differences of its energy check the diagonal, the net charge's background
// term included.
TEST(PeriodicEwald, EwaldVirialIsTheStrainDerivative) {
    std::mt19937_64 g(test_seed());
    for (double Qnet : {0.0, 3.0}) {
        std::vector<double> xyz, q;
        random_set(g, 200, 1.1, Qnet, xyz, q);
        const double box[3] = {1.1, 1.1, 1.1};
        double W[9], U;
        ASSERT_EQ(fmm_ewald(200, xyz.data(), q.data(), box, 1e-12, nullptr, nullptr, &U, W, 0), FMM_OK);
        const double h = 1e-4;
        for (int a = 0; a < 3; ++a) {
            double Us[2];
            for (int s = 0; s < 2; ++s) {
                double f = 1 + (s ? -h : h), b[3] = {box[0], box[1], box[2]};
                std::vector<double> x = xyz;
                b[a] *= f;
                for (size_t i = a; i < x.size(); i += 3) x[i] *= f;
                ASSERT_EQ(fmm_ewald(200, x.data(), q.data(), b, 1e-12, nullptr, nullptr, &Us[s], nullptr, 0), FMM_OK);
            }
            double fd = -(Us[0] - Us[1]) / (2 * h), wn = 0;
            for (double v : W) wn += v * v;
            std::cout << "Q " << Qnet << " W" << a << a << " " << W[4 * a] << " finite difference " << fd
                      << " (difference / |W| " << std::fabs(W[4 * a] - fd) / std::sqrt(wn) << ")\n";
            // the Ewald energies carry ~1e-12 of the pair terms' scale, which the differences
            // divide by h: ~1e-8 of the virial's size (|U| itself can be small by cancellation)
            EXPECT_NEAR(W[4 * a], fd, 1e-7 * std::sqrt(wn));
        }
    }
}

// Vacuum (cubic growth) and tin-foil differ by 2 pi |D|^2 / (3V) for a neutral cell, and
// the virial by the strain derivative of that term, -(2 pi / 3V)(2 D D^T - |D|^2 I) (D -> (I+e)D,
// V -> V(1 + tr e)): the FMM's vacuum virial against Ewald's tin-foil virial plus that term.
TEST(PeriodicEwald, VacuumBoundaryDipoleTerm) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    const double L = 1.3;
    random_set(g, 400, L, 0.0, xyz, q);
    fmm_opts o;
    fmm_default_opts(&o);
    // order 30 (FMM error ~1e-9): the tin-foil tree is moved against the vacuum one (fmm/setpts.c),
    // so their truncation errors no longer cancel in the difference
    o.order = 30;
    Result tf, vac;
    ASSERT_EQ(run_fmm(xyz, q, L, o, tf), FMM_OK);
    o.boundary = FMM_BOUNDARY_VACUUM;
    ASSERT_EQ(run_fmm(xyz, q, L, o, vac), FMM_OK);
    o.order = 16;
    double D[3] = {0, 0, 0};
    for (size_t i = 0; i < q.size(); ++i)
        for (int d = 0; d < 3; ++d) D[d] += q[i] * (xyz[3 * i + d] - 0.5 * L);
    const double V = L * L * L, DD = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    double pred = 2 * M_PI / (3 * V) * DD;
    EXPECT_NEAR(vac.energy - tf.energy, pred, 1e-6 * std::fabs(pred));

    double Wvac[9], Wref[9], U;
    const double box[3] = {L, L, L};
    o.periodic = 1;
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    ASSERT_EQ(fmm_setpts(p, (long)q.size(), xyz.data()), FMM_OK);
    ASSERT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, &U, Wvac), FMM_OK);
    fmm_destroy(p);
    ASSERT_EQ(fmm_ewald((long)q.size(), xyz.data(), q.data(), box, 1e-12, nullptr, nullptr, nullptr, Wref, 0),
              FMM_OK);
    double e2 = 0, r2 = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double ref = Wref[3 * a + b] - 2 * M_PI / (3 * V) * (2 * D[a] * D[b] - (a == b) * DD);
            e2 += (Wvac[3 * a + b] - ref) * (Wvac[3 * a + b] - ref), r2 += ref * ref;
        }
    std::cout << "vacuum virial: Frobenius relative error " << std::sqrt(e2 / r2) << "\n";
    EXPECT_LT(std::sqrt(e2 / r2), 10 * std::pow(0.5, o.order));  // as for tin-foil
    EXPECT_DOUBLE_EQ(Wvac[1], Wvac[3]);
    EXPECT_NEAR(Wvac[0] + Wvac[4] + Wvac[8], U, 10 * std::pow(0.5, o.order) * std::sqrt(r2)) << "tr W = U for 1/r";
}

TEST(PeriodicInput, RejectedClearly) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1;
    fmm_plan *p = nullptr;
    EXPECT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_ERR_BOX);
    const double rect[3] = {1, 1, 2}, neg[3] = {-1, -1, -1}, nan3[3] = {NAN, NAN, NAN};
    ASSERT_EQ(fmm_makeplan(&o, rect, &p), FMM_OK);  // a rectangular cell (fmm_makeplan_cell)
    fmm_destroy(p);
    EXPECT_EQ(fmm_makeplan(&o, neg, &p), FMM_ERR_BOX);
    EXPECT_EQ(fmm_makeplan(&o, nan3, &p), FMM_ERR_BOX);
    const double box[3] = {1, 1, 1};
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    std::vector<double> xyz = {0.1, 0.2, 0.3, 0.7, 0.6, 0.5}, q = {1.0, 1.0};
    EXPECT_EQ(fmm_setpts(p, 0, xyz.data()), FMM_ERR_NPTS);
    std::vector<double> bad = {0.1, NAN, 0.3, 0.7, 0.6, 0.5};
    EXPECT_EQ(fmm_setpts(p, 2, bad.data()), FMM_ERR_NONFINITE);
    ASSERT_EQ(fmm_setpts(p, 2, xyz.data()), FMM_OK);
    double U;
    EXPECT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, &U, nullptr), FMM_OK);
    fmm_destroy(p);
    o.boundary = FMM_BOUNDARY_VACUUM;  // a charged cell has no vacuum limit
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    ASSERT_EQ(fmm_setpts(p, 2, xyz.data()), FMM_OK);
    EXPECT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, &U, nullptr), FMM_ERR_BOUNDARY);
    fmm_destroy(p);
    const double b1[3] = {1, 1, 1};
    EXPECT_EQ(fmm_ewald(2, xyz.data(), q.data(), neg, 1e-8, nullptr, nullptr, &U, nullptr, 0), FMM_ERR_BOX);
    EXPECT_EQ(fmm_ewald(2, bad.data(), q.data(), b1, 1e-8, nullptr, nullptr, &U, nullptr, 0), FMM_ERR_NONFINITE);
    EXPECT_EQ(fmm_ewald(0, xyz.data(), q.data(), b1, 1e-8, nullptr, nullptr, &U, nullptr, 0), FMM_ERR_NPTS);
}
