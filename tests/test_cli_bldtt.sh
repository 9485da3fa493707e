#!/usr/bin/env bash
# test_cli_bldtt.sh - the contract of `fmm bldtt`.
#
# usage: bash tests/test_cli_bldtt.sh path/to/build/bin/fmm
#
# Good input runs, writes one line per target (input order) and prints time_s (+ rel_l2_error
# with --reference) on stdout; every bad input exits non-zero with exactly one line on stderr
# and no time_s line on stdout. Prints PASS/FAIL per case and "N passed, M failed" last.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^time_s'

src="$tmp/src.txt"
N=4000
awk -v n=$N 'BEGIN { srand(11); print "# x y z q"; for (i = 0; i < n; i++) {
    printf "%.17g %.17g %.17g %.17g\n", 2*rand()-1, 2*rand()-1, 2*rand()-1, 2*rand()-1;
    if (i == 100) print "" } }' >"$src"
trg="$tmp/trg.txt"
awk 'BEGIN { srand(12); print "# x y z"; for (i = 0; i < 1500; i++)
    printf "%.17g %.17g %.17g\n", 3*rand()-1.5, 3*rand()-1.5, 3*rand()-1.5 }' >"$trg"

expect_help bldtt --sources --targets --kernel --param --theta --degree --leaf --method --device \
    --threads --gradient --out --reference --reference-sample
run --help
if grep -q bldtt "$tmp/stdout"; then pass "fmm --help lists bldtt"; else fail "fmm --help lists bldtt" "missing"; fi

# every kernel, targets = sources, with --out and --reference
for k in coulomb yukawa regularized sinc multiquadric; do
    name="$k: targets = sources, --out, --reference"
    run bldtt --sources "$src" --kernel "$k" --degree 6 --leaf 100 --out "$tmp/out.txt" --reference
    e=$(value rel_l2_error)
    if [ "$rc" -ne 0 ]; then fail "$name" "exit $rc"
    elif [ "$(nlines "$tmp/out.txt")" -ne $N ]; then fail "$name" "$(nlines "$tmp/out.txt") output lines, expected $N"
    elif ! is_le "$e" 1e-4; then fail "$name" "rel_l2_error '$e' > 1e-4"
    elif [ -z "$(value time_s)" ]; then fail "$name" "no time_s"
    else pass "$name (error $e)"; fi
done

# --reference at an extreme scale: the error is a number, not NaN or 0 from squares that overflow
awk '/^#/ || NF == 0 { next } { printf "%.17g %.17g %.17g %s\n", $1 * 1e-150, $2 * 1e-150, $3 * 1e-150, $4 }' \
    "$src" >"$tmp/tiny.txt"
name="coulomb: --reference on coordinates x 1e-150"
run bldtt --sources "$tmp/tiny.txt" --degree 6 --leaf 100 --reference
e=$(value rel_l2_error)
if [ "$rc" -ne 0 ]; then fail "$name" "exit $rc"
elif ! is_le "$e" 1e-4 || is_le "$e" 0; then fail "$name" "rel_l2_error '$e'"
else pass "$name (error $e)"; fi

# separate targets, gradient, BLTC, the output is the direct sum at a target (cross-check one line)
name="coulomb: --targets, --gradient, --reference"
run bldtt --sources "$src" --targets "$trg" --gradient --out "$tmp/out.txt" --reference --degree 6 --leaf 100
e=$(value rel_l2_error); eg=$(value rel_l2_error_gradient)
if [ "$rc" -ne 0 ]; then fail "$name" "exit $rc"
elif [ "$(nlines "$tmp/out.txt")" -ne 1500 ]; then fail "$name" "wrong number of output lines"
elif [ "$(awk 'NF != 4' "$tmp/out.txt" | wc -l)" -ne 0 ]; then fail "$name" "output lines are not phi dx dy dz"
elif ! is_le "$e" 1e-4 || ! is_le "$eg" 1e-4; then fail "$name" "errors $e $eg"
else pass "$name (errors $e, $eg)"; fi
name="first output line equals an awk direct sum"
ref=$(awk -v tx="$(awk '!/^#/ && NF {print $1; exit}' "$trg")" -v ty="$(awk '!/^#/ && NF {print $2; exit}' "$trg")" \
    -v tz="$(awk '!/^#/ && NF {print $3; exit}' "$trg")" \
    '!/^#/ && NF == 4 { d = sqrt(($1-tx)^2 + ($2-ty)^2 + ($3-tz)^2); if (d > 0) s += $4 / d } END { printf "%.17g", s }' "$src")
got=$(awk 'NR == 1 {print $1}' "$tmp/out.txt")
if is_close "$got" "$ref" 1e-3 1e-9; then
    pass "$name ($got vs $ref)"; else fail "$name" "$got vs $ref"; fi
name="--method bltc"
run bldtt --sources "$src" --method bltc --degree 6 --leaf 100 --reference
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error)" 1e-4 && [ "$(value pairs_cc)" = 0 ]; then pass "$name"; else fail "$name" "exit $rc"; fi
name="--param and --threads"
run bldtt --sources "$src" --kernel yukawa --param 2 --threads 1 --reference --degree 5 --leaf 100
if [ "$rc" -eq 0 ] && [ "$(value param)" = 2 ] && is_le "$(value rel_l2_error)" 1e-4; then pass "$name"; else fail "$name" "exit $rc"; fi

