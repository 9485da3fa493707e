// The distributed FMM (include/fmm_dist.h) over thread ranks: each rank's phi and field, and the
// energy and virial on every rank, equal the one-rank fmm_execute's on the union of the points
// (same order and depth) to 1e-12 relative, for 1-4 ranks, spatial and non-spatial splits, ranks
// without particles, neutral and charged sets, periodic and open; and the distributed result
// against Ewald and the direct sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "fmm.h"
#include "fmm_dist.h"
#include "test_env.h"

namespace {

struct Set {
    double L;
    std::vector<double> xyz, q;
    size_t n() const { return q.size(); }
};

// n random charges in the cube [0, L)^3 (some outside it: the plans wrap), neutral or charged
Set random_set(std::mt19937_64 &rng, long n, double L, bool charged) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    Set s{L, std::vector<double>(3 * n), std::vector<double>(n)};
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) s.xyz[3 * i + d] = (1.2 * u(rng) - 0.1) * L;
        s.q[i] = 2 * u(rng) - 1;
    }
    if (!charged) {
        double Q = 0;
        for (double v : s.q) Q += v;
        for (double &v : s.q) v -= Q / n;
    } else {
        s.q[0] += 3.0;
    }
    return s;
}

struct Out {
    std::vector<double> phi, field;
    double energy = 0, virial[9] = {0};
    fmm_info info{};
    int rc = FMM_OK;
};

enum Split { SLABS, RANDOM, ONE_EMPTY };

// rank of particle i under a split into k ranks
std::vector<int> split(const Set &s, int k, Split how, std::mt19937_64 &rng) {
    std::vector<int> r(s.n());
    std::uniform_int_distribution<int> pick(0, k - 1);
    for (size_t i = 0; i < s.n(); ++i) {
        double x = s.xyz[3 * i] - s.L * std::floor(s.xyz[3 * i] / s.L);
        switch (how) {
        case SLABS:
            r[i] = std::min(k - 1, (int)(x / s.L * k));
            break;
        case RANDOM:
            r[i] = pick(rng);
            break;
        case ONE_EMPTY:
            r[i] = k == 1 ? 0 : 1 + (int)(i % (size_t)(k - 1));
            break; // rank 0 empty
        }
    }
    return r;
}

struct Case {
    const Set *s;
    std::vector<int> rank_of;
};

// The distributed evaluation of each case on k thread ranks, one plan per rank for all of them;
// outputs gathered back into each set's order.
std::vector<Out> run_dist(const std::vector<Case> &cases, int k, fmm_opts o, bool virial) {
    std::vector<Out> out(cases.size());
    fmm_comm_threads *g = nullptr;
    EXPECT_EQ(fmm_comm_threads_create(k, &g), FMM_OK);
    // per case and rank: the status, the energy and the virial, the plan's info
    std::vector<std::vector<double>> e(cases.size() * k, std::vector<double>(10, 0.0));
    std::vector<int> rcs(cases.size() * k, -1);
    std::vector<fmm_info> infos(cases.size());
    for (size_t c = 0; c < cases.size(); ++c)
        out[c].phi.assign(cases[c].s->n(), NAN), out[c].field.assign(3 * cases[c].s->n(), NAN);
    std::vector<std::thread> th;
    for (int r = 0; r < k; ++r)
        th.emplace_back([&, r] {
            fmm_comm cm;
            fmm_dist_plan *p = nullptr;
            const double L = cases[0].s->L, box[3] = {L, L, L};
            int rc = fmm_comm_threads_rank(g, r, &cm);
            if (!rc) rc = fmm_dist_makeplan(&o, o.periodic ? box : nullptr, &cm, &p);
            for (size_t c = 0; c < cases.size(); ++c) {
                const Set &s = *cases[c].s;
                std::vector<long> idx;
                for (size_t i = 0; i < s.n(); ++i)
                    if (cases[c].rank_of[i] == r) idx.push_back((long)i);
                const long nh = (long)idx.size();
                std::vector<double> x(3 * nh), q(nh), phi(nh), f(3 * nh);
                for (long j = 0; j < nh; ++j) {
                    q[j] = s.q[idx[j]];
                    for (int d = 0; d < 3; ++d) x[3 * j + d] = s.xyz[3 * idx[j] + d];
                }
                double *ev = e[c * k + r].data();
                int rcc = rc;
                if (!rcc) rcc = fmm_dist_setpts(p, nh, nh ? x.data() : nullptr);
                if (!rcc)
                    rcc = fmm_dist_execute(p, nh ? q.data() : nullptr, phi.data(), f.data(), ev,
                                           virial ? ev + 1 : nullptr);
                if (!rcc && r == 0) rcc = fmm_dist_get_info(p, &infos[c]);
                rcs[c * k + r] = rcc;
                for (long j = 0; j < nh; ++j) {
                    out[c].phi[idx[j]] = phi[j];
                    for (int d = 0; d < 3; ++d) out[c].field[3 * idx[j] + d] = f[3 * j + d];
                }
            }
            fmm_dist_destroy(p);
        });
    for (auto &t : th) t.join();
    fmm_comm_threads_destroy(g);
    for (size_t c = 0; c < cases.size(); ++c) {
        for (int r = 0; r < k; ++r) {
            const int rc = rcs[c * k + r];
            EXPECT_EQ(rc, FMM_OK) << "case " << c << " rank " << r << ": " << fmm_strerror(rc);
            // the energy and the virial are the same bits on every rank
            for (int j = 0; j < 10; ++j)
                EXPECT_EQ(e[c * k + r][j], e[c * k][j]) << "case " << c << " rank " << r;
        }
        out[c].rc = rcs[c * k];
        out[c].energy = e[c * k][0];
        for (int j = 0; j < 9; ++j) out[c].virial[j] = e[c * k][1 + j];
        out[c].info = infos[c];
    }
    return out;
}

