#!/usr/bin/env python3
"""fmm3d_compare.py - this project's FMM CLI against FMM3D built as its makefile recommends.

FMM3D runs through bench/fmm3d/lfmm3d_driver.c, linked by bench/fmm3d/build.sh against the
library of `make lib FAST_KER=ON OMP=ON` (vectorised near-field kernels, OpenMP, the makefile's
-O3 -march=native -funroll-loops). For each distribution, size N and tolerance both codes read
the same `x y z q` file, run on the same number of threads and compute the potential and the
field at every particle; both are checked against the same exact reference, a direct sum over
all N sources (numpy) at a random subset of targets. Times: the CLI's `time_s` (plan and
evaluation, no file I/O) and the driver's `time_s` (the lfmm3d call alone), best of --repeat.

Conventions: the project computes phi_i = sum_j q_j / r_ij and E = -grad phi; FMM3D computes
u = sum_j q_j / (4 pi r_ij), and the driver writes phi = 4 pi u and E = -4 pi grad u.

Equal accuracy: the two codes reach different errors at the same requested tolerance, so the
report also compares them at equal achieved error: for each run of one code, the other code's
time at that error is interpolated between its two runs whose errors bracket it (linear in
log time against log error; no extrapolation), and the ratio is FMM3D's time / ours (> 1: ours
is faster). It is done for the potential's and for the field's error.

Outputs (in --outdir, default bench/results; names from --name, default fmm3d_fastker):
    NAME.csv   one row per (distribution, N, tolerance, code) with times, errors, CPU use, load
    NAME.md    machine, date, both commits, FMM3D's build flags, the side-by-side table and the
               equal-accuracy table
    NAME.png   time against achieved error (potential, field), both codes, per distribution
Progress goes to stderr. See bench/README.md.
"""
import argparse
import csv
import datetime
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DISTRIBUTIONS = ("uniform", "plummer", "sphere")  # generated here with numpy
CODES = ("ours", "fmm3d")


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
        description="Benchmark build/bin/fmm against FMM3D (FAST_KER=ON OMP=ON) on identical "
                    "point sets.")
    p.add_argument("--fmm", default=os.path.join(REPO, "build", "bin", "fmm"),
                   help="path of the project CLI (default: build/bin/fmm)")
    p.add_argument("--fmm3d", default=os.path.join(REPO, "build-fmm3d", "bin", "fmm3d_lfmm3d"),
                   help="FMM3D driver built by bench/fmm3d/build.sh (default: "
                        "build-fmm3d/bin/fmm3d_lfmm3d); its build_info.txt is read from the "
                        "folder above bin/")
    p.add_argument("--sizes", default="1e5,1e6",
                   help="comma-separated N values (default 1e5,1e6; add 1e7 if memory/time allow)")
    p.add_argument("--dists", default="uniform,plummer",
                   help=f"comma-separated distributions (numpy: {', '.join(DISTRIBUTIONS)}; "
                        "with --gen cli anything 'fmm generate' accepts)")
    p.add_argument("--tols", default="1e-3,1e-6,1e-9,1e-12", help="comma-separated tolerances")
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
    p.add_argument("--name", default="fmm3d_fastker",
                   help="base name of the result files (default fmm3d_fastker)")
    p.add_argument("--workdir", default=None,
                   help="where point files, outputs and cached references go "
                        "(default: a temporary directory, removed at the end)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--fmm3d-only", action="store_true",
                   help="run only FMM3D and the reference (testing; no CLI needed unless --gen cli)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    a = p.parse_args()
    a.sizes = parse_list(a.sizes, parse_size, "size")
    a.dists = parse_list(a.dists, str.strip, "distribution")
    a.tols = parse_list(a.tols, float, "tolerance")
    if a.threads < 1:
        die("--threads must be >= 1")
    if a.ntargets < 1:
        die("--ntargets must be >= 1")
    if a.repeat < 0:
        die("--repeat must be >= 0")
    if a.gen == "numpy":
        bad = [d for d in a.dists if d not in DISTRIBUTIONS]
        if bad:
            die(f"distribution(s) {bad} need --gen cli (numpy generates {', '.join(DISTRIBUTIONS)})")
    return a


def need_executable(path, what, hint):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        die(f"{what} not found or not executable: {path}\n  {hint}")


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


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return "?"


# Sources of the CPU library and the CLI: a modified file here may change what is measured.
CPU_SOURCES = ("core/", "m2l/", "fmm/", "pbc/", "cli/", "include/", "bldtt/", "fgt/", "rbf/",
               "systems/", "CMakeLists.txt", "cmake/")


def git_rev():
    """HEAD's short hash, and the tracked CPU-side sources modified in the work tree (which the
    measured CLI may have been built with) by name."""
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        st = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    paths = [line[3:].split(" -> ")[-1] for line in st if len(line) > 3]
    mine = [p for p in paths if p.startswith(CPU_SOURCES) and not p.endswith((".cu", ".cuh"))]
    if mine:
        return f"{rev} with modified {', '.join(mine)}"
    return rev + (f" (work tree: {len(paths)} other tracked files modified)" if paths else "")


def fmm_version(cli):
    r = subprocess.run([cli, "--version"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "no --version"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(v) for v in f.read().split()[:3]]
    except (OSError, ValueError):
        return [float("nan")] * 3


def fmm3d_build_info(driver):
    """The key-value lines that bench/fmm3d/build.sh wrote next to the driver's bin/ folder."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(driver))), "build_info.txt")
    info = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(" ")
                info[k] = v
    except OSError:
        log(f"WARNING: {path} not found: FMM3D's commit and flags are not recorded")
    return info


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
    """The points and charges, and the `x y z q` file both codes read."""
    path = os.path.join(workdir, f"{dist}_n{n}_s{args.seed}_{args.gen}.xyzq")
    if args.gen == "numpy":
        xyz, q = generate_numpy(np, dist, n, args.seed)
        if not os.path.exists(path):
            t = time.perf_counter()
            write_xyzq(np, path + ".tmp", xyz, q)
            os.replace(path + ".tmp", path)
            log(f"  wrote {path} ({time.perf_counter() - t:.1f} s)")
        return xyz, q, path
    if not os.path.exists(path):
        # water counts molecules of 3 atoms: N // 3 of them
        count = ["--molecules", str(max(1, n // 3))] if dist == "water" else ["--n", str(n)]
        cmd = [args.fmm, "generate", dist, *count, "--seed", str(args.seed), "--out", path]
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
# The two codes, each a subprocess that prints `name value` lines
# ----------------------------------------------------------------------------------------

def parse_kv(text):
    vals = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                vals[parts[0]] = float(parts[1])
            except ValueError:
                vals[parts[0]] = parts[1]
    return vals


def run_timed(cmd, threads, reps):
    """Runs cmd reps times with OMP_NUM_THREADS=threads; returns the values printed by the run
    with the smallest `time_s`, with its wall time and its CPU time over wall time (about the
    number of busy threads) added."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    best = None
    for _ in range(reps):
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: "
                               f"{(r.stderr or r.stdout).strip()[-500:]}")
        v = parse_kv(r.stdout)
        if not isinstance(v.get("time_s"), float):
            raise RuntimeError(f"no 'time_s <seconds>' line in the output of {cmd[0]}: "
                               f"{r.stdout.strip()[-300:]}")
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        v.update(wall_s=wall, cpu_per_wall=cpu / wall if wall > 0 else float("nan"))
        if best is None or v["time_s"] < best["time_s"]:
            best = v
    return best


def run_fmm3d(np, args, path, n, tol, reps, workdir):
    outpath = os.path.join(workdir, "fmm3d_out.bin")
    v = run_timed([args.fmm3d, "--in", path, "--eps", f"{tol:.17g}", "--repeat", str(reps),
                   "--out", outpath], args.threads, 1)
    if isinstance(v.get("cpu_s"), float) and v["time_s"] > 0:  # the lfmm3d call alone
        v["cpu_per_wall"] = v["cpu_s"] / v["time_s"]
    a = np.fromfile(outpath, dtype="<f8")
    os.remove(outpath)
    if a.size != 4 * n:
        raise RuntimeError(f"FMM3D driver wrote {a.size} values, expected {4 * n}")
    a = a.reshape(n, 4)
    return v, a[:, 0], a[:, 1:4]


def run_ours(np, args, path, n, tol, reps, workdir):
    outpath = os.path.join(workdir, "ours_out.txt")
    cmd = [args.fmm, "coulomb", "--in", path, "--tolerance", f"{tol:g}",
           "--threads", str(args.threads), "--out", outpath]
    if args.cli_reference_max > 0 and n <= args.cli_reference_max:
        cmd.append("--reference")
    v = run_timed(cmd, args.threads, reps)
    a = read_table(np, outpath, 4)
    os.remove(outpath)
    if a.shape != (n, 4):
        raise RuntimeError(f"CLI output {outpath} has shape {a.shape}, expected ({n}, 4)")
    return v, a[:, 0], a[:, 1:4]


# ----------------------------------------------------------------------------------------
# Equal-accuracy comparison
# ----------------------------------------------------------------------------------------

def time_at_error(runs, err_key, e):
    """Time of one code at achieved error e, interpolated linearly in (log error, log time)
    between its two runs whose errors bracket e; None outside their range."""
    pts = sorted((r[err_key], r["time_s"]) for r in runs
                 if isinstance(r.get(err_key), float) and r[err_key] > 0)
    if not pts or not (pts[0][0] <= e <= pts[-1][0]) or e <= 0:
        return None
    for (e0, t0), (e1, t1) in zip(pts, pts[1:]):
        if e0 <= e <= e1:
            if e1 == e0:
                return min(t0, t1)
            w = (math.log(e) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp((1 - w) * math.log(t0) + w * math.log(t1))
    return pts[0][1]  # a single run with exactly this error


ERRS = (("rel_l2_phi", "phi"), ("rel_rms_field", "field"))


def add_equal_accuracy(rows):
    """For each run, the other code's interpolated time at its errors and the ratio FMM3D / ours."""
    ok = [r for r in rows if r.get("status") == "ok"]
    for r in ok:
        other = "fmm3d" if r["code"] == "ours" else "ours"
        runs = [s for s in ok if s["code"] == other and s["dist"] == r["dist"] and s["n"] == r["n"]]
        for key, short in ERRS:
            t = time_at_error(runs, key, r[key])
            r[f"other_time_at_err_{short}"] = t
            if t is not None:
                r[f"ratio_fmm3d_over_ours_at_err_{short}"] = \
                    r["time_s"] / t if r["code"] == "fmm3d" else t / r["time_s"]


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------

FIELDS = ["dist", "n", "seed", "tol", "threads", "code", "status", "time_s", "wall_s",
          "cpu_per_wall", "points_per_s", "rel_l2_phi", "rel_rms_field", "energy", "order",
          "depth", "ratio_fmm3d_over_ours_same_tol", "other_time_at_err_phi",
          "ratio_fmm3d_over_ours_at_err_phi", "other_time_at_err_field",
          "ratio_fmm3d_over_ours_at_err_field", "cli_rel_l2_error_phi", "cli_rel_rms_error_field",
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


def status_note(r):
    if not r:
        return " (not run)"
    if r.get("status") == "ok":
        return ""
    return " (" + str(r.get("status")).replace("|", "/").replace("\n", " ")[:80] + ")"


def write_md(path, rows, meta, fmm3d_only):
    L = []
    title = "FMM3D alone (test run, no comparison)" if fmm3d_only else \
        "This project vs FMM3D (FAST_KER=ON OMP=ON)"
    L.append(f"# {title}\n")
    for k, v in meta.items():
        L.append(f"- {k}: {v}")
    L.append("")
    L.append("Errors are against an exact direct sum (numpy) at the same random subset of "
             f"{meta['targets per point set']} targets for both codes: relative L2 error of the "
             "potential (err phi) and relative RMS error of the field (err E). Times: ours = the "
             "CLI's `time_s` (plan and evaluation, no file I/O); FMM3D = the `lfmm3d_s_c_g` call "
             "alone, timed in bench/fmm3d/lfmm3d_driver.c; best of the repeats. CPU/wall: CPU "
             "time over wall time, about the number of busy threads: for ours that of the whole "
             "CLI process (reading and writing text files on one thread included); for FMM3D "
             "that of the lfmm3d call alone. Load: the 1-minute load average before the run.\n")
    groups = {}
    for r in rows:
        groups.setdefault((r["dist"], r["n"], r["tol"]), {})[r["code"]] = r
    keys = sorted(groups, key=lambda k: (k[0], k[1], -k[2]))
    if fmm3d_only:
        L.append("| dist | N | tol | FMM3D time (s) | err phi | err E | CPU/wall | load |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for k in keys:
            f3 = groups[k].get("fmm3d", {})
            L.append(f"| {k[0]} | {k[1]:.0e} | {k[2]:.0e} | {fmt(f3.get('time_s'), '.3f')}"
                     f"{status_note(f3)} | {fmt(f3.get('rel_l2_phi'), '.2e')} | "
                     f"{fmt(f3.get('rel_rms_field'), '.2e')} | {fmt(f3.get('cpu_per_wall'), '.2f')} | "
                     f"{fmt(f3.get('load1_before'), '.2f')} |")
        L.append("")
        with open(path, "w") as f:
            f.write("\n".join(L))
        return

    L.append("## At the same requested tolerance\n")
    L.append("Ratio = FMM3D's time / ours (> 1: ours is faster), at the same tolerance, whatever "
             "the errors reached.\n")
    L.append("| dist | N | tol | ours time (s) | FMM3D time (s) | ratio | ours err phi | "
             "FMM3D err phi | ours err E | FMM3D err E | ours p / depth | CPU/wall ours, FMM3D | "
             "load ours, FMM3D |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        o, f3 = groups[k].get("ours", {}), groups[k].get("fmm3d", {})
        pd = "—"
        if isinstance(o.get("order"), float) and isinstance(o.get("depth"), float):
            pd = f"{int(o['order'])} / {int(o['depth'])}"
        L.append(f"| {k[0]} | {k[1]:.0e} | {k[2]:.0e} | {fmt(o.get('time_s'), '.3f')}"
                 f"{status_note(o)} | {fmt(f3.get('time_s'), '.3f')}{status_note(f3)} | "
                 f"{fmt(o.get('ratio_fmm3d_over_ours_same_tol'), '.2f')} | "
                 f"{fmt(o.get('rel_l2_phi'), '.2e')} | {fmt(f3.get('rel_l2_phi'), '.2e')} | "
                 f"{fmt(o.get('rel_rms_field'), '.2e')} | {fmt(f3.get('rel_rms_field'), '.2e')} | "
                 f"{pd} | {fmt(o.get('cpu_per_wall'), '.2f')}, {fmt(f3.get('cpu_per_wall'), '.2f')} | "
                 f"{fmt(o.get('load1_before'), '.2f')}, {fmt(f3.get('load1_before'), '.2f')} |")
    L.append("")
    L.append("## At equal achieved accuracy\n")
    L.append("For each run of one code (its error and time), the other code's time at the same "
             "error, interpolated between that code's two runs (same distribution and N) whose "
             "errors bracket it, linearly in log time against log error; \"—\" where no two "
             "runs bracket it (no extrapolation). Ratio = FMM3D's time / ours at that error "
             "(> 1: ours is faster). With tolerances three decades apart the interpolation spans "
             "wide steps; a denser --tols list narrows them.\n")
    L.append("| dist | N | run | tol | err phi | its time (s) | other's time at err phi (s) "
             "| ratio at err phi | err E | other's time at err E (s) | ratio at err E |")
    L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        for code in CODES:
            r = groups[k].get(code)
            if not r or r.get("status") != "ok":
                continue
            L.append(f"| {k[0]} | {k[1]:.0e} | {'ours' if code == 'ours' else 'FMM3D'} | "
                     f"{k[2]:.0e} | {fmt(r.get('rel_l2_phi'), '.2e')} | {fmt(r.get('time_s'), '.3f')} | "
                     f"{fmt(r.get('other_time_at_err_phi'), '.3f')} | "
                     f"{fmt(r.get('ratio_fmm3d_over_ours_at_err_phi'), '.2f')} | "
                     f"{fmt(r.get('rel_rms_field'), '.2e')} | "
                     f"{fmt(r.get('other_time_at_err_field'), '.3f')} | "
                     f"{fmt(r.get('ratio_fmm3d_over_ours_at_err_field'), '.2f')} |")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_png(path, rows, meta, nthreads, fmm3d_only):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r.get("status") == "ok"]
    dists = sorted({r["dist"] for r in ok})
    sizes = sorted({r["n"] for r in ok})
    if not dists:
        log("nothing to plot")
        return
    colors = {"ours": "tab:blue", "fmm3d": "tab:red"}
    labels = {"ours": "this project", "fmm3d": "FMM3D (FAST_KER, OMP)"}
    markers = ["o", "^", "s", "D", "v", "P"]
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(len(dists), 2, figsize=(12, 4.6 * len(dists)), squeeze=False)
    for di, dist in enumerate(dists):
        for ci, (key, what) in enumerate((("rel_l2_phi", "potential"), ("rel_rms_field", "field"))):
            ax = axes[di][ci]
            for code in CODES:
                for ni, n in enumerate(sizes):
                    rs = sorted((r for r in ok if r["code"] == code and r["dist"] == dist
                                 and r["n"] == n), key=lambda r: r["tol"])
                    if not rs:
                        continue
                    ax.plot([r[key] for r in rs], [r["time_s"] for r in rs],
                            color=colors[code], marker=markers[ni % len(markers)],
                            linestyle=styles[ni % len(styles)], label=f"{labels[code]}, N={n:.0e}")
                    for r in rs:
                        ax.annotate(f"{r['tol']:.0e}", (r[key], r["time_s"]), fontsize=6,
                                    xytext=(3, 2), textcoords="offset points", color=colors[code])
            ax.set_xscale("log"); ax.set_yscale("log")
            ax.invert_xaxis()
            ax.set_xlabel(f"achieved relative error of the {what} (labels: requested tolerance)")
            ax.set_ylabel("time (s), potential + field")
            ax.set_title(f"{dist}, {nthreads} threads")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    title = "FMM3D alone (test run)" if fmm3d_only else "This project vs FMM3D (FAST_KER=ON OMP=ON)"
    fig.suptitle(f"{title} — {meta['machine']}, ours {meta['this project'].split()[0]}, "
                 f"FMM3D {meta['FMM3D commit'][:12]}, {meta['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------------------

def main():
    args = parse_args()
    need_executable(args.fmm3d, "FMM3D driver",
                    "build it: bash bench/fmm3d/build.sh FMM3D_SOURCE build-fmm3d "
                    "(or pass --fmm3d PATH)")
    if not args.fmm3d_only or args.gen == "cli":
        need_executable(args.fmm, "project CLI",
                        "build it first:  cmake -S . -B build && cmake --build build -j\n"
                        "  or pass --fmm PATH, or use --fmm3d-only to test only the FMM3D side")
    try:
        import numpy as np
    except ImportError:
        die("numpy is missing: pip install -r bench/requirements.txt")

    info = fmm3d_build_info(args.fmm3d)
    os.makedirs(args.outdir, exist_ok=True)
    base = os.path.join(args.outdir, args.name + ("_only" if args.fmm3d_only else ""))
    tmp_work = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="fmm3d_compare_") if tmp_work else args.workdir
    os.makedirs(workdir, exist_ok=True)

    load0 = loadavg()
    meta = {
        "machine": cpu_name(),
        "cores online": os.cpu_count(),
        "memory": mem_total_gib(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "this project": git_rev(),
        "FMM3D commit": info.get("fmm3d_commit", "unknown"),
        "FMM3D build": f"`{info.get('make_command', '?')}`; FFLAGS `{info.get('fflags', '?')}`; "
                       f"CXXFLAGS `{info.get('cxxflags', '?')}`; {info.get('compilers', '?')}; "
                       f"{info.get('checks', 'build checks not recorded')}",
        "threads": f"{args.threads} (OMP_NUM_THREADS for both, and the CLI's --threads)",
        "point sets": f"{args.gen} generator, seed {args.seed}",
        "targets per point set": args.ntargets,
        "repeats": args.repeat or "3 for N <= 1e5, else 1 (best time kept)",
        "load average at start (1, 5, 15 min)": ", ".join(f"{v:.2f}" for v in load0),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    if not args.fmm3d_only:
        built = datetime.datetime.fromtimestamp(os.path.getmtime(args.fmm), datetime.timezone.utc)
        meta["CLI"] = f"{args.fmm} (built {built:%Y-%m-%d %H:%M UTC}; `{fmm_version(args.fmm)}`)"
    meta["FMM3D driver"] = args.fmm3d
    log(f"{meta['machine']}, {args.threads} threads, FMM3D {meta['FMM3D commit'][:12]}, "
        f"load {meta['load average at start (1, 5, 15 min)']}, workdir {workdir}")

    rows = []
    failures = 0
    try:
        for dist in args.dists:
            for n in args.sizes:
                log(f"{dist} N={n}: generating points")
                xyz, q, path = point_set(np, args, dist, n, workdir)
                n = len(q)
                idx, phi_ref, E_ref = reference(np, args, dist, n, xyz, q, workdir)
                del xyz
                reps = args.repeat or (3 if n <= 100_000 else 1)
                for tol in args.tols:
                    common = dict(dist=dist, n=n, seed=args.seed, tol=tol, threads=args.threads,
                                  ntargets=len(idx))
                    pair = {}
                    for code in CODES:
                        if code == "ours" and args.fmm3d_only:
                            continue
                        r = dict(common, code=code, load1_before=loadavg()[0])
                        runner = run_ours if code == "ours" else run_fmm3d
                        try:
                            v, phi, E = runner(np, args, path, n, tol, reps, workdir)
                            ep, eE = errors(np, phi[idx], E[idx], phi_ref, E_ref)
                            del phi, E
                            r.update(status="ok", time_s=v["time_s"], wall_s=v["wall_s"],
                                     cpu_per_wall=v["cpu_per_wall"], points_per_s=n / v["time_s"],
                                     rel_l2_phi=ep, rel_rms_field=eE, energy=v.get("energy"),
                                     order=v.get("order"), depth=v.get("depth"),
                                     cli_rel_l2_error_phi=v.get("rel_l2_error_phi"),
                                     cli_rel_rms_error_field=v.get("rel_rms_error_field"))
                            extra = f", order {v.get('order')}, depth {v.get('depth')}" \
                                if code == "ours" else ""
                            log(f"  tol {tol:.0e} {code:5s}: {v['time_s']:.3f} s, err phi {ep:.2e}, "
                                f"err E {eE:.2e}, CPU/wall {v['cpu_per_wall']:.2f}, "
                                f"load {r['load1_before']:.2f}{extra}")
                        except Exception as e:  # record and go on with the other runs
                            failures += 1
                            r.update(status=f"error: {e}")
                            log(f"  tol {tol:.0e} {code} FAILED: {e}")
                        pair[code] = r
                        rows.append(r)
                    o, f3 = pair.get("ours"), pair.get("fmm3d")
                    if o and f3 and o["status"] == "ok" and f3["status"] == "ok":
                        o["ratio_fmm3d_over_ours_same_tol"] = f3["time_s"] / o["time_s"]
                        log(f"  tol {tol:.0e} FMM3D / ours: {o['ratio_fmm3d_over_ours_same_tol']:.2f}")
                    # Written after every step so an interrupted sweep keeps what it measured.
                    write_csv(base + ".csv", rows)
                del q
    finally:
        if tmp_work and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    meta["load average at end (1, 5, 15 min)"] = ", ".join(f"{v:.2f}" for v in loadavg())
    add_equal_accuracy(rows)
    write_csv(base + ".csv", rows)
    write_md(base + ".md", rows, meta, args.fmm3d_only)
    if not args.no_plot:
        write_png(base + ".png", rows, meta, args.threads, args.fmm3d_only)
    log(f"wrote {base}.{{csv,md{'' if args.no_plot else ',png'}}}"
        + (f"; {failures} run(s) failed" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
