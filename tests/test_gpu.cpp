// The CUDA FMM against the CPU FMM at the same order and uniform depth (the same sums, so
// they must agree to rounding: 1e-12 relative), open and periodic, neutral and charged, with
// graph re-use across setpts/execute calls, and its error handling. Every test skips (with
// the reason) where no CUDA device is usable; the CPU-only build still compiles and lists them.
// Under compute-sanitizer (FMM_TEST_SANITIZE=1, tests/test_env.h) the sets are smaller and the
// same paths are repeated fewer times; under racecheck (FMM_TEST_SANITIZE=racecheck) smaller still,
// with the depth-4 tree (the coarse levels' narrow spread) and depth 5 (the halo M2L) once each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "fmm.h"
#include "pointsets.h"
#include "test_env.h"
#ifdef FMM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "m2l/m2l_gpu.h"
#endif

namespace {

bool no_gpu() { return fmm_cuda_device_count() < 1; }
#define SKIP_WITHOUT_GPU() \
    if (no_gpu()) GTEST_SKIP() << "no CUDA device (or built without CUDA)"

struct Out {
    std::vector<double> phi, field;
    double energy = 0, virial[9] = {0};
};

int run(int device, const std::vector<double> &xyz, const std::vector<double> &q, fmm_opts o,
        const double *box, Out &r, bool virial) {
    o.device = device;
    fmm_plan *p = nullptr;
    int rc = fmm_makeplan(&o, box, &p);
    if (rc) return rc;
    long n = (long)q.size();
    r.phi.assign(n, NAN), r.field.assign(3 * n, NAN);
    rc = fmm_setpts(p, n, xyz.data());
    if (!rc) rc = fmm_execute(p, q.data(), r.phi.data(), r.field.data(), &r.energy, virial ? r.virial : nullptr);
    fmm_destroy(p);
    return rc;
}

// a CUDA plan for a periodic box at order 7, double or mixed precision (NULL if it fails)
fmm_plan *periodic_p7_plan(int mixed, const double *box) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.order = 7, o.periodic = 1, o.device = FMM_DEVICE_CUDA;
    o.precision = mixed ? FMM_PRECISION_MIXED : FMM_PRECISION_DOUBLE;
    fmm_plan *p = nullptr;
    return fmm_makeplan(&o, box, &p) == FMM_OK ? p : nullptr;
}

double rel(const std::vector<double> &a, const std::vector<double> &b) {
    double e = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]), m += b[i] * b[i];
    return std::sqrt(e / m);
}

void random_set(std::mt19937_64 &g, long n, double L, double net, std::vector<double> &xyz, std::vector<double> &q) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    xyz.resize(3 * n), q.resize(n);
    double s = 0;
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) xyz[3 * i + d] = L * u(g);
        q[i] = 2 * u(g) - 1, s += q[i];
    }
    for (auto &v : q) v += (net - s) / n;
}

// The energy is compared on the scale of its terms, 1/2 sum |q_i phi_i|: random charges cancel
// (a neutral set of 6000 in a periodic box: |U| 5.7, the GPU 6.4e-12 off, 1.1e-12 of |U|), and
// the GPU sums in an order that changes from run to run (the atomics of its binning).
void expect_same(const Out &gpu, const Out &cpu, const std::vector<double> &q, double tol) {
    EXPECT_LT(rel(gpu.phi, cpu.phi), tol);
    EXPECT_LT(rel(gpu.field, cpu.field), tol);
    double mag = 0;
    for (size_t i = 0; i < q.size(); ++i) mag += 0.5 * std::fabs(q[i] * cpu.phi[i]);
    EXPECT_LT(std::fabs(gpu.energy - cpu.energy), tol * mag);
}

}  // namespace

TEST(GpuOpen, MatchesCpuAtSameOrderAndDepth) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, test_size(30000, 3000, 500), 1.0, 0.0, xyz, q);
    // shift off the origin: the root cube is the bounding cube, not [0,1]^3
    for (auto &v : xyz) v = 3.0 + 2.0 * v;
    for (int p : test_size<std::vector<int>>({1, 4, 7, 12, 20}, {1, 4, 7, 12, 20}, {1, 12, 20}))
        // P2P wide, narrow (racecheck: depth 2, 64 boxes, where order 20's M2L is long enough;
        // the wide P2P in ClusteredDropletMatchesCpu, the open tree's coarse M2L and L2L at depth 3
        // in GpuPlan.ReusesTheGraphAcrossSetptsAndExecute, depth 4 in GpuPeriodic)
        for (int D : test_size<std::vector<int>>({2, 3, 4}, {2, 4}, {2})) {
            SCOPED_TRACE("p " + std::to_string(p) + " depth " + std::to_string(D));
            fmm_opts o;
            fmm_default_opts(&o);
            o.order = p, o.depth = D;
            Out c, d;
            ASSERT_EQ(run(FMM_DEVICE_CPU, xyz, q, o, nullptr, c, true), FMM_OK);
            ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, nullptr, d, true), FMM_OK);
            expect_same(d, c, q, 1e-12);
            double vn = 0, vd = 0;
            for (int k = 0; k < 9; ++k) vn += c.virial[k] * c.virial[k], vd += std::pow(d.virial[k] - c.virial[k], 2);
            EXPECT_LT(std::sqrt(vd / vn), 1e-12);
        }
}

TEST(GpuOpen, ShallowTreesAndAccuracyAgainstDirectSum) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    std::vector<double> xyz, q;
    random_set(g, test_size(5000, 1500, 400), 1.0, 0.0, xyz, q);
    Out ref;
    long n = (long)q.size();
    ref.phi.resize(n), ref.field.resize(3 * n);
    ASSERT_EQ(fmm_direct(n, xyz.data(), q.data(), ref.phi.data(), ref.field.data(), &ref.energy, nullptr, 0), FMM_OK);
    for (int D : test_size<std::vector<int>>({0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2})) {
        fmm_opts o;
        fmm_default_opts(&o);
        o.tolerance = 1e-7, o.depth = D;
        Out d;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, nullptr, d, false), FMM_OK);
        EXPECT_LT(rel(d.phi, ref.phi), 1e-7) << "depth " << D;
    }
}

TEST(GpuPeriodic, MatchesCpuNeutralAndCharged) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const double L = 2.5, box[3] = {L, L, L};
    // depth 4: the coarse levels' M2L run with the narrower spread (fmm/fmm_cuda.cu)
    for (double net : {0.0, 3.0})
        for (int p : test_size<std::vector<int>>({4, 10}, {4, 10}, {4}))
            for (int D : test_size<std::vector<int>>({0, 1, 2, 3, 4}, {0, 1, 4})) {
                SCOPED_TRACE("net " + std::to_string(net) + " p " + std::to_string(p) + " depth " + std::to_string(D));
                std::vector<double> xyz, q;
                random_set(g, test_size(6000, 1500, 400), L, net, xyz, q);
                // some particles outside the box: both sides must wrap them the same way
                for (int i = 0; i < 50; ++i) xyz[3 * i] += (i % 2 ? 1 : -1) * L * (1 + i % 3);
                fmm_opts o;
                fmm_default_opts(&o);
                o.order = p, o.depth = D, o.periodic = 1;
                Out c, d;
                ASSERT_EQ(run(FMM_DEVICE_CPU, xyz, q, o, box, c, true), FMM_OK);
                ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, d, true), FMM_OK);
                expect_same(d, c, q, 1e-12);
                double vn = 0, vd = 0;
                for (int k = 0; k < 9; ++k) vn += c.virial[k] * c.virial[k], vd += std::pow(d.virial[k] - c.virial[k], 2);
                // the virial sums terms ~100x larger than itself (F.Y and image-force parts
                // that cancel), accumulated in a different order on the GPU
                EXPECT_LT(std::sqrt(vd / vn), 1e-10);
            }
}

