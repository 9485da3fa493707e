// test_bldtt.cpp - the BLDTT solver (include/fmm_bldtt.h) against direct sums.
//
// Fresh random inputs every run: the seed is printed (and recorded as the gtest property
// "seed"); set FMM_TEST_SEED=N to replay a run. Errors are relative L2 over all targets
// against bldtt_direct (itself checked against a plain double loop here), so every bound
// below is the method's accuracy, not agreement with itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <initializer_list>
#include <vector>

#include "fmm_bldtt.h"
#include "test_env.h"
extern "C" {
#include "pointsets.h"
}

namespace {

enum Dist { UNIFORM, PLUMMER, GAUSSIAN, SPHERE };
const char *dist_name(Dist d) {
    static const char *n[] = {"uniform", "plummer", "gaussian", "sphere"};
    return n[d];
}

struct Pts {
    std::vector<double> xyz, q;
    long n() const { return (long)q.size(); }
};

// The paper's sets: uniform in [-1,1]^3, Plummer, Gaussian with radial pdf ~ exp(-r^2/6)
// (variance 3 per coordinate), sphere surface; charges uniform in [-1,1] (neutralised).
Pts make(Dist d, long n, uint64_t seed) {
    Pts p;
    p.xyz.resize(3 * n), p.q.resize(n);
    int rc = 0;
    switch (d) {
    case UNIFORM:
        rc = pts_uniform(n, seed, p.xyz.data(), p.q.data());
        for (auto &x : p.xyz) x = 2 * x - 1;
        break;
    case PLUMMER:
        rc = pts_plummer(n, seed, p.xyz.data(), p.q.data());
        break;
    case SPHERE:
        rc = pts_sphere_surface(n, seed, p.xyz.data(), p.q.data());
        break;
    case GAUSSIAN: {
        rc = pts_uniform(n, seed, p.xyz.data(), p.q.data()); // charges
        std::mt19937_64 g(seed ^ 0x9e3779b97f4a7c15ULL);
        std::normal_distribution<double> nd(0.0, std::sqrt(3.0));
        for (auto &x : p.xyz) x = nd(g);
        break;
    }
    }
    EXPECT_EQ(rc, 0);
    return p;
}

double rel_err(const std::vector<double> &a, const std::vector<double> &ref) {
    double e = 0, s = 0;
    for (size_t i = 0; i < a.size(); ++i)
        e += (a[i] - ref[i]) * (a[i] - ref[i]), s += ref[i] * ref[i];
    return s > 0 ? std::sqrt(e / s) : std::sqrt(e);
}

bldtt_opts opts(int kernel, double theta, int degree, int leaf, int method = BLDTT_METHOD_DTT) {
    bldtt_opts o;
    bldtt_default_opts(&o);
    o.kernel = kernel;
    o.param = bldtt_kernel_default_param(kernel);
    o.theta = theta, o.degree = degree, o.leaf_size = leaf, o.method = method;
    return o;
}

struct Result {
    std::vector<double> phi, grad;
    bldtt_info info;
};

// Runs a plan; targets empty = sources.
Result run(const bldtt_opts &o, const Pts &s, const std::vector<double> &t = {}, bool grad = true) {
    Result r;
    long nt = t.empty() ? s.n() : (long)t.size() / 3;
    r.phi.assign(nt, NAN);
    if (grad) r.grad.assign(3 * nt, NAN);
    bldtt_plan *p = nullptr;
    EXPECT_EQ(bldtt_makeplan(&o, &p), FMM_OK);
    if (!p) return r;
    EXPECT_EQ(bldtt_setpts(p, s.n(), s.xyz.data(), nt, t.empty() ? nullptr : t.data()), FMM_OK);
    EXPECT_EQ(bldtt_execute(p, s.q.data(), r.phi.data(), grad ? r.grad.data() : nullptr), FMM_OK);
    bldtt_get_info(p, &r.info);
    bldtt_destroy(p);
    return r;
}

Result direct(const bldtt_opts &o, const Pts &s, const std::vector<double> &t = {},
              bool grad = true) {
    Result r;
    long nt = t.empty() ? s.n() : (long)t.size() / 3;
    r.phi.assign(nt, NAN);
    if (grad) r.grad.assign(3 * nt, NAN);
    EXPECT_EQ(bldtt_direct(&o, s.n(), s.xyz.data(), s.q.data(), nt, t.empty() ? nullptr : t.data(),
                           r.phi.data(), grad ? r.grad.data() : nullptr),
              FMM_OK);
    return r;
}

// an independent scalar G(r) and G'(r)/r, written out separately from bldtt/kernels.h
double G(int k, double p, double r, double *f) {
    switch (k) {
    case BLDTT_COULOMB:
        *f = -1 / (r * r * r);
        return 1 / r;
    case BLDTT_YUKAWA:
        *f = -std::exp(-p * r) * (1 + p * r) / (r * r * r);
        return std::exp(-p * r) / r;
    case BLDTT_REGULARIZED:
        *f = -std::pow(r * r + p * p, -1.5);
        return 1 / std::sqrt(r * r + p * p);
    case BLDTT_SINC:
        *f = (p * r * std::cos(p * r) - std::sin(p * r)) / (r * r * r);
        return std::sin(p * r) / r;
    default:
        *f = 1 / std::sqrt(r * r + p * p);
        return std::sqrt(r * r + p * p);
    }
}

} // namespace

// bldtt_direct itself against a plain loop, every kernel, targets = sources and separate.
TEST(BldttDirect, MatchesPlainLoop) {
    uint64_t seed = test_seed(1);
    Pts s = make(UNIFORM, 300, seed);
    Pts t = make(GAUSSIAN, 200, seed + 1);
    for (int k = 0; k < BLDTT_NKERNELS; ++k) {
        bldtt_opts o = opts(k, 0.7, 4, 0);
        for (int self = 0; self < 2; ++self) {
            const std::vector<double> &tx = self ? s.xyz : t.xyz;
            Result r = direct(o, s, self ? std::vector<double>{} : t.xyz);
            long nt = (long)tx.size() / 3;
            std::vector<double> ph(nt, 0), gr(3 * nt, 0);
            for (long i = 0; i < nt; ++i)
                for (long j = 0; j < s.n(); ++j) {
                    if (self && i == j) continue;
                    double d[3], r2 = 0;
                    for (int a = 0; a < 3; ++a)
                        d[a] = tx[3 * i + a] - s.xyz[3 * j + a], r2 += d[a] * d[a];
                    double f, g = G(k, o.param, std::sqrt(r2), &f);
                    ph[i] += g * s.q[j];
                    for (int a = 0; a < 3; ++a) gr[3 * i + a] += f * d[a] * s.q[j];
                }
            EXPECT_LT(rel_err(r.phi, ph), 1e-13) << bldtt_kernel_name(k) << " self " << self;
            EXPECT_LT(rel_err(r.grad, gr), 1e-12) << bldtt_kernel_name(k) << " self " << self;
        }
    }
}

