#!/usr/bin/env bash
# plugin/tests/check_errors_gmx2022.sh - the GROMACS 2022.5 FMM module refuses what it cannot do, with a clear message.
#
# Usage: plugin/tests/check_errors_gmx2022.sh GMX   (a GROMACS 2022.5 built with --gromacs 2022.5)
#
# Each case must fail (grompp or mdrun exit status != 0) AND print the expected message; one
# case (or more) for every refusal that docs/gromacs.md lists:
#   coulombtype = PME                      -> "needs coulombtype = Cut-off"
#   pbc = xy                               -> "needs pbc = xyz"
#   walls (nwall = 2, pbc = xy)            -> "does not support walls"
#   rectangular (non-cubic) box            -> "needs a cubic box"
#   triclinic box                          -> "does not support triclinic boxes"
#   free-energy perturbed charges          -> "does not support free-energy perturbed charges"
#   free-energy perturbed 1-4 pair         -> "does not support perturbed 1-4 pair parameters"
#   semi-isotropic, anisotropic p-coupling -> "only isotropic pressure coupling"
#   epsilon-r = 0, inf, nan                -> "epsilon-r = 0; the FMM needs a finite epsilon-r > 0"
#   integrator = tpi                       -> "does not support integrator = tpi"
#   electric-field-x                       -> "does not support electric-field-x/y/z"
#   polarization (a shell)                 -> "does not support polarization"
#   fmm-tolerance 0.1, 1e-13, nan          -> "fmm-tolerance = 0.1 is outside"
#   fmm-order 51, -1                       -> "fmm-order = 51: use 0 (automatic) or 1 .. 50"
#   fmm-tree-depth 21, -2                  -> "fmm-tree-depth = 21: use -1 (adaptive) or 0 .. 20"
#   fmm-epsilon-r -2, inf, nan             -> "fmm-epsilon-r = -2: use a finite value > 0"
#   fmm-precision = mixed on the CPU       -> "fmm-precision = mixed needs fmm-device = cuda"
#   fmm-precision = mixed, tolerance 1e-6  -> "fmm-tolerance = 1e-06 is below 1e-05"
#   mdrun with 2 thread-MPI ranks          -> "runs on one rank only"
#   mdrun, vacuum boundary, net charge     -> "fmm_execute failed: ... net charge"
#   mdrun, fmm-device = cuda               -> "fmm_makeplan failed: CUDA device requested"
#                                             (only where GROMACS is built without GPU support)
# and the plain case must pass grompp. Takes ~15 s. Exit status: number of failed cases.
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