// A droplet in a large box: all charges in the central 1/27 of the volume, so most leaves are
// empty and the occupied ones hold hundreds of charges (the P2P spreads a leaf's 32-charge
// target chunks over blocks).
TEST(GpuPeriodic, ClusteredDropletMatchesCpu) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const double L = 6.0, box[3] = {L, L, L};
    std::vector<double> xyz, q;
    random_set(g, test_size(5000, 1500, 1000), L / 3, 0.0, xyz, q);
    for (auto &v : xyz) v += L / 3;
    for (int D : test_size<std::vector<int>>({1, 2, 3}, {1, 3}, {1, 2})) {
        SCOPED_TRACE("depth " + std::to_string(D));
        fmm_opts o;
        fmm_default_opts(&o);
        o.order = 7, o.depth = D, o.periodic = 1;
        Out c, d;
        ASSERT_EQ(run(FMM_DEVICE_CPU, xyz, q, o, box, c, true), FMM_OK);
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, d, true), FMM_OK);
        expect_same(d, c, q, 1e-12);
        double vn = 0, vd = 0;
        for (int k = 0; k < 9; ++k) vn += c.virial[k] * c.virial[k], vd += std::pow(d.virial[k] - c.virial[k], 2);
        EXPECT_LT(std::sqrt(vd / vn), 1e-10);
    }
}

// A compact cluster in a large periodic box, straddling its corner (pbc/cluster.h): at depth 0
// both sides centre the cell on it and take the 26 nearest images by M2L at the root. The GPU
// against the CPU at equal order (double: rounding; mixed: the float near field), both against
// Ewald at the tolerance; with the automatic depth the GPU picks 0 for it, and through the
// device route it looks first and drops to a tree once it has seen an uncompact set.
TEST(GpuPeriodic, CompactClusterAtDepthZero) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const double L = 5.0, box[3] = {L, L, L}, R = 0.25 * L; // 2R / L = 0.5 < PBC_COMPACT_RHO
    for (double net : {0.0, 2.0}) {
        SCOPED_TRACE("net " + std::to_string(net));
        const long n = test_size(3000, 800, 300);
        std::vector<double> xyz(3 * n), q(n);
        ASSERT_EQ(pts_ball(n, g(), xyz.data(), q.data()), PTS_OK);
        for (long i = 0; i < 3 * n; ++i)
            xyz[i] = R * xyz[i] + (i % 3 == 1 ? 0.5 * L : 0.0); // around (0, L/2, 0)
        for (auto &v : q) v += net / n;
        Out ref;
        ref.phi.resize(n), ref.field.resize(3 * n);
        ASSERT_EQ(fmm_ewald(n, xyz.data(), q.data(), box, 1e-12, ref.phi.data(), ref.field.data(),
                            &ref.energy, ref.virial, 0),
                  FMM_OK);
        for (int p : test_size<std::vector<int>>({4, 7, 12}, {4, 12}, {12})) {
            fmm_opts o;
            fmm_default_opts(&o);
            o.order = p, o.depth = 0, o.periodic = 1;
            Out c, d;
            ASSERT_EQ(run(FMM_DEVICE_CPU, xyz, q, o, box, c, true), FMM_OK);
            ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, d, true), FMM_OK);
            expect_same(d, c, q, 1e-12);
            double vn = 0, vd = 0, ve = 0;
            for (int k = 0; k < 9; ++k) {
                vn += ref.virial[k] * ref.virial[k], vd += std::pow(d.virial[k] - c.virial[k], 2);
                ve += std::pow(d.virial[k] - ref.virial[k], 2);
            }
            EXPECT_LT(std::sqrt(vd / vn), 1e-10);
            std::cout << "net " << net << " p " << p << ": phi " << rel(d.phi, ref.phi) << " field "
                      << rel(d.field, ref.field) << " virial " << std::sqrt(ve / vn)
                      << " against Ewald\n";
            // the images' M2L converges as (2R/L)^(p+1) = 0.5^(p+1), with room
            EXPECT_LT(rel(d.phi, ref.phi), 10 * std::pow(0.5, p + 1));
            EXPECT_LT(rel(d.field, ref.field), 10 * std::pow(0.5, p + 1));
            EXPECT_LT(std::sqrt(ve / vn), 100 * std::pow(0.5, p + 1));
            o.precision = FMM_PRECISION_MIXED;
            Out m;
            ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, m, true), FMM_OK);
            // the mode's promise is on the potential; the field of random charges, whose pair
            // terms cancel, moves more (the float sum runs over all pairs of the cell here: up to
            // 2.3e-5, seed 4150387421), as it does in a tree (README: 1e-5)
            std::cout << "  mixed against double: phi " << rel(m.phi, d.phi) << " field "
                      << rel(m.field, d.field) << "\n";
            EXPECT_LT(rel(m.phi, d.phi), FMM_MIXED_TOL_MIN);
        }
        for (double tol : {1e-3, 1e-6}) { // the automatic depth: 0 for this set
            fmm_opts o;
            fmm_default_opts(&o);
            o.tolerance = tol, o.periodic = 1, o.device = FMM_DEVICE_CUDA;
            fmm_plan *p = nullptr;
            ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
            Out d;
            d.phi.resize(n), d.field.resize(3 * n);
            ASSERT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
            ASSERT_EQ(fmm_execute(p, q.data(), d.phi.data(), d.field.data(), &d.energy, nullptr),
                      FMM_OK);
            fmm_info info;
            ASSERT_EQ(fmm_get_info(p, &info), FMM_OK);
            EXPECT_EQ(info.depth, 0);
            EXPECT_LT(rel(d.phi, ref.phi), tol) << "tolerance " << tol;
            fmm_destroy(p);
        }
    }
