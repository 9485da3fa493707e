#!/usr/bin/env bash
# plugin/build-gromacs.sh PREFIX [--cuda] [--jobs N] [--tarball FILE]
#
# Builds GROMACS 2022.5 with the fmm project's MDModule (Coulomb by the FMM) and installs it
# into PREFIX (PREFIX/bin/gmx, PREFIX/bin/GMXRC). Steps, each skipped when already done:
#  1. Debian packages needed for the build (apt-get, as root): build-essential cmake ccache
#     libfftw3-dev dpkg-dev;
#  2. the GROMACS source: gromacs_2022.5.orig.tar.gz from Debian's source package
#     (`apt-get source --download-only gromacs`, adding a deb-src entry to apt's sources
#     if there is none), or the file given with --tarball (the device machine has no internet);
#  3. unpacks it in WORK/src/gromacs-2022.5, applies plugin/gromacs-2022.5-fmm.patch (about 200
#     lines in 9 core files) and copies plugin/gromacs/fmm/ to src/gromacs/applied_forces/fmm/;
#  4. the project's FMM library as a static, position-independent libfmm.a (CPU only, or with
#     CUDA for --cuda) in WORK/fmmlib-{cpu,cuda};
#  5. configures GROMACS in WORK/build-{cpu,cuda} (mixed precision, thread-MPI, FFTW3 from
#     Debian, no tests or manual, ccache when installed), builds and installs it into PREFIX.
# WORK is build-gromacs/ in the repository (git-ignored), or $FMM_GMX_WORK.
# Environment: GMX_SIMD (default AVX2_256 for the CPU build, auto-detected for --cuda),
# SKIP_APT=1 (no apt-get: machines without internet), GMX_FFT (default fftw3; fftpack, bundled with
# GROMACS, where FFTW3 is not installed: enough when PME runs on the GPU with cuFFT), CUDA_SM (default 90), FMM_NATIVE (ON/OFF, default ON: libfmm with -march=native, as it runs where it is built).
# A first CPU build takes ~15-20 min on 2 cores; with a warm ccache about a minute.
set -euo pipefail

usage() {
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
}

REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=""
CUDA=0
JOBS=$(nproc)
TARBALL=""
while [ $# -gt 0 ]; do
    case "$1" in
        --cuda) CUDA=1 ;;
        --jobs) JOBS=$2; shift ;;
        --tarball) TARBALL=$(realpath "$2"); shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "build-gromacs.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) if [ -n "$PREFIX" ]; then echo "build-gromacs.sh: one PREFIX only" >&2; exit 2; fi
           PREFIX=$1 ;;
    esac
    shift
done
if [ -z "$PREFIX" ]; then usage >&2; exit 2; fi
mkdir -p "$PREFIX"
PREFIX=$(realpath "$PREFIX")

WORK=${FMM_GMX_WORK:-$REPO/build-gromacs}
SRC=$WORK/src
TREE=$SRC/gromacs-2022.5
ORIG=$SRC/gromacs_2022.5.orig.tar.gz
KIND=cpu
[ "$CUDA" -eq 1 ] && KIND=cuda
mkdir -p "$SRC"
log() { echo "== build-gromacs.sh: $*"; }

# ---------------------------------------------------------------------------------------
# 1. packages
pkgs=(build-essential cmake libfftw3-dev)
command -v ccache >/dev/null || pkgs+=(ccache)
[ -f "$ORIG" ] || [ -n "$TARBALL" ] || pkgs+=(dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ -z "${SKIP_APT:-}" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
            || log "could not install ${missing[*]}: going on with what is there"
    else
        log "missing packages (${missing[*]}), not root: going on with what is there"
    fi
fi

# ---------------------------------------------------------------------------------------
# 2. source tarball
if [ ! -f "$ORIG" ]; then
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
if [ ! -f "$TREE/CMakeLists.txt" ]; then
    log "unpacking $(basename "$ORIG")"
    tar -C "$SRC" -xzf "$ORIG"
fi
PATCH=$REPO/plugin/gromacs-2022.5-fmm.patch
APPLIED=$TREE/.fmm-patch-applied
if [ -f "$APPLIED" ] && ! cmp -s "$APPLIED" "$PATCH"; then
    log "the patch changed: reverting the old one"
    patch -d "$TREE" -p1 -R -s < "$APPLIED"
    rm -f "$APPLIED"
fi
if [ ! -f "$APPLIED" ]; then
    log "applying $(basename "$PATCH")"
    patch -d "$TREE" -p1 -s < "$PATCH"
    cp "$PATCH" "$APPLIED"
fi
MOD=$TREE/src/gromacs/applied_forces/fmm
mkdir -p "$MOD"
for f in "$REPO"/plugin/gromacs/fmm/*; do
    # copy only what changed: unchanged files keep their time stamps (no rebuild)
    cmp -s "$f" "$MOD/$(basename "$f")" || cp "$f" "$MOD/"
done

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
BUILD=$WORK/build-$KIND
gmx_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX"
          -DGMX_MPI=OFF -DGMXAPI=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
          -DGMX_FFT_LIBRARY="${GMX_FFT:-fftw3}" -DGMX_BUILD_OWN_FFTW=OFF
          -DBUILD_TESTING=OFF -DGMX_BUILD_MANUAL=OFF -DGMX_INSTALL_NBLIB_API=OFF
          -DGMX_FMM_INCLUDE_DIR="$REPO/include" -DGMX_FMM_LIBRARIES="$FMM_LIBS")
if [ "$CUDA" -eq 1 ]; then
    gmx_args+=(-DGMX_GPU=CUDA -DGMX_CUDA_TARGET_SM="${CUDA_SM:-90}"
               -DCUDA_NVCC_FLAGS=-static-global-template-stub=false)
    [ -n "${GMX_SIMD:-}" ] && gmx_args+=(-DGMX_SIMD="$GMX_SIMD")
else
    gmx_args+=(-DGMX_GPU=OFF -DGMX_SIMD="${GMX_SIMD:-AVX2_256}")
fi
if command -v ccache >/dev/null; then
    gmx_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR=$WORK   # cache hits across build directories and checkouts
fi
log "configuring GROMACS in $BUILD"
cmake -S "$TREE" -B "$BUILD" "${gmx_args[@]}" > "$WORK/configure-$KIND.log" 2>&1 \
    || { tail -30 "$WORK/configure-$KIND.log"; exit 1; }
log "building (make -j$JOBS, log $WORK/make-$KIND.log)"
start=$(date +%s)
if ! make -C "$BUILD" -j"$JOBS" install > "$WORK/make-$KIND.log" 2>&1; then
    grep -B5 -A20 -m3 'error' "$WORK/make-$KIND.log" | head -80
    exit 1
fi
log "installed into $PREFIX in $(( $(date +%s) - start )) s: source $PREFIX/bin/GMXRC; gmx mdrun -ntmpi 1 ..."
