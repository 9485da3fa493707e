#!/usr/bin/env bash
# bench/bldtt/gpu.sh - BLDTT GPU benchmarks (the paper's Table 2 test), run from the repository
# root on the GPU machine after the lead's build in build-gpu/ (libfmm.a, libfmm_systems.a,
# bin/fmm). Writes under "$OUT/bldtt/": machine.txt, table2.csv (uniform cube, Coulomb,
# theta 0.7, n 8: N = 1e5 .. 1e7, and 1e8 if the GPU has the memory), ladder.csv (theta, n at
# N = 1e6), bltc.csv, kernels.csv, and test_bldtt_gpu.txt (GPU vs CPU test, if built).
# About 3 minutes on one H100. BUILD=dir overrides build-gpu; PARTS="table2 test" (default: all of
# table2 leaf bltc ladder kernels cpu test) runs only those. The comparison plot against the
# paper: python3 bench/bldtt/plot.py gpu "$OUT/bldtt" (needs matplotlib; writes
# bench/results/bldtt_gpu_table2.png).
set -u
B=${BUILD:-build-gpu}
O="${OUT:-/tmp}/bldtt"
mkdir -p "$O"
CUDA_LIB=$(dirname "$(dirname "$(command -v nvcc)")")/lib64
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit $(git rev-parse HEAD 2>/dev/null) $(git status --porcelain -- bldtt include/fmm_bldtt.h | wc -l) local changes in bldtt/"
    echo "host $(hostname) cpus $(nproc) loadavg $(cat /proc/loadavg)"
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
} >"$O/machine.txt" 2>&1
gcc -O3 -march=native -std=c11 -fopenmp -Iinclude -Isystems -I. bench/bldtt/bldtt_bench.c \
    "$B/libfmm.a" "$B/libfmm_systems.a" -L"$CUDA_LIB" -lcudadevrt -lcudart -lstdc++ -lm \
    -o "$O/bldtt_bench" 2>"$O/compile.txt" || { echo "bldtt_bench: compile failed, see $O/compile.txt"; exit 1; }
BENCH="$O/bldtt_bench"
PARTS=" ${PARTS:-table2 leaf bltc ladder kernels cpu test} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
HDR=n,device,method,kernel,theta,degree,leaf,setup_s,execute_s,total_s,rel_l2_error,sample,pairs_pp,pairs_pc,pairs_cp,pairs_cc,evals,warmup_s,setup_device_s,total_max_s
run() { # file args...
    local f=$1; shift
    timeout 300 "$BENCH" "$@" >>"$f" 2>>"$O/stderr.txt" || echo "failed: $*" >>"$O/stderr.txt"
}
# Table 2: BLDTT on the GPU, sample 1000 targets (the paper: 0.1%), reference = GPU direct sum
part table2 && echo "$HDR" >"$O/table2.csv" &&
for n in 100000 1000000 10000000; do run "$O/table2.csv" --n $n --device cuda --sample 1000 --reps 3; done
mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if part table2 && [ "${mem:-0}" -gt 60000 ] && [ "$(free -g | awk '/Mem:/ {print $2}')" -gt 60 ]; then
    run "$O/table2.csv" --n 100000000 --device cuda --sample 1000 --reps 1
fi
# leaf size at 1e7 (the paper's 2000 is the default)
part leaf && echo "$HDR" >"$O/leaf.csv" &&
for leaf in 500 1000 4000; do run "$O/leaf.csv" --n 10000000 --device cuda --leaf $leaf --reps 1; done
# BLTC against BLDTT
part bltc && echo "$HDR" >"$O/bltc.csv" &&
for n in 100000 1000000; do run "$O/bltc.csv" --n $n --device cuda --method bltc --reps 1; done
# accuracy ladder at 1e6
part ladder && echo "$HDR" >"$O/ladder.csv" &&
for tn in "0.9 1" "0.9 2" "0.7 4" "0.7 6" "0.7 8" "0.5 8" "0.5 10" "0.5 12"; do
    set -- $tn
    run "$O/ladder.csv" --n 1000000 --device cuda --theta $1 --degree $2 --reps 1
done
# the other kernels at 1e6
part kernels && echo "$HDR" >"$O/kernels.csv" &&
for k in yukawa regularized sinc multiquadric; do run "$O/kernels.csv" --n 1000000 --device cuda --kernel $k --reps 1; done
# CPU on all cores, for the GPU/CPU ratio (1e6)
part cpu && echo "$HDR" >"$O/cpu.csv" &&
run "$O/cpu.csv" --n 1000000 --device cpu --leaf 729 --reps 1 --ref-device cuda
# GPU vs CPU test, when the test binary was built
if part test && [ -x "$B/bin/test_bldtt" ]; then
    timeout 300 "$B/bin/test_bldtt" --gtest_filter='BldttGpu*' >"$O/test_bldtt_gpu.txt" 2>&1
    echo "test_bldtt exit $?" >>"$O/test_bldtt_gpu.txt"
fi
cat "$O"/*.csv
