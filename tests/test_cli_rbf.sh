#!/usr/bin/env bash
# test_cli_rbf.sh - the contract of `fmm rbf fit|eval|deform|matvec`.
# usage: bash tests/test_cli_rbf.sh path/to/fmm
# Good input: exit 0, empty stderr, the documented stdout keys, output files of the right shape,
# the fitted model reproducing the data at the centres; bad input: non-zero exit (no crash)
# and exactly one line on stderr. Last line: "N passed, M failed"; exit 1 if any failed.
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^iterations'

c="$tmp/centers.txt"
awk 'BEGIN { srand(11); print "# x y z f"; for (i = 0; i < 1500; i++) { x = rand(); y = rand(); z = rand();
      printf "%.17g %.17g %.17g %.17g\n", x, y, z, exp(x) * sin(3 * y) + z * z } }' >"$c"

expect_help rbf fit eval deform matvec --centers --out --model --points --mesh --displacements --shape \
    --tolerance --lset --max-iter --dense-max --matvec --series-tol --precision --device --threads --seed \
    --repeat --sample

run rbf fit --centers "$c" --shape 0.05 --tolerance 1e-9 --out "$tmp/model.txt"
if [ "$rc" -ne 0 ]; then fail "fit" "exit $rc"; else
    pass "fit"
    if [ -s "$tmp/stderr" ]; then fail "fit: stderr empty" "not empty"; else pass "fit: stderr empty"; fi
    ok=1; for k in n iterations max_residual single_passes time_s; do [ -n "$(value $k)" ] || ok=0; done
    [ "$(value solver)" = fgp ] || ok=0
    if [ $ok -eq 1 ]; then pass "fit: stdout keys"; else fail "fit: stdout keys" "$(cat "$tmp/stdout")"; fi
    r=$(value max_residual)
    if is_le "$r" 1e-9; then pass "fit: max_residual <= tolerance"; else fail "fit: max_residual" "$r"; fi
    run rbf eval --model "$tmp/model.txt" --points "$c" --out "$tmp/s.txt"
    if [ "$rc" -ne 0 ]; then fail "eval" "exit $rc"; else
        pass "eval"
        nl=$(nlines "$tmp/s.txt")
        if [ "$nl" -eq 1500 ]; then pass "eval: one value per point"; else fail "eval: lines" "$nl"; fi
        err=$(grep -v '^#' "$c" | paste - "$tmp/s.txt" | awk '{ d = $5 - $4; if (d < 0) d = -d; if (d > m) m = d; a = $4 < 0 ? -$4 : $4; if (a > fm) fm = a } END { printf "%.3e", m / fm }')
        if is_le "$err" 1e-9; then pass "eval: reproduces the data ($err)"; else fail "eval: reproduces the data" "$err"; fi
    fi
fi
run rbf fit --centers "$c" --shape 0.05 --tolerance 1e-9 --precision double --out "$tmp/model2.txt"
if [ "$rc" -eq 0 ] && [ "$(value single_passes)" = 0 ] && is_le "$(value max_residual)" 1e-9; then
    pass "fit --precision double: no single-precision pass"
else fail "fit --precision double" "exit $rc, single_passes $(value single_passes)"; fi
run rbf matvec --centers "$c" --shape 0.05 --repeat 1 --sample 100
if [ "$rc" -eq 0 ] && [ -n "$(value matvec_s)" ] && is_le "$(value rel_error)" 1e-12; then pass "matvec"; else fail "matvec" "exit $rc"; fi

# deformation: a small hexahedral mesh (2x2x2 cells of a cube), its 8 corners displaced
m="$tmp/cube.vtk"
awk 'BEGIN { print "# vtk DataFile Version 3.0"; print "cube"; print "ASCII"; print "DATASET UNSTRUCTURED_GRID";
  print "POINTS 27 double"; for (k = 0; k < 3; k++) for (j = 0; j < 3; j++) for (i = 0; i < 3; i++) print i, j, k;
  print "CELLS 8 72"; for (k = 0; k < 2; k++) for (j = 0; j < 2; j++) for (i = 0; i < 2; i++) { b = i + 3 * j + 9 * k;
  print 8, b, b + 1, b + 4, b + 3, b + 9, b + 10, b + 13, b + 12 }
  print "CELL_TYPES 8"; for (c = 0; c < 8; c++) print 12 }' >"$m"
