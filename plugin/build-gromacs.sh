#!/usr/bin/env bash
# plugin/build-gromacs.sh PREFIX [--cuda] [--jobs N] [--tarball FILE] [--tests] [--gromacs 2022.5]
#
# Builds GROMACS main (2027.0-dev, commit b1a82ec) with this project's FMM as the "fmmlib" backend
# of GROMACS's own FMM module (coulombtype = FMM, fmm-backend = fmmlib) and installs it into PREFIX
# (PREFIX/bin/gmx, PREFIX/bin/GMXRC). Steps, each skipped when already done:
#  1. Debian packages needed for the build (apt-get, as root): build-essential cmake ccache
#     libfftw3-dev git python3-venv; CMake >= 3.28 from PyPI into WORK/cmake-venv where the
#     system's cmake is older (Debian 12 has 3.25);
#  2. the GROMACS source: the tarball given with --tarball, else ../shared/gromacs/ beside the
#     repository (gromacs-2027.0-dev-b1a82ec.tar.xz), else a clone of GROMACS's repository at that
#     commit (needs internet);
#  3. unpacks it in WORK/src/gromacs-2027.0-dev-b1a82ec, applies plugin/gromacs-main/fmmlib.patch
#     and copies the backend's sources (plugin/gromacs-main/fmm/) into src/gromacs/fmm/;
#  4. the project's FMM library as a static, position-independent libfmm.a (CPU only, or with
#     CUDA for --cuda) in WORK/fmmlib-{cpu,cuda};
#  5. configures GROMACS in WORK/build-main-{cpu,cuda} (mixed precision, thread-MPI, FFTW3 from
#     Debian, GMX_USE_EXT_FMM, no manual, ccache when installed), builds and installs it into
#     PREFIX; with --tests also builds the FMM module's unit tests and runs them.
# --gromacs 2022.5 builds the older GROMACS 2022.5 MDModule instead (plugin/gromacs-2022.5-fmm.patch,
# fmm-active = yes; source from Debian's source package or --tarball; WORK/build-{cpu,cuda}).
# WORK is build-gromacs/ in the repository (git-ignored), or $FMM_GMX_WORK.
# Environment: GMX_SIMD (default AVX2_256 for the CPU build, auto-detected for --cuda),
# SKIP_APT=1 (no apt-get: machines without internet), GMX_FFT (default fftw3; fftpack, bundled with
# GROMACS, where FFTW3 is not installed: enough when PME runs on the GPU with cuFFT), CUDA_SM
# (default 90), FMM_NATIVE (ON/OFF, default ON: libfmm with -march=native, as it runs where it is
# built), GMX_SIMD_KERNELS (main: ON/OFF, default ON; OFF leaves out GROMACS's SIMD pair kernels,
# 216 of libgromacs's ~850 files and the slowest to compile; plain-C kernels compute LJ: for CI).
set -euo pipefail

usage() {
    sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'
}

REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=""
CUDA=0
JOBS=$(nproc)
TARBALL=""
TESTS=0
GMX_VERSION=main
while [ $# -gt 0 ]; do
    case "$1" in
        --cuda) CUDA=1 ;;
        --jobs) JOBS=$2; shift ;;
        --tarball) TARBALL=$(realpath "$2"); shift ;;
        --tests) TESTS=1 ;;
        --gromacs) GMX_VERSION=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "build-gromacs.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) if [ -n "$PREFIX" ]; then echo "build-gromacs.sh: one PREFIX only" >&2; exit 2; fi
           PREFIX=$1 ;;
    esac
    shift
done
if [ -z "$PREFIX" ]; then usage >&2; exit 2; fi
case "$GMX_VERSION" in
    main|2022.5) ;;
    *) echo "build-gromacs.sh: --gromacs takes main or 2022.5" >&2; exit 2 ;;
esac
mkdir -p "$PREFIX"
PREFIX=$(realpath "$PREFIX")

WORK=${FMM_GMX_WORK:-$REPO/build-gromacs}
SRC=$WORK/src
KIND=cpu
[ "$CUDA" -eq 1 ] && KIND=cuda
if [ "$GMX_VERSION" = main ]; then
    GMX_COMMIT=b1a82ec1956eb9658d33f3ec6f3adfdbb6b53a7b
    TREE=$SRC/gromacs-2027.0-dev-b1a82ec
    ORIG=$REPO/../shared/gromacs/gromacs-2027.0-dev-b1a82ec.tar.xz
    [ -n "$TARBALL" ] && ORIG=$TARBALL
    BUILD=$WORK/build-main-$KIND
else
    TREE=$SRC/gromacs-2022.5
    ORIG=$SRC/gromacs_2022.5.orig.tar.gz
    BUILD=$WORK/build-$KIND