// Every kernel on the four distributions at a mid setting: potential and gradient.
// The oscillatory kernel sin(p r)/r is interpolated only on clusters with p r <= n (its
// MAC, docs/bldtt.md), else the large far clusters of the Plummer and Gaussian sets would be
// many wavelengths wide.
static void every_distribution(std::initializer_list<int> kernels, uint64_t seed) {
    const Dist dists[] = {UNIFORM, PLUMMER, GAUSSIAN, SPHERE};
    for (int k : kernels)
        for (Dist d : dists) {
            long n = k == BLDTT_YUKAWA ? 3000 : 6000; // scalar exp
            if (k == BLDTT_SINC && d == PLUMMER) n = 12000;
            Pts s = make(d, n, seed + 10 * k + d);
            // sin(pi r)/r varies on the cluster scale: two degrees more for the same accuracy
            bldtt_opts o = opts(k, 0.7, k == BLDTT_SINC ? 6 : 4, 40);
            // Proxies pay only on clusters of more than (n+1)^3 = 343 points, and the sinc MAC
            // admits only clusters with p r <= n. At p = pi the Gaussian set (3x the cube's
            // standard deviation) and the Plummer set (a dense core, sparse wide leaves around
            // it) had few or no clusters that are both, so whether a random set got any
            // approximation was a coin toss (0 pairs seen on both, 1 pair on Plummer at p =
            // pi/2). Fewer wavelengths across those sets, and twice the points for Plummer,
            // give hundreds of approximated pairs on every seed tried.
            if (k == BLDTT_SINC && d == GAUSSIAN) o.param /= 3;
            if (k == BLDTT_SINC && d == PLUMMER) o.param /= 2;
            Result r = run(o, s), ref = direct(o, s);
            double e = rel_err(r.phi, ref.phi), eg = rel_err(r.grad, ref.grad);
            std::cout << bldtt_kernel_name(k) << " " << dist_name(d) << " err " << e << " grad "
                      << eg << " pairs PP/PC/CP/CC " << r.info.pairs[0] << "/" << r.info.pairs[1]
                      << "/" << r.info.pairs[2] << "/" << r.info.pairs[3] << std::endl;
            // theta 0.7, n 4: the paper's Fig. 4 places this near 1e-5 (uniform) and a few
            // times worse for non-uniform sets. The oscillatory kernel at n 6 measured 2e-6
            // (uniform, sphere) to 1.6e-4 (Gaussian): its error grows with p r of the far clusters
            // The multiquadric grows with r and the charges are neutral, so phi is a small
            // difference of large terms (Plummer outliers at r ~ 100): its relative error
            // measured 1e-5..2e-4 over random Plummer sets
            double tol = k == BLDTT_SINC ? 1e-3 : k == BLDTT_MULTIQUADRIC ? 5e-4 : 1e-4;
            EXPECT_LT(e, tol) << bldtt_kernel_name(k) << " " << dist_name(d);
            EXPECT_LT(eg, 3 * tol) << bldtt_kernel_name(k) << " " << dist_name(d);
            EXPECT_GT(r.info.pairs[1] + r.info.pairs[2] + r.info.pairs[3], 0)
                << "no approximation used";
        }
}

TEST(Bldtt, EveryKernelEveryDistribution) {
    every_distribution({BLDTT_COULOMB, BLDTT_REGULARIZED, BLDTT_MULTIQUADRIC}, test_seed(2));
}

// Yukawa and sinc: scalar exp/sin make these (and their direct sums) ~5x slower; labelled slow
// (skipped only by the sanitizer pass).
TEST(Bldtt, ScalarKernelsEveryDistributionSlow) {
    every_distribution({BLDTT_YUKAWA, BLDTT_SINC}, test_seed(12));
}

// The (theta, n) ladder: from about 1 digit to 10, Coulomb on uniform and Plummer sets. The
// low degrees on a self-interacting set (every interaction type); the high degrees where the
// clusters are large enough for proxies at this size: targets in a cube next to the sources.
TEST(BldttLadder, CoulombSelf) {
    uint64_t seed = test_seed(3);
    struct Step {
        double theta;
        int n;
        double lo, hi;
    };
    // measured (uniform/Plummer, N = 20000, leaf 64): 4.7e-2, 9.7e-3, 4e-4, 5e-5, 4.7e-6
    const Step steps[] = {{0.9, 1, 1e-3, 2e-1},
                          {0.9, 2, 1e-4, 5e-2},
                          {0.8, 3, 1e-6, 3e-3},
                          {0.7, 4, 1e-7, 5e-4},
                          {0.6, 5, 1e-8, 5e-5}};
    for (Dist d : {UNIFORM, PLUMMER}) {
        Pts s = make(d, 20000, seed + d);
        bldtt_opts o0 = opts(BLDTT_COULOMB, 0.7, 4, 64);
        Result ref = direct(o0, s, {}, false);
        double prev = 1;
        for (const Step &st : steps) {
            Result r = run(opts(BLDTT_COULOMB, st.theta, st.n, 64), s, {}, false);
            double e = rel_err(r.phi, ref.phi);
            std::cout << dist_name(d) << " theta " << st.theta << " n " << st.n << " err " << e
                      << " CC pairs " << r.info.pairs[3] << std::endl;
            EXPECT_LT(e, st.hi) << dist_name(d) << " theta " << st.theta << " n " << st.n;
            EXPECT_GT(e, st.lo) << "suspiciously exact: was any approximation used?";
            EXPECT_LT(e, prev) << "the ladder must improve";
            prev = e;
        }
    }
}

TEST(BldttLadder, CoulombHighDegreeSeparated) {
    uint64_t seed = test_seed(4);
    Pts s = make(UNIFORM, 30000, seed);
    std::vector<double> t(3 * 16000);
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (size_t i = 0; i < t.size(); ++i) t[i] = u(g) + (i % 3 == 0 ? 4.0 : 0.0); // cube at x + 4
    bldtt_opts o0 = opts(BLDTT_COULOMB, 0.7, 4, 64);
    Result ref = direct(o0, s, t, false);
    struct Step {
        double theta;
        int n;
        double hi;
    };
    // all of the potential is far field here (no near-field part in the norm), so the
    // relative errors are larger than for a self-interacting set at the same (theta, n)
    const Step steps[] = {{0.7, 6, 1e-4}, {0.7, 8, 3e-6}, {0.5, 10, 1e-9}, {0.5, 12, 1e-10}};
    double prev = 1;
    for (const Step &st : steps) {
        Result r = run(opts(BLDTT_COULOMB, st.theta, st.n, 2000), s, t, false);
        double e = rel_err(r.phi, ref.phi);
        std::cout << "separated theta " << st.theta << " n " << st.n << " err " << e << " pairs "
                  << r.info.pairs[0] << "/" << r.info.pairs[1] << "/" << r.info.pairs[2] << "/"
                  << r.info.pairs[3] << std::endl;
        EXPECT_LT(e, st.hi);
        EXPECT_LT(e, prev);
        if (st.n <= 10) {
            EXPECT_GT(r.info.pairs[3], 0) << "cluster-cluster must be exercised";
        }
        prev = e;
    }
}

