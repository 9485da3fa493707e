#!/usr/bin/env bash
# pme_timing.sh - time GROMACS PME (a short normal MD run) and read the cycle accounting of md.log.
#
# Usage: bench/pme/pme_timing.sh SYSTEM.gro SYSTEM.top OUTDIR [NSTEPS]
#
# Runs grompp + mdrun -nt 2 -resethway for NSTEPS steps (default 200; the counters are reset
# half way, so start-up and the first neighbour searches are not timed) with
#   MDP  default systems/water/mdp/pme_md.mdp (nsteps replaced by NSTEPS; if the .gro has no
#        velocities, gen-vel = yes and continuation = no are set)
#   GMX  default gmx (mixed precision, what production runs use); GMX=gmx_d for double
#   NT   threads, default 2
# and writes OUTDIR/timing.txt: per-step wall time in ms of the whole step, of "Force" (the
# short-range nonbonded kernel: Coulomb real space + LJ), of "PME mesh" (spread, FFT, solve,
# gather) and of "NB X/F buffer ops.", the PME grid, and ns/day. md.log stays in OUTDIR.
set -euo pipefail
[ $# -ge 3 ] && [ $# -le 4 ] || { echo "usage: $0 SYSTEM.gro SYSTEM.top OUTDIR [NSTEPS]" >&2; exit 2; }
GRO=$(realpath "$1")
TOP=$(realpath "$2")
OUT=$3
NSTEPS=${4:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
MDP=$(realpath "${MDP:-$HERE/../../systems/water/mdp/pme_md.mdp}")
GMX=${GMX:-gmx}
NT=${NT:-2}
GMXDATA=$($GMX --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top
mkdir -p "$OUT"
cd "$OUT"

# velocities present? (.gro atom line: 3 coordinates, optionally 3 velocities)
nfield=$(sed -n 3p "$GRO" | cut -c21- | awk '{print NF}')
{
    grep -vE '^[[:space:]]*(nsteps|continuation|gen[-_]vel|gen[-_]temp|gen[-_]seed)[[:space:]]*=' "$MDP"
    echo "nsteps = $NSTEPS"
    if [ "$nfield" -ge 6 ]; then echo "continuation = yes"; echo "gen-vel = no"
    else echo "continuation = no"; echo "gen-vel = yes"; echo "gen-temp = 300"; echo "gen-seed = 1"; fi
} >run.mdp

$GMX -quiet grompp -f run.mdp -c "$GRO" -p "$TOP" -o md.tpr -po mdout.mdp -maxwarn 1 >grompp.log 2>&1 || {
    cat grompp.log >&2; echo "pme_timing.sh: grompp failed" >&2; exit 1; }
$GMX -quiet mdrun -nt "$NT" -pin on -resethway -s md.tpr -deffnm md >mdrun.out 2>&1 || {
    tail -30 mdrun.out >&2; echo "pme_timing.sh: mdrun failed" >&2; exit 1; }

natoms=$(sed -n 2p "$GRO" | tr -d ' ')
grid=$($GMX -quiet dump -s md.tpr 2>/dev/null | awk '/fourier-n[xyz]/ {printf "%s%s", sep, $3; sep="x"}')
awk -v natoms="$natoms" -v grid="$grid" -v mdp="$MDP" -v gro="$GRO" '
/R E A L   C Y C L E/ { acc = 1 }
acc && /^ Force / { force = $(NF - 2); nforce = $(NF - 3) }
acc && /^ PME mesh / { pme = $(NF - 2) }
acc && /^ NB X\/F buffer ops\./ { buf = $(NF - 2) }
acc && /^ Neighbor search / { ns = $(NF - 2) }
acc && /^ Total / { total = $(NF - 2) }
/^Performance:/ { nsday = $2 }
/^GROMACS version:/ { ver = $3 }
/^Precision:/ { prec = $2 }
/^SIMD instructions:/ { simd = $3 }
/Using [0-9]+ OpenMP thread/ { thr = $2 }
END {
    printf "# GROMACS %s (%s precision, SIMD %s), %s OpenMP threads, one rank\n", ver, prec, simd, thr
    printf "# %s, %s atoms, mdp %s, PME grid %s\n", gro, natoms, mdp, grid
    printf "timed_steps          %d\n", nforce
    printf "ms_per_step_total    %.3f\n", 1000 * total / nforce
    printf "ms_per_step_force    %.3f   (short-range nonbonded: Coulomb real space + LJ)\n", 1000 * force / nforce
    printf "ms_per_step_pme_mesh %.3f\n", 1000 * pme / nforce
    printf "ms_per_step_nb_buf   %.3f\n", 1000 * buf / nforce
    printf "ms_per_step_nsearch  %.3f   (averaged over all steps)\n", 1000 * ns / nforce
    printf "ns_per_day           %s\n", nsday
}' md.log >timing.txt
sed -n '/R E A L   C Y C L E/,/^Performance/p' md.log | sed 's/^/# /' >>timing.txt
cat timing.txt
