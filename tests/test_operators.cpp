// Each FMM operator against its definition: harmonics against the closed form, every
// translation against a direct sum over the charges it represents, the symmetry-reduced and
// rotation-factored M2L against the dense operator, and the interaction lists against the
// requirement that every leaf sees every source exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "core/harmonics.h"
#include "core/octree.h"
#include "core/p2p.h"
#include "core/sort.h"
#include "m2l/m2l_cpu.h"
#include "m2l/operators.h"
#include "pbc/lattice.h"
#include "test_env.h"

namespace {

struct Charges {
    std::vector<double> x, y, z, q;
};

Charges cluster(std::mt19937_64 &g, int n, const double c[3], double half) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Charges s;
    for (int i = 0; i < n; ++i) {
        s.x.push_back(c[0] + half * u(g));
        s.y.push_back(c[1] + half * u(g));
        s.z.push_back(c[2] + half * u(g));
        s.q.push_back(u(g));
    }
    return s;
}

void direct(const Charges &s, double x, double y, double z, double out[4]) {
    out[0] = out[1] = out[2] = out[3] = 0;
    for (size_t j = 0; j < s.q.size(); ++j) {
        double dx = x - s.x[j], dy = y - s.y[j], dz = z - s.z[j];
        double r = std::sqrt(dx * dx + dy * dy + dz * dz);
        out[0] += s.q[j] / r;
        out[1] += s.q[j] * dx / (r * r * r);
        out[2] += s.q[j] * dy / (r * r * r);
        out[3] += s.q[j] * dz / (r * r * r);
    }
}

std::vector<double> matvec(const std::vector<double> &A, const std::vector<double> &x) {
    size_t n = x.size();
    std::vector<double> y(n, 0.0);
    for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < n; ++k) y[i] += A[i * n + k] * x[k];
    return y;
}

double relerr4(const double a[4], const double b[4]) {
    double e = 0, m = 0;
    for (int i = 0; i < 4; ++i) e = std::max(e, std::fabs(a[i] - b[i])), m = std::max(m, std::fabs(b[i]));
    return e / m;
}

}  // namespace

// Closed form with the Condon-Shortley phase (std::assoc_legendre omits it).
TEST(Harmonics, MatchClosedForm) {
    const int p = 12;
    const double v[3] = {0.3, -0.45, 0.7};
    std::vector<double> rr((p + 1) * (p + 1)), ri(rr.size()), ir(rr.size()), ii(rr.size());
    harm_regular_full(p, v, rr.data(), ri.data());
    harm_irregular_full(p, v, ir.data(), ii.data());
    double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), ct = v[2] / r;
    double ph = std::atan2(v[1], v[0]);
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            double P = ((m & 1) ? -1.0 : 1.0) * std::assoc_legendre(l, m, ct);
            std::complex<double> R = std::pow(r, l) / std::tgamma(l + m + 1.0) * P *
                                     std::polar(1.0, -m * ph);
            std::complex<double> I = std::tgamma(l - m + 1.0) / std::pow(r, l + 1) * P *
                                     std::polar(1.0, m * ph);
            int f = harm_full(l, m);
            EXPECT_NEAR(rr[f], R.real(), 1e-13 * std::abs(R) + 1e-300) << l << " " << m;
            EXPECT_NEAR(ri[f], R.imag(), 1e-13 * std::abs(R) + 1e-300) << l << " " << m;
            EXPECT_NEAR(ir[f], I.real(), 1e-12 * std::abs(I)) << l << " " << m;
            EXPECT_NEAR(ii[f], I.imag(), 1e-12 * std::abs(I)) << l << " " << m;
            // X_{l,-m} = (-1)^m conj(X_lm)
            int g = harm_full(l, -m);
            double s = (m & 1) ? -1.0 : 1.0;
            EXPECT_DOUBLE_EQ(rr[g], s * rr[f]);
            EXPECT_DOUBLE_EQ(ri[g], -s * ri[f]);
        }
}

