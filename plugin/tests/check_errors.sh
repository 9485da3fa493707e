#!/usr/bin/env bash
# plugin/tests/check_errors.sh - the FMM module refuses what it cannot do, with a clear message.
#
# Usage: plugin/tests/check_errors.sh [GMX]      (default build-gromacs/install/bin/gmx)
#
# Each case must fail (grompp or mdrun exit status != 0) AND print the expected message:
#   coulombtype = PME with fmm-active      -> "needs coulombtype = Cut-off"
#   rectangular (non-cubic) box            -> "needs a cubic box"
#   triclinic box                          -> "does not support triclinic boxes"
#   free-energy perturbed charges          -> "does not support free-energy perturbed charges"
#   semi-isotropic pressure coupling       -> "only isotropic pressure coupling"
#   fmm-tolerance out of range             -> "fmm-tolerance = 0.1 is outside"
#   fmm-precision = mixed on the CPU       -> "fmm-precision = mixed needs fmm-device = cuda"
#   mdrun with 2 thread-MPI ranks          -> "runs on one rank only"
# and the plain case must pass grompp. Takes ~10 s. Exit status: number of failed cases.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
GMX=$(realpath "${1:-$REPO/build-gromacs/install/bin/gmx}")
S=$REPO/systems/gromacs
GMXDATA=$($GMX --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
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
    elif tr '\n' ' ' < "$name.out" | tr -s ' ' | grep -q "$msg"; then
        echo "ok   $name: refused ($msg)"
    else
        echo "FAIL $name: failed without the expected message ($msg):"
        tail -15 "$name.out"
        failures=$((failures + 1))
    fi
}

MDP=$S/mdp/rerun_fmm.mdp
grompp() { $GMX -quiet grompp -f "$1" -c "$2" -p "${3:-$S/water_3k.top}" -o "${4:-x.tpr}" -po mdout.mdp; }

if grompp "$MDP" "$S/water_3k.gro" "$S/water_3k.top" ok.tpr > ok.out 2>&1; then
    echo "ok   plain: grompp accepts the FMM set-up"
else
    echo "FAIL plain: grompp refused the plain FMM set-up"; tail -15 ok.out; failures=$((failures + 1))
fi

sed 's/^coulombtype .*/coulombtype = PME/' "$MDP" > pme.mdp
expect coulombtype "needs coulombtype = Cut-off" grompp pme.mdp "$S/water_3k.gro"

$GMX -quiet editconf -f "$S/water_3k.gro" -o rect.gro -box 3.1052 3.1052 3.2 > /dev/null 2>&1
expect rectangular "needs a cubic box" grompp "$MDP" rect.gro

$GMX -quiet editconf -f "$S/water_3k.gro" -o tric.gro -bt triclinic -box 3.1052 3.1052 3.1052 -angles 90 90 80 > /dev/null 2>&1
expect triclinic "does not support triclinic boxes" grompp "$MDP" tric.gro

cat > fep.top <<'EOF'
#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spce.itp"
[ moleculetype ]
SOLB 2
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
[ system ]
one perturbed water
[ molecules ]
SOLB 1
SOL 977
EOF
(cat "$MDP"; echo "free-energy = yes"; echo "init-lambda = 0") > fep.mdp
expect free_energy "does not support free-energy perturbed charges" grompp fep.mdp "$S/water_3k.gro" fep.top

(sed 's/^continuation .*/continuation = yes/' "$MDP"; printf 'pcoupl = c-rescale\npcoupltype = semiisotropic\ntau-p = 5\nref-p = 1 1\ncompressibility = 4.5e-5 4.5e-5\n') > semi.mdp
expect semiisotropic "only isotropic pressure coupling" grompp semi.mdp "$S/water_3k.gro"

sed 's/^fmm-tolerance .*/fmm-tolerance = 0.1/' "$MDP" > tol.mdp
expect tolerance "fmm-tolerance = 0.1 is outside" grompp tol.mdp "$S/water_3k.gro"

sed "s/^fmm-precision .*/fmm-precision = mixed/" "$MDP" > mixed.mdp
expect mixed_cpu "fmm-precision = mixed needs fmm-device = cuda" grompp mixed.mdp "$S/water_3k.gro"

if [ -f ok.tpr ]; then
    expect two_ranks "runs on one rank only" \
        $GMX -quiet mdrun -ntmpi 2 -ntomp 1 -s ok.tpr -rerun "$S/water_3k.gro" -deffnm two
fi
echo "check_errors.sh: $failures failed"
exit "$failures"
