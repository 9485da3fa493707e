#!/usr/bin/env bash
# plugin/tests/check_errors.sh - GROMACS main with the fmmlib FMM backend refuses what it cannot
# do, with a clear message.
#
# Usage: plugin/tests/check_errors.sh [GMX]      (default build-gromacs/install/bin/gmx)
#
# Each case must fail (grompp or mdrun exit status != 0) AND print the expected message; one
# case (or more) for every refusal that docs/gromacs.md lists:
#   coulombtype = PME with fmm-backend     -> "FMM requires Coulomb interaction type to be FMM"
#   coulombtype = FMM without a backend    -> "coulombtype = FMM needs an FMM backend"
#   walls (nwall = 2, pbc = xy)            -> "needs pbc = xyz"
#   pbc = xy                               -> "With Verlet lists only full pbc or pbc=xy with walls"
#                                             (GROMACS's own check, before the backend's)
#   free-energy perturbed charge, type     -> "does not support free-energy perturbed atoms"
#   epsilon-r = 0, inf                     -> "needs a finite epsilon-r > 0"
#   integrator = tpi                       -> "TPI does not work with full electrostatics other than PME"
#                                             (GROMACS's own check)
#   fmm-fmmlib-tolerance 0.1, 1e-13        -> "fmm-fmmlib-tolerance = 0.1 is outside"
#   fmm-fmmlib-order 51, -1                -> "fmm-fmmlib-order = 51: use 0"
#   fmm-fmmlib-tree-depth 21, -2           -> "fmm-fmmlib-tree-depth = 21: use -1"
#   fmm-fmmlib-epsilon-r -2, inf           -> "fmm-fmmlib-epsilon-r = -2: use a finite value > 0"
#   fmm-fmmlib-precision = mixed on the CPU -> "fmm-fmmlib-precision = mixed needs fmm-fmmlib-device = cuda"
#   mixed with tolerance 1e-6              -> "fmm-fmmlib-tolerance = 1e-06 is below 1e-05"
#   mdrun, vacuum boundary, net charge     -> "fmm_execute failed: ... net charge"
#                                             (on one rank, and on two: the main rank's failure
#                                             stops both)
#   mdrun, fmm-fmmlib-device = cuda        -> "fmm_makeplan_cell failed: CUDA device requested"
#                                             (only where the fmm library has no CUDA)
# and the plain case, a rectangular and a triclinic box must pass grompp (the library takes every
# cell GROMACS allows, fmm_makeplan_cell). Takes ~40 s on 2 loaded cores. Exit status: number of failed cases.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
GMX=$(realpath "${1:-$REPO/build-gromacs/install/bin/gmx}")
S=$REPO/systems/gromacs
GMXDATA=$($GMX --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
GMXGPU=$($GMX --version 2>/dev/null | awk -F': *' '/^GPU support/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
failures=0

expect() { # expect NAME "message" cmd...
    local name=$1 msg=$2
    shift 2
    if "$@" > "$name.out" 2>&1; then
        echo "FAIL $name: succeeded, expected an error ($msg)"
        failures=$((failures + 1))
    elif tr '\n' ' ' < "$name.out" | tr -s ' ' | grep -q -- "$msg"; then
        echo "ok   $name: refused ($msg)"
    else
        echo "FAIL $name: failed without the expected message ($msg):"
        tail -15 "$name.out"
        failures=$((failures + 1))
    fi
}

MDP=$S/mdp/rerun_fmm.mdp
grompp() { $GMX -quiet grompp -f "$1" -c "$2" -p "${3:-$S/water_3k.top}" -o "${4:-x.tpr}" -po mdout.mdp "${@:5}"; }
# mdp NAME [SED [LINES]]: NAME.mdp, the plain mdp edited by the sed script SED, LINES appended
mdp() {
    sed "${2:-}" "$MDP" > "$1.mdp"
    if [ -n "${3:-}" ]; then printf '%s\n' "$3" >> "$1.mdp"; fi
}
# refused NAME "message" [SED [LINES [TOP]]]: grompp of NAME.mdp (see mdp) must fail with the message
refused() {
    mdp "$1" "${3:-}" "${4:-}"
    expect "$1" "$2" grompp "$1.mdp" "$S/water_3k.gro" "${5:-$S/water_3k.top}"
}
# refused_mdrun NAME "message" SED [TOP]: grompp must pass (-maxwarn 1: GROMACS warns about a net
# charge), then a rerun of one frame on NTMPI thread-MPI ranks (default 1) must fail with the message
refused_mdrun() {
    mdp "$1" "$3"
    if grompp "$1.mdp" "$S/water_3k.gro" "${4:-$S/water_3k.top}" "$1.tpr" -maxwarn 1 > "$1.grompp.out" 2>&1; then
        expect "$1" "$2" $GMX -quiet mdrun -ntmpi "${NTMPI:-1}" -ntomp 1 -s "$1.tpr" -rerun "$S/water_3k.gro" -deffnm "$1"
    else
        echo "FAIL $1: grompp refused the set-up that mdrun should refuse:"
        tail -15 "$1.grompp.out"
        failures=$((failures + 1))
    fi
}
# water_top NAME: NAME.top, one changed water (its [ moleculetype ] SOLX and whatever precedes it,
# read from stdin) and 977 SPC/E waters, the atoms of systems/gromacs/water_3k.gro
water_top() {
    {
        echo '#include "oplsaa.ff/forcefield.itp"'
        cat
        echo '#include "oplsaa.ff/spce.itp"'
        printf '[ system ]\n%s\n[ molecules ]\nSOLX 1\nSOL 977\n' "$1"
    } > "$1.top"
}
FEP=$(printf 'free-energy = yes\ninit-lambda = 0')

if grompp "$MDP" "$S/water_3k.gro" "$S/water_3k.top" ok.tpr > ok.out 2>&1; then
    echo "ok   plain: grompp accepts the FMM set-up"
else
    echo "FAIL plain: grompp refused the plain FMM set-up"; tail -15 ok.out; failures=$((failures + 1))
fi

# ---- run parameters
refused coulombtype "FMM requires Coulomb interaction type to be FMM" 's/^coulombtype .*/coulombtype = PME/'
refused no_backend "coulombtype = FMM needs an FMM backend" 's/^fmm-backend .*/fmm-backend = inactive/'
refused pbc_xy "With Verlet lists only full pbc or pbc=xy with walls" 's/^pbc .*/pbc = xy/'
refused walls "needs pbc = xyz" 's/^pbc .*/pbc = xy/' \
    "$(printf 'nwall = 2\nwall-atomtype = opls_116 opls_116\nwall-type = 9-3\nwall-density = 100 100\newald-geometry = 3dc')"
$GMX -quiet editconf -f "$S/water_3k.gro" -o rect.gro -box 3.1052 3.1052 3.2 > /dev/null 2>&1
$GMX -quiet editconf -f "$S/water_3k.gro" -o tric.gro -bt triclinic -box 3.1052 3.1052 3.1052 -angles 90 90 80 > /dev/null 2>&1
for box in rect tric; do
    if grompp "$MDP" $box.gro "$S/water_3k.top" $box.tpr > $box.out 2>&1; then
        echo "ok   $box: grompp accepts the cell"
    else
        echo "FAIL $box: grompp refused the cell"; tail -15 $box.out; failures=$((failures + 1))
    fi
done
refused epsilon_r_zero "needs a finite epsilon-r > 0, not 0" 's/^epsilon-r .*/epsilon-r = 0/'
refused epsilon_r_inf "needs a finite epsilon-r > 0, not inf" 's/^epsilon-r .*/epsilon-r = inf/'
refused tpi "TPI does not work with full electrostatics other than PME" 's/^integrator .*/integrator = tpi/' \
    "$(printf 'rtpi = 0.05\ntc-grps = System\ntau-t = 0.1\nref-t = 300')"

# ---- the backend's options
refused tolerance "fmm-fmmlib-tolerance = 0.1 is outside" 's/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 0.1/'
refused tolerance_small "fmm-fmmlib-tolerance = 1e-13 is outside" 's/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 1e-13/'
refused order_high "fmm-fmmlib-order = 51: use 0" '' 'fmm-fmmlib-order = 51'
refused order_negative "fmm-fmmlib-order = -1: use 0" '' 'fmm-fmmlib-order = -1'
refused depth_high "fmm-fmmlib-tree-depth = 21: use -1" '' 'fmm-fmmlib-tree-depth = 21'
refused depth_low "fmm-fmmlib-tree-depth = -2: use -1" '' 'fmm-fmmlib-tree-depth = -2'
refused fmm_epsilon_r_negative "fmm-fmmlib-epsilon-r = -2: use a finite value > 0" '' 'fmm-fmmlib-epsilon-r = -2'
refused fmm_epsilon_r_inf "fmm-fmmlib-epsilon-r = inf: use a finite value > 0" '' 'fmm-fmmlib-epsilon-r = inf'
refused mixed_cpu "fmm-fmmlib-precision = mixed needs fmm-fmmlib-device = cuda" \
    's/^fmm-fmmlib-precision .*/fmm-fmmlib-precision = mixed/'
refused mixed_tolerance "fmm-fmmlib-tolerance = 1e-06 is below 1e-05" \
    's/^fmm-fmmlib-precision .*/fmm-fmmlib-precision = mixed/;s/^fmm-fmmlib-device .*/fmm-fmmlib-device = cuda/;s/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 1e-6/'

# ---- topologies: one water's charge, or its atom type, perturbed
water_top fep_charge <<'END'
[ moleculetype ]
SOLX 2
[ atoms ]
1 opls_116 1 SOL OW 1 -0.8476 15.9994 opls_116 -0.4238 15.9994
2 opls_117 1 SOL HW1 1 0.4238 1.008
3 opls_117 1 SOL HW2 1 0.4238 1.008 opls_117 0.0 1.008
[ settles ]
1 1 0.1 0.16330
[ exclusions ]
1 2 3
2 1 3
3 1 2
END
refused free_energy_charge "does not support free-energy perturbed atoms" '' "$FEP" fep_charge.top
water_top fep_type <<'END'
[ moleculetype ]
SOLX 2
[ atoms ]
1 opls_116 1 SOL OW 1 -0.8476 15.9994 opls_135 -0.8476 15.9994
2 opls_117 1 SOL HW1 1 0.4238 1.008
3 opls_117 1 SOL HW2 1 0.4238 1.008
[ settles ]
1 1 0.1 0.16330
[ exclusions ]
1 2 3
2 1 3
3 1 2
END
refused free_energy_type "does not support free-energy perturbed atoms" '' "$FEP" fep_type.top

# ---- mdrun
# net charge -0.4238 e: the second hydrogen of one water uncharged (flexible: mdrun takes one
# block of SETTLE molecules only)
water_top charged <<'END'
[ moleculetype ]
SOLX 2
[ atoms ]
1 opls_116 1 SOL OW 1 -0.8476 15.9994
2 opls_117 1 SOL HW1 1 0.4238 1.008
3 opls_117 1 SOL HW2 1 0.0 1.008
[ bonds ]
1 2 1 0.1 345000
1 3 1 0.1 345000
END
refused_mdrun vacuum_charged "fmm_execute failed: .*net charge" \
    's/^fmm-fmmlib-boundary .*/fmm-fmmlib-boundary = vacuum/;s/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 1e-3/' charged.top
# the same on two ranks: the main rank's failure stops every rank, with its message
NTMPI=2 refused_mdrun vacuum_charged_2ranks "fmm_execute failed: .*net charge" \
    's/^fmm-fmmlib-boundary .*/fmm-fmmlib-boundary = vacuum/;s/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 1e-3/' charged.top
if [ "$GMXGPU" = disabled ]; then
    refused_mdrun cuda_unavailable "fmm_makeplan_cell failed: CUDA device requested" \
        's/^fmm-fmmlib-device .*/fmm-fmmlib-device = cuda/;s/^fmm-fmmlib-tolerance .*/fmm-fmmlib-tolerance = 1e-3/'
fi
echo "check_errors.sh: $failures failed"
exit "$failures"
