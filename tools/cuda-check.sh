#!/usr/bin/env bash
# What of the package compiles for CUDA on a machine without a GPU (`make cuda-check`; not part of
# `make test`: about 2.7 GB of wheels on the first run, then a few minutes with ccache warm).
#
#  1. tools/cuda-wheel-check.sh: torch 2.13.0 as pip serves it (a CUDA build) in
#     <build-dir>/cuda-wheel/venv, the set-up's path without nvcc, the plugin linked against it.
#  2. With the nvidia-* wheels' toolkit that step 1 set up (the nvcc of torch's CUDA release,
#     its runtime and the headers of the libraries torch's CUDA headers include: cuBLAS,
#     cuSPARSE, ..., which a minimal toolkit lacks), the plugin again with the operator library's
#     CUDA kernels (kernels/nvalchemi_kernels_cuda.cu, for CUDA_ARCH, default 90: H100/H200):
#     every package source compiled against the CUDA LibTorch, nvalchemiplugin.so and
#     nvalchemi_kernels.so linked, and the kernels' device code checked to be in the library.
# Not here: pair_style nvalchemi/kk for Kokkos' CUDA backend. It needs a Kokkos built with CUDA,
# and the Kokkos source these machines could build one from (Debian's kokkos source package) is
# not served to them; the step prints so.
#
# usage: tools/cuda-check.sh <build-dir>   (after tools/install-deps.sh <build-dir>)
set -euo pipefail

build_dir=${1:?usage: cuda-check.sh <build-dir>}
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(cd "$build_dir" && pwd)
work=$build_dir/cuda-check
venv=$build_dir/cuda-wheel/venv
arch=${CUDA_ARCH:-90}
start=$(date +%s)
fail() { echo "cuda-check: FAIL: $*" >&2; exit 1; }

"$repo/tools/cuda-wheel-check.sh" "$build_dir"

# --- 2. the package's LibTorch units and the CUDA kernels, compiled by nvcc ------------------------
mkdir -p "$work"
toolkit_args=$build_dir/cuda-wheel/torch-cmake-args
grep -q -- "-DCMAKE_CUDA_COMPILER=" "$toolkit_args" || fail "$toolkit_args names no nvcc"
# CCCL (libcu++, CUB, Thrust: what CUDA's own headers include) of torch's CUDA release
cuda=$("$venv/bin/python" -W ignore -c "import torch; print(torch.version.cuda)")
if ! "$venv/bin/python" -c "import sys; from importlib.metadata import version
sys.exit(not version('nvidia-cuda-cccl').startswith(sys.argv[1] + '.'))" "$cuda" 2>/dev/null; then
  echo "cuda-check: installing nvidia-cuda-cccl $cuda beside torch"
  env -u PIP_FIND_LINKS "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "nvidia-cuda-cccl==$cuda.*"
fi
# shellcheck disable=SC2046  (the file holds separate CMake arguments)
cmake -S "$repo/cmake/plugin" -B "$work/plugin" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
  -DLAMMPS_SOURCE_DIR="$build_dir/lammps-src/src" -DNVALCHEMI_PYTHON="$venv/bin/python" \
  -DNVALCHEMI_CUDA_KERNELS=on -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  $(cat "$toolkit_args") > "$work/configure.log" 2>&1 || {
  tail -40 "$work/configure.log" >&2; fail "CMake configure with CUDA (log: $work/configure.log)"; }
grep -E "The CUDA compiler identification" "$work/configure.log" || true
cmake --build "$work/plugin" -j "$(nproc)" --target nvalchemiplugin nvalchemi_kernels \
  > "$work/build.log" 2>&1 || {
  grep -E "error" "$work/build.log" | head -20 >&2; fail "building for CUDA (log: $work/build.log)"; }
kernels=$work/plugin/nvalchemi_kernels.so
readelf -S "$kernels" | grep -q "\.nv_fatbin" || fail "$kernels holds no CUDA device code"
readelf -d "$kernels" | grep -q "libtorch_cuda.so" || fail "$kernels does not link libtorch_cuda.so"
readelf -d "$work/plugin/nvalchemiplugin.so" | grep -q "libtorch_cuda.so" ||
  fail "nvalchemiplugin.so does not link libtorch_cuda.so"
echo "cuda-check: PASS: the package's sources and nvalchemi_kernels.so (CUDA kernels for sm_$arch)" \
     "built against torch $("$venv/bin/python" -W ignore -c 'import torch; print(torch.__version__)')"

echo "cuda-check: NOT CHECKED: pair_style nvalchemi/kk for Kokkos' CUDA backend (no Kokkos source" \
     "to build a CUDA Kokkos from on this machine)"
echo "cuda-check: done in $(($(date +%s) - start)) s"
