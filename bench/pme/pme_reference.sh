#!/usr/bin/env bash
# pme_reference.sh - GROMACS PME Coulomb energy of one frame, double precision, tight settings.
#
# Usage: bench/pme/pme_reference.sh SYSTEM.gro SYSTEM.top OUTDIR
#
# Runs  gmx_d grompp -f systems/water/mdp/pme_tight.mdp  and  gmx_d mdrun -rerun SYSTEM.gro
# (2 threads; a rerun applies no constraints), then  gmx_d energy -dp  and writes
#   OUTDIR/pme_energy.txt   lines "coulomb_sr X", "coul_recip Y", "coulomb_total X+Y" (kJ/mol,
#                           %.17g) and the settings used, read by compare_energy.py --pme OUTDIR
#   OUTDIR/rerun.{tpr,log,edr}, OUTDIR/energy.xvg, OUTDIR/grompp.log, OUTDIR/mdout.mdp
# Environment: GMX_D (default gmx_d; falls back to gmx, single precision, with a warning),
#              MDP (default systems/water/mdp/pme_tight.mdp), NT (threads, default 2).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 SYSTEM.gro SYSTEM.top OUTDIR" >&2; exit 2; }
GRO=$(realpath "$1")
TOP=$(realpath "$2")
OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
MDP=$(realpath "${MDP:-$HERE/../../systems/water/mdp/pme_tight.mdp}")
NT=${NT:-2}
GMX_D=${GMX_D:-gmx_d}
if ! command -v "$GMX_D" >/dev/null; then
    echo "pme_reference.sh: $GMX_D not found, using gmx (SINGLE precision: expect ~1e-7 relative)" >&2
    GMX_D=gmx
fi
GMXDATA=$($GMX_D --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top
mkdir -p "$OUT"
cd "$OUT"

$GMX_D -quiet grompp -f "$MDP" -c "$GRO" -p "$TOP" -o rerun.tpr -po mdout.mdp >grompp.log 2>&1 || {
    cat grompp.log >&2; echo "pme_reference.sh: grompp failed" >&2; exit 1; }
t0=$(date +%s.%N)
$GMX_D -quiet mdrun -nt "$NT" -s rerun.tpr -rerun "$GRO" -deffnm rerun >mdrun.out 2>&1 || {
    tail -30 mdrun.out >&2; echo "pme_reference.sh: mdrun -rerun failed" >&2; exit 1; }
t1=$(date +%s.%N)
printf 'Coulomb-(SR)\nCoul.-recip.\n' | $GMX_D -quiet energy -f rerun.edr -dp -o energy.xvg >energy.out 2>&1 || {
    cat energy.out >&2; echo "pme_reference.sh: gmx energy failed" >&2; exit 1; }
# energy.xvg: legends s0 = Coulomb (SR), s1 = Coul. recip.; one data line "t sr recip"
grep -q 'legend "Coulomb (SR)"' energy.xvg && grep -q 'legend "Coul. recip."' energy.xvg || {
    echo "pme_reference.sh: unexpected energy.xvg legends" >&2; exit 1; }
read -r _ SR RECIP < <(grep -v '^[#@]' energy.xvg | head -1)
grid=$($GMX_D -quiet dump -s rerun.tpr 2>/dev/null | awk '/fourier-n[xyz]/ {printf "%s%s", sep, $3; sep="x"}')
{
    echo "# GROMACS PME Coulomb energy (kJ/mol) of $GRO"
    echo "# $($GMX_D --version 2>/dev/null | grep -E '^GROMACS version|^Precision' | tr -s ' ' | paste -sd ';')"
    echo "# mdp $MDP: $(grep -E '^(rcoulomb|ewald-rtol|fourierspacing|pme-order|coulomb-modifier|epsilon-surface) ' "$MDP" | awk '{printf "%s=%s ", $1, $3}')grid=$grid"
    echo "# mdrun -rerun wall time (incl. start-up) $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s, $NT threads, $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
    echo "coulomb_sr $SR"
    echo "coul_recip $RECIP"
    awk -v a="$SR" -v b="$RECIP" 'BEGIN { printf "coulomb_total %.17g\n", a + b }'
} >pme_energy.txt
cat pme_energy.txt
