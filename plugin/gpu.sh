#!/usr/bin/env bash
# plugin/gpu.sh - on the device machine (NVIDIA H100/H200, no internet): build GROMACS with CUDA
# and the FMM (GROMACS=2022.5, the default: the FMM MDModule; GROMACS=main: the fmmlib backend of
# GROMACS main's FMM module), then ns/day of the FMM on the GPU against PME on the GPU for SPC/E
# boxes of ~24k, ~100k and ~1M atoms. Results under "$OUT/gromacs/".
#
# Run from the repository root, carrying the GROMACS source tarball and the two water tiles
# (neither is in git):
#   carry: build-gromacs/src/gromacs_2022.5.orig.tar.gz        (40 MB, from build-gromacs.sh or
#                                                               `apt-get source --download-only gromacs`;
#                                                               GROMACS=main: build-gromacs/src/
#                                                               gromacs-2027.0-dev-b1a82ec.tar.xz, 24 MB,
#                                                               a copy of ../shared/gromacs/'s)
#          systems/water/build/tile_nx16.gro                   (100k = 2x2x2 tiles)
#          systems/water/build/tile_nx14.gro                   (1M = 5x5x5 tiles)
#   command: bash plugin/gpu.sh
# Steps: plugin/build-gromacs.sh "$WORK/gmx" --cuda (libfmm with CUDA + GROMACS -DGMX_GPU=CUDA,
# about 3-4 min on 16 cores), the 100k and 1M boxes from the tiles (water_tools.py tile), then for
# each system: PME (-nb gpu -pme gpu -update gpu -notunepme) and FMM (fmm-device = cuda, -nb gpu, -update
# gpu and -update cpu), NVE with
# nve_{pme,fmm}.mdp, counters reset half-way; ns/day from md.log.
# Writes $OUT/gromacs/gpu_nsday.md (table), gpu_nsday.csv, one folder per run with md.log and
# grompp/mdrun output, build logs. Environment: STEPS_24K (default 4000), STEPS_100K (2000),
# STEPS_1M (400), STEPS_DROPLET (4000), KINDS (default "pme fmm fmm_cpuupdate": PME, the FMM with
# -update gpu, the FMM with -update cpu; for comparison also fmm_hostforces and fmm_late, see run_one), FMM_TOL (default 1e-3), FMM_PRECISION (mixed: float near field, like PME's
# mixed-precision GROMACS; or double), SYSTEMS (default "24k 100k 1m droplet":
# the droplet is 3,345 SPC/E atoms in a 10 nm box, systems/water/spce_droplet_r2.gro), MDRUN_ENV
# (variables for every mdrun, e.g. a bench/trace/cuda_trace.c timeline: CUDA_INJECTION64_PATH=...;
# it runs in the run's folder), NTOMP (mdrun -ntomp; default all cores), GMX (a gmx built before:
# no build).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
OUT=${OUT:-$REPO/build-gromacs/gpu-out}
RES=${RES:-$OUT/gromacs}
GROMACS=${GROMACS:-2022.5}
WORK=${WORK:-/tmp/fmm-gmx-gpu-$GROMACS}
mkdir -p "$RES" "$WORK"
FMM_TOL=${FMM_TOL:-1e-3}
FMM_PRECISION=${FMM_PRECISION:-mixed}
export GMX_FMM_TIMING=1 # the module logs where its time goes (mean of each 100 calls) into md.log
SYSTEMS=${SYSTEMS:-"24k 100k 1m droplet"}
NT=$(nproc)
log() { echo "== gpu.sh: $*" | tee -a "$RES/gpu.log"; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; date -u; git rev-parse --short HEAD; } \
    > "$RES/machine.txt" 2>&1
if [ "$GROMACS" = main ]; then
    TARBALL=$REPO/build-gromacs/src/gromacs-2027.0-dev-b1a82ec.tar.xz
else
    TARBALL=$REPO/build-gromacs/src/gromacs_2022.5.orig.tar.gz
fi

# 1. build (no apt: the machine has no internet; ccache if present), unless GMX names a gmx built
# before (an A/B of two builds: copy one's install folder aside, build the other)
if [ -n "${GMX:-}" ]; then
    log "using $GMX"