TEST(Harmonics, AdditionTheoremGivesInverseDistance) {
    const int p = 40;
    const double x[3] = {0.1, 0.2, -0.15}, y[3] = {1.0, -0.7, 0.9};
    std::vector<double> rr((p + 1) * (p + 1)), ri(rr.size()), ir(rr.size()), ii(rr.size());
    harm_regular_full(p, x, rr.data(), ri.data());
    harm_irregular_full(p, y, ir.data(), ii.data());
    double s = 0;
    for (size_t k = 0; k < rr.size(); ++k) s += rr[k] * ir[k] - ri[k] * ii[k];
    double d = std::sqrt(0.9 * 0.9 + 0.9 * 0.9 + 1.05 * 1.05);
    EXPECT_NEAR(s, 1.0 / d, 1e-14);
}

// P2M + M2P and P2L + L2P against the direct sum; potential and field.
TEST(Translations, P2M_M2P_and_P2L_L2P) {
    std::mt19937_64 g(test_seed());
    const int p = 18;
    const double c[3] = {0.5, 0.5, 0.5}, h = 1.0;
    Charges s = cluster(g, 40, c, 0.5);
    std::vector<double> w(harm_ncoef(p), 0.0), u(harm_ncoef(p), 0.0);
    harm_p2m(p, h, c, 40, s.x.data(), s.y.data(), s.z.data(), s.q.data(), w.data());
    double t[3] = {3.1, -2.2, 2.7}, ref[4], got[4] = {0, 0, 0, 0};
    direct(s, t[0], t[1], t[2], ref);
    harm_m2p(p, h, c, w.data(), 1, &t[0], &t[1], &t[2], &got[0], &got[1], &got[2], &got[3]);
    EXPECT_LT(relerr4(got, ref), 1e-12);
    const double lc[3] = {3.5, -1.5, 2.5};
    harm_p2l(p, h, lc, 40, s.x.data(), s.y.data(), s.z.data(), s.q.data(), u.data());
    double got2[4] = {0, 0, 0, 0};
    harm_l2p(p, h, lc, u.data(), 1, &t[0], &t[1], &t[2], &got2[0], &got2[1], &got2[2], &got2[3]);
    EXPECT_LT(relerr4(got2, ref), 1e-9);
}

