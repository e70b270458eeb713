#!/usr/bin/env bash
# Builds MACE's own LAMMPS route, LAMMPS' ML-IAP package with its Python coupling (pair_style
# mliap unified, the file mace_create_lammps_model --format mliap writes), in a build folder of
# its own: the peer of bench/mliap_race.py. Not part of make test; the project's LAMMPS build is
# never touched (the pinned LAMMPS source is only read).
#
# What MACE's route needs, and so what is built:
#  - KOKKOS: MACE's ML-IAP class passes node features between ranks through the data object's
#    forward_exchange/reverse_exchange, which only the KOKKOS variant of ML-IAP's coupling has
#    (src/KOKKOS/mliap_unified_couple_kokkos.pyx); on the CPU it runs as mliap/kk on Kokkos'
#    OpenMP backend (the Kokkos the project builds against), with MACE_ALLOW_CPU=true.
#  - ML-IAP with ML-SNAP (its dependency) and PYTHON, MLIAP_ENABLE_PYTHON: the couplings are
#    Cython, cythonized at build time (Cython from PyPI into the peer folder, never into a venv).
#  - Python: the mace venv's, so that the embedded interpreter imports mace-torch and its torch.
# Idempotent: a second run rebuilds incrementally.
#
# usage: bench/mliap_peer_build.sh <build-dir>   (after make, and tools/install-export-venvs.sh)
#   -> <build-dir>/mliap-peer/build/lmp; run it with PYTHONPATH=<build-dir>/lammps-src/python
#      (LAMMPS' lammps.mliap package, which MACE's class imports)
# MLIAP_PEER_PYTHON: the python with mace-torch (default <build-dir>/venv-mace/bin/python);
# MLIAP_PEER_LAMMPS: the LAMMPS source (default <build-dir>/lammps-src); KOKKOS_DIR: Kokkos'
# CMake package folder (default the one tools/install-kokkos.sh installs).
set -euo pipefail

build_dir=$(cd "${1:?usage: mliap_peer_build.sh <build-dir>}" && pwd)
python=${MLIAP_PEER_PYTHON:-$build_dir/venv-mace/bin/python}
lammps_src=${MLIAP_PEER_LAMMPS:-$build_dir/lammps-src}
kokkos_dir=${KOKKOS_DIR:-$build_dir/kokkos/lib/x86_64-linux-gnu/cmake/Kokkos}
peer=$build_dir/mliap-peer
for need in "$python" "$lammps_src/src/ML-IAP/mliap_unified_couple.pyx" "$kokkos_dir"; do
  [ -e "$need" ] || { echo "mliap_peer_build: $need is missing (run make, then tools/install-export-venvs.sh)" >&2; exit 1; }
done
"$python" -c 'import mace, numpy' ||
  { echo "mliap_peer_build: $python has no mace-torch (tools/install-export-venvs.sh)" >&2; exit 1; }
# the headers of the Python the venv was made from (Debian's python3-dev, or a pyenv build's own)
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$include/Python.h" ] ||
  { echo "mliap_peer_build: LAMMPS' PYTHON package needs $include/Python.h (Debian: apt-get install python3-dev)" >&2; exit 1; }

# Cython, for the build only
cython_dir=$peer/cython
if [ ! -x "$cython_dir/bin/cythonize" ]; then
  "$python" -m pip install -q --prefix "$cython_dir" --ignore-installed "Cython>=3"
fi
site=$(echo "$cython_dir"/lib/python*/site-packages)
export PATH=$cython_dir/bin:$PATH PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}

source "$(dirname "$0")/gpu_bundle.sh"
if [ ! -f "$peer/build/CMakeCache.txt" ]; then
  lammps_cmake_args ""
  cmake -S "$lammps_src/cmake" -B "$peer/build" "${CMAKE_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_MPI=on -DBUILD_OMP=on -DCMAKE_CXX_STANDARD=20 -DBUILD_SHARED_LIBS=on \
    -DPKG_KOKKOS=on -DEXTERNAL_KOKKOS=on -DKokkos_DIR="$kokkos_dir" \
    -DPKG_ML-SNAP=on -DPKG_ML-IAP=on -DPKG_PYTHON=on -DMLIAP_ENABLE_PYTHON=on \
    -DPython_EXECUTABLE="$python" -DCythonize_EXECUTABLE="$cython_dir/bin/cythonize" >/dev/null
fi
cmake --build "$peer/build" -j "$(nproc)" --target lmp
# (the help into a file: grep -q in a pipe may end lmp early, a failure under pipefail)
"$peer/build/lmp" -h > "$peer/lmp-help.txt"
grep -q "mliap/kk" "$peer/lmp-help.txt" || { echo "mliap_peer_build: lmp lacks mliap/kk" >&2; exit 1; }
echo "mliap_peer_build: $peer/build/lmp"
