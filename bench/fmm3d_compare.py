#!/usr/bin/env python3
"""fmm3d_compare.py - benchmark this project's FMM CLI against FMM3D (fmm3dpy) side by side.

For each distribution, size N and tolerance, both codes get the same point set, the same
thread count (OMP_NUM_THREADS and --threads) and the same requested accuracy, and compute
the potential and the field at every particle. Both are then checked against the same exact
reference: a direct sum over all N sources, in numpy, at a random subset of targets.

Conventions: the project computes phi_i = sum_j q_j / r_ij and E = -grad phi. FMM3D's lfmm3d
computes u_i = sum_j q_j / (4 pi r_ij) and grad u, so phi = 4 pi u and E = -4 pi grad u.

Outputs (in --outdir, default bench/results):
    fmm3d_compare.csv   one row per (distribution, N, tolerance, code)
    fmm3d_compare.md    side-by-side table with machine, date, git revision, threads
    fmm3d_compare.png   time vs N (log-log) and error vs time
With --fmm3d-only (no CLI needed) the files are named fmm3d_only.* instead: that mode tests
the FMM3D side and the error computation, and is not a comparison.

Progress goes to stderr. See bench/README.md.
"""
import argparse
import csv
import datetime
import glob
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOUR_PI = 4.0 * math.pi
DISTRIBUTIONS = ("uniform", "plummer", "sphere")  # generated here with numpy


def log(msg):
    print(f"[fmm3d_compare] {msg}", file=sys.stderr, flush=True)


