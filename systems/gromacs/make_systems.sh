#!/usr/bin/env bash
# make_systems.sh - the GROMACS inputs of the FMM plugin (plugin/, docs/gromacs.md), made with
# Debian's GROMACS 2022.5 (`gmx`, mixed precision) on 2 threads.
#
# Usage: systems/gromacs/make_systems.sh [-o OUTDIR] [TARGET...]
#   OUTDIR   default systems/gromacs
#   TARGET   any of water_3k water_24k peptide villin_dodec water_slab water_rect13 water_tric
#            (default: all)
#
#   water_3k   systems/water/spce_3k.gro (gmx solvate, 978 SPC/E) + steepest descent + NVT 20 ps
#              (v-rescale 300 K, PME, SETTLE): water_3k.gro with velocities. ~1 min.
#   water_24k  systems/water/spce_24k.gro as it is (already minimised and NVT-equilibrated,
#              with velocities): water_24k.gro. Instant.
#   peptide    GKADSAKEAG (make_peptide_pdb.py: extended, heavy atoms), pdb2gmx -ff oplsaa
#              -water spce -ignh (NH3+/COO- termini), cubic box 1.0 nm around it, SPC/E water,
#              genion -neutral -conc 0.15 (NA, CL), steepest descent (1000 steps; no MD: it
#              is a single-frame test system): peptide.gro/.top/posre.itp. 1-4 pairs (fudgeQQ 0.5), exclusions
#              up to 3 bonds, ions. ~3 min.
#   villin_dodec  villin headpiece (villin_heavy.pdb: 35 residues, heavy atoms, from the test data
#              of the PyPI wheel openmm 8.6.1, see its REMARK lines), pdb2gmx -ff oplsaa -water spce
#              -ignh, rhombic dodecahedron 1.0 nm around it (editconf -bt dodecahedron), SPC/E,
#              genion -neutral -conc 0.15, steepest descent + NVT 20 ps: villin_dodec.gro/.top,
#              posre_villin.itp. ~10 min.
#   water_slab water liquid-vapour slab: SPC/E 3.2 nm cube (gmx solvate) centred in a 3.2 x 3.2 x 9.6
#              nm cell (aspect 1:1:3, two interfaces) + steepest descent + NVT 20 ps. ~3 min.
#   water_rect13  water filling a 2.8 x 2.8 x 8.4 nm cell (aspect 1:1:3; for semi-isotropic pressure
#              coupling) + steepest descent + NVT 20 ps. ~3 min.
#   water_tric water filling a triclinic cell (a = b = c = 3.1052 nm, gamma 80 deg; gmx solvate into
#              the empty cell, so no atom overlaps an image) + steepest descent + NVT 20 ps. ~3 min.
# Each system NAME: NAME.gro, NAME.top; logs under OUTDIR/logs/. mdp files: mdp/.
# Environment: GMX (default gmx), NT (threads, default 2), NVT_NSTEPS (NVT steps instead of the
# mdp's 10000, for a loaded machine; the systems shipped here say in logs/ how many they had).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=$HERE
while getopts "o:h" opt; do
    case $opt in
        o) OUTDIR=$OPTARG ;;
        *) sed -n '2,22p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(water_3k water_24k peptide villin_dodec water_slab water_rect13 water_tric)
GMX=${GMX:-gmx}
NT=${NT:-2}
mkdir -p "$OUTDIR/logs"
OUTDIR=$(realpath "$OUTDIR")
WATER=$HERE/../water
MDP=$HERE/mdp
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

run() { # run LOGNAME cmd... : quiet, log kept, tail on failure
    local name=$1; shift
    if ! "$@" >"$OUTDIR/logs/$name.out" 2>&1; then
        tail -30 "$OUTDIR/logs/$name.out" >&2
        echo "make_systems.sh: $name failed" >&2
        exit 1
    fi
}

equilibrate() { # equilibrate NAME GRO TOP [em] : EM + NVT (EM only with "em"), result $OUTDIR/NAME.gro
    local name=$1 gro=$2 top=$3 what=${4:-nvt}
    (cd "$TMP" &&
        run "${name}_em_grompp" $GMX -quiet grompp -f "$MDP/em.mdp" -c "$gro" -p "$top" -o em.tpr -po em.mdp -maxwarn 1 &&
        run "${name}_em" $GMX -quiet mdrun -nt "$NT" -s em.tpr -deffnm em &&
        if [ "$what" = em ]; then cp em.gro "$OUTDIR/$name.gro"; exit 0; fi &&
        run "${name}_nvt_grompp" $GMX -quiet grompp -f "$MDP/nvt_equil.mdp" -c em.gro -p "$top" -o nvt.tpr -po nvt.mdp &&
        run "${name}_nvt" $GMX -quiet mdrun -nt "$NT" -reprod ${NVT_NSTEPS:+-nsteps "$NVT_NSTEPS"} -s nvt.tpr -deffnm nvt &&
        cp nvt.log "$OUTDIR/logs/${name}_nvt.log" &&
        cp nvt.gro "$OUTDIR/$name.gro")
}

