// Issue 33 for the Coulomb FMM and its reference sums: the virial is translation-safe (defect 1),
// extreme length and charge scales give the scaled results or FMM_ERR_RANGE (defect 2), and the
// same input and thread count give bitwise the same outputs on the CPU (defect 6).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <algorithm>
#include <vector>

#include "core/harmonics.h"
#include "fmm.h"
#include "m2l/virial_terms.h"
#include "test_env.h"

namespace {

// n charges uniform in [0, L)^3, net charge `net` spread evenly
void random_set(std::mt19937_64 &g, long n, double L, double net, std::vector<double> &xyz,
                std::vector<double> &q) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    xyz.resize(3 * n), q.resize(n);
    double s = 0;
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = L * u(g);
        q[i] = 2 * u(g) - 1, s += q[i];
    }
    for (auto &v : q) v += (net - s) / n;
}

struct Out {
    std::vector<double> phi, field;
    double energy = 0, virial[9] = {0};
    bool operator==(const Out &o) const {
        return phi.size() == o.phi.size() && field.size() == o.field.size() &&
               !std::memcmp(phi.data(), o.phi.data(), sizeof(double) * phi.size()) &&
               !std::memcmp(field.data(), o.field.data(), sizeof(double) * field.size()) &&
               !std::memcmp(&energy, &o.energy, sizeof energy) &&
               !std::memcmp(virial, o.virial, sizeof virial);
    }
};

// ------------------------------------------------------------------------------ defect 6

// One plan, evaluated `reps` times on the same input: every output bitwise the same each time.
void expect_repeatable(const fmm_opts &o, const double *box, const std::vector<double> &xyz,
                       const std::vector<double> &q, const std::vector<int> &pairs, int reps) {
    const long n = (long)q.size();
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    ASSERT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
    if (!pairs.empty()) {
        ASSERT_EQ(fmm_set_exclusions(p, (long)pairs.size() / 2, pairs.data()), FMM_OK);
    }
    Out first;
    int differ = 0;
    for (int r = 0; r < reps; ++r) {
        Out x;
        x.phi.resize(n), x.field.resize(3 * n);
        ASSERT_EQ(fmm_execute(p, q.data(), x.phi.data(), x.field.data(), &x.energy, x.virial),
                  FMM_OK);
        if (r == 0)
            first = x;
        else
            differ += !(x == first);
    }
    fmm_destroy(p);
    EXPECT_EQ(differ, 0) << "of " << reps - 1 << " repeats differ from the first (threads "
                         << o.threads << ", periodic " << o.periodic << ")";
}

std::vector<int> random_pairs(std::mt19937_64 &g, long n, long npairs) {
    std::vector<int> pairs;
    for (long k = 0; k < npairs; ++k) { // consecutive atoms: each pair once
        const int i = (int)(g() % (uint64_t)(n / 2)) * 2;
        bool dup = false;
        for (size_t m = 0; m < pairs.size(); m += 2) dup |= pairs[m] == i;
        if (!dup) pairs.push_back(i), pairs.push_back(i + 1);
    }
    return pairs;
}

// Open and periodic (with the virial, whose image forces were an `omp critical` sum in the M2L),
// with exclusions (their energy and virial were OpenMP reductions, as was the energy).
TEST(Repeatable, SameInputAndThreadsGiveBitwiseTheSameOutputs) {
    std::mt19937_64 g(test_seed());
    for (int periodic = 0; periodic <= 1; ++periodic) {
        std::vector<double> xyz, q;
        const long n = periodic ? 2000 : 4000;
        random_set(g, n, 2.0, periodic ? 0.0 : 0.3, xyz, q);
        const std::vector<int> pairs = random_pairs(g, n, 200);
        const double box[3] = {2.0, 2.0, 2.0};
        for (int threads = 2; threads <= 4; ++threads) {
            fmm_opts o;
            fmm_default_opts(&o);
            o.tolerance = 1e-6, o.threads = threads, o.periodic = periodic;
            expect_repeatable(o, periodic ? box : nullptr, xyz, q, pairs, 7);
        }
    }
}

