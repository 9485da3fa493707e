#!/usr/bin/env bash
# bench/gpu.sh [STAGE...] - everything the GPU work needs, in one call on the device machine
# (an NVIDIA H100/H200 with nvcc, CMake, Python+numpy+matplotlib, no GoogleTest, no internet).
# Run from the repository root; results go under $OUT (default /tmp/fmm-gpu-out).
#
# Stages (default: build test fmm m2l):
#   build      configure + build into build-gpu/ (GoogleTest from .gtest/, a copy of Debian's
#              /usr/src/googletest carried by the caller); TARGETS="a b" builds only those
#   test       the GPU GoogleTest suite (test_gpu) and test_api's plan checks (CUDA device, precision)
#   sanitizer  tests/gpu_sanitize.sh: compute-sanitizer memcheck, racecheck, initcheck and synccheck
#              over the GPU test suite (results in $OUT/sanitize/)
#   fmm        the whole FMM: SPC/E water 24k / 100k / 1M and the 3k droplet, periodic (vs CPU FMM and Ewald), and
#              uniform open sets up to 1e7 (vs CPU FMM, sampled direct sum, GPU direct sum)
#   m2l        build/bin/m2l-bench over p = 2..20, depths 3..5
#   helpers    bench/<solver>/gpu.sh of the auxiliary solvers, where present (HELPERS="bldtt fgt rbf",
#              each cut off after HELPER_TIMEOUT s, default 300)
# Water inputs: systems/water/spce_24k.xyzq (tracked), systems/water/build/tile_nx16.xyzq (x2^3 = 100k) and
# systems/water/build/tile_nx14.xyzq (git-ignored: carry them; the 1M box is the 8.4k tile x5^3).
set -uo pipefail
OUT=${OUT:-/tmp/fmm-gpu-out}
mkdir -p "$OUT"
STAGES=${*:-build test fmm m2l}
B=build-gpu
log() { echo "== $* ($(date +%T))" >&2; }
has() { [[ " $STAGES " == *" $1 "* ]]; }

{
    echo "date $(date -u +%FT%TZ)"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo -dirty)"
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
    nproc
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

if has build; then
    log build
    cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
        cmake --build $B -j 16 ${TARGETS:+--target $TARGETS} >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
    tail -2 "$OUT/build.log"
fi

if has test; then
    log test
    $B/bin/test_gpu 2>&1 | tee "$OUT/test_gpu.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error|seed|expected|Which is|actual|mixed vs|^tolerance" | head -60
    $B/bin/test_api --gtest_filter='Makeplan.*' 2>&1 | tail -3
    # the auxiliary solvers' GPU tests run in their own scripts (stage helpers)
fi

if has sanitizer; then
    log sanitizer
    OUT="$OUT/sanitize" bash tests/gpu_sanitize.sh
fi

if has fmm; then
    log fmm
    F="$OUT/fmm_gpu.csv"
    $B/bin/fmm-gpu-bench --header > "$F"
    W=systems/water
    run() { echo "$*" >&2; $B/bin/fmm-gpu-bench "$@" | tee -a "$F"; }
    # PME-equivalent accuracy (relative RMS force error <= 3e-4: order 7, 6 just misses): double,
    # and mixed precision (float P2P) at the automatic depth and one level shallower (the float
    # near field is cheaper, so the balance moves towards larger leaves)
    water() { # water LABEL DEPTH REPS ARGS...
        local label=$1 d=$2 reps=$3
        shift 3
        run --label "$label" "$@" --periodic --order 7 --reps "$reps"
        for p in 6 7; do run --label "$label" "$@" --periodic --order $p --precision mixed --reps "$reps"; done
        run --label "$label" "$@" --periodic --order 7 --precision mixed --depth $((d - 1)) --reps "$reps"
    }
    water spce_24k 3 200 --in $W/spce_24k.xyzq
    [ -f $W/build/tile_nx16.xyzq ] && water spce_100k 4 200 --in $W/build/tile_nx16.xyzq --tile 2
    [ -f $W/build/tile_nx14.xyzq ] && water spce_1m 5 50 --in $W/build/tile_nx14.xyzq --tile 5
    # the 3,345-atom droplet in its 10 nm box: compact, so the automatic depth is 0 (pbc/cluster.h);
    # depth 2, the tree it had before, for comparison
    for prec in mixed double; do
        for d in -1 2; do
            run --label droplet --in $W/spce_droplet_r2.xyzq --periodic --tolerance 1e-3 --precision $prec \
                --depth $d --reps 400 --reference ewald
        done
    done
    for prec in double mixed; do
        run --label uniform_open --uniform 1000000 --tolerance 1e-4 --precision $prec --reps 50 --reference direct
        run --label uniform_open --uniform 10000000 --order 7 --precision $prec --reps 10 --reference sample
    done
fi

if has m2l; then
    log m2l
    if [ -x $B/bin/m2l-bench ]; then
        $B/bin/m2l-bench --csv "$OUT/m2l_bench.csv" ${M2L_ARGS:-} 2>&1 | tee "$OUT/m2l_bench.txt" | tail -80
        python3 bench/m2l_plot.py "$OUT/m2l_bench.csv" "$OUT/m2l_bench.png"
    fi
fi

if has helpers; then
    for s in ${HELPERS:-bldtt fgt rbf}; do
        if [ -x bench/$s/gpu.sh ]; then
            log "helper $s"
            mkdir -p "$OUT/$s"
            OUT="$OUT" timeout "${HELPER_TIMEOUT:-300}" bash bench/$s/gpu.sh 2>&1 | tail -30
        fi
    done
fi
log done
