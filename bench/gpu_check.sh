#!/usr/bin/env bash
# The GPU check of pair_style nvalchemi (doc/Build_nvalchemi.rst, "Checking on a GPU").
#
#   bench/gpu_check.sh prepare     on the development machine, after `make nvalchemi`: writes
#                                  build/gpu-check/ (a trimmed LAMMPS source, the MPICH wheel,
#                                  the reference models and their values from this CPU build)
#   bench/gpu_check.sh run [OUT]   on the machine to check (python3 with torch, cmake, a C++
#                                  compiler; no network): builds LAMMPS with the package against
#                                  that python's LibTorch while it compiles the SchNet-style
#                                  models into AOTInductor packages and the operator library
#                                  (kernels/, with its CUDA kernels) for its GPU, runs the parity
#                                  cases on its GPU (on its CPU where it has none) against the
#                                  reference on 1, 2 and 4 ranks, times CPU against GPU, and
#                                  writes results.{json,md} and the logs to OUT (default: $OUT,
#                                  else build/gpu-check/out); PYTHON names the python (default
#                                  python3), GPU_CHECK_WORK the build folder (default
#                                  /tmp/nvalchemi-gpu-check), GPU_CHECK_MPICH=1 uses the wheel's
#                                  MPICH even where there is an MPI, GPU_CHECK_SECONDS the time
#                                  after which no new run starts (default: no limit),
#                                  GPU_CHECK_LMP a LAMMPS build to use instead of building one
#                                  (a CPU trial; bench/gpu_first.sh)
#
# build/gpu-check/ is about 20 MB: small enough to travel with the working tree.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$ROOT/build/gpu-check
source "$ROOT/bench/gpu_bundle.sh"

prepare() {
  local models=$ROOT/build/nvalchemi/potentials
  local python=$ROOT/build/venv/bin/python
  [[ -x $ROOT/build/lammps/lmp && -f $models/schnet_deep.pt ]] ||
    { echo "gpu_check.sh prepare: run 'make nvalchemi' first (build/lammps/lmp and the models)" >&2; exit 1; }
  mkdir -p "$BUNDLE/models"
  bundle_lammps_source "$BUNDLE"
  bundle_mpich "$BUNDLE" "$python"
  cp "$models"/lj_ar.pt "$models"/lj_ar_fused.pt "$models"/schnet_layerwise.pt "$models"/schnet_deep.pt \
     "$ROOT"/potentials/mace_ho_tiny.pt "$BUNDLE/models/"
  bundle_zlib "$BUNDLE"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$python" "$ROOT/bench/gpu_check.py" reference \
    --lmp "$ROOT/build/lammps/lmp" --models "$BUNDLE/models" --out "$BUNDLE/reference.json"
  du -sh "$BUNDLE"
}