// The references are repeatable too: the direct sum and the Ewald sum.
TEST(Repeatable, ReferenceSumsGiveBitwiseTheSameOutputs) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    const long n = 1500;
    random_set(g, n, 1.0, 0.2, xyz, q);
    const double box[3] = {1.0, 1.0, 1.0};
    for (int threads = 2; threads <= 4; ++threads)
        for (int ewald = 0; ewald <= 1; ++ewald) {
            Out first;
            int differ = 0;
            for (int r = 0; r < 5; ++r) {
                Out x;
                x.phi.resize(n), x.field.resize(3 * n);
                const int rc = ewald ? fmm_ewald(n, xyz.data(), q.data(), box, 1e-8, x.phi.data(),
                                                 x.field.data(), &x.energy, x.virial, threads)
                                     : fmm_direct(n, xyz.data(), q.data(), x.phi.data(),
                                                  x.field.data(), &x.energy, x.virial, threads);
                ASSERT_EQ(rc, FMM_OK);
                if (r == 0)
                    first = x;
                else
                    differ += !(x == first);
            }
            EXPECT_EQ(differ, 0) << (ewald ? "fmm_ewald" : "fmm_direct") << ", threads " << threads;
        }
}

// ------------------------------------------------------------------------------ defect 1

// The virial as the pairwise sum W_ab = 1/2 sum_{i != j} q_i q_j d_a d_b / |d|^3, d = x_i - x_j,
// in long double: no reference point, so no digits lost to a far origin.
std::vector<double> pairwise_virial(const std::vector<double> &xyz, const std::vector<double> &q) {
    const long n = (long)q.size();
    long double W[9] = {0};
    for (long i = 0; i < n; ++i)
        for (long j = i + 1; j < n; ++j) {
            long double d[3], r2 = 0;
            for (int a = 0; a < 3; ++a)
                d[a] = (long double)xyz[3 * i + a] - xyz[3 * j + a], r2 += d[a] * d[a];
            const long double s = (long double)q[i] * q[j] / (r2 * std::sqrt(r2));
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) W[3 * a + b] += s * d[a] * d[b];
        }
    return std::vector<double>(W, W + 9);
}

double rel9(const double *a, const std::vector<double> &b) {
    double e = 0, m = 0;
    for (int k = 0; k < 9; ++k) e += (a[k] - b[k]) * (a[k] - b[k]), m += b[k] * b[k];
    return std::sqrt(e / m);
}

double fmm_virial(const std::vector<double> &xyz, const std::vector<double> &q, const double *box,
                  int periodic, double tol, int device = FMM_DEVICE_CPU) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.tolerance = tol, o.periodic = periodic, o.device = device;
    fmm_plan *p = nullptr;
    double W[9] = {0};
    EXPECT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    EXPECT_EQ(fmm_setpts(p, (long)q.size(), xyz.data()), FMM_OK);
    EXPECT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, nullptr, W), FMM_OK);
    fmm_destroy(p);
    return rel9(W, pairwise_virial(xyz, q));
}

// Open boundary: charges in [0,1]^3 inside a box of 1e10 (and 1e308: NaN before), and a cloud
// 1e8 from the origin, for the FMM and for fmm_direct.
TEST(TranslationSafeVirial, OpenBoundaryFarFromTheBoxCentreAndTheOrigin) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 1500, 1.0, 0.0, xyz, q);
    for (double L : {1e10, 1e308}) {
        const double box[3] = {L, L, L};
        EXPECT_LT(fmm_virial(xyz, q, box, 0, 1e-9), 1e-7) << "box " << L;
    }
    std::vector<double> far = xyz;
    for (auto &v : far) v += 1e8;
    EXPECT_LT(fmm_virial(far, q, nullptr, 0, 1e-9), 1e-7);
    double W[9];
    ASSERT_EQ(fmm_direct((long)q.size(), far.data(), q.data(), nullptr, nullptr, nullptr, W, 2),
              FMM_OK);
    EXPECT_LT(rel9(W, pairwise_virial(far, q)), 1e-12) << "fmm_direct, cloud 1e8 from the origin";
}