#ifdef FMM_HAVE_CUDA
    // device-resident positions: the plan has not seen them, so a small set starts at depth 0
    // (exact either way); an uncompact one, once an evaluation that waits has reported it, gets a
    // tree
    const long nd = test_size(3000, 800);
    std::vector<double> xyz, q;
    random_set(g, nd, L, 0.0, xyz, q);
    std::vector<float> xf(xyz.begin(), xyz.end()), qf(q.begin(), q.end());
    float *d_x = nullptr, *d_f = nullptr;
    ASSERT_EQ(cudaMalloc((void **)&d_x, sizeof(float) * xf.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc((void **)&d_f, sizeof(float) * xf.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_x, xf.data(), sizeof(float) * xf.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    fmm_plan *p = periodic_p7_plan(0, box);
    ASSERT_NE(p, nullptr);
    fmm_info info;
    double e0 = 0, e1 = 0;
    ASSERT_EQ(fmm_cuda_setptsf(p, nd, d_x, nullptr), FMM_OK);
    ASSERT_EQ(fmm_get_info(p, &info), FMM_OK);
    EXPECT_EQ(info.depth, 0);
    ASSERT_EQ(fmm_cuda_forcesf(p, qf.data(), d_f, 1.0, &e0, nullptr, nullptr), FMM_OK);
    ASSERT_EQ(fmm_cuda_setptsf(p, nd, d_x, nullptr), FMM_OK);
    ASSERT_EQ(fmm_get_info(p, &info), FMM_OK);
    EXPECT_GT(info.depth, 0);
    ASSERT_EQ(fmm_cuda_forcesf(p, nullptr, d_f, 1.0, &e1, nullptr, nullptr), FMM_OK);
    std::vector<double> phi(nd);
    double eref = 0, mag = 0;
    ASSERT_EQ(
        fmm_ewald(nd, xyz.data(), q.data(), box, 1e-12, phi.data(), nullptr, &eref, nullptr, 0),
        FMM_OK);
    for (long i = 0; i < nd; ++i) mag += 0.5 * std::fabs(q[i] * phi[i]);
    EXPECT_LT(std::fabs(e0 - eref), 1e-3 * mag); // order 7: the tolerance 1e-3 of the order table
    EXPECT_LT(std::fabs(e1 - eref), 1e-3 * mag);
    fmm_destroy(p);
    cudaFree(d_x), cudaFree(d_f);
#endif
}

TEST(GpuPeriodic, WaterLikeBoxAgainstEwald) {
    SKIP_WITHOUT_GPU();
    const long nmol = test_size(1000, 300), n = 3 * nmol;
    std::vector<double> xyz(3 * n), q(n);
    double L = 0;
    ASSERT_EQ(pts_water(nmol, test_seed(), xyz.data(), q.data(), &L), PTS_OK);
    const double box[3] = {L, L, L};
    Out ref;
    ref.phi.resize(n), ref.field.resize(3 * n);
    ASSERT_EQ(fmm_ewald(n, xyz.data(), q.data(), box, 1e-12, ref.phi.data(), ref.field.data(), &ref.energy,
                        ref.virial, 0),
              FMM_OK);
    for (double tol : test_size<std::vector<double>>({1e-3, 1e-4, 1e-5, 1e-6}, {1e-3, 1e-6})) {
        fmm_opts o;
        fmm_default_opts(&o);
        o.tolerance = tol, o.periodic = 1;
        Out d;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, d, true), FMM_OK);
        EXPECT_LT(rel(d.phi, ref.phi), tol) << "tolerance " << tol;
        double vn = 0, vd = 0;
        for (int k = 0; k < 9; ++k) vn += ref.virial[k] * ref.virial[k], vd += std::pow(d.virial[k] - ref.virial[k], 2);
        EXPECT_LT(std::sqrt(vd / vn), 10 * tol) << "virial, tolerance " << tol;
    }
}

// Mixed precision (float P2P on leaf-relative positions, float M2L products; at depth 5 the finest
// level's on the tensor cores, m2l/m2l_halo.cu): against the same sums in double at equal (p, D),
// the float near field must stay below FMM_MIXED_TOL_MIN (what the mode promises; it prints the
// measured difference), and at each tolerance it accepts, the total error against the Ewald sum
// must meet it, virial included.
TEST(GpuMixed, FloatNearFieldMeetsItsTolerance) {
    SKIP_WITHOUT_GPU();
    const long nmol = test_size(3000, 1000, 300), n = 3 * nmol;
    std::vector<double> xyz(3 * n), q(n);
    double L = 0;
    ASSERT_EQ(pts_water(nmol, test_seed(), xyz.data(), q.data(), &L), PTS_OK);
    const double box[3] = {L, L, L};
    for (int D : test_size<std::vector<int>>({2, 3, 4, 5}, {2, 5})) { // 5: the halo M2L
        fmm_opts o;
        fmm_default_opts(&o);
        o.order = 8, o.depth = D, o.periodic = 1;
        Out dbl, mix;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, dbl, true), FMM_OK);
        o.precision = FMM_PRECISION_MIXED;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, mix, true), FMM_OK);
        const double ep = rel(mix.phi, dbl.phi), ef = rel(mix.field, dbl.field);
        std::cout << "depth " << D << ": mixed vs double rel phi " << ep << " field " << ef << " energy "
                  << std::fabs(mix.energy / dbl.energy - 1) << "\n";
        EXPECT_LT(ep, FMM_MIXED_TOL_MIN) << "depth " << D;
        EXPECT_LT(ef, FMM_MIXED_TOL_MIN) << "depth " << D;
    }
    Out ref;
    ref.phi.resize(n), ref.field.resize(3 * n);
    ASSERT_EQ(fmm_ewald(n, xyz.data(), q.data(), box, 1e-10, ref.phi.data(), ref.field.data(), &ref.energy,
                        ref.virial, 0),
              FMM_OK);
    for (double tol : test_size<std::vector<double>>({1e-3, 1e-4, FMM_MIXED_TOL_MIN},
                                                     {1e-3, FMM_MIXED_TOL_MIN})) {
        fmm_opts o;
        fmm_default_opts(&o);
        o.tolerance = tol, o.periodic = 1, o.precision = FMM_PRECISION_MIXED;
        Out d;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, d, true), FMM_OK);
        std::cout << "tolerance " << tol << ": rel phi " << rel(d.phi, ref.phi) << " field "
                  << rel(d.field, ref.field) << "\n";
        EXPECT_LT(rel(d.phi, ref.phi), tol) << "tolerance " << tol;
        double vn = 0, vd = 0;
        for (int k = 0; k < 9; ++k) vn += ref.virial[k] * ref.virial[k], vd += std::pow(d.virial[k] - ref.virial[k], 2);
        EXPECT_LT(std::sqrt(vd / vn), 10 * tol) << "virial, tolerance " << tol;
    }
}

// Mixed mode runs the M2L products in float up to order 16 (M2L_SYM_FLOAT_PMAX) and in double
// above, where the scaled operators leave float's range (1.7e40 at order 18: NaN everywhere).
// At 16 (float, the largest entries 1.3e34) and 18 (double M2L) the mixed result must stay
// finite and within FMM_MIXED_TOL_MIN of the double one.
TEST(GpuMixed, FloatM2LOnlyWhereTheOperatorsFit) {
    SKIP_WITHOUT_GPU();
    const long nmol = test_size(1000, 300, 100), n = 3 * nmol;
    std::vector<double> xyz(3 * n), q(n);
    double L = 0;
    ASSERT_EQ(pts_water(nmol, test_seed(), xyz.data(), q.data(), &L), PTS_OK);
    const double box[3] = {L, L, L};
    for (int p : {16, 18}) {
        fmm_opts o;
        fmm_default_opts(&o);
        o.order = p, o.depth = 2, o.periodic = 1;
        Out dbl, mix;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, dbl, false), FMM_OK);
        o.precision = FMM_PRECISION_MIXED;
        ASSERT_EQ(run(FMM_DEVICE_CUDA, xyz, q, o, box, mix, false), FMM_OK);
        for (double v : mix.phi) ASSERT_TRUE(std::isfinite(v)) << "order " << p;
        for (double v : mix.field) ASSERT_TRUE(std::isfinite(v)) << "order " << p;
        const double ep = rel(mix.phi, dbl.phi), ef = rel(mix.field, dbl.field);
        std::cout << "order " << p << ": mixed vs double rel phi " << ep << " field " << ef << "\n";
        EXPECT_LT(ep, FMM_MIXED_TOL_MIN) << "order " << p;
        EXPECT_LT(ef, FMM_MIXED_TOL_MIN) << "order " << p;
    }
}

