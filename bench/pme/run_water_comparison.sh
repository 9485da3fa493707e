#!/usr/bin/env bash
# run_water_comparison.sh - the FMM against GROMACS PME on the SPC/E water systems: the numbers
# of bench/pme/results.md (energies, relative differences, FMM and PME timings).
#
# Usage: bench/pme/run_water_comparison.sh [-f FMM] [-o OUTDIR] [-t "1e-3 1e-6 1e-9"] [SYSTEM...]
#   FMM      CLI, default build/bin/fmm
#   OUTDIR   default bench/pme/out (git-ignored)
#   SYSTEM   any of 3k 24k droplet 100k 1m (default: 3k 24k droplet). 3k, 24k, droplet use the
#            bundled systems/water files; 100k and 1m need systems/water/make_water_systems.sh
#            100k 1m first (systems/water/build/).
# For 3k, 24k, droplet: pme_reference.sh (gmx_d, pme_tight.mdp) and compare_energy.py at each
# tolerance (the tightest with --reference, the FMM's own Ewald check). For 100k and 1m:
# pme_reference.sh only for 100k (1m is too slow for gmx_d at these settings), and the FMM
# against the exact tiled reference (tiled_reference.py, tile run at 1e-10).
# PME timings: pme_timing.sh with pme_md.mdp (gmx, mixed precision) and pme_tight.mdp (gmx_d).
# Everything on NT=2 threads. The summary goes to OUTDIR/summary.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FMM=$ROOT/build/bin/fmm
OUT=$HERE/out
TOLS="1e-3 1e-6 1e-9"
while getopts "f:o:t:h" opt; do
    case $opt in
        f) FMM=$(realpath "$OPTARG") ;;
        o) OUT=$OPTARG ;;
        t) TOLS=$OPTARG ;;
        *) sed -n '2,18p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
SYSTEMS=${*:-3k 24k droplet}
NT=${NT:-2}
export NT
W=$ROOT/systems/water
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUM=$OUT/summary.txt
[ -x "$FMM" ] || { echo "FMM CLI $FMM not found (build it first)" >&2; exit 1; }

src() { # src SYSTEM -> "GRO TOP XYZQ"
    case $1 in
        3k) echo "$W/spce_3k.gro $W/spce_3k.top $W/spce_3k.xyzq" ;;
        24k) echo "$W/spce_24k.gro $W/spce_24k.top $W/spce_24k.xyzq" ;;
        droplet) echo "$W/spce_droplet_r2.gro $W/spce_droplet_r2.top $W/spce_droplet_r2.xyzq" ;;
        100k) echo "$W/build/spce_100k.gro $W/build/spce_100k.top $W/build/spce_100k.xyzq" ;;
        1m) echo "$W/build/spce_1m.gro $W/build/spce_1m.top $W/build/spce_1m.xyzq" ;;
        *) echo "unknown system $1" >&2; exit 2 ;;
    esac
}
tile() { case $1 in 100k) echo 16 ;; 1m) echo 14 ;; esac; }

{
    echo "# run_water_comparison.sh $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "# $(gmx_d --version 2>/dev/null | grep '^GROMACS version' | tr -s ' '); FMM $FMM (git $(git -C "$ROOT" rev-parse --short HEAD)); threads $NT"
} >"$SUM"

for s in $SYSTEMS; do
    read -r GRO TOP XYZQ <<<"$(src "$s")"
    [ -f "$GRO" ] || { echo "$GRO missing (run systems/water/make_water_systems.sh $s)" >&2; exit 1; }
    L=$(awk 'NR == 1 { print $3 }' "$XYZQ")
    d=$OUT/$s
    mkdir -p "$d"
    echo "== $s ($(sed -n 2p "$GRO" | tr -d ' ') atoms, L = $L nm)" | tee -a "$SUM"
    if [ "$s" != 1m ]; then
        "$HERE/pme_reference.sh" "$GRO" "$TOP" "$d/pme_tight" >/dev/null
        grep -E '^coulomb_total|wall time' "$d/pme_tight/pme_energy.txt" | sed 's/^/pme_tight: /' | tee -a "$SUM"
    fi
    if [ -n "$(tile "$s")" ]; then
        T=$W/build/tile_nx$(tile "$s")
        "$FMM" coulomb --in "$T.xyzq" --periodic --box "$(awk 'NR == 1 { print $3 }' "$T.xyzq")" \
            --tolerance 1e-10 --threads "$NT" --out "$d/tile.out" >"$d/tile.txt"
    fi
    last=${TOLS##* }
    for tol in $TOLS; do
        ref=()
        if [ "$tol" = "$last" ] && [ -z "$(tile "$s")" ]; then ref=(--reference); fi
        outarg=()
        [ -n "$(tile "$s")" ] && outarg=(--out "$d/fmm.out")
        "$FMM" coulomb --in "$XYZQ" --periodic --box "$L" --tolerance "$tol" --threads "$NT" \
            "${ref[@]}" "${outarg[@]}" >"$d/fmm_$tol.txt"
        line="fmm tol $tol: $(awk '$1 ~ /^(order|depth|time_s|rel_l2_error_phi|rel_error_energy)$/ {printf "%s %s  ", $1, $2}' "$d/fmm_$tol.txt")"
        if [ "$s" != 1m ]; then
            python3 "$HERE/compare_energy.py" --gro "$GRO" --pme "$d/pme_tight" --fmm-stdout "$d/fmm_$tol.txt" \
                >"$d/compare_$tol.txt"
            line+="| $(awk '$1 ~ /^(fmm_minus_excl_kJmol|pme_total_kJmol|rel_diff)$/ {printf "%s %s  ", $1, $2}' "$d/compare_$tol.txt")"
        fi
        if [ -n "$(tile "$s")" ]; then
            python3 "$HERE/tiled_reference.py" --tile-out "$d/tile.out" --tile-stdout "$d/tile.txt" \
                --big-out "$d/fmm.out" --big-stdout "$d/fmm_$tol.txt" >"$d/tiled_$tol.txt"
            line+="| tiled ref: $(awk '$1 ~ /^rel_/ {printf "%s %s  ", $1, $2}' "$d/tiled_$tol.txt")"
        fi
        echo "$line" | tee -a "$SUM"
    done
    rm -f "$d/fmm.out" "$d/tile.out"
    case $s in 3k) n=1000 ;; 24k | droplet) n=200 ;; 100k) n=100 ;; 1m) n=20 ;; esac
    "$HERE/pme_timing.sh" "$GRO" "$TOP" "$d/timing_md" "$n" >/dev/null
    echo "pme_md (gmx mixed, $n steps): $(awk '$1 ~ /^ms_per_step/ {printf "%s %s  ", $1, $2}' "$d/timing_md/timing.txt")" | tee -a "$SUM"
    if [ "$s" = 3k ] || [ "$s" = 24k ]; then
        GMX=gmx_d MDP=$W/mdp/pme_tight.mdp "$HERE/pme_timing.sh" "$GRO" "$TOP" "$d/timing_tight" 40 >/dev/null
        echo "pme_tight (gmx_d, 40 steps): $(awk '$1 ~ /^ms_per_step/ {printf "%s %s  ", $1, $2}' "$d/timing_tight/timing.txt")" | tee -a "$SUM"
    fi
done