// Periodic: the charges xyz (in [0,1]^3) in cells of 1e10 and 1e12, moved by each fraction `at`
// of the cell, against Ewald (whose virial is the pair form, checked against the open sum: the
// images are (1e10)^3 times weaker), on a plan of the device at the depth (-1: automatic).
void expect_far_cluster_virial(const std::vector<double> &xyz, const std::vector<double> &q,
                               std::initializer_list<double> at, int device, int depth) {
    for (double L : {1e10, 1e12}) {
        const double box[3] = {L, L, L};
        fmm_opts o;
        fmm_default_opts(&o);
        o.tolerance = 1e-6, o.periodic = 1, o.device = device, o.depth = depth;
        fmm_plan *p = nullptr;
        ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
        for (double a : at) {
            std::vector<double> set = xyz;
            for (auto &v : set) v += a * L;
            double We[9], W[9];
            ASSERT_EQ(fmm_ewald((long)q.size(), set.data(), q.data(), box, 1e-12, nullptr, nullptr,
                                nullptr, We, 2),
                      FMM_OK);
            EXPECT_LT(rel9(We, pairwise_virial(set, q)), 1e-9)
                << "Ewald against the open sum, cell " << L;
            ASSERT_EQ(fmm_setpts(p, (long)q.size(), set.data()), FMM_OK);
            ASSERT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, nullptr, W), FMM_OK);
            EXPECT_LT(rel9(W, std::vector<double>(We, We + 9)), 1e-5)
                << "cell " << L << ", charges at " << a << " L, depth " << depth;
        }
        fmm_destroy(p);
    }
}

// At the corner and in the middle of the cell.
TEST(TranslationSafeVirial, PeriodicCellMuchLargerThanTheCharges) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 1000, 1.0, 0.0, xyz, q);
    expect_far_cluster_virial(xyz, q, {0.0, 0.3}, FMM_DEVICE_CPU, -1);
}

// ------------------------------------------------------------------------------ close pairs

// nbg charges uniform in [0,1)^3 and a cluster of k within r of a random point of [0.25,0.75)^3,
// net charge 0 (the vacuum and tin-foil boundaries agree then): with a leaf size of 2 the
// adaptive tree goes some 20 levels down, where the cluster's boxes interact through expansions
void clustered_set(std::mt19937_64 &g, long nbg, int k, double r, std::vector<double> &xyz,
                   std::vector<double> &q) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    random_set(g, nbg, 1.0, 0.0, xyz, q);
    double c[3];
    for (double &v : c) v = 0.25 + 0.5 * u(g);
    double s = 0;
    for (int i = 0; i < k; ++i) {
        for (int d = 0; d < 3; ++d) xyz.push_back(c[d] + r * (2 * u(g) - 1));
        q.push_back(2 * u(g) - 1), s += q.back();
    }
    for (auto &v : q) v -= s / (double)q.size();
}

