#!/usr/bin/env bash
# tests/gpu_sanitize.sh - compute-sanitizer memcheck, racecheck, initcheck and synccheck over the whole
# GPU test suite, on a machine with an NVIDIA GPU (run from anywhere in the repository).
#
# Builds build-gpu-san/ (Release) without the dynamic-parallelism M2L variant, which only m2l-bench
# runs and in whose presence racecheck instruments nothing. GoogleTest: Debian's libgtest-dev, else a
# copy of its source tree in .gtest/ (the device machine has none: carry it).
# The GPU test suite: every case of test_gpu, and the device cases of the other test binaries (names
# with Gpu, Cuda or Device: BldttGpu.*, FgtGpu.*, RbfGpu.*, GpuHardening.*, Makeplan.CudaDevice, ...),
# under the tools in their sanitizer mode (FMM_TEST_SANITIZE=1, tests/test_env.h: smaller sets,
# fewer repeats, the same kernel paths and checks; racecheck, which took minutes per test_gpu case
# there, with FMM_TEST_SANITIZE=racecheck: the smallest sets and trees that reach every kernel).
# First a plain run of that suite at full size
# (PLAIN=1: it must pass; its case times are in the logs), then one tool after the other;
# within a tool at most PAR sanitized processes at once (test_gpu split into SHARDS GoogleTest
# shards; many processes at once exhaust the GPU's memory: the tests then fail with FMM_ERR_NOMEM),
# each with OMP_NUM_THREADS = cores / PAR for the CPU references. The out-of-device-memory test runs
# alone and without API-error reports: its failing cudaMalloc calls are the point of the test.
# A run is cut off after SANITIZER_TIMEOUT seconds, or where the script's BUDGET (seconds from its
# start) runs out; no run starts with less than 30 s of the budget left (reported as not run), so
# that the results and logs are written within a device call's limit.
#
# Results: $OUT/gpu_sanitize.txt, one line per tool, binary and shard: exit status (124: cut off),
# tests passed, seconds, the tool's ERROR SUMMARY; the logs in $OUT/san_logs.tgz (and build.log
# there too; in $OUT itself where the build fails). With SKIP_BUILD=1 on a machine that ran the
# script before (a warm device machine), the earlier call's lines are kept and the new ones added,
# so a run split over two calls ends in one results file. Exit status: the number of runs that did
# not pass (or were not run).
# Environment: OUT (default /tmp/fmm-sanitize), TOOLS (empty: the plain run only; default "memcheck racecheck initcheck
# synccheck"), PLAIN (1: the plain run first; default 1), SKIP_BUILD=1 (reuse build-gpu-san), JOBS
# (build, default nproc), PAR (default 3), SHARDS (default 3), SANITIZER_TIMEOUT (default 480),
# BUDGET (default 520).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 100
T0=$(date +%s)
OUT=${OUT:-/tmp/fmm-sanitize}
TOOLS=${TOOLS-memcheck racecheck initcheck synccheck}
PLAIN=${PLAIN:-1}
JOBS=${JOBS:-$(nproc)}
PAR=${PAR:-3}
SHARDS=${SHARDS:-3}
TIMEOUT=${SANITIZER_TIMEOUT:-480}
BUDGET=${BUDGET:-520}
B=build-gpu-san
WORK=$B/sanitize
LOGS=$WORK/san_logs
SUMMARY=$WORK/gpu_sanitize.txt
OTHERS="test_bldtt test_rbf test_fgt test_hardening_fmm test_api"
DEVICE_CASES='*Gpu*:*Cuda*:*Device*'
OOM='GpuPlan.OutOfDeviceMemory*'
OMP=$(($(nproc) / PAR))
export OMP_NUM_THREADS=$((OMP > 1 ? OMP : 1))
mkdir -p "$OUT"

elapsed() { echo $(($(date +%s) - T0)); }
say() { echo "== $* ($(date +%T), $(elapsed) s)" >&2; }
finish() { # the results and the logs into OUT
    cp "$SUMMARY" "$OUT/gpu_sanitize.txt"
    tar czf "$OUT/san_logs.tgz" -C "$WORK" san_logs build.log 2> /dev/null
}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    rm -rf "$WORK"
    mkdir -p "$LOGS"
    say "building $B"
    gen=()
    command -v ninja > /dev/null && gen=(-G Ninja)
    if ! { cmake -S . -B $B "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFMM_CUDA_DYNAMIC=OFF &&
        cmake --build $B -j "$JOBS" --target test_gpu $OTHERS; } > "$WORK/build.log" 2>&1; then
        cp "$WORK/build.log" "$OUT/build.log"
        tail -40 "$WORK/build.log" >&2
        exit 100
    fi
