#!/usr/bin/env bash
# test_cli.sh - the contract of the command-line front end `fmm coulomb`.
#
# usage: bash tests/test_cli.sh path/to/build/bin/fmm
#
# Good input runs, writes one line "phi Ex Ey Ez" per particle (input order) and prints
# energy/order/depth/time_s (+ the errors with --reference) on stdout; every bad input exits
# non-zero with exactly one line on stderr and no energy line on stdout.
# Prints one PASS/FAIL line per case and, last, "N passed, M failed"; exits 1 if any failed.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^energy'

# ---------------------------------------------------------------------------------------
# input files
good="$tmp/good.txt"
N=3000
awk -v n=$N 'BEGIN {
    srand(20240601);
    print "# x y z q: a small random system";
    print "";
    s = 0;
    for (i = 0; i < n; i++) {
        q = (i < n - 1) ? 2 * rand() - 1 : -s;   # neutral
        s += q;
        printf "%.17g %.17g %.17g %.17g\n", rand(), rand(), rand(), q;
        if (i == 1000) { print ""; print "# a comment in the middle"; }
    }
}' >"$good"
two="$tmp/two.txt"
printf '0 0 0 1\n1 0 0 -1\n' >"$two"
formats="$tmp/formats.txt"
printf '1.5e-1 +2.5E-01 .75 -0.3\n\t0.5   0.25\t1e0 3e-1\n#\n-1 -2 -3 0\n' >"$formats"
empty="$tmp/empty.txt"
: >"$empty"
comments="$tmp/comments.txt"
printf '# nothing here\n\n# really\n' >"$comments"
three_nums="$tmp/three.txt"
printf '0 0 0 1\n1 0 0\n0 1 0 1\n' >"$three_nums"
five_nums="$tmp/five.txt"
printf '0 0 0 1\n1 0 0 -1 7\n' >"$five_nums"
word="$tmp/word.txt"
printf '0 0 0 1\n1 zero 0 -1\n' >"$word"
nan="$tmp/nan.txt"
printf '0 0 0 1\n1 nan 0 -1\n' >"$nan"
inf="$tmp/inf.txt"
printf '0 0 0 1\n1 0 0 inf\n' >"$inf"
small="$tmp/small.txt" # 300 particles in the unit cube (not neutral)
awk 'BEGIN { srand(7); for (i = 0; i < 300; i++) printf "%.17g %.17g %.17g %.17g\n", rand(), rand(), rand(), 2 * rand() - 1 }' >"$small"
coincident="$tmp/coincident.txt"
printf '0.1 0.2 0.3 1\n0.5 0.5 0.5 -2\n0.1 0.2 0.3 1\n' >"$coincident"

# ---------------------------------------------------------------------------------------
# help
run --help
if [ "$rc" -eq 0 ] && [ -s "$tmp/stdout" ]; then pass "fmm --help"; else fail "fmm --help" "exit $rc"; fi
expect_help coulomb --in --out --box --periodic --vacuum --tolerance --order --depth --leaf --threads \
    --device --precision --repeat --reference --reference-sample

# ---------------------------------------------------------------------------------------
# a good run with --out and --reference
name="good input: run, --out, --reference (N = $N)"
run coulomb --in "$good" --out "$tmp/out.txt" --tolerance 1e-6 --reference
if [ "$rc" -ne 0 ]; then
    fail "$name" "exit $rc"
