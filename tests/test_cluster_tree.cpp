// tests/test_cluster_tree.cpp - the cluster trees of core/cluster_tree.h (BLDTT's bisection
// trees, FGP-RBF's k-d trees): on fresh random points (uniform, clustered, with duplicates),
// every node's range and box, the split rule, the leaves, the breadth-first order, the radii, and
// the same tree for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cluster_tree.h"
#include "fmm_common.h"
#include "tests/test_env.h"

namespace {

// n points: uniform in a box 1 x 0.5 x 0.25 (elongated, so that BISECT splits fewer sides), a
// tight cluster, and duplicates of earlier points
std::vector<double> points(long n, std::mt19937_64 &rng) {
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, 1e-3);
    std::vector<double> xyz(3 * n);
    for (long i = 0; i < n; ++i) {
        if (i % 5 == 4 && i > 10) { // a duplicate
            long j = (long)(u(rng) * (i - 1));
            for (int d = 0; d < 3; ++d) xyz[3 * i + d] = xyz[3 * j + d];
        } else if (i % 3 == 0) { // the cluster
            for (int d = 0; d < 3; ++d) xyz[3 * i + d] = 0.7 + g(rng);
        } else {
            xyz[3 * i] = u(rng), xyz[3 * i + 1] = 0.5 * u(rng), xyz[3 * i + 2] = 0.25 * u(rng);
        }
    }
    return xyz;
}

// the structural checks that hold for either rule
void check_tree(const ct_tree &t, const std::vector<double> &xyz, int elen, int leaf, int split) {
    const long n = (long)xyz.size() / 3;
    ASSERT_EQ(t.n, n);
    // perm is a permutation, x, y, z the scaled points in tree order
    std::vector<char> seen(n, 0);
    for (long i = 0; i < n; ++i) {
        ASSERT_TRUE(t.perm[i] >= 0 && t.perm[i] < n);
        ASSERT_FALSE(seen[t.perm[i]]);
        seen[t.perm[i]] = 1;
        EXPECT_EQ(t.x[i], std::ldexp(xyz[3 * t.perm[i]], -elen));
        EXPECT_EQ(t.y[i], std::ldexp(xyz[3 * t.perm[i] + 1], -elen));
        EXPECT_EQ(t.z[i], std::ldexp(xyz[3 * t.perm[i] + 2], -elen));
    }
    // the root holds everything; levels are contiguous and breadth first
    ASSERT_GE(t.nnodes, 1);
    EXPECT_EQ(t.nodes[0].ibeg, 0);
    EXPECT_EQ(t.nodes[0].iend, n);
    EXPECT_EQ(t.nodes[0].parent, -1);
    EXPECT_EQ(t.level_start[0], 0);
    EXPECT_EQ(t.level_start[t.depth + 1], t.nnodes);
    int nleaves = 0;
    for (int k = 0; k < t.nnodes; ++k) {
        const ct_node &nd = t.nodes[k];
        EXPECT_GE(k, t.level_start[nd.level]);
        EXPECT_LT(k, t.level_start[nd.level + 1]);
        // the box is shrunk to the node's points: each side's bounds are attained
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        double r2 = 0;
        for (long i = nd.ibeg; i < nd.iend; ++i) {
            const double p[3] = {t.x[i], t.y[i], t.z[i]};
            for (int d = 0; d < 3; ++d)
                lo[d] = std::min(lo[d], p[d]), hi[d] = std::max(hi[d], p[d]);
        }
        for (int d = 0; d < 3; ++d) {
            EXPECT_EQ(nd.lo[d], lo[d]) << "node " << k;
            EXPECT_EQ(nd.hi[d], hi[d]) << "node " << k;
            EXPECT_EQ(nd.c[d], 0.5 * (lo[d] + hi[d]));
        }
        for (long i = nd.ibeg; i < nd.iend; ++i) {
            double dx = t.x[i] - nd.c[0], dy = t.y[i] - nd.c[1], dz = t.z[i] - nd.c[2];
            r2 = std::max(r2, dx * dx + dy * dy + dz * dz);
        }
        EXPECT_EQ(nd.rad, std::sqrt(r2)) << "node " << k; // asked for by the callers below
        // rad <= r (the half diagonal), but for the rounding of c and of the two sums
        const double slack =
            4e-16 * (std::fabs(nd.c[0]) + std::fabs(nd.c[1]) + std::fabs(nd.c[2]) + nd.r);
        EXPECT_LE(nd.rad, nd.r + slack) << "node " << k;
        if (nd.nchild == 0) {
            ++nleaves;
            // a leaf has at most `leaf` points, unless they cannot be separated
            if (nd.iend - nd.ibeg > leaf) {
                bool one_point = true;
                for (int d = 0; d < 3; ++d) one_point = one_point && lo[d] == hi[d];
                EXPECT_TRUE(one_point || split == CT_SPLIT_BISECT) << "node " << k;
            }
            continue;
        }
        EXPECT_GT(nd.iend - nd.ibeg, leaf);
        // the children cover the node's range in order, each one level deeper
        long next = nd.ibeg;
        for (int c = 0; c < nd.nchild; ++c) {
            const ct_node &ch = t.nodes[nd.child[c]];
            EXPECT_GT(nd.child[c], k);
            EXPECT_EQ(ch.parent, k);
            EXPECT_EQ(ch.level, nd.level + 1);
            EXPECT_EQ(ch.ibeg, next);
            EXPECT_GT(ch.iend, ch.ibeg);
            next = ch.iend;
        }
        EXPECT_EQ(next, nd.iend);
        if (split == CT_SPLIT_MEDIAN) {
            // two halves at the median along the longest side
            ASSERT_EQ(nd.nchild, 2);
            int dim = 0;
            for (int d = 1; d < 3; ++d)
                if (hi[d] - lo[d] > hi[dim] - lo[dim]) dim = d;
            const ct_node &a = t.nodes[nd.child[0]], &b = t.nodes[nd.child[1]];
            EXPECT_EQ(a.iend - a.ibeg, (nd.iend - nd.ibeg) / 2);
            EXPECT_LE(a.hi[dim], b.lo[dim]) << "node " << k;
        } else {
            // BISECT: octants about the box's middle: any two children lie on opposite sides of
            // it in some side, and a longest side is split (every child on one side of it)
            EXPECT_GE(nd.nchild, 2);
            EXPECT_LE(nd.nchild, 8);
            double mid[3], lmax = 0;
            for (int d = 0; d < 3; ++d)
                mid[d] = 0.5 * (lo[d] + hi[d]), lmax = std::max(lmax, hi[d] - lo[d]);
            auto below = [&](const ct_node &c, int d) { return c.hi[d] < mid[d]; };
            auto above = [&](const ct_node &c, int d) { return c.lo[d] >= mid[d]; };
            for (int c = 0; c < nd.nchild; ++c)
                for (int e = c + 1; e < nd.nchild; ++e) {
                    const ct_node &A = t.nodes[nd.child[c]], &B = t.nodes[nd.child[e]];
                    bool apart = false;
                    for (int d = 0; d < 3; ++d)
                        apart =
                            apart || (below(A, d) && above(B, d)) || (above(A, d) && below(B, d));
                    EXPECT_TRUE(apart) << "node " << k << " children " << c << ", " << e;
                }
            bool longest_split = false;
            for (int d = 0; d < 3; ++d) {
                if (hi[d] - lo[d] != lmax) continue;
                bool one_sided = true;
                for (int c = 0; c < nd.nchild; ++c)
                    one_sided = one_sided &&
                                (below(t.nodes[nd.child[c]], d) || above(t.nodes[nd.child[c]], d));
                longest_split = longest_split || one_sided;
            }
            EXPECT_TRUE(longest_split) << "node " << k;
        }
    }
    EXPECT_EQ(nleaves, t.nleaves);
    for (int l = 0; l < t.nleaves; ++l) EXPECT_EQ(t.nodes[t.leaves[l]].nchild, 0);
}