fi
mkdir -p "$SRC"
log() { echo "== build-gromacs.sh: $*"; }
# apt_install PKG...: installs the missing ones when root and apt is allowed; otherwise says so
apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ -z "${SKIP_APT:-}" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
            || log "could not install ${missing[*]}: going on with what is there"
    else
        log "missing packages (${missing[*]}), no apt-get: going on with what is there"
    fi
}

# ---------------------------------------------------------------------------------------
# 1. packages; CMake >= 3.28 for GROMACS main
pkgs=(build-essential cmake libfftw3-dev)
command -v ccache >/dev/null || pkgs+=(ccache)
if [ "$GMX_VERSION" = main ]; then
    [ -f "$ORIG" ] || [ -d "$TREE/.git" ] || pkgs+=(git)
else
    [ -f "$ORIG" ] || [ -n "$TARBALL" ] || pkgs+=(dpkg-dev)
fi
apt_install "${pkgs[@]}"
CMAKE=cmake
if [ "$GMX_VERSION" = main ]; then
    version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
    cmake_version=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
    if ! version_ge "${cmake_version:-0}" 3.28; then
        CMAKE=$WORK/cmake-venv/bin/cmake
        if [ ! -x "$CMAKE" ]; then
            log "cmake ${cmake_version:-none} is older than 3.28: CMake from PyPI into $WORK/cmake-venv"
            python3 -m venv "$WORK/cmake-venv" 2>/dev/null || {
                apt_install python3-venv
                python3 -m venv "$WORK/cmake-venv"
            }
            "$WORK/cmake-venv/bin/pip" install --quiet 'cmake>=3.28,<4'
        fi
    fi
fi

# ---------------------------------------------------------------------------------------
# 2. source
if [ "$GMX_VERSION" = main ]; then
    if [ ! -f "$TREE/CMakeLists.txt" ]; then
        if [ -f "$ORIG" ]; then
            log "unpacking $ORIG"
            tar -C "$SRC" -xJf "$ORIG"
        else
            log "no $ORIG: cloning GROMACS at $GMX_COMMIT"
            git clone --quiet https://gitlab.com/gromacs/gromacs.git "$TREE"
            git -C "$TREE" checkout --quiet "$GMX_COMMIT"
        fi
    fi
elif [ ! -f "$ORIG" ]; then
    if [ -n "$TARBALL" ]; then
        cp "$TARBALL" "$ORIG"
    else
        if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
            log "adding a deb-src entry (/etc/apt/sources.list.d/debian-src.sources)"
            if [ -f /etc/apt/sources.list.d/debian.sources ]; then
                sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                    > /etc/apt/sources.list.d/debian-src.sources
            else
                sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/debian-src.list
            fi
        fi
        apt-get update -qq
        log "apt-get source --download-only gromacs"
        (cd "$SRC" && apt-get source --download-only gromacs 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
        [ -f "$ORIG" ] || { echo "build-gromacs.sh: $ORIG not downloaded (Debian's gromacs is not 2022.5?)" >&2; exit 1; }
    fi
fi

# ---------------------------------------------------------------------------------------
# 3. unpack, patch, module files
if [ "$GMX_VERSION" = main ]; then
    PATCH=$REPO/plugin/gromacs-main/fmmlib.patch
    MODSRC=$REPO/plugin/gromacs-main/fmm
    MOD=$TREE/src/gromacs/fmm
else
    if [ ! -f "$TREE/CMakeLists.txt" ]; then
        log "unpacking $(basename "$ORIG")"
        tar -C "$SRC" -xzf "$ORIG"
    fi
    PATCH=$REPO/plugin/gromacs-2022.5-fmm.patch
    MODSRC=$REPO/plugin/gromacs/fmm
    MOD=$TREE/src/gromacs/applied_forces/fmm
fi
APPLIED=$TREE/.fmm-patch-applied
if [ -f "$APPLIED" ] && ! cmp -s "$APPLIED" "$PATCH"; then
    log "the patch changed: reverting the old one"
    patch -d "$TREE" -p1 -R -s < "$APPLIED"
    rm -f "$APPLIED"
fi
if [ ! -f "$APPLIED" ] && [ -f "$PATCH" ]; then
    log "applying $(basename "$PATCH")"
    patch -d "$TREE" -p1 -s < "$PATCH"
    cp "$PATCH" "$APPLIED"
fi
if [ -d "$MODSRC" ]; then
    # copy only what changed: unchanged files keep their time stamps (no rebuild)
    (cd "$MODSRC" && find . -type f) | while read -r f; do
        mkdir -p "$(dirname "$MOD/$f")"
        cmp -s "$MODSRC/$f" "$MOD/$f" || cp "$MODSRC/$f" "$MOD/$f"
    done
fi

# ---------------------------------------------------------------------------------------
# 4. the FMM library
FMMLIB=$WORK/fmmlib-$KIND
fmm_cuda_args=(-DCMAKE_CUDA_COMPILER=OFF)
if [ "$CUDA" -eq 1 ]; then
    fmm_cuda_args=(-DCMAKE_CUDA_ARCHITECTURES="${CUDA_SM:-90}")
fi
log "libfmm ($KIND) in $FMMLIB"
cmake -S "$REPO" -B "$FMMLIB" -DCMAKE_BUILD_TYPE=Release -DFMM_TESTS=OFF \
    -DFMM_NATIVE="${FMM_NATIVE:-ON}" -DCMAKE_POSITION_INDEPENDENT_CODE=ON "${fmm_cuda_args[@]}" >/dev/null
cmake --build "$FMMLIB" --target fmm -j"$JOBS" >/dev/null
FMM_LIBS="$FMMLIB/libfmm.a;gomp;m"
if [ "$CUDA" -eq 1 ]; then
    # libfmm.a's device code uses device-side launches (m2l_dynamic.cu): the device runtime
    # (static only) goes in front of the CUDA runtime
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    CUDALIB=$(dirname "$(dirname "$(realpath "$NVCC")")")/lib64
    CUDART=$CUDALIB/libcudart.so
    [ -e "$CUDART" ] || CUDART=cudart
    FMM_LIBS="$FMM_LIBS;$CUDALIB/libcudadevrt.a;$CUDART"
fi

# ---------------------------------------------------------------------------------------
# 5. GROMACS
gmx_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX"
          -DGMX_MPI=OFF -DGMXAPI=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
          -DGMX_FFT_LIBRARY="${GMX_FFT:-fftw3}" -DGMX_BUILD_OWN_FFTW=OFF
          -DGMX_BUILD_MANUAL=OFF -DGMX_INSTALL_NBLIB_API=OFF
          -DGMX_FMM_INCLUDE_DIR="$REPO/include" -DGMX_FMM_LIBRARIES="$FMM_LIBS")
