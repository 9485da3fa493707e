#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_fmm_plan (corpus/fmm_plan/): a few inputs in the byte layout
that fuzz_fmm_plan.c's parse() reads, each a case the fuzzer should start from. Deterministic:
run it again to get the same files."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fmm_plan")

# flags (byte 0)
PERIODIC, VACUUM, BOX, EXCL, VIRIAL, ORDER, DEPTH = 1, 2, 4, 8, 16, 64, 128


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

if __name__ == "__main__":
    main()