// BLTC (particle-cluster only) against BLDTT: both against the direct sum and each other.
TEST(Bldtt, BltcAgreesWithBldtt) {
    uint64_t seed = test_seed(5);
    for (Dist d : {UNIFORM, GAUSSIAN}) {
        Pts s = make(d, 8000, seed + d);
        bldtt_opts a = opts(BLDTT_COULOMB, 0.7, 4, 40),
                   b = opts(BLDTT_COULOMB, 0.7, 4, 40, BLDTT_METHOD_BLTC);
        Result ra = run(a, s), rb = run(b, s), ref = direct(a, s);
        double ea = rel_err(ra.phi, ref.phi), eb = rel_err(rb.phi, ref.phi),
               eab = rel_err(ra.phi, rb.phi);
        std::cout << dist_name(d) << " BLDTT " << ea << " BLTC " << eb << " between " << eab
                  << "; BLDTT pairs " << ra.info.pairs[0] << "/" << ra.info.pairs[1] << "/"
                  << ra.info.pairs[2] << "/" << ra.info.pairs[3] << std::endl;
        EXPECT_LT(ea, 1e-4);
        EXPECT_LT(eb,
                  3e-4); // BLTC is the less accurate of the two at equal (theta, n) (WVK Table 2)
        EXPECT_LE(eab, 1.01 * (ea + eb));
        EXPECT_EQ(rb.info.pairs[2] + rb.info.pairs[3], 0) << "BLTC has no CP/CC";
        EXPECT_GT(rb.info.pairs[1], 0);
        // the dual traversal's cluster-target forms; a Gaussian set of 8000 has only 0-50 CC pairs
        // at (0.7, 4, 40) (seed 12267817498007079654: none, CP 651)
        EXPECT_GT(ra.info.pairs[2], 0);
        if (d == UNIFORM) {
            EXPECT_GT(ra.info.pairs[3], 0);
        }
    }
}

// Unequal targets and sources, both ways round, with some targets exactly on sources.
TEST(Bldtt, UnequalTargetsAndSources) {
    uint64_t seed = test_seed(6);
    for (int k : {BLDTT_COULOMB, BLDTT_YUKAWA, BLDTT_MULTIQUADRIC}) {
        for (int big_t = 0; big_t < 2; ++big_t) {
            Pts s = make(PLUMMER, big_t ? 3000 : 12000, seed + k);
            Pts tp = make(UNIFORM, big_t ? 12000 : 3000, seed + 100 + k);
            std::vector<double> t = tp.xyz;
            for (int i = 0; i < 50; ++i) // targets on sources: r = 0 pairs
                for (int a = 0; a < 3; ++a) t[3 * (7 * i) + a] = s.xyz[3 * (11 * i) + a];
            bldtt_opts o = opts(k, 0.7, 5, 64);
            Result r = run(o, s, t), ref = direct(o, s, t);
            double e = rel_err(r.phi, ref.phi), eg = rel_err(r.grad, ref.grad);
            std::cout << bldtt_kernel_name(k) << " M " << t.size() / 3 << " N " << s.n() << " err "
                      << e << " grad " << eg << std::endl;
            // (theta 0.7, n 5) on these sets: 1e-6 .. 1.5e-5 for Coulomb and Yukawa over 12
            // seeds (the worst targets sit next to a dense Plummer cluster), so 3x room above
            // that. Multiquadric: neutral Plummer sources make phi a small difference of large
            // growing terms, 5x the bound as in EveryKernelEveryDistribution.
            double f = k == BLDTT_MULTIQUADRIC ? 5 : 1;
            EXPECT_LT(e, 5e-5 * f);
            EXPECT_LT(eg, 1e-4);
            for (double v : r.phi) ASSERT_TRUE(std::isfinite(v));
        }
    }
}

// The self term is left out: for the multiquadric, phi_i + c q_i is the full mat-vec.
TEST(Bldtt, MultiquadricSelfTermConvention) {
    uint64_t seed = test_seed(7);
    Pts s = make(SPHERE, 6000, seed);
    bldtt_opts o = opts(BLDTT_MULTIQUADRIC, 0.6, 6, 64);
    o.param = 0.3;
    Result r = run(o, s, {}, false);
    std::vector<double> full(s.n(), 0);
    for (long i = 0; i < s.n(); ++i)
        for (long j = 0; j < s.n(); ++j) {
            double r2 = 0;
            for (int a = 0; a < 3; ++a) r2 += std::pow(s.xyz[3 * i + a] - s.xyz[3 * j + a], 2);
            full[i] += std::sqrt(r2 + o.param * o.param) * s.q[j];
        }
    for (long i = 0; i < s.n(); ++i)
        r.phi[i] += bldtt_kernel_value(BLDTT_MULTIQUADRIC, o.param, 0) * s.q[i];
    double e = rel_err(r.phi, full);
    std::cout << "multiquadric full mat-vec err " << e << std::endl;
    EXPECT_LT(e, 1e-6);
    EXPECT_EQ(bldtt_kernel_value(BLDTT_MULTIQUADRIC, 0.3, 0), 0.3);
    EXPECT_TRUE(std::isinf(bldtt_kernel_value(BLDTT_COULOMB, 0, 0)));
    EXPECT_DOUBLE_EQ(bldtt_kernel_value(BLDTT_SINC, 2.0, 0), 2.0);
}

// Degenerate geometry: a plane, a line, coincident points, one and two particles.
TEST(Bldtt, DegenerateSets) {
    uint64_t seed = test_seed(8);
    Pts s = make(UNIFORM, 6000, seed);
    for (int mode = 0; mode < 3; ++mode) {
        Pts p = s;
        for (long i = 0; i < p.n(); ++i) {
            if (mode >= 0) p.xyz[3 * i + 2] = 0.25;               // plane z = 0.25
            if (mode >= 1) p.xyz[3 * i + 1] = -0.5;               // line
            if (mode == 2 && i % 3 == 0) p.xyz[3 * i] = p.xyz[0]; // many coincident points
        }
        for (int k : {BLDTT_COULOMB, BLDTT_REGULARIZED}) {
            // robustness, not a new accuracy claim: finite results, and the error falls with n
            // (on a line the regularised potential has no 1/r near-field peak in its norm, so
            // its relative error sits ~100x above Coulomb's)
            bldtt_opts o = opts(k, 0.6, 8, 32), o4 = opts(k, 0.6, 4, 32);
            Result r = run(o, p), r4 = run(o4, p), ref = direct(o, p);
            double e = rel_err(r.phi, ref.phi), e4 = rel_err(r4.phi, ref.phi);
            std::cout << "mode " << mode << " " << bldtt_kernel_name(k) << " err n4 " << e4
                      << " n8 " << e << std::endl;
            EXPECT_LT(e, 1e-5) << "mode " << mode;
            EXPECT_LT(e, e4 / 10) << "mode " << mode;
            for (double v : r.phi) ASSERT_TRUE(std::isfinite(v));
        }
    }
    for (long n : {1L, 2L}) {
        Pts p = make(UNIFORM, n, seed);
        Result r = run(opts(BLDTT_COULOMB, 0.7, 3, 0), p),
               ref = direct(opts(BLDTT_COULOMB, 0.7, 3, 0), p);
        EXPECT_LT(rel_err(r.phi, ref.phi), 1e-15);
        if (n == 1) {
            EXPECT_EQ(r.phi[0], 0.0);
        }
    }
}

