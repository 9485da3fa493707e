#!/usr/bin/env python3
"""compare_energy.py - compare the periodic FMM's Coulomb energy with GROMACS's PME energy.

GROMACS reports, for a neutral system with a tin-foil boundary (epsilon-surface = 0),

    Coulomb (SR) + Coul. recip. = E_Ewald(all pairs, all images) - sum_{excluded (i,j)} q_i q_j / r_ij

in kJ/mol: the excluded pairs (here every intramolecular pair of a water: O-H1, O-H2, H1-H2)
are removed from the Ewald sum by subtracting q_i q_j erf(beta r)/r from the reciprocal part
(the erfc part is never computed for them), and the self term is inside "Coul. recip.".
The FMM's energy U = 1/2 sum_i q_i phi_i (Gaussian units, e^2/nm) counts every pair of every
image, so the comparable number is

    E_fmm = ONE_4PI_EPS0 * (U - sum_{excluded (i,j)} q_i q_j / |r_ij|_minimum image).

This tool reads a .gro (coordinates as GROMACS sees them), assigns charges from the atom
names (SPC/E by default), computes the exclusion sum in double precision, runs the FMM CLI on
exactly the same coordinates (or reads a saved stdout of it), reads the PME terms, and prints
both energies and their relative difference.

Usage:
  compare_energy.py --gro SYSTEM.gro --pme OUTDIR            # OUTDIR of pme_reference.sh
  compare_energy.py --gro SYSTEM.gro --pme-sr X --pme-recip Y [--fmm build/bin/fmm]
                    [--tolerance 1e-9] [--threads 2] [--order P] [--fmm-stdout FILE]
Only numpy is needed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

# GROMACS 2019+ (src/gromacs/math/units.h, CODATA 2018):
# c_one4PiEps0 = 1 / (4 pi c_epsilon0) = 138.93545764438198 kJ mol^-1 nm e^-2.
# The rounded value 138.935458 differs from it by 2.6e-9 relative.
ONE_4PI_EPS0 = 138.93545764438198

SPCE_CHARGES = {"OW": -0.8476, "HW1": 0.4238, "HW2": 0.4238}


def read_gro(path):
    """Return (names, resid_key, xyz[n,3], box[3]) of a single-frame .gro (fixed columns)."""
    with open(path) as f:
        lines = f.read().splitlines()
    n = int(lines[1].split()[0])
    names, res, xyz = [], [], np.empty((n, 3))
    for i in range(n):
        s = lines[2 + i]
        res.append((s[0:5], s[5:10]))
        names.append(s[10:15].strip())
        # coordinates: 3 fields of width w = ndec + 5 (%8.3f by default; wider with -ndec);
        # the distance between the first two decimal points gives w.
        rest = s[20:]
        p1 = rest.index(".")
        w = rest.index(".", p1 + 1) - p1
        xyz[i] = [float(rest[k * w:(k + 1) * w]) for k in range(3)]
    b = [float(v) for v in lines[2 + n].split()]
    if len(b) != 3:
        raise SystemExit(f"{path}: only rectangular boxes (3 numbers) are supported: {b}")
    return names, res, xyz, np.array(b)


def molecules(res):
    """Consecutive atoms with the same (resnr, resname) fields form one molecule."""
    starts = [0]
    for i in range(1, len(res)):
        if res[i] != res[i - 1]:
            starts.append(i)
    starts.append(len(res))
    return [(starts[k], starts[k + 1]) for k in range(len(starts) - 1)]


def exclusion_sum(xyz, q, box, mols):
    """sum over intramolecular pairs of q_i q_j / r_ij (minimum image), e^2/nm.

    Every pair inside a molecule is excluded (true for SETTLE waters and nrexcl >= 2 for
    three-site molecules). Vectorised over molecules of equal size."""
    total = 0.0
    by_size = {}
    for a, b in mols:
        by_size.setdefault(b - a, []).append(a)
    for size, firsts in by_size.items():
        firsts = np.array(firsts)
        for i in range(size):
            for j in range(i + 1, size):
                d = xyz[firsts + j] - xyz[firsts + i]
                d -= box * np.round(d / box)
                r = np.sqrt((d * d).sum(axis=1))
                total += float(np.sum(q[firsts + i] * q[firsts + j] / r))
    return total


def write_xyzq(path, xyz, q, box):
    w = np.mod(xyz, box)
    w = np.where(w >= box, 0.0, w)  # np.mod can round up to L for tiny negative inputs
    with open(path, "w") as f:
        f.write(f"# box {box[0]:.6f} {box[1]:.6f} {box[2]:.6f}\n")
        f.write("# written by bench/pme/compare_energy.py from a .gro (nm, e)\n")
        np.savetxt(f, np.column_stack([w, q]), fmt="%.7f %.7f %.7f %.6g")


def parse_fmm_stdout(text):
    out = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) == 2:
            try:
                out[p[0]] = float(p[1])
            except ValueError:
                pass
    if "energy" not in out:
        raise SystemExit("no 'energy' line in the FMM output:\n" + text)
    return out


def read_pme_dir(d):
    """pme_reference.sh writes OUTDIR/pme_energy.txt with lines 'key value'."""
    vals = {}
    with open(os.path.join(d, "pme_energy.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            k, v = line.split()[:2]
            vals[k] = float(v)
    return vals["coulomb_sr"], vals["coul_recip"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gro", required=True)
    ap.add_argument("--pme", help="OUTDIR of pme_reference.sh (reads pme_energy.txt)")
    ap.add_argument("--pme-sr", type=float, help="Coulomb (SR), kJ/mol")
    ap.add_argument("--pme-recip", type=float, help="Coul. recip., kJ/mol")
    ap.add_argument("--fmm", default="build/bin/fmm", help="FMM CLI (default build/bin/fmm)")
    ap.add_argument("--fmm-stdout", help="read this saved stdout of 'fmm coulomb' instead of running it")
    ap.add_argument("--tolerance", default="1e-9")
    ap.add_argument("--order", help="force the expansion order")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--reference", action="store_true", help="also pass --reference to the FMM (Ewald check)")
    ap.add_argument("--keep-xyzq", help="write the x y z q file used for the FMM here")
    ap.add_argument("--one-4pi-eps0", type=float, default=ONE_4PI_EPS0)
    a = ap.parse_args()

    names, res, xyz, box = read_gro(a.gro)
    try:
        q = np.array([SPCE_CHARGES[nm] for nm in names])
    except KeyError as e:
        raise SystemExit(f"unknown atom name {e} (only SPC/E water OW/HW1/HW2 is supported)")
    if not (box[0] == box[1] == box[2]):
        raise SystemExit(f"box is not cubic: {box}")
    mols = molecules(res)
    qtot = q.sum()
    excl = exclusion_sum(xyz, q, box, mols)

    fmm = None
    if a.fmm_stdout:
        with open(a.fmm_stdout) as f:
            fmm = parse_fmm_stdout(f.read())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = a.keep_xyzq or os.path.join(tmp, "sys.xyzq")
            write_xyzq(path, xyz, q, box)
            cmd = [a.fmm, "coulomb", "--in", path, "--periodic", "--box", repr(float(box[0])),
                   "--tolerance", a.tolerance, "--threads", a.threads]
            if a.order:
                cmd += ["--order", a.order]
            if a.reference:
                cmd += ["--reference"]
            print("# running: " + " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.stderr.write(r.stdout + r.stderr)
                raise SystemExit(f"FMM failed with status {r.returncode}")
            fmm = parse_fmm_stdout(r.stdout)

    if a.pme:
        sr, recip = read_pme_dir(a.pme)
    elif a.pme_sr is not None and a.pme_recip is not None:
        sr, recip = a.pme_sr, a.pme_recip
    else:
        sr = recip = None

    k = a.one_4pi_eps0
    U = fmm["energy"]
    e_fmm = k * (U - excl)
    print(f"gro                     {a.gro}")
    print(f"atoms                   {len(q)}")
    print(f"molecules               {len(mols)}")
    print(f"box_nm                  {box[0]:.6f}")
    print(f"total_charge            {qtot:.3e}")
    print(f"one_4pi_eps0            {k:.14g}")
    for key in ("order", "depth", "time_s", "rel_l2_error_phi", "rel_rms_error_field", "rel_error_energy"):
        if key in fmm:
            print(f"fmm_{key:<19} {fmm[key]:.10g}")
    print(f"fmm_U_e2_per_nm         {U:.15g}")
    print(f"excluded_e2_per_nm      {excl:.15g}")
    print(f"fmm_all_pairs_kJmol     {k * U:.12g}")
    print(f"excluded_kJmol          {k * excl:.12g}")
    print(f"fmm_minus_excl_kJmol    {e_fmm:.12g}")
    if sr is not None:
        e_pme = sr + recip
        print(f"pme_coulomb_sr_kJmol    {sr:.12g}")
        print(f"pme_coul_recip_kJmol    {recip:.12g}")
        print(f"pme_total_kJmol         {e_pme:.12g}")
        print(f"diff_kJmol              {e_fmm - e_pme:.6g}")
        print(f"rel_diff                {(e_fmm - e_pme) / abs(e_pme):.3e}")


if __name__ == "__main__":
    main()
