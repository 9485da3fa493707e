#!/usr/bin/env bash
# bench/fmm3d/build.sh - build FMM3D as its makefile recommends and the driver that times its lfmm3d.
#
# Usage: bench/fmm3d/build.sh SRC PREFIX
#   SRC     an FMM3D source tree (its top-level makefile; a git checkout or `git archive` output)
#   PREFIX  where the results go: PREFIX/src (a copy of SRC, built there so SRC stays clean),
#           PREFIX/lib/libfmm3d.a, PREFIX/bin/fmm3d_lfmm3d (bench/fmm3d/lfmm3d_driver.c linked
#           against it) and PREFIX/build_info.txt (commit, make command, effective flags, checks).
# Environment: FMM3D_COMMIT  the source's commit when SRC is not a git work tree (recorded only);
#              JOBS          parallel make jobs (default 2).
#
# The library is built with `make lib FAST_KER=ON OMP=ON` and the makefile's default compilers and
# flags (gcc, g++, gfortran; -O3 -march=native -funroll-loops): the "high-performance mode" of
# FMM3D's docs/install.rst, with the vectorised near-field kernels (vec-kernels/, SCTL) and OpenMP. gfortran and g++ come
# from Debian's packages (apt-get, as root) when missing. The script checks afterwards that the
# library holds the vectorised kernels and OpenMP parallel regions and that the driver links both.
set -euo pipefail

die() { echo "build.sh: error: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: bench/fmm3d/build.sh SRC PREFIX"
SRC=$(cd "$1" 2>/dev/null && pwd) || die "source tree $1 not found"
[ -f "$SRC/makefile" ] && [ -d "$SRC/vec-kernels" ] && [ -f "$SRC/c/lfmm3d_c.h" ] \
    || die "$SRC is not an FMM3D source tree (no makefile, vec-kernels/ or c/lfmm3d_c.h)"
mkdir -p "$2"
PREFIX=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JOBS=${JOBS:-2}

missing=()
command -v gfortran >/dev/null 2>&1 || missing+=(gfortran)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "build.sh: installing ${missing[*]} with apt-get" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        die "missing ${missing[*]} (apt-get install ${missing[*]})"
    fi
fi

if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    COMMIT=$(git -C "$SRC" rev-parse HEAD)
    git -C "$SRC" diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT-dirty"
else
    COMMIT=${FMM3D_COMMIT:-unknown}
fi

# Build in a copy: the makefile writes its objects next to the sources. A copy from the same
# source and clean commit is reused, so that a second run only relinks.
STAMP="$SRC $COMMIT"
if [ "$COMMIT" = unknown ] || [ "${COMMIT%-dirty}" != "$COMMIT" ] ||
    [ "$(cat "$PREFIX/src/.build_sh_source" 2>/dev/null)" != "$STAMP" ]; then
    echo "build.sh: copying $SRC to $PREFIX/src" >&2
    rm -rf "$PREFIX/src"
    mkdir -p "$PREFIX/src"
    tar -C "$SRC" --exclude=.git -cf - . | tar -C "$PREFIX/src" -xf -
    rm -f "$PREFIX/src/make.inc" # the makefile's defaults, whatever the tree had
    echo "$STAMP" >"$PREFIX/src/.build_sh_source"
fi

MAKEARGS=(lib FAST_KER=ON OMP=ON)
echo "build.sh: make ${MAKEARGS[*]} -j$JOBS in $PREFIX/src (several minutes on 2 cores)" >&2
t0=$(date +%s)
make -C "$PREFIX/src" -j"$JOBS" "${MAKEARGS[@]}" >"$PREFIX/make.log" 2>&1 \
    || { tail -30 "$PREFIX/make.log" >&2; die "FMM3D make failed (log: $PREFIX/make.log)"; }
t1=$(date +%s)

# The flags the makefile really used, as make resolves them with the same arguments.
flag() {
    make -s -C "$PREFIX/src" --no-print-directory FAST_KER=ON OMP=ON \
        --eval 'print-%: ; @echo $($*)' "print-$1"
}
FFLAGS=$(flag FFLAGS); CFLAGS=$(flag CFLAGS); CXXFLAGS=$(flag CXXFLAGS); LIBS=$(flag LIBS)

mkdir -p "$PREFIX/lib" "$PREFIX/bin"
cp "$PREFIX/src/lib-static/libfmm3d.a" "$PREFIX/lib/"
LIB="$PREFIX/lib/libfmm3d.a"

# FAST_KER: the Laplace near field goes through the C++ vectorised kernels (lapkernels_fast.f
# calls them; the plain lapkernels.f is not in the library). OMP: the Fortran has parallel regions.
# Captured first: grep -q on a pipe would stop nm early and fail the pipeline under pipefail.
members=$(ar t "$LIB")
syms=$(nm "$LIB" 2>/dev/null)
grep -qx lapkernels_fast.o <<<"$members" || die "libfmm3d.a lacks lapkernels_fast.o: FAST_KER did not take"
! grep -qx lapkernels.o <<<"$members" || die "libfmm3d.a holds the scalar lapkernels.o"
grep -q ' T l3ddirectcg_cpp_$' <<<"$syms" \
    || die "libfmm3d.a has no vectorised Laplace kernel (l3ddirectcg_cpp_ from vec-kernels)"
grep -q ' U GOMP_parallel' <<<"$syms" || die "libfmm3d.a has no OpenMP parallel regions: OMP did not take"
# The SIMD width (doubles per vector) the kernel template was instantiated with, e.g. 4 for AVX2.
VECDIM=$(grep -o 'l3ddirectcg_vec_cppIdLl[0-9]*E' <<<"$syms" | head -1 | sed 's/.*IdLl\([0-9]*\)E/\1/')

CC=${CC:-gcc}
echo "build.sh: building $PREFIX/bin/fmm3d_lfmm3d" >&2
"$CC" -O2 -std=c11 -Wall -Wextra -Werror -fopenmp -I"$PREFIX/src/c" "$HERE/lfmm3d_driver.c" \
    -o "$PREFIX/bin/fmm3d_lfmm3d" "$LIB" -lgfortran -lstdc++ -lgomp -lm
grep -q ' T l3ddirectcg_cpp_$' <<<"$(nm "$PREFIX/bin/fmm3d_lfmm3d")" \
    || die "driver does not contain the vectorised kernels"

{
    echo "fmm3d_commit $COMMIT"
    echo "fmm3d_source $SRC"
    echo "make_command make ${MAKEARGS[*]} -j$JOBS"
    echo "fflags $FFLAGS"
    echo "cflags $CFLAGS"
    echo "cxxflags $CXXFLAGS"
    echo "libs $LIBS"
    echo "compilers $(gfortran --version | head -1); $(g++ --version | head -1)"
    echo "make_seconds $((t1 - t0))"
    echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "checks vectorised kernels (lapkernels_fast.o calling l3ddirectcg_cpp_ of vec-kernels, ${VECDIM:-?} doubles per vector) and OpenMP (GOMP_parallel) present"
} >"$PREFIX/build_info.txt"
cat "$PREFIX/build_info.txt" >&2
echo "build.sh: done: $PREFIX/bin/fmm3d_lfmm3d" >&2
