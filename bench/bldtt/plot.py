#!/usr/bin/env python3
"""bench/bldtt/plot.py - plots from real runs only.

  python3 bench/bldtt/plot.py cpu    -> bench/results/bldtt_cpu_vs_fmm.png (time vs error, 2 threads)
  python3 bench/bldtt/plot.py gpu DIR -> bench/results/bldtt_gpu_table2.png from DIR/table2.csv
                                        (gpu.sh output) next to the paper's P100 Table 2
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# WVK 2021 Table 2, one P100: N -> (BLDTT time s, error)
PAPER = {1e5: (0.219, 1.58e-8), 1e6: (3.56, 3.67e-8), 1e7: (44.0, 4.12e-8), 1e8: (482.0, 4.17e-8)}


def cpu():
    rows = list(csv.DictReader(open("bench/results/bldtt_cpu_vs_fmm.csv")))
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for solver, mark in (("bldtt", "o-"), ("coulomb", "s--")):
        r = [x for x in rows if x["solver"] == solver]
        for n in sorted({x["n"] for x in r}):
            rr = sorted((float(x["rel_l2_error"]), float(x["time_s"])) for x in r if x["n"] == n)
            label = ("BLDTT" if solver == "bldtt" else "Coulomb FMM (this project)") + f", N={int(n):.0e}"
            ax.plot([a for a, _ in rr], [b for _, b in rr], mark, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("relative L2 error of phi (1000 sampled targets)")
    ax.set_ylabel("time (s), 2 threads")
    ax.set_title("CPU, uniform cube, Coulomb")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig("bench/results/bldtt_cpu_vs_fmm.png", dpi=120)


def gpu(d):
    rows = [x for x in csv.DictReader(open(f"{d}/table2.csv")) if x["method"] == "bldtt"]
    n = [float(x["n"]) for x in rows]
    t = [float(x["execute_s"]) for x in rows]
    tt = [float(x["total_s"]) for x in rows]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    pn = sorted(PAPER)
    ax.plot(pn, [PAPER[k][0] for k in pn], "k^--", label="WVK 2021, one P100 (Table 2)")
    ax.plot(n, tt, "o-", label="this code, setup + first execute")
    ax.plot(n, t, "s-", label="this code, execute (plan reused)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (uniform cube, Coulomb, theta 0.7, n 8)")
    ax.set_ylabel("time (s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig("bench/results/bldtt_gpu_table2.png", dpi=120)


if __name__ == "__main__":
    if sys.argv[1] == "cpu":
        cpu()
    else:
        gpu(sys.argv[2])
