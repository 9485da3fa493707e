#!/usr/bin/env bash
# nve.sh - one NVE run with PME or with the FMM, its energy drift and speed.
#
# Usage: bench/gromacs/nve.sh SYSTEM.gro SYSTEM.top OUTDIR pme|fmm [NSTEPS] [FMM_TOLERANCE]
#
# grompp -f systems/gromacs/mdp/nve_{pme,fmm}.mdp (identical but for the Coulomb lines; dt 2 fs,
# SETTLE, rc 1.0 nm, energies every 100 steps), nsteps NSTEPS (default from the mdp: 50000 =
# 100 ps), FMM tolerance FMM_TOLERANCE (default 1e-3); mdrun -ntmpi $NTMPI -ntomp $NT with the same
# GROMACS for both (same build, same SIMD): main with the fmmlib backend, or 2022.5 with the FMM
# MDModule (then mdp/gmx2022/nve_fmm.mdp). Then `gmx energy` (Total Energy, Conserved En.) and
#   OUTDIR/result.txt   key value lines: atoms, ps, ns_per_day, drift_kj_mol_ns_atom (least-squares
#                       slope of the total energy, from gmx energy's "Drift" over the run),
#                       etot_mean, etot_rmsd, load average, date, commit
#   OUTDIR/etot.xvg     time (ps) and total energy (kJ/mol), for the plot (nve_report.py)
# Environment: GMX (default build-gromacs/install/bin/gmx), NT (OpenMP threads per rank, default 2),
# NTMPI (thread-MPI ranks, default 1),
# EXTRA_MDP (lines appended to the mdp, e.g. "verlet-buffer-tolerance = 1e-4"), NSTENERGY (energy
# interval in steps instead of the mdp's 100), PIN (mdrun -pin, default auto), MAXH (mdrun -maxh:
# stop after that many hours, at the last energy frame before; "ps" is then the length reached).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GRO=$(realpath "$1")
TOP=$(realpath "$2")
OUT=$3
KIND=$4
NSTEPS=${5:-}
TOL=${6:-1e-3}
GMX=${GMX:-$REPO/build-gromacs/install/bin/gmx}
NT=${NT:-2}
NTMPI=${NTMPI:-1}
case $KIND in pme|fmm) ;; *) echo "nve.sh: KIND must be pme or fmm" >&2; exit 2 ;; esac
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$OUT"
GMXDATA=$($GMX --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top

MDP=$REPO/systems/gromacs/mdp/nve_$KIND.mdp
TOL_KEY=fmm-fmmlib-tolerance
if $GMX --version 2>/dev/null | grep -q '^GROMACS version: *2022'; then
    [ "$KIND" = fmm ] && MDP=$REPO/systems/gromacs/mdp/gmx2022/nve_fmm.mdp
    TOL_KEY=fmm-tolerance
fi
sed "s/^$TOL_KEY .*/$TOL_KEY = $TOL/" "$MDP" > nve_in.mdp
[ -n "$NSTEPS" ] && sed -i "s/^nsteps .*/nsteps                   = $NSTEPS/" nve_in.mdp
[ -n "${EXTRA_MDP:-}" ] && printf '%s\n' "$EXTRA_MDP" >> nve_in.mdp
if [ -n "${NSTENERGY:-}" ]; then
    sed -i -e "s/^nstcalcenergy .*/nstcalcenergy            = $NSTENERGY/" -e "s/^nstenergy .*/nstenergy                = $NSTENERGY/" nve_in.mdp
fi
$GMX -quiet grompp -f nve_in.mdp -c "$GRO" -p "$TOP" -o nve.tpr -po nve_mdout.mdp > grompp.log 2>&1 \
    || { tail -20 grompp.log >&2; echo "nve.sh: grompp failed" >&2; exit 1; }
load0=$(cut -d' ' -f1-3 /proc/loadavg)
$GMX -quiet mdrun -ntmpi "$NTMPI" -ntomp "$NT" -pin "${PIN:-auto}" ${MAXH:+-maxh "$MAXH"} -s nve.tpr -deffnm nve > mdrun.log 2>&1 \
    || { tail -20 mdrun.log >&2; echo "nve.sh: mdrun failed" >&2; exit 1; }
load1=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'Total-Energy\nConserved-En.\n\n' | $GMX -quiet energy -f nve.edr -o etot.xvg > energy.log 2>&1 \
    || { tail -20 energy.log >&2; echo "nve.sh: gmx energy failed" >&2; exit 1; }

natoms=$(sed -n 2p "$GRO" | tr -d ' ')
nsd=$(awk '/^Performance:/ {print $2}' nve.log)
# gmx energy: "Total Energy   <avg>  <err est>  <rmsd>  <tot-drift>  (kJ/mol)"
read -r avg rmsd drift < <(awk '/^Total Energy/ {print $3, $5, $6}' energy.log)
ps=$(grep -v '^[#@]' etot.xvg | awk 'NR==1 {t0=$1} {t=$1} END {print t-t0}')
{
    echo "system $GRO"
    echo "kind $KIND"
    [ "$KIND" = fmm ] && echo "fmm_tolerance $TOL"
    [ -n "${EXTRA_MDP:-}" ] && echo "extra_mdp $EXTRA_MDP"
    echo "atoms $natoms"
    echo "ps $ps"
    echo "ns_per_day $nsd"
    echo "etot_mean $avg"
    echo "etot_rmsd $rmsd"
    echo "etot_total_drift_kj_mol $drift"
    awk -v d="$drift" -v ps="$ps" -v n="$natoms" 'BEGIN {printf "drift_kj_mol_ns_atom %.5f\n", d / (ps / 1000) / n}'
    echo "rlist_grompp $(awk '$1 == "rlist" {print $3; exit}' nve_mdout.mdp) mdrun: $(grep -m1 -o 'rlist from [0-9.]* to [0-9.]*' nve.log || echo unchanged)"
    echo "fmm_log $(grep -m1 -E 'FMM module:|fmmlib:' nve.log || echo none)"
    echo "loadavg_before $load0 after $load1"
    echo "date $(date -u +%Y-%m-%dT%H:%MZ) host $(hostname) ntmpi $NTMPI nt $NT"
    echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > result.txt
cat result.txt
