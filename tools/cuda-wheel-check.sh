#!/usr/bin/env bash
# The set-up's path for a CUDA build of torch, exercised on a machine without a GPU or a CUDA
# toolkit on PATH (`make cuda-wheel-check`; not part of `make test`: about 2.7 GB of wheels on
# the first run). Into <build-dir>/cuda-wheel/venv it installs torch 2.13.0 as pip serves it from
# the package index where no local CPU wheel is configured (a CUDA build, with its nvidia-*
# wheels), then, with every nvcc taken off PATH, runs tools/torch-cuda-toolkit.sh as
# tools/install-deps.sh does, configures the plugin against that LibTorch with the arguments it
# wrote, builds and links nvalchemiplugin.so, and checks that the plugin links LibTorch's CUDA
# libraries. A second run reuses the venv and the build (ccache).
#
# usage: tools/cuda-wheel-check.sh <build-dir>   (after tools/install-deps.sh <build-dir>)
set -euo pipefail

build_dir=${1:?usage: cuda-wheel-check.sh <build-dir>}
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "$build_dir" && pwd)
work=$build_dir/cuda-wheel
venv=$work/venv
start=$(date +%s)
mkdir -p "$work"

if ! "$venv/bin/python" -c "import sys, torch; sys.exit(torch.version.cuda is None)" 2>/dev/null; then
  echo "cuda-wheel-check: installing torch 2.13.0 as the package index serves it into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # no local wheel folder and no pip configuration: what a user's pip does
  env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$venv/bin/pip" install -q --disable-pip-version-check \
    "torch==2.13.0"
fi
"$venv/bin/python" -W ignore -c "import torch; print('cuda-wheel-check: torch', torch.__version__, 'built for CUDA', torch.version.cuda)"

# a machine without the CUDA toolkit: no nvcc on PATH
no_nvcc_path=$(tr ':' '\n' <<< "$PATH" | while read -r dir; do [ -x "$dir/nvcc" ] || echo "$dir"; done | paste -sd:)
PATH=$no_nvcc_path "$repo/tools/torch-cuda-toolkit.sh" "$venv/bin/python" "$work/torch-cmake-args"
grep -q -- "-DCUDAToolkit_ROOT=" "$work/torch-cmake-args" || {
  echo "cuda-wheel-check: FAIL: torch-cuda-toolkit.sh gave no CUDA toolkit for a CUDA build" >&2; exit 1; }

# shellcheck disable=SC2046  (the file holds separate CMake arguments)
PATH=$no_nvcc_path cmake -S "$repo/cmake/plugin" -B "$work/plugin" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DLAMMPS_SOURCE_DIR="$build_dir/lammps-src/src" \
  -DNVALCHEMI_PYTHON="$venv/bin/python" $(cat "$work/torch-cmake-args") > "$work/configure.log" 2>&1 || {
  tail -40 "$work/configure.log" >&2; echo "cuda-wheel-check: FAIL: CMake configure" >&2; exit 1; }
grep -E "USER-NVALCHEMI: LibTorch|PyTorch: CUDA detected" "$work/configure.log"
PATH=$no_nvcc_path cmake --build "$work/plugin" -j "$(nproc)" --target nvalchemiplugin > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2; echo "cuda-wheel-check: FAIL: building the plugin" >&2; exit 1; }
if ! readelf -d "$work/plugin/nvalchemiplugin.so" | grep -q "libtorch_cuda.so"; then
  echo "cuda-wheel-check: FAIL: nvalchemiplugin.so does not link libtorch_cuda.so" >&2
  exit 1
fi
echo "cuda-wheel-check: PASS: configured without nvcc on PATH and linked $work/plugin/nvalchemiplugin.so" \
     "against the CUDA LibTorch in $(($(date +%s) - start)) s"
