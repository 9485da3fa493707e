#!/usr/bin/env bash
# install_check.sh [BUILD_DIR] - the installed package as a user gets it: configure and build
# (CPU, portable: -DFMM_NATIVE=OFF; or reuse BUILD_DIR, built here if needed), `cmake --install`
# into a temporary prefix, then against that prefix only: `fmm --version`, the public headers
# in C and C++, the downstream CMake project (find_package(fmm), static and shared),
# the make + pkg-config build (shared and static), fmm::fmm_mpi where the package has it
# (fmm_MPI: a distributed evaluation over MPI as one rank), and the examples built stand-alone. Each
# program built runs and checks its result against a direct or Ewald sum. Prints one PASS/FAIL
# line per step; exits non-zero if any failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fmm_install_check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
jobs=${JOBS:-2}
nfail=0
step() { # step NAME COMMAND...: runs COMMAND, its output in $tmp/log, PASS or FAIL
    local name=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then
        echo "PASS $name"
    else
        echo "FAIL $name"
        tail -20 "$tmp/log" | sed 's/^/    /'
        nfail=$((nfail + 1))
    fi
}
must() { # must NAME COMMAND...: step, and stop here if it failed (nothing after it can work)
    step "$@"
    [ "$nfail" -eq 0 ] || { echo "install check: stopped after a failed step"; exit 1; }
}

build=${1:-$tmp/build}
if [ ! -f "$build/CMakeCache.txt" ]; then
    must "configure (CPU, FMM_NATIVE=OFF)" cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DFMM_CUDA=OFF -DFMM_NATIVE=OFF -DFMM_TESTS=OFF
fi
must "build" cmake --build "$build" -j"$jobs"
prefix=$tmp/prefix
must "cmake --install" cmake --install "$build" --prefix "$prefix"