// Same plan, new weights: linear in q, reproducible, independent of the thread count.
TEST(Bldtt, ReuseLinearityThreads) {
    uint64_t seed = test_seed(9);
    Pts s = make(GAUSSIAN, 8000, seed);
    bldtt_opts o = opts(BLDTT_COULOMB, 0.7, 4, 64);
    o.threads = 1;
    bldtt_plan *p1, *p2;
    ASSERT_EQ(bldtt_makeplan(&o, &p1), FMM_OK);
    o.threads = 2;
    ASSERT_EQ(bldtt_makeplan(&o, &p2), FMM_OK);
    ASSERT_EQ(bldtt_setpts(p1, s.n(), s.xyz.data(), 0, nullptr), FMM_OK);
    ASSERT_EQ(bldtt_setpts(p2, s.n(), s.xyz.data(), 0, nullptr), FMM_OK);
    std::vector<double> q2(s.n()), a(s.n()), b(s.n()), c(s.n()), d(s.n());
    for (long i = 0; i < s.n(); ++i) q2[i] = std::cos(0.37 * i);
    ASSERT_EQ(bldtt_execute(p1, s.q.data(), a.data(), nullptr), FMM_OK);
    ASSERT_EQ(bldtt_execute(p2, s.q.data(), b.data(), nullptr), FMM_OK);
    EXPECT_EQ(a, b) << "1 and 2 threads must give identical results";
    ASSERT_EQ(bldtt_execute(p1, q2.data(), c.data(), nullptr), FMM_OK);
    std::vector<double> qs(s.n());
    for (long i = 0; i < s.n(); ++i) qs[i] = 2 * s.q[i] - 3 * q2[i];
    ASSERT_EQ(bldtt_execute(p1, qs.data(), d.data(), nullptr), FMM_OK);
    std::vector<double> lin(s.n());
    for (long i = 0; i < s.n(); ++i) lin[i] = 2 * a[i] - 3 * c[i];
    EXPECT_LT(rel_err(d, lin), 1e-12);
    ASSERT_EQ(bldtt_execute(p1, s.q.data(), c.data(), nullptr), FMM_OK);
    EXPECT_EQ(a, c) << "re-executing must reproduce";
    bldtt_destroy(p1);
    bldtt_destroy(p2);
}

