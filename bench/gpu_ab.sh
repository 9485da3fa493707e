#!/usr/bin/env bash
# bench/gpu_ab.sh BASE [ROUNDS] - the CUDA FMM of the working tree against BASE, in one device
# call: both are built (BASE without tests) and timed on the same machine, alternately, so that a
# change is measured against its parent and not against a results file of another machine or day.
# BASE: a commit the device copy's .git has, or a tar file of a source tree (`git archive -o
# build-ab/base.tar HEAD`, carried: the device copy's .git can lag behind the working tree).
# Rows go to $OUT/ab.csv (fmm-gpu-bench's columns plus "build" = base | work); a summary of the
# medians to stdout. With M2L_ARGS (m2l-bench options, e.g. "--orders 7 --depths 4,5 --variants
# symfloat"), m2l-bench runs for both builds too: $OUT/ab_m2l_{base,work}.csv.
#
# Systems: SPC/E water 24k (tracked) and, when present, systems/water/build/tile_nx16.xyzq (100k)
# and tile_nx14.xyzq (1M); p 7 in mixed and double precision, the automatic depth; no CPU run and
# no reference (fmm-gpu-bench's accuracy columns come from bench/gpu.sh fmm).
# Expects bench/gpu.sh build to have built build-gpu/ (it builds it if missing).
set -uo pipefail
BASE=${1:?usage: bench/gpu_ab.sh BASE [ROUNDS]}
ROUNDS=${2:-3}
OUT=${OUT:-/tmp/fmm-gpu-out}
mkdir -p "$OUT"
BB=/tmp/fmm-ab-base
rm -rf $BB && mkdir -p $BB
if [ -f "$BASE" ]; then tar -xf "$BASE" -C $BB; else git archive "$BASE" | tar -x -C $BB; fi || exit 1
(cmake -S $BB -B $BB/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFMM_TESTS=OFF > "$OUT/ab_base_build.log" 2>&1 &&
    cmake --build $BB/build -j 8 --target fmm-gpu-bench m2l-bench >> "$OUT/ab_base_build.log" 2>&1) &
basepid=$!
[ -x build-gpu/bin/fmm-gpu-bench ] || bash bench/gpu.sh build || exit 1
wait $basepid || { tail -30 "$OUT/ab_base_build.log"; exit 1; }

if [ -n "${M2L_ARGS:-}" ]; then
    for b in base work; do
        bin=build-gpu/bin/m2l-bench
        [ $b = base ] && bin=$BB/build/bin/m2l-bench
        echo "m2l-bench $b" >&2
        $bin $M2L_ARGS --csv "$OUT/ab_m2l_$b.csv" | sed "s/^/$b /"
    done
fi

F="$OUT/ab.csv"
echo "build,$(build-gpu/bin/fmm-gpu-bench --header)" > "$F"
W=systems/water
cases=("spce_24k 200 --in $W/spce_24k.xyzq")
[ -f $W/build/tile_nx16.xyzq ] && cases+=("spce_100k 200 --in $W/build/tile_nx16.xyzq --tile 2")
[ -f $W/build/tile_nx14.xyzq ] && cases+=("spce_1m 50 --in $W/build/tile_nx14.xyzq --tile 5")
for r in $(seq "$ROUNDS"); do
    for c in "${cases[@]}"; do
        set -- $c
        label=$1 reps=$2
        shift 2
        for prec in mixed double; do
            for b in base work; do
                bin=build-gpu/bin/fmm-gpu-bench
                [ $b = base ] && bin=$BB/build/bin/fmm-gpu-bench
                echo "round $r $label $prec $b" >&2
                $bin --label "$label" "$@" --periodic --order 7 --precision $prec --reps "$reps" --no-cpu \
                    --reference none | sed "s/^/$b,/" >> "$F"
            done
        done
    done
done
python3 - "$F" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r['label'], r['precision']) for r in rows})
print(f"{'system':10} {'precision':9} {'base ms':>9} {'work ms':>9} {'work/base':>9}")
for k in keys:
    med = {b: statistics.median(float(r['gpu_ms_median']) for r in rows
                                if (r['label'], r['precision']) == k and r['build'] == b) for b in ('base', 'work')}
    print(f"{k[0]:10} {k[1]:9} {med['base']:9.4f} {med['work']:9.4f} {med['work'] / med['base']:9.3f}")
PY