def die(msg, code=2):
    print(f"fmm3d_compare.py: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_list(text, conv, what):
    try:
        vals = [conv(t) for t in text.split(",") if t.strip()]
    except ValueError:
        die(f"cannot parse {what} list {text!r}")
    if not vals:
        die(f"empty {what} list")
    return vals


def parse_size(t):
    v = float(t)
    if v < 2 or v != int(v):
        raise ValueError(t)
    return int(v)


def parse_args():
    p = argparse.ArgumentParser(
        description="Benchmark build/bin/fmm against FMM3D (fmm3dpy) on identical point sets.")
    p.add_argument("--fmm", default=os.path.join(REPO, "build", "bin", "fmm"),
                   help="path of the project CLI (default: build/bin/fmm)")
    p.add_argument("--sizes", default="1e4,1e5,1e6",
                   help="comma-separated N values (default 1e4,1e5,1e6; add 1e7 if memory/time allow)")
    p.add_argument("--dists", default="uniform,plummer",
                   help=f"comma-separated distributions (numpy: {', '.join(DISTRIBUTIONS)}; "
                        "with --gen cli anything 'fmm generate' accepts)")
    p.add_argument("--tols", default="1e-3,1e-6,1e-9", help="comma-separated tolerances")
    p.add_argument("--threads", type=int, default=2, help="threads for both codes (default 2)")
    p.add_argument("--seed", type=int, default=1, help="seed of point sets and target subset")
    p.add_argument("--ntargets", type=int, default=1000,
                   help="size of the random target subset for the direct-sum reference (default 1000)")
    p.add_argument("--repeat", type=int, default=0,
                   help="runs per (code, N, tol), best time kept; default 3 for N <= 1e5, else 1")
    p.add_argument("--gen", choices=("numpy", "cli"), default="numpy",
                   help="write point files with numpy here (default) or with 'fmm generate'")
    p.add_argument("--cli-reference-max", type=float, default=1e4,
                   help="also pass --reference to the CLI for N up to this (its own error report "
                        "is recorded next to ours; 0 = never)")
    p.add_argument("--outdir", default=os.path.join(REPO, "bench", "results"))
    p.add_argument("--workdir", default=None,
                   help="where point files, CLI outputs and cached references go "
                        "(default: a temporary directory, removed at the end)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--fmm3d-only", action="store_true",
                   help="run only FMM3D and the reference (testing); writes fmm3d_only.*")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    a = p.parse_args()
    a.sizes = parse_list(a.sizes, parse_size, "size")
    a.dists = parse_list(a.dists, str.strip, "distribution")
    a.tols = parse_list(a.tols, float, "tolerance")
    if a.threads < 1:
        die("--threads must be >= 1")
    if a.ntargets < 1:
        die("--ntargets must be >= 1")
    if a.gen == "numpy":
        bad = [d for d in a.dists if d not in DISTRIBUTIONS]
        if bad:
            die(f"distribution(s) {bad} need --gen cli (numpy generates {', '.join(DISTRIBUTIONS)})")
    return a


# ----------------------------------------------------------------------------------------
# Environment facts for the report
# ----------------------------------------------------------------------------------------

def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def loadavg1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def fmm3d_has_openmp(fmm3dpy):
    """True if the installed fmm3dpy extension is linked with OpenMP (the PyPI wheel is not)."""
    d = os.path.dirname(fmm3dpy.__file__)
    for so in glob.glob(os.path.join(d, "lfmm3d_fortran*")):
        try:
            with open(so, "rb") as f:
                data = f.read()
        except OSError:
            continue
        return b"GOMP_" in data or b"omp_get_num_threads" in data
    return False


# ----------------------------------------------------------------------------------------
# Point sets (same distributions as systems/pointsets.c; numpy's PRNG, so not bit-identical)
# ----------------------------------------------------------------------------------------

def neutral_charges(np, rng, n):
    q = rng.uniform(-1.0, 1.0, n)
    for _ in range(2):
        q -= q.mean()
    return q


def unit_vectors(np, rng, n):
    z = 2.0 * rng.random(n) - 1.0
    ph = 2.0 * math.pi * rng.random(n)
    s = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    return np.stack([s * np.cos(ph), s * np.sin(ph), z], axis=1)


def generate_numpy(np, dist, n, seed):
    rng = np.random.default_rng([seed, DISTRIBUTIONS.index(dist), n])
    if dist == "uniform":
        xyz = rng.random((n, 3))
    elif dist == "plummer":  # scale radius 1, radii beyond 100 redrawn
        r = np.empty(n)
        todo = np.arange(n)
        while todo.size:
            u = rng.random(todo.size)
            with np.errstate(divide="ignore", invalid="ignore"):
                rr = 1.0 / np.sqrt(u ** (-2.0 / 3.0) - 1.0)
            ok = np.isfinite(rr) & (rr <= 100.0)
            r[todo[ok]] = rr[ok]
            todo = todo[~ok]
        xyz = r[:, None] * unit_vectors(np, rng, n)
    elif dist == "sphere":
        xyz = unit_vectors(np, rng, n)
    else:
        raise ValueError(dist)
    return np.ascontiguousarray(xyz), neutral_charges(np, rng, n)


def write_xyzq(np, path, xyz, q):
    a = np.empty((len(q), 4))
    a[:, :3] = xyz
    a[:, 3] = q
    with open(path, "w") as f:
        f.write(f"# {len(q)} particles: x y z q\n")
        np.savetxt(f, a, fmt="%.17g")


def read_table(np, path, ncols):
    """Reads a whitespace table, '#' comments allowed. Fast path for plain numeric files."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        if b"#" not in head:
            v = np.fromfile(path, sep=" ")
            if v.size % ncols == 0 and v.size > 0:
                return v.reshape(-1, ncols)
    except ValueError:
        pass
    return np.loadtxt(path, comments="#", ndmin=2)


def point_set(np, args, dist, n, workdir):
    path = os.path.join(workdir, f"{dist}_n{n}_s{args.seed}_{args.gen}.xyzq")
    if args.gen == "numpy":
        xyz, q = generate_numpy(np, dist, n, args.seed)
        if not os.path.exists(path) and not args.fmm3d_only:
            t = time.perf_counter()
            write_xyzq(np, path + ".tmp", xyz, q)
            os.replace(path + ".tmp", path)
            log(f"  wrote {path} ({time.perf_counter() - t:.1f} s)")
        return xyz, q, path
    if not os.path.exists(path):
        cmd = [args.fmm, "generate", dist, "--n", str(n), "--seed", str(args.seed), "--out", path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            die(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    a = read_table(np, path, 4)
    return np.ascontiguousarray(a[:, :3]), np.ascontiguousarray(a[:, 3]), path


# ----------------------------------------------------------------------------------------
# Reference: exact direct sum at a subset of targets
# ----------------------------------------------------------------------------------------

def direct_subset(np, xyz, q, idx, pairs_per_chunk=4_000_000):
    """phi_i = sum_{j != i} q_j / r_ij and E_i = sum_{j != i} q_j (x_i - x_j) / r_ij^3 for
    i in idx, summed over all N sources in chunks (a zero distance is the self term and is
    skipped)."""
    t = xyz[idx]
    m = len(idx)
    n = len(q)
    phi = np.zeros(m)
    E = np.zeros((m, 3))
    chunk = max(1, pairs_per_chunk // m)
    tx, ty, tz = t[:, 0:1], t[:, 1:2], t[:, 2:3]
    for s in range(0, n, chunk):
        src = xyz[s:s + chunk]
        qs = q[s:s + chunk]
        dx = tx - src[:, 0]
        dy = ty - src[:, 1]
        dz = tz - src[:, 2]
        r2 = dx * dx + dy * dy + dz * dz
        self_pair = r2 == 0.0
        r2[self_pair] = 1.0
        inv = 1.0 / np.sqrt(r2)
        inv[self_pair] = 0.0
        phi += inv @ qs
        w = inv * inv * inv * qs
        E[:, 0] += np.einsum("ij,ij->i", w, dx)
        E[:, 1] += np.einsum("ij,ij->i", w, dy)
        E[:, 2] += np.einsum("ij,ij->i", w, dz)
    return phi, E


def reference(np, args, dist, n, xyz, q, workdir):
    cache = os.path.join(workdir, f"ref_{dist}_n{n}_s{args.seed}_{args.gen}_m{args.ntargets}.npz")
    if os.path.exists(cache):
        d = np.load(cache)
        return d["idx"], d["phi"], d["E"]
    rng = np.random.default_rng([args.seed, 7919, n])
    idx = np.sort(rng.choice(n, size=min(args.ntargets, n), replace=False))
    t = time.perf_counter()
    phi, E = direct_subset(np, xyz, q, idx)
    log(f"  direct-sum reference at {len(idx)} targets x {n} sources: {time.perf_counter() - t:.1f} s")
    np.savez(cache, idx=idx, phi=phi, E=E)
    return idx, phi, E


def errors(np, phi, E, phi_ref, E_ref):
    e_phi = float(np.linalg.norm(phi - phi_ref) / np.linalg.norm(phi_ref))
    e_E = float(math.sqrt(np.sum((E - E_ref) ** 2) / np.sum(E_ref ** 2)))
    return e_phi, e_E


# ----------------------------------------------------------------------------------------
# The two codes
# ----------------------------------------------------------------------------------------

def run_fmm3d(np, fmm3dpy, xyz, q, tol, reps):
    src = xyz.T  # (3, n) view, Fortran-contiguous: no copy in f2py
    best = None
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fmm3dpy.lfmm3d(eps=tol, sources=src, charges=q, pg=2)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    ier = int(getattr(out, "ier", 0) or 0)
    if ier != 0:
        raise RuntimeError(f"lfmm3d returned ier={ier}")
    phi = FOUR_PI * np.asarray(out.pot)
    E = -FOUR_PI * np.asarray(out.grad).T
    return best, phi, E


def parse_cli_stdout(text):
    vals = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                vals[parts[0]] = float(parts[1])
            except ValueError:
                vals[parts[0]] = parts[1]
    return vals


def run_ours(np, args, path, n, tol, reps, workdir):
    outpath = os.path.join(workdir, "ours_out.txt")
    cmd = [args.fmm, "coulomb", "--in", path, "--tolerance", f"{tol:g}",
           "--threads", str(args.threads), "--out", outpath]
    if args.cli_reference_max > 0 and n <= args.cli_reference_max:
        cmd.append("--reference")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    best, best_wall, vals = None, None, None
    for _ in range(reps):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: "
                               f"{(r.stderr or r.stdout).strip()[-500:]}")
        v = parse_cli_stdout(r.stdout)
        if not isinstance(v.get("time_s"), float):
            raise RuntimeError(f"no 'time_s <seconds>' line in CLI output: {r.stdout.strip()[-300:]}")
        if best is None or v["time_s"] < best:
            best, best_wall, vals = v["time_s"], wall, v
    a = read_table(np, outpath, 4)
    if a.shape != (n, 4):
        raise RuntimeError(f"CLI output {outpath} has shape {a.shape}, expected ({n}, 4)")
    os.remove(outpath)
    return best, best_wall, vals, a[:, 0].copy(), a[:, 1:4].copy()


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------

FIELDS = ["dist", "n", "seed", "tol", "threads", "code", "status", "time_s", "wall_s",
          "points_per_s", "rel_l2_phi", "rel_rms_field", "energy", "order", "depth",
          "throughput_ratio_ours_over_fmm3d", "cli_rel_l2_error_phi", "cli_rel_rms_error_field",
          "ntargets", "load1_before"]


def fmt(v, spec):
    if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return format(v, spec)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def write_md(path, rows, meta, fmm3d_only):
    L = []
    title = "FMM3D alone (test run, no comparison)" if fmm3d_only else "This project vs FMM3D"
    L.append(f"# {title}\n")
    for k, v in meta.items():
        L.append(f"- {k}: {v}")
    L.append("")
    L.append("Errors are against an exact direct sum (numpy) at the same random subset of "
             f"{meta['targets per point set']} targets for both codes: relative L2 error of the "
             "potential and relative RMS error of the field. Time: ours = the CLI's `time_s` "
             "(solver only, no file I/O); FMM3D = `lfmm3d(pg=2)` call measured with "
             "`time.perf_counter`. Ratio = our throughput / FMM3D's (> 1: ours is faster).\n")
    groups = {}
    for r in rows:
        groups.setdefault((r["dist"], r["n"], r["tol"]), {})[r["code"]] = r
    if fmm3d_only:
        L.append("| dist | N | tol | FMM3D time (s) | FMM3D Mpts/s | err phi | err E |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
    else:
        L.append("| dist | N | tol | ours time (s) | FMM3D time (s) | ours Mpts/s | FMM3D Mpts/s "
                 "| ratio | ours err phi | FMM3D err phi | ours err E | FMM3D err E | ours p / depth |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in sorted(groups, key=lambda k: (k[0], k[1], -k[2])):
        g = groups[k]
        f3 = g.get("fmm3d", {})
        mp = lambda r: r.get("points_per_s") / 1e6 if isinstance(r.get("points_per_s"), float) else None
        if fmm3d_only:
            L.append(f"| {k[0]} | {k[1]:.0e} | {k[2]:.0e} | {fmt(f3.get('time_s'), '.3f')} | "
                     f"{fmt(mp(f3), '.3f')} | {fmt(f3.get('rel_l2_phi'), '.2e')} | "
                     f"{fmt(f3.get('rel_rms_field'), '.2e')} |")
            continue
        o = g.get("ours", {})
        pd = "—"
        if isinstance(o.get("order"), float):
            pd = f"{int(o['order'])} / {int(o['depth'])}" if isinstance(o.get("depth"), float) \
                else f"{int(o['order'])}"
        status = "" if o.get("status") == "ok" else \
            " (" + str(o.get("status", "not run")).replace("|", "/").replace("\n", " ")[:80] + ")"
        L.append(f"| {k[0]} | {k[1]:.0e} | {k[2]:.0e} | {fmt(o.get('time_s'), '.3f')}{status} | "
                 f"{fmt(f3.get('time_s'), '.3f')} | {fmt(mp(o), '.3f')} | {fmt(mp(f3), '.3f')} | "
                 f"{fmt(o.get('throughput_ratio_ours_over_fmm3d'), '.2f')} | "
                 f"{fmt(o.get('rel_l2_phi'), '.2e')} | {fmt(f3.get('rel_l2_phi'), '.2e')} | "
                 f"{fmt(o.get('rel_rms_field'), '.2e')} | {fmt(f3.get('rel_rms_field'), '.2e')} | {pd} |")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_png(path, rows, meta, fmm3d_only):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = ["-", "--", ":", "-."]
    markers = {"uniform": "o", "plummer": "^", "sphere": "s", "water": "D"}
    colors = {"ours": "tab:blue", "fmm3d": "tab:red"}
    labels = {"ours": "this project", "fmm3d": "FMM3D"}
    tols = sorted({r["tol"] for r in rows}, reverse=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    for code in ("ours", "fmm3d"):
        for dist in sorted({r["dist"] for r in rows}):
            for ti, tol in enumerate(tols):
                rs = sorted((r for r in rows if r["code"] == code and r["dist"] == dist
                             and r["tol"] == tol and r["status"] == "ok"), key=lambda r: r["n"])
                if not rs:
                    continue
                lab = f"{labels[code]}, {dist}, tol {tol:.0e}"
                kw = dict(color=colors[code], linestyle=styles[ti % len(styles)],
                          marker=markers.get(dist, "x"), label=lab)
                ax1.plot([r["n"] for r in rs], [r["time_s"] for r in rs], **kw)
                ax2.plot([r["time_s"] for r in rs], [r["rel_l2_phi"] for r in rs], **kw)
                for r in rs:
                    ax2.annotate(f"{r['n']:.0e}", (r["time_s"], r["rel_l2_phi"]), fontsize=6,
                                 xytext=(3, 2), textcoords="offset points", color=colors[code])
    ax1.set_xscale("log"); ax1.set_yscale("log")
    ax1.set_xlabel("N particles"); ax1.set_ylabel("time (s), potential + field")
    ax1.set_title(f"Time vs N ({meta['threads']} threads)")
    ax1.grid(True, which="both", alpha=0.3)
    ax2.set_xscale("log"); ax2.set_yscale("log")
    ax2.set_xlabel("time (s)"); ax2.set_ylabel("relative L2 error of potential")
    ax2.set_title("Error vs time (labels: N)")
    ax2.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, loc="upper left")
    title = "FMM3D alone (test run)" if fmm3d_only else "This project vs FMM3D"
    fig.suptitle(f"{title} — {meta['machine']}, git {meta['git']}, {meta['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------------------

def main():
    args = parse_args()
    # Set before numpy / fmm3dpy load an OpenMP runtime, which reads it once.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    if not args.fmm3d_only or args.gen == "cli":
        if not (os.path.isfile(args.fmm) and os.access(args.fmm, os.X_OK)):
            die(f"project CLI not found or not executable: {args.fmm}\n"
                "  build it first:  cmake -S . -B build && cmake --build build -j\n"
                "  or pass --fmm PATH, or use --fmm3d-only to test only the FMM3D side")

    try:
        import numpy as np
    except ImportError:
        die("numpy is missing: pip install -r bench/requirements.txt")
    try:
        import fmm3dpy
    except ImportError:
        die("fmm3dpy is missing: pip install -r bench/requirements.txt")

    omp = fmm3d_has_openmp(fmm3dpy)
    if args.threads > 1 and not omp:
        log(f"WARNING: the installed fmm3dpy is built without OpenMP: FMM3D runs on 1 thread, "
            f"ours on {args.threads}. bench/build_fmm3dpy_openmp.sh builds a threaded one.")

    os.makedirs(args.outdir, exist_ok=True)
    base = "fmm3d_only" if args.fmm3d_only else "fmm3d_compare"
    tmp_work = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="fmm3d_compare_") if tmp_work else args.workdir
    os.makedirs(workdir, exist_ok=True)

    meta = {
        "machine": cpu_name(),
        "cores online": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git": git_rev(),
        "threads": args.threads,
        "fmm3dpy": f"{getattr(fmm3dpy, '__version__', '?')} "
                   f"({'OpenMP' if omp else 'no OpenMP: runs on 1 thread'}) "
                   f"from {os.path.dirname(fmm3dpy.__file__)}",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "point sets": f"{args.gen} generator, seed {args.seed}",
        "targets per point set": args.ntargets,
        "repeats": args.repeat or "3 for N <= 1e5, else 1 (best time kept)",
    }
    if not args.fmm3d_only:
        meta["CLI"] = os.path.relpath(args.fmm, REPO) if args.fmm.startswith(REPO) else args.fmm
    log(f"{meta['machine']}, {args.threads} threads, fmm3dpy OpenMP: {omp}, workdir {workdir}")

    rows = []
    failures = 0
    try:
        for dist in args.dists:
            for n in args.sizes:
                log(f"{dist} N={n}: generating points")
                xyz, q, path = point_set(np, args, dist, n, workdir)
                n = len(q)
                idx, phi_ref, E_ref = reference(np, args, dist, n, xyz, q, workdir)
                reps = args.repeat or (3 if n <= 100_000 else 1)
                for tol in args.tols:
                    common = dict(dist=dist, n=n, seed=args.seed, tol=tol, threads=args.threads,
                                  ntargets=len(idx))
                    # FMM3D
                    r3 = dict(common, code="fmm3d", load1_before=loadavg1())
                    try:
                        t3, phi3, E3 = run_fmm3d(np, fmm3dpy, xyz, q, tol, reps)
                        ep, eE = errors(np, phi3[idx], E3[idx], phi_ref, E_ref)
                        r3.update(status="ok", time_s=t3, wall_s=t3, points_per_s=n / t3,
                                  rel_l2_phi=ep, rel_rms_field=eE,
                                  energy=float(0.5 * np.dot(q, phi3)))
                        del phi3, E3
                        log(f"  tol {tol:.0e} FMM3D: {t3:.3f} s, {n / t3 / 1e6:.3f} Mpts/s, "
                            f"err phi {ep:.2e}, err E {eE:.2e}")
                    except Exception as e:  # record and go on with the other runs
                        failures += 1
                        r3.update(status=f"error: {e}")
                        log(f"  tol {tol:.0e} FMM3D FAILED: {e}")
                    rows.append(r3)
                    if args.fmm3d_only:
                        continue
                    # ours
                    ro = dict(common, code="ours", load1_before=loadavg1())
                    try:
                        t, wall, vals, phi, E = run_ours(np, args, path, n, tol, reps, workdir)
                        ep, eE = errors(np, phi[idx], E[idx], phi_ref, E_ref)
                        ro.update(status="ok", time_s=t, wall_s=wall, points_per_s=n / t,
                                  rel_l2_phi=ep, rel_rms_field=eE, energy=vals.get("energy"),
                                  order=vals.get("order"), depth=vals.get("depth"),
                                  cli_rel_l2_error_phi=vals.get("rel_l2_error_phi"),
                                  cli_rel_rms_error_field=vals.get("rel_rms_error_field"))
                        if r3.get("status") == "ok":
                            ro["throughput_ratio_ours_over_fmm3d"] = r3["time_s"] / t
                        log(f"  tol {tol:.0e} ours:  {t:.3f} s, {n / t / 1e6:.3f} Mpts/s, "
                            f"err phi {ep:.2e}, err E {eE:.2e}, order {vals.get('order')}, "
                            f"depth {vals.get('depth')}"
                            + (f", ratio {ro['throughput_ratio_ours_over_fmm3d']:.2f}"
                               if "throughput_ratio_ours_over_fmm3d" in ro else ""))
                        del phi, E
                    except Exception as e:
                        failures += 1
                        ro.update(status=f"error: {e}")
                        log(f"  tol {tol:.0e} ours FAILED: {e}")
                    rows.append(ro)
                    # Write after every step so an interrupted sweep keeps what it measured.
                    write_csv(os.path.join(args.outdir, base + ".csv"), rows)
                if args.fmm3d_only:
                    write_csv(os.path.join(args.outdir, base + ".csv"), rows)
                del xyz, q
    finally:
        if tmp_work and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    write_csv(os.path.join(args.outdir, base + ".csv"), rows)
    write_md(os.path.join(args.outdir, base + ".md"), rows, meta, args.fmm3d_only)
    if not args.no_plot:
        write_png(os.path.join(args.outdir, base + ".png"), rows, meta, args.fmm3d_only)
    log(f"wrote {os.path.join(args.outdir, base)}.{{csv,md{'' if args.no_plot else ',png'}}}"
        + (f"; {failures} run(s) failed" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