// Every entry point rejects bad input with the right code, and a failed call leaves the plan
// usable.
TEST(Bldtt, BadInputRejected) {
    bldtt_opts o;
    bldtt_default_opts(&o);
    bldtt_plan *p = (bldtt_plan *)0x1;
    EXPECT_EQ(bldtt_makeplan(nullptr, &p), FMM_ERR_ARG);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(bldtt_makeplan(&o, nullptr), FMM_ERR_ARG);
    auto bad = [&](bldtt_opts b, int code, const char *what) {
        bldtt_plan *q = (bldtt_plan *)0x1;
        EXPECT_EQ(bldtt_makeplan(&b, &q), code) << what;
        EXPECT_EQ(q, nullptr) << what;
    };
    bldtt_opts b = o;
    b.kernel = -1, bad(b, FMM_ERR_PARAM, "kernel -1");
    b = o, b.kernel = BLDTT_NKERNELS, bad(b, FMM_ERR_PARAM, "kernel 5");
    b = o, b.theta = 0, bad(b, FMM_ERR_PARAM, "theta 0");
    b = o, b.theta = 1, bad(b, FMM_ERR_PARAM, "theta 1");
    b = o, b.theta = NAN, bad(b, FMM_ERR_PARAM, "theta nan");
    b = o, b.degree = -1, bad(b, FMM_ERR_PARAM, "degree -1");
    b = o, b.degree = BLDTT_DEGREE_MAX + 1, bad(b, FMM_ERR_PARAM, "degree 17");
    b = o, b.leaf_size = -1, bad(b, FMM_ERR_PARAM, "leaf -1");
    b = o, b.leaf_size = BLDTT_LEAF_MAX + 1, bad(b, FMM_ERR_PARAM, "leaf big");
    b = o, b.method = 2, bad(b, FMM_ERR_PARAM, "method");
    b = o, b.threads = -1, bad(b, FMM_ERR_THREADS, "threads");
    b = o, b.threads = 100000, bad(b, FMM_ERR_THREADS, "threads 100000");
    b = o, b.threads = INT_MAX, bad(b, FMM_ERR_THREADS, "threads INT_MAX");
    b = o, b.device = 7, bad(b, FMM_ERR_PARAM, "device 7");
    b = o, b.kernel = BLDTT_REGULARIZED, b.param = 0, bad(b, FMM_ERR_PARAM, "eps 0");
    b = o, b.kernel = BLDTT_SINC, b.param = -1, bad(b, FMM_ERR_PARAM, "sinc -1");
    b = o, b.kernel = BLDTT_YUKAWA, b.param = -0.1, bad(b, FMM_ERR_PARAM, "kappa < 0");
    b = o, b.kernel = BLDTT_MULTIQUADRIC, b.param = INFINITY, bad(b, FMM_ERR_PARAM, "c inf");
    if (fmm_cuda_device_count() == 0) {
        b = o, b.device = FMM_DEVICE_CUDA, bad(b, FMM_ERR_DEVICE, "cuda without device");
    }
    int k = -1;
    EXPECT_EQ(bldtt_kernel_from_name("laplace", &k), FMM_ERR_PARAM);
    EXPECT_EQ(bldtt_kernel_from_name("yukawa", &k), FMM_OK);
    EXPECT_EQ(k, BLDTT_YUKAWA);
    EXPECT_EQ(bldtt_kernel_name(9), nullptr);
    EXPECT_TRUE(std::isnan(bldtt_kernel_value(9, 0, 1)));
    EXPECT_STRNE(bldtt_strerror(FMM_ERR_PARAM), "");

    Pts s = make(UNIFORM, 3000, 17);
    o.degree = 4, o.leaf_size = 64;
    ASSERT_EQ(bldtt_makeplan(&o, &p), FMM_OK);
    std::vector<double> phi(s.n()), ref(s.n()), g(3 * s.n());
    EXPECT_EQ(bldtt_execute(p, s.q.data(), phi.data(), nullptr), FMM_ERR_NOPTS);
    EXPECT_EQ(bldtt_setpts(nullptr, s.n(), s.xyz.data(), 0, nullptr), FMM_ERR_ARG);
    EXPECT_EQ(bldtt_setpts(p, s.n(), nullptr, 0, nullptr), FMM_ERR_ARG);
    EXPECT_EQ(bldtt_setpts(p, 0, s.xyz.data(), 0, nullptr), FMM_ERR_NPTS);
    EXPECT_EQ(bldtt_setpts(p, s.n(), s.xyz.data(), 0, s.xyz.data()), FMM_ERR_NPTS);
    ASSERT_EQ(bldtt_setpts(p, s.n(), s.xyz.data(), 0, nullptr), FMM_OK);
    ASSERT_EQ(bldtt_execute(p, s.q.data(), ref.data(), nullptr), FMM_OK);
    std::vector<double> x2 = s.xyz;
    x2[100] = NAN;
    EXPECT_EQ(bldtt_setpts(p, s.n(), x2.data(), 0, nullptr), FMM_ERR_NONFINITE);
    EXPECT_EQ(bldtt_setpts(p, 10, s.xyz.data(), 2, x2.data() + 99), FMM_ERR_NONFINITE);
    x2[100] = INFINITY;
    EXPECT_EQ(bldtt_setpts(p, s.n(), x2.data(), 0, nullptr), FMM_ERR_NONFINITE);
    std::vector<double> q2 = s.q;
    q2[5] = NAN;
    EXPECT_EQ(bldtt_execute(p, q2.data(), phi.data(), nullptr), FMM_ERR_NONFINITE);
    EXPECT_EQ(bldtt_execute(p, nullptr, phi.data(), nullptr), FMM_ERR_ARG);
    EXPECT_EQ(bldtt_execute(p, s.q.data(), nullptr, nullptr), FMM_ERR_ARG);
    EXPECT_EQ(bldtt_execute(nullptr, s.q.data(), phi.data(), nullptr), FMM_ERR_ARG);
    // the failed calls left the plan as it was
    ASSERT_EQ(bldtt_execute(p, s.q.data(), phi.data(), g.data()), FMM_OK);
    EXPECT_EQ(phi, ref);
    bldtt_info info;
    EXPECT_EQ(bldtt_get_info(p, &info), FMM_OK);
    EXPECT_EQ(info.nsources, s.n());
    EXPECT_EQ(bldtt_get_info(nullptr, &info), FMM_ERR_ARG);
    bldtt_destroy(p);
    bldtt_destroy(nullptr);
    // direct sums
    EXPECT_EQ(
        bldtt_direct(nullptr, s.n(), s.xyz.data(), s.q.data(), 0, nullptr, phi.data(), nullptr),
        FMM_ERR_ARG);
    EXPECT_EQ(bldtt_direct(&o, 0, s.xyz.data(), s.q.data(), 0, nullptr, phi.data(), nullptr),
              FMM_ERR_NPTS);
    EXPECT_EQ(bldtt_direct(&o, s.n(), s.xyz.data(), q2.data(), 0, nullptr, phi.data(), nullptr),
              FMM_ERR_NONFINITE);
    long idx = s.n();
    EXPECT_EQ(bldtt_direct_subset(&o, s.n(), s.xyz.data(), s.q.data(), 0, nullptr, 1, &idx,
                                  phi.data(), nullptr),
              FMM_ERR_ARG);
}

// ---- scales (issue 33, defect 2): a correct result or FMM_ERR_RANGE, never NaN/0 with FMM_OK --

namespace {

// One plan (or with direct_sum, bldtt_direct) on s, targets = sources: the status, with phi
// and/or grad filled where not NULL.
int run_rc(const bldtt_opts &o, const Pts &s, bool direct_sum, std::vector<double> *phi,
           std::vector<double> *grad) {
    long n = s.n();
    if (phi) phi->assign(n, NAN);
    if (grad) grad->assign(3 * n, NAN);
    double *pp = phi ? phi->data() : nullptr, *gp = grad ? grad->data() : nullptr;
    if (direct_sum) return bldtt_direct(&o, n, s.xyz.data(), s.q.data(), 0, nullptr, pp, gp);
    bldtt_plan *p = nullptr;
    int rc = bldtt_makeplan(&o, &p);
    if (!rc) rc = bldtt_setpts(p, n, s.xyz.data(), 0, nullptr);
    if (!rc) rc = bldtt_execute(p, s.q.data(), pp, gp);
    bldtt_destroy(p);
    return rc;
}

// v * 2^e element by element, or empty when the result is not representable by the library's
// rule (FMM_ERR_RANGE): a value not finite, or a largest value below DBL_MIN.
std::vector<double> ldexp_or_empty(const std::vector<double> &v, int e) {
    std::vector<double> r(v.size());
    double mx = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        r[i] = std::ldexp(v[i], e);
        if (!std::isfinite(r[i])) return {};
        mx = std::max(mx, std::fabs(r[i]));
    }
    return mx < DBL_MIN ? std::vector<double>{} : r;
}

// v * s^k by |k| multiplications (s^k itself may be out of range where the product is not)
std::vector<double> times_pow(std::vector<double> v, double s, int k) {
    for (double &x : v)
        for (int i = 0; i < std::abs(k); ++i) x = k > 0 ? x * s : x / s;
    return v;
}

// rel_err for values whose squares leave the double range (near 1e200 or 1e-200): both
// divided by the largest |ref| first
double rel_err_scaled(const std::vector<double> &a, const std::vector<double> &ref) {
    double m = 0;
    for (double x : ref) m = std::max(m, std::fabs(x));
    if (m == 0) return rel_err(a, ref);
    std::vector<double> as(a.size()), rs(ref.size());
    for (size_t i = 0; i < a.size(); ++i) as[i] = a[i] / m, rs[i] = ref[i] / m;
    return rel_err(as, rs);
}

std::string sci(double x) {
    char b[32];
    snprintf(b, sizeof b, "%g", x);
    return b;
}

bool representable(const std::vector<double> &v) {
    double mx = 0;
    for (double x : v) {
        if (!std::isfinite(x)) return false;
        mx = std::max(mx, std::fabs(x));
    }
    return mx >= DBL_MIN;
}

} // namespace