fi
mkdir -p "$LOGS"
if [ ! -s "$SUMMARY" ]; then
    {
        echo "# tests/gpu_sanitize.sh: compute-sanitizer over the GPU test suite (plain: full size; tools: FMM_TEST_SANITIZE=1, racecheck: =racecheck)"
        echo "# commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet 2> /dev/null || echo -dirty)"
        echo "# device $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)"
        echo "# $(compute-sanitizer --version 2> /dev/null | tail -1)"
    } > "$SUMMARY"
fi
echo "# call of $(date -u +%FT%TZ): TOOLS='$TOOLS' PLAIN=$PLAIN PAR=$PAR SHARDS=$SHARDS BUDGET=$BUDGET, build $(elapsed) s" >> "$SUMMARY"
if ! nvidia-smi > /dev/null 2>&1 || [ ! -x $B/bin/test_gpu ]; then
    echo "gpu_sanitize.sh: no GPU or no test_gpu: nothing checked" | tee -a "$SUMMARY" >&2
    finish
    exit 100
fi

# run TOOL BIN SHARD FILTER [EXTRA...]: one run (TOOL plain: without a tool); prints its line
run() {
    local tool=$1 bin=$2 shard=$3 filter=$4
    shift 4
    local log=$LOGS/${tool}_${bin}_$shard.log left=$((BUDGET - $(elapsed) - 15))
    local limit=$((left < TIMEOUT ? left : TIMEOUT))
    if [ "$limit" -lt 30 ]; then
        printf '%-9s %-19s shard %-3s not run (budget)\n' "$tool" "$bin" "$shard"
        return
    fi
    local env=(-u FMM_TEST_SANITIZE) san=()
    [ "$shard" != all ] && [ "$shard" != oom ] && env+=("GTEST_TOTAL_SHARDS=$SHARDS" "GTEST_SHARD_INDEX=$shard")
    local mode=1
    [ "$tool" = racecheck ] && mode=racecheck
    [ "$tool" != plain ] && env+=("FMM_TEST_SANITIZE=$mode") &&
        san=(compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 200 "$@")
    local t
    t=$(date +%s)
    env "${env[@]}" timeout -k 10 "$limit" "${san[@]}" $B/bin/$bin --gtest_filter="$filter" > "$log" 2>&1
    local rc=$? s=$(($(date +%s) - t)) passed errs
    passed=$(grep -o '^\[  PASSED  \] [0-9]*' "$log" | grep -o '[0-9]*$' | head -1)
    errs=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
    [ "$tool" = plain ] && errs=
    [ $rc = 124 ] && errs="cut off after $limit s ($(grep -c '^\[       OK \]' "$log") cases done)"
    printf '%-9s %-19s shard %-3s exit %-3s passed %-4s %4s s  %s\n' "$tool" "$bin" "$shard" "$rc" \
        "${passed:-0}" "$s" "${errs:-}"
}

# all TOOL: the suite under TOOL (plain: none), at most PAR runs at once, longest first; the OOM
# test alone at the end
all() {
    local tool=$1 tmp k=0 running=0
    say "$tool"
    tmp=$(mktemp -d)
    local jobs=()
    for ((s = 0; s < SHARDS; s++)); do jobs+=("test_gpu $s *:-$OOM"); done
    for bin in $OTHERS; do jobs+=("$bin all $DEVICE_CASES"); done
    for j in "${jobs[@]}"; do
        read -r bin shard filter <<< "$j"
        if [ $running -ge "$PAR" ]; then
            wait -n
            running=$((running - 1))
        fi
        { run "$tool" "$bin" "$shard" "$filter" | tee "$tmp/$k" >&2; } &
        running=$((running + 1)) k=$((k + 1))
    done
    wait
    local extra=()
    [ "$tool" != plain ] && extra=(--report-api-errors no)
    run "$tool" test_gpu oom "$OOM" "${extra[@]}" | tee "$tmp/$k" >&2
    cat "$tmp"/* >> "$SUMMARY"
    rm -rf "$tmp"
}

[ "$PLAIN" = 1 ] && all plain
for tool in $TOOLS; do all "$tool"; done
fails=$(awk '/^# call of/ { n = 0; next } !/^#/ && !/ exit 0 / { ++n } END { print n + 0 }' "$SUMMARY")
echo "# $fails run(s) of this call did not pass or were not run (exit 124: cut off), $(elapsed) s" >> "$SUMMARY"
finish
say "done: $fails run(s) did not pass; summary in $OUT/gpu_sanitize.txt"
exit "$fails"