MDP=$S/mdp/gmx2022/rerun_fmm.mdp
grompp() { $GMX -quiet grompp -f "$1" -c "$2" -p "${3:-$S/water_3k.top}" -o "${4:-x.tpr}" -po mdout.mdp; }
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
# refused_mdrun NAME "message" SED [TOP]: grompp must pass, a rerun of one frame must fail with the message
refused_mdrun() {
    mdp "$1" "$3"
    if grompp "$1.mdp" "$S/water_3k.gro" "${4:-$S/water_3k.top}" "$1.tpr" > "$1.grompp.out" 2>&1; then
        expect "$1" "$2" $GMX -quiet mdrun -ntmpi 1 -ntomp 1 -s "$1.tpr" -rerun "$S/water_3k.gro" -deffnm "$1"
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
refused coulombtype "needs coulombtype = Cut-off" 's/^coulombtype .*/coulombtype = PME/'
refused pbc_xy "needs pbc = xyz" 's/^pbc .*/pbc = xy/'
refused walls "does not support walls" 's/^pbc .*/pbc = xy/' \
    "$(printf 'nwall = 2\nwall-atomtype = opls_116 opls_116\nwall-type = 9-3\nwall-density = 100 100')"
$GMX -quiet editconf -f "$S/water_3k.gro" -o rect.gro -box 3.1052 3.1052 3.2 > /dev/null 2>&1
expect rectangular "needs a cubic box" grompp "$MDP" rect.gro
$GMX -quiet editconf -f "$S/water_3k.gro" -o tric.gro -bt triclinic -box 3.1052 3.1052 3.1052 -angles 90 90 80 > /dev/null 2>&1
expect triclinic "does not support triclinic boxes" grompp "$MDP" tric.gro
refused semiisotropic "only isotropic pressure coupling" '' \
    "$(printf 'pcoupl = c-rescale\npcoupltype = semiisotropic\ntau-p = 5\nref-p = 1 1\ncompressibility = 4.5e-5 4.5e-5')"
refused anisotropic "only isotropic pressure coupling" '' \
    "$(printf 'pcoupl = c-rescale\npcoupltype = anisotropic\ntau-p = 5\nref-p = 1 1 1 0 0 0\ncompressibility = 4.5e-5 4.5e-5 4.5e-5 0 0 0')"
refused epsilon_r_zero "epsilon-r = 0; the FMM needs a finite epsilon-r > 0" 's/^epsilon-r .*/epsilon-r = 0/'
refused epsilon_r_inf "epsilon-r = inf; the FMM needs a finite epsilon-r > 0" 's/^epsilon-r .*/epsilon-r = inf/'
refused epsilon_r_nan "epsilon-r = nan; the FMM needs a finite epsilon-r > 0" 's/^epsilon-r .*/epsilon-r = nan/'
refused tpi "does not support integrator = tpi" 's/^integrator .*/integrator = tpi/' \
    "$(printf 'rtpi = 0.05\ntc-grps = System\ntau-t = 0.1\nref-t = 300')"
refused electric_field "does not support electric-field-x/y/z" '' 'electric-field-x = 1 0 0 0'

# ---- the module's options
refused tolerance "fmm-tolerance = 0.1 is outside" 's/^fmm-tolerance .*/fmm-tolerance = 0.1/'
refused tolerance_small "fmm-tolerance = 1e-13 is outside" 's/^fmm-tolerance .*/fmm-tolerance = 1e-13/'
refused tolerance_nan "fmm-tolerance = nan is outside" 's/^fmm-tolerance .*/fmm-tolerance = nan/'
refused order_high "fmm-order = 51: use 0 (automatic) or 1 .. 50" '' 'fmm-order = 51'
refused order_negative "fmm-order = -1: use 0 (automatic) or 1 .. 50" '' 'fmm-order = -1'
refused depth_high "fmm-tree-depth = 21: use -1 (adaptive) or 0 .. 20" '' 'fmm-tree-depth = 21'
refused depth_low "fmm-tree-depth = -2: use -1 (adaptive) or 0 .. 20" '' 'fmm-tree-depth = -2'
refused fmm_epsilon_r_negative "fmm-epsilon-r = -2: use a finite value > 0" '' 'fmm-epsilon-r = -2'
refused fmm_epsilon_r_inf "fmm-epsilon-r = inf: use a finite value > 0" '' 'fmm-epsilon-r = inf'
refused fmm_epsilon_r_nan "fmm-epsilon-r = nan: use a finite value > 0" '' 'fmm-epsilon-r = nan'
refused mixed_cpu "fmm-precision = mixed needs fmm-device = cuda" 's/^fmm-precision .*/fmm-precision = mixed/'
refused mixed_tolerance "fmm-precision = mixed: fmm-tolerance = 1e-06 is below 1e-05" \
    's/^fmm-precision .*/fmm-precision = mixed/;s/^fmm-device .*/fmm-device = cuda/;s/^fmm-tolerance .*/fmm-tolerance = 1e-6/'

# ---- topologies
water_top fep <<'END'
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
refused free_energy "does not support free-energy perturbed charges" '' "$FEP" fep.top

# the H-H pair of one water as a 1-4 pair (sigma, epsilon given) whose B state differs
water_top pair14 <<'END'
[ moleculetype ]
SOLX 2
[ atoms ]
1 opls_116 1 SOL OW 1 -0.8476 15.9994
2 opls_117 1 SOL HW1 1 0.4238 1.008
3 opls_117 1 SOL HW2 1 0.4238 1.008
[ settles ]
1 1 0.1 0.16330
[ pairs ]
2 3 1 0.1 0.2 0.1 0.3
[ exclusions ]
1 2 3
2 1 3
3 1 2
END
refused pair14_perturbed "does not support perturbed 1-4 pair parameters" '' "$FEP" pair14.top

# the second hydrogen of one water a shell on its oxygen (polarizability 0.001 nm^3)
water_top polarization <<'END'
[ atomtypes ]
SHW 0 0.0 0.0 S 0 0
[ moleculetype ]
SOLX 2
[ atoms ]
1 opls_116 1 SOL OW 1 -0.8476 15.9994
2 opls_117 1 SOL HW1 1 0.4238 1.008
3 SHW 1 SOL HW2 1 0.4238 0
[ bonds ]
1 2 1 0.1 345000
[ polarization ]
1 3 1 0.001
[ exclusions ]
1 2 3
2 1 3
3 1 2
END
refused polarization "does not support polarization" '' '' polarization.top

# ---- mdrun
if [ -f ok.tpr ]; then
    expect two_ranks "runs on one rank only" \
        $GMX -quiet mdrun -ntmpi 2 -ntomp 1 -s ok.tpr -rerun "$S/water_3k.gro" -deffnm two
fi
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
    's/^fmm-boundary .*/fmm-boundary = vacuum/;s/^fmm-tolerance .*/fmm-tolerance = 1e-3/' charged.top
if [ "$GMXGPU" = disabled ]; then
    refused_mdrun cuda_unavailable "fmm_makeplan failed: CUDA device requested" \
        's/^fmm-device .*/fmm-device = cuda/;s/^fmm-tolerance .*/fmm-tolerance = 1e-3/'
fi
echo "check_errors.sh: $failures failed"
exit "$failures"
