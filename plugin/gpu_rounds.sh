#!/usr/bin/env bash
# plugin/gpu_rounds.sh [BASE.patch] - on the device machine: alternated rounds of GROMACS runs, PME
# and the FMM of the working tree, and with BASE.patch also the FMM of the tree with that patch
# reversed (an A/B of a change in one call, on one machine: machine-to-machine spread is larger
# than most changes). Each round runs every kind once, in an order that alternates between rounds;
# rounds repeat until SECONDS_MAX (default 480) have passed since the start. The systems, steps and
# other settings are plugin/gpu.sh's (SYSTEMS default here: droplet, STEPS_DROPLET 20000).
# Writes $OUT/rounds.csv (round, build, system, atoms, solver, ns/day, ms/step) after every round,
# and $OUT/round1_{work,base}.md (plugin/gpu.sh's table, module timing and energies of round 1).
# carry: build-gromacs/src/gromacs_2022.5.orig.tar.gz (and the tiles for 100k / 1m, see gpu.sh)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 1
OUT=${OUT:-/tmp/fmm-gpu-out}
PATCH=${1:-}
R=/tmp/fmm-gmx-rounds
rm -rf $R && mkdir -p $R "$OUT"
export SYSTEMS=${SYSTEMS:-droplet} STEPS_DROPLET=${STEPS_DROPLET:-20000} WORK=/tmp/fmm-gmx-gpu
t0=$(date +%s)
summary() {
    echo "round,build,system,atoms,solver,ns_per_day,ms_per_step" > "$OUT/rounds.csv"
    for d in "$R"/*_*; do
        [ -f "$d/gpu_nsday.csv" ] || continue
        b=${d##*/}
        tail -n +2 "$d/gpu_nsday.csv" | awk -F, -v r="${b%%_*}" -v b="${b#*_}" '{print r "," b "," $1 "," $2 "," $3 "," $5 "," $6}'
    done | sort -t, -k1,1n >> "$OUT/rounds.csv"
}
run() { # run ROUND BUILD KINDS [GMX]
    GMX=${4:-} RES=$R/$1_$2 KINDS=$3 bash plugin/gpu.sh > "$R/$1_$2.log" 2>&1 || { tail -30 "$R/$1_$2.log"; exit 1; }
}
if [ -n "$PATCH" ]; then # the base first: then the work tree's build is incremental
    git apply -R "$PATCH" || exit 1
    run 1 base fmm
    cp -a $WORK/gmx /tmp/fmm-gmx-base
    git apply "$PATCH" || exit 1
fi
run 1 work "pme fmm"
cp $R/1_work/gpu_nsday.md "$OUT/round1_work.md"
[ -n "$PATCH" ] && cp $R/1_base/gpu_nsday.md "$OUT/round1_base.md"
summary
echo "round 1 done at $(($(date +%s) - t0)) s (builds included)"
k=2
while [ $(($(date +%s) - t0)) -lt "${SECONDS_MAX:-480}" ]; do
    kinds="fmm pme"; ((k % 2)) && kinds="pme fmm"
    [ -n "$PATCH" ] && ((k % 2 == 0)) && run $k base fmm /tmp/fmm-gmx-base/bin/gmx
    run $k work "$kinds" $WORK/gmx/bin/gmx
    [ -n "$PATCH" ] && ((k % 2)) && run $k base fmm /tmp/fmm-gmx-base/bin/gmx
    summary
    k=$((k + 1))
done
cat "$OUT/rounds.csv"
echo "$((k - 1)) rounds in $(($(date +%s) - t0)) s; $(head -1 $R/1_work/machine.txt)"
