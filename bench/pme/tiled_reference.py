#!/usr/bin/env python3
"""tiled_reference.py - exact reference for the tiled water boxes (spce_100k, spce_1m).

A box made by systems/water/water_tools.py tile (N x N x N copies of a periodic tile, atoms
copy-major: atom i of the big box is atom i mod n_tile of the tile) is exactly periodic with
the tile's period, so under the Ewald conventions (tin-foil, neutral) its potential and field
at atom i equal the tile's at atom i mod n_tile, and U_big = N^3 U_tile. The tile is small
enough for the Ewald reference (fmm coulomb --reference), so an FMM run on the tile at a tight
tolerance gives a reference for the big box without an O(N^2) sum.

Usage:
  tiled_reference.py --tile-out TILE.out --tile-stdout TILE.txt --big-out BIG.out --big-stdout BIG.txt
    TILE.out / BIG.out: the --out files (phi Ex Ey Ez per atom) of fmm coulomb on the tile and
    on the big box; *.txt: their stdout. Prints rel_l2_error_phi, rel_rms_error_field (over all
    atoms of the big box) and rel_error_energy of the big run against the tile run.
Only numpy is needed.
"""
import argparse

import numpy as np


def energy(path):
    for line in open(path):
        p = line.split()
        if len(p) == 2 and p[0] == "energy":
            return float(p[1])
    raise SystemExit(f"{path}: no energy line")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tile-out", required=True)
    ap.add_argument("--tile-stdout", required=True)
    ap.add_argument("--big-out", required=True)
    ap.add_argument("--big-stdout", required=True)
    a = ap.parse_args()
    t = np.loadtxt(a.tile_out)
    b = np.loadtxt(a.big_out)
    nt, nb = len(t), len(b)
    ncopy = nb // nt
    k = round(ncopy ** (1 / 3))
    if ncopy * nt != nb or k ** 3 != ncopy:
        raise SystemExit(f"{nb} atoms is not a cube number of copies of {nt}")
    ref = np.tile(t, (ncopy, 1))
    dphi = b[:, 0] - ref[:, 0]
    df = b[:, 1:] - ref[:, 1:]
    et, eb = energy(a.tile_stdout), energy(a.big_stdout)
    print(f"tile_atoms          {nt}")
    print(f"big_atoms           {nb}  ({k}x{k}x{k} copies)")
    print(f"rel_l2_error_phi    {np.linalg.norm(dphi) / np.linalg.norm(ref[:, 0]):.3e}")
    print(f"rel_rms_error_field {np.sqrt((df ** 2).sum() / (ref[:, 1:] ** 2).sum()):.3e}")
    print(f"rel_error_energy    {(eb - ncopy * et) / abs(ncopy * et):.3e}")


if __name__ == "__main__":
    main()