// The largest error of the FMM's virial component against the reference's (fmm_direct for an
// open boundary, else fmm_ewald_cell in cell `h`), relative to 1/2 ||q|| ||phi_ref|| as in
// tests/test_periodic_cells.cpp (W can be small by cancellation), and the tree's depth. A plan of
// fmm_makeplan with the box diag(h) (kind 1: the cube or a brick) or of fmm_makeplan_cell (2).
std::pair<double, int> clustered_virial_error(const std::vector<double> &xyz,
                                              const std::vector<double> &q, int kind,
                                              const double h[9], double tol) {
    const long n = (long)q.size();
    std::vector<double> phi(n);
    double Wr[9], W[9];
    const int rc = kind ? fmm_ewald_cell(n, xyz.data(), q.data(), h, 1e-12, phi.data(), nullptr,
                                         nullptr, Wr, 0)
                        : fmm_direct(n, xyz.data(), q.data(), phi.data(), nullptr, nullptr, Wr, 0);
    EXPECT_EQ(rc, FMM_OK);
    fmm_opts o;
    fmm_default_opts(&o);
    o.tolerance = tol, o.leaf_size = 2, o.periodic = kind != 0;
    fmm_plan *p = nullptr;
    const double box[3] = {h[0], h[4], h[8]};
    EXPECT_EQ(kind == 2 ? fmm_makeplan_cell(&o, h, &p) : fmm_makeplan(&o, kind ? box : nullptr, &p),
              FMM_OK);
    fmm_info info{};
    EXPECT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
    EXPECT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, nullptr, W), FMM_OK);
    EXPECT_EQ(fmm_get_info(p, &info), FMM_OK);
    fmm_destroy(p);
    double qn = 0, pn = 0, dw = 0;
    for (long i = 0; i < n; ++i) qn += q[i] * q[i], pn += phi[i] * phi[i];
    for (int k = 0; k < 9; ++k) dw = std::max(dw, std::fabs(W[k] - Wr[k]));
    return {dw / (0.5 * std::sqrt(qn * pn)), info.depth};
}

// The force map of the virial's M2L terms (m2l/virial_terms.h) against harm_local_force, whose
// sums it reads as a linear map of the local expansion: random scaled expansions at several
// orders and box sides
TEST(CloseClusterVirial, ForceMapIsTheLocalForce) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int p : {1, 2, 3, 6, 11, 20})
        for (double h : {1.0, 3e-6, 7e5}) {
            const int nc = harm_ncoef(p);
            std::vector<double> w(nc), loc(nc), G(3 * nc, NAN);
            for (auto &v : w) v = u(g);
            for (auto &v : loc) v = u(g);
            double F[3], Fm[3] = {0, 0, 0}, mag = 0;
            harm_local_force(p, h, loc.data(), 1, w.data(), F);
            m2l_force_map(p, h, w.data(), nc, G.data());
            for (int a = 0; a < 3; ++a)
                for (int k = 0; k < nc; ++k)
                    Fm[a] += G[a * nc + k] * loc[k], mag += std::fabs(G[a * nc + k] * loc[k]);
            for (int a = 0; a < 3; ++a)
                EXPECT_LE(std::fabs(Fm[a] - F[a]), 1e-14 * mag) << "p " << p << ", h " << h;
        }
}