// Rotations of expansions (harm_rotation_matrices) against the expansions of a rotated charge:
// random rotations and the z-y-z Euler angles' special cases (identity, about z, half turn about
// y), up to order 40; a reflection is refused. Errors per degree in the basis where rotations are
// unitary (coefficient of order m scaled by sqrt((l+m)!(l-m)!) for multipoles, by its inverse for
// locals), against the largest scaled coefficient.
TEST(Harmonics, RotationsMatchRotatedCharges) {
    std::mt19937_64 g(test_seed());
    std::normal_distribution<double> nd;
    std::vector<std::array<double, 9>> Qs = {{1, 0, 0, 0, 1, 0, 0, 0, 1},
                                             {0.6, -0.8, 0, 0.8, 0.6, 0, 0, 0, 1},
                                             {-0.6, 0.8, 0, 0.8, 0.6, 0, 0, 0, -1}};
    for (int r = 0; r < 4; ++r) { /* uniform random rotations from unit quaternions */
        double a = nd(g), b = nd(g), c = nd(g), d = nd(g),
               n = std::sqrt(a * a + b * b + c * c + d * d);
        a /= n, b /= n, c /= n, d /= n;
        Qs.push_back({a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c),
                      2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b),
                      2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d});
    }
    auto direction = [&](double r, double v[3]) {
        double a = nd(g), b = nd(g), c = nd(g), n = std::sqrt(a * a + b * b + c * c);
        v[0] = r * a / n, v[1] = r * b / n, v[2] = r * c / n;
    };
    const double c0[3] = {0, 0, 0}, one = 1.0;
    for (int p : {3, 17, 40}) {
        const int nc = harm_ncoef(p);
        const size_t nrot = (size_t)(p + 1) * (2 * p + 1) * (2 * p + 3) / 3;
        std::vector<double> Aw(nrot * Qs.size()), Au(nrot * Qs.size()), Qflat;
        for (auto &Q : Qs) Qflat.insert(Qflat.end(), Q.begin(), Q.end());
        ASSERT_EQ(
            harm_rotation_matrices(p, (int)Qs.size(), Qflat.data(), Aw.data(), Au.data(), nrot), 0);
        double xn[3], xf[3];
        direction(0.4, xn), direction(4.0, xf);
        for (size_t q = 0; q < Qs.size(); ++q) {
            double yn[3], yf[3];
            for (int i = 0; i < 3; ++i) {
                yn[i] = Qs[q][3 * i] * xn[0] + Qs[q][3 * i + 1] * xn[1] + Qs[q][3 * i + 2] * xn[2];
                yf[i] = Qs[q][3 * i] * xf[0] + Qs[q][3 * i + 1] * xf[1] + Qs[q][3 * i + 2] * xf[2];
            }
            std::vector<double> w(nc, 0.0), w2(nc, 0.0), u(nc, 0.0), u2(nc, 0.0);
            harm_p2m(p, 1.0, c0, 1, &xn[0], &xn[1], &xn[2], &one, w.data());
            harm_p2m(p, 1.0, c0, 1, &yn[0], &yn[1], &yn[2], &one, w2.data());
            harm_p2l(p, 1.0, c0, 1, &xf[0], &xf[1], &xf[2], &one, u.data());
            harm_p2l(p, 1.0, c0, 1, &yf[0], &yf[1], &yf[2], &one, u2.data());
            const double *bw = Aw.data() + q * nrot, *bu = Au.data() + q * nrot;
            for (int l = 0; l <= p; ++l) { /* w'_l = Aw_l w_l, u_l = Au_l u'_l */
                const int k0 = l * l, wl = 2 * l + 1;
                double ew = 0, mw = 0, eu = 0, mu = 0;
                for (int i = 0; i < wl; ++i) {
                    const int m = (i + 1) / 2;
                    const double t =
                        std::exp(0.5 * (std::lgamma(l + m + 1.0) + std::lgamma(l - m + 1.0)));
                    double sw = 0, su = 0;
                    for (int k = 0; k < wl; ++k)
                        sw += bw[i * wl + k] * w[k0 + k], su += bu[i * wl + k] * u2[k0 + k];
                    ew = std::max(ew, t * std::fabs(sw - w2[k0 + i])),
                    mw = std::max(mw, t * std::fabs(w2[k0 + i]));
                    eu = std::max(eu, std::fabs(su - u[k0 + i]) / t),
                    mu = std::max(mu, std::fabs(u[k0 + i]) / t);
                }
                EXPECT_LE(ew, 1e-12 * mw)
                    << "p " << p << " rotation " << q << " degree " << l << " (multipole)";
                EXPECT_LE(eu, 1e-12 * mu)
                    << "p " << p << " rotation " << q << " degree " << l << " (local)";
                bw += wl * wl, bu += wl * wl;
            }
        }
    }
    /* a reflection, a scaled rotation, a NaN and an infinity are refused */
    const double bad[4][9] = {{-1, 0, 0, 0, 1, 0, 0, 0, 1},
                              {2, 0, 0, 0, 2, 0, 0, 0, 2},
                              {1, 0, 0, 0, 1, 0, 0, 0, NAN},
                              {1, 0, 0, 0, INFINITY, 0, 0, 0, 1}};
    std::vector<double> Aw(1000), Au(1000);
    for (const auto &R : bad)
        EXPECT_NE(harm_rotation_matrices(3, 1, R, Aw.data(), Au.data(), 0), 0);
}

