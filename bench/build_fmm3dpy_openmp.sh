#!/usr/bin/env bash
# build_fmm3dpy_openmp.sh - build and install fmm3dpy with OpenMP from its PyPI sdist.
#
# Why: the fmm3dpy 2.1.0 binary wheel on PyPI is compiled WITHOUT OpenMP (its
# extension modules do not link libgomp), so OMP_NUM_THREADS has no effect and
# FMM3D always runs on one thread. A comparison "at the same thread count" needs
# a threaded FMM3D. This script downloads the same version's source
# distribution with pip, adds the flags of FMM3D's own makefile
# (-fopenmp -march=native -funroll-loops, on top of meson's -O3) and installs
# the result in place of the wheel.
#
# Usage: bench/build_fmm3dpy_openmp.sh [WORKDIR]   (default: a temporary directory)
# Needs: gfortran, gcc, python3 with pip; installs meson-python, meson, ninja, numpy.
set -euo pipefail

VERSION=2.1.0
PY=${PYTHON:-python3}
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
cd "$WORK"

if ! command -v gfortran >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gfortran
    else
        echo "build_fmm3dpy_openmp.sh: gfortran not found (apt-get install gfortran)" >&2
        exit 1
    fi
fi

"$PY" -m pip install -q meson-python meson ninja "numpy>=2"
"$PY" -m pip download -q --no-deps --no-binary fmm3dpy "fmm3dpy==$VERSION" -d .
rm -rf "fmm3dpy-$VERSION"
tar xzf "fmm3dpy-$VERSION.tar.gz"
cd "fmm3dpy-$VERSION"

# Patch meson.build: OpenMP + FMM3D makefile's optimisation flags for the Fortran
# library, and link the extension modules against OpenMP.
"$PY" - <<'EOF'
import re
src = open('meson.build').read()
old_args = "f_args = fc.get_supported_arguments(['-w', '-std=legacy'])"
new_args = ("f_args = fc.get_supported_arguments(['-w', '-std=legacy', '-fopenmp', "
            "'-march=native', '-funroll-loops'])\nomp_dep = dependency('openmp', language: 'fortran')")
assert old_args in src, 'meson.build changed upstream: f_args line not found'
src = src.replace(old_args, new_args)
old_deps = "dependencies: [f2py_dep],"
assert old_deps in src, 'meson.build changed upstream: extension dependencies not found'
src = src.replace(old_deps, "dependencies: [f2py_dep, omp_dep],")
open('meson.build', 'w').write(src)
EOF

"$PY" -m pip install -q --no-build-isolation --force-reinstall --no-deps .

# Check that the installed module really is threaded.
"$PY" - <<'EOF'
import glob, os, subprocess, fmm3dpy
d = os.path.dirname(fmm3dpy.__file__)
so = glob.glob(os.path.join(d, 'lfmm3d_fortran*.so'))[0]
out = subprocess.run(['ldd', so], capture_output=True, text=True).stdout
if 'gomp' not in out:
    raise SystemExit('build_fmm3dpy_openmp.sh: installed fmm3dpy does not link libgomp')
print('fmm3dpy', fmm3dpy.__version__, 'installed with OpenMP:', so)
EOF
