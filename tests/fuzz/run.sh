#!/usr/bin/env bash
# tests/fuzz/run.sh - replay and run the libFuzzer targets of a FMM_FUZZ build (README.md here).
#
#   run.sh replay BIN_DIR TARGET         run TARGET's seed corpus (corpus/TARGET) and every saved
#                                        crash (regressions/TARGET) once; fails on any finding
#   run.sh fuzz BIN_DIR TARGET SECONDS WORK
#                                        fuzz TARGET for SECONDS from a copy of its seed corpus
#                                        in WORK/corpus/TARGET (not the saved crashes: the replay
#                                        has them); a crash, leak, hang (an input over 10 s),
#                                        out-of-memory or sanitizer report fails it and is saved
#                                        in WORK/artifacts/TARGET/
#   run.sh all BIN_DIR SECONDS WORK      replay every target, then fuzz each for SECONDS, two at
#                                        a time; exit status 1 if anything failed
#
# BIN_DIR holds the fuzz_<target> executables (build-fuzz/bin). A finding is reproduced by
# running the executable on the saved file; copy it into regressions/TARGET/ to keep it as a
# regression test.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# the library reports a failed allocation as an error code, so ASan returns NULL for it
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

targets() {
    for f in "$here"/fuzz_*.c; do
        f=${f##*/fuzz_}
        echo "${f%.c}"
    done
}

replay() {
    local bin=$1/fuzz_$2 files=()
    for d in "$here/corpus/$2" "$here/regressions/$2"; do
        [ -d "$d" ] && files+=("$d"/*)
    done
    if [ ${#files[@]} -eq 0 ]; then
        echo "fuzz_$2: nothing to replay"
        return 0
    fi
    if "$bin" -timeout=10 "${files[@]}" >"$1/replay_$2.log" 2>&1; then
        echo "fuzz_$2: replayed ${#files[@]} inputs"
    else
        echo "fuzz_$2: FAILED on replay (log follows)"
        tail -n 60 "$1/replay_$2.log"
        return 1
    fi
}

fuzz() {
    local bin=$1/fuzz_$2 secs=$3 work=$4
    local corpus=$work/corpus/$2 art=$work/artifacts/$2/ log=$work/fuzz_$2.log
    mkdir -p "$corpus" "$art"
    [ -d "$here/corpus/$2" ] && cp -n "$here/corpus/$2"/* "$corpus"/ 2>/dev/null
    if "$bin" -max_total_time="$secs" -timeout=10 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$art" "$corpus" >"$log" 2>&1; then
        echo "fuzz_$2: ${secs} s, $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
            grep -o '[0-9]*$') runs, corpus $(ls "$corpus" | wc -l) inputs, no finding"
    else
        echo "fuzz_$2: FINDING (saved in $art; log follows)"
        grep -v '^#[0-9]' "$log" | tail -n 60
        # the run closed the target's stdout and stderr: its own message shows on a replay
        for f in "$art"*; do
            [ -f "$f" ] || continue
            echo "fuzz_$2: replay of $f:"
            "$bin" -timeout=10 "$f" 2>&1 | grep -v '^INFO:' | tail -n 30
        done
        return 1
    fi
}

all() {
    local bin=$1 secs=$2 work=$3 status=0
    mkdir -p "$work"
    for t in $(targets); do replay "$bin" "$t" || status=1; done
    # two targets at a time (CI has 2 cores); each one's summary is printed when it ends
    local pids=() t
    for t in $(targets); do
        fuzz "$bin" "$t" "$secs" "$work" >"$work/summary_$t.txt" 2>&1 &
        pids+=($!)
        if [ ${#pids[@]} -eq 2 ]; then
            wait "${pids[0]}" || status=1
            pids=("${pids[1]}")
        fi
    done
    for p in "${pids[@]}"; do wait "$p" || status=1; done
    for t in $(targets); do cat "$work/summary_$t.txt"; done
    return $status
}

usage() {
    sed -n '3,17p' "$0" >&2
    exit 2
}

case "${1:-}:$#" in
replay:3) replay "$2" "$3" ;;
fuzz:5) fuzz "$2" "$3" "$4" "$5" ;;
all:4) all "$2" "$3" "$4" ;;
*) usage ;;
esac