TEST(GpuPlan, ReusesTheGraphAcrossSetptsAndExecute) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    fmm_opts o;
    fmm_default_opts(&o);
    o.order = 6, o.depth = 3;
    fmm_plan *gp = nullptr, *cp = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &cp), FMM_OK);
    o.device = FMM_DEVICE_CUDA;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &gp), FMM_OK);
    for (long n : test_size<std::vector<long>>({4000, 4000, 9000, 2500}, {1000, 1000, 2000, 600},
                                               {300, 300, 600, 200})) {
        std::vector<double> xyz, q;
        random_set(g, n, 1.0, 0.0, xyz, q);
        ASSERT_EQ(fmm_setpts(cp, n, xyz.data()), FMM_OK);
        ASSERT_EQ(fmm_setpts(gp, n, xyz.data()), FMM_OK);
        for (int rep = 0; rep < 2; ++rep) {
            for (auto &v : q) v = -v * (rep + 1);
            Out c, d;
            c.phi.resize(n), d.phi.assign(n, NAN);
            ASSERT_EQ(fmm_execute(cp, q.data(), c.phi.data(), nullptr, &c.energy, nullptr), FMM_OK);
            ASSERT_EQ(fmm_execute(gp, q.data(), d.phi.data(), nullptr, &d.energy, nullptr), FMM_OK);
            EXPECT_LT(rel(d.phi, c.phi), 1e-12) << "n " << n << " rep " << rep;
        }
    }
    const int reps = test_size(5, 2);
    std::vector<double> ms(reps);
    EXPECT_EQ(fmm_cuda_time_replays(gp, reps, ms.data()), FMM_OK);
    for (double t : ms) EXPECT_GT(t, 0.0);
    EXPECT_EQ(fmm_cuda_time_replays(cp, reps, ms.data()), FMM_ERR_DEVICE);
    fmm_destroy(gp), fmm_destroy(cp);
}

// Excluded pairs (three-site molecules shaped like water at its density: 1-2 distance 0.02,
// angle 104.5 degrees, 3000 molecules per unit volume; some across the periodic faces with one
// atom a whole period away) and kept charges (q = NULL): the GPU subtracts the same pair terms
// as the CPU. Mixed precision: the float near field's rounding of the excluded (largest) terms
// stays after their double subtraction; at water's geometry it stays below FMM_MIXED_TOL_MIN.
TEST(GpuPlan, ExclusionsAndKeptChargesMatchCpu) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const double L = 1.0, box[3] = {L, L, L};
    const long na = test_size(9000, 1500, 300);
    std::vector<double> xyz, q;
    random_set(g, na, L, 0.0, xyz, q);
    std::normal_distribution<double> gauss;
    const double bond = 0.02, half = 0.5 * 104.5 * M_PI / 180;
    std::vector<int> pairs;
    for (int m = 0; m + 2 < na; m += 3) {
        // a random orthonormal pair (e1, e2) spans the molecule's plane
        double e1[3], e2[3], n1 = 0, d12 = 0, n2 = 0;
        for (int d = 0; d < 3; ++d) e1[d] = gauss(g), e2[d] = gauss(g), n1 += e1[d] * e1[d];
        for (int d = 0; d < 3; ++d) e1[d] /= std::sqrt(n1), d12 += e1[d] * e2[d];
        for (int d = 0; d < 3; ++d) e2[d] -= d12 * e1[d], n2 += e2[d] * e2[d];
        for (int d = 0; d < 3; ++d) {
            e2[d] /= std::sqrt(n2);
            xyz[3 * (m + 1) + d] = xyz[3 * m + d] + bond * (std::cos(half) * e1[d] + std::sin(half) * e2[d]);
            xyz[3 * (m + 2) + d] = xyz[3 * m + d] + bond * (std::cos(half) * e1[d] - std::sin(half) * e2[d]);
        }
        if (m < 300) xyz[3 * (m + 1) + m % 3] += L;
        const int list[6] = {m, m + 1, m + 2, m, m + 1, m + 2};
        pairs.insert(pairs.end(), list, list + 6);
    }
    for (int periodic : {0, 1})
        for (int mixed : {0, 1}) {
            SCOPED_TRACE(std::string(periodic ? "periodic" : "open") + (mixed ? " mixed" : " double"));
            fmm_opts o;
            fmm_default_opts(&o);
            o.order = 7, o.depth = 3, o.periodic = periodic;
            fmm_plan *cp = nullptr, *gp = nullptr;
            ASSERT_EQ(fmm_makeplan(&o, periodic ? box : nullptr, &cp), FMM_OK);
            o.device = FMM_DEVICE_CUDA, o.precision = mixed ? FMM_PRECISION_MIXED : FMM_PRECISION_DOUBLE;
            ASSERT_EQ(fmm_makeplan(&o, periodic ? box : nullptr, &gp), FMM_OK);
            Out c, d, k;
            for (Out *r : {&c, &d, &k}) r->phi.assign(na, NAN), r->field.assign(3 * na, NAN);
            for (fmm_plan *p : {cp, gp}) {
                ASSERT_EQ(fmm_set_exclusions(p, (long)pairs.size() / 2, pairs.data()), FMM_OK);
                ASSERT_EQ(fmm_setpts(p, na, xyz.data()), FMM_OK);
            }
            ASSERT_EQ(fmm_execute(cp, q.data(), c.phi.data(), c.field.data(), &c.energy, c.virial), FMM_OK);
            ASSERT_EQ(fmm_execute(gp, q.data(), d.phi.data(), d.field.data(), &d.energy, d.virial), FMM_OK);
            ASSERT_EQ(fmm_execute(gp, nullptr, k.phi.data(), k.field.data(), &k.energy, k.virial), FMM_OK);
            // mixed: the float near field rounds the excluded pairs' terms before their double
            // subtraction, so the energy and virial errors scale with the excluded energy
            // sum |q_i q_j| / r_ij (printed, relative to |U|), not with the rest
            double excluded = 0;
            for (size_t a = 0; a < pairs.size(); a += 2) {
                double r2 = 0;
                for (int e = 0; e < 3; ++e) {
                    double dx = xyz[3 * pairs[a] + e] - xyz[3 * pairs[a + 1] + e];
                    if (periodic) dx -= L * std::round(dx / L);
                    r2 += dx * dx;
                }
                excluded += std::fabs(q[pairs[a]] * q[pairs[a + 1]]) / std::sqrt(r2);
            }
            double vn = 0, vd = 0;
            for (int a = 0; a < 9; ++a) vn += c.virial[a] * c.virial[a], vd += std::pow(d.virial[a] - c.virial[a], 2);
            vn = std::sqrt(vn), vd = std::sqrt(vd);
            const double tol = mixed ? FMM_MIXED_TOL_MIN : 1e-12, escale = std::fabs(c.energy) + (mixed ? excluded : 0);
            std::cout << (periodic ? "periodic" : "open") << (mixed ? " mixed" : " double")
                      << ": GPU vs CPU with exclusions, rel phi " << rel(d.phi, c.phi) << " field "
                      << rel(d.field, c.field) << " energy " << std::fabs(d.energy - c.energy) / std::fabs(c.energy)
                      << " virial " << vd / vn << " (excluded energy / |U| " << excluded / std::fabs(c.energy) << ")\n";
            for (const Out *r : {&d, &k}) {
                EXPECT_LT(rel(r->phi, c.phi), tol);
                EXPECT_LT(rel(r->field, c.field), tol);
                EXPECT_LT(std::fabs(r->energy - c.energy), tol * escale);
            }
            EXPECT_LT(vd, mixed ? tol * (vn + excluded) : 1e-10 * vn);
            // Every replay bins the points anew (the leaf counters cleared in the graph,
            // fmm/fmm_cuda_bin.cu): the same points set again (the graph of this size replayed,
            // not captured anew) with the kept charges, then the exclusions uploaded again, the
            // graph timed (captured anew: the old one held the freed arrays) and evaluated. Each
            // is the first evaluation up to the order of the binning's atomics; counters left
            // from the launch before would misplace the particles (outputs off by O(1)).
            Out r, t;
            for (Out *x : {&r, &t}) x->phi.assign(na, NAN), x->field.assign(3 * na, NAN);
            ASSERT_EQ(fmm_setpts(gp, na, xyz.data()), FMM_OK);
            ASSERT_EQ(fmm_execute(gp, nullptr, r.phi.data(), r.field.data(), &r.energy, r.virial),
                      FMM_OK);
            ASSERT_EQ(fmm_set_exclusions(gp, (long)pairs.size() / 2, pairs.data()), FMM_OK);
            double ms[2] = {0, 0};
            EXPECT_EQ(fmm_cuda_time_replays(gp, 2, ms), FMM_OK);
            ASSERT_EQ(fmm_execute(gp, nullptr, t.phi.data(), t.field.data(), &t.energy, t.virial),
                      FMM_OK);
            const double again = mixed ? tol : 1e-13;
            for (const Out *x : {&k, &r, &t}) {
                EXPECT_LT(rel(x->phi, d.phi), again);
                EXPECT_LT(rel(x->field, d.field), again);
                EXPECT_LT(std::fabs(x->energy - d.energy), tol * escale);
            }
            fmm_destroy(cp), fmm_destroy(gp);
#ifdef FMM_HAVE_CUDA
            // the device route's graph (the excluded pairs subtracted before the forces are
            // written), in a tree and at depth 0, against the host entry points of the same plan
            // on the same float positions
            for (int depth : {3, 0}) {
                if (!periodic) break;
                SCOPED_TRACE("device route, depth " + std::to_string(depth));
                o.depth = depth;
                ASSERT_EQ(fmm_makeplan(&o, box, &gp), FMM_OK);
                ASSERT_EQ(fmm_set_exclusions(gp, (long)pairs.size() / 2, pairs.data()), FMM_OK);
                std::vector<float> xf(xyz.begin(), xyz.end()), qf(q.begin(), q.end()), fh(3 * na),
                    fd(3 * na, NAN);
                double eh = 0, ed = 0;
                ASSERT_EQ(fmm_setptsf(gp, na, xf.data()), FMM_OK);
                ASSERT_EQ(fmm_executef(gp, qf.data(), nullptr, fh.data(), &eh, nullptr), FMM_OK);
                float *d_x = nullptr, *d_f = nullptr;
                ASSERT_EQ(cudaMalloc((void **)&d_x, sizeof(float) * 3 * na), cudaSuccess);
                ASSERT_EQ(cudaMalloc((void **)&d_f, sizeof(float) * 3 * na), cudaSuccess);
                ASSERT_EQ(
                    cudaMemcpy(d_x, xf.data(), sizeof(float) * 3 * na, cudaMemcpyHostToDevice),
                    cudaSuccess);
                ASSERT_EQ(fmm_cuda_setptsf(gp, na, d_x, nullptr), FMM_OK);
                ASSERT_EQ(fmm_cuda_forcesf(gp, nullptr, d_f, 2.0, &ed, nullptr, nullptr), FMM_OK);
                ASSERT_EQ(
                    cudaMemcpy(fd.data(), d_f, sizeof(float) * 3 * na, cudaMemcpyDeviceToHost),
                    cudaSuccess);
                cudaFree(d_x), cudaFree(d_f);
                std::vector<double> want(3 * na), got(fd.begin(), fd.end());
                for (long i = 0; i < 3 * na; ++i) want[i] = 2.0 * qf[i / 3] * (double)fh[i];
                EXPECT_LT(rel(got, want), mixed ? 1e-6 : 1e-7);
                EXPECT_LT(std::fabs(ed - eh), (mixed ? 1e-7 : 1e-12) * (std::fabs(eh) + excluded));
                fmm_destroy(gp);
            }
#endif
        }
}

