#!/usr/bin/env bash
# bench/fgt/cpu.sh - the FGT issue's CPU benchmark: 3-D, N = M = 1e5 uniform in the unit cube,
# tolerance 1e-6, h = 0.05, 0.2, 0.5, 2 threads, next to the full direct sum (fgt_direct, libm
# exp, measured once) and FIGTree's times on this machine class (17.0 / 10.1 / 1.7 s, eps 1e-6,
# from the issue). Run from the repository root after building build-fgt/ (or BUILD=dir).
# Writes bench/results/fgt_cpu.txt (raw lines + machine, date, commit, load average) and,
# with matplotlib, bench/results/fgt_cpu.png.
set -eu
BUILD=${BUILD:-build-fgt}
N=${N:-100000}
out=bench/results/fgt_cpu.txt
mkdir -p bench/results
LIBS="$BUILD/libfmm.a -fopenmp -lm"
if nm -A "$BUILD/libfmm.a" 2>/dev/null | grep -q cudaMalloc; then
    LIBS="$LIBS -L${CUDA_HOME:-/usr/local/cuda}/lib64 -lcudadevrt -lcudart -lstdc++"
fi
cc -O2 -fopenmp -Iinclude bench/fgt/fgt_bench.c $LIBS -o "$BUILD/fgt_bench"
{
    echo "# FGT CPU benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet -- fgt include/fmm_fgt.h || echo '+uncommitted fgt changes')"
    echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; threads 2"
    echo "# load average before: $(cat /proc/loadavg)"
    echo "# FIGTree (issue text, this machine class, eps 1e-6): h=0.05 17.0 s, h=0.2 10.1 s, h=0.5 1.7 s"
    "$BUILD/fgt_bench" "$N" "$N" 3 1e-6 2 cpu 2000 "${DIRECT:-1}" 0.05 0.2 0.5
    echo "# load average after: $(cat /proc/loadavg)"
} | tee "$out"
python3 bench/fgt/plot.py "$out" bench/results/fgt_cpu.png || echo "(no plot: matplotlib missing?)"