bool same_tree(const ct_tree &a, const ct_tree &b) {
    if (a.n != b.n || a.nnodes != b.nnodes || a.depth != b.depth) return false;
    for (int k = 0; k < a.nnodes; ++k) {
        const ct_node &p = a.nodes[k], &q = b.nodes[k];
        if (p.ibeg != q.ibeg || p.iend != q.iend || p.nchild != q.nchild || p.rad != q.rad ||
            std::memcmp(p.lo, q.lo, sizeof p.lo) || std::memcmp(p.hi, q.hi, sizeof p.hi))
            return false;
    }
    return std::equal(a.perm, a.perm + a.n, b.perm);
}

} // namespace

TEST(ClusterTree, BisectAndMedianTrees) {
    std::mt19937_64 rng(test_seed(1));
    for (long n : {1L, 2L, 37L, 5000L, 40000L}) {
        const std::vector<double> xyz = points(n, rng);
        for (int split : {CT_SPLIT_BISECT, CT_SPLIT_MEDIAN})
            for (int leaf : {1, 16, 200}) {
                SCOPED_TRACE("n " + std::to_string(n) + " split " + std::to_string(split) +
                             " leaf " + std::to_string(leaf));
                const int elen = split == CT_SPLIT_BISECT ? 3 : 0;
                ct_tree t1, t2;
                ASSERT_EQ(ct_build(&t1, n, xyz.data(), elen, leaf, split, 1, 1), FMM_OK);
                check_tree(t1, xyz, elen, leaf, split);
                // the same tree with several threads
                ASSERT_EQ(ct_build(&t2, n, xyz.data(), elen, leaf, split, 1, 3), FMM_OK);
                EXPECT_TRUE(same_tree(t1, t2));
                ct_free(&t1);
                ct_free(&t2);
            }
    }
}

TEST(ClusterTree, AllPointsAtOnePosition) {
    const std::vector<double> xyz(3 * 100, 0.25);
    for (int split : {CT_SPLIT_BISECT, CT_SPLIT_MEDIAN}) {
        ct_tree t;
        ASSERT_EQ(ct_build(&t, 100, xyz.data(), 0, 8, split, 1, 2), FMM_OK);
        EXPECT_EQ(t.nnodes, 1); // cannot be split: one leaf
        EXPECT_EQ(t.nleaves, 1);
        EXPECT_EQ(t.nodes[0].rad, 0.0);
        ct_free(&t);
    }
}
