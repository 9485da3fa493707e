#!/usr/bin/env bash
# python_check.sh - the Python package as a user gets it: a fresh virtual environment,
# `pip install .` of this checkout (scikit-build-core builds libfmm.so with CMake, CPU,
# portable), the three-line example of docs/python.md, then the pytest suite of python/tests
# (direct and Ewald references on fresh random inputs; the GPU test skips without a GPU).
# Needs python3 with venv and pip, and the package index (scikit-build-core, numpy, pytest),
# unless PIP_ARGS points pip elsewhere (e.g. PIP_ARGS="--no-index --find-links DIR").
# A few minutes on two cores; exits non-zero on any failure.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fmm_python_check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2}
read -r -a pip_args <<<"${PIP_ARGS:-}"

"${PYTHON:-python3}" -m venv "$tmp/venv"
py=$tmp/venv/bin/python
echo "== pip install $src"
"$py" -m pip install -q "${pip_args[@]}" "$src"
"$py" -m pip install -q "${pip_args[@]}" pytest
cd "$tmp" # import the installed package, not the source tree
echo "== the example of docs/python.md"
"$py" - <<'PY'
import numpy as np, fmm
x, q = np.random.rand(100_000, 3), np.random.uniform(-1, 1, 100_000)
r = fmm.coulomb(x, q, tolerance=1e-6)          # r.phi, r.field, r.energy
print(f"fmm {fmm.version()} ({fmm.build_info()}): energy {r.energy:.6f}, phi {r.phi.shape}, field {r.field.shape}")
PY
echo "== pytest"
"$py" -m pytest -q -rs "$src/python/tests"
