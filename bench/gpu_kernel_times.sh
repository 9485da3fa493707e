#!/usr/bin/env bash
# bench/gpu_kernel_times.sh [FMM-GPU-BENCH ARGS...] - where one evaluation of the CUDA FMM spends
# its GPU time, kernel by kernel: Nsight Compute (ncu) times every kernel of the evaluation graph
# (serialised, so overlap is not shown: the sum is the work, not the wall time of a replay; the
# clocks are left as the device sets them, --clock-control none) and the table sums them by kernel
# name, with launch counts; with LIST=1 it also lists every kernel of the evaluation in order.
# Run on the device machine after bench/gpu.sh build; results to $OUT/kernel_times_LABEL.csv and
# a summary on stdout. Default: the ~100k water tile, p 7, mixed precision.
#   bench/gpu_kernel_times.sh --in systems/water/build/tile_nx14.xyzq --tile 5 --label spce_1m
set -uo pipefail
OUT=${OUT:-/tmp/fmm-gpu-out}
mkdir -p "$OUT"
B=build-gpu
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(--in systems/water/build/tile_nx16.xyzq --tile 2 --label spce_100k)
label=profile
for ((i = 0; i < ${#ARGS[@]}; ++i)); do [ "${ARGS[i]}" = --label ] && label=${ARGS[i + 1]}; done
CSV="$OUT/kernel_times_$label.csv"
# one graph replay after the three warm-ups: skip the setpts/warm-up kernels by profiling only the
# last replay's nodes (--reps 1: warm-ups 1..3 and the timed replay 4; the stage-time pass follows)
ncu --metrics gpu__time_duration.sum --csv --graph-profiling node --clock-control none \
    $B/bin/fmm-gpu-bench --periodic --order 7 --precision mixed --reps 1 --no-cpu --reference none "${ARGS[@]}" \
    > "$CSV.raw" 2> "$OUT/kernel_times_$label.log"
grep -E '^"' "$CSV.raw" > "$CSV"
rm -f "$CSV.raw"
LIST=${LIST:-0} python3 - "$CSV" <<'PY'
import csv, os, re, sys, collections
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get('Metric Name') == 'gpu__time_duration.sum']
# a graph replay is the run of kernels between two binning launches (k_bin, or k_root_bins at
# periodic depth 0); take the fourth (the timed one)
starts = [i for i, r in enumerate(rows) if re.match(r'(void )?k_(root_)?bins?\b', r['Kernel Name'])]
if len(starts) < 5:
    sys.exit(f"expected >= 5 evaluations, found {len(starts)} binning launches")
one = rows[starts[3]:starts[4]]
tot = collections.defaultdict(float)
cnt = collections.Counter()
for r in one:
    name = re.sub(r'\(.*', '', r['Kernel Name'])
    name = re.sub(r'void ', '', name)
    scale = {'ns': 1e-3, 'nsecond': 1e-3, 'us': 1.0, 'usecond': 1.0, 'ms': 1e3, 'msecond': 1e3}[r['Metric Unit']]
    us = float(r['Metric Value'].replace(',', '')) * scale
    tot[name] += us
    cnt[name] += 1
    if os.environ['LIST'] == '1':
        print(f"  {us:8.1f} us  {name[:40]:40} grid {r['Grid Size']:14} stream {r['Stream']}")
allus = sum(tot.values())
print(f"{len(one)} kernels in one evaluation, {allus:.1f} us of kernel time (serialised)")
for name, us in sorted(tot.items(), key=lambda kv: -kv[1]):
    print(f"{us:9.1f} us {100 * us / allus:5.1f}% {cnt[name]:4d}x  {name[:90]}")
PY
