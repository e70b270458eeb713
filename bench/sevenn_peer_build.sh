#!/usr/bin/env bash
# Builds SevenNet's own LAMMPS styles, pair_style e3gnn (serial) and e3gnn/parallel, from the
# sources the sevenn wheel ships (sevenn/pair_e3gnn/), into a copy of the LAMMPS source this
# project builds against, linked to the same LibTorch: the peer of bench/sevenn_race.py. Not
# part of make test; the project's own LAMMPS tree is never touched.
#
# What is ported, in the copy only (sevenn's patch_lammps.sh targets LAMMPS 2 Aug 2023):
#  - comm_brick: sevenn's script replaces LAMMPS' comm_brick.{h,cpp} with its 2023 copies, which
#    no longer compile ("marked override, but does not override"); here LAMMPS' own files are
#    kept and only sevenn's two added methods, CommBrick::forward_comm/reverse_comm
#    (PairE3GNNParallel *), are taken over from its copy.
#  - <cuda_runtime.h>: pair_e3gnn_parallel.cpp includes it unconditionally; on a CPU build a
#    stand-in header declares the calls it makes, each failing (its CPU path calls only
#    cudaFree(nullptr)).
#  - LibTorch is linked the way patch_lammps.sh does it (find_package(Torch), appended to the
#    copy's cmake/CMakeLists.txt), C++17; LAMMPS' FindMKL.cmake is removed from the copy
#    (LibTorch's config finds MKL through it and gets an MKL_INCLUDE_DIR-NOTFOUND include path).
#  - a LibTorch with CUDA (a GPU machine's, bench/gpu_race.sh): the styles are built for CUDA
#    with the real <cuda_runtime.h> and cudart, LibTorch's CUDA libraries linked even where no
#    symbol of theirs is referenced (as cmake/NVAlchemiTorch.cmake does: loading them registers
#    LibTorch's CUDA backend).
# Idempotent: a second run rebuilds incrementally.
#
# usage: bench/sevenn_peer_build.sh <build-dir>   (after make, and tools/install-export-venvs.sh)
#   -> <build-dir>/sevenn-peer/build/lmp
# SEVENN_PEER_PYTHON: the python whose torch is linked and whose sevenn has the styles (default
# <build-dir>/venv-sevenn/bin/python); SEVENN_PEER_STYLES: sevenn's pair_e3gnn/ folder instead of
# that sevenn's; SEVENN_PEER_LAMMPS: the LAMMPS source (default <build-dir>/lammps-src; the
# trimmed one of bench/gpu_bundle.sh will do); GPU_BUNDLE: a bundle of bench/gpu_bundle.sh
# whose zlib headers serve a machine without them.
set -euo pipefail

build_dir=$(cd "${1:?usage: sevenn_peer_build.sh <build-dir>}" && pwd)
python=${SEVENN_PEER_PYTHON:-$build_dir/venv-sevenn/bin/python}
lammps_src=${SEVENN_PEER_LAMMPS:-$build_dir/lammps-src}
peer=$build_dir/sevenn-peer
for need in "$python" "$lammps_src/src/comm_brick.cpp"; do
  [ -e "$need" ] || { echo "sevenn_peer_build: $need is missing (run make, then tools/install-export-venvs.sh)" >&2; exit 1; }
done
styles=${SEVENN_PEER_STYLES:-$("$python" -c 'import os, sevenn; print(os.path.join(os.path.dirname(sevenn.__file__), "pair_e3gnn"))')}
torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
source "$(dirname "$0")/gpu_bundle.sh"

# the copy: everything LAMMPS' CMake build reads, made anew when the source or the styles change
stamp="$(sha256sum "$lammps_src/src/version.h" "$styles/pair_e3gnn_parallel.cpp" "$0" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$peer/lammps-src/.peer-stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$peer/lammps-src"
  mkdir -p "$peer/lammps-src"
  for dir in cmake src lib third_party tools unittest python; do
    [ ! -d "$lammps_src/$dir" ] || cp -a "$lammps_src/$dir" "$peer/lammps-src/"
  done
  src=$peer/lammps-src/src
  cp "$styles"/pair_e3gnn{,_parallel}.{cpp,h} "$styles/pair_e3gnn_oeq_autograd.cpp" "$src/"
  "$python" - "$styles/comm_brick.cpp" "$src/comm_brick.h" "$src/comm_brick.cpp" <<'EOF'