// fmm_setptsf / fmm_executef on the device: float data widened and rounded there, the same
// evaluation as the double entry points (float-rounded inputs), each output alone as well.
TEST(GpuPlan, SinglePrecisionEntryPointsMatchDouble) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const double L = 2.0, box[3] = {L, L, L};
    std::vector<double> xyz, q;
    random_set(g, test_size(20000, 3000, 400), L, 0.5, xyz, q);
    for (auto &v : xyz) v = (float)v;
    for (auto &v : q) v = (float)v;
    const std::vector<float> xf(xyz.begin(), xyz.end()), qf(q.begin(), q.end());
    const long n = (long)q.size();
    for (int mixed : {0, 1}) {
        SCOPED_TRACE(mixed ? "mixed" : "double");
        fmm_plan *p = periodic_p7_plan(mixed, box);
        ASSERT_NE(p, nullptr);
        Out d;
        d.phi.resize(n), d.field.resize(3 * n);
        ASSERT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
        ASSERT_EQ(fmm_execute(p, q.data(), d.phi.data(), d.field.data(), &d.energy, d.virial), FMM_OK);
        ASSERT_EQ(fmm_setptsf(p, n, xf.data()), FMM_OK);
        std::vector<float> phi(n, NAN), field(3 * n, NAN), phi1(n, NAN), field1(3 * n, NAN);
        double energy = 0, vir[9];
        ASSERT_EQ(fmm_executef(p, qf.data(), phi.data(), field.data(), &energy, vir), FMM_OK);
        ASSERT_EQ(fmm_executef(p, nullptr, phi1.data(), nullptr, nullptr, nullptr), FMM_OK);
        ASSERT_EQ(fmm_executef(p, nullptr, nullptr, field1.data(), nullptr, nullptr), FMM_OK);
        const std::vector<double> ph(phi.begin(), phi.end()), fi(field.begin(), field.end());
        const std::vector<double> ph1(phi1.begin(), phi1.end()), fi1(field1.begin(), field1.end());
        // float rounding of the outputs, plus (mixed) the run-to-run order of the float sums
        const double tol = mixed ? 1e-6 : 1e-7;
        EXPECT_LT(rel(ph, d.phi), tol);
        EXPECT_LT(rel(fi, d.field), tol);
        EXPECT_LT(rel(ph1, d.phi), tol);
        EXPECT_LT(rel(fi1, d.field), tol);
        // the energy of random charges cancels (seed 2248729630: |U| = 1085, 1/2 sum |q phi| =
        // 216563), and the run-to-run order of the float sums moves it relative to the sum of its
        // magnitudes (there 2.2e-9 of it), not to |U|: mixed is bounded on that scale
        double mag = 0;
        for (long i = 0; i < n; ++i) mag += 0.5 * std::fabs(q[i] * d.phi[i]);
        EXPECT_LT(std::fabs(energy - d.energy), mixed ? 1e-7 * mag : 1e-12 * std::fabs(d.energy));
        fmm_destroy(p);
    }
}