// M2M: the parent multipole from the eight children equals the P2M about the parent.
TEST(Translations, M2MEqualsDirectMultipole) {
    std::mt19937_64 g(test_seed());
    const int p = 14, n = harm_ncoef(p);
    const double c[3] = {0, 0, 0};
    Charges s = cluster(g, 200, c, 0.5);
    std::vector<double> parent(n, 0.0), viaM2M(n, 0.0), A(n * n);
    harm_p2m(p, 1.0, c, 200, s.x.data(), s.y.data(), s.z.data(), s.q.data(), parent.data());
    for (int o = 0; o < 8; ++o) {
        double sh[3], cc[3];
        for (int d = 0; d < 3; ++d) sh[d] = (o >> d) & 1 ? 0.25 : -0.25, cc[d] = sh[d];
        std::vector<double> w(n, 0.0);
        for (int i = 0; i < 200; ++i) {
            bool in = (s.x[i] > 0) == bool(o & 1) && (s.y[i] > 0) == bool(o & 2) &&
                      (s.z[i] > 0) == bool(o & 4);
            if (in) harm_p2m(p, 0.5, cc, 1, &s.x[i], &s.y[i], &s.z[i], &s.q[i], w.data());
        }
        harm_m2m_matrix(p, sh, A.data());
        auto y = matvec(A, w);
        for (int k = 0; k < n; ++k) viaM2M[k] += y[k];
    }
    for (int k = 0; k < n; ++k) EXPECT_NEAR(viaM2M[k], parent[k], 1e-14 + 1e-13 * std::fabs(parent[k]));
}

// M2L (dense, at every offset class) and L2L, evaluated with L2P, against the direct sum.
TEST(Translations, M2L_L2L_against_direct) {
    std::mt19937_64 g(test_seed());
    const int p = 20, n = harm_ncoef(p);
    const double c[3] = {0, 0, 0};
    Charges s = cluster(g, 50, c, 0.5);
    std::vector<double> w(n, 0.0), A(n * n);
    harm_p2m(p, 1.0, c, 50, s.x.data(), s.y.data(), s.z.data(), s.q.data(), w.data());
    const int offs[4][3] = {{2, 0, 0}, {-3, 2, 1}, {3, 3, 3}, {0, -2, 2}};
    for (auto &o : offs) {
        double d[3] = {double(-o[0]), double(-o[1]), double(-o[2])};  // source - target
        harm_m2l_matrix(p, d, A.data());
        auto u = matvec(A, w);
        double tc[3] = {double(o[0]), double(o[1]), double(o[2])};
        // L2L to a child of the target box, then evaluate inside that child
        double sh[3] = {0.25, -0.25, 0.25}, cc[3];
        for (int k = 0; k < 3; ++k) cc[k] = tc[k] + 0.5 * sh[k] * 2;
        harm_l2l_matrix(p, sh, A.data());
        auto uc = matvec(A, u);
        double t[3] = {cc[0] + 0.2, cc[1] - 0.1, cc[2] + 0.15}, ref[4];
        direct(s, t[0], t[1], t[2], ref);
        double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
        harm_l2p(p, 1.0, tc, u.data(), 1, &t[0], &t[1], &t[2], &a[0], &a[1], &a[2], &a[3]);
        harm_l2p(p, 0.5, cc, uc.data(), 1, &t[0], &t[1], &t[2], &b[0], &b[1], &b[2], &b[3]);
        EXPECT_LT(relerr4(a, ref), 2e-5) << o[0] << o[1] << o[2];
        EXPECT_LT(relerr4(b, a), 1e-12) << o[0] << o[1] << o[2];
    }
}

