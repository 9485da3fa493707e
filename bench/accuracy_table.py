#!/usr/bin/env python3
"""Builds fmm/accuracy.c's error tables from the accuracy sweeps.

Usage: bench/accuracy_table.py [CSV ...]
    (default: bench/results/accuracy_sweep.csv bench/results/accuracy_sweep_high.csv)

For each boundary (open, periodic) and order p = 1..PMAX: the largest relative L2 potential
error over the swept point sets at that order. Orders that were not swept (the high sweep
takes every fourth order) get the geometric interpolation of their swept neighbours. Then
the table is made monotone from above: each entry is the largest error at that order or any
higher one, so that a higher order never promises more than was measured. Prints the two C
arrays for fmm/accuracy.c.
"""
import collections
import csv
import math
import sys

PMAX = 50  # FMM_ORDER_MAX (include/fmm.h)


def table(rows, boundary):
    worst = collections.defaultdict(float)
    for r in rows:
        if r["boundary"] == boundary:
            p = int(r["order"])
            worst[p] = max(worst[p], float(r["rel_l2_error_phi"]))
    swept = sorted(worst)
    if swept[0] != 1 or swept[-1] != PMAX:
        sys.exit(f"accuracy_table.py: {boundary}: orders 1 and {PMAX} must both be swept")
    err = [0.0] * (PMAX + 1)
    for a, b in zip(swept, swept[1:]):
        for p in range(a, b + 1):
            t = (p - a) / (b - a)
            err[p] = math.exp((1 - t) * math.log(worst[a]) + t * math.log(worst[b]))
    for p in range(PMAX - 1, 0, -1):
        err[p] = max(err[p], err[p + 1])
    return err[1:], swept


def ranges(orders):
    """[1, 2, 3, 26, 30] -> '1-3, 26, 30'"""
    out, start = [], orders[0]
    for a, b in zip(orders, orders[1:] + [None]):
        if b != a + 1:
            out.append(f"{start}-{a}" if a > start else f"{a}")
            start = b
    return ", ".join(out)


def main():
    paths = sys.argv[1:] or ["bench/results/accuracy_sweep.csv", "bench/results/accuracy_sweep_high.csv"]
    rows = [r for path in paths for r in csv.DictReader(open(path))]
    for boundary in ("open", "periodic"):
        err, swept = table(rows, boundary)
        print(f"/* {boundary}: swept orders {ranges(swept)}, the others interpolated */")
        print(f"static const double err_{boundary}[] = {{")
        for i in range(0, PMAX, 6):
            print("    " + ", ".join(f"{e:.2e}" for e in err[i:i + 6]) + ("," if i + 6 < PMAX else "};"))


if __name__ == "__main__":
    main()