d="$tmp/disp.txt"
awk 'BEGIN { for (k = 0; k < 3; k += 2) for (j = 0; j < 3; j += 2) for (i = 0; i < 3; i += 2) print i, j, k, 0.1 * (k / 2), 0, 0 }' >"$d"
run rbf deform --mesh "$m" --displacements "$d" --out "$tmp/out.vtk"
if [ "$rc" -ne 0 ]; then fail "deform" "exit $rc"; else
    pass "deform"
    ok=1; for k in iterations max_residual min_volume_ratio time_s; do [ -n "$(value $k)" ] || ok=0; done
    if [ $ok -eq 1 ]; then pass "deform: stdout keys"; else fail "deform: stdout keys" "$(cat "$tmp/stdout")"; fi
    if awk -v a="$(value min_volume_ratio)" 'BEGIN { exit !(a + 0 > 0) }'; then pass "deform: no inverted cell"; else fail "deform: inverted" "$(value min_volume_ratio)"; fi
    # node 26 (2,2,2) is a boundary point displaced by 0.1 in x
    p=$(awk '/^POINTS/ { on = 1; next } on { n++; if (n == 27) { print $1, $2, $3; exit } }' "$tmp/out.vtk")
    if [ "$p" = "2.1000000000000001 2 2" ]; then pass "deform: boundary node exact"; else fail "deform: boundary node" "$p"; fi
    run rbf deform --mesh "$tmp/out.vtk" --displacements "$d" --out "$tmp/out2.vtk"
    if [ "$rc" -eq 0 ]; then pass "deform: reads its own output"; else fail "deform: reads its own output" "exit $rc"; fi
fi

printf '0 0 0 1\n1 0 0 2\n0 0 0 3\n' >"$tmp/dup.txt"
printf '0 0 0 1\n' >"$tmp/one.txt"
printf '0 0 0 1\n1 nan 0 2\n0 1 0 3\n' >"$tmp/nan.txt"
printf '0 0 0 1\n1 0 0\n' >"$tmp/short.txt"
printf '0 0 0 1\n1 zero 0 2\n' >"$tmp/word.txt"
printf 'garbage\n' >"$tmp/garbage.vtk"
expect_bad "no subcommand" rbf
expect_bad "unknown subcommand" rbf frobnicate
# an iteration stopped after one step: the dense fallback takes over and says so; --dense-max 0 turns it off
head -301 "$c" >"$tmp/c300.txt"
run rbf fit --centers "$tmp/c300.txt" --shape 0.05 --max-iter 1 --out "$tmp/dense.txt"
if [ "$rc" -eq 0 ] && [ "$(value solver)" = dense ] && is_le "$(value max_residual)" 1e-8; then
    pass "fit: the dense fallback where the iteration stops (solver dense)"
else fail "fit: dense fallback" "exit $rc, solver '$(value solver)', residual '$(value max_residual)'"; fi
expect_bad "fit: --max-iter 1 --dense-max 0 does not converge" rbf fit --centers "$tmp/c300.txt" --shape 0.05 \
    --max-iter 1 --dense-max 0 --out "$tmp/x"
expect_msg "--dense-max 20001 names the range" "--dense-max must be in 0..20000" rbf fit --centers "$c" \
    --shape 0.05 --dense-max 20001 --out "$tmp/x"

expect_bad "fit: no --shape" rbf fit --centers "$c" --out "$tmp/x"
expect_bad "fit: --shape 0" rbf fit --centers "$c" --shape 0 --out "$tmp/x"
expect_bad "fit: --shape -1" rbf fit --centers "$c" --shape -1 --out "$tmp/x"
expect_bad "fit: duplicate centres" rbf fit --centers "$tmp/dup.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: one point" rbf fit --centers "$tmp/one.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: NaN" rbf fit --centers "$tmp/nan.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: short line" rbf fit --centers "$tmp/short.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: word" rbf fit --centers "$tmp/word.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: missing file" rbf fit --centers "$tmp/none.txt" --shape 0.1 --out "$tmp/x"
expect_bad "fit: tolerance 0" rbf fit --centers "$c" --shape 0.1 --tolerance 0 --out "$tmp/x"
expect_bad "fit: --matvec bogus" rbf fit --centers "$c" --shape 0.1 --matvec bogus --out "$tmp/x"
expect_bad "fit: --precision bogus" rbf fit --centers "$c" --shape 0.1 --precision single --out "$tmp/x"
expect_bad "fit: unknown option" rbf fit --centers "$c" --shape 0.1 --bogus 1 --out "$tmp/x"
expect_bad "fit: no --out" rbf fit --centers "$c" --shape 0.1
expect_bad "eval: bad model" rbf eval --model "$c" --points "$c" --out "$tmp/x"
expect_bad "deform: malformed mesh" rbf deform --mesh "$tmp/garbage.vtk" --displacements "$d" --out "$tmp/x.vtk"
expect_bad "deform: missing mesh" rbf deform --mesh "$tmp/none.vtk" --displacements "$d" --out "$tmp/x.vtk"
expect_bad "deform: bad displacements" rbf deform --mesh "$m" --displacements "$tmp/short.txt" --out "$tmp/x.vtk"

