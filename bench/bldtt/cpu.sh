#!/usr/bin/env bash
# bench/bldtt/cpu.sh - BLDTT on the CPU (2 threads) against this project's Coulomb FMM at equal
# accuracy, on the same uniform file. usage: bench/bldtt/cpu.sh BUILD_DIR [N ...]
# Writes bench/results/bldtt_cpu_vs_fmm.csv (appends), one line per solver and setting:
#   n,solver,setting,threads,time_s,rel_l2_error,points_per_s,loadavg
set -u
B=${1:-build-bldtt}
shift || true
NS=${*:-100000}
R=bench/results/bldtt_cpu_vs_fmm.csv
[ -f "$R" ] || echo "n,solver,setting,threads,time_s,rel_l2_error,points_per_s,loadavg_before,commit,date" >"$R"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse --short HEAD)
for n in $NS; do
    "$B/bin/fmm" generate uniform --n "$n" --seed 7 --out "$tmp/u.txt" >/dev/null
    one() { # solver setting args...
        local solver=$1 setting=$2; shift 2
        local la; la=$(cut -d' ' -f1 /proc/loadavg)
        "$B/bin/fmm" "$solver" "$@" --threads 2 --reference --reference-sample 1000 >"$tmp/o.txt" 2>&1 || { cat "$tmp/o.txt"; return; }
        local t e
        t=$(awk '$1 == "time_s" {print $2}' "$tmp/o.txt")
        e=$(awk '$1 == "rel_l2_error" || $1 == "rel_l2_error_phi" {print $2}' "$tmp/o.txt")
        echo "$n,$solver,$setting,2,$t,$e,$(awk -v n="$n" -v t="$t" 'BEGIN {printf "%.4g", n / t}'),$la,$commit,$(date -u +%FT%TZ)" | tee -a "$R"
    }
    one bldtt "theta0.7_n8" --sources "$tmp/u.txt" --theta 0.7 --degree 8
    one coulomb "tol1e-8" --in "$tmp/u.txt" --tolerance 1e-8
    one bldtt "theta0.7_n5" --sources "$tmp/u.txt" --theta 0.7 --degree 5
    one coulomb "tol1e-5" --in "$tmp/u.txt" --tolerance 1e-5
    one bldtt "theta0.9_n3" --sources "$tmp/u.txt" --theta 0.9 --degree 3
    one coulomb "tol1e-3" --in "$tmp/u.txt" --tolerance 1e-3
done