// Powers of two change no digit: with the coordinates (and the kernel's parameter with them)
// scaled by 2^e, phi and grad are the unit-scale results times 2^(m e) and 2^((m-1) e)
// (m = -1; +1 for the multiquadric) bitwise, from 2^-990 to 2^1000, for the plan and the direct
// sum; where those are beyond the double range, FMM_ERR_RANGE, and whichever output is in range
// can still be asked for alone. (Unnormalised, r^2 and 1/r^3 left the range at 2^-365 and
// 2^300: NaN, zeros or 16% errors with FMM_OK.)
TEST(Bldtt, PowerOfTwoScalesExactOrRangeError) {
    uint64_t seed = test_seed(13);
    Pts s = make(UNIFORM, 1200, seed);
    for (int k = 0; k < BLDTT_NKERNELS; ++k) {
        bldtt_opts o = opts(k, 0.7, 4, 64);
        const int m = k == BLDTT_MULTIQUADRIC ? 1 : -1;
        for (int direct_sum = 0; direct_sum < 2; ++direct_sum) {
            std::vector<double> phi1, grad1;
            ASSERT_EQ(run_rc(o, s, direct_sum, &phi1, &grad1), FMM_OK);
            for (int e : {-990, -600, -365, 300, 1000}) {
                Pts t = s;
                for (double &x : t.xyz) x = std::ldexp(x, e);
                bldtt_opts os = o;
                os.param = std::ldexp(o.param, k == BLDTT_YUKAWA || k == BLDTT_SINC ? -e : e);
                std::vector<double> ephi = ldexp_or_empty(phi1, m * e),
                                    egrad = ldexp_or_empty(grad1, (m - 1) * e);
                std::string what = std::string(bldtt_kernel_name(k)) +
                                   (direct_sum ? " direct" : " plan") + " 2^" + std::to_string(e);
                std::vector<double> phi, grad;
                int want = ephi.empty() || egrad.empty() ? FMM_ERR_RANGE : FMM_OK;
                EXPECT_EQ(run_rc(os, t, direct_sum, &phi, &grad), want) << what;
                if (!want) {
                    EXPECT_TRUE(phi == ephi) << what << " phi not bitwise";
                    EXPECT_TRUE(grad == egrad) << what << " grad not bitwise";
                }
                EXPECT_EQ(run_rc(os, t, direct_sum, &phi, nullptr),
                          ephi.empty() ? FMM_ERR_RANGE : FMM_OK)
                    << what;
                if (!ephi.empty()) {
                    EXPECT_TRUE(phi == ephi) << what << " phi alone not bitwise";
                }
                EXPECT_EQ(run_rc(os, t, direct_sum, nullptr, &grad),
                          egrad.empty() ? FMM_ERR_RANGE : FMM_OK)
                    << what;
                if (!egrad.empty()) {
                    EXPECT_TRUE(grad == egrad) << what << " grad alone not bitwise";
                }
            }
        }
    }
}

// The issue's scales, 1e-110, 1e-160, 1e-300 and 1e300 (not powers of two, so the inputs round):
// the direct sum agrees with the unit-scale one times s^m to rounding, the plan with the direct
// sum to its accuracy, or both say FMM_ERR_RANGE for an output beyond the double range (the
// Coulomb gradient near 1e320 at 1e-160).
TEST(Bldtt, IssueScalesAccurateOrRangeError) {
    uint64_t seed = test_seed(14);
    Pts s = make(UNIFORM, 1500, seed);
    for (int k = 0; k < BLDTT_NKERNELS; ++k) {
        bldtt_opts o = opts(k, 0.7, 4, 64);
        const int m = k == BLDTT_MULTIQUADRIC ? 1 : -1;
        Result d1 = direct(o, s);
        for (double sc : {1e-110, 1e-160, 1e-300, 1e300}) {
            Pts t = s;
            for (double &x : t.xyz) x *= sc;
            bldtt_opts os = o;
            os.param = k == BLDTT_YUKAWA || k == BLDTT_SINC ? o.param / sc : o.param * sc;
            std::vector<double> ephi = times_pow(d1.phi, sc, m),
                                egrad = times_pow(d1.grad, sc, m - 1);
            bool okp = representable(ephi), okg = representable(egrad);
            std::string what = std::string(bldtt_kernel_name(k)) + " scale " + sci(sc);
            std::vector<double> dphi, dgrad, phi, grad;
            EXPECT_EQ(run_rc(os, t, true, &dphi, &dgrad), okp && okg ? FMM_OK : FMM_ERR_RANGE)
                << what;
            EXPECT_EQ(run_rc(os, t, false, &phi, &grad), okp && okg ? FMM_OK : FMM_ERR_RANGE)
                << what;
            if (!okp) continue;
            ASSERT_EQ(run_rc(os, t, true, &dphi, nullptr), FMM_OK) << what;
            ASSERT_EQ(run_rc(os, t, false, &phi, nullptr), FMM_OK) << what;
            double tol = k == BLDTT_SINC ? 1e-3 : k == BLDTT_MULTIQUADRIC ? 5e-4 : 1e-4;
            EXPECT_LT(rel_err_scaled(dphi, ephi), 1e-12) << what;
            EXPECT_LT(rel_err_scaled(phi, dphi), tol) << what;
            if (!okg) continue;
            ASSERT_EQ(run_rc(os, t, true, nullptr, &dgrad), FMM_OK) << what;
            ASSERT_EQ(run_rc(os, t, false, nullptr, &grad), FMM_OK) << what;
            EXPECT_LT(rel_err_scaled(dgrad, egrad), 1e-12) << what;
            EXPECT_LT(rel_err_scaled(grad, dgrad), 3 * tol) << what;
        }
    }
}