// The one-rank plan on the union, with the distributed plan's order and depth (p: a plan made
// with them, reused across sets of the same depth).
Out run_one(fmm_plan *p, const Set &s, bool virial) {
    Out out;
    out.phi.resize(s.n()), out.field.resize(3 * s.n());
    int rc = fmm_setpts(p, (long)s.n(), s.xyz.data());
    if (!rc)
        rc = fmm_execute(p, s.q.data(), out.phi.data(), out.field.data(), &out.energy,
                         virial ? out.virial : nullptr);
    if (!rc) rc = fmm_get_info(p, &out.info);
    out.rc = rc;
    return out;
}

fmm_plan *one_rank_plan(fmm_opts o, const fmm_info &info, double L) {
    o.order = info.order, o.depth = info.depth;
    fmm_plan *p = nullptr;
    const double box[3] = {L, L, L};
    EXPECT_EQ(fmm_makeplan(&o, o.periodic ? box : nullptr, &p), FMM_OK);
    return p;
}

double max_abs(const std::vector<double> &v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::fabs(x));
    return m;
}

double rel_diff(const std::vector<double> &a, const std::vector<double> &b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m / max_abs(b);
}

// The virial is a sum of N terms q_i E_i (x) (x_i - c) (and the periodic image forces) that
// cancel to 1/7000 of their magnitude in the charged periodic set here (1/800 in the others): the
// one-rank plan's result moves by 1.6e-13 of its largest entry when each charge moves by one ulp,
// and the ranks' partial sums, added in another order, move it by up to 2e-12 of that entry
// (non-spatial splits, 3-4 ranks). So its difference is measured against the terms' magnitude,
// side * sum_i |q_i| |E_i|, which bounds what a summation order can change (counting a box's
// image forces twice misses by 2.3 of the largest entry); phi, field and energy against their
// own size.
void expect_equal(const Out &d, const Out &s, const Set &set, bool virial) {
    ASSERT_EQ(d.rc, FMM_OK);
    ASSERT_EQ(s.rc, FMM_OK);
    EXPECT_EQ(d.info.nboxes, s.info.nboxes);
    EXPECT_EQ(d.info.nleaves, s.info.nleaves);
    EXPECT_LE(rel_diff(d.phi, s.phi), 1e-12);
    EXPECT_LE(rel_diff(d.field, s.field), 1e-12);
    EXPECT_LE(std::fabs(d.energy - s.energy), 1e-12 * std::fabs(s.energy));
    if (virial) {
        double terms = 0, dmax = 0, wmax = 0;
        for (size_t i = 0; i < set.n(); ++i)
            terms += std::fabs(set.q[i]) *
                     std::hypot(s.field[3 * i], s.field[3 * i + 1], s.field[3 * i + 2]);
        terms *= s.info.side;
        for (int k = 0; k < 9; ++k)
            dmax = std::max(dmax, std::fabs(d.virial[k] - s.virial[k])),
            wmax = std::max(wmax, std::fabs(s.virial[k]));
        EXPECT_LE(dmax, 1e-12 * std::max(terms, wmax))
            << "virial difference " << dmax / wmax << " of its largest entry";
    }
}

