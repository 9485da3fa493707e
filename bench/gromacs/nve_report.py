#!/usr/bin/env python3
"""nve_report.py - table and plot of NVE runs made by bench/gromacs/nve.sh.

Usage: nve_report.py --md OUT.md --png OUT.png --title TITLE RUNDIR [RUNDIR...]

Each RUNDIR holds result.txt (key value lines) and etot.xvg (time, total energy). The table
lists solver, tolerance, atoms, length, ns/day, the total-energy drift (kJ/mol/ns/atom, the
least-squares slope reported by gmx energy) and the RMS fluctuation; the plot shows the total
energy minus its first value against time, one line per run.
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_result(d):
    r = {}
    for line in open(os.path.join(d, "result.txt")):
        k, _, v = line.rstrip("\n").partition(" ")
        r[k] = v
    return r


def read_xvg(path):
    rows = [list(map(float, l.split()[:2])) for l in open(path) if l.strip() and l[0] not in "#@"]
    return np.array(rows)


def label(r):
    if r["kind"] == "pme":
        s = "PME"
    else:
        s = "FMM tol %s" % r.get("fmm_tolerance", "?")
    if "extra_mdp" in r:
        s += " (%s)" % r["extra_mdp"]
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--md", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--title", default="NVE total energy")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    results = [(d, read_result(d)) for d in a.runs]
    with open(a.md, "w") as f:
        f.write("| run | atoms | ps | ns/day | drift (kJ/mol/ns/atom) | E_tot RMSD (kJ/mol) | load avg (before; after) | date | commit |\n")
        f.write("|---|---:|---:|---:|---:|---:|---|---|---|\n")
        for d, r in results:
            f.write("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                label(r), r["atoms"], r["ps"], r["ns_per_day"], r["drift_kj_mol_ns_atom"], r["etot_rmsd"],
                r["loadavg_before"].replace(" after ", "; "), r["date"].split()[0], r["commit"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for d, r in results:
        xy = read_xvg(os.path.join(d, "etot.xvg"))
        ax.plot(xy[:, 0] - xy[0, 0], xy[:, 1] - xy[0, 1],
                label="%s: %s kJ/mol/ns/atom" % (label(r), r["drift_kj_mol_ns_atom"]), lw=1)
    ax.set_xlabel("time (ps)")
    ax.set_ylabel("E_total - E_total(0) (kJ/mol)")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)


if __name__ == "__main__":
    main()
