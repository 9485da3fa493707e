#!/usr/bin/env python3
"""Fit times: fmm rbf fit (FGP, CPU) against scipy.interpolate.RBFInterpolator (multiquadric,
dense solve) side by side on this machine, N = 5k, 10k, 20k uniform random centres in the unit
cube, f = exp(x) sin(3y) + z^2, shape c = 0.5 N^(-1/3). scipy's multiquadric is
-sqrt(1 + (eps r)^2) = -(1/c) sqrt(r^2 + c^2) with eps = 1/c and degree 0: the same
interpolant. "Equal residual": ours runs at the tolerance max(scipy's max residual, 1e-12).
usage: python3 bench/rbf/scipy_compare.py build-rbf/bin/fmm [N ...] > bench/results/rbf_scipy.md"""
import os, subprocess, sys, tempfile, time
import numpy as np
from scipy.interpolate import RBFInterpolator

fmm = sys.argv[1]
sizes = [int(a) for a in sys.argv[2:]] or [5000, 10000, 20000]
print(f"# fmm rbf fit vs scipy RBFInterpolator; loadavg {open('/proc/loadavg').read().strip()}")
print(f"# commit {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}, {time.strftime('%Y-%m-%d')}")
print("| N | c | scipy time (s) | scipy max residual | fmm time (s) | fmm iterations | fmm max residual | speed-up |")
print("|---|---|---|---|---|---|---|---|")
rng = np.random.default_rng(1)
for n in sizes:
    x = rng.random((n, 3))
    f = np.exp(x[:, 0]) * np.sin(3 * x[:, 1]) + x[:, 2] ** 2
    c = 0.5 * n ** (-1 / 3)
    t0 = time.perf_counter()
    it = RBFInterpolator(x, f, kernel="multiquadric", epsilon=1 / c, degree=0)
    ts = time.perf_counter() - t0
    rs = np.max(np.abs(it(x) - f)) / np.max(np.abs(f))
    tol = max(rs, 1e-12)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "c.txt")
        np.savetxt(p, np.column_stack([x, f]), fmt="%.17g")
        out = subprocess.run([fmm, "rbf", "fit", "--centers", p, "--shape", repr(c), "--tolerance", repr(tol),
                              "--out", os.path.join(d, "m.txt")], capture_output=True, text=True, check=True).stdout
    kv = dict(l.split(None, 1) for l in out.strip().splitlines())
    tf = float(kv["time_s"])
    print(f"| {n} | {c:.4g} | {ts:.2f} | {rs:.2e} | {tf:.2f} | {kv['iterations']} | {float(kv['max_residual']):.2e} | {ts / tf:.1f} |")
    sys.stdout.flush()