// Parameters and weights at the edges of the range: a Yukawa kappa r beyond DBL_MAX (the
// kernel is 0 everywhere: zeros, not NaN), a regularisation eps = 1e-200 whose square
// underflows (coincident points get q/eps, not Inf), a multiquadric shape 1e-200 on coincident
// points (c q, not 0), weights near DBL_MAX whose terms overflow but whose sum does not.
TEST(Bldtt, ExtremeParametersAndWeights) {
    uint64_t seed = test_seed(15);
    {
        Pts s = make(UNIFORM, 1500, seed);
        for (double &x : s.xyz) x *= 1e10;
        bldtt_opts o = opts(BLDTT_YUKAWA, 0.7, 4, 64);
        o.param = 1e300;
        for (int direct_sum = 0; direct_sum < 2; ++direct_sum) {
            std::vector<double> phi, grad;
            EXPECT_EQ(run_rc(o, s, direct_sum, &phi, &grad), FMM_OK);
            long nonzero = 0;
            for (double v : phi) nonzero += v != 0.0;
            for (double v : grad) nonzero += v != 0.0;
            EXPECT_EQ(nonzero, 0) << "yukawa kappa 1e300 direct " << direct_sum;
        }
    }
    {
        // 1000 points, the first 40 of them in 20 coincident pairs
        Pts s = make(UNIFORM, 1000, seed + 1);
        for (int i = 0; i < 20; ++i)
            for (int a = 0; a < 3; ++a) s.xyz[3 * (2 * i + 1) + a] = s.xyz[3 * (2 * i) + a];
        bldtt_opts o = opts(BLDTT_REGULARIZED, 0.7, 6, 32);
        o.param = 1e-200;
        std::vector<double> ref(s.n(), 0), gref(3 * s.n(), 0);
        for (long i = 0; i < s.n(); ++i)
            for (long j = 0; j < s.n(); ++j) {
                if (i == j) continue;
                double d[3], r2 = 0;
                for (int a = 0; a < 3; ++a)
                    d[a] = s.xyz[3 * i + a] - s.xyz[3 * j + a], r2 += d[a] * d[a];
                if (r2 == 0) {
                    ref[i] += s.q[j] / o.param;
                    continue;
                }
                double f, g = G(BLDTT_REGULARIZED, o.param, std::sqrt(r2), &f);
                ref[i] += g * s.q[j];
                for (int a = 0; a < 3; ++a) gref[3 * i + a] += f * d[a] * s.q[j];
            }
        for (int direct_sum = 0; direct_sum < 2; ++direct_sum) {
            std::vector<double> phi, grad;
            ASSERT_EQ(run_rc(o, s, direct_sum, &phi, &grad), FMM_OK);
            // the 40 paired points carry q/eps ~ 1e200, the others ordinary values: apart
            std::vector<double> pa(phi.begin(), phi.begin() + 40),
                ra(ref.begin(), ref.begin() + 40);
            std::vector<double> pb(phi.begin() + 40, phi.end()), rb(ref.begin() + 40, ref.end());
            EXPECT_LT(rel_err_scaled(pa, ra), 1e-15)
                << "regularized eps 1e-200, direct " << direct_sum;
            EXPECT_LT(rel_err_scaled(pb, rb), direct_sum ? 1e-13 : 1e-5) << "direct " << direct_sum;
            EXPECT_LT(rel_err_scaled(grad, gref), direct_sum ? 1e-12 : 1e-4)
                << "direct " << direct_sum;
        }
    }
    {
        Pts s = make(UNIFORM, 600, seed + 2);
        for (double &x : s.xyz) x = 1.0; // every point at (1, 1, 1)
        bldtt_opts o = opts(BLDTT_MULTIQUADRIC, 0.7, 4, 32);
        o.param = 1e-200;
        double qsum = 0;
        for (double q : s.q) qsum += q;
        std::vector<double> ref(s.n());
        for (long i = 0; i < s.n(); ++i) ref[i] = o.param * (qsum - s.q[i]);
        for (int direct_sum = 0; direct_sum < 2; ++direct_sum) {
            std::vector<double> phi;
            ASSERT_EQ(run_rc(o, s, direct_sum, &phi, nullptr), FMM_OK);
            EXPECT_LT(rel_err_scaled(phi, ref), 1e-12)
                << "multiquadric c 1e-200 coincident, direct " << direct_sum;
        }
    }
    {
        // phi at the origin of +-2^1020 at distances 0.01 and 0.0101: 2^1020 (100 - 99.0099..)
        double src[6] = {0.01, 0, 0, 0.0101, 0, 0},
               q[2] = {std::ldexp(1.0, 1020), -std::ldexp(1.0, 1020)};
        double trg[3] = {0, 0, 0}, phi = NAN, dphi = NAN;
        double want = std::ldexp(1.0, 1020) * (1 / 0.01 - 1 / 0.0101);
        bldtt_opts o = opts(BLDTT_COULOMB, 0.7, 4, 0);
        bldtt_plan *p = nullptr;
        ASSERT_EQ(bldtt_makeplan(&o, &p), FMM_OK);
        ASSERT_EQ(bldtt_setpts(p, 2, src, 1, trg), FMM_OK);
        ASSERT_EQ(bldtt_execute(p, q, &phi, nullptr), FMM_OK);
        double g3[3];
        EXPECT_EQ(bldtt_execute(p, q, nullptr, g3), FMM_ERR_RANGE)
            << "2^1020 (1e4 - 0.98e4) overflows";
        bldtt_destroy(p);
        ASSERT_EQ(bldtt_direct(&o, 2, src, q, 1, trg, &dphi, nullptr), FMM_OK);
        EXPECT_NEAR(phi / want, 1.0, 1e-13);
        EXPECT_NEAR(dphi / want, 1.0, 1e-13);
    }
}

// A slab 1e-10 thick and 1e300 wide: in the normalised units (coordinates below 1) the
// clusters are subnormally thin, so a particle lies closer to an interpolation point than
// w_k / (x - s_k) can bear (NaN before BT_NODE_HIT). Coulomb phi; its gradient, near 1e-600,
// is out of range.
TEST(Bldtt, ThinSlabInHugeCloud) {
    uint64_t seed = test_seed(16);
    Pts s = make(UNIFORM, 6000, seed);
    for (long i = 0; i < s.n(); ++i)
        for (int a = 0; a < 3; ++a) s.xyz[3 * i + a] *= a == 0 ? 1e-10 : 1e300;
    bldtt_opts o = opts(BLDTT_COULOMB, 0.7, 6, 64);
    std::vector<double> phi, dphi, grad;
    Result info = run(o, s, {}, false);
    EXPECT_GT(info.info.pairs[1] + info.info.pairs[2] + info.info.pairs[3], 0)
        << "no interpolation used";
    ASSERT_EQ(run_rc(o, s, false, &phi, nullptr), FMM_OK);
    ASSERT_EQ(run_rc(o, s, true, &dphi, nullptr), FMM_OK);
    EXPECT_LT(rel_err_scaled(phi, dphi), 1e-5);
    EXPECT_EQ(run_rc(o, s, false, nullptr, &grad), FMM_ERR_RANGE);
}

// ---- repeatability (issue 33, defect 6) --------------------------------------------------------

// The same input and thread count give bitwise the same outputs, call after call and plan
// after plan, for 2, 3 and 4 threads (and, as it happens, across thread counts: every output is
// summed by one thread in a fixed order).
TEST(Bldtt, RepeatableBitwise) {
    uint64_t seed = test_seed(17);
    Pts s = make(PLUMMER, 6000, seed);
    for (int k : {BLDTT_COULOMB, BLDTT_MULTIQUADRIC})
        for (int method : {BLDTT_METHOD_DTT, BLDTT_METHOD_BLTC}) {
            std::vector<double> phi0, grad0;
            for (int th : {2, 3, 4})
                for (int rep = 0; rep < 2; ++rep) {
                    bldtt_opts o = opts(k, 0.7, 5, 64, method);
                    o.threads = th;
                    std::vector<double> phi, grad;
                    ASSERT_EQ(run_rc(o, s, false, &phi, &grad), FMM_OK);
                    if (phi0.empty()) phi0 = phi, grad0 = grad;
                    EXPECT_TRUE(phi == phi0 && grad == grad0)
                        << bldtt_kernel_name(k) << " method " << method << " threads " << th
                        << " rep " << rep;
                }
        }
}

