#!/usr/bin/env bash
# make_water_systems.sh - the SPC/E water systems of the benchmarks, made with Debian's GROMACS
# (gmx 2022.5) on 2 threads. Extends make_spce_box.sh (which makes the unequilibrated boxes).
#
# Usage: systems/water/make_water_systems.sh [-o OUTDIR] [TARGET...]
#   OUTDIR   default systems/water/build (git-ignored)
#   TARGET   any of 24k 100k 1m droplet (default: all four)
#
#   24k      gmx solvate, NX=20 (L = 6.2103 nm, 7793 molecules, 23379 atoms); steepest descent
#            (em.mdp); NVT 5 ps, PME, SETTLE, v-rescale 300 K (nvt_equil.mdp). ~4 min.
#   100k     a 12.3k-atom box (NX=16, L = 4.9683 nm) made and equilibrated the same way, tiled
#            2x2x2 by water_tools.py tile -> L = 9.9366 nm, ~98k atoms. ~2 min.
#   1m       an 8.4k-atom box (NX=14, L = 4.3472 nm) made and equilibrated the same way, tiled
#            5x5x5 -> L = 21.736 nm, ~1.0M atoms. ~1.5 min.
#   droplet  the molecules whose oxygen is within 2.0 nm of the centre of the 24k box, whole,
#            centred in a 10 nm cubic box (vacuum around it). Uses OUTDIR/spce_24k.gro when it
#            exists, else the bundled systems/water/spce_24k.gro.
#
# Each system NAME gets OUTDIR/NAME.gro, NAME.top (oplsaa.ff + spce.itp), NAME.xyzq ("x y z q",
# first line "# box L L L", nm and e); the equilibrated tiles are kept as tile_nxNX.* and the
# md.log files under OUTDIR/logs/.
#
# Tiled boxes are exactly periodic with the period of their tile (coordinates written with 5
# decimals so x + k L stays exact): every copy of an atom has the same periodic potential as in
# the tile, which gives an exact reference for the 100k and 1M boxes from the tile's Ewald sum.
# The density is that of gmx solvate (about 32.5 molecules/nm^3, 2.6% below liquid water:
# solvate leaves gaps at the box faces; no pressure coupling was run).
#
# Environment: NVT_STEPS (default 2500 = 5 ps), GMX (default gmx), NT (threads, default 2).
# MD on 2 OpenMP threads with -reprod is deterministic for one machine and build; another CPU
# or GROMACS build can give a different (statistically equivalent) trajectory, so the bundled
# spce_24k.* and spce_droplet_r2.* are the reference copies.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=$HERE/build
while getopts "o:h" opt; do
    case $opt in
        o) OUTDIR=$OPTARG ;;
        *) sed -n '2,30p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
TARGETS=${*:-24k 100k 1m droplet}
for t in $TARGETS; do
    case $t in 24k | 100k | 1m | droplet) ;; *) echo "unknown target $t" >&2; exit 2 ;; esac
done

GMX=${GMX:-gmx}
NT=${NT:-2}
NVT_STEPS=${NVT_STEPS:-2500}
MDP=$HERE/mdp
TOOLS="python3 $HERE/water_tools.py"
command -v "$GMX" >/dev/null || { echo "$GMX not found (apt-get install gromacs)" >&2; exit 1; }
GMXDATA=$($GMX --version 2>/dev/null | awk -F': *' '/^Data prefix/ {print $2; exit}')
export GMXLIB=${GMXDATA:-/usr}/share/gromacs/top
mkdir -p "$OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)

log() { echo "make_water_systems: $*" >&2; }