# bad input
printf '0 0 0 1\n1 nan 0 -1\n' >"$tmp/nan.txt"
printf '0 0 0 1\n1 0 0\n' >"$tmp/three.txt"
printf '0 0 0\n1 0 0 5\n' >"$tmp/trg4.txt"
printf "# nothing\n" >"$tmp/empty.txt"
printf "0 0 0\n1 nan 0\n" >"$tmp/nan3.txt"
expect_bad "no --sources" bldtt
expect_bad "unknown option" bldtt --sources "$src" --bogus 1
expect_bad "missing value" bldtt --sources
expect_bad "missing file" bldtt --sources "$tmp/nope.txt"
expect_bad "unknown kernel" bldtt --sources "$src" --kernel laplace
expect_bad "theta 1" bldtt --sources "$src" --theta 1
expect_bad "theta 0" bldtt --sources "$src" --theta 0
expect_bad "theta text" bldtt --sources "$src" --theta abc
expect_bad "degree 17" bldtt --sources "$src" --degree 17
expect_bad "degree -1" bldtt --sources "$src" --degree -1
expect_bad "leaf -5" bldtt --sources "$src" --leaf -5
expect_bad "regularized eps 0" bldtt --sources "$src" --kernel regularized --param 0
expect_bad "sinc negative" bldtt --sources "$src" --kernel sinc --param -1
expect_bad "coulomb with --param" bldtt --sources "$src" --param 1
expect_bad "param nan" bldtt --sources "$src" --kernel yukawa --param nan
expect_bad "bad method" bldtt --sources "$src" --method fmm
expect_bad "bad device" bldtt --sources "$src" --device tpu
expect_bad "threads -1" bldtt --sources "$src" --threads -1
expect_bad "NaN in sources" bldtt --sources "$tmp/nan.txt"
expect_bad "3 numbers in sources" bldtt --sources "$tmp/three.txt"
expect_bad "4 numbers in targets" bldtt --sources "$src" --targets "$tmp/trg4.txt"
expect_bad "empty sources" bldtt --sources "$tmp/empty.txt"
expect_bad "empty targets" bldtt --sources "$src" --targets "$tmp/empty.txt"
expect_bad "NaN in targets" bldtt --sources "$src" --targets "$tmp/nan3.txt"
expect_bad "unwritable --out" bldtt --sources "$src" --out "$tmp/no/such/dir/out.txt"
expect_bad "reference-sample 0" bldtt --sources "$src" --reference --reference-sample 0
# issue 33: messages name the option and its range; inputs and outputs as every command's
expect_msg "--theta 1.2 names the option and its range" "--theta must be in \(0, 1\), got '1.2'" \
    bldtt --sources "$src" --theta 1.2
expect_msg "--theta abc names the option and its range" "--theta expects a finite number in \(0, 1\), got 'abc'" \
    bldtt --sources "$src" --theta abc
expect_msg "--degree 17 names the range" "--degree must be in 0..16, got '17'" bldtt --sources "$src" --degree 17
expect_msg "--leaf -5 names the range" "--leaf must be in 0..100000, got '-5'" bldtt --sources "$src" --leaf -5
expect_msg "--threads 100000 names the range" "--threads must be in 0..1024" bldtt --sources "$src" --threads 100000
expect_msg "regularized --param 0 names the range" "--param of the regularized kernel must be > 0, got 0" \
    bldtt --sources "$src" --kernel regularized --param 0
expect_msg "sinc --param -1 names the range" "--param of the sinc kernel must be > 0" \
    bldtt --sources "$src" --kernel sinc --param -1
expect_msg "yukawa --param -1 names the range" "--param of the yukawa kernel must be >= 0" \
    bldtt --sources "$src" --kernel yukawa --param -1
expect_msg "--reference-sample 0 names the range" "--reference-sample must be >= 1" \
    bldtt --sources "$src" --reference --reference-sample 0
expect_msg "--sources /dev/zero" "/dev/zero:1: NUL byte" bldtt --sources /dev/zero
printf '0 0 0\n1 0 1e-400\n' >"$tmp/tiny.txt"
expect_msg "a target coordinate of 1e-400 names the line" "tiny.txt:2: column 3: '1e-400' is out of range" \
    bldtt --sources "$src" --targets "$tmp/tiny.txt"
expect_kept "--out past a 8 KiB file size limit" "$tmp/kept.txt" 8 bldtt --sources "$src" --out "$tmp/kept.txt"
expect_msg "--out /dev/full says why" "No space left on device" bldtt --sources "$src" --out /dev/full
if [ "$(bash -c 'command -v nvidia-smi' 2>/dev/null)" = "" ]; then
    expect_bad "cuda without a GPU" bldtt --sources "$src" --device cuda
else
    run bldtt --sources "$src" --device cuda --reference --degree 6 --leaf 100
    if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error)" 1e-4; then pass "--device cuda"; else fail "--device cuda" "exit $rc"; fi
fi

finish
