#!/usr/bin/env bash
# bench/fgt/gpu.sh - the FGT GPU checks and benchmarks, for the GPU machine.
#
# Run from the repository root after the lead's build in build-gpu/ (binaries in build-gpu/bin,
# library build-gpu/libfmm.a). Writes everything under "$OUT/fgt/" (OUT defaults to
# ./gpu-out). About 2 minutes:
#   1. tests.txt       build-gpu/bin/test_fgt, GPU tests (GPU vs CPU vs direct sum, every mode)
#   2. fgt_1e7.txt     N = M = 1e7 uniform in the unit cube, h = 0.2, tolerance 1e-6, GPU:
#                      plan + setpts + execute and the device stage times (target: <= 1 s),
#                      error on 1000 targets against the direct sum (CPU, all cores)
#   3. fgt_1e6.txt     N = M = 1e6, h = 0.05 / 0.2 / 0.5: GPU and CPU (all cores) side by side
#   4. hermite.txt     the Hermite-evaluation kernel alone, N = 25600 .. 6553600, p = 5, 9, 12,
#                      27 clusters per target (3-D), particles/s: compare with the seed's
#                      Tables 4-5 (2-D, float: 1.9e7 / 4.8e6 / 2.3e6 on a C1060)
set -u
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$PWD/gpu-out}
dir="$OUT/fgt"
mkdir -p "$dir"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
LIBS="$BUILD/libfmm.a -fopenmp -lm -L$CUDA_HOME/lib64 -lcudadevrt -lcudart -lstdc++"
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) cores $(nproc) load $(cat /proc/loadavg)"
} >"$dir/machine.txt"
cc -O2 -fopenmp -Iinclude bench/fgt/fgt_bench.c $LIBS -o "$dir/fgt_bench" 2>"$dir/build.txt" &&
    cc -O2 -Iinclude bench/fgt/hermite_bench.c $LIBS -o "$dir/hermite_bench" 2>>"$dir/build.txt" ||
    { echo "build of the bench programs failed, see $dir/build.txt"; exit 1; }

if [ -x "$BUILD/bin/test_fgt" ]; then
    timeout 600 "$BUILD/bin/test_fgt" --gtest_filter='FgtGpu.*:Fgt.RejectsBad*:Fgt.Analytic*' >"$dir/tests.txt" 2>&1
    echo "test_fgt exit $?" >>"$dir/tests.txt"
    tail -3 "$dir/tests.txt"
fi
timeout 300 "$dir/fgt_bench" 10000000 10000000 3 1e-6 0 cuda 1000 0 0.2 | tee "$dir/fgt_1e7.txt"
timeout 300 "$dir/fgt_bench" 1000000 1000000 3 1e-6 0 cuda 1000 0 0.05 0.2 0.5 | tee "$dir/fgt_1e6.txt"
timeout 300 "$dir/fgt_bench" 1000000 1000000 3 1e-6 0 cpu 1000 0 0.05 0.2 0.5 | tee -a "$dir/fgt_1e6.txt"
timeout 300 "$dir/hermite_bench" 27 | tee "$dir/hermite.txt"
echo "results in $dir"
