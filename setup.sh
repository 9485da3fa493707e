#!/usr/bin/env bash
# setup.sh - on a fresh Debian 12: install what the build needs, build into build/, and run
# the FMM on the bundled SPC/E water box (energy, error against the direct sum, time).
set -euo pipefail
cd "$(dirname "$0")"

pkgs=(build-essential cmake libgtest-dev libomp-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${pkgs[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

echo "== fmm coulomb on systems/water/spce_3k.xyzq (2934 atoms, open boundary, tolerance 1e-6)"
./build/bin/fmm coulomb --in systems/water/spce_3k.xyzq --tolerance 1e-6 --reference
