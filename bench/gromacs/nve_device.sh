#!/usr/bin/env bash
# nve_device.sh - the long NVE energy-conservation runs on a machine with many idle cores (the
# device machine's 16-core host; no GPU used): builds the CPU GROMACS + FMM module there, then
# runs several bench/gromacs/nve.sh in parallel, NT threads each. Results: $OUT/gromacs_nve/RUN/
# (result.txt, etot.xvg, nve.log, ...).
#
# Usage (from the repository root):  bash bench/gromacs/nve_device.sh build
#                                    bash bench/gromacs/nve_device.sh RUN... (RUN = SYS:KIND:PS[:TOL])
#   e.g. 3k:pme:100 3k:fmm:100:1e-3 24k:fmm:20:1e-3     (SYS: 3k 24k peptide; KIND: pme fmm)
# The GROMACS source tarball must be carried: build-gromacs/src/gromacs_2022.5.orig.tar.gz.
# Environment: NT (threads per run, default 4), WORK (default /tmp/fmm-gmx-cpu).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
WORK=${WORK:-/tmp/fmm-gmx-cpu}
OUTDIR=${OUT:-$REPO/build-gromacs/device-out}/gromacs_nve
mkdir -p "$OUTDIR"
NT=${NT:-4}
if [ "${1:-}" = build ]; then
    t0=$(date +%s)
    FMM_GMX_WORK=$WORK/build SKIP_APT=1 plugin/build-gromacs.sh "$WORK/gmx" --jobs "$(nproc)" \
        --tarball build-gromacs/src/gromacs_2022.5.orig.tar.gz > "$OUTDIR/build.log" 2>&1
    rc=$?
    echo "build rc $rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUTDIR/build.log"
    [ $rc -eq 0 ] || { tail -30 "$OUTDIR/build.log"; tail -30 "$WORK/build/make-cpu.log" 2>/dev/null; }
    exit $rc
fi
export GMX=$WORK/gmx/bin/gmx
{ lscpu | grep -E 'Model name|^CPU\(s\)'; uptime; date -u; git rev-parse --short HEAD; } > "$OUTDIR/machine_$(date +%H%M%S).txt" 2>&1
pids=()
for spec in "$@"; do
    IFS=: read -r sys kind ps tol <<< "$spec"
    case $sys in 3k) g=water_3k ;; 24k) g=water_24k ;; *) g=$sys ;; esac
    name=${sys}_${kind}${tol:+_$tol}_${ps}ps
    NT=$NT PIN=off bench/gromacs/nve.sh "systems/gromacs/$g.gro" "systems/gromacs/$g.top" "$OUTDIR/$name" \
        "$kind" $((ps * 500)) "${tol:-1e-3}" > "$OUTDIR/$name.out" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for f in "$OUTDIR"/*.out; do echo "== $f"; tail -16 "$f"; done