// Issue 33: the expansions' forces between the boxes of a close cluster deep in an adaptive tree
// obey Newton's third law only to their truncation error; the virial's sum F_i (x) (x_i - g) took
// that error times the lever |x_i - g| / r (about 1e6 here) until it used the far pairs'
// box-relative form (fmm/periodic.c fmm_virial_sum). Open, the periodic cube, a 1:1:3 brick and a
// triclinic cell (the cell path), each at two tolerances: within 10 times the tolerance, as the
// cells' virials (tests/test_periodic_cells.cpp).
TEST(CloseClusterVirial, DeepInAnAdaptiveTree) {
    std::mt19937_64 g(test_seed());
    const double cube[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, brick[9] = {1, 0, 0, 0, 1, 0, 0, 0, 3},
                 tric[9] = {1, 0, 0, 0.3, 0.95, 0, -0.2, 0.4, 1.1};
    const struct {
        const char *name;
        int kind;
        const double *h;
    } cases[] = {{"open", 0, cube},
                 {"periodic cube", 1, cube},
                 {"1:1:3 brick", 1, brick},
                 {"triclinic cell", 2, tric}};
    for (const auto &c : cases)
        for (double tol : {1e-4, 1e-6}) {
            std::vector<double> xyz, q;
            clustered_set(g, 60, 40, 1e-6, xyz, q);
            const auto [err, depth] = clustered_virial_error(xyz, q, c.kind, c.h, tol);
            std::printf("%-15s tolerance %g depth %2d virial error %.2e\n", c.name, tol, depth,
                        err);
            EXPECT_GE(depth, 15) << c.name << ": not the deep tree this test is about";
            EXPECT_LE(err, 10 * tol) << c.name << ", tolerance " << tol << ", depth " << depth;
        }
}

// ------------------------------------------------------------------------------ defect 2

struct Ask { // which outputs a call asks for
    bool phi, field, energy, virial;
};
const Ask all = {true, true, true, true}, no_field = {true, false, true, true},
          phi_field = {true, true, false, false};

// plan == nullptr: the reference sum (direct or Ewald) on (xyz, box); else an evaluation of the
// plan, whose points are set
Out evaluate(fmm_plan *plan, const std::vector<double> &xyz, const std::vector<double> &q,
             const double *box, const Ask &ask, int *rc) {
    const long n = (long)q.size();
    Out x;
    x.phi.assign(n, 0), x.field.assign(3 * n, 0);
    double *ph = ask.phi ? x.phi.data() : nullptr, *fi = ask.field ? x.field.data() : nullptr;
    double *en = ask.energy ? &x.energy : nullptr, *vi = ask.virial ? x.virial : nullptr;
    if (plan)
        *rc = fmm_execute(plan, q.data(), ph, fi, en, vi);
    else
        *rc = box ? fmm_ewald(n, xyz.data(), q.data(), box, 1e-12, ph, fi, en, vi, 0)
                  : fmm_direct(n, xyz.data(), q.data(), ph, fi, en, vi, 0);
    return x;
}

// log10 of the largest |v| (-inf for all zero)
double lg_max(const double *v, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(v[i]));
    return std::log10(m);
}

// Whether an output whose unscaled largest value is 10^lg, times 10^shift, is representable:
// finite, and (nonzero) not all below DBL_MIN.
bool representable(double lg, double shift) {
    return std::isinf(lg) ||
           (lg + shift < std::log10(DBL_MAX) && lg + shift >= std::log10(DBL_MIN));
}

// ||a - 10^shift b|| / ||10^shift b||, in long double (whose range holds 10^shift b)
double rel_vec(const double *a, const double *b, size_t n, double shift) {
    const long double f = std::pow(10.0L, (long double)shift);
    long double e = 0, m = 0;
    for (size_t i = 0; i < n; ++i) {
        const long double d = a[i] - f * b[i];
        e += d * d, m += f * b[i] * f * b[i];
    }
    return (double)(m > 0 ? std::sqrt(e / m) : std::sqrt(e));
}

