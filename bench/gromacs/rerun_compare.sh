#!/usr/bin/env bash
# rerun_compare.sh - one frame, GROMACS with the FMM against a tight double-precision PME reference.
#
# Usage: bench/gromacs/rerun_compare.sh SYSTEM.gro SYSTEM.top OUTDIR [FMM_TOLERANCE]
#
#  reference: gmx_d (Debian, double precision) grompp -f systems/gromacs/mdp/rerun_pme_tight.mdp,
#             mdrun -rerun SYSTEM.gro (forces into pme.trr);
#  test:      $GMX (GROMACS main with the fmmlib backend, or 2022.5 with the FMM MDModule; default
#             build-gromacs/install/bin/gmx) grompp -f systems/gromacs/mdp/rerun_fmm.mdp (2022.5:
#             mdp/gmx2022/rerun_fmm.mdp) at the FMM tolerance FMM_TOLERANCE (default 1e-8),
#             mdrun -ntmpi $NTMPI -rerun SYSTEM.gro (fmm.trr).
# Compares the Coulomb energy (reference: Coulomb (SR) + Coul. recip. + Coulomb-14; FMM:
# Coul. recip. + Coulomb-14 + Coulomb (SR), the last being zero) and LJ (SR) (a check that both
# runs are otherwise identical) from `gmx_d energy -dp`, and the forces with compare_trr.py:
# force_rel_rms, the total forces; coulomb_force_rel_rms, the Coulomb forces alone (each side's
# total minus a rerun of the same build with epsilon-r 1e20, relative to PME's Coulomb forces);
# noncoulomb_force_rel_rms, the bonded and LJ forces of the two builds (relative to the total
# force): a mixed-precision build computes those in float, which with a protein's stiff bonded
# terms alone exceeds 1e-5 (bench/gromacs/results/README.md).
# Writes OUTDIR/summary.txt (key value lines) and prints it; exit status 1 when energy
# (1e-6 relative) or Coulomb forces (1e-5 relative RMS) miss the targets and CHECK=1 (default 1).
# Environment: GMX, GMX_D (default gmx_d), NT (threads per rank, default 2), NTMPI (thread-MPI
# ranks of the FMM runs, default 1: more than one runs the backend's gathered evaluation), CHECK.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,23p' "$0" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GRO=$(realpath "$1")
TOP=$(realpath "$2")
OUT=$3
TOL=${4:-1e-8}
GMX=${GMX:-$REPO/build-gromacs/install/bin/gmx}
GMX_D=${GMX_D:-gmx_d}
NT=${NT:-2}
NTMPI=${NTMPI:-1}
CHECK=${CHECK:-1}
MDP=$REPO/systems/gromacs/mdp
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$OUT"
# the topologies include Debian's force fields (oplsaa.ff) and files next to them (posre.itp)
GMXDATA=$($GMX_D --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top

fail() { echo "rerun_compare.sh: $*" >&2; exit 1; }

# reference
$GMX_D -quiet grompp -f "$MDP/rerun_pme_tight.mdp" -c "$GRO" -p "$TOP" -o pme.tpr -po pme_mdout.mdp \
    > pme_grompp.log 2>&1 || { tail -20 pme_grompp.log; fail "gmx_d grompp failed"; }
t0=$(date +%s.%N)
$GMX_D -quiet mdrun -nt "$NT" -s pme.tpr -rerun "$GRO" -deffnm pme > pme_mdrun.log 2>&1 \
    || { tail -20 pme_mdrun.log; fail "gmx_d mdrun failed"; }
t1=$(date +%s.%N)

# FMM: GROMACS main's fmmlib backend, or the 2022.5 MDModule (its own mdp option names)
FMM_MDP=$MDP/rerun_fmm.mdp
TOL_KEY=fmm-fmmlib-tolerance
if $GMX --version 2>/dev/null | grep -q '^GROMACS version: *2022'; then
    FMM_MDP=$MDP/gmx2022/rerun_fmm.mdp
    TOL_KEY=fmm-tolerance
fi
sed "s/^$TOL_KEY .*/$TOL_KEY = $TOL/" "$FMM_MDP" > fmm_in.mdp
$GMX -quiet grompp -f fmm_in.mdp -c "$GRO" -p "$TOP" -o fmm.tpr -po fmm_mdout.mdp \
    > fmm_grompp.log 2>&1 || { tail -20 fmm_grompp.log; fail "FMM grompp failed"; }
$GMX -quiet mdrun -ntmpi "$NTMPI" -ntomp "$NT" -s fmm.tpr -rerun "$GRO" -deffnm fmm > fmm_mdrun.log 2>&1 \
    || { tail -20 fmm_mdrun.log; fail "FMM mdrun failed"; }
t2=$(date +%s.%N)

# the same two reruns with the Coulomb switched off (epsilon-r 1e20; the FMM at its loosest
# tolerance, its result being scaled by 1e-20): their forces are the bonded and LJ forces of each
# build, which the mixed-precision build computes in float. Subtracting them leaves the Coulomb
# forces of each side, compared below on their own.
sed 's/^epsilon-r .*/epsilon-r = 1e20/' "$MDP/rerun_pme_tight.mdp" > pme_noq_in.mdp
sed -e 's/^epsilon-r .*/epsilon-r = 1e20/' -e "s/^$TOL_KEY .*/$TOL_KEY = 1e-3/" fmm_in.mdp > fmm_noq_in.mdp
for side in pme fmm; do
    G=$GMX; RUN=(-ntmpi "$NTMPI" -ntomp "$NT")
    [ $side = pme ] && { G=$GMX_D; RUN=(-nt "$NT"); }
    $G -quiet grompp -f ${side}_noq_in.mdp -c "$GRO" -p "$TOP" -o ${side}_noq.tpr -po ${side}_noq_mdout.mdp \
        > ${side}_noq_grompp.log 2>&1 || { tail -20 ${side}_noq_grompp.log; fail "$side grompp without Coulomb failed"; }
    $G -quiet mdrun "${RUN[@]}" -s ${side}_noq.tpr -rerun "$GRO" -deffnm ${side}_noq > ${side}_noq_mdrun.log 2>&1 \
        || { tail -20 ${side}_noq_mdrun.log; fail "$side mdrun without Coulomb failed"; }
done

energies() { # energies EDR -> "coulSR recip c14 ljsr" (missing terms 0)
    printf 'Coulomb-(SR)\nCoul.-recip.\nCoulomb-14\nLJ-(SR)\n\n' |
        $GMX_D -quiet energy -f "$1" -dp -o "${1%.edr}_energy.xvg" > "${1%.edr}_energy.log" 2>&1 || true
    python3 - "${1%.edr}_energy.xvg" <<'EOF'
import re, sys
names, vals = {}, None
for line in open(sys.argv[1]):
    m = re.match(r'@ s(\d+) legend "(.*)"', line)
    if m:
        names[m.group(2)] = int(m.group(1)) + 1
    elif line.strip() and line[0] not in "#@" and vals is None:
        vals = [float(v) for v in line.split()]
get = lambda k: vals[names[k]] if k in names else 0.0
print("%.17g %.17g %.17g %.17g" % (get("Coulomb (SR)"), get("Coul. recip."), get("Coulomb-14"), get("LJ (SR)")))
EOF
}
read -r P_SR P_RECIP P_14 P_LJ < <(energies pme.edr)
read -r F_SR F_RECIP F_14 F_LJ < <(energies fmm.edr)
python3 "$HERE/compare_trr.py" pme.trr fmm.trr > forces.txt || fail "compare_trr.py failed"
PYTHONPATH=$HERE python3 - >> forces.txt <<'EOF' || fail "Coulomb force comparison failed"
import numpy as np
from compare_trr import TrrReader
f = {k: next(TrrReader(k + ".trr").frames())["f"] for k in ("pme", "fmm", "pme_noq", "fmm_noq")}
coul_pme, coul_fmm = f["pme"] - f["pme_noq"], f["fmm"] - f["fmm_noq"]
rel = lambda d, ref: np.sqrt(np.sum(d ** 2) / np.sum(ref ** 2))
print("coulomb_force_rel_rms %.3e" % rel(coul_fmm - coul_pme, coul_pme))
print("noncoulomb_force_rel_rms %.3e" % rel(f["fmm_noq"] - f["pme_noq"], f["pme"]))
EOF

fmm_line=$(grep -m1 -E "FMM module:|fmmlib:" fmm.log || true)
rc=0
python3 - "$P_SR" "$P_RECIP" "$P_14" "$P_LJ" "$F_SR" "$F_RECIP" "$F_14" "$F_LJ" "$CHECK" > summary.txt <<EOF || rc=$?
import sys
p_sr, p_rec, p_14, p_lj, f_sr, f_rec, f_14, f_lj = map(float, sys.argv[1:9])
ref = p_sr + p_rec + p_14
fmm = f_sr + f_rec + f_14
forces = open("forces.txt").read().split()
frel = float(forces[forces.index("force_rel_rms") + 1])
fcoul = float(forces[forces.index("coulomb_force_rel_rms") + 1])
fnoncoul = float(forces[forces.index("noncoulomb_force_rel_rms") + 1])
fmax = float(forces[forces.index("force_max_rel") + 1])
erel = abs(fmm - ref) / abs(ref)
print("system $GRO")
print("atoms %s" % forces[forces.index("natoms") + 1])
print("fmm_tolerance $TOL")
print("pme_coulomb_sr %.10f" % p_sr)
print("pme_coul_recip %.10f" % p_rec)
print("pme_coulomb_14 %.10f" % p_14)
print("pme_coulomb_total %.10f" % ref)
print("fmm_coulomb_sr %.10f" % f_sr)
print("fmm_coul_recip %.10f" % f_rec)
print("fmm_coulomb_14 %.10f" % f_14)
print("fmm_coulomb_total %.10f" % fmm)
print("coulomb_rel_diff %.3e" % erel)
print("lj_sr_rel_diff %.3e" % (abs(f_lj - p_lj) / max(abs(p_lj), 1e-300)))
print("force_rel_rms %.3e" % frel)
print("force_max_rel %.3e" % fmax)
print("coulomb_force_rel_rms %.3e" % fcoul)
print("noncoulomb_force_rel_rms %.3e" % fnoncoul)
print("total_force_target_met %s" % ("yes" if frel <= 1e-5 else "no"))
ok = erel <= 1e-6 and fcoul <= 1e-5
print("targets_met %s" % ("yes" if ok else "no"))
sys.exit(0 if ok or sys.argv[9] != "1" else 3)
EOF
{
    echo "pme_mdrun_wall_s $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')"
    echo "fmm_grompp_mdrun_wall_s $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.2f", b-a}')"
    echo "fmm_log ${fmm_line:-none}"
    echo "fmm_ntmpi $NTMPI ntomp $NT"
    echo "date $(date -u +%Y-%m-%dT%H:%MZ) host $(hostname) loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >> summary.txt
cat summary.txt
exit $rc
