#!/usr/bin/env bash
# bench/rbf/gpu.sh - FGP-RBF GPU benchmarks. Run from the repo root on the GPU machine after the
# lead's build in build-gpu/ (binaries in build-gpu/bin); writes "$OUT/rbf/". About 2-3 minutes.
#   1. the seed's largest case (Martin & Haase 2014): N = 89,702 points on a latitude-longitude
#      sphere (299 rings x 300 + 2 poles), one mat-vec by the direct GPU sum, BLDTT (GPU) and the
#      CPU direct/series, against their GTX 680 numbers (multipole 0.061 s single /
#      0.25 s double evaluation; brute force 0.095 s single / 2.10 s double);
#   2. one mat-vec of N = 1e6 uniform random centres by the GPU direct sum and GPU BLDTT, and a fit
#      of them to 1e-8 relative residual with each (RBF_FIT_MATVECS, default "direct bldtt"; AUTO picks BLDTT there;
#      target <= 60 s);
#   3. the GPU test (RbfGpu.AgreesWithCpu) if test_rbf was built.
set -u
BIN=${BIN:-build-gpu/bin}
FMM=$BIN/fmm
O="${OUT:-/tmp}/rbf"
mkdir -p "$O"
log="$O/rbf_gpu.txt"
{
echo "# fmm rbf GPU benchmarks, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(nproc) cores; loadavg $(cat /proc/loadavg)"
} >"$log"
awk 'BEGIN { pi = atan2(0, -1); print 0, 0, 1; print 0, 0, -1;
  for (i = 1; i <= 299; i++) { th = pi * i / 300; for (j = 0; j < 300; j++) { ph = 2 * pi * j / 300;
    printf "%.17g %.17g %.17g\n", sin(th) * cos(ph), sin(th) * sin(ph), cos(th) } } }' >"$O/sphere89702.txt"
for spec in "direct cuda" "bldtt cuda" "direct cpu" "series cpu" "bldtt cpu"; do
    set -- $spec
    echo "## matvec N=89702 shape=0.01 method=$1 device=$2" >>"$log"
    timeout 300 "$FMM" rbf matvec --centers "$O/sphere89702.txt" --shape 0.01 --matvec "$1" --device "$2" \
        --tolerance 1e-8 --repeat 5 --sample 500 >>"$log" 2>&1 || echo "failed: exit $?" >>"$log"
done
awk 'BEGIN { srand(2024); for (i = 0; i < 1000000; i++) { x = rand(); y = rand(); z = rand();
  printf "%.9f %.9f %.9f %.17g\n", x, y, z, exp(x) * sin(3 * y) + z * z } }' >"$O/uniform1e6.txt"
# one mat-vec at 1e6 by each GPU method (which one AUTO should pick at this size), then the fit
for mv in direct bldtt; do
    echo "## matvec N=1e6 uniform shape=0.005 method=$mv device=cuda" >>"$log"
    timeout 300 "$FMM" rbf matvec --centers "$O/uniform1e6.txt" --shape 0.005 --matvec $mv --device cuda \
        --tolerance 1e-8 --repeat 3 --sample 500 >>"$log" 2>&1 || echo "failed: exit $?" >>"$log"
done
for mv in ${RBF_FIT_MATVECS:-direct bldtt}; do
    echo "## fit N=1e6 uniform, shape=0.005, tolerance 1e-8, device cuda, matvec $mv" >>"$log"
    timeout 200 "$FMM" rbf fit --centers "$O/uniform1e6.txt" --shape 0.005 --tolerance 1e-8 --device cuda \
        --matvec $mv --out "$O/model1e6.txt" >>"$log" 2>&1 || echo "failed: exit $?" >>"$log"
done
rm -f "$O/model1e6.txt" "$O/uniform1e6.txt"
if [ -x "$BIN/test_rbf" ]; then
    echo "## test_rbf --gtest_filter=RbfGpu*:RbfApi*" >>"$log"
    "$BIN/test_rbf" --gtest_filter='RbfGpu*:RbfApi*' >>"$log" 2>&1 || echo "failed: exit $?" >>"$log"
fi
cat "$log"