else
    [ -f "$TARBALL" ] || { log "missing $TARBALL (carry it)"; exit 1; }
    log "building GROMACS $GROMACS + FMM (CUDA)"
    t0=$(date +%s)
    # the device image has no FFTW3: GROMACS's bundled fftpack (PME itself runs on the GPU, cuFFT)
    [ -f /usr/include/fftw3.h ] || export GMX_FFT=fftpack
    if ! FMM_GMX_WORK=$WORK/build SKIP_APT=1 plugin/build-gromacs.sh "$WORK/gmx" --cuda --jobs "$NT" \
            --gromacs "$GROMACS" --tarball "$TARBALL" > "$RES/build.log" 2>&1; then
        tail -40 "$RES/build.log"
        cp "$WORK"/build/configure-*cuda.log "$WORK"/build/make-*cuda.log "$RES/" 2>/dev/null
        log "build failed"
        exit 1
    fi
    log "built in $(( $(date +%s) - t0 )) s"
    GMX=$WORK/gmx/bin/gmx
fi
export GMXLIB=$WORK/gmx/share/gromacs/top

# 2. systems
SYS=$WORK/systems
mkdir -p "$SYS"
cp systems/gromacs/water_24k.gro "$SYS/24k.gro"
cp systems/water/spce_droplet_r2.gro "$SYS/droplet.gro"
for spec in "100k tile_nx16 2" "1m tile_nx14 5"; do
    set -- $spec
    if [ -f "systems/water/build/$2.gro" ]; then
        python3 systems/water/water_tools.py tile "systems/water/build/$2.gro" "$3" "$SYS/$1.gro" > /dev/null
    else
        log "no systems/water/build/$2.gro (carry it): $1 skipped"
    fi
done
top_for() { # top_for GRO -> a topology with the right number of SOL
    local n
    n=$(( $(sed -n 2p "$1" | tr -d ' ') / 3 ))
    printf '#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spce.itp"\n\n[ system ]\nSPC/E water\n\n[ molecules ]\nSOL %d\n' "$n" > "${1%.gro}.top"
}

echo "system,atoms,solver,nsteps,ns_per_day,ms_per_step,mdrun_flags,status" > "$RES/gpu_nsday.csv"
run_one() { # run_one NAME KIND STEPS   (KIND: pme, fmm, fmm_cpuupdate: the FMM with the update on the CPU, or
            # fmm_hostforces: GPU update, but the FMM's positions and forces through the host every step;
            # fmm_late: GPU update, the FMM started where GROMACS asks for the special forces, after the
            # nonbonded launch, instead of at the beginning of the step)
    local name=$1 kind=$2 steps=$3 dir=$RES/$1_$2 flags mdp=systems/gromacs/mdp/nve_${2%%_*}.mdp key=fmm-
    mkdir -p "$dir"
    # the FMM's mdp options: fmm-X (2022.5 module, its own mdp) or fmm-fmmlib-X (main)
    if $GMX --version 2>/dev/null | grep -q '^GROMACS version: *2022'; then
        [ "${2%%_*}" = fmm ] && mdp=systems/gromacs/mdp/gmx2022/nve_fmm.mdp
    else
        key=fmm-fmmlib-
    fi
    sed -e "s/^nsteps .*/nsteps                   = $steps/" -e "s/^${key}tolerance .*/${key}tolerance = $FMM_TOL/" \
        -e "s/^${key}device .*/${key}device = cuda/" -e "s/^${key}precision .*/${key}precision = $FMM_PRECISION/" -e "s/^nstcalcenergy .*/nstcalcenergy            = 100/" \
        "$mdp" > "$dir/in.mdp"
    if ! $GMX -quiet grompp -f "$dir/in.mdp" -c "$SYS/$name.gro" -p "$SYS/$name.top" -o "$dir/run.tpr" \
            -po "$dir/mdout.mdp" -maxwarn 1 > "$dir/grompp.log" 2>&1; then
        echo "$name,,$kind,$steps,,,,grompp failed" >> "$RES/gpu_nsday.csv"; return
    fi
    # GROMACS 2022 keeps the update on the CPU under -update auto; with -update gpu it copies
    # the coordinates to the host for a force provider and its forces back every step
    local route=
    case $kind in
        pme) flags="-nb gpu -pme gpu -update gpu -notunepme" ;;
        fmm) flags="-nb gpu -update gpu" ;;
        fmm_hostforces) flags="-nb gpu -update gpu" route=GMX_FMM_FORCES_ON_HOST=1 ;;
        fmm_late) flags="-nb gpu -update gpu" route=GMX_FMM_LAUNCH_LATE=1 ;;
        *) flags="-nb gpu -update cpu" ;;
    esac
    # shellcheck disable=SC2086
    if ! (cd "$dir" && env $route ${MDRUN_ENV:-} timeout 300 $GMX -quiet mdrun -ntmpi 1 -ntomp "${NTOMP:-$NT}" -s run.tpr -deffnm md $flags \
            -resetstep $((steps / 2)) -noconfout > mdrun.log 2>&1); then
        # should GPU update be refused: retry with CPU update
        if [ "$kind" = fmm ]; then
            flags="-nb gpu -update cpu"
            # shellcheck disable=SC2086
            (cd "$dir" && env ${MDRUN_ENV:-} timeout 300 $GMX -quiet mdrun -ntmpi 1 -ntomp "${NTOMP:-$NT}" -s run.tpr -deffnm md $flags \
                -resetstep $((steps / 2)) -noconfout > mdrun.log 2>&1) || {
                echo "$name,,$kind,$steps,,,$flags,mdrun failed" >> "$RES/gpu_nsday.csv"; return; }
        else
            echo "$name,,$kind,$steps,,,$flags,mdrun failed" >> "$RES/gpu_nsday.csv"; return
        fi
    fi
    local nsd atoms
    nsd=$(awk '/^Performance:/ {print $2}' "$dir/md.log")
    atoms=$(sed -n 2p "$SYS/$name.gro" | tr -d ' ')
    awk -v n="$name" -v a="$atoms" -v k="$kind" -v s="$steps" -v p="$nsd" -v f="$flags" \
        'BEGIN {printf "%s,%s,%s,%s,%s,%.4f,%s,ok\n", n, a, k, s, p, 86400 * 2e-3 / p * 1000 / 1000, f}' >> "$RES/gpu_nsday.csv"
}