fmm_opts base_opts() {
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1;
    o.order = 8; // the equality holds at any order; a low one keeps the plans' tables cheap
    o.threads = 1;
    return o;
}

} // namespace

// the Euclidean norm of a vector
static double norm2(const std::vector<double> &v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
}

// the two sets on 1-4 ranks, each split three ways (slabs, random, one rank empty), against one
// one-rank plan of the distributed plans' order and depth, with the virial
static void expect_equal_on_1_to_4_ranks(const Set (&sets)[2], const fmm_opts &o,
                                         std::mt19937_64 &rng) {
    fmm_plan *one = nullptr;
    for (int k = 1; k <= 4; ++k) {
        std::vector<Case> cases;
        for (const Set &s : sets)
            for (Split how : {SLABS, RANDOM, ONE_EMPTY})
                cases.push_back({&s, split(s, k, how, rng)});
        std::vector<Out> d = run_dist(cases, k, o, true);
        for (size_t c = 0; c < cases.size(); ++c) {
            SCOPED_TRACE("ranks " + std::to_string(k) + " case " + std::to_string(c));
            if (d[c].rc) continue;
            if (!one) one = one_rank_plan(o, d[c].info, sets[0].L);
            expect_equal(d[c], run_one(one, *cases[c].s, true), *cases[c].s, true);
        }
    }
    fmm_destroy(one);
}

// 1-4 ranks, three splits, neutral and charged, with the virial; depth chosen by the plan
TEST(Dist, EqualsOneRankPeriodic) {
    std::mt19937_64 rng(test_seed(1));
    const Set sets[2] = {random_set(rng, 3000, 2.5, false), random_set(rng, 3000, 2.5, true)};
    fmm_opts o = base_opts();
    expect_equal_on_1_to_4_ranks(sets, o, rng);
}

// forced depths (depth 1: every leaf touches every other) and the vacuum boundary, 3 ranks
TEST(Dist, DepthsAndBoundaries) {
    std::mt19937_64 rng(test_seed(2));
    Set s = random_set(rng, 1500, 1.0, false);
    for (int boundary : {FMM_BOUNDARY_TINFOIL, FMM_BOUNDARY_VACUUM})
        for (int depth : {1, 2, 3}) {
            SCOPED_TRACE("depth " + std::to_string(depth) + " boundary " +
                         std::to_string(boundary));
            fmm_opts o = base_opts();
            o.depth = depth, o.boundary = boundary;
            std::vector<Out> d = run_dist({{&s, split(s, 3, RANDOM, rng)}}, 3, o, true);
            if (d[0].rc) continue;
            EXPECT_EQ(d[0].info.depth, depth);
            fmm_plan *one = one_rank_plan(o, d[0].info, s.L);
            expect_equal(d[0], run_one(one, s, true), s, true);
            fmm_destroy(one);
        }
}