// The 316 operators generated from 56 references and reflection signs equal the dense
// operator of each offset.
// The periodic virial's image forces of a compact cell (pbc_near_image_forces): the force that
// each of the 26 nearest images exerts on the cell, from the root multipole, against the direct
// sum over the charge pairs (within the M2L's truncation) and against the dense M2L matrix of
// each image contracted by harm_local_force (to rounding).
TEST(Translations, NearImageForcesMatchDirectSumAndDenseM2L) {
    std::mt19937_64 g(test_seed());
    const double L = 3.0, c[3] = {0.4, -0.2, 1.1};
    const Charges s = cluster(g, 60, c, 0.15 * L);
    double a = 0; // the charges' largest distance from the centre
    for (size_t i = 0; i < s.q.size(); ++i)
        a = std::max(a, std::hypot(s.x[i] - c[0], s.y[i] - c[1], s.z[i] - c[2]));
    for (int p : {7, 12, 16}) {
        const int nc = harm_ncoef(p);
        std::vector<double> w(nc, 0.0), A((size_t)nc * nc), u(nc);
        harm_p2m(p, L, c, (long)s.q.size(), s.x.data(), s.y.data(), s.z.data(), s.q.data(),
                 w.data());
        double fshift[81] = {0};
        ASSERT_EQ(pbc_near_image_forces(p, L, w.data(), fshift), 0);
        double err = 0, err_dense = 0, ref = 0;
        for (int code = 0; code < 27; ++code) {
            if (code == 13) continue;
            const double n[3] = {code % 3 - 1.0, code / 3 % 3 - 1.0, code / 9 - 1.0};
            double F[3] = {0, 0, 0}, Fd[3];
            for (size_t i = 0; i < s.q.size(); ++i)
                for (size_t j = 0; j < s.q.size(); ++j) {
                    const double d[3] = {s.x[i] - s.x[j] - n[0] * L, s.y[i] - s.y[j] - n[1] * L,
                                         s.z[i] - s.z[j] - n[2] * L};
                    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    const double f = s.q[i] * s.q[j] / (r2 * std::sqrt(r2));
                    for (int k = 0; k < 3; ++k) F[k] += f * d[k];
                }
            harm_m2l_matrix(p, n, A.data());
            for (int i = 0; i < nc; ++i) {
                u[i] = 0;
                for (int j = 0; j < nc; ++j) u[i] += A[(size_t)i * nc + j] * w[j];
            }
            harm_local_force(p, L, u.data(), 1, w.data(), Fd);
            for (int k = 0; k < 3; ++k) {
                err = std::max(err, std::fabs(fshift[3 * code + k] - F[k]));
                err_dense = std::max(err_dense, std::fabs(fshift[3 * code + k] - Fd[k]));
                ref = std::max(ref, std::fabs(F[k]));
            }
        }
        // two spheres of radius a, L apart: the expansion converges as (2a / L)^p
        EXPECT_LT(err / ref, std::pow(2 * a / L, p)) << "p " << p;
        EXPECT_LT(err_dense / ref, 1e-12) << "p " << p;
        std::cout << "p " << p << ": max image-force error / max force " << err / ref << " (bound "
                  << std::pow(2 * a / L, p) << "), against the dense M2L " << err_dense / ref
                  << "\n";
    }
}

TEST(M2LOperators, ReflectedReferencesMatchDense) {
    for (int p : {3, 8, 13}) {
        m2l_operators ops;
        ASSERT_EQ(m2l_operators_init(&ops, p), 0);
        const int n = ops.ncoef;
        std::vector<double> T(n * n), R(n * n);
        int count = 0;
        for (int dz = -3; dz <= 3; ++dz)
            for (int dy = -3; dy <= 3; ++dy)
                for (int dx = -3; dx <= 3; ++dx) {
                    int o = oct_offset_index(dx, dy, dz);
                    if (std::abs(dx) < 2 && std::abs(dy) < 2 && std::abs(dz) < 2) {
                        EXPECT_EQ(ops.cls[o], -1);
                        continue;
                    }
                    ++count;
                    ASSERT_GE(ops.cls[o], 0);
                    ASSERT_EQ(m2l_operator_dense(&ops, dx, dy, dz, T.data()), 0);
                    double d[3] = {double(dx), double(dy), double(dz)};
                    harm_m2l_matrix(p, d, R.data());
                    double e = 0, m = 0;
                    for (int i = 0; i < n * n; ++i) e = std::max(e, std::fabs(T[i] - R[i])), m = std::max(m, std::fabs(R[i]));
                    EXPECT_LT(e, 1e-14 * m) << dx << dy << dz;
                }
        EXPECT_EQ(count, 316);
        m2l_operators_free(&ops);
    }
}