if [ "$GMX_VERSION" = main ]; then
    # the unit tests are outside the default target: BUILD_TESTING costs nothing unless --tests
    gmx_args+=(-DGMX_USE_EXT_FMM=ON -DBUILD_TESTING=ON -DGMX_USE_SIMD_KERNELS="${GMX_SIMD_KERNELS:-ON}")
else
    gmx_args+=(-DBUILD_TESTING=OFF)
fi
if [ "$CUDA" -eq 1 ]; then
    gmx_args+=(-DGMX_GPU=CUDA)
    # CUDA 13's nvcc needs the template stub flag; main compiles CUDA as a CMake language
    if [ "$GMX_VERSION" = main ]; then
        gmx_args+=(-DCMAKE_CUDA_ARCHITECTURES="${CUDA_SM:-90}"
                   -DCMAKE_CUDA_FLAGS=-static-global-template-stub=false)
    else
        gmx_args+=(-DGMX_CUDA_TARGET_SM="${CUDA_SM:-90}"
                   -DCUDA_NVCC_FLAGS=-static-global-template-stub=false)
    fi
    [ -n "${GMX_SIMD:-}" ] && gmx_args+=(-DGMX_SIMD="$GMX_SIMD")
else
    gmx_args+=(-DGMX_GPU=OFF -DGMX_SIMD="${GMX_SIMD:-AVX2_256}")
fi
if command -v ccache >/dev/null; then
    gmx_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR=$WORK   # cache hits across build directories and checkouts
fi
LOGTAG=$(basename "$BUILD")
log "configuring GROMACS in $BUILD"
"$CMAKE" -S "$TREE" -B "$BUILD" "${gmx_args[@]}" > "$WORK/configure-$LOGTAG.log" 2>&1 \
    || { tail -30 "$WORK/configure-$LOGTAG.log"; exit 1; }
log "building (make -j$JOBS, log $WORK/make-$LOGTAG.log)"
start=$(date +%s)
if ! make -C "$BUILD" -j"$JOBS" install > "$WORK/make-$LOGTAG.log" 2>&1; then
    grep -B5 -A20 -m3 'error' "$WORK/make-$LOGTAG.log" | head -80
    exit 1
fi
log "installed into $PREFIX in $(( $(date +%s) - start )) s: source $PREFIX/bin/GMXRC; gmx mdrun -ntmpi 1 ..."
if [ "$TESTS" -eq 1 ] && [ "$GMX_VERSION" = main ]; then
    log "the FMM module's unit tests (log $WORK/tests-$LOGTAG.log)"
    if ! { make -C "$BUILD" -j"$JOBS" fmm-interface-tests &&
           "$BUILD/bin/fmm-interface-tests"; } > "$WORK/tests-$LOGTAG.log" 2>&1; then
        grep -B2 -A20 -m5 'error\|FAILED' "$WORK/tests-$LOGTAG.log" | head -80
        exit 1
    fi
    tail -3 "$WORK/tests-$LOGTAG.log"
fi
