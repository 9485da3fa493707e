#!/usr/bin/env bash
# test_cli_extremes.sh - `fmm coulomb` at extreme scales (issue 33, defects 1 and 2): a correct
# result, or one clear error line and a non-zero exit, never inf/NaN/zeros with exit 0.
#
# usage: bash tests/test_cli_extremes.sh path/to/build/bin/fmm
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^energy'

u="$tmp/u1k.txt"
run generate uniform --n 1000 --seed 33 --out "$u"
[ "$rc" -eq 0 ] || { fail "generate" "exit $rc"; finish; exit; }
# scaled copies: lengths x S (scale_len S OUT), charges x S (scale_q S OUT), lengths + D (shift D OUT)
scale_len() { awk -v s="$1" '{ printf "%.17g %.17g %.17g %s\n", $1 * s, $2 * s, $3 * s, $4 }' "$u" >"$2"; }
scale_q() { awk -v s="$1" '{ printf "%s %s %s %.17g\n", $1, $2, $3, $4 * s }' "$u" >"$2"; }
shift_by() { awk -v s="$1" '{ printf "%.17g %.17g %.17g %s\n", $1 + s, $2 + s, $3 + s, $4 }' "$u" >"$2"; }

# ok_run NAME MAXERR ARGS...: exit 0, every rel_* error line printed and <= MAXERR (a NaN fails)
ok_run() {
    local name=$1 max=$2 key bad=
    shift 2
    run coulomb "$@" --reference
    if [ "$rc" -ne 0 ]; then
        fail "$name" "exit status $rc"
        return
    fi
    for key in rel_l2_error_phi rel_rms_error_field rel_error_energy rel_error_virial; do
        is_le "$(value $key)" "$max" || bad="$bad $key=$(value $key)"
    done
    if [ -n "$bad" ]; then fail "$name" "errors above $max:$bad"; else pass "$name"; fi
}

# the energy of the unscaled set, to compare the scaled runs with
run coulomb --in "$u" --reference
E1=$(value energy)
ok_run "unit set" 1e-12 --in "$u"

# defect 1: the virial of charges far from the box's centre or from the origin
ok_run "open, box 1e10: virial to rounding" 1e-12 --in "$u" --box 1e10
ok_run "open, box 1e308: virial finite and to rounding" 1e-12 --in "$u" --box 1e308
shift_by 1e8 "$tmp/far.txt"
ok_run "open, cloud 1e8 from the origin: FMM and direct virial agree" 1e-12 --in "$tmp/far.txt"
ok_run "periodic, cell 1e10: virial against Ewald" 1e-9 --in "$u" --periodic --box 1e10
# a rectangular cell far larger than the set: the translation of the cell path is a fraction of
# the set's extent (it was 0.118 of the brick, which rounded the coordinates: phi 5e-6 off here)
ok_run "periodic, rectangular cell 1e10: against Ewald" 1e-9 --in "$u" --periodic --box 1e10 1e10 3e10

# defect 2: lengths scaled by 1e-110 give the scaled results (NaN fields before)
scale_len 1e-110 "$tmp/s110.txt"
ok_run "lengths x 1e-110: correct" 1e-12 --in "$tmp/s110.txt"
if is_close "$(value energy)" "$(awk -v e="$E1" 'BEGIN { printf "%.17g", e * 1e110 }')" 1e-12; then
    pass "lengths x 1e-110: energy x 1e110"
else
    fail "lengths x 1e-110: energy x 1e110" "$(value energy) against $E1 x 1e110"
fi
# the field (or all of it) leaves double's range: a clear error
for s in 1e-160 1e300 1e-300; do
    scale_len $s "$tmp/s.txt"
    expect_msg "lengths x $s: field out of range" 'range' coulomb --in "$tmp/s.txt" --reference
done
expect_msg "periodic box 1e200: field out of range" 'range' coulomb --in "$u" --periodic --box 1e200
# (the cell path said "two particles at the same position": the translation rounded them together)
expect_msg "periodic cell 1e200 1e200 3e200: field out of range" 'range' coulomb --in "$u" --periodic --box 1e200 1e200 3e200
scale_q 1e200 "$tmp/q.txt"
expect_msg "charges x 1e200: energy out of range" 'range' coulomb --in "$tmp/q.txt"
scale_q 1e-100 "$tmp/q.txt"
run coulomb --in "$tmp/q.txt" --reference
E=$(value energy)
if [ "$rc" -eq 0 ] && is_close "$E" "$(awk -v e="$E1" 'BEGIN { printf "%.17g", e * 1e-200 }')" 1e-12; then
    pass "charges x 1e-100: energy x 1e-200"
else
    fail "charges x 1e-100: energy x 1e-200" "exit $rc, energy $E against $E1 x 1e-200"
fi

finish
