#!/usr/bin/env bash
# bench/gromacs/gpu_side_by_side.sh - on the device machine: GROMACS main with the fmmlib backend and
# GROMACS 2022.5 with the FMM MDModule, each against PME on the GPU (plugin/gpu.sh), and one table of
# their ns/day ratios FMM / PME per system.
#
# Usage (repository root): VERSIONS="main 2022.5" bash bench/gromacs/gpu_side_by_side.sh
# Each version needs its tarball carried (plugin/gpu.sh: build-gromacs/src/gromacs-2027.0-dev-b1a82ec.tar.xz
# for main, build-gromacs/src/gromacs_2022.5.orig.tar.gz for 2022.5); a version whose tarball is missing
# but whose build is there from an earlier call on the same warm machine ($WORK of plugin/gpu.sh) is
# run with that build. Two device calls fit the 10-minute limit where one does not (about 4 min of
# build per version on 16 cores): VERSIONS=main, then VERSIONS=2022.5; the second prints both.
# Environment: as plugin/gpu.sh (SYSTEMS, KINDS, FMM_TOL, FMM_PRECISION, STEPS_*); OUT (default
# build-gromacs/gpu-out): results in $OUT/gromacs-VERSION/ and $OUT/side_by_side.md.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
OUT=${OUT:-$REPO/build-gromacs/gpu-out}
for v in ${VERSIONS:-main 2022.5}; do
    gmx=/tmp/fmm-gmx-gpu-$v/gmx/bin/gmx
    if [ -x "$gmx" ]; then
        GMX=$gmx GROMACS=$v RES=$OUT/gromacs-$v bash plugin/gpu.sh > /dev/null
    else
        GROMACS=$v RES=$OUT/gromacs-$v bash plugin/gpu.sh > /dev/null
    fi
    tail -3 "$OUT/gromacs-$v/gpu.log"
done
python3 - "$OUT" > "$OUT/side_by_side.md" <<'PYEOF'
import csv, glob, os, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "gromacs-*", "gpu_nsday.csv"))):
    version = os.path.basename(os.path.dirname(path))[len("gromacs-"):]
    for r in csv.DictReader(open(path)):
        if r["status"] == "ok":
            rows.setdefault((r["system"], version), {})[r["solver"]] = float(r["ns_per_day"])
print("| system | GROMACS | PME ns/day | FMM ns/day | FMM / PME |")
print("|---|---|---:|---:|---:|")
for (system, version), d in sorted(rows.items()):
    if "pme" in d and "fmm" in d:
        print("| %s | %s | %.2f | %.2f | %.3f |" % (system, version, d["pme"], d["fmm"], d["fmm"] / d["pme"]))
PYEOF
cat "$OUT/side_by_side.md"
