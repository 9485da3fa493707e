#!/usr/bin/env python3
"""bench/m2l_plot.py CSV PNG: plot an m2l-bench CSV (build/bin/m2l-bench --csv FILE).

Fraction of the compute-bound microkernel (dense-equivalent FLOP/s of each M2L variant over
the FP64 FMA-chain rate) against the order p, one line per variant and depth; a second panel
shows the M2L translations per second. Rows whose status is not "ok" are left out.
"""
import csv
import sys


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = "m2l-bench"
    rows = []
    with open(argv[1], newline="") as f:
        lines = []
        for line in f:
            if line.startswith("#"):
                title = line[1:].strip()
            else:
                lines.append(line)
    rows = list(csv.DictReader(lines))
    fma = next((float(r["gflops_dense"]) for r in rows if r["variant"] == "fma"), None)
    membw = next((float(r["gflops_dense"]) for r in rows if r["variant"] == "membw"), None)
    data = {}
    for r in rows:
        if r["variant"] in ("fma", "membw") or r["status"] != "ok":
            continue
        key = (r["variant"], int(r["depth"]))
        data.setdefault(key, []).append((int(r["p"]), float(r["frac_compute"]), float(r["translations_per_s"])))
    if not data:
        print("m2l_plot: no ok rows in", argv[1], file=sys.stderr)
        return 1
    order = ["symmetric", "tensor", "tiled", "naive", "dynamic", "symfloat", "halo"]
    variants = sorted({k[0] for k in data}, key=lambda v: order.index(v) if v in order else 9)
    depths = sorted({k[1] for k in data})
    colors = dict(zip(order, ["C3", "C1", "C0", "C2", "C4", "C5", "C6"]))
    styles = ["-", "--", ":", "-."]
    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    for v in variants:
        for i, d in enumerate(depths):
            pts = sorted(data.get((v, d), []))
            if not pts:
                continue
            p = [x[0] for x in pts]
            ax[0].plot(p, [x[1] for x in pts], styles[i % 4], marker="o", ms=3, color=colors.get(v, "k"),
                       label=f"{v} D={d}")
            ax[1].semilogy(p, [x[2] for x in pts], styles[i % 4], marker="o", ms=3, color=colors.get(v, "k"),
                           label=f"{v} D={d}")
    ax[0].axhline(1.0, color="gray", lw=0.8)
    ax[0].axhline(0.5, color="gray", lw=0.8, ls="--")
    ax[0].set_yscale("log")
    ax[0].set_xlabel("order p")
    ax[0].set_ylabel("dense-equivalent FLOP/s / FP64 FMA microkernel")
    sub = []
    if fma:
        sub.append(f"FMA microkernel {fma / 1e3:.1f} TFLOP/s")
    if membw:
        sub.append(f"copy {membw:.0f} GB/s")
    ax[0].set_title("fraction of the compute-bound microkernel" + ("\n(" + ", ".join(sub) + ")" if sub else ""))
    ax[1].set_xlabel("order p")
    ax[1].set_ylabel("M2L translations / s")
    ax[1].set_title("throughput")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
    ax[1].legend(fontsize=7, ncol=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