# ---------------------------------------------------------------------------------------
# issue 33: models, meshes and centres are read exactly or refused with the file and line
if [ -s "$tmp/model.txt" ]; then
    run rbf eval --model "$tmp/model.txt" --points "$c" --out "$tmp/s_ref.txt"
    # a comment line longer than 4095 characters whose tail looks like a centre: a comment
    { head -n 3 "$tmp/model.txt"; printf '#%4100s0.5 0.5 0.5 1000\n' ''; tail -n +4 "$tmp/model.txt"; } >"$tmp/longcomment.txt"
    name="model: a 4100-character comment line is a comment (no centre injected)"
    run rbf eval --model "$tmp/longcomment.txt" --points "$c" --out "$tmp/s_long.txt"
    if [ "$rc" -eq 0 ] && cmp -s "$tmp/s_ref.txt" "$tmp/s_long.txt"; then pass "$name"; else fail "$name" "exit $rc"; fi
    # the same with the last row moved into the comment: N - 1 rows, refused
    { head -n 3 "$tmp/model.txt"; printf '#%4100s' ''; tail -n 1 "$tmp/model.txt"; tail -n +4 "$tmp/model.txt" | sed '$d'; } >"$tmp/inject.txt"
    expect_msg "model: a row hidden in a long comment is not read" "inject.txt: 1499 rows, expected 1500" \
        rbf eval --model "$tmp/inject.txt" --points "$c" --out "$tmp/x"
    head -c -3 "$tmp/model.txt" >"$tmp/cut.txt"
    expect_msg "model: cut inside its last number" "cut.txt:1504: the file ends inside this line" \
        rbf eval --model "$tmp/cut.txt" --points "$c" --out "$tmp/x"
    sed '6s/ [^ ]*$/ 1e-400/' "$tmp/model.txt" >"$tmp/tiny.txt"
    expect_msg "model: a lambda of 1e-400 (would become 0)" "tiny.txt:6: column 4: '1e-400' is out of range" \
        rbf eval --model "$tmp/tiny.txt" --points "$c" --out "$tmp/x"
    sed '6s/ [^ ]*$/ 1e999/' "$tmp/model.txt" >"$tmp/huge.txt"
    expect_msg "model: a lambda of 1e999" "huge.txt:6: column 4: '1e999' is out of range" \
        rbf eval --model "$tmp/huge.txt" --points "$c" --out "$tmp/x"
    sed '2s/.*/shape 1e-400/' "$tmp/model.txt" >"$tmp/shape0.txt"
    expect_msg "model: a shape of 1e-400" "shape0.txt:2: shape: '1e-400' is out of range" \
        rbf eval --model "$tmp/shape0.txt" --points "$c" --out "$tmp/x"
    printf '\0' | cat - "$tmp/model.txt" >"$tmp/nulmodel.txt"
    expect_msg "model: a NUL byte" "nulmodel.txt:1: NUL byte" rbf eval --model "$tmp/nulmodel.txt" --points "$c" --out "$tmp/x"
    expect_kept "fit: MODEL past a 8 KiB file size limit" "$tmp/kept_model.txt" 8 \
        rbf fit --centers "$c" --shape 0.05 --tolerance 1e-9 --out "$tmp/kept_model.txt"
    expect_kept "eval: --out past a 8 KiB file size limit" "$tmp/kept_s.txt" 8 \
        rbf eval --model "$tmp/model.txt" --points "$c" --out "$tmp/kept_s.txt"
else
    fail "model file" "no model to test with (fit failed)"