run() {
  local out=${1:-${OUT:-$BUNDLE/out}} work=${GPU_CHECK_WORK:-/tmp/nvalchemi-gpu-check}
  local python=${PYTHON:-python3}
  [[ -f $BUNDLE/reference.json ]] ||
    { echo "gpu_check.sh run: no $BUNDLE/reference.json: run 'bench/gpu_check.sh prepare' first" >&2; exit 1; }
  mkdir -p "$out" "$work"
  start_run gpu_check "$out" "$python"

  # MPI: the machine's, else (or with GPU_CHECK_MPICH=1) MPICH from the carried wheel
  use_mpi "$BUNDLE" "$work" "$python"
  local mpirun=$MPIRUN
  [[ -d $work/lammps ]] || tar xzf "$BUNDLE/lammps.tar.gz" -C "$work"
  lammps_cmake_args "$BUNDLE"
  local generator=("${CMAKE_ARGS[@]}")
  # the AOTInductor packages are compiled for this machine's device, beside the LAMMPS build
  local models=$work/models device
  device=$("$python" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
  mkdir -p "$models" && cp "$BUNDLE"/models/*.pt "$models/"
  # (one process per package, kept in the work folder for a second call on the same machine; a
  # crash prints its Python stack). On GPU runs with torch 2.11.0+cu130 the export's own check
  # crashed (signal 11) in torch's Python loader of the CUDA package it had just written, while
  # LAMMPS ran that package; loaded alone (the exchange ops registered first), the package
  # without exchange ops crashed there too, with either device index, after torch's "Loading
  # outdated pt2 file" fallback: each package is loaded alone with both, to see whether a newer
  # torch still does. The export writes its package under its name only once its check passed:
  # where that check crashed, the unchecked package is taken (the parity cases check it in LAMMPS)
  { for halo in layerwise deep; do
      [[ -f $models/schnet_$halo.pt2 ]] ||
        PYTHONPATH=$ROOT/python:$ROOT/models "$python" -X faulthandler "$ROOT/models/schnet.py" "$models" \
          .pt2 "$device" $halo || echo "schnet_$halo.pt2: exit $?"
      for unchecked in "$models"/.nvalchemi-unchecked-*/schnet_$halo.pt2; do
        [[ -f $unchecked && ! -f $models/schnet_$halo.pt2 ]] || continue
        mv "$unchecked" "$models/schnet_$halo.pt2"
        echo "schnet_$halo.pt2: the export's check did not finish; its package taken unchecked"
      done
    done
    for package in "$models"/*.pt2; do
      for index in -1 0; do
        PYTHONPATH=$ROOT/python "$python" -X faulthandler -c "import sys, torch, nvalchemi_lammps.ops
torch._inductor.aoti_load_package(sys.argv[1], device_index=int(sys.argv[2]))" "$package" $index &&
          echo "${package##*/} loads in Python (device_index $index)" ||
          echo "${package##*/} in Python (device_index $index): exit $?"
      done
    done; } > "$out/aoti.log" 2>&1 &
  local aoti=$!
  # the operator library, with its CUDA kernels where there is a GPU (built as make cuda-check does)
  local cuda_kernels=off
  [[ $device == cuda ]] && cuda_kernels=on
  { cmake -S "$ROOT/cmake/plugin" -B "$work/kernels" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DLAMMPS_SOURCE_DIR="$work/lammps/src" -DNVALCHEMI_PYTHON="$(command -v "$python")" \
      -DNVALCHEMI_CUDA_KERNELS=$cuda_kernels &&
    cmake --build "$work/kernels" -j 4 --target nvalchemi_kernels; } > "$out/kernels.log" 2>&1 &
  local kernels=$!
  local start=$SECONDS
  # LAMMPS with the package, against this python's LibTorch (GPU_CHECK_LMP: one given)
  local lmp=${GPU_CHECK_LMP:-$work/build/lmp}
  if [[ -z ${GPU_CHECK_LMP:-} ]]; then
    build_lammps "$BUNDLE" "$work" "$python" "$out" || exit 1
    echo "== LAMMPS built in $((SECONDS - start)) s"
  fi
  wait $aoti
  echo "== AOTInductor packages for $device compiled in $((SECONDS - start)) s:" \
    "$(cd "$models" && echo *.pt2)"; grep -A12 "exit\|Fatal\|loads in" "$out/aoti.log" || true
  wait $kernels && echo "== operator library (CUDA kernels: $cuda_kernels) built in $((SECONDS - start)) s" ||
    { tail -20 "$out/kernels.log"; echo "== operator library not built: its case fails"; }

  # the reference models were written by the development machine's torch; a case whose model
  # this torch cannot read fails with LibTorch's message (the others go on)
  local seconds=0
  if [[ -n ${GPU_CHECK_SECONDS:-} ]]; then
    seconds=$((GPU_CHECK_SECONDS - SECONDS))
    ((seconds > 0)) || seconds=1
  fi
  "$python" "$ROOT/bench/gpu_check.py" check --lmp "$lmp" --mpirun "$mpirun" \
    --models "$models" --reference "$BUNDLE/reference.json" --out "$out" --seconds "$seconds" \
    --kernels "$work/kernels/nvalchemi_kernels.so" \
    ${GPU_CHECK_ARGS:-}
}

case ${1:-} in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
