#!/usr/bin/env python3
"""Writes the seed corpora of the plan targets (corpus/fmm_plan/, corpus/bldtt_plan/): a few
inputs in the byte layout that fuzz_fmm_plan.c's and fuzz_bldtt_plan.c's parse() read, each a
case the fuzzer should start from. Deterministic: run it again to get the same files."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fmm_plan")
OUT_BLDTT = os.path.join(HERE, "corpus", "bldtt_plan")

# flags (byte 0)
PERIODIC, VACUUM, BOX, EXCL, VIRIAL, ORDER, DEPTH = 1, 2, 4, 8, 16, 64, 128
# flags2 (byte 10): a periodic cell other than the cube, its shape and variant in the side byte
CELL = 2
BRICK, BRICK_113, FLAT, DODECAHEDRON, OCTAHEDRON, LIMITS, MARGIN, SKEWED_211 = range(8)


def cell(side, shape, variant=0):
    """The side byte of a periodic cell: side index, shape (cell_shape in fuzz_fmm_plan.c) and
    variant of its off-diagonals (1, -1, 1/2 or 0 times)."""
    return side | shape << 3 | variant << 6


def seed(name, points, flags=0, tol=0, order=0, depth=0, leaf=0, scale=0, qscale=0, side=0,
         second=0, flags2=0, pairs=(0,) * 6):
    """Menu indices as in fuzz_fmm_plan.c: tol indexes tol_menu, scale and qscale scale_menu,
    side side_menu; depth is the tree depth + 1 (with DEPTH), leaf the leaf size (0: the
    default); points are (x, y, z, zoom, q, shift) with 16-bit coordinates and q/16."""
    header = bytes([flags, tol, order, depth, leaf, len(points), scale, qscale, side, second,
                    flags2, *pairs])
    body = b"".join(struct.pack("<HHHBbB", *p) for p in points)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(header + body)


# bldtt flags (byte 0) and kernels
BLTC, NO_PHI, GRAD, THREADS2, TARGETS = 1, 4, 8, 16, 32
COULOMB, YUKAWA, REGULARIZED, SINC, MULTIQUADRIC = range(5)


def bldtt_seed(name, sources, targets=(), flags=0, kernel=COULOMB, param=0, theta=2, degree=3,
               leaf=7, scale=0, qscale=0, second=0):
    """Menu indices as in fuzz_bldtt_plan.c: param indexes param_menu, theta theta_menu, leaf is
    the leaf size - 1; points as for seed(), without the shift byte (targets' q unused)."""
    header = bytes([flags | (TARGETS if targets else 0), kernel, param, theta, degree, leaf,
                    len(sources), len(targets), scale, qscale, second])
    body = b"".join(struct.pack("<HHHBb", *p[:5]) for p in list(sources) + list(targets))
    with open(os.path.join(OUT_BLDTT, name), "wb") as f:
        f.write(header + body)


def cloud(rng, n, zooms=(0,)):
    return [(rng.randrange(65536), rng.randrange(65536), rng.randrange(65536),
             rng.choice(zooms), rng.randint(-16, 16), 0b010101) for _ in range(n)]


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(33)
    seed("open_uniform", cloud(rng, 60), tol=5, leaf=4)
    seed("open_default_leaf", cloud(rng, 60), tol=5)
    seed("open_clustered", cloud(rng, 100, (0, 4, 10, 20, 30)), flags=VIRIAL, tol=4, leaf=3,
         second=8)
    seed("open_box_exclusions", cloud(rng, 40), flags=BOX | EXCL | VIRIAL, tol=2, leaf=2, side=2,
         second=7, flags2=0x40, pairs=(1, 2, 3, 4, 5, 6))
    seed("open_uniform_tree", cloud(rng, 80), flags=VIRIAL | ORDER | DEPTH, order=11, depth=4,
         second=2)
    seed("open_scaled", cloud(rng, 30), flags=VIRIAL, tol=4, leaf=1, scale=10, qscale=11,
         second=6)
    seed("periodic", cloud(rng, 60), flags=PERIODIC, leaf=5, second=1)
    seed("periodic_virial", cloud(rng, 40), flags=PERIODIC | VIRIAL | ORDER, order=3, leaf=4,
         side=3, second=5)
    seed("periodic_vacuum", cloud(rng, 20), flags=PERIODIC | VACUUM | ORDER, order=5, leaf=2)
    seed("bad_options", cloud(rng, 10), flags=ORDER, tol=9, order=251)
    # periodic cells other than the cube (their own generator: the seeds above stay as they were)
    crng = random.Random(34)
    seed("cell_brick", cloud(crng, 60), flags=PERIODIC, leaf=5, side=cell(0, BRICK), second=1,
         flags2=CELL)
    seed("cell_brick_113_virial", cloud(crng, 40), flags=PERIODIC | VIRIAL | ORDER, order=3,
         leaf=4, side=cell(3, BRICK_113), second=5, flags2=CELL)
    seed("cell_flat_scaled", cloud(crng, 30), flags=PERIODIC, leaf=3, scale=12, qscale=10,
         side=cell(4, FLAT), second=6, flags2=CELL)
    seed("cell_dodecahedron_exclusions", cloud(crng, 50), flags=PERIODIC | EXCL, leaf=4,
         side=cell(0, DODECAHEDRON), second=8, flags2=CELL | 0x40, pairs=(1, 2, 3, 4, 5, 6))
    seed("cell_octahedron_depth2", cloud(crng, 80), flags=PERIODIC | ORDER | DEPTH, order=6,
         depth=3, side=cell(2, OCTAHEDRON, 1), second=2, flags2=CELL)
    seed("cell_limits_compact_huge", cloud(crng, 40, (0, 3, 8)), flags=PERIODIC, leaf=4,
         side=cell(6, LIMITS), second=0, flags2=CELL)
    seed("cell_margin_half_skew", cloud(crng, 60), flags=PERIODIC | VIRIAL | ORDER, order=4,
         leaf=6, side=cell(1, MARGIN, 2), second=5, flags2=CELL)
    seed("cell_skewed_vacuum", cloud(crng, 30), flags=PERIODIC | VACUUM | ORDER, order=5, leaf=3,
         side=cell(5, SKEWED_211), flags2=CELL)
    seed("cell_as_brick", cloud(crng, 40), flags=PERIODIC, leaf=4, side=cell(0, LIMITS, 3),
         second=7, flags2=CELL)

    os.makedirs(OUT_BLDTT, exist_ok=True)
    bldtt_seed("coulomb", cloud(rng, 120), flags=GRAD | THREADS2)
    bldtt_seed("coulomb_bltc_targets", cloud(rng, 80), cloud(rng, 50), flags=BLTC | GRAD,
               degree=2, second=1)
    bldtt_seed("yukawa_clustered", cloud(rng, 100, (0, 5, 12)), kernel=YUKAWA, param=3, theta=1,
               degree=4, leaf=3)
    bldtt_seed("regularized_grad_only", cloud(rng, 60), flags=NO_PHI, kernel=REGULARIZED,
               param=1, degree=1)
    bldtt_seed("sinc", cloud(rng, 90), flags=GRAD, kernel=SINC, param=5, theta=4, degree=4)
    bldtt_seed("multiquadric_scaled", cloud(rng, 70), flags=GRAD, kernel=MULTIQUADRIC, param=4,
               scale=12, qscale=9, second=3)
    bldtt_seed("bad_theta", cloud(rng, 10), theta=6)

if __name__ == "__main__":
    main()