import re, sys
theirs, header, source = sys.argv[1:]
text = open(theirs).read()
# sevenn's two methods: from the first definition taking a PairE3GNNParallel to the comment block
# before the next CommBrick method that does not
start = text.index("void CommBrick::forward_comm(PairE3GNNParallel *pair)")
end = re.compile(r"/\* -+\s*\n(?:.*\n)*?(?=void CommBrick::(?!\w+\(PairE3GNNParallel))").search(text, start).start()
methods = text[start:end]
assert methods.count("void CommBrick::") == 2, methods[:200]
h = open(header).read()
anchor = "  void *extract(const char *, int &) override;\n"
assert anchor in h, "LAMMPS' comm_brick.h changed: port sevenn's methods by hand"
h = h.replace(anchor, anchor + "  // sevenn's e3gnn/parallel (bench/sevenn_peer_build.sh)\n"
              "  void forward_comm(class PairE3GNNParallel *);\n  void reverse_comm(class PairE3GNNParallel *);\n")
open(header, "w").write(h)
cpp = open(source).read()
include = '#include "comm_brick.h"\n'
assert include in cpp
# before LAMMPS_NS is opened: its Device enumerator would clash with LibTorch's c10::Device
cpp = cpp.replace(include, include + '#include "pair_e3gnn_parallel.h"  // sevenn (bench/sevenn_peer_build.sh)\n', 1)
open(source, "w").write(cpp + "\n// sevenn's e3gnn/parallel (bench/sevenn_peer_build.sh)\n" + methods)
EOF
  mkdir -p "$peer/stand-in"
  cat > "$peer/stand-in/cuda_runtime.h" <<'EOF'
// stand-in for a CPU build of sevenn's pair_e3gnn_parallel.cpp (bench/sevenn_peer_build.sh):
// every call fails except cudaFree(nullptr), the only one its CPU path makes
#pragma once
#include <cstddef>
enum cudaError_t { cudaSuccess = 0, cudaErrorNoDevice = 100 };
enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
inline cudaError_t cudaFree(void *p) { return p ? cudaErrorNoDevice : cudaSuccess; }
template <class T> cudaError_t cudaMalloc(T **, std::size_t) { return cudaErrorNoDevice; }
inline cudaError_t cudaMemcpy(void *, const void *, std::size_t, cudaMemcpyKind) { return cudaErrorNoDevice; }
inline cudaError_t cudaSetDevice(int) { return cudaErrorNoDevice; }
inline cudaError_t cudaMemGetInfo(std::size_t *, std::size_t *) { return cudaErrorNoDevice; }
inline const char *cudaGetErrorString(cudaError_t) { return "no CUDA in this CPU build (stand-in header)"; }
EOF
  rm -f "$peer/lammps-src/cmake/Modules/FindMKL.cmake"
  cat >> "$peer/lammps-src/cmake/CMakeLists.txt" <<'EOF'
# sevenn's e3gnn styles (bench/sevenn_peer_build.sh, as sevenn's patch_lammps.sh links LibTorch)
find_package(Torch REQUIRED)
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
target_link_libraries(lammps PUBLIC "${TORCH_LIBRARIES}")
if(TARGET torch_cuda)
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(lammps PUBLIC CUDA::cudart "-Wl,--no-as-needed" $<TARGET_FILE:torch_cuda>
    $<TARGET_FILE:c10_cuda> "-Wl,--as-needed")
else()
  target_include_directories(lammps PRIVATE "${CMAKE_CURRENT_LIST_DIR}/../../stand-in")
endif()
EOF
  echo "$stamp" > "$peer/lammps-src/.peer-stamp"
fi

if [ ! -f "$peer/build/CMakeCache.txt" ]; then
  lammps_cmake_args "${GPU_BUNDLE:-}"
  cmake -S "$peer/lammps-src/cmake" -B "$peer/build" "${CMAKE_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_MPI=on -DBUILD_OMP=on -DCMAKE_CXX_STANDARD=17 -DCMAKE_PREFIX_PATH="$torch_prefix" >/dev/null
fi
cmake --build "$peer/build" -j "$(nproc)" --target lmp
"$peer/build/lmp" -h | grep -q "e3gnn/parallel" || { echo "sevenn_peer_build: lmp lacks e3gnn/parallel" >&2; exit 1; }
echo "sevenn_peer_build: $peer/build/lmp"
