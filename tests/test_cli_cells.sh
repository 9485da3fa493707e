#!/usr/bin/env bash
# test_cli_cells.sh - `fmm coulomb` in periodic cells other than the cube: --box with 1, 3 or 9
# numbers (rows a, b, c), the input's '# box' line of 3 or 9 numbers read by --periodic when
# --box is not given (--box wins when it is), --reference against the Ewald sum of the cell, and
# the clean refusal of every bad box.
#
# usage: bash tests/test_cli_cells.sh path/to/build/bin/fmm
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
result_line='^energy'

# a neutral random set of 400 charges at random fractional coordinates of cell $1 (9 numbers),
# with an optional header line $2
cell_set() {
    awk -v h="$1" -v head="$2" 'BEGIN {
        split(h, c, " ");
        srand(20261128);
        if (head != "") print head;
        s = 0;
        for (i = 0; i < 400; i++) {
            f1 = rand(); f2 = rand(); f3 = rand();
            q = (i < 399) ? 2 * rand() - 1 : -s;
            s += q;
            printf "%.17g %.17g %.17g %.17g\n", f1 * c[1] + f2 * c[4] + f3 * c[7],
                f1 * c[2] + f2 * c[5] + f3 * c[8], f1 * c[3] + f2 * c[6] + f3 * c[9], q;
        }
    }'
}
dodec="2 0 0 0 2 0 1 1 1.4142135623730951"
rect="1.2 0 0 0 1.2 0 0 0 3.6"
cell_set "$dodec" "" >"$tmp/dodec.txt"
cell_set "$dodec" "# box $dodec" >"$tmp/dodec_box9.txt"
cell_set "$dodec" "# box 5 0 0 0 5 0 0 0 5" >"$tmp/dodec_wrongbox.txt"
cell_set "$rect" "# box 1.2 1.2 3.6" >"$tmp/rect_box3.txt"
cell_set "$dodec" "# box 1 2 3 4" >"$tmp/box4.txt"

expect_help coulomb "--box ax ay az bx by bz cx cy cz" "# box" "--box wins" images time_step_s \
    reference_targets reference_time_s rel_error_virial "0 (the default)"

name="dodecahedron: --box with 9 numbers --reference (43 near images)"
run coulomb --in "$tmp/dodec.txt" --periodic --box $dodec --tolerance 1e-4 --reference
e9=$(value energy)
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error_phi)" 1e-4 && is_le "$(value rel_error_energy)" 1e-4 &&
    is_le "$(value rel_error_virial)" 1e-3 && [ "$(value images)" = 43 ]; then
    pass "$name"
else
    fail "$name" "exit $rc, phi '$(value rel_l2_error_phi)' virial '$(value rel_error_virial)' images '$(value images)'"
fi

name="the input's '# box' line of 9 numbers stands for --box"
run coulomb --in "$tmp/dodec_box9.txt" --periodic --tolerance 1e-4
if [ "$rc" -eq 0 ] && [ "$(value energy)" = "$e9" ]; then pass "$name"; else fail "$name" "exit $rc, energy '$(value energy)' vs '$e9'"; fi

name="--box wins over the input's '# box' line"
run coulomb --in "$tmp/dodec_wrongbox.txt" --periodic --box $dodec --tolerance 1e-4
if [ "$rc" -eq 0 ] && [ "$(value energy)" = "$e9" ]; then pass "$name"; else fail "$name" "exit $rc, energy '$(value energy)' vs '$e9'"; fi

name="1:1:3 brick from a '# box' line of 3 numbers, --reference, vacuum"
run coulomb --in "$tmp/rect_box3.txt" --periodic --vacuum --tolerance 1e-4 --reference
if [ "$rc" -eq 0 ] && is_le "$(value rel_l2_error_phi)" 1e-4 && is_le "$(value rel_error_energy)" 1e-4 &&
    is_le "$(value rel_error_virial)" 1e-3; then
    pass "$name"
else
    fail "$name" "exit $rc, phi '$(value rel_l2_error_phi)' virial '$(value rel_error_virial)'"
fi

name="--box LX LY LZ equals the same brick given by 9 numbers"
run coulomb --in "$tmp/rect_box3.txt" --periodic --box 1.2 1.2 3.6 --tolerance 1e-4
e3=$(value energy)
run coulomb --in "$tmp/rect_box3.txt" --periodic --box $rect --tolerance 1e-4
if [ "$rc" -eq 0 ] && [ -n "$e3" ] && [ "$(value energy)" = "$e3" ]; then pass "$name"; else fail "$name" "exit $rc, '$(value energy)' vs '$e3'"; fi

name="--box L periodic is the cube (27 images), with negative coordinates wrapped"
printf '%s\n' "-0.25 0.5 0.5 1" "0.25 0.5 0.5 -1" >"$tmp/pair.txt"
run coulomb --in "$tmp/pair.txt" --periodic --box 1 --reference
if [ "$rc" -eq 0 ] && [ "$(value images)" = 27 ] && is_le "$(value rel_error_energy)" 1e-6; then pass "$name"; else fail "$name" "exit $rc, images '$(value images)'"; fi

name="the '# box' line read from standard input (--in -), in the one pass over the rows"
timeout 120 "$FMM" coulomb --in - --periodic --tolerance 1e-4 <"$tmp/dodec_box9.txt" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(value energy)" = "$e9" ]; then pass "$name"; else fail "$name" "exit $rc, energy '$(value energy)' vs '$e9'"; fi

expect_msg "--periodic on /dev/zero: a NUL byte, not a hang" "NUL" coulomb --in /dev/zero --periodic
expect_msg "--box with 2 numbers" "1, 3 or 9" coulomb --in "$tmp/dodec.txt" --periodic --box 1 2
expect_msg "--box with 9 numbers without --periodic" "periodic" coulomb --in "$tmp/dodec.txt" --box $dodec
expect_msg "a cell beyond GROMACS's limits (|bx| > ax/2)" "GROMACS" coulomb --in "$tmp/dodec.txt" --periodic --box 2 0 0 1.5 2 0 0 0 2
expect_msg "a cell with a_y != 0" "GROMACS" coulomb --in "$tmp/dodec.txt" --periodic --box 2 0.1 0 0 2 0 0 0 2
expect_msg "a negative edge" "> 0" coulomb --in "$tmp/dodec.txt" --periodic --box 1 -1 1
expect_msg "a '# box' line of 4 numbers" "3 or 9" coulomb --in "$tmp/box4.txt" --periodic
expect_msg "--periodic without --box or '# box' line" "box" coulomb --in "$tmp/dodec.txt" --periodic

finish