// The batched CPU M2L (symmetry classes, rotation-factored operators) equals the dense
// operators applied one by one.
TEST(M2LOperators, BatchedLevelMatchesDense) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const long n = 4000;
    std::vector<double> xyz(3 * n);
    for (auto &v : xyz) v = u(g);
    octree t;
    const double lo[3] = {0, 0, 0};
    ASSERT_EQ(oct_build(&t, n, xyz.data(), lo, 1.0, 3, 32, 0), 0);
    for (int p : {4, 11}) {
        m2l_operators ops;
        ASSERT_EQ(m2l_operators_init(&ops, p), 0);
        const int np = ops.npad, nc = ops.ncoef;
        double *W = static_cast<double *>(aligned_alloc(64, sizeof(double) * np * t.nbox));
        double *U = static_cast<double *>(aligned_alloc(64, sizeof(double) * np * t.nbox));
        std::vector<double> ref(np * t.nbox, 0.0);
        std::vector<std::vector<double>> T(M2L_NOFFSET);
        for (long i = 0; i < np * t.nbox; ++i) W[i] = (i % np) < nc ? u(g) - 0.5 : 0.0, U[i] = 0;
        for (int l = 2; l <= t.depth; ++l) ASSERT_EQ(m2l_cpu_level(&ops, &t, l, W, U, nullptr), 0);
        for (int b = 0; b < t.nbox; ++b)
            for (long e = t.V.start[b]; e < t.V.start[b + 1]; ++e) {
                int o = t.V.aux[e];
                if (T[o].empty()) {
                    T[o].resize(nc * nc);
                    ASSERT_EQ(m2l_operator_dense(&ops, o % 7 - 3, (o / 7) % 7 - 3, o / 49 - 3, T[o].data()), 0);
                }
                for (int i = 0; i < nc; ++i)
                    for (int k = 0; k < nc; ++k) ref[b * np + i] += T[o][i * nc + k] * W[t.V.box[e] * np + k];
            }
        double e = 0, m = 0;
        for (long i = 0; i < np * t.nbox; ++i) e = std::max(e, std::fabs(U[i] - ref[i])), m = std::max(m, std::fabs(ref[i]));
        EXPECT_LT(e, 1e-13 * m) << "p=" << p;
        free(W), free(U);
        m2l_operators_free(&ops);
    }
    oct_free(&t);
}

// Every leaf must account for every source exactly once: directly (U), by M2P (W), or
// through the V and X lists of itself and its ancestors; periodic trees, for each of the 27
// images of the cell (the images beyond go through the lattice operator).
static void check_coverage(const octree &t) {
    for (int i = 0; i < t.nleaf; ++i) {
        int b = t.leaves[i];
        long tot = 0;
        auto add = [&](const oct_list &L, int a) {
            for (long e = L.start[a]; e < L.start[a + 1]; ++e) tot += t.box[L.box[e]].end - t.box[L.box[e]].begin;
        };
        add(t.U, b);
        add(t.W, b);
        for (int a = b; a >= 0; a = t.box[a].parent) add(t.V, a), add(t.X, a);
        ASSERT_EQ(tot, t.periodic ? 27 * t.n : t.n) << "leaf " << b << " level " << t.box[b].level;
    }
}

// The shared radix sort against std::stable_sort: ascending keys, equal keys in input order,
// for key widths of one digit or several, thread counts that do and do not divide n, and the
// trivial sizes.
TEST(RadixSort, StableAndSortedForAnyThreadCount) {
    std::mt19937_64 g(test_seed());
    for (int bits : {1, 11, 12, 33, 60})
        for (long n : {0L, 1L, 5L, 70000L, 300001L})
            for (int threads : {1, 2, 3}) {
                std::vector<uint64_t> key(n);
                std::vector<long> idx(n);
                // few distinct values (many ties) for the small widths
                for (long i = 0; i < n; ++i) key[i] = g() >> (64 - bits), idx[i] = i;
                std::vector<std::pair<uint64_t, long>> ref(n);
                for (long i = 0; i < n; ++i) ref[i] = {key[i], i};
                std::stable_sort(ref.begin(), ref.end(),
                                 [](const auto &a, const auto &b) { return a.first < b.first; });
                ASSERT_EQ(fmm_radix_sort(n, key.data(), idx.data(), bits, threads), 0);
                bool same = true;
                for (long i = 0; i < n; ++i) same &= key[i] == ref[i].first && idx[i] == ref[i].second;
                EXPECT_TRUE(same) << "bits " << bits << " n " << n << " threads " << threads;
            }
}