version=$(sed -n 's/^project(fmm VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
# the package was built with MPI (cmake/fmmConfig.cmake.in): fmm_mpi is installed too
mpi=$(sed -n 's/^set(fmm_MPI \(.*\))$/\1/p' "$prefix"/lib*/cmake/fmm/fmmConfig.cmake)
installed() {
    for f in bin/fmm include/fmm.h include/fmm_bldtt.h include/fmm_fgt.h include/fmm_rbf.h \
        include/fmm_version.h lib/libfmm.a lib/libfmm.so lib/cmake/fmm/fmmConfig.cmake \
        lib/cmake/fmm/fmmConfigVersion.cmake lib/pkgconfig/fmm.pc \
        $([ "$mpi" = ON ] && echo include/fmm_dist_mpi.h lib/libfmm_mpi.a); do
        [ -e "$prefix/$f" ] || [ -e "$prefix/${f/lib\//lib64/}" ] || { echo "missing $f"; return 1; }
    done
}
step "installed files" installed
step "fmm --version says $version" bash -c "'$prefix/bin/fmm' --version | tee /dev/stderr | grep -q '^fmm $version ('"

# the public headers, alone, in C and C++ (extern "C"), warning-free
cat >"$tmp/headers.c" <<'C'
#include <fmm.h>
#include <fmm_bldtt.h>
#include <fmm_fgt.h>
#include <fmm_rbf.h>
#include <fmm_version.h>
#include <string.h>
int main(void) { return strcmp(fmm_version(), FMM_VERSION_STRING) != 0; }
C
cp "$tmp/headers.c" "$tmp/headers.cpp"
step "headers in C11 (-Wall -Wextra -pedantic -Werror)" \
    cc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$prefix/include" "$tmp/headers.c"
step "headers in C++17 (-Wall -Wextra -pedantic -Werror)" \
    c++ -std=c++17 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$prefix/include" "$tmp/headers.cpp"

# find_package(fmm)
ds=$tmp/downstream
step "downstream CMake project: configure (find_package(fmm))" \
    cmake -S "$src/tests/downstream/cmake" -B "$ds" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
step "downstream CMake project: build" cmake --build "$ds" -j"$jobs"
step "downstream CMake project: run against libfmm.a" "$ds/coulomb_static"
step "downstream CMake project: run against libfmm.so" "$ds/coulomb_shared"
step "downstream CMake project: the shared program loads the installed libfmm.so" \
    bash -c "ldd '$ds/coulomb_shared' | grep -q '$prefix/lib.*/libfmm.so'"

# fmm::fmm_mpi: find_package(fmm) finds MPI; one rank's distributed evaluation against the direct sum
if [ "$mpi" = ON ]; then
    mp=$tmp/mpi
    mkdir -p "$mp"
    cat >"$mp/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(fmm_mpi_check LANGUAGES C)
find_package(fmm REQUIRED)
add_executable(dist_mpi dist_mpi.c)
target_link_libraries(dist_mpi PRIVATE fmm::fmm_mpi m)
CMAKE
    cat >"$mp/dist_mpi.c" <<'C'
#include <fmm_dist_mpi.h>
#include <math.h>
#include <stdio.h>
int main(int argc, char **argv) {
    enum { n = 200 };
    double xyz[3 * n], q[n], phi[n], ref[n], e, eref;
    for (int i = 0; i < 3 * n; ++i) xyz[i] = fmod(0.618034 * (i + 1) * (i % 7 + 1), 1.0);
    for (int i = 0; i < n; ++i) q[i] = i % 2 ? 1.0 : -1.0;
    MPI_Init(&argc, &argv);
    MPI_Comm world = MPI_COMM_WORLD;
    fmm_comm c;
    fmm_dist_plan *p = NULL;
    fmm_opts o;
    fmm_default_opts(&o);
    int rc = fmm_comm_mpi(&world, &c);
    if (!rc) rc = fmm_dist_makeplan(&o, NULL, &c, &p);
    if (!rc) rc = fmm_dist_setpts(p, n, xyz);
    if (!rc) rc = fmm_dist_execute(p, q, phi, NULL, &e, NULL);
    fmm_dist_destroy(p);
    MPI_Finalize();
    if (!rc) rc = fmm_direct(n, xyz, q, ref, NULL, &eref, NULL, 0);
    printf("rc %d energy %.12g (direct %.12g)\n", rc, e, eref);
    return rc || !(fabs(e - eref) <= 1e-5 * fabs(eref));
}
C
    step "fmm::fmm_mpi: configure and build (find_package(fmm) with MPI)" bash -c \
        "cmake -S '$mp' -B '$mp/build' -DCMAKE_PREFIX_PATH='$prefix' -DCMAKE_BUILD_TYPE=Release &&
         cmake --build '$mp/build' -j$jobs"
    step "fmm::fmm_mpi: one rank against the direct sum" "$mp/build/dist_mpi"
fi

# make + pkg-config
pcdir=$(dirname "$(find "$prefix" -name fmm.pc | head -1)")
mk=$tmp/make
mkdir -p "$mk"
export PKG_CONFIG_PATH=$pcdir
step "pkg-config --modversion fmm is $version" bash -c "[ \"\$(pkg-config --modversion fmm)\" = '$version' ]"
step "make + pkg-config: build" make -C "$mk" -f "$src/tests/downstream/make/Makefile" \
    EXAMPLES="$src/examples" fgt_gauss fgt_gauss_static
step "make + pkg-config: run against libfmm.so" "$mk/fgt_gauss"
step "make + pkg-config: run against libfmm.a" "$mk/fgt_gauss_static"
unset PKG_CONFIG_PATH

# the examples on their own (examples/CMakeLists.txt stand-alone)
ex=$tmp/examples
step "examples stand-alone: configure and build" bash -c \
    "cmake -S '$src/examples' -B '$ex' -DCMAKE_PREFIX_PATH='$prefix' -DCMAKE_BUILD_TYPE=Release &&
     cmake --build '$ex' -j$jobs"
for e in coulomb_periodic rbf_interp; do
    step "examples stand-alone: $e" "$ex/$e"
done

if [ "$nfail" -eq 0 ]; then echo "install check: all passed"; else echo "install check: $nfail failed"; fi
[ "$nfail" -eq 0 ]
