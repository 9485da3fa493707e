#!/usr/bin/env bash
# tests/gpu_sanitize.sh - compute-sanitizer memcheck, racecheck, initcheck and synccheck over the whole
# GPU test suite, on a machine with an NVIDIA GPU (run from anywhere in the repository).
#
# Builds build-gpu-san/ (Release, -lineinfo) without the dynamic-parallelism M2L variant, which only
# m2l-bench runs and in whose presence racecheck instruments nothing. GoogleTest: Debian's libgtest-dev,
# else a copy of its source tree in .gtest/ (the device machine has none: carry it).
# The GPU test suite: every case of test_gpu, and the device cases of the other test binaries (names
# with Gpu, Cuda or Device: BldttGpu.*, FgtGpu.*, RbfGpu.*, GpuHardening.*, Makeplan.CudaDevice, ...).
# First a plain run of the suite (it must pass), then one tool after the other, each with test_gpu split
# into SHARDS GoogleTest shards run at once beside the other binaries (more than about 16 sanitized
# processes at once exhaust an H100's memory: the tests then fail with FMM_ERR_NOMEM), every run cut off
# after SANITIZER_TIMEOUT seconds (a run cut off is reported as such, not as passed). Racecheck takes
# about a minute per test_gpu case on an H100, so on a machine whose calls are limited to 10 minutes
# run one tool per call (TOOLS=racecheck SKIP_BUILD=1 on the warm machine). The
# out-of-device-memory test runs without API-error reports: its failing cudaMalloc calls are the point
# of the test, and the tools would count them as errors.
#
# Results: $OUT/gpu_sanitize.txt (one line per tool, binary and shard: exit status, tests passed, the
# tool's error summary; exit 124 = cut off) and one log per run in $OUT/san_logs/ (and san_logs.tgz). Exit status: the
# number of runs that did not pass. Environment: OUT (default /tmp/fmm-sanitize), SHARDS (default 4),
# SANITIZER_TIMEOUT (default 900), TOOLS (default "memcheck racecheck initcheck synccheck"), JOBS
# (build, default nproc), SKIP_BUILD=1 (reuse the build tree).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fmm-sanitize}
SHARDS=${SHARDS:-4}
TIMEOUT=${SANITIZER_TIMEOUT:-900}
TOOLS=${TOOLS:-memcheck racecheck initcheck synccheck}
JOBS=${JOBS:-$(nproc)}
B=build-gpu-san
LOGS=$OUT/san_logs
mkdir -p "$LOGS"
SUMMARY=$OUT/gpu_sanitize.txt
gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
OTHERS="test_api test_bldtt test_fgt test_rbf test_hardening_fmm"
DEVICE_CASES='*Gpu*:*Cuda*:*Device*'
OOM='GpuPlan.OutOfDeviceMemory*'

{
    echo "# tests/gpu_sanitize.sh: compute-sanitizer over the GPU test suite"
    echo "# date $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo -dirty)"
    echo "# device $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "# $(compute-sanitizer --version 2>/dev/null | tail -1)"
} > "$SUMMARY"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    echo "== building $B ($(date +%T))" >&2
    cmake -S . -B $B "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFMM_CUDA_DYNAMIC=OFF > "$OUT/build.log" 2>&1 &&
        cmake --build $B -j "$JOBS" --target test_gpu $OTHERS >> "$OUT/build.log" 2>&1 ||
        { tail -40 "$OUT/build.log"; exit 100; }
fi
if ! nvidia-smi > /dev/null 2>&1 || [ ! -x $B/bin/test_gpu ]; then
    echo "gpu_sanitize.sh: no GPU or no test_gpu: nothing checked" | tee -a "$SUMMARY" >&2
    exit 100
fi

# filter_of BIN: the GoogleTest filter of BIN's GPU cases (the out-of-memory test apart)
filter_of() { if [ "$1" = test_gpu ]; then echo "*:-$OOM"; else echo "$DEVICE_CASES"; fi; }

echo "== plain run of the GPU suite ($(date +%T))" >&2
for bin in test_gpu $OTHERS; do
    $B/bin/$bin --gtest_filter="$(filter_of $bin)" > "$LOGS/plain_$bin.log" 2>&1
    rc=$?
    printf '%-9s %-19s shard %-3s exit %-3s passed %-4s\n' plain "$bin" all "$rc" \
        "$(grep -o '^\[  PASSED  \] [0-9]*' "$LOGS/plain_$bin.log" | grep -o '[0-9]*$')" | tee -a "$SUMMARY" >&2
done
$B/bin/test_gpu --gtest_filter="$OOM" > "$LOGS/plain_test_gpu_oom.log" 2>&1
printf '%-9s %-19s shard %-3s exit %-3s\n' plain test_gpu oom "$?" | tee -a "$SUMMARY" >&2

# san TOOL BIN SHARD FILTER [EXTRA...]: one sanitizer run; prints its summary line
san() {
    local tool=$1 bin=$2 shard=$3 filter=$4
    shift 4
    local log=$LOGS/${tool}_${bin}_$shard.log
    local env=()
    [ "$shard" != all ] && env=(GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$shard)
    env "${env[@]}" timeout "$TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" \
        $B/bin/$bin --gtest_filter="$filter" > "$log" 2>&1
    local rc=$?
    local passed errs
    passed=$(grep -o '^\[  PASSED  \] [0-9]*' "$log" | grep -o '[0-9]*$' | head -1)
    errs=$(grep 'ERROR SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
    [ $rc = 124 ] && errs="cut off after $TIMEOUT s ($(grep -c '^\[       OK \]' "$log") cases done)"
    printf '%-9s %-19s shard %-3s exit %-3s passed %-4s %s\n' "$tool" "$bin" "$shard" "$rc" "${passed:-0}" \
        "${errs:-no summary}"
}

for tool in $TOOLS; do
    echo "== $tool ($(date +%T))" >&2
    tmp=$(mktemp -d)
    pids=()
    k=0
    for ((s = 0; s < SHARDS; s++)); do
        san "$tool" test_gpu "$s" "*:-$OOM" > "$tmp/$k" &
        pids+=($!) k=$((k + 1))
    done
    for bin in $OTHERS; do
        san "$tool" "$bin" all "$DEVICE_CASES" > "$tmp/$k" &
        pids+=($!) k=$((k + 1))
    done
    wait "${pids[@]}"
    san "$tool" test_gpu all "$OOM" --report-api-errors no > "$tmp/$k"
    cat "$tmp"/* | sort | tee -a "$SUMMARY" >&2
    rm -rf "$tmp"
done
tar czf "$OUT/san_logs.tgz" -C "$OUT" san_logs # one file: the device machine returns few files
fails=$(grep -v '^#' "$SUMMARY" | grep -vc ' exit 0 ')
echo "# $fails run(s) with a non-zero exit status (124: cut off)" >> "$SUMMARY"
echo "gpu_sanitize.sh: $fails run(s) did not pass; summary in $SUMMARY ($(date +%T))" >&2
exit "$fails"