# equilibrate NX NAME: solvate (make_spce_box.sh), minimise, NVT; -> OUTDIR/NAME.{gro,top,xyzq}
equilibrate() {
    local nx=$1 name=$2 w
    w=$(mktemp -d)
    "$HERE/make_spce_box.sh" "$w" "$nx" raw
    sed "s/^nsteps .*/nsteps                   = $NVT_STEPS/" "$MDP/nvt_equil.mdp" >"$w/nvt.mdp"
    (
        cd "$w"
        $GMX -quiet grompp -f "$MDP/em.mdp" -c raw.gro -p raw.top -o em.tpr >grompp_em.log 2>&1
        $GMX -quiet mdrun -nt "$NT" -reprod -s em.tpr -deffnm em >mdrun_em.log 2>&1
        $GMX -quiet grompp -f nvt.mdp -c em.gro -p raw.top -o nvt.tpr >grompp_nvt.log 2>&1
        $GMX -quiet mdrun -nt "$NT" -reprod -s nvt.tpr -deffnm nvt >mdrun_nvt.log 2>&1
    ) || { log "GROMACS failed in $w"; tail -20 "$w"/*.log >&2; exit 1; }
    cp "$w/em.log" "$OUTDIR/logs/$name.em.log"
    cp "$w/nvt.log" "$OUTDIR/logs/$name.nvt.log"
    # title line: say what it is
    { echo "SPC/E water NX=$nx: gmx solvate, steep, NVT $NVT_STEPS x 2 fs v-rescale 300 K"; tail -n +2 "$w/nvt.gro"; } \
        >"$OUTDIR/$name.gro"
    $TOOLS top "$OUTDIR/$name.gro" "$OUTDIR/$name.top"
    $TOOLS xyzq "$OUTDIR/$name.gro" "$OUTDIR/$name.xyzq"
    rm -rf "$w"
    log "$name: $(sed -n 2p "$OUTDIR/$name.gro" | tr -d ' ') atoms, box $(tail -1 "$OUTDIR/$name.gro" | awk '{print $1}') nm"
}

tiled() { # tiled NX N NAME
    local nx=$1 n=$2 name=$3
    [ -f "$OUTDIR/tile_nx$nx.gro" ] || equilibrate "$nx" "tile_nx$nx"
    $TOOLS tile "$OUTDIR/tile_nx$nx.gro" "$n" "$OUTDIR/$name.gro"
    $TOOLS top "$OUTDIR/$name.gro" "$OUTDIR/$name.top"
    $TOOLS xyzq "$OUTDIR/$name.gro" "$OUTDIR/$name.xyzq" \
        --comment "exactly periodic: ${n}x${n}x${n} copies of tile_nx$nx.gro (equilibrated NX=$nx box)"
    log "$name: $(sed -n 2p "$OUTDIR/$name.gro" | tr -d ' ') atoms, box $(tail -1 "$OUTDIR/$name.gro" | awk '{print $1}') nm"
}

for t in $TARGETS; do
    case $t in
        24k) equilibrate 20 spce_24k ;;
        100k) tiled 16 2 spce_100k ;;
        1m) tiled 14 5 spce_1m ;;
        droplet)
            src=$OUTDIR/spce_24k.gro
            [ -f "$src" ] || src=$HERE/spce_24k.gro
            $TOOLS droplet "$src" 2.0 10.0 "$OUTDIR/spce_droplet_r2.gro"
            $TOOLS top "$OUTDIR/spce_droplet_r2.gro" "$OUTDIR/spce_droplet_r2.top"
            $TOOLS xyzq "$OUTDIR/spce_droplet_r2.gro" "$OUTDIR/spce_droplet_r2.xyzq" \
                --comment "droplet in vacuum: use with --box 10 (open) or --periodic --box 10"
            # grompp must accept it (topology and coordinates agree)
            (cd "$OUTDIR" && $GMX -quiet grompp -f "$MDP/pme_tight.mdp" -c spce_droplet_r2.gro \
                -p spce_droplet_r2.top -o "$OUTDIR/logs/droplet_check.tpr" -po "$OUTDIR/logs/droplet_check.mdp" \
                >"$OUTDIR/logs/droplet_grompp.log" 2>&1) || { log "grompp rejected the droplet"; exit 1; }
            rm -f "$OUTDIR/logs/droplet_check.tpr"
            log "spce_droplet_r2 from $src"
            ;;
    esac
done
