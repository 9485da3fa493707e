# cli_lib.sh - the harness shared by tests/test_cli*.sh, sourced by each (not a test itself:
# the ctest glob takes tests/test_cli*.sh only).
#
# The sourcing script passes its own arguments (the path of the fmm executable) and sets
# result_line, the regex of the stdout line that a failed run must not print. The cases print
# one PASS/FAIL line each; finish prints "N passed, M failed" and fails if any case failed.
set -u

FMM=${1:?usage: $(basename "$0") path/to/fmm}
if [ ! -x "$FMM" ]; then
    echo "$(basename "$0"): '$FMM' is not an executable" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fmm_$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$tmp"' EXIT

npass=0
nfail=0
pass() {
    echo "PASS $1"
    npass=$((npass + 1))
}
fail() {
    echo "FAIL $1: $2"
    nfail=$((nfail + 1))
    if [ -s "$tmp/stderr" ]; then sed 's/^/    stderr: /' "$tmp/stderr" | head -5; fi
}
finish() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}

# run ARGS...: runs fmm, leaves stdout/stderr in $tmp/stdout, $tmp/stderr and the status in $rc
# (124 if it ran past 120 s: a hang is a failure, not a stuck test)
rc=0
run() {
    timeout 120 "$FMM" "$@" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
    rc=$?
}
# run_fsize KB ARGS...: run, with files limited to KB KiB (ulimit -f) and SIGXFSZ ignored, so
# that a write past the limit fails with EFBIG ("File too large"): a real write error on a
# regular file, which holds for root too (unlike a read-only directory)
run_fsize() {
    local kb=$1
    shift
    (
        trap '' XFSZ
        ulimit -f "$kb"
        timeout 120 "$FMM" "$@" </dev/null
    ) >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
}
# number of lines, counting a last line without a newline
nlines() { awk 'END { print NR }' "$1"; }
# value of the stdout line "KEY value"
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$tmp/stdout"; }
# is_num A: A is a finite decimal number (mawk compares "nan" and "inf" as true against anything)
is_num() { [[ $1 =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; }
# is_le A B: A is a number <= B
is_le() { is_num "$1" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
# is_close A B RTOL [ATOL]: |A - B| <= RTOL |B| + ATOL
is_close() {
    is_num "$1" && is_num "$2" && awk -v a="$1" -v b="$2" -v r="$3" -v t="${4:-0}" \
        'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= r * m + t) }'
}

# expect_help CMD OPTION...: `fmm CMD --help` exits 0 and its text names every OPTION
expect_help() {
    local cmd=$1 missing= opt
    shift
    run "$cmd" --help
    for opt in "$@"; do grep -qF -- "$opt" "$tmp/stdout" || missing="$missing $opt"; done
    if [ "$rc" -ne 0 ]; then
        fail "fmm $cmd --help" "exit status $rc"
    elif [ -n "$missing" ]; then
        fail "fmm $cmd --help" "does not document$missing"
    else
        pass "fmm $cmd --help"
    fi
}

# check_bad NAME [REGEX]: the run just made failed cleanly: non-zero exit (not a crash), one
# stderr line (matching REGEX, grep -E, if given), no $result_line on stdout
check_bad() {
    local name=$1 re=${2:-} ne
    ne=$(nlines "$tmp/stderr")
    if [ "$rc" -eq 0 ]; then
        fail "$name" "exit status 0, expected non-zero"
    elif [ "$rc" -ge 124 ]; then
        fail "$name" "exit status $rc (crash, signal or timeout)"
    elif [ "$ne" -ne 1 ]; then
        fail "$name" "$ne lines on stderr, expected exactly 1"
    elif grep -q "$result_line" "$tmp/stdout"; then
        fail "$name" "stdout has a line matching '$result_line'"
    elif [ -n "$re" ] && ! grep -qE -- "$re" "$tmp/stderr"; then
        fail "$name" "the message does not match '$re'"
    else
        pass "$name"
    fi
}

# expect_bad NAME ARGS...: runs fmm ARGS and checks that it failed cleanly (check_bad)
expect_bad() {
    local name=$1
    shift
    run "$@"
    check_bad "$name"
}

# expect_msg NAME REGEX ARGS...: as expect_bad, and the stderr line matches REGEX
expect_msg() {
    local name=$1 re=$2
    shift 2
    run "$@"
    check_bad "$name" "$re"
}

# no_temp_files NAME DIR: no temporary output file (core/textio.h's .fmm-*.tmp) left in DIR
no_temp_files() {
    local left
    left=$(find "$2" -maxdepth 1 -name '.fmm-*.tmp' | head -3)
    if [ -z "$left" ]; then pass "$1"; else fail "$1" "left: $left"; fi
}

# expect_kept NAME FILE KB ARGS...: with files limited to KB KiB (run_fsize), fmm ARGS, which
# writes FILE, fails cleanly and says why ("File too large"), FILE keeps its old content and no
# temporary file is left beside it
expect_kept() {
    local name=$1 file=$2 kb=$3
    shift 3
    echo "old content, to be kept" >"$file"
    run_fsize "$kb" "$@"
    check_bad "$name: fails, saying why" 'File too large'
    if [ "$(cat "$file")" = "old content, to be kept" ]; then
        pass "$name: the old file is unchanged"
    else
        fail "$name: the old file is unchanged" "it now holds $(wc -c <"$file") bytes"
    fi
    no_temp_files "$name: no temporary file left" "$(dirname "$file")"
}