else
    pass "$name"
    name="good input: stderr is empty"
    if [ -s "$tmp/stderr" ]; then fail "$name" "stderr not empty"; else pass "$name"; fi

    name="good input: output has one line of 4 numbers per particle"
    bad=$(awk 'NF != 4 { print "line " NR ": " NF " fields"; exit }
               { for (k = 1; k <= 4; k++) if ($k !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) { print "line " NR ": not a number: " $k; exit } }' "$tmp/out.txt")
    nl=$(nlines "$tmp/out.txt")
    if [ "$nl" -ne $N ]; then
        fail "$name" "$nl lines, expected $N"
    elif [ -n "$bad" ]; then
        fail "$name" "$bad"
    else
        pass "$name"
    fi

    name="good input: stdout has energy, order, depth, time_s"
    e=$(value energy) p=$(value order) d=$(value depth) t=$(value time_s)
    if awk -v e="$e" -v p="$p" -v d="$d" -v t="$t" 'BEGIN {
            num = "^[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$";
            exit !(e ~ num && p ~ /^[0-9]+$/ && p >= 1 && p <= 30 && d ~ /^[0-9]+$/ && t ~ num && t >= 0) }'; then
        pass "$name"
    else
        fail "$name" "energy='$e' order='$p' depth='$d' time_s='$t'"
    fi

    name="good input: --reference errors (phi <= 1e-6, field <= 1e-3)"
    ep=$(value rel_l2_error_phi) ef=$(value rel_rms_error_field)
    if is_le "$ep" 1e-6 && is_le "$ef" 1e-3; then
        pass "$name"
    else
        fail "$name" "rel_l2_error_phi='$ep' rel_rms_error_field='$ef'"
    fi

    name="good input: energy = 1/2 sum q phi of the output file"
    if grep -v '^#' "$good" | awk 'NF == 4 { print $4 }' | paste -d' ' - "$tmp/out.txt" |
        awk -v e="$e" '{ u += 0.5 * $1 * $2; s += 0.5 * ($1 * $2 < 0 ? -$1 * $2 : $1 * $2) }
                       END { d = u - e; if (d < 0) d = -d; exit !(NR > 0 && d <= 1e-12 * s) }'; then
        pass "$name"
    else
        fail "$name" "energy $e does not match the output file"
    fi
fi

# ---------------------------------------------------------------------------------------
# two charges: phi = (-1, 1), E = (1,0,0) at both, energy -1
name="two charges: analytic values in input order"
run coulomb --in "$two" --out "$tmp/two.out"
if [ "$rc" -ne 0 ]; then
    fail "$name" "exit $rc"
elif awk -v e="$(value energy)" '
        function near(a, b) { return (a - b) * (a - b) <= 1e-24 }
        NR == 1 { ok1 = near($1, -1) && near($2, 1) && near($3, 0) && near($4, 0) }
        NR == 2 { ok2 = near($1, 1) && near($2, 1) && near($3, 0) && near($4, 0) }
        END { exit !(NR == 2 && ok1 && ok2 && near(e, -1)) }' "$tmp/two.out"; then
    pass "$name"
else
    fail "$name" "got $(tr '\n' ';' <"$tmp/two.out") energy $(value energy)"
fi

