#!/usr/bin/env bash
# tests/gpu_sanitize.sh - compute-sanitizer memcheck, racecheck, initcheck and synccheck over the whole
# GPU test suite, on a machine with an NVIDIA GPU (run from anywhere in the repository).
#
# Builds build-gpu/ (Release, -lineinfo) and, for racecheck, build-gpu-race/ without the
# dynamic-parallelism M2L variant (racecheck instruments nothing in a module that launches kernels from
# the device). GoogleTest: Debian's libgtest-dev, else a copy of its source tree in .gtest/ (the device
# machine has none: carry it). Then every test binary with GPU cases (test_gpu, and test_api,
# test_bldtt, test_fgt and test_rbf, whose device cases sit beside CPU ones) runs under each tool with
# its fast cases (`-*Slow*`: every GPU case is among them; the CPU cases cost the sanitizers little, as
# they check device code and CUDA API calls only), split into SHARDS GoogleTest shards run at once.
# The out-of-device-memory test runs alone afterwards with API-error reports off: its failing cudaMalloc
# calls are the point of the test, and memcheck would count them as errors.
#
# Results: $OUT/gpu_sanitize.txt (one line per tool, binary and shard: exit status, tests passed, the
# tool's error summary) and one log per run in $OUT/san_logs/. Exit status: the number of failed runs.
# Environment: OUT (default /tmp/fmm-sanitize), SHARDS (default 4), SANITIZER_TIMEOUT (seconds per
# run, default 480), TOOLS (default "memcheck racecheck initcheck synccheck"), JOBS (build, default
# nproc), SKIP_BUILD=1 (reuse the build trees).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fmm-sanitize}
SHARDS=${SHARDS:-4}
TIMEOUT=${SANITIZER_TIMEOUT:-480}
TOOLS=${TOOLS:-memcheck racecheck initcheck synccheck}
JOBS=${JOBS:-$(nproc)}
B=build-gpu
R=build-gpu-race
LOGS=$OUT/san_logs
mkdir -p "$LOGS"
SUMMARY=$OUT/gpu_sanitize.txt
gen=()
command -v ninja > /dev/null && gen=(-G Ninja)

{
    echo "# tests/gpu_sanitize.sh: compute-sanitizer over the GPU test suite"
    echo "# date $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo -dirty)"
    echo "# device $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "# $(compute-sanitizer --version 2>/dev/null | tail -1)"
} > "$SUMMARY"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    echo "== building $B and $R" >&2
    cmake -S . -B $B "${gen[@]}" -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
        cmake --build $B -j "$JOBS" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 100; }
    cmake -S . -B $R "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFMM_CUDA_DYNAMIC=OFF > "$OUT/build_race.log" 2>&1 &&
        cmake --build $R -j "$JOBS" >> "$OUT/build_race.log" 2>&1 || { tail -40 "$OUT/build_race.log"; exit 100; }
fi
if [ "$(build-gpu/bin/test_gpu --gtest_list_tests > /dev/null 2>&1; echo $?)" != 0 ] ||
    ! nvidia-smi > /dev/null 2>&1; then
    echo "gpu_sanitize.sh: no GPU or no test_gpu: nothing checked" | tee -a "$SUMMARY" >&2
    exit 100
fi

OOM='GpuPlan.OutOfDeviceMemory*'
BINS="test_gpu test_api test_bldtt test_fgt test_rbf"

# san TOOL BIN SHARD FILTER [EXTRA...]: one sanitizer run; prints its summary line
san() {
    local tool=$1 bin=$2 shard=$3 filter=$4
    shift 4
    local dir=$B
    [ "$tool" = racecheck ] && dir=$R
    local log=$LOGS/${tool}_${bin}_$shard.log
    local env=()
    [ "$shard" != all ] && env=(GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$shard)
    env "${env[@]}" timeout "$TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" \
        "$dir/bin/$bin" --gtest_filter="$filter" > "$log" 2>&1
    local rc=$?
    local passed errs
    passed=$(grep -ho '^\[  PASSED  \] [0-9]* test' "$log" | grep -o '[0-9]*' | head -1)
    errs=$(grep -h 'ERROR SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
    printf '%-9s %-15s shard %-3s exit %-3s passed %-4s %s\n' "$tool" "$bin" "$shard" "$rc" "${passed:-0}" \
        "${errs:-no summary}"
}

fails=0
for tool in $TOOLS; do
    echo "== $tool ($(date +%T))" >&2
    pids=()
    tmp=$(mktemp -d)
    k=0
    for bin in $BINS; do
        for ((s = 0; s < SHARDS; s++)); do
            san "$tool" "$bin" "$s" "-*Slow*:$OOM" > "$tmp/$k" &
            pids+=($!)
            k=$((k + 1))
        done
    done
    wait "${pids[@]}"
    cat "$tmp"/* | sort | tee -a "$SUMMARY" >&2
    rm -rf "$tmp"
    if [[ " $BINS " == *" test_gpu "* ]]; then
        san "$tool" test_gpu all "$OOM" --report-api-errors no | tee -a "$SUMMARY" >&2
    fi
done
fails=$(grep -vc -e '^#' -e ' exit 0 ' "$SUMMARY")
echo "# $fails run(s) with a non-zero exit status" >> "$SUMMARY"
echo "gpu_sanitize.sh: $fails failed run(s); summary in $SUMMARY" >&2
exit "$fails"