// Lengths scaled by 10^ls (an open set, or a periodic cell of edge L), charges by 10^lq for each
// lq: phi scales by 10^(lq-ls), E by 10^(lq-2ls), U and W by 10^(2lq-ls). The FMM (tolerance
// 1e-6) and the reference sum on the scaled set either match the unscaled reference so scaled, or,
// where an asked-for output leaves double's range, say FMM_ERR_RANGE.
void check_scaled(const std::vector<double> &xyz, const std::vector<double> &q, double L,
                  int periodic, double ls, std::initializer_list<double> lqs,
                  std::initializer_list<Ask> asks, int device = FMM_DEVICE_CPU) {
    const double s = std::pow(10.0, ls);
    const long n = (long)q.size();
    std::vector<double> xs(xyz.size());
    for (size_t i = 0; i < xyz.size(); ++i) xs[i] = xyz[i] * s;
    const double box[3] = {L, L, L}, boxs[3] = {L * s, L * s, L * s};
    int rc;
    const Out ref = evaluate(nullptr, xyz, q, periodic ? box : nullptr, all, &rc);
    ASSERT_EQ(rc, FMM_OK);
    fmm_opts o;
    fmm_default_opts(&o);
    o.tolerance = 1e-6, o.periodic = periodic, o.device = device;
    fmm_plan *plan = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, periodic ? boxs : nullptr, &plan), FMM_OK);
    ASSERT_EQ(fmm_setpts(plan, n, xs.data()), FMM_OK);
    for (double lq : lqs) {
        std::vector<double> qs(q.size());
        for (size_t i = 0; i < q.size(); ++i) qs[i] = q[i] * std::pow(10.0, lq);
        const double shift[4] = {lq - ls, lq - 2 * ls, 2 * lq - ls, 2 * lq - ls};
        const bool fits[4] = {representable(lg_max(ref.phi.data(), n), shift[0]),
                              representable(lg_max(ref.field.data(), 3 * n), shift[1]),
                              representable(lg_max(&ref.energy, 1), shift[2]),
                              representable(lg_max(ref.virial, 9), shift[3])};
        for (const Ask &ask : asks) {
            const bool want[4] = {ask.phi, ask.field, ask.energy, ask.virial};
            bool ok = true;
            for (int k = 0; k < 4; ++k) ok &= !want[k] || fits[k];
            for (int reference = 0; reference <= 1; ++reference) {
                const Out x = evaluate(reference ? nullptr : plan, xs, qs,
                                       periodic ? boxs : nullptr, ask, &rc);
                SCOPED_TRACE(::testing::Message()
                             << (reference ? (periodic ? "fmm_ewald" : "fmm_direct") : "FMM")
                             << ", lengths x 1e" << ls << ", charges x 1e" << lq);
                if (!ok) {
                    EXPECT_EQ(rc, FMM_ERR_RANGE);
                    continue;
                }
                ASSERT_EQ(rc, FMM_OK);
                const double err[4] = {
                    ask.phi ? rel_vec(x.phi.data(), ref.phi.data(), n, shift[0]) : 0,
                    ask.field ? rel_vec(x.field.data(), ref.field.data(), 3 * n, shift[1]) : 0,
                    ask.energy ? rel_vec(&x.energy, &ref.energy, 1, shift[2]) : 0,
                    ask.virial ? rel_vec(x.virial, ref.virial, 9, shift[3]) : 0};
                const char *name[4] = {"phi", "field", "energy", "virial"};
                for (int k = 0; k < 4; ++k) EXPECT_LT(err[k], reference ? 1e-11 : 2e-5) << name[k];
            }
        }
    }
    fmm_destroy(plan);
}

TEST(ExtremeScales, OpenBoundaryLengths) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 800, 1.0, 0.5, xyz, q);
    // 1e-110: NaN fields before; 1e-160: a wrong energy; 1e300 and 1e-300: all zeros
    for (double ls : {-110.0, -160.0, -300.0, 150.0, 300.0, 1.0})
        check_scaled(xyz, q, 1.0, 0, ls, {0.0}, {all, no_field});
}

TEST(ExtremeScales, PeriodicBoxes) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 300, 1.0, 0.0, xyz, q);
    // a box of 1e200: NaN energy before
    for (double ls : {200.0, -120.0}) check_scaled(xyz, q, 1.0, 1, ls, {0.0}, {all, no_field});
    random_set(g, 300, 1.0, 0.7, xyz, q); // charged
    check_scaled(xyz, q, 1.0, 1, 200.0, {0.0}, {no_field});
}

TEST(ExtremeScales, HugeAndTinyCharges) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 300, 1.0, 0.3, xyz, q);
    for (int periodic = 0; periodic <= 1; ++periodic)
        check_scaled(xyz, q, 1.0, periodic, 0.0, {300.0, 200.0, -200.0, -300.0}, {all, phi_field});
}