name="number formats, tabs and a bare '#' line"
run coulomb --in "$formats" --out "$tmp/formats.out"
if [ "$rc" -eq 0 ] && [ "$(nlines "$tmp/formats.out")" -eq 3 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, $(nlines "$tmp/formats.out") output lines (want 3)"
fi

name="--depth -1 is the adaptive tree, as in the API"
run coulomb --in "$good" --depth -1
if [ "$rc" -eq 0 ] && [ -n "$(value depth)" ]; then pass "$name"; else fail "$name" "exit $rc"; fi

name="options --order 6 --depth 2 --threads 1 are applied"
run coulomb --in "$good" --order 6 --depth 2 --threads 1
if [ "$rc" -eq 0 ] && [ "$(value order)" = 6 ] && [ "$(value depth)" = 2 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, order '$(value order)', depth '$(value depth)'"
fi

name="--box 1 with all particles inside"
run coulomb --in "$good" --box 1 --reference
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error_phi)" 1e-6; then
    pass "$name"
else
    fail "$name" "exit $rc, rel_l2_error_phi '$(value rel_l2_error_phi)'"
fi

name="--periodic --box 1 --reference (tin-foil, net charge: neutralising background, virial)"
run coulomb --in "$small" --periodic --box 1 --tolerance 1e-3 --reference --out "$tmp/per.out"
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error_phi)" 1e-3 && is_le "$(value rel_error_virial)" 1e-2 &&
    [ "$(nlines "$tmp/per.out")" -eq 300 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, rel_l2_error_phi '$(value rel_l2_error_phi)' virial '$(value rel_error_virial)'"
fi

name="stdout without --out has no per-particle lines"
run coulomb --in "$good"
if [ "$rc" -eq 0 ] && [ "$(nlines "$tmp/stdout")" -lt 20 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, $(nlines "$tmp/stdout") stdout lines"
fi

# ---------------------------------------------------------------------------------------
# bad input: non-zero exit, one line on stderr, no energy line
expect_bad "missing input file" coulomb --in "$tmp/does_not_exist.txt"
expect_bad "empty input file" coulomb --in "$empty"
expect_bad "input with only comments" coulomb --in "$comments"
expect_bad "a line with 3 numbers" coulomb --in "$three_nums"
expect_bad "a line with 5 numbers" coulomb --in "$five_nums"
expect_bad "a word instead of a number" coulomb --in "$word"
expect_bad "a NaN coordinate" coulomb --in "$nan"
expect_bad "an Inf charge" coulomb --in "$inf"
expect_bad "two coincident particles" coulomb --in "$coincident"
expect_bad "unknown option" coulomb --in "$good" --frobnicate 3
expect_bad "unknown option at the end" coulomb --in "$good" --frobnicate
expect_bad "missing value of --in" coulomb --in
expect_bad "missing value of --tolerance" coulomb --in "$good" --tolerance
expect_bad "no --in" coulomb --tolerance 1e-6
expect_bad "--tolerance 0" coulomb --in "$good" --tolerance 0
expect_bad "--tolerance 1e-20" coulomb --in "$good" --tolerance 1e-20
expect_bad "--tolerance abc" coulomb --in "$good" --tolerance abc
expect_bad "--order 99" coulomb --in "$good" --order 99
expect_bad "--order -1" coulomb --in "$good" --order -1
expect_bad "--order 2.5" coulomb --in "$good" --order 2.5
expect_bad "--depth 21" coulomb --in "$good" --depth 21
expect_bad "--depth -2" coulomb --in "$good" --depth -2
expect_bad "--depth 4294967296 (does not fit an int)" coulomb --in "$good" --depth 4294967296
expect_bad "--threads -1" coulomb --in "$good" --threads -1
expect_bad "--repeat -1" coulomb --in "$good" --repeat -1
expect_bad "--box 0.5 with particles outside it" coulomb --in "$good" --box 0.5
expect_bad "--box -1" coulomb --in "$good" --box -1
expect_bad "--out into a missing directory" coulomb --in "$good" --out "$tmp/no/such/dir/out.txt"
expect_bad "--periodic without --box" coulomb --in "$small" --periodic
expect_bad "--periodic --vacuum with a net charge" coulomb --in "$small" --periodic --vacuum --box 1
expect_bad "--device gpu (not a device name)" coulomb --in "$good" --device gpu
expect_bad "--precision mixed on the CPU" coulomb --in "$good" --precision mixed
expect_bad "--precision half (not a precision)" coulomb --in "$good" --device cuda --precision half

# --device cuda: on a machine with a GPU the same energy as the CPU at the same order and
# depth; without one, a clear error (one stderr line naming CUDA), never a crash
name="--device cuda: same energy as the CPU, or a clear no-device error"
run coulomb --in "$good" --order 6 --depth 2
ecpu=$(value energy)
run coulomb --in "$good" --order 6 --depth 2 --device cuda
if [ "$rc" -eq 0 ]; then
    egpu=$(value energy)
    if is_close "$egpu" "$ecpu" 1e-12; then
        pass "$name"
    else
        fail "$name" "cuda energy '$egpu' vs cpu '$ecpu'"
    fi
elif [ "$rc" -lt 124 ] && grep -q CUDA "$tmp/stderr" && [ "$(nlines "$tmp/stderr")" -eq 1 ]; then
    pass "$name (no device here)"
else
    fail "$name" "exit $rc"
fi
expect_bad "unknown command" frobnicate --in "$good"

# generate: a kind, then options; its output is coulomb's input
expect_help generate uniform plummer sphere water --n --molecules --seed --out
name="generate water --molecules 50: 150 atoms, the box as the file's '# box L L L' line, nothing on stdout"
run generate water --molecules 50 --seed 3 --out "$tmp/water.txt"
box_line=$(grep '^# box' "$tmp/water.txt" 2>/dev/null)
L=$(awk '/^# box/ { print $3; exit }' "$tmp/water.txt" 2>/dev/null)
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/stdout" ] && [ "$(head -1 "$tmp/water.txt")" = "$box_line" ] &&
    [ "$(grep -vc '^#' "$tmp/water.txt")" -eq 150 ] && is_le 1 "$L" && is_le "$L" 2 &&
    [ "$(awk '/^# box/ { print NF }' "$tmp/water.txt")" -eq 5 ] &&
    [ "$(awk '/^# box/ { print ($3 == $4 && $4 == $5) }' "$tmp/water.txt")" -eq 1 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, stdout '$(head -c 80 "$tmp/stdout")', box line '$box_line'"
fi
name="generate water: the box line's edge holds the atoms at water's density, read back by coulomb"
run coulomb --in "$tmp/water.txt" --periodic --box "$L"
if [ "$rc" -eq 0 ] && [ "$(value n)" = 150 ] &&
    awk -v L="$L" '!/^#/ { for (d = 1; d <= 3; d++) if ($d < 0 || $d >= L) exit 1 }
        END { d = 50 / (L * L * L); exit !(d > 30 && d < 37) }' "$tmp/water.txt"; then
    pass "$name"
else
    fail "$name" "exit $rc, n '$(value n)', L '$L'"
fi
name="generate water's box line is what coulomb --periodic reads without --box: the same energy"
e_box=$(value energy)
run coulomb --in "$tmp/water.txt" --periodic
if [ "$rc" -eq 0 ] && [ -n "$e_box" ] && [ "$(value energy)" = "$e_box" ]; then
    pass "$name"
else
    fail "$name" "exit $rc, energy '$(value energy)' vs '$e_box' with --box"
fi
name="--periodic --vacuum --reference on neutral water: vacuum-converted Ewald reference, virial printed"
run coulomb --in "$tmp/water.txt" --periodic --vacuum --box "$L" --tolerance 1e-6 --reference
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error_phi)" 1e-6 && is_le "$(value rel_error_energy)" 1e-6 &&
    is_le "$(value rel_error_virial)" 1e-5; then
    pass "$name"
else
    fail "$name" "exit $rc, phi '$(value rel_l2_error_phi)' energy '$(value rel_error_energy)' virial '$(value rel_error_virial)'"
fi
expect_bad "generate: no kind" generate --n 10 --out "$tmp/g.txt"
expect_bad "generate: unknown kind" generate cube --n 10 --out "$tmp/g.txt"
expect_bad "generate: two kinds" generate uniform sphere --n 10 --out "$tmp/g.txt"
expect_bad "generate: --n 0" generate uniform --n 0 --out "$tmp/g.txt"
expect_msg "generate water --n: water counts molecules, says --molecules" "give --molecules M \(3M atoms\), not --n" \
    generate water --n 50 --out "$tmp/g.txt"
expect_msg "generate water without a count" "give --molecules M" generate water --out "$tmp/g.txt"
expect_msg "generate uniform --molecules: points are --n" "uniform needs --n N \(points\); --molecules is for water" \
    generate uniform --molecules 5 --out "$tmp/g.txt"
expect_msg "generate: --molecules 0 names the range" "--molecules must be >= 1" generate water --molecules 0 --out "$tmp/g.txt"

# '-' names the standard input of every input file and the standard output of every output file
# run_in FILE ARGS...: run, with FILE as the standard input
run_in() {
    local in=$1
    shift
    timeout 120 "$FMM" "$@" >"$tmp/stdout" 2>"$tmp/stderr" <"$in"
    rc=$?
}
name="coulomb --in -: reads the standard input, the same energy as from the file"
run coulomb --in "$good" --order 6
e_file=$(value energy)
run_in "$good" coulomb --in - --order 6
if [ "$rc" -eq 0 ] && [ "$(value n)" = $N ] && [ "$(value energy)" = "$e_file" ]; then
    pass "$name"
else
    fail "$name" "exit $rc, n '$(value n)', energy '$(value energy)' vs '$e_file'"
fi
name="coulomb --out -: the values on the standard output, the same as in a file"
run coulomb --in "$two" --out "$tmp/two.out"
run coulomb --in "$two" --out -
if [ "$rc" -eq 0 ] && [ "$(grep -c '^-*1 1 0 0$' "$tmp/stdout")" -eq 2 ] &&
    [ "$(grep '^-*1 1 0 0$' "$tmp/stdout")" = "$(cat "$tmp/two.out")" ] && [ "$(value n)" = 2 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, $(tr '\n' ';' <"$tmp/stdout")"
fi
name="generate --out - | coulomb --in -: a pipe"
timeout 120 "$FMM" generate water --molecules 20 --seed 4 --out - 2>"$tmp/stderr" |
    timeout 120 "$FMM" coulomb --in - --periodic --box 1 >"$tmp/stdout" 2>>"$tmp/stderr"
st="${PIPESTATUS[*]}"
if [ "$st" = "0 0" ] && [ "$(value n)" = 60 ]; then
    pass "$name"
else
    fail "$name" "exit $st, n '$(value n)'"
fi
name="generate --out -: the same bytes as the file"
run generate plummer --n 200 --seed 5 --out "$tmp/pl.txt"
run generate plummer --n 200 --seed 5 --out -
if [ "$rc" -eq 0 ] && cmp -s "$tmp/stdout" "$tmp/pl.txt"; then pass "$name"; else fail "$name" "exit $rc"; fi
expect_msg_in() { # expect_msg_in NAME REGEX FILE ARGS...: expect_msg with FILE as the standard input
    local name=$1 re=$2
    shift 2
    run_in "$@"
    check_bad "$name" "$re"
}
printf '0 0 0 1\n\0 1 0 0 -1\n' >"$tmp/nul_stdin.txt"
expect_msg_in "--in - with a NUL byte names the standard input's line" "^fmm coulomb: -:2: NUL byte" \
    "$tmp/nul_stdin.txt" coulomb --in -
expect_msg_in "--in - with nothing on the standard input" "no particles|no rows|empty" /dev/null coulomb --in -
name="--out - onto a full device: a clean error that says why"
timeout 120 "$FMM" coulomb --in "$two" --out - >/dev/full 2>"$tmp/stderr" </dev/null
rc=$?
: >"$tmp/stdout"
check_bad "$name" "cannot write '-': No space left on device"
name="fgt --sources - --targets FILE --out -: the same values as with files"
awk '!/^#/ && NF { print $1, $2, $3, $4 }' "$small" >"$tmp/fgt_src.txt"
awk '!/^#/ && NF { print $1, $2, $3 }' "$small" >"$tmp/fgt_trg.txt"
run fgt --sources "$tmp/fgt_src.txt" --targets "$tmp/fgt_trg.txt" --bandwidth 0.3 --out "$tmp/fgt.out"
run_in "$tmp/fgt_src.txt" fgt --sources - --targets "$tmp/fgt_trg.txt" --bandwidth 0.3 --out -
if [ "$rc" -eq 0 ] && [ -s "$tmp/fgt.out" ] &&
    [ "$(head -n "$(nlines "$tmp/fgt.out")" "$tmp/stdout")" = "$(cat "$tmp/fgt.out")" ]; then
    pass "$name"
else
    fail "$name" "exit $rc"
fi

# ---------------------------------------------------------------------------------------
# issue 33: every input gets a correct result or a clear error that names the file and line
printf '0 0 0 1\n\0 1 0 0 -1\n' >"$tmp/nul_start.txt"
printf '0 0 0 1\n1 0 0 -1\0\n' >"$tmp/nul_end.txt"
printf '0 0 0 1\n1 0 0 -1e-400\n' >"$tmp/underflow.txt"
printf '0 0 0 1\n1 0 0 -1e999\n' >"$tmp/overflow.txt"
expect_msg "--in /dev/zero: an error naming line 1, no hang" "/dev/zero:1: NUL byte" coulomb --in /dev/zero
expect_msg "a line starting with a NUL byte is an error naming it" "nul_start.txt:2: NUL byte" \
    coulomb --in "$tmp/nul_start.txt"
expect_msg "a NUL byte at the end of a line" "nul_end.txt:2: NUL byte" coulomb --in "$tmp/nul_end.txt"
expect_msg "a charge of 1e-400 (nonzero, would become 0)" "underflow.txt:2: column 4: '-1e-400' is out of range" \
    coulomb --in "$tmp/underflow.txt"
expect_msg "a charge of 1e999" "overflow.txt:2: column 4: '-1e999' is out of range" coulomb --in "$tmp/overflow.txt"
expect_msg "--in a directory" "'?$tmp'?: cannot open: Is a directory" coulomb --in "$tmp"
name="a subnormal number is kept (read as written)"
printf '0 0 0 1\n1 0 0 4.9406564584124654e-324\n' >"$tmp/subnormal.txt"
run coulomb --in "$tmp/subnormal.txt" --out "$tmp/subnormal.out"
if [ "$rc" -eq 0 ] && [ "$(awk 'NR == 1 { print $1 }' "$tmp/subnormal.out")" = 4.9406564584124654e-324 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, $(tr '\n' ';' <"$tmp/subnormal.out")"
fi

# messages that name the option, its range, and what else is needed
expect_msg "--precision mixed on the CPU names --device cuda" "--precision mixed needs --device cuda" \
    coulomb --in "$good" --precision mixed
expect_msg "--tolerance 1e-20 names the option and its range" "--tolerance must be in \[1e-12, 0.001\], got '1e-20'" \
    coulomb --in "$good" --tolerance 1e-20
expect_msg "--tolerance 1e-400 names the option" "--tolerance expects a finite number in \[1e-12, 0.001\]" \
    coulomb --in "$good" --tolerance 1e-400
expect_msg "--order 99 names the range" "--order must be in 1..50, got '99'" coulomb --in "$good" --order 99
expect_msg "--order 2.5 says an integer" "--order expects an integer in 1..50, got '2.5'" coulomb --in "$good" --order 2.5
expect_msg "--depth 21 names the range" "--depth must be in -1..20" coulomb --in "$good" --depth 21
expect_msg "--leaf 5000 names the range" "--leaf must be in 0..4096" coulomb --in "$good" --leaf 5000
expect_msg "--threads 100000 names the range" "--threads must be in 0..1024, got '100000'" \
    coulomb --in "$good" --threads 100000
expect_msg "--threads 2147483647 names the range" "--threads must be in 0..1024" \
    coulomb --in "$good" --threads 2147483647
expect_msg "--box -1 names the range" "--box must be > 0, got '-1'" coulomb --in "$good" --box -1
expect_msg "--box 1 1 0 names the range" "--box must be > 0, got '0'" coulomb --in "$good" --box 1 1 0
expect_msg "--repeat -1 names the range" "--repeat must be >= 0" coulomb --in "$good" --repeat -1
expect_msg "--reference-sample 0 names the range" "--reference-sample must be >= 1" \
    coulomb --in "$good" --reference --reference-sample 0
expect_msg "two coincident particles: both lines named" "coincident.txt:1 and .*coincident.txt:3: two particles at the same position" \
    coulomb --in "$coincident"
printf '0.25 0.5 0.75 1\n0.5 0.5 0.5 -2\n1.25 -0.5 0.75 1\n' >"$tmp/coincident_periodic.txt"
expect_msg "periodic: particles at the same position after wrapping: both lines named" \
    "coincident_periodic.txt:1 and .*coincident_periodic.txt:3: .*periodic box" \
    coulomb --in "$tmp/coincident_periodic.txt" --periodic --box 1
expect_msg "generate --n 0 names the range" "--n must be >= 1, got '0'" generate uniform --n 0 --out "$tmp/g.txt"

# output files: written beside the target and renamed over it when complete; a failed write
# keeps the old file and says why
expect_kept "coulomb --out past a 8 KiB file size limit" "$tmp/kept.out" 8 coulomb --in "$good" --out "$tmp/kept.out"
expect_kept "generate --out past a 8 KiB file size limit" "$tmp/kept.txt" 8 generate uniform --n 1000 --out "$tmp/kept.txt"
expect_msg "--out /dev/full says why" "cannot write '/dev/full': No space left on device" \
    coulomb --in "$good" --out /dev/full
expect_msg "--out into a missing directory says why" "No such file or directory" \
    coulomb --in "$good" --out "$tmp/no/such/dir/out.txt"
expect_msg "--out a directory says why" "Is a directory" coulomb --in "$good" --out "$tmp"
name="--out /dev/stdout (a symbolic link to a pipe here) is written directly"
timeout 120 "$FMM" coulomb --in "$two" --out /dev/stdout 2>"$tmp/stderr" </dev/null | cat >"$tmp/piped"
if [ "${PIPESTATUS[0]}" -eq 0 ] && [ "$(grep -c '^-*1 1 0 0$' "$tmp/piped")" -eq 2 ] && [ -L /dev/stdout ]; then
    pass "$name"
else
    fail "$name" "exit ${PIPESTATUS[0]}, $(tr '\n' ';' <"$tmp/piped")"
fi
name="--out through a symbolic link writes the file it points to and keeps the link"
printf 'old\n' >"$tmp/target.out"
ln -sf "$tmp/target.out" "$tmp/link.out"
run coulomb --in "$two" --out "$tmp/link.out"
if [ "$rc" -eq 0 ] && [ -L "$tmp/link.out" ] && [ "$(nlines "$tmp/target.out")" -eq 2 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, link kept: $([ -L "$tmp/link.out" ] && echo yes || echo no), $(nlines "$tmp/target.out") lines"
fi
name="--out over an existing file replaces it, keeping its permissions"
printf 'old\n' >"$tmp/mode.out"
chmod 640 "$tmp/mode.out"
run coulomb --in "$two" --out "$tmp/mode.out"
if [ "$rc" -eq 0 ] && [ "$(nlines "$tmp/mode.out")" -eq 2 ] && [ "$(stat -c %a "$tmp/mode.out")" = 640 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, $(nlines "$tmp/mode.out") lines, mode $(stat -c %a "$tmp/mode.out")"
fi
no_temp_files "no temporary file left after all the runs" "$tmp"

name="no arguments at all"
run
if [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; then pass "$name"; else fail "$name" "exit $rc"; fi

finish
