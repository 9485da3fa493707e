// Periodic cells (pbc/cell.h): GROMACS's limits, wrapping into the brick, the near set.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

extern "C" {
#include "fmm.h"
#include "pbc/cell.h"
}

namespace {

const double kSqrt2 = std::sqrt(2.0), kSqrt6 = std::sqrt(6.0);
const double kDodecahedron[9] = {1, 0, 0, 0, 1, 0, 0.5, 0.5, kSqrt2 / 2};
const double kOctahedron[9] = {1, 0,        0,          1.0 / 3,   2 * kSqrt2 / 3,
                               0, -1.0 / 3, kSqrt2 / 3, kSqrt6 / 3};

int near_count(const double h[9]) {
    pbc_cell c;
    EXPECT_EQ(pbc_cell_init(&c, h), FMM_OK);
    const double r = 2 * pbc_cell_brick_radius(&c) / (std::sqrt(3.0) / 2);
    return pbc_cell_near_set(&c, r, nullptr, 0);
}

TEST(Cell, LimitsAreGromacss) {
    pbc_cell c;
    EXPECT_EQ(pbc_cell_init(&c, kDodecahedron), FMM_OK);
    EXPECT_FALSE(c.rect);
    EXPECT_NEAR(c.volume, kSqrt2 / 2, 1e-15);
    EXPECT_EQ(pbc_cell_init(&c, kOctahedron), FMM_OK);
    const double cube[9] = {2, 0, 0, 0, 2, 0, 0, 0, 2};
    EXPECT_EQ(pbc_cell_init(&c, cube), FMM_OK);
    EXPECT_TRUE(c.cube);
    double bad[9];
    auto with = [&](int k, double v) {
        std::copy(kDodecahedron, kDodecahedron + 9, bad);
        bad[k] = v;
        return pbc_cell_init(&c, bad);
    };
    EXPECT_EQ(with(1, 0.1), FMM_ERR_BOX) << "a_y";
    EXPECT_EQ(with(2, 0.1), FMM_ERR_BOX) << "a_z";
    EXPECT_EQ(with(5, 0.1), FMM_ERR_BOX) << "b_z";
    EXPECT_EQ(with(0, 0), FMM_ERR_BOX) << "ax 0";
    EXPECT_EQ(with(4, -1), FMM_ERR_BOX) << "by < 0";
    EXPECT_EQ(with(8, NAN), FMM_ERR_BOX) << "cz NaN";
    EXPECT_EQ(with(3, 0.51), FMM_ERR_BOX) << "|bx| > ax/2 beyond GROMACS's margin";
    EXPECT_EQ(with(6, -0.51), FMM_ERR_BOX) << "|cx| > ax/2";
    EXPECT_EQ(with(7, 0.51), FMM_ERR_BOX) << "|cy| > by/2";
    EXPECT_EQ(with(3, 0.502), FMM_OK) << "within GROMACS's margin";
    const double edges[3] = {1, 2, 3}, zero[3] = {1, 0, 3};
    EXPECT_EQ(pbc_cell_rect(&c, edges), FMM_OK);
    EXPECT_TRUE(c.rect && !c.cube);
    EXPECT_EQ(pbc_cell_rect(&c, zero), FMM_ERR_BOX);
}

TEST(Cell, WrapMovesByLatticeVectorsIntoTheBrick) {
    unsigned seed = std::random_device{}();
    std::printf("seed %u\n", seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-20, 20);
    for (const double *h : {kDodecahedron, kOctahedron}) {
        pbc_cell c;
        ASSERT_EQ(pbc_cell_init(&c, h), FMM_OK);
        for (int t = 0; t < 2000; ++t) {
            double x[3] = {u(rng), u(rng), u(rng)}, y[3] = {x[0], x[1], x[2]};
            pbc_cell_wrap(&c, y);
            EXPECT_TRUE(y[0] >= 0 && y[0] < h[0] && y[1] >= 0 && y[1] < h[4] && y[2] >= 0 &&
                        y[2] < h[8]);
            // y - x = n h with integer n: n = (y - x) h^-1 = (y - x) g^T / (2 pi)
            for (int d = 0; d < 3; ++d) {
                double n = 0;
                for (int e = 0; e < 3; ++e) n += (y[e] - x[e]) * c.g[3 * d + e];
                n /= 2 * 3.14159265358979323846;
                EXPECT_NEAR(n, std::round(n), 1e-9);
            }
        }
    }
}

TEST(Cell, NearSetCountsAndSymmetry) {
    const double cube[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, slab[9] = {1, 0, 0, 0, 1, 0, 0, 0, 3};
    // the counts of docs/periodic-cells.md (section 3, reference values)
    EXPECT_EQ(near_count(cube), 27);
    EXPECT_EQ(near_count(slab), 87);
    EXPECT_EQ(near_count(kDodecahedron), 43);
    EXPECT_EQ(near_count(kOctahedron), 27);
    pbc_cell c;
    ASSERT_EQ(pbc_cell_init(&c, kDodecahedron), FMM_OK);
    int n[3 * 64];
    const int k = pbc_cell_near_set(&c, 2.0, n, 64);
    ASSERT_LE(k, 64);
    for (int i = 0; i < k; ++i) { // inversion-symmetric
        bool found = false;
        for (int j = 0; j < k && !found; ++j)
            found = n[3 * j] == -n[3 * i] && n[3 * j + 1] == -n[3 * i + 1] &&
                    n[3 * j + 2] == -n[3 * i + 2];
        EXPECT_TRUE(found) << i;
    }
    EXPECT_EQ(pbc_cell_near_set(&c, 0.0, n, 64), -1);
}

} // namespace
