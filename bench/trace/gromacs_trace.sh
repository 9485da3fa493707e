#!/usr/bin/env bash
# bench/trace/gromacs_trace.sh - on the device machine: where the time of an MD step goes, PME
# against the FMM, from GPU timelines (bench/trace/cuda_trace.c, no nsys there). Builds GROMACS with
# the FMM module (plugin/gpu.sh; carry build-gromacs/src/gromacs_2022.5.orig.tar.gz), runs each kind
# untraced (ms/step for reference) and traced, and writes under $OUT: summary.txt (both ns/day
# tables), timeline_SYSTEM_KIND.txt and .png (bench/trace/step_timeline.py) and the gzipped traces.
# Environment: SYSTEMS (default droplet), KINDS (default "pme fmm"), STEPS (default 4000).
set -uo pipefail
OUT=${OUT:-/tmp/fmm-trace-out}
SYSTEMS=${SYSTEMS:-droplet}
KINDS=${KINDS:-pme fmm}
STEPS=${STEPS:-4000}
WORKRES=/tmp/fmm-trace-res
mkdir -p "$OUT" "$WORKRES"
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
inc=$(dirname "$(find "$cuda"/ "$cuda"/extras/CUPTI/ -name cupti.h 2>/dev/null | head -1)")
lib=$(dirname "$(find "$cuda"/ "$cuda"/extras/CUPTI/ -name 'libcupti.so*' 2>/dev/null | head -1)")
gcc -O2 -shared -fPIC bench/trace/cuda_trace.c -I"$inc" -L"$lib" -lcupti -Wl,-rpath,"$lib" \
    -o /tmp/libcuda_trace.so || exit 1
export SYSTEMS KINDS STEPS_DROPLET=$STEPS STEPS_24K=$STEPS STEPS_100K=$STEPS
RES=$WORKRES/plain bash plugin/gpu.sh > $WORKRES/plain.log 2>&1 || { tail -30 $WORKRES/plain.log; exit 1; }
RES=$WORKRES/traced MDRUN_ENV="CUDA_INJECTION64_PATH=/tmp/libcuda_trace.so" bash plugin/gpu.sh \
    > $WORKRES/traced.log 2>&1 || { tail -30 $WORKRES/traced.log; exit 1; }
{
    echo "untraced:"; cat $WORKRES/plain/gpu_nsday.csv
    echo "traced:"; cat $WORKRES/traced/gpu_nsday.csv
    grep -H 'FMM module timing' $WORKRES/*/*/md.log | sed 's/^.*fmm-trace-res.//'
} > "$OUT/summary.txt"
for s in $SYSTEMS; do
    for k in $KINDS; do
        t=$WORKRES/traced/${s}_$k/cuda_trace.csv
        [ -f "$t" ] || { echo "no trace for $s $k" >> "$OUT/summary.txt"; continue; }
        python3 bench/trace/step_timeline.py "$t" --plot "$OUT/timeline_${s}_$k.png" \
            --title "$s $k ($(nvidia-smi --query-gpu=name --format=csv,noheader), $(git rev-parse --short HEAD 2>/dev/null))" \
            > "$OUT/timeline_${s}_$k.txt" 2>&1
        gzip -c "$t" > "$OUT/trace_${s}_$k.csv.gz"
    done
done
cat "$OUT/summary.txt"