fi
printf '0 0 0 1\n1 0 0 2\n1 1 1e-400 3\n' >"$tmp/tinyc.txt"
expect_msg "fit: a centre coordinate of 1e-400" "tinyc.txt:3: column 3: '1e-400' is out of range" \
    rbf fit --centers "$tmp/tinyc.txt" --shape 0.1 --out "$tmp/x"
expect_msg "fit: duplicate centres name both lines" "dup.txt:1 and .*dup.txt:3: two centres at the same position" \
    rbf fit --centers "$tmp/dup.txt" --shape 0.1 --out "$tmp/x"
expect_msg "deform: --mesh a directory says so" "cannot open: Is a directory" \
    rbf deform --mesh "$tmp" --displacements "$d" --out "$tmp/x.vtk"
expect_msg "deform: --mesh /dev/zero" "/dev/zero:1: NUL byte" rbf deform --mesh /dev/zero --displacements "$d" --out "$tmp/x.vtk"
sed '7s/ /\x00/' "$m" >"$tmp/nul.vtk"
expect_msg "deform: a NUL byte in the mesh names the line" "nul.vtk:7: NUL byte" \
    rbf deform --mesh "$tmp/nul.vtk" --displacements "$d" --out "$tmp/x.vtk"
sed '7s/^1 /1e-400 /' "$m" >"$tmp/tiny.vtk"
expect_msg "deform: a coordinate of 1e-400 names the line" "tiny.vtk:7: a POINTS coordinate: '1e-400' is out of range" \
    rbf deform --mesh "$tmp/tiny.vtk" --displacements "$d" --out "$tmp/x.vtk"
expect_msg "deform: a malformed mesh names the line" "garbage.vtk:1: not a legacy VTK file" \
    rbf deform --mesh "$tmp/garbage.vtk" --displacements "$d" --out "$tmp/x.vtk"
# a 6x6x6 hexahedral mesh of the cube [0,2]^3 (about 20 KB as VTK)
awk 'BEGIN { print "# vtk DataFile Version 3.0"; print "cube"; print "ASCII"; print "DATASET UNSTRUCTURED_GRID";
  print "POINTS 343 double"; for (k = 0; k < 7; k++) for (j = 0; j < 7; j++) for (i = 0; i < 7; i++) print i / 3, j / 3, k / 3;
  print "CELLS 216 1944"; for (k = 0; k < 6; k++) for (j = 0; j < 6; j++) for (i = 0; i < 6; i++) { b = i + 7 * j + 49 * k;
  print 8, b, b + 1, b + 8, b + 7, b + 49, b + 50, b + 57, b + 56 }
  print "CELL_TYPES 216"; for (c = 0; c < 216; c++) print 12 }' >"$tmp/cube6.vtk"
expect_kept "deform: OUT.vtk past a 8 KiB file size limit" "$tmp/kept.vtk" 8 \
    rbf deform --mesh "$tmp/cube6.vtk" --displacements "$d" --out "$tmp/kept.vtk"
expect_msg "--shape 0 names the range" "--shape must be > 0, got '0'" rbf fit --centers "$c" --shape 0 --out "$tmp/x"
expect_msg "--tolerance 1 names the range" "--tolerance must be in \[1e-13, 0.5\]" \
    rbf fit --centers "$c" --shape 0.1 --tolerance 1 --out "$tmp/x"
expect_msg "--lset 1 names the range" "--lset must be in 2..200" rbf fit --centers "$c" --shape 0.1 --lset 1 --out "$tmp/x"
expect_msg "--max-iter 0 names the range" "--max-iter must be >= 1" rbf fit --centers "$c" --shape 0.1 --max-iter 0 --out "$tmp/x"
expect_msg "--series-tol 0.5 names the range" "--series-tol must be in \[0, 0.01\]" \
    rbf fit --centers "$c" --shape 0.1 --series-tol 0.5 --out "$tmp/x"
expect_msg "--threads 100000 names the range" "--threads must be in 0..1024" \
    rbf fit --centers "$c" --shape 0.1 --threads 100000 --out "$tmp/x"
expect_msg "--seed -1 names the range" "--seed must be >= 0" rbf fit --centers "$c" --shape 0.1 --seed -1 --out "$tmp/x"
expect_msg "--repeat 0 names the range" "--repeat must be >= 1" rbf matvec --centers "$c" --shape 0.1 --repeat 0
expect_msg "--sample -1 names the range" "--sample must be >= 0" rbf matvec --centers "$c" --shape 0.1 --sample -1
no_temp_files "no temporary file left after all the runs" "$tmp"

finish
