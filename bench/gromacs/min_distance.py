#!/usr/bin/env python3
"""min_distance.py - the closest pair of atoms of different residues in a .gro file, under the
periodicity of its cell (rectangular or triclinic), and how many atoms have such a neighbour
closer than a threshold.

Usage: min_distance.py FILE.gro [--below NM]      (default 0.15 nm)

A frame made by changing the box of an equilibrated one (gmx editconf -box/-angles without
re-solvating) keeps the old positions: near the faces of the new cell, molecules then overlap
the images of others. Such a frame has enormous forces (repulsions at a few hundredths of a nm)
that float positions cannot resolve, so it is no test of an electrostatics solver
(bench/gromacs/results/README.md). Molecules are told apart by residue number and name (a .gro wraps
residue numbers at 100000, so larger systems need a check of their own).
"""
import argparse

import numpy as np


def read_gro(path):
    lines = open(path).read().splitlines()
    n = int(lines[1])
    atoms = lines[2 : 2 + n]
    x = np.array([[float(a[20:28]), float(a[28:36]), float(a[36:44])] for a in atoms])
    residue = np.unique([a[0:10] for a in atoms], return_inverse=True)[1]
    b = [float(v) for v in lines[2 + n].split()]
    box = np.diag(b[:3])
    if len(b) == 9:  # v1(y) v1(z) v2(x) v2(z) v3(x) v3(y)
        box[0, 1], box[0, 2], box[1, 0], box[1, 2], box[2, 0], box[2, 1] = b[3:9]
    return x, residue, box


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gro")
    ap.add_argument("--below", type=float, default=0.15)
    a = ap.parse_args()
    x, residue, box = read_gro(a.gro)
    n = len(x)
    nearest = np.full(n, np.inf)
    block = 256
    for shift in (np.array([i, j, k]) @ box for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)):
        own_image = not shift.any()
        for i0 in range(0, n, block):
            d = np.linalg.norm(x[i0 : i0 + block, None, :] - (x[None, :, :] + shift), axis=2)
            if own_image:
                d[residue[i0 : i0 + block, None] == residue[None, :]] = np.inf
            nearest[i0 : i0 + block] = np.minimum(nearest[i0 : i0 + block], d.min(axis=1))
    print("%s: %d atoms, closest pair of different residues %.4f nm, atoms with one closer than %g nm: %d"
          % (a.gro, n, nearest.min(), a.below, int((nearest < a.below).sum())))


if __name__ == "__main__":
    main()
