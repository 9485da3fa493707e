#!/usr/bin/env python3
"""water_tools.py - .gro helpers for the SPC/E water systems (Python 3 standard library only).

  water_tools.py xyzq    IN.gro OUT.xyzq [--comment TEXT]
        "x y z q" text for `fmm coulomb`: first line "# box L L L" (nm), atoms wrapped into
        [0, L)^3, SPC/E charges from the atom names (OW -0.8476, HW1/HW2 +0.4238).
  water_tools.py tile    IN.gro N OUT.gro
        N x N x N copies of a cubic periodic box (whole molecules, residues renumbered); the
        result is exactly periodic with period L_in, so every copy of an atom has the same
        periodic potential as in IN.gro. Coordinates are written with 5 decimals (GROMACS
        reads any fixed precision), so x + k L_in stays exact; velocities are dropped.
  water_tools.py droplet IN.gro RADIUS BOX OUT.gro
        whole molecules whose oxygen lies within RADIUS nm of the centre of the (periodic,
        cubic) IN.gro box, made whole by minimum image, translated so that the centre of the
        sphere is the centre of a cubic box of edge BOX nm (vacuum around it).
  water_tools.py top     IN.gro OUT.top [--title TEXT]
        SPC/E topology for the molecules of IN.gro (oplsaa.ff/forcefield.itp + spce.itp).

Every .gro written here has the atom order O, H1, H2 per molecule and residue name SOL.
"""
import argparse
import math
import sys

SPCE_Q = {"OW": -0.8476, "HW1": 0.4238, "HW2": 0.4238}
SPCE_Q_TEXT = {"OW": "-0.8476", "HW1": "0.4238", "HW2": "0.4238"}


def read_gro(path):
    """(title, names[], coords[[x,y,z]], box[3]) from a single-frame .gro of any precision."""
    with open(path) as f:
        lines = f.read().splitlines()
    title = lines[0]
    n = int(lines[1].split()[0])
    names, xyz = [], []
    w = None
    for i in range(n):
        s = lines[2 + i]
        names.append(s[10:15].strip())
        rest = s[20:]
        if w is None:  # field width = distance between decimal points (8 for %8.3f)
            p1 = rest.index(".")
            w = rest.index(".", p1 + 1) - p1
        xyz.append([float(rest[0:w]), float(rest[w:2 * w]), float(rest[2 * w:3 * w])])
    box = [float(v) for v in lines[2 + n].split()]
    if len(box) != 3:
        sys.exit(f"{path}: only rectangular boxes are supported (box line: {lines[2 + n]!r})")
    return title, names, xyz, box


def check_water(names, path):
    if len(names) % 3:
        sys.exit(f"{path}: {len(names)} atoms is not whole 3-site waters")
    for i in range(0, len(names), 3):
        if names[i:i + 3] != ["OW", "HW1", "HW2"]:
            sys.exit(f"{path}: atoms {i + 1}..{i + 3} are {names[i:i + 3]}, expected OW HW1 HW2")


def cubic(box, path):
    if not (box[0] == box[1] == box[2]):
        sys.exit(f"{path}: box is not cubic: {box}")
    return box[0]


