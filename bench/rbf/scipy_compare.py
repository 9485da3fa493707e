#!/usr/bin/env python3
"""Fit times: fmm rbf fit (FGP, CPU) against scipy.interpolate.RBFInterpolator (multiquadric,
dense solve) side by side on this machine, N uniform random centres in the unit cube,
f = exp(x) sin(3y) + z^2, shape c = 0.5 N^(-1/3). scipy's multiquadric is
-sqrt(1 + (eps r)^2) = -(1/c) sqrt(r^2 + c^2) with eps = 1/c and degree 0: the same
interpolant. "Equal residual": ours runs at the tolerance max(scipy's max residual, 1e-13), 1e-13
being the smallest fmm accepts (scipy's dense solve reaches a few 1e-14). scipy runs once per N
(minutes at 20000), fmm five times (the median is reported, with its setup and fit split, and the
range of the five: this 2-core VM has stretches where a run takes up to 1.7x as long);
the load average is read before each N.
usage: python3 bench/rbf/scipy_compare.py FMM_BINARY [N ...] [--plot PNG] [--csv CSV]
       > bench/results/rbf_scipy.md"""
import os, subprocess, sys, tempfile, time
import numpy as np
from scipy.interpolate import RBFInterpolator

args = sys.argv[1:]
opt = {k: args[args.index(k) + 1] for k in ("--plot", "--csv") if k in args}
for k in opt:
    i = args.index(k)
    del args[i:i + 2]
fmm = args[0]
sizes = [int(a) for a in args[1:]] or [5000, 10000, 20000]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"# fmm rbf fit vs scipy RBFInterpolator; commit {commit}, {time.strftime('%Y-%m-%d %H:%M')}")
print("| N | c | load avg (1 min) | scipy time (s) | scipy max residual | fmm tolerance | fmm time (s), median of 5 (range) "
      "| fmm setup / fit (s) | fmm iterations (single-precision passes) | fmm max residual | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
rows = []
rng = np.random.default_rng(1)
for n in sizes:
    x = rng.random((n, 3))
    f = np.exp(x[:, 0]) * np.sin(3 * x[:, 1]) + x[:, 2] ** 2
    c = 0.5 * n ** (-1 / 3)
    load = float(open("/proc/loadavg").read().split()[0])
    t0 = time.perf_counter()
    it = RBFInterpolator(x, f, kernel="multiquadric", epsilon=1 / c, degree=0)
    ts = time.perf_counter() - t0
    rs = np.max(np.abs(it(x) - f)) / np.max(np.abs(f))
    tol = max(rs, 1e-13)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "c.txt")
        np.savetxt(p, np.column_stack([x, f]), fmt="%.17g")
        for _ in range(5):
            out = subprocess.run([fmm, "rbf", "fit", "--centers", p, "--shape", repr(c), "--tolerance", repr(tol),
                                  "--out", os.path.join(d, "m.txt")], capture_output=True, text=True, check=True).stdout
            runs.append(dict(l.split(None, 1) for l in out.strip().splitlines()))
    runs.sort(key=lambda kv: float(kv["time_s"]))
    kv = runs[2]
    tf = float(kv["time_s"])
    rows.append((n, ts, tf, float(kv["setup_s"]), float(kv["fit_s"])))
    print(f"| {n} | {c:.4g} | {load:.2f} | {ts:.2f} | {rs:.2e} | {tol:.2e} | {tf:.3f} ({float(runs[0]['time_s']):.3f}-{float(runs[-1]['time_s']):.3f}) | {float(kv['setup_s']):.3f} / "
          f"{float(kv['fit_s']):.3f} | {kv['iterations']} ({kv.get('single_passes', '-')}) | {float(kv['max_residual']):.2e} | {ts / tf:.1f} |")
    sys.stdout.flush()

if "--csv" in opt:
    np.savetxt(opt["--csv"], np.array(rows), fmt="%.6g", delimiter=",",
               header="n,scipy_s,fmm_s,fmm_setup_s,fmm_fit_s", comments="")
if "--plot" in opt:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    r = np.array(rows)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.loglog(r[:, 0], r[:, 1], "o-", label="scipy RBFInterpolator (dense solve)")
    ax.loglog(r[:, 0], r[:, 2], "s-", label="fmm rbf fit (FGP, direct CPU mat-vec)")
    ax.loglog(r[:, 0], r[:, 3], "s:", color="C1", alpha=0.6, label="  of which setup (L-sets, local solves)")
    for n, ts, tf, _, _ in rows:
        ax.annotate(f"{ts / tf:.0f}x", (n, tf), textcoords="offset points", xytext=(4, -12), fontsize=9)
    ax.set_xlabel("N (uniform random centres in the unit cube)")
    ax.set_ylabel("fit time (s)")
    ax.set_title(f"multiquadric fit, c = 0.5 N^(-1/3), equal residual; 2 threads\ncommit {commit}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(opt["--plot"], dpi=120)