TEST(Octree, ListsCoverEverySourceOnce) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const long n = 20000;
    std::vector<double> xyz(3 * n);
    const double lo[3] = {0, 0, 0};
    for (int kind = 0; kind < 3; ++kind) {
        for (long i = 0; i < 3 * n; ++i) {
            double v = u(g);
            xyz[i] = kind == 0 ? v : kind == 1 ? v * v * v * v : (i / 3 < n / 2 ? 0.01 * v : v);
        }
        for (int depth : {-1, 3}) {
            octree t;
            ASSERT_EQ(oct_build(&t, n, xyz.data(), lo, 1.0, depth, 40, 0), 0);
            if (depth >= 0) {
                EXPECT_EQ(t.depth, depth);
            }
            check_coverage(t);
            oct_free(&t);
        }
    }
}

TEST(Octree, PeriodicListsCoverThe27ImagesOnce) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const long n = 5000;
    std::vector<double> xyz(3 * n);
    const double lo[3] = {0, 0, 0};
    for (long i = 0; i < 3 * n; ++i) xyz[i] = i / 3 < n / 3 ? 0.1 * u(g) : u(g);
    for (int depth : {-1, 0, 1, 3}) {
        octree t;
        ASSERT_EQ(oct_build(&t, n, xyz.data(), lo, 1.0, depth, 40, 1), 0);
        check_coverage(t);
        oct_free(&t);
    }
}

TEST(Octree, RejectsCoincidentPoints) {
    std::vector<double> xyz = {0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.1, 0.2, 0.3};
    octree t;
    const double lo[3] = {0, 0, 0};
    EXPECT_NE(oct_build(&t, 3, xyz.data(), lo, 1.0, -1, 1, 0), 0);
}

// One pair at a time, r across 36 decades with random mantissas and directions: the SIMD
// reciprocal square root (core/simd.h: AVX-512's estimate + series, else hardware sqrt and
// divide) against long double. A series one term short for the estimate's precision leaves
// ~1e-13, so the bound of 4 ulp (r^2's own rounding is up to 1.5 ulp) tells.
TEST(P2P, PairAccuracyAcrossScales) {
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<double> u(-1.0, 1.0), dec(-18.0, 18.0);
    const double zero[3] = {0, 0, 0};
    double worst = 0, worst_f = 0;
    for (int k = 0; k < 20000; ++k) {
        double d[3] = {u(g), u(g), u(g)}, s = std::pow(10.0, dec(g)) / std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        double t[3] = {0.3, -0.2, 0.1}, src[3], q = 1.0;
        for (int a = 0; a < 3; ++a) src[a] = t[a] - s * d[a];
        double dx = t[0] - src[0], dy = t[1] - src[1], dz = t[2] - src[2];
        long double r2 = (long double)dx * dx + (long double)dy * dy + (long double)dz * dz;
        long double rinv = 1.0L / std::sqrt(r2), e3 = rinv * rinv * rinv;
        double phi = 0, e[3] = {0, 0, 0};
        p2p(1, &t[0], &t[1], &t[2], 1, &src[0], &src[1], &src[2], &q, zero, &phi, &e[0], &e[1], &e[2]);
        worst = std::max(worst, (double)std::fabs((phi - rinv) / rinv));
        long double ref[3] = {dx * e3, dy * e3, dz * e3};
        long double en = std::sqrt(ref[0] * ref[0] + ref[1] * ref[1] + ref[2] * ref[2]);
        for (int a = 0; a < 3; ++a) worst_f = std::max(worst_f, (double)(std::fabs(e[a] - ref[a]) / en));
    }
    std::cout << "worst relative error: potential " << worst << ", field " << worst_f << "\n";
    EXPECT_LT(worst, 4 * 2.2e-16);
    EXPECT_LT(worst_f, 8 * 2.2e-16);
}

