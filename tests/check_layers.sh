#!/usr/bin/env bash
# check_layers.sh [SOURCE_DIR] - the include rules of docs/architecture.md ("Layers"): every
# #include of a file of this repository goes to the same layer or a lower one, and the folders
# do not include each other in a cycle. Prints each include that breaks a rule, and the cycle;
# exits non-zero if there is any (ctest test check_layers, tests/CMakeLists.txt).
#
# Layers, lowest first (a file may include its own layer and the ones below):
#   0  common   include/fmm_common.h, include/fmm_reference.h, fmm_version.h (generated)
#   1  core     core/
#   2  m2l pbc  m2l/, pbc/
#   3  solvers  fmm/, bldtt/, fgt/, rbf/ and their headers include/fmm.h (and fmm_dist*.h, the
#               FMM over several ranks), fmm_bldtt.h, fmm_fgt.h, fmm_rbf.h
#   4  systems  systems/ (test systems, outside libfmm)
#   5  front    cli/, plugin/, python/
#   6  users    tests/, bench/, examples/
# A header in include/ not named here has no layer: the check fails until it is given one.
set -uo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 2

# layer and folder (the node of the cycle check) of a path relative to the source root
classify() {
    case $1 in
    include/fmm_common.h | include/fmm_reference.h | include/fmm_version.h*) echo "0 common" ;;
    include/fmm.h | include/fmm_dist*.h) echo "3 fmm" ;;
    include/fmm_bldtt.h) echo "3 bldtt" ;;
    include/fmm_fgt.h) echo "3 fgt" ;;
    include/fmm_rbf.h) echo "3 rbf" ;;
    core/*) echo "1 core" ;;
    m2l/*) echo "2 m2l" ;;
    pbc/*) echo "2 pbc" ;;
    fmm/* | bldtt/* | fgt/* | rbf/*) echo "3 ${1%%/*}" ;;
    systems/*) echo "4 systems" ;;
    cli/* | plugin/* | python/*) echo "5 ${1%%/*}" ;;
    tests/* | bench/* | examples/*) echo "6 ${1%%/*}" ;;
    *) echo "" ;;
    esac
}

# the repository file an include names, as the build finds it: the includer's folder, the
# source root, include/, systems/ (the include directories of CMakeLists.txt); empty if none
resolve() { # resolve INCLUDER NAME
    local dir name=$2 cand
    dir=$(dirname "$1")
    [ "$name" = fmm_version.h ] && { echo include/fmm_version.h.in; return; }
    for cand in "$dir/$name" "$name" "include/$name" "systems/$name"; do
        if [ -f "$cand" ]; then
            realpath -m --relative-to=. "$cand"
            return
        fi
    done
}

bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
files=$(find include core m2l pbc fmm bldtt fgt rbf systems cli plugin python tests bench examples \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \
    -o -name '*.hpp' -o -name '*.h.in' \) 2>/dev/null | sort)
for f in $files; do
    read -r lf nf <<<"$(classify "$f")"
    if [ -z "$lf" ]; then
        echo "check_layers: $f has no layer (add it to tests/check_layers.sh and docs/architecture.md)"
        bad=1
        continue
    fi
    while IFS= read -r name; do
        target=$(resolve "$f" "$name")
        [ -n "$target" ] || continue # a system or third-party header
        read -r lt nt <<<"$(classify "$target")"
        if [ -z "$lt" ]; then
            echo "check_layers: $f includes $name ($target), which has no layer"
            bad=1
        elif [ "$lt" -gt "$lf" ]; then
            echo "check_layers: $f (layer $lf, $nf) includes $name ($target: layer $lt, $nt)"
            bad=1
        fi
        [ "$nf" != "$nt" ] && echo "$nf $nt" >>"$edges"
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]\([^">]*\)[">].*/\1/p' "$f")
done

# folders including each other in a cycle: tsort names the folders of the loop
if ! sort -u "$edges" | tsort >/dev/null 2>"$edges.err"; then
    echo "check_layers: the folders include each other in a cycle:"
    sed 's/^/    /' "$edges.err"
    bad=1
fi
rm -f "$edges.err"

if [ "$bad" -eq 0 ]; then
    echo "check_layers: OK ($(echo "$files" | wc -l) files; folder edges: $(sort -u "$edges" | tr ' ' '>' | tr '\n' ' '))"
fi
exit "$bad"