TEST(GpuPlan, RejectsWhatItCannotDo) {
    SKIP_WITHOUT_GPU();
    fmm_opts o;
    fmm_default_opts(&o);
    o.device = FMM_DEVICE_CUDA;
    o.order = 21;
    fmm_plan *p = nullptr;
    EXPECT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_ERR_ORDER);
    EXPECT_EQ(p, nullptr);
    o.order = 0, o.tolerance = 1e-10;  // would need order > 20
    EXPECT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_ERR_TOLERANCE);
    EXPECT_EQ(p, nullptr);
    o.order = 4, o.depth = 11;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_OK);
    std::vector<double> xyz(300, 0.5), q(100, 1.0);
    for (int i = 0; i < 300; ++i) xyz[i] = (i * 37 % 101) / 101.0;
    EXPECT_EQ(fmm_setpts(p, 100, xyz.data()), FMM_ERR_DEPTH);
    EXPECT_EQ(fmm_execute(p, q.data(), nullptr, nullptr, nullptr, nullptr), FMM_ERR_NOPTS);
    fmm_destroy(p);
}

// A NaN in the input leaves a CUDA plan's points as they were. The device's memory runs out
// under a plan: fmm_setpts says FMM_ERR_NOMEM and leaves the plan without points (FMM_ERR_NOPTS:
// its device buffers were given up for the larger set), and once memory is free again the same plan
// takes a set and reproduces its earlier result. The memory is taken by this test itself, all but
// 256 MB of what is free; the large set needs ~0.9 GB.
TEST(GpuPlan, OutOfDeviceMemoryIsAClearErrorAndThePlanRecovers) {
    SKIP_WITHOUT_GPU();
#ifndef FMM_HAVE_CUDA
    GTEST_SKIP() << "the test takes device memory through the CUDA runtime: built without CUDA";
#else
    // (under the sanitizer the large set still needs ~0.45 GB, beyond the 256 MB left)
    const long n = test_size(20000, 3000), big = test_size(4000000, 2000000);
    std::vector<double> xyz(3 * big), q(big), phi0(n), phi1(n);
    ASSERT_EQ(pts_uniform(big, test_seed(), xyz.data(), q.data()), 0);
    fmm_opts o;
    fmm_default_opts(&o);
    o.device = FMM_DEVICE_CUDA;
    o.tolerance = 1e-6;
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_OK);
    ASSERT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
    ASSERT_EQ(fmm_execute(p, q.data(), phi0.data(), nullptr, nullptr, nullptr), FMM_OK);
    // input rejected before the device is touched: the plan keeps its points
    std::vector<double> bad(xyz.begin(), xyz.begin() + 3 * n);
    bad[3 * 777 + 1] = NAN;
    EXPECT_EQ(fmm_setpts(p, n, bad.data()), FMM_ERR_NONFINITE);
    ASSERT_EQ(fmm_execute(p, q.data(), phi1.data(), nullptr, nullptr, nullptr), FMM_OK);
    EXPECT_LT(rel(phi1, phi0), 1e-12);
    std::vector<void *> taken;
    const size_t keep = size_t(256) << 20;
    size_t chunk = size_t(1) << 32, freeb = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&freeb, &total), cudaSuccess);
    while (freeb > keep && chunk >= (size_t(1) << 20)) {
        void *d = nullptr;
        size_t want = std::min(chunk, freeb - keep);
        if (cudaMalloc(&d, want) == cudaSuccess)
            taken.push_back(d);
        else
            chunk /= 2, (void)cudaGetLastError();
        if (cudaMemGetInfo(&freeb, &total) != cudaSuccess) break;
    }
    std::cout << "device memory left free: " << (freeb >> 20) << " MiB of " << (total >> 20)
              << "\n";
    const int rc = fmm_setpts(p, big, xyz.data());
    for (void *d : taken) cudaFree(d);
    EXPECT_EQ(rc, FMM_ERR_NOMEM) << fmm_strerror(rc);
    EXPECT_STREQ(fmm_strerror(rc), "out of memory");
    EXPECT_EQ(fmm_execute(p, q.data(), phi1.data(), nullptr, nullptr, nullptr), FMM_ERR_NOPTS);
    ASSERT_EQ(fmm_setpts(p, n, xyz.data()), FMM_OK);
    ASSERT_EQ(fmm_execute(p, q.data(), phi1.data(), nullptr, nullptr, nullptr), FMM_OK);
    EXPECT_LT(rel(phi1, phi0), 1e-12);
    // with the memory back, the large set fits the same plan (not under racecheck, where its
    // evaluation would take hours: its kernels are those of the small set)
    std::vector<double> phib(big);
    if (!test_racecheck_mode()) {
        EXPECT_EQ(fmm_setpts(p, big, xyz.data()), FMM_OK);
        EXPECT_EQ(fmm_execute(p, q.data(), phib.data(), nullptr, nullptr, nullptr), FMM_OK);
    }
    fmm_destroy(p);
#endif
}

