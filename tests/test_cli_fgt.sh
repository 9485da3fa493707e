#!/usr/bin/env bash
# test_cli_fgt.sh - the contract of `fmm fgt`.
#
# usage: bash tests/test_cli_fgt.sh path/to/build/bin/fmm
#
# Good input runs, writes one value per target (target order), prints time_s and, with
# --reference, max_abs_error_over_sum_q <= tolerance; every bad input exits non-zero with
# exactly one line on stderr and no time_s line on stdout.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^time_s'

# good runs: dims 1-3, with and without targets
for dim in 1 2 3; do
    awk -v n=2000 -v d=$dim 'BEGIN { srand(7 + d); print "# sources";
        for (i = 0; i < n; i++) { for (k = 0; k < d; k++) printf "%.17g ", rand(); printf "%.17g\n", 2 * rand() - 1;
            if (i == 10) print "" } }' >"$tmp/src$dim.txt"
    awk -v n=1500 -v d=$dim 'BEGIN { srand(70 + d);
        for (i = 0; i < n; i++) { for (k = 0; k < d; k++) printf "%.17g%s", rand(), (k < d - 1 ? " " : "\n") } }' >"$tmp/trg$dim.txt"
    for tol in 1e-3 1e-8; do
        name="good dim $dim tol $tol"
        run fgt --sources "$tmp/src$dim.txt" --targets "$tmp/trg$dim.txt" --bandwidth 0.1 --tolerance $tol \
            --out "$tmp/g.txt" --reference --threads 2
        e=$(value max_abs_error_over_sum_q)
        if [ "$rc" -ne 0 ]; then fail "$name" "exit status $rc"
        elif [ -z "$(value time_s)" ]; then fail "$name" "no time_s line"
        elif [ "$(nlines "$tmp/g.txt")" -ne 1500 ]; then fail "$name" "--out has $(nlines "$tmp/g.txt") lines, expected 1500"
        elif ! is_le "$e" "$tol"; then fail "$name" "max_abs_error_over_sum_q '$e' > $tol"
        elif [ "$(value dim)" != "$dim" ]; then fail "$name" "dim '$(value dim)'"
        else pass "$name"; fi
    done
done
name="targets default to the sources"
run fgt --sources "$tmp/src3.txt" --bandwidth 0.05 --out "$tmp/g.txt" --reference
if [ "$rc" -eq 0 ] && [ "$(nlines "$tmp/g.txt")" -eq 2000 ] && is_le "$(value max_abs_error_over_sum_q)" 1e-6; then
    pass "$name"; else fail "$name" "rc $rc, $(nlines "$tmp/g.txt") lines, error '$(value max_abs_error_over_sum_q)'"; fi
expect_help fgt --sources --targets --bandwidth --tolerance --device --threads --out --reference \
    --reference-sample

# bad input
printf '0.1 0.2 0.3 1\nnan 0.2 0.3 1\n' >"$tmp/nan.txt"
printf '0.1 0.2 0.3 1\n0.2 0.2 1\n' >"$tmp/ragged.txt"
printf '# nothing\n\n' >"$tmp/empty.txt"
printf '0.1 0.2 0.3 1\n0.1 abc 0.3 1\n' >"$tmp/text.txt"
printf '0.5\n0.7\n' >"$tmp/onecol.txt"
printf '0.1 0.2\n' >"$tmp/trg2col.txt"
expect_bad "no --sources" fgt --bandwidth 0.1
expect_bad "no --bandwidth" fgt --sources "$tmp/src3.txt"
expect_bad "bandwidth 0" fgt --sources "$tmp/src3.txt" --bandwidth 0
expect_bad "bandwidth negative" fgt --sources "$tmp/src3.txt" --bandwidth -0.1
expect_bad "bandwidth nan" fgt --sources "$tmp/src3.txt" --bandwidth nan
expect_bad "bandwidth text" fgt --sources "$tmp/src3.txt" --bandwidth wide
expect_bad "tolerance too small" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --tolerance 1e-15
expect_bad "tolerance too large" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --tolerance 0.5
expect_bad "missing file" fgt --sources "$tmp/none.txt" --bandwidth 0.1
expect_bad "NaN coordinate" fgt --sources "$tmp/nan.txt" --bandwidth 0.1
expect_bad "ragged rows" fgt --sources "$tmp/ragged.txt" --bandwidth 0.1
expect_bad "empty file" fgt --sources "$tmp/empty.txt" --bandwidth 0.1
expect_bad "non-numeric" fgt --sources "$tmp/text.txt" --bandwidth 0.1
expect_bad "one column" fgt --sources "$tmp/onecol.txt" --bandwidth 0.1
expect_bad "targets of another dimension" fgt --sources "$tmp/src3.txt" --targets "$tmp/trg2col.txt" --bandwidth 0.1
expect_bad "empty targets" fgt --sources "$tmp/src3.txt" --targets "$tmp/empty.txt" --bandwidth 0.1
expect_bad "bad device" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --device tpu
expect_bad "negative threads" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --threads -2
expect_bad "unknown option" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --frobnicate 1
expect_bad "option without value" fgt --sources "$tmp/src3.txt" --bandwidth
expect_bad "unwritable --out" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --out "$tmp/no/such/dir/g.txt"

# issue 33: messages name the option and its range; inputs and outputs as every command's
expect_msg "--bandwidth 0 names the range" "--bandwidth must be > 0, got '0'" fgt --sources "$tmp/src3.txt" --bandwidth 0
expect_msg "--bandwidth 1e-400 names the option" "--bandwidth expects a finite number > 0, got '1e-400'" \
    fgt --sources "$tmp/src3.txt" --bandwidth 1e-400
expect_msg "--tolerance 1e-15 names the range" "--tolerance must be in \[1e-12, 0.1\], got '1e-15'" \
    fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --tolerance 1e-15
expect_msg "--threads 100000 names the range" "--threads must be in 0..1024" \
    fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --threads 100000
expect_msg "--sources /dev/zero" "/dev/zero:1: NUL byte" fgt --sources /dev/zero --bandwidth 0.1
printf '0.1 0.2 0.3 1\n0.1 0.2 0.3 1e999\n' >"$tmp/huge.txt"
expect_msg "a weight of 1e999 names the line" "huge.txt:2: column 4: '1e999' is out of range" \
    fgt --sources "$tmp/huge.txt" --bandwidth 0.1
expect_kept "--out past a 8 KiB file size limit" "$tmp/kept.txt" 8 fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --out "$tmp/kept.txt"
expect_msg "--out /dev/full says why" "No space left on device" fgt --sources "$tmp/src3.txt" --bandwidth 0.1 --out /dev/full

finish
