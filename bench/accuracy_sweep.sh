#!/usr/bin/env bash
# accuracy_sweep.sh - relative L2 potential error against the reference (direct sum, or
# Ewald for periodic boxes) at every expansion order, on the point sets the tolerance promise
# covers. Its table calibrates fmm/accuracy.c. Writes bench/results/accuracy_sweep.csv.
# Usage: bench/accuracy_sweep.sh [N_OPEN] [ORDER ...]    (defaults 20000, orders 1..24)
# Environment: FMM (the CLI, default build/bin/fmm), OUT (default bench/results/accuracy_sweep.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000}
shift || true
ORDERS=${*:-$(seq 1 24)}
FMM=${FMM:-build/bin/fmm}
OUT=${OUT:-bench/results/accuracy_sweep.csv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for kind in uniform plummer sphere; do $FMM generate $kind --n "$N" --seed 11 --out "$tmp/$kind.txt" >/dev/null; done
$FMM generate water --molecules $((N / 3)) --seed 11 --out "$tmp/water.txt" >/dev/null
$FMM generate water --molecules 100 --seed 12 --out "$tmp/w300.txt"
Lw=$(awk '/^# box/ {print $3; exit}' "$tmp/w300.txt")
Lr=1.0
$FMM generate uniform --n 2000 --seed 13 --out "$tmp/r2000.txt" >/dev/null
L3k=$(awk 'NR==1{print $3}' systems/water/spce_3k.xyzq)
echo "boundary,set,n,order,depth,rel_l2_error_phi,rel_rms_error_field,time_s" > "$OUT"
run() { # boundary set file order extra-args...
    local b=$1 s=$2 f=$3 p=$4; shift 4
    $FMM coulomb --in "$f" --order "$p" --reference --reference-sample 1000 "$@" |
        awk -v b="$b" -v s="$s" -v p="$p" '{v[$1]=$2} END{printf "%s,%s,%s,%s,%s,%s,%s,%s\n", b, s, v["n"], p, v["depth"], v["rel_l2_error_phi"], v["rel_rms_error_field"], v["time_s"]}' >> "$OUT"
    echo "$b $s p=$p" >&2
}
for p in $ORDERS; do
    for kind in uniform plummer sphere water; do run open $kind "$tmp/$kind.txt" "$p"; done
    run periodic spce_3k systems/water/spce_3k.xyzq "$p" --periodic --box "$L3k"
    run periodic water_300 "$tmp/w300.txt" "$p" --periodic --box "$Lw"
    run periodic uniform_2000 "$tmp/r2000.txt" "$p" --periodic --box "$Lr"
done
echo "wrote $OUT" >&2