// open boundaries (a uniform tree over the set's bounding cube): 1-4 ranks, three splits, with
// the virial; and against the direct sum at the tolerance
TEST(Dist, EqualsOneRankOpen) {
    std::mt19937_64 rng(test_seed(4));
    const Set sets[2] = {random_set(rng, 2500, 3.0, false), random_set(rng, 2500, 3.0, true)};
    fmm_opts o = base_opts();
    o.periodic = 0;
    expect_equal_on_1_to_4_ranks(sets, o, rng);
    o.order = 0, o.tolerance = 1e-5;
    std::vector<Out> d = run_dist({{&sets[1], split(sets[1], 3, RANDOM, rng)}}, 3, o, false);
    ASSERT_EQ(d[0].rc, FMM_OK);
    const Set &s = sets[1];
    std::vector<double> phi(s.n());
    double U;
    ASSERT_EQ(
        fmm_direct((long)s.n(), s.xyz.data(), s.q.data(), phi.data(), nullptr, &U, nullptr, 0),
        FMM_OK);
    double num = 0, den = 0;
    for (size_t i = 0; i < s.n(); ++i)
        num += (d[0].phi[i] - phi[i]) * (d[0].phi[i] - phi[i]), den += phi[i] * phi[i];
    std::cout << "open, order " << d[0].info.order << " depth " << d[0].info.depth
              << ": phi against the direct sum " << std::sqrt(num / den) << " (L2)" << std::endl;
    EXPECT_LE(std::sqrt(num / den), 1e-5);
    // U - U_ref = 1/2 sum q_i (phi_i - phi_ref,i) <= 1/2 |q| |phi - phi_ref| (Cauchy-Schwarz): the
    // bound the L2 tolerance of phi gives (|U| of random charges can be far smaller)
    EXPECT_LE(std::fabs(d[0].energy - U), 1e-5 * 0.5 * norm2(s.q) * std::sqrt(den));
}

// the smallest sets, with ranks that have nothing: one charge (open: its bounding box is a
// point) and two charges on different ranks, against the Coulomb law
TEST(Dist, OneAndTwoCharges) {
    fmm_opts o = base_opts();
    o.periodic = 0;
    Set one{1.0, {0.3, 0.4, 0.5}, {2.0}};
    std::vector<Out> d = run_dist({{&one, {0}}}, 3, o, true);
    ASSERT_EQ(d[0].rc, FMM_OK);
    EXPECT_EQ(d[0].phi[0], 0.0);
    EXPECT_EQ(d[0].energy, 0.0);
    Set two{1.0, {0.1, 0.2, 0.3, 0.6, 0.2, 0.3}, {1.0, -2.0}};
    d = run_dist({{&two, {2, 0}}}, 3, o, true);
    ASSERT_EQ(d[0].rc, FMM_OK);
    EXPECT_NEAR(d[0].phi[0], -2.0 / 0.5, 1e-12);
    EXPECT_NEAR(d[0].phi[1], 1.0 / 0.5, 1e-12);
    EXPECT_NEAR(d[0].field[0], 2.0 / 0.25, 1e-12); // E_x at the first: toward the negative charge
    EXPECT_NEAR(d[0].energy, -2.0 / 0.5, 1e-12);
}

// at the order the tolerance asks for, 2 ranks in slabs against the Ewald sum: the relative L2
// error of phi within the tolerance, the energy's too
TEST(Dist, AgainstEwald) {
    std::mt19937_64 rng(test_seed(3));
    Set s = random_set(rng, 2000, 1.5, true);
    fmm_opts o = base_opts();
    o.order = 0, o.tolerance = 1e-4;
    std::vector<Out> d = run_dist({{&s, split(s, 2, SLABS, rng)}}, 2, o, false);
    ASSERT_EQ(d[0].rc, FMM_OK);
    std::vector<double> phi(s.n()), f(3 * s.n());
    double U, box[3] = {s.L, s.L, s.L};
    ASSERT_EQ(fmm_ewald((long)s.n(), s.xyz.data(), s.q.data(), box, 1e-10, phi.data(), f.data(), &U,
                        nullptr, 0),
              FMM_OK);
    double num = 0, den = 0;
    for (size_t i = 0; i < s.n(); ++i)
        num += (d[0].phi[i] - phi[i]) * (d[0].phi[i] - phi[i]), den += phi[i] * phi[i];
    std::cout << "order " << d[0].info.order << " depth " << d[0].info.depth
              << ": phi against Ewald " << std::sqrt(num / den) << " (L2), energy "
              << std::fabs(d[0].energy - U) / std::fabs(U) << std::endl;
    EXPECT_LE(std::sqrt(num / den), 1e-4);
    EXPECT_LE(std::fabs(d[0].energy - U), 1e-4 * 0.5 * norm2(s.q) * std::sqrt(den)); // as above
}

