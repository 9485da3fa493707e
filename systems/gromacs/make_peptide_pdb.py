#!/usr/bin/env python3
"""make_peptide_pdb.py - heavy atoms of a small peptide from ideal internal coordinates.

Usage: make_peptide_pdb.py [SEQUENCE] > peptide.pdb      (default GKADSAKEAG)

Builds an extended L-peptide (phi -120, psi 130, omega 180; side-chain torsions 180) with
standard bond lengths and angles by NeRF (natural extension reference frame), heavy atoms only
(pdb2gmx -ignh adds the hydrogens, steepest descent fixes the rest), and the C-terminal OXT.
Residues: G A S K D E. Standard library only; deterministic.
"""
import math
import sys


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def norm(a):
    n = math.sqrt(sum(x * x for x in a))
    return [x / n for x in a]


def place(a, b, c, bond, angle, torsion):
    """Point d with |cd| = bond, angle(b, c, d) = angle, dihedral(a, b, c, d) = torsion (deg)."""
    ang, tor = math.radians(angle), math.radians(torsion)
    bc = norm(sub(c, b))
    n = norm(cross(sub(b, a), bc))
    m = cross(n, bc)
    d2 = [-bond * math.cos(ang), bond * math.sin(ang) * math.cos(tor), bond * math.sin(ang) * math.sin(tor)]
    return [c[i] + d2[0] * bc[i] + d2[1] * m[i] + d2[2] * n[i] for i in range(3)]


def dihedral(a, b, c, d):
    b0, b1, b2 = sub(a, b), sub(c, b), sub(d, c)
    b1n = norm(b1)
    v = [b0[i] - sum(b0[k] * b1n[k] for k in range(3)) * b1n[i] for i in range(3)]
    w = [b2[i] - sum(b2[k] * b1n[k] for k in range(3)) * b1n[i] for i in range(3)]
    x = sum(v[i] * w[i] for i in range(3))
    y = sum(cross(b1n, v)[i] * w[i] for i in range(3))
    return math.degrees(math.atan2(y, x))


RESNAME = {"G": "GLY", "A": "ALA", "S": "SER", "K": "LYS", "D": "ASP", "E": "GLU"}

# side chains: (name, element, (ref atoms a, b, c), bond, angle, torsion)
SIDE = {
    "G": [],
    "A": [],
    "S": [("OG", "O", ("N", "CA", "CB"), 1.417, 110.8, 180.0)],
    "K": [("CG", "C", ("N", "CA", "CB"), 1.52, 113.8, 180.0),
          ("CD", "C", ("CA", "CB", "CG"), 1.52, 111.5, 180.0),
          ("CE", "C", ("CB", "CG", "CD"), 1.52, 111.5, 180.0),
          ("NZ", "N", ("CG", "CD", "CE"), 1.49, 111.7, 180.0)],
    "D": [("CG", "C", ("N", "CA", "CB"), 1.52, 113.0, 180.0),
          ("OD1", "O", ("CA", "CB", "CG"), 1.25, 119.2, 0.0),
          ("OD2", "O", ("CA", "CB", "CG"), 1.25, 118.2, 180.0)],
    "E": [("CG", "C", ("N", "CA", "CB"), 1.52, 113.8, 180.0),
          ("CD", "C", ("CA", "CB", "CG"), 1.52, 113.3, 180.0),
          ("OE1", "O", ("CB", "CG", "CD"), 1.25, 119.0, 0.0),
          ("OE2", "O", ("CB", "CG", "CD"), 1.25, 118.1, 180.0)],
}


def build(seq, phi=-120.0, psi=130.0, omega=180.0):
    residues = []
    n = [0.0, 0.0, 0.0]
    ca = [1.458, 0.0, 0.0]
    c = place([0.0, 1.0, 0.0], n, ca, 1.525, 111.2, 0.0)
    for k, aa in enumerate(seq):
        if k > 0:
            pn, pca, pc = residues[-1]["N"], residues[-1]["CA"], residues[-1]["C"]
            n = place(pn, pca, pc, 1.329, 116.2, psi)
            ca = place(pca, pc, n, 1.458, 121.7, omega)
            c = place(pc, n, ca, 1.525, 111.2, phi)
        atoms = {"N": n, "CA": ca, "C": c}
        if aa != "G":
            # L-amino acid: dihedral N-C-CA-CB = +122.7 degrees
            atoms["CB"] = place(n, c, ca, 1.53, 110.1, 122.7)
        for name, _el, (ra, rb, rc), bond, ang, tor in SIDE[aa]:
            atoms[name] = place(atoms[ra], atoms[rb], atoms[rc], bond, ang, tor)
        residues.append(atoms)
    # carbonyl O (trans to the next N), and OXT on the last residue
    for k, atoms in enumerate(residues):
        atoms["O"] = place(atoms["N"], atoms["CA"], atoms["C"], 1.231, 120.5, psi + 180.0)
    last = residues[-1]
    last["OXT"] = place(last["N"], last["CA"], last["C"], 1.25, 117.0, psi)
    return residues


def main():
    seq = sys.argv[1] if len(sys.argv) > 1 else "GKADSAKEAG"
    if any(a not in RESNAME for a in seq):
        sys.exit("make_peptide_pdb.py: residues must be among " + "".join(RESNAME))
    residues = build(seq)
    # chirality check (L): the improper N-C-CA-CB must be positive for every residue but Gly
    for atoms in residues:
        if "CB" in atoms:
            assert dihedral(atoms["N"], atoms["C"], atoms["CA"], atoms["CB"]) > 0
    order = ["N", "CA", "C", "O", "CB", "CG", "OG", "CD", "OD1", "OD2", "CE", "OE1", "OE2", "NZ", "OXT"]
    print("TITLE     peptide %s, extended, heavy atoms (systems/gromacs/make_peptide_pdb.py)" % seq)
    print("CRYST1   40.000   40.000   40.000  90.00  90.00  90.00 P 1           1")
    serial = 1
    for k, (aa, atoms) in enumerate(zip(seq, residues)):
        for name in order:
            if name not in atoms:
                continue
            x, y, z = atoms[name]
            el = name[0]
            print("ATOM  %5d %-4s %3s A%4d    %8.3f%8.3f%8.3f  1.00  0.00          %2s"
                  % (serial, " " + name if len(name) < 4 else name, RESNAME[aa], k + 1, x, y, z, el))
            serial += 1
    print("TER")
    print("END")


if __name__ == "__main__":
    main()