// Positions and forces on the device (fmm_cuda_setptsf / fmm_cuda_forcesf, the route of an MD code
// that integrates on the GPU) against the host entry points on the same plan: the forces are
// scale q_i E_i of the same evaluation (float rounding apart), the energy and virial too; the plan
// orders its work after what the caller queued on its stream (a position upload queued just before
// the call) and the caller's later work after the plan's (the copy back of the forces, with no
// other wait); the positions are read by the evaluation, not by fmm_cuda_setptsf; another
// position or force buffer and another scale are taken (the device route's graph holds them);
// a NaN position is reported by the next call that returns the energy.
TEST(GpuPlan, DeviceResidentPositionsAndForcesMatchHostCalls) {
    SKIP_WITHOUT_GPU();
#ifndef FMM_HAVE_CUDA
    GTEST_SKIP()
        << "the test puts its data on the device through the CUDA runtime: built without CUDA";
#else
    std::mt19937_64 g(test_seed());
    const double L = 3.0, box[3] = {L, L, L}, scale = 138.9;
    std::vector<double> xyz, q;
    random_set(g, test_size(30000, 3000, 400), L, 0.0, xyz, q);
    const long n = (long)q.size();
    std::vector<float> xf(xyz.begin(), xyz.end()), qf(q.begin(), q.end());
    std::vector<float> xf2(xf); // a second frame: every atom moved by up to 0.01
    std::uniform_real_distribution<double> u(-0.01, 0.01);
    for (auto &v : xf2) v += (float)u(g);
    float *d_x = nullptr, *d_f = nullptr, *d_x2 = nullptr, *d_f2 = nullptr;
    ASSERT_EQ(cudaMalloc((void **)&d_x, sizeof(float) * 3 * n), cudaSuccess);
    ASSERT_EQ(cudaMalloc((void **)&d_f, sizeof(float) * 3 * n), cudaSuccess);
    ASSERT_EQ(cudaMalloc((void **)&d_x2, sizeof(float) * 3 * n), cudaSuccess);
    ASSERT_EQ(cudaMalloc((void **)&d_f2, sizeof(float) * 3 * n), cudaSuccess);
    cudaStream_t st;
    ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    // host entry points: forces scale q E, energy and virial
    double mag = 0;  // 1/2 sum |q phi|: the scale of the energy's rounding (random charges cancel)
    double vmag = 0; // sum |q E| L/2: the scale of the virial's terms q E_a Y_b (|Y_b| <= L/2)
    auto host = [&](fmm_plan *p, const std::vector<float> &x, std::vector<double> &f, double &e,
                    double *w) {
        std::vector<float> phi(n), field(3 * n);
        ASSERT_EQ(fmm_setptsf(p, n, x.data()), FMM_OK);
        ASSERT_EQ(fmm_executef(p, qf.data(), phi.data(), field.data(), &e, w), FMM_OK);
        f.resize(3 * n);
        for (long i = 0; i < 3 * n; ++i) f[i] = scale * qf[i / 3] * (double)field[i];
        mag = vmag = 0;
        for (long i = 0; i < n; ++i) mag += 0.5 * std::fabs(qf[i] * (double)phi[i]);
        for (long i = 0; i < 3 * n; ++i) vmag += 0.5 * L * std::fabs(qf[i / 3] * (double)field[i]);
    };
    auto fetch = [&](std::vector<double> &f) { // ordered after the plan's work by the stream alone
        std::vector<float> h(3 * n, NAN);
        ASSERT_EQ(cudaMemcpyAsync(h.data(), d_f, sizeof(float) * 3 * n, cudaMemcpyDeviceToHost, st),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
        f.assign(h.begin(), h.end());
    };
    for (int mixed : {0, 1}) {
        SCOPED_TRACE(mixed ? "mixed" : "double");
        fmm_plan *p = periodic_p7_plan(mixed, box);
        ASSERT_NE(p, nullptr);
        std::vector<double> f_ref, f2_ref, f;
        double e_ref, e2_ref, w_ref[9], w2_ref[9];
        host(p, xf2, f2_ref, e2_ref, w2_ref);
        host(p, xf, f_ref, e_ref, w_ref);
        // the device route on the same plan: the charges of the last host call are reused
        ASSERT_EQ(
            cudaMemcpyAsync(d_x, xf.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_setptsf(p, n, d_x, st), FMM_OK);
        double e = 0, w[9] = {0};
        ASSERT_EQ(fmm_cuda_forcesf(p, nullptr, d_f, scale, &e, w, st), FMM_OK);
        fetch(f);
        const double tol = mixed ? 1e-6 : 1e-7, etol = mixed ? 1e-7 : 1e-12;
        EXPECT_LT(rel(f, f_ref), tol);
        EXPECT_LT(std::fabs(e - e_ref), etol * mag);
        for (int k = 0; k < 9; ++k) EXPECT_NEAR(w[k], w_ref[k], etol * vmag);
        // the second frame, uploaded on the caller's stream right before the call; no energy: no
        // wait
        ASSERT_EQ(
            cudaMemcpyAsync(d_x, xf2.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_setptsf(p, n, d_x, st), FMM_OK);
        ASSERT_EQ(cudaMemsetAsync(d_f, 0xff, sizeof(float) * 3 * n, st),
                  cudaSuccess); // NaN until written
        ASSERT_EQ(fmm_cuda_forcesf(p, nullptr, d_f, scale, nullptr, nullptr, st), FMM_OK);
        fetch(f);
        EXPECT_LT(rel(f, f2_ref), tol);
        // the positions are read by the evaluation: overwritten between the two calls
        ASSERT_EQ(
            cudaMemcpyAsync(d_x2, xf.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_setptsf(p, n, d_x2, st), FMM_OK); // another buffer
        ASSERT_EQ(
            cudaMemcpyAsync(d_x2, xf2.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_forcesf(p, nullptr, d_f2, 2 * scale, nullptr, nullptr, st), FMM_OK);
        std::vector<float> h(3 * n);
        ASSERT_EQ(
            cudaMemcpyAsync(h.data(), d_f2, sizeof(float) * 3 * n, cudaMemcpyDeviceToHost, st),
            cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
        f.assign(h.begin(), h.end());
        for (auto &v : f) v *= 0.5;
        EXPECT_LT(rel(f, f2_ref), tol);
        // new charges through the device route
        std::vector<float> q2(qf);
        for (auto &v : q2) v = -v;
        ASSERT_EQ(fmm_cuda_forcesf(p, q2.data(), d_f, scale, &e, nullptr, st), FMM_OK);
        fetch(f);
        EXPECT_LT(rel(f, f2_ref), tol);                   // q E is even in q
        EXPECT_LT(std::fabs(e - e2_ref), 2 * etol * mag); // mag is the first frame's
        // a NaN position: reported where the energy is asked for; then a good set works again
        std::vector<float> bad(xf);
        bad[3 * 1234 + 2] = NAN;
        ASSERT_EQ(
            cudaMemcpyAsync(d_x, bad.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_setptsf(p, n, d_x, st), FMM_OK);
        EXPECT_EQ(fmm_cuda_forcesf(p, nullptr, d_f, scale, &e, nullptr, st), FMM_ERR_NONFINITE);
        std::vector<float> field(3 * n); // the host entry points see the same positions
        EXPECT_EQ(fmm_executef(p, nullptr, nullptr, field.data(), &e, nullptr), FMM_ERR_NONFINITE);
        // finite positions from the host: that report is gone, forces still go to the device
        ASSERT_EQ(fmm_setptsf(p, n, xf2.data()), FMM_OK);
        ASSERT_EQ(fmm_cuda_forcesf(p, nullptr, d_f, scale, &e, nullptr, st), FMM_OK);
        fetch(f);
        EXPECT_LT(rel(f, f2_ref), tol);
        ASSERT_EQ(
            cudaMemcpyAsync(d_x, xf.data(), sizeof(float) * 3 * n, cudaMemcpyHostToDevice, st),
            cudaSuccess);
        ASSERT_EQ(fmm_cuda_setptsf(p, n, d_x, st), FMM_OK);
        ASSERT_EQ(fmm_cuda_forcesf(p, qf.data(), d_f, scale, &e, nullptr, st), FMM_OK);
        fetch(f);
        EXPECT_LT(rel(f, f_ref), tol);
        // what the device route does not take
        EXPECT_EQ(fmm_cuda_setptsf(p, n, nullptr, st), FMM_ERR_ARG);
        EXPECT_EQ(fmm_cuda_setptsf(p, 0, d_x, st), FMM_ERR_NPTS);
        EXPECT_EQ(fmm_cuda_forcesf(p, nullptr, nullptr, scale, nullptr, nullptr, st), FMM_ERR_ARG);
        fmm_destroy(p);
    }
    fmm_opts o;
    fmm_default_opts(&o);
    o.device = FMM_DEVICE_CUDA, o.order = 5;
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_OK); // open boundary
    EXPECT_EQ(fmm_cuda_setptsf(p, n, d_x, st), FMM_ERR_UNSUPPORTED);
    fmm_destroy(p);
    cudaStreamDestroy(st);
    cudaFree(d_x), cudaFree(d_f), cudaFree(d_x2), cudaFree(d_f2);
#endif
}

// CPU plans have no device memory to take
TEST(GpuPlan, DeviceResidentCallsOnACpuPlanSayDevice) {
    fmm_opts o;
    fmm_default_opts(&o);
    o.periodic = 1;
    const double box[3] = {1, 1, 1};
    fmm_plan *p = nullptr;
    ASSERT_EQ(fmm_makeplan(&o, box, &p), FMM_OK);
    float x[3] = {0.5f, 0.5f, 0.5f}, f[3];
    EXPECT_EQ(fmm_cuda_setptsf(p, 1, x, nullptr), FMM_ERR_DEVICE);
    EXPECT_EQ(fmm_cuda_forcesf(p, nullptr, f, 1.0, nullptr, nullptr, nullptr), FMM_ERR_DEVICE);
    fmm_destroy(p);
}

TEST(GpuPlan, WithoutADeviceSaysSo) {
    if (!no_gpu()) GTEST_SKIP() << "a CUDA device is present";
    fmm_opts o;
    fmm_default_opts(&o);
    o.device = FMM_DEVICE_CUDA;
    fmm_plan *p = nullptr;
    EXPECT_EQ(fmm_makeplan(&o, nullptr, &p), FMM_ERR_DEVICE);
    EXPECT_EQ(p, nullptr);
}

TEST(GpuDirect, RejectsBadInputAndMatchesTheCpuDirectSum) {
    std::vector<double> xyz = {0, 0, 0, 1, 0, 0, 0, 1, 0}, q = {1, -1, 0.5};
    double phi[3], field[9];
    EXPECT_EQ(fmm_direct_cuda(0, xyz.data(), q.data(), phi, field, nullptr), FMM_ERR_NPTS);
    EXPECT_EQ(fmm_direct_cuda(3, nullptr, q.data(), phi, field, nullptr), FMM_ERR_ARG);
    q[1] = NAN;
    EXPECT_EQ(fmm_direct_cuda(3, xyz.data(), q.data(), phi, field, nullptr), FMM_ERR_NONFINITE);
    q[1] = -1, xyz[4] = INFINITY;
    EXPECT_EQ(fmm_direct_cuda(3, xyz.data(), q.data(), phi, field, nullptr), FMM_ERR_NONFINITE);
    xyz[4] = 0;
    SKIP_WITHOUT_GPU();
    std::mt19937_64 g(test_seed());
    const long n = test_size(3000, 1000, 300);
    random_set(g, n, 1.0, 0.0, xyz, q);
    std::vector<double> p1(n), f1(3 * n), p2(n, NAN), f2(3 * n, NAN);
    ASSERT_EQ(fmm_direct(n, xyz.data(), q.data(), p1.data(), f1.data(), nullptr, nullptr, 0),
              FMM_OK);
    ASSERT_EQ(fmm_direct_cuda(n, xyz.data(), q.data(), p2.data(), f2.data(), nullptr), FMM_OK);
    EXPECT_LT(rel(p2, p1), 1e-13);
    EXPECT_LT(rel(f2, f1), 1e-13);
}

#ifdef FMM_HAVE_CUDA
// The halo M2L (m2l/m2l_halo.cu, the mixed FMM's finest level from depth 5): what it refuses needs
// no device; on one, it must overwrite every entry of U and match the symmetric variant in double
// to its documented bound, 3e-5 of max|U| (TF32 products split hi + lo, float accuracy, but the
// tensor cores' accumulation truncates).
TEST(GpuM2L, HaloPlanRefusesWhatItCannotRun) {
    EXPECT_TRUE(m2l_gpu_halo_supported(7, 5, 90));
    EXPECT_TRUE(m2l_gpu_halo_supported(M2L_HALO_PMAX, 4, 80));
    EXPECT_FALSE(m2l_gpu_halo_supported(M2L_HALO_PMAX + 1, 5, 90)); // order
    EXPECT_FALSE(m2l_gpu_halo_supported(0, 5, 90));
    EXPECT_FALSE(
        m2l_gpu_halo_supported(7, 3, 90)); // the tile does not divide a level-3 parity grid
    EXPECT_FALSE(m2l_gpu_halo_supported(7, 11, 90));
    EXPECT_FALSE(m2l_gpu_halo_supported(7, 5, 75)); // no TF32 mma
    char sentinel;
    m2l_halo_plan *pl =
        reinterpret_cast<m2l_halo_plan *>(&sentinel); // a refused plan is set to NULL
    EXPECT_EQ(m2l_gpu_halo_plan(nullptr, 5, 1, &pl), FMM_ERR_ARG);
    EXPECT_EQ(pl, nullptr);
    m2l_gpu_ops none{};
    EXPECT_EQ(m2l_gpu_halo_plan(&none, 5, 1, nullptr), FMM_ERR_ARG);
    EXPECT_EQ(m2l_gpu_halo_plan(&none, 5, 1, &pl), FMM_ERR_ARG); // no operators
    EXPECT_EQ(m2l_gpu_halo_run(nullptr, nullptr, nullptr, 0), FMM_ERR_ARG);
    m2l_gpu_halo_free(nullptr);
}

TEST(GpuM2L, HaloMatchesSymmetricDouble) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 rng(test_seed());
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int p : test_size<std::vector<int>>({4, 7}, {4, 7}, {4})) {
        m2l_operators ops;
        ASSERT_EQ(m2l_operators_init(&ops, p), 0);
        m2l_gpu_ops g;
        ASSERT_EQ(m2l_gpu_ops_init(&g, &ops), FMM_OK);
        m2l_halo_plan *bad = nullptr;
        EXPECT_EQ(m2l_gpu_halo_plan(&g, 3, 1, &bad), FMM_ERR_ARG) << "level 3";
        for (int periodic : {1, 0}) {
            const int level = periodic ? 5 : 4, nc = g.nc;
            const size_t n = ((size_t)1 << (3 * level)) * nc;
            std::vector<double> W(n), ref(n), got(n);
            for (auto &w : W) w = u(rng);
            double *dW = nullptr, *dU = nullptr;
            ASSERT_EQ(cudaMalloc((void **)&dW, n * sizeof(double)), cudaSuccess);
            ASSERT_EQ(cudaMalloc((void **)&dU, n * sizeof(double)), cudaSuccess);
            ASSERT_EQ(cudaMemcpy(dW, W.data(), n * sizeof(double), cudaMemcpyHostToDevice),
                      cudaSuccess);
            m2l_sym_plan *sp = nullptr;
            m2l_halo_plan *hp = nullptr;
            ASSERT_EQ(m2l_gpu_symmetric_plan(&g, level, periodic, 0, 0, 0, &sp), FMM_OK);
            ASSERT_EQ(m2l_gpu_halo_plan(&g, level, periodic, &hp), FMM_OK);
            ASSERT_EQ(m2l_gpu_symmetric_run(sp, dW, dU, 0), FMM_OK);
            ASSERT_EQ(cudaMemcpy(ref.data(), dU, n * sizeof(double), cudaMemcpyDeviceToHost),
                      cudaSuccess);
            ASSERT_EQ(cudaMemset(dU, 0xff, n * sizeof(double)),
                      cudaSuccess); // NaN: every entry must be written
            ASSERT_EQ(m2l_gpu_halo_run(hp, dW, dU, 0), FMM_OK);
            ASSERT_EQ(cudaMemcpy(got.data(), dU, n * sizeof(double), cudaMemcpyDeviceToHost),
                      cudaSuccess);
            double dmax = 0, rmax = 0;
            size_t nan = 0;
            for (size_t i = 0; i < n; ++i) {
                if (!std::isfinite(got[i])) ++nan;
                dmax = std::max(dmax, std::fabs(got[i] - ref[i]));
                rmax = std::max(rmax, std::fabs(ref[i]));
            }
            std::cout << "p " << p << " level " << level << (periodic ? " periodic" : " open")
                      << ": max|halo - symmetric| / max|U| " << dmax / rmax << "\n";
            EXPECT_EQ(nan, 0u);
            EXPECT_LT(dmax / rmax, 3e-5) << "p " << p << ", level " << level;
            m2l_gpu_symmetric_free(sp);
            m2l_gpu_halo_free(hp);
            cudaFree(dW), cudaFree(dU);
        }
        m2l_gpu_ops_free(&g);
        m2l_operators_free(&ops);
    }
}
#endif