for t in "${TARGETS[@]}"; do
    case $t in
        water_3k)
            cp "$WATER/spce_3k.top" "$OUTDIR/water_3k.top"
            equilibrate water_3k "$WATER/spce_3k.gro" "$OUTDIR/water_3k.top"
            ;;
        water_24k)
            cp "$WATER/spce_24k.gro" "$OUTDIR/water_24k.gro"
            cp "$WATER/spce_24k.top" "$OUTDIR/water_24k.top"
            ;;
        peptide)
            (cd "$TMP" &&
                python3 "$HERE/make_peptide_pdb.py" GKADSAKEAG > peptide.pdb &&
                run peptide_pdb2gmx $GMX -quiet pdb2gmx -f peptide.pdb -o pep.gro -p peptide.top -i posre.itp -ff oplsaa -water spce -ignh &&
                run peptide_editconf $GMX -quiet editconf -f pep.gro -o box.gro -bt cubic -d 1.0 -c &&
                run peptide_solvate $GMX -quiet solvate -cp box.gro -cs spc216.gro -p peptide.top -o solv.gro &&
                run peptide_ions_grompp $GMX -quiet grompp -f "$MDP/ions.mdp" -c solv.gro -p peptide.top -o ions.tpr -maxwarn 1 &&
                { echo SOL | run peptide_genion $GMX -quiet genion -s ions.tpr -o ions.gro -p peptide.top \
                      -pname NA -nname CL -neutral -conc 0.15 -seed 20251122; } &&
                cp peptide.top posre.itp "$OUTDIR/" &&
                cp peptide.pdb "$OUTDIR/peptide_heavy.pdb")
            sed -i "s#^; Include Position restraint file#; Include Position restraint file (posre.itp next to this file)#" "$OUTDIR/peptide.top"
            equilibrate peptide "$TMP/ions.gro" "$OUTDIR/peptide.top" em
            ;;
        villin_dodec)
            (cd "$TMP" &&
                run villin_pdb2gmx $GMX -quiet pdb2gmx -f "$HERE/villin_heavy.pdb" -o villin.gro -p villin_dodec.top -i posre_villin.itp -ff oplsaa -water spce -ignh &&
                run villin_editconf $GMX -quiet editconf -f villin.gro -o box.gro -bt dodecahedron -d 1.0 -c &&
                run villin_solvate $GMX -quiet solvate -cp box.gro -cs spc216.gro -p villin_dodec.top -o solv.gro &&
                run villin_ions_grompp $GMX -quiet grompp -f "$MDP/ions.mdp" -c solv.gro -p villin_dodec.top -o ions.tpr -maxwarn 1 &&
                { echo SOL | run villin_genion $GMX -quiet genion -s ions.tpr -o ions.gro -p villin_dodec.top \
                      -pname NA -nname CL -neutral -conc 0.15 -seed 20261128; } &&
                cp villin_dodec.top posre_villin.itp "$OUTDIR/")
            sed -i "s#^; Include Position restraint file#; Include Position restraint file (posre_villin.itp next to this file)#" "$OUTDIR/villin_dodec.top"
            equilibrate villin_dodec "$TMP/ions.gro" "$OUTDIR/villin_dodec.top"
            ;;
        water_slab | water_rect13 | water_tric)
            (cd "$TMP" &&
                case $t in
                    water_slab)
                        run ${t}_solvate $GMX -quiet solvate -cs spc216.gro -box 3.2 3.2 3.2 -o cube.gro &&
                        run ${t}_editconf $GMX -quiet editconf -f cube.gro -o solv.gro -box 3.2 3.2 9.6 -c ;;
                    water_rect13)
                        run ${t}_solvate $GMX -quiet solvate -cs spc216.gro -box 2.8 2.8 8.4 -o solv.gro ;;
                    water_tric)
                        # an empty cell: solvate fills it with the cell's own periodicity
                        printf 'empty triclinic cell\n0\n%s\n' "   3.10520   3.05803   3.10520   0.00000   0.00000   0.53921   0.00000   0.00000   0.00000" > empty.gro &&
                        run ${t}_solvate $GMX -quiet solvate -cp empty.gro -cs spc216.gro -o solv.gro ;;
                esac &&
                printf '; SPC/E water, cell %s nm (systems/gromacs/make_systems.sh %s)\n#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spce.itp"\n\n[ system ]\nSPC/E water %s\n\n[ molecules ]\nSOL     %d\n' \
                    "$(tail -1 solv.gro | xargs)" "$t" "$t" $(($(sed -n 2p solv.gro) / 3)) > "$OUTDIR/$t.top")
            equilibrate $t "$TMP/solv.gro" "$OUTDIR/$t.top"
            ;;
        *) echo "make_systems.sh: unknown target $t" >&2; exit 2 ;;
    esac
    n=$(sed -n 2p "$OUTDIR/$t.gro" | tr -d ' ')
    echo "$t: $n atoms, box $(tail -1 "$OUTDIR/$t.gro" | awk '{print $1, $2, $3}') nm -> $OUTDIR/$t.gro"
done