for s in $SYSTEMS; do
    [ -f "$SYS/$s.gro" ] || continue
    top_for "$SYS/$s.gro"
    case $s in
        24k) steps=${STEPS_24K:-4000} ;;
        100k) steps=${STEPS_100K:-2000} ;;
        droplet) steps=${STEPS_DROPLET:-4000} ;;
        *) steps=${STEPS_1M:-400} ;;
    esac
    for kind in ${KINDS:-pme fmm fmm_cpuupdate}; do
        log "$s $kind ($steps steps)"
        run_one "$s" "$kind" "$steps"
    done
done

{
    echo "# $($GMX --version 2>/dev/null | awk -F': *' '/^GROMACS version/ {print "GROMACS " $2; exit}') + FMM on the GPU: ns/day, PME (GPU) vs FMM (device cuda, tolerance $FMM_TOL, precision $FMM_PRECISION)"
    echo
    echo "Machine: $(head -1 "$RES/machine.txt"); $NT cores; commit $(git rev-parse --short HEAD); $(date -u +%Y-%m-%dT%H:%MZ)."
    echo "NVE, dt 2 fs, SETTLE, rc 1.0 nm, counters reset half-way; ms/step = 172.8 / (ns/day)."
    echo
    echo "| system | atoms | solver | steps | ns/day | ms/step | mdrun flags | status |"
    echo "|---|---:|---|---:|---:|---:|---|---|"
    tail -n +2 "$RES/gpu_nsday.csv" | awk -F, '{printf "| %s | %s | %s | %s | %s | %s | `%s` | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}'
    echo
    echo "Where the FMM module's time goes (GMX_FMM_TIMING, last 100 calls of each run):"
    echo
    for f in "$RES"/*_fmm*/md.log; do
        [ -f "$f" ] && echo "- $(basename "$(dirname "$f")"): $(grep -h 'FMM module timing' "$f" | tail -1)"
    done
    echo
    echo "Energies (gmx energy over the run, kJ/mol: average, error estimate, RMSD, total drift):"
    echo
    for d in "$RES"/*/; do
        [ -f "$d/md.edr" ] || continue
        echo "- $(basename "$d"):"
        (cd "$d" && printf 'Total-Energy\nCoul.-recip.\n\n' | $GMX -quiet energy -f md.edr -o energy.xvg 2>&1 |
            grep -E '^(Total Energy|Coul. recip.)' | sed 's/^/    /')
    done
} > "$RES/gpu_nsday.md"
cat "$RES/gpu_nsday.md"
