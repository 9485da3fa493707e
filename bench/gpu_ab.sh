#!/usr/bin/env bash
# bench/gpu_ab.sh BASE[,BASE...] [ROUNDS] - the CUDA FMM of the working tree against one or more
# other trees, in one device call: all are built (the bases without tests) and timed on the same
# machine, alternately, so that a change is measured against its parent and not against a results
# file of another machine or day. BASE: a commit the device copy's .git has, or a tar file of a
# source tree (`git archive -o build-ab/base.tar HEAD`, carried: the device copy's .git can lag
# behind the working tree); each is named after the file (without .tar) or the commit.
# Rows go to $OUT/ab.csv (fmm-gpu-bench's columns plus "build" = a base's name | work); a summary
# of the medians to stdout. With M2L_ARGS (m2l-bench options, e.g. "--orders 7 --depths 4,5
# --variants symfloat"), m2l-bench runs for every build too: $OUT/ab_m2l_NAME.csv.
#
# Systems: the 3,345-atom droplet in its 10 nm box (depth 0), SPC/E water 24k (both tracked) and,
# when present, systems/water/build/tile_nx16.xyzq (100k) and tile_nx14.xyzq (1M); p 7 in
# $PRECISIONS (default "mixed double"), the automatic depth; no CPU run and no reference
# (fmm-gpu-bench's accuracy columns come from bench/gpu.sh fmm).
# The working tree is built (incrementally) into build-gpu/ by bench/gpu.sh build.
set -uo pipefail
IFS=, read -ra BASES <<< "${1:?usage: bench/gpu_ab.sh BASE[,BASE...] [ROUNDS]}"
ROUNDS=${2:-3}
PRECISIONS=${PRECISIONS:-mixed double}
OUT=${OUT:-/tmp/fmm-gpu-out}
mkdir -p "$OUT"
declare -A BIN=([work]=build-gpu/bin)
NAMES=()
pids=()
for base in "${BASES[@]}"; do
    name=$(basename "$base" .tar)
    BB=/tmp/fmm-ab-$name
    rm -rf $BB && mkdir -p $BB
    if [ -f "$base" ]; then tar -xf "$base" -C $BB; else git archive "$base" | tar -x -C $BB; fi || exit 1
    (cmake -S $BB -B $BB/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFMM_TESTS=OFF > "$OUT/ab_${name}_build.log" 2>&1 &&
        cmake --build $BB/build -j 8 --target fmm-gpu-bench m2l-bench >> "$OUT/ab_${name}_build.log" 2>&1) &
    pids+=($!)
    BIN[$name]=$BB/build/bin
    NAMES+=("$name")
done
NAMES+=(work)
bash bench/gpu.sh build || exit 1 # incremental where build-gpu/ is left from a call before
for k in "${!pids[@]}"; do
    wait "${pids[k]}" || { tail -30 "$OUT/ab_${NAMES[k]}_build.log"; exit 1; }
done

if [ -n "${M2L_ARGS:-}" ]; then
    for b in "${NAMES[@]}"; do
        echo "m2l-bench $b" >&2
        ${BIN[$b]}/m2l-bench $M2L_ARGS --csv "$OUT/ab_m2l_$b.csv" | sed "s/^/$b /"
    done
fi

F="$OUT/ab.csv"
echo "build,$(build-gpu/bin/fmm-gpu-bench --header)" > "$F"
W=systems/water
cases=("droplet 400 --in $W/spce_droplet_r2.xyzq" "spce_24k 200 --in $W/spce_24k.xyzq")
[ -f $W/build/tile_nx16.xyzq ] && cases+=("spce_100k 200 --in $W/build/tile_nx16.xyzq --tile 2")
[ -f $W/build/tile_nx14.xyzq ] && cases+=("spce_1m 50 --in $W/build/tile_nx14.xyzq --tile 5")
for r in $(seq "$ROUNDS"); do
    for c in "${cases[@]}"; do
        set -- $c
        label=$1 reps=$2
        shift 2
        for prec in $PRECISIONS; do
            for b in "${NAMES[@]}"; do
                echo "round $r $label $prec $b" >&2
                ${BIN[$b]}/fmm-gpu-bench --label "$label" "$@" --periodic --order 7 --precision $prec --reps "$reps" \
                    --no-cpu --reference none | sed "s/^/$b,/" >> "$F"
            done
        done
    done
done
python3 - "$F" "${NAMES[@]}" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
names = sys.argv[2:]
keys = sorted({(r['label'], r['precision']) for r in rows})
print(f"{'system':10} {'precision':9} " + " ".join(f"{n[:12]:>12}" for n in names) + "   (median ms; ratio to the first)")
def median(col, k, b):  # NaN where a build's fmm-gpu-bench has no such column
    v = [float(r[col]) for r in rows if (r['label'], r['precision']) == k and r['build'] == b and r.get(col)]
    return statistics.median(v) if v else float('nan')
for col, what in (('gpu_ms_median', 'evaluation'), ('gpu_route_ms', 'device route of an MD step'),
                  ('route_host_ms', 'host time launching that route'),
                  ('gpu_virial_device_ms', 'a call with energy and virial (host-assembled), wall')):
    print(what)
    for k in keys:
        med = [median(col, k, b) for b in names]
        print(f"{k[0]:10} {k[1]:9} " + " ".join(f"{m:12.4f}" for m in med) + "   " +
              " ".join(f"{m / med[0]:.3f}" for m in med[1:]))
PY