// Different plans may run in different threads at once (include/fmm_bldtt.h, "Lifetime and
// threads"): two plans of different kernels and degrees, each called in its own thread three
// times, give bitwise their results of one thread alone.
TEST(Bldtt, PlansInConcurrentThreads) {
    uint64_t seed = test_seed(18);
    Pts s = make(GAUSSIAN, 6000, seed);
    bldtt_opts oa = opts(BLDTT_COULOMB, 0.7, 4, 64), ob = opts(BLDTT_MULTIQUADRIC, 0.6, 6, 64);
    oa.threads = ob.threads = 2;
    Result ra = run(oa, s), rb = run(ob, s);
    std::vector<double> pa[3], ga[3], pb[3], gb[3];
    int rca[3] = {-1, -1, -1}, rcb[3] = {-1, -1, -1};
    std::thread ta([&] {
        for (int k = 0; k < 3; ++k) rca[k] = run_rc(oa, s, false, &pa[k], &ga[k]);
    });
    std::thread tb([&] {
        for (int k = 0; k < 3; ++k) rcb[k] = run_rc(ob, s, false, &pb[k], &gb[k]);
    });
    ta.join(), tb.join();
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(rca[k], FMM_OK);
        EXPECT_EQ(rcb[k], FMM_OK);
        EXPECT_TRUE(pa[k] == ra.phi && ga[k] == ra.grad) << "coulomb call " << k;
        EXPECT_TRUE(pb[k] == rb.phi && gb[k] == rb.grad) << "multiquadric call " << k;
    }
}

// Two CUDA plans of different degrees, set up one after the other and then executed: each
// gives its own CPU plan's result (the barycentric weights were a per-degree table in
// constant memory, overwritten by the last bldtt_setpts of any plan).
TEST(BldttGpu, PlansOfDifferentDegrees) {
    if (fmm_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    uint64_t seed = test_seed(19);
    Pts s = make(UNIFORM, test_size(30000, 3000), seed);
    bldtt_opts o[2] = {opts(BLDTT_COULOMB, 0.7, 4, 200), opts(BLDTT_COULOMB, 0.7, 7, 200)};
    Result cpu[2] = {run(o[0], s, {}, false), run(o[1], s, {}, false)};
    bldtt_plan *p[2] = {nullptr, nullptr};
    for (int k = 0; k < 2; ++k) {
        o[k].device = FMM_DEVICE_CUDA;
        ASSERT_EQ(bldtt_makeplan(&o[k], &p[k]), FMM_OK);
        ASSERT_EQ(bldtt_setpts(p[k], s.n(), s.xyz.data(), 0, nullptr), FMM_OK);
    }
    for (int k = 0; k < 2; ++k) {
        std::vector<double> phi(s.n());
        ASSERT_EQ(bldtt_execute(p[k], s.q.data(), phi.data(), nullptr), FMM_OK);
        double e = rel_err(phi, cpu[k].phi);
        std::cout << "degree " << o[k].degree << " gpu-cpu " << e << std::endl;
        EXPECT_LT(e, 1e-13) << "degree " << o[k].degree;
        bldtt_destroy(p[k]);
    }
}

// The normalisation happens before the CPU/GPU dispatch: a CUDA plan and the CUDA direct sum
// on a set scaled by 2^-600 (where the unnormalised gradient overflowed) agree with the CPU to
// rounding, every kernel (the CPU is checked against the unit scale bitwise above).
TEST(BldttGpu, ExtremeScalesMatchCpu) {
    if (fmm_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    uint64_t seed = test_seed(20);
    Pts s = make(UNIFORM, test_size(20000, 3000), seed);
    for (double &x : s.xyz) x = std::ldexp(x, -600);
    for (int k = 0; k < BLDTT_NKERNELS; ++k) {
        bldtt_opts o = opts(k, 0.7, 5, 200);
        o.param = std::ldexp(o.param, k == BLDTT_YUKAWA || k == BLDTT_SINC ? 600 : -600);
        std::vector<double> pc, gc, pg, gg, dc, dg;
        ASSERT_EQ(run_rc(o, s, false, &pc, k == BLDTT_MULTIQUADRIC ? &gc : nullptr), FMM_OK);
        ASSERT_EQ(run_rc(o, s, true, &dc, nullptr), FMM_OK);
        o.device = FMM_DEVICE_CUDA;
        ASSERT_EQ(run_rc(o, s, false, &pg, k == BLDTT_MULTIQUADRIC ? &gg : nullptr), FMM_OK);
        ASSERT_EQ(run_rc(o, s, true, &dg, nullptr), FMM_OK);
        EXPECT_LT(rel_err_scaled(pg, pc), 1e-13) << bldtt_kernel_name(k);
        EXPECT_LT(rel_err_scaled(dg, dc), 1e-13) << bldtt_kernel_name(k);
        if (k == BLDTT_MULTIQUADRIC) {
            EXPECT_LT(rel_err_scaled(gg, gc), 1e-12);
        }
        std::vector<double> g3;
        if (k != BLDTT_MULTIQUADRIC) { // the gradient, about 2^1200, is out of range
            EXPECT_EQ(run_rc(o, s, false, nullptr, &g3), FMM_ERR_RANGE) << bldtt_kernel_name(k);
        }
    }
}

// CPU and GPU agree in double within rounding (every kernel, both methods, gradient).
TEST(BldttGpu, MatchesCpu) {
    if (fmm_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    uint64_t seed = test_seed(10);
    for (int k = 0; k < BLDTT_NKERNELS; ++k)
        for (int method : {BLDTT_METHOD_DTT, BLDTT_METHOD_BLTC}) {
            Pts s = make(k % 2 ? PLUMMER : UNIFORM, test_size(30000, 3000), seed + k);
            Pts t = make(GAUSSIAN, test_size(7000, 1000), seed + 50 + k);
            for (int self = 0; self < 2; ++self) {
                bldtt_opts o = opts(k, 0.7, 5, 200, method);
                std::vector<double> tx = self ? std::vector<double>{} : t.xyz;
                Result c = run(o, s, tx);
                o.device = FMM_DEVICE_CUDA;
                Result g = run(o, s, tx);
                double e = rel_err(g.phi, c.phi), eg = rel_err(g.grad, c.grad);
                std::cout << bldtt_kernel_name(k) << " method " << method << " self " << self
                          << " gpu-cpu " << e << " grad " << eg << std::endl;
                EXPECT_LT(e, 1e-13);
                EXPECT_LT(eg, 1e-12);
                Result d = direct(o, s, tx), dc;
                o.device = FMM_DEVICE_CPU;
                dc = direct(o, s, tx);
                EXPECT_LT(rel_err(d.phi, dc.phi), 1e-13) << "GPU direct sum";
            }
        }
}