// The float entry points: coordinates of 2^100 (within float's range) give phi x 2^-100 and
// the energy, while the field (2^-200) is below float's smallest normal number: FMM_ERR_RANGE
// where it is asked for (its float rounding would have been 0).
TEST(ExtremeScales, FloatEntryPoints) {
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, 500, 1.0, 0.2, xyz, q);
    const long n = (long)q.size();
    std::vector<float> xf(3 * n), qf(n), phi(n), field(3 * n);
    for (long i = 0; i < 3 * n; ++i) xf[i] = std::ldexp((float)xyz[i], 100);
    for (long i = 0; i < n; ++i) qf[i] = (float)q[i];
    std::vector<double> xd(3 * n), qd(qf.begin(), qf.end()), ref(n);
    for (long i = 0; i < 3 * n; ++i) xd[i] = std::ldexp((double)xf[i], -100);
    double eref;
    ASSERT_EQ(fmm_direct(n, xd.data(), qd.data(), ref.data(), nullptr, &eref, nullptr, 0), FMM_OK);
    fmm_opts o;
    fmm_default_opts(&o);
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_OK);
    ASSERT_EQ(fmm_setptsf(p, n, xf.data()), FMM_OK);
    double e = 0;
    ASSERT_EQ(fmm_executef(p, qf.data(), phi.data(), nullptr, &e, nullptr), FMM_OK);
    double err = 0, nrm = 0;
    for (long i = 0; i < n; ++i) {
        const double v = std::ldexp((double)phi[i], 100);
        err += (v - ref[i]) * (v - ref[i]), nrm += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(err / nrm), 1e-5);
    EXPECT_NEAR(std::ldexp(e, 100), eref, 1e-5 * std::fabs(eref));
    EXPECT_EQ(fmm_executef(p, qf.data(), phi.data(), field.data(), &e, nullptr), FMM_ERR_RANGE);
    fmm_destroy(p);
}

// The same on a CUDA plan (skipped without a device): its open root cube is the particles'
// bounding cube too, and it runs on the scaled copies.
TEST(GpuHardening, VirialAndExtremeScales) {
    if (fmm_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, test_size(1500, 500, 200), 1.0, 0.0, xyz, q);
    const double box[3] = {1e10, 1e10, 1e10};
    EXPECT_LT(fmm_virial(xyz, q, box, 0, 1e-7, FMM_DEVICE_CUDA), 1e-5) << "open, box 1e10";
    // the scales are the host's (the device computes in the plan's units): under the sanitizer
    // fewer of them
    random_set(g, test_size(800, 300, 150), 1.0, 0.4, xyz, q);
    for (double ls :
         test_size<std::vector<double>>({-160.0, -110.0, 150.0, 300.0}, {-160.0, 300.0}))
        check_scaled(xyz, q, 1.0, 0, ls, {0.0, 250.0, -250.0}, {all, no_field}, FMM_DEVICE_CUDA);
    random_set(g, test_size(300, 150, 100), 1.0, 0.0, xyz, q);
    for (double ls : test_size<std::vector<double>>({200.0, -120.0}, {200.0}))
        check_scaled(xyz, q, 1.0, 1, ls, {0.0, 200.0}, {all, no_field}, FMM_DEVICE_CUDA);
}

// The periodic virial of charges in a small part of a large cell, on a CUDA plan: about the cell's
// centre its sum F_i (x) Y_i lost |Y| / extent in digits (this set, emulated in double: 1e-5 in the
// cell of 1e10 and 5e-4 in that of 1e12 at depth 0, 1e-4 and 5e-3 at depth 2); it is taken about
// the charges' middle, as on the CPU. At the automatic depth (0: a compact set) and in a tree of
// depth 2. (Not at the cell's corner: the device holds positions relative to a leaf's or the
// cell's centre, there L/8 or L/128 away, so to 1e-16 of that distance: a limit of the fields too.)
TEST(GpuHardening, PeriodicVirialOfAClusterFarFromTheCellCentre) {
    if (fmm_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, test_size(1000, 400, 200), 1.0, 0.0, xyz, q);
    for (int depth : {-1, 2}) expect_far_cluster_virial(xyz, q, {0.3}, FMM_DEVICE_CUDA, depth);
}

} // namespace