def write_gro(path, title, names, xyz, box, ndec=3):
    w = ndec + 5
    fmt = f"%{w}.{ndec}f"
    with open(path, "w") as f:
        f.write(title + "\n")
        f.write(f"{len(names):5d}\n")
        for i, (nm, r) in enumerate(zip(names, xyz)):
            resnr = (i // 3 + 1) % 100000
            atnr = (i + 1) % 100000
            f.write(f"{resnr:5d}{'SOL':<5s}{nm:>5s}{atnr:5d}" + "".join(fmt % c for c in r) + "\n")
        f.write("".join(f"{b:10.5f}" for b in box) + "\n")


def cmd_xyzq(a):
    title, names, xyz, box = read_gro(a.gro)
    check_water(names, a.gro)
    L = cubic(box, a.gro)
    with open(a.out, "w") as f:
        f.write(f"# box {L:.5f} {L:.5f} {L:.5f}\n")
        f.write(f"# SPC/E water, {len(names)} atoms, {len(names) // 3} molecules, from {a.gro.split('/')[-1]}"
                f" ({title.strip()})\n")
        if a.comment:
            f.write(f"# {a.comment}\n")
        f.write("# columns x y z (nm, wrapped into [0, L)) q (e); O -0.8476, H +0.4238\n")
        for nm, r in zip(names, xyz):
            c = []
            for v in r:
                v = math.fmod(v, L)
                if v < 0:
                    v += L
                if v >= L:
                    v = 0.0
                c.append(v)
            f.write(f"{c[0]:.5f} {c[1]:.5f} {c[2]:.5f} {SPCE_Q_TEXT[nm]}\n")


def cmd_tile(a):
    title, names, xyz, box = read_gro(a.gro)
    check_water(names, a.gro)
    L = cubic(box, a.gro)
    n = a.n
    out_names, out_xyz = [], []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                s = (i * L, j * L, k * L)
                out_names.extend(names)
                out_xyz.extend([[r[0] + s[0], r[1] + s[1], r[2] + s[2]] for r in xyz])
    T = round(n * L, 5)
    write_gro(a.out, f"{n}x{n}x{n} copies of {a.gro.split('/')[-1]} ({title.strip()})",
              out_names, out_xyz, [T, T, T], ndec=5)


def cmd_droplet(a):
    title, names, xyz, box = read_gro(a.gro)
    check_water(names, a.gro)
    L = cubic(box, a.gro)
    c = [L / 2] * 3
    B = a.box
    keep_names, keep_xyz = [], []
    for m in range(0, len(names), 3):
        o = xyz[m]
        # oxygen relative to the centre, minimum image
        d = [o[k] - c[k] - L * round((o[k] - c[k]) / L) for k in range(3)]
        if d[0] ** 2 + d[1] ** 2 + d[2] ** 2 > a.radius ** 2:
            continue
        for t in range(3):
            r = xyz[m + t]
            # each atom relative to its oxygen, minimum image: whole molecule
            e = [r[k] - o[k] - L * round((r[k] - o[k]) / L) for k in range(3)]
            keep_names.append(names[m + t])
            keep_xyz.append([B / 2 + d[k] + e[k] for k in range(3)])
    for r in keep_xyz:
        if min(r) <= 0 or max(r) >= B:
            sys.exit("droplet does not fit in the box")
    write_gro(a.out, f"SPC/E droplet R={a.radius} nm from {a.gro.split('/')[-1]} in a {B} nm box",
              keep_names, keep_xyz, [B, B, B], ndec=3)
    print(f"droplet: {len(keep_names) // 3} molecules, {len(keep_names)} atoms", file=sys.stderr)


def cmd_top(a):
    title, names, xyz, box = read_gro(a.gro)
    check_water(names, a.gro)
    nmol = len(names) // 3
    t = a.title or title.strip()
    with open(a.out, "w") as f:
        f.write(f"; SPC/E water, {nmol} molecules: {t}\n")
        f.write("; generated by systems/water/water_tools.py. SPC/E charges: OW -0.8476, HW +0.4238.\n")
        f.write('#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spce.itp"\n\n')
        f.write(f"[ system ]\n{t}\n\n[ molecules ]\n; name  number\nSOL     {nmol}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("xyzq")
    p.add_argument("gro")
    p.add_argument("out")
    p.add_argument("--comment")
    p.set_defaults(f=cmd_xyzq)
    p = sub.add_parser("tile")
    p.add_argument("gro")
    p.add_argument("n", type=int)
    p.add_argument("out")
    p.set_defaults(f=cmd_tile)
    p = sub.add_parser("droplet")
    p.add_argument("gro")
    p.add_argument("radius", type=float)
    p.add_argument("box", type=float)
    p.add_argument("out")
    p.set_defaults(f=cmd_droplet)
    p = sub.add_parser("top")
    p.add_argument("gro")
    p.add_argument("out")
    p.add_argument("--title")
    p.set_defaults(f=cmd_top)
    a = ap.parse_args()
    a.f(a)


if __name__ == "__main__":
    main()