// Leaf-sized blocks (tails of every length, self pairs skipped) at ordinary and at extreme
// scales: distances below float's range (1e-25, where AVX-512's SIMD estimate gives NaN) and
// extents beyond it (1e25) must give the same relative accuracy (with AVX-512 through the
// exact path; the hardware square root of the other builds takes them directly).
TEST(P2P, BlocksAtEveryScaleMatchLongDouble) {
    std::mt19937_64 g(test_seed());
    const double c[3] = {0.0, 0.0, 0.0};
    for (double scale : {1.0, 1e-25, 1e25, 3e-12})
        for (int ns : {1, 3, 4, 7, 8, 9, 31, 64}) {
            Charges s = cluster(g, ns, c, 1.0);
            for (int j = 0; j < ns; ++j) s.x[j] *= scale, s.y[j] *= scale, s.z[j] *= scale;
            const double shift[3] = {0.5 * scale, 0.0, -0.25 * scale};
            /* targets: the first 3 sources shifted back (self pairs) and two more points */
            std::vector<double> tx, ty, tz;
            for (int j = 0; j < std::min(ns, 3); ++j)
                tx.push_back(s.x[j] + shift[0]), ty.push_back(s.y[j] + shift[1]), tz.push_back(s.z[j] + shift[2]);
            tx.push_back(2.5 * scale), ty.push_back(0.1 * scale), tz.push_back(-0.3 * scale);
            tx.push_back(-0.7 * scale), ty.push_back(0.2 * scale), tz.push_back(0.9 * scale);
            long nt = (long)tx.size();
            std::vector<double> phi(nt, 0.0), ex(nt, 0.0), ey(nt, 0.0), ez(nt, 0.0);
            p2p(nt, tx.data(), ty.data(), tz.data(), ns, s.x.data(), s.y.data(), s.z.data(), s.q.data(),
                shift, phi.data(), ex.data(), ey.data(), ez.data());
            for (long i = 0; i < nt; ++i) {
                long double ref[4] = {0, 0, 0, 0}, mag[2] = {0, 0};
                for (int j = 0; j < ns; ++j) {
                    double dx = tx[i] - shift[0] - s.x[j], dy = ty[i] - shift[1] - s.y[j], dz = tz[i] - shift[2] - s.z[j];
                    long double r2 = (long double)dx * dx + (long double)dy * dy + (long double)dz * dz;
                    if (r2 == 0) continue;
                    long double ri = 1.0L / std::sqrt(r2), q3 = s.q[j] * ri * ri * ri;
                    ref[0] += s.q[j] * ri, ref[1] += q3 * dx, ref[2] += q3 * dy, ref[3] += q3 * dz;
                    mag[0] += std::fabs(s.q[j]) * ri, mag[1] += std::fabs(s.q[j]) * ri * ri;
                }
                ASSERT_TRUE(std::isfinite(phi[i])) << "scale " << scale << " ns " << ns;
                EXPECT_LE(std::fabs(phi[i] - ref[0]), 1e-15 * ns * mag[0]) << "scale " << scale << " ns " << ns;
                EXPECT_LE(std::fabs(ex[i] - ref[1]), 1e-15 * ns * mag[1]) << "scale " << scale << " ns " << ns;
                EXPECT_LE(std::fabs(ey[i] - ref[2]), 1e-15 * ns * mag[1]) << "scale " << scale << " ns " << ns;
                EXPECT_LE(std::fabs(ez[i] - ref[3]), 1e-15 * ns * mag[1]) << "scale " << scale << " ns " << ns;
            }
        }
}