// a rank's own statuses, a failure on one rank seen by all, and the plan usable afterwards
TEST(Dist, StatusesAndFailureOnOneRank) {
    fmm_opts o = base_opts();
    const double box[3] = {1, 1, 1};
    fmm_comm_threads *g = nullptr;
    ASSERT_EQ(fmm_comm_threads_create(1, &g), FMM_OK);
    fmm_comm c;
    ASSERT_EQ(fmm_comm_threads_rank(g, 0, &c), FMM_OK);
    EXPECT_EQ(fmm_comm_threads_rank(g, 1, &c), FMM_ERR_ARG);
    fmm_dist_plan *p = nullptr;
    fmm_opts d0 = o;
    d0.depth = 0;
    EXPECT_EQ(fmm_dist_makeplan(&d0, box, &c, &p), FMM_ERR_DEPTH);
    const double rect[3] = {1, 2, 1};
    EXPECT_EQ(fmm_dist_makeplan(&o, rect, &c, &p), FMM_ERR_UNSUPPORTED);
    EXPECT_EQ(p, nullptr);
    ASSERT_EQ(fmm_dist_makeplan(&o, box, &c, &p), FMM_OK);
    EXPECT_EQ(fmm_dist_execute(p, nullptr, nullptr, nullptr, nullptr, nullptr), FMM_ERR_NOPTS);
    EXPECT_EQ(fmm_dist_setpts(p, 0, nullptr), FMM_ERR_NPTS);
    EXPECT_EQ(fmm_dist_setpts(p, -1, nullptr), FMM_ERR_ARG);
    const double x[6] = {0.1, 0.2, 0.3, 0.6, 0.7, 0.8}, q[2] = {1, -1};
    ASSERT_EQ(fmm_dist_setpts(p, 2, x), FMM_OK);
    EXPECT_EQ(fmm_dist_execute(p, nullptr, nullptr, nullptr, nullptr, nullptr), FMM_ERR_ARG);
    double U;
    EXPECT_EQ(fmm_dist_execute(p, q, nullptr, nullptr, &U, nullptr), FMM_OK);
    fmm_dist_destroy(p);
    fmm_comm_threads_destroy(g);

    // three ranks: rank 1 passes a NaN position, then an infinite charge; then the virial is
    // asked for on rank 0 only
    ASSERT_EQ(fmm_comm_threads_create(3, &g), FMM_OK);
    std::vector<int> set_rc(3), again_rc(3), exec_rc(3), vir_rc(3);
    std::vector<std::thread> th;
    for (int r = 0; r < 3; ++r)
        th.emplace_back([&, r] {
            fmm_comm cr;
            fmm_comm_threads_rank(g, r, &cr);
            fmm_dist_plan *pr = nullptr;
            if (fmm_dist_makeplan(&o, box, &cr, &pr)) return;
            double y[6] = {0.1 + 0.2 * r, 0.2, 0.3, 0.15 + 0.2 * r, 0.7, 0.8};
            double qq[2] = {1, -1}, phi[2];
            if (r == 1) y[4] = NAN;
            set_rc[r] = fmm_dist_setpts(pr, 2, y);
            y[4] = 0.7;
            again_rc[r] = fmm_dist_setpts(pr, 2, y);
            if (r == 1) qq[0] = INFINITY;
            exec_rc[r] = fmm_dist_execute(pr, qq, phi, nullptr, nullptr, nullptr);
            qq[0] = 1;
            double W[9];
            vir_rc[r] = fmm_dist_execute(pr, qq, phi, nullptr, nullptr, r == 0 ? W : nullptr);
            fmm_dist_destroy(pr);
        });
    for (auto &t : th) t.join();
    fmm_comm_threads_destroy(g);
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(set_rc[r], r == 1 ? FMM_ERR_NONFINITE : FMM_ERR_COMM) << r;
        EXPECT_EQ(again_rc[r], FMM_OK) << r;
        EXPECT_EQ(exec_rc[r], FMM_ERR_NONFINITE) << r; // every rank sees the charges' check
        EXPECT_EQ(vir_rc[r], FMM_ERR_ARG) << r;        // the virial asked for on rank 0 only
    }
}
