#!/usr/bin/env bash
# The GPU race (doc/Howto_nvalchemi_benchmarks.rst, "The GPU race"): SevenNet-0 and a MACE model
# of MACE-MP-0 medium's size under pair_style nvalchemi against SevenNet's own e3gnn and
# e3gnn/parallel and against each framework's calculator, on one GPU (bench/gpu_race.py).
#
#   bench/gpu_race.sh prepare     on the development machine, after `make nvalchemi`: writes
#                                  build/gpu-race/ (about 35 MB: the trimmed LAMMPS source and
#                                  the MPICH wheel of bench/gpu_bundle.sh, the wheels of
#                                  mace-torch, sevenn (its code and SevenNet-0's checkpoint
#                                  only) and what they need beyond torch and e3nn, for python 3.12)
#   bench/gpu_race.sh run [OUT]   on the machine to race on (python3 with torch, cmake, a C++
#                                  compiler, nvcc for a GPU; no network): unpacks the wheels,
#                                  builds LAMMPS with the package and, from sevenn's sources,
#                                  LAMMPS with e3gnn and e3gnn/parallel (bench/sevenn_peer_build.sh),
#                                  both against that python's LibTorch, while it exports the
#                                  models there (TorchScript, then AOTInductor packages compiled
#                                  for its device), then races on its GPU (its CPU where it has
#                                  none) and writes results.{json,md} and the logs to OUT (default:
#                                  $OUT, else build/gpu-race/out). PYTHON names the python (default
#                                  python3), GPU_RACE_WORK the build folder (default
#                                  /tmp/nvalchemi-gpu-race), GPU_RACE_SECONDS the time after which
#                                  no new run starts, counted from the start (default 420: the
#                                  whole run within 9 minutes on the GPU machine; with
#                                  GPU_RACE_TINY none), GPU_RACE_TINY=1 (or --tiny) tiny sizes and
#                                  a tiny MACE for a trial on a CPU, GPU_CHECK_MPICH=1 the wheel's
#                                  MPICH even where there is an MPI. For a CPU trial only:
#                                  GPU_RACE_LMP and GPU_RACE_PEER_LMP name LAMMPS builds to use
#                                  instead of building them, GPU_RACE_SEVENN_PYTHON and
#                                  GPU_RACE_MACE_PYTHON pythons with the frameworks installed
#                                  (build/venv-sevenn, build/venv-mace) instead of the wheels.
#                                  GPU_RACE_WAIT_FOR: a file whose appearance starts the race
#                                  (bench/gpu_first.sh, which builds GPU_RACE_LMP meanwhile).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$ROOT/build/gpu-race
source "$ROOT/bench/gpu_bundle.sh"

# the frameworks' pins, where tools/install-export-venvs.sh keeps them
eval "$(grep -E '^(mace|sevenn)_pins=' "$ROOT/tools/install-export-venvs.sh")"
# what mace-torch and sevenn import that the GPU machine's python lacks (it has torch, triton
# and nvcc's packages; e3nn is carried at each framework's pin)
COMMON_WHEELS=(ase==3.29.0 matscipy==1.3.1 braceexpand==0.1.7 torch-ema==0.3 lmdb==3.0.0 orjson==3.13.0)

download() {
  local dest=$1
  shift
  mkdir -p "$dest"
  "$ROOT/build/venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest" "$@"
}

prepare() {
  [[ -d $ROOT/build/lammps-src/src && -x $ROOT/build/venv/bin/python ]] ||
    { echo "gpu_race.sh prepare: run 'make nvalchemi' first (build/lammps-src, build/venv)" >&2; exit 1; }
  mkdir -p "$BUNDLE"
  bundle_lammps_source "$BUNDLE"
  bundle_mpich "$BUNDLE" "$ROOT/build/venv/bin/python"
  bundle_zlib "$BUNDLE"
  download "$BUNDLE/wheels/common" "${COMMON_WHEELS[@]}"
  download "$BUNDLE/wheels/mace" "${mace_pins[@]}"
  # sevenn's wheel is 43 MB, mostly checkpoints: its code, the LAMMPS styles' sources and
  # SevenNet-0's checkpoint (7net-0) travel
  local full=$BUNDLE/sevenn-full
  download "$full" "${sevenn_pins[@]}"
  mkdir -p "$BUNDLE/wheels/sevenn" && mv "$full"/e3nn-*.whl "$BUNDLE/wheels/sevenn/"
  "$ROOT/build/venv/bin/python" - "$full"/sevenn-*.whl "$BUNDLE/wheels/sevenn/sevenn-trimmed.zip" <<'EOF'
import re, sys, zipfile
keep = re.compile(r"^(?!sevenn/pretrained_potentials/(?!SevenNet_0__11Jul2024/))(?!sevenn/pair_d3)(?!sevenn/pair_e3gnn/pair_d3)")
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as dst:
    for name in src.namelist():
        if keep.match(name):
            dst.writestr(name, src.read(name))
EOF
  rm -rf "$full"
  du -sh "$BUNDLE"
}

# site FOLDER WHEELS...: the wheels unpacked into FOLDER (a PYTHONPATH entry)
site() {
  local folder=$1
  shift
  [[ -f $folder/.unpacked ]] && return
  "$PYTHON" -c "import sys, zipfile
for wheel in sys.argv[2:]: zipfile.ZipFile(wheel).extractall(sys.argv[1])" "$folder" "$@"
  touch "$folder/.unpacked"
}

# framework_python NAME: a python that imports the framework: GPU_RACE_<NAME>_PYTHON, else a
# wrapper of $PYTHON with the framework's unpacked wheels first on its path
framework_python() {
  local name=$1 given
  given=GPU_RACE_${1^^}_PYTHON
  if [[ -n ${!given:-} ]]; then
    command -v "${!given}"
    return
  fi
  site "$WORK/site-common" "$BUNDLE"/wheels/common/*.whl
  site "$WORK/site-$name" "$BUNDLE"/wheels/"$name"/*
  cat > "$WORK/python-$name" <<EOF
#!/bin/sh
PYTHONPATH=$WORK/site-$name:$WORK/site-common:$ROOT/python\${PYTHONPATH:+:\$PYTHONPATH} exec $(command -v "$PYTHON") "\$@"
EOF
  chmod +x "$WORK/python-$name"
  echo "$WORK/python-$name"
}

run() {
  local out=${1:-${OUT:-$BUNDLE/out}} tiny=${GPU_RACE_TINY:-}
  WORK=${GPU_RACE_WORK:-/tmp/nvalchemi-gpu-race} PYTHON=${PYTHON:-python3}
  [[ -f $BUNDLE/wheels/sevenn/sevenn-trimmed.zip ]] ||
    { echo "gpu_race.sh run: no $BUNDLE/wheels: run 'bench/gpu_race.sh prepare' first" >&2; exit 1; }
  mkdir -p "$out" "$WORK"
  start_run gpu_race "$out" "$PYTHON"
  use_mpi "$BUNDLE" "$WORK" "$PYTHON"
  export CCACHE_BASEDIR=$WORK CCACHE_NOHASHDIR=1 OMP_NUM_THREADS=1
  local device sevenn_python mace_python models=$WORK/models tiny_flag=()
  [[ -n $tiny ]] && tiny_flag=(--tiny)
  device=$("$PYTHON" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
  sevenn_python=$(framework_python sevenn)
  mace_python=$(framework_python mace)
  "$sevenn_python" -c "import sevenn, ase" && "$mace_python" -c "import mace.calculators, nvalchemi_lammps.mace_export" ||
    { echo "gpu_race.sh run: the frameworks do not import (above)"; exit 1; }

  # the exports, beside the builds: TorchScript first, then the packages compiled for the device
  # (the race takes those that are ready when their turn comes)
  rm -rf "$models" && mkdir -p "$models"
  local start=$SECONDS pids=()
  for framework in sevenn mace; do
    local python=$sevenn_python
    [[ $framework == mace ]] && python=$mace_python
    { "$python" "$ROOT/bench/gpu_race.py" export --framework $framework --out "$models/$framework" \
        --device "$device" --formats pt "${tiny_flag[@]}" &&
      echo "== $framework TorchScript exports in $((SECONDS - start)) s" &&
      "$python" -X faulthandler "$ROOT/bench/gpu_race.py" export --framework $framework --out "$models/$framework" \
        --device "$device" --formats pt2 "${tiny_flag[@]}" &&
      echo "== $framework compiled export in $((SECONDS - start)) s"; } > "$out/export_$framework.log" 2>&1 &
    pids+=($!)
  done

  local lmp=${GPU_RACE_LMP:-} peer_lmp=${GPU_RACE_PEER_LMP:-}
  [[ -d $WORK/lammps ]] || tar xzf "$BUNDLE/lammps.tar.gz" -C "$WORK"
  if [[ -z $peer_lmp ]]; then
    (site "$WORK/site-sevenn-styles" "$BUNDLE/wheels/sevenn/sevenn-trimmed.zip"
     GPU_BUNDLE=$BUNDLE SEVENN_PEER_PYTHON=$(command -v "$PYTHON") SEVENN_PEER_LAMMPS=$WORK/lammps \
       SEVENN_PEER_STYLES=$WORK/site-sevenn-styles/sevenn/pair_e3gnn "$ROOT/bench/sevenn_peer_build.sh" "$WORK") \
      > "$out/peer_build.log" 2>&1 &
    local peer=$!
  fi
  # bench/gpu_first.sh: the check builds the LAMMPS given and runs first; the race waits for it
  if [[ -n ${GPU_RACE_WAIT_FOR:-} ]]; then
    until [[ -e $GPU_RACE_WAIT_FOR ]]; do sleep 2; done
    echo "== the check is done at $SECONDS s"
    [[ -x $lmp ]] || { echo "gpu_race.sh run: no LAMMPS at $lmp"; exit 1; }
  fi
  if [[ -z $lmp ]]; then
    build_lammps "$BUNDLE" "$WORK" "$PYTHON" "$out" || exit 1
    lmp=$WORK/build/lmp
    echo "== LAMMPS with the package built in $((SECONDS - start)) s"
  fi
  if [[ -z $peer_lmp ]]; then
    wait $peer || { tail -30 "$out/peer_build.log"; exit 1; }
    peer_lmp=$WORK/sevenn-peer/build/lmp
    echo "== LAMMPS with e3gnn and e3gnn/parallel built in $((SECONDS - start)) s"
  fi
  # the race waits for the TorchScript exports only
  local i=0
  for framework in sevenn mace; do
    until grep -q "TorchScript exports" "$out/export_$framework.log"; do
      kill -0 "${pids[$i]}" 2> /dev/null || { tail -20 "$out/export_$framework.log"; exit 1; }
      sleep 2
    done
    i=$((i + 1))
  done
  echo "== TorchScript exports ready in $((SECONDS - start)) s"

  # (a tiny trial on a CPU has no limit unless given one)
  local seconds=${GPU_RACE_SECONDS:-$([[ -n $tiny ]] && echo 0 || echo 420)}
  if ((seconds > 0)); then
    seconds=$((seconds - SECONDS))
    ((seconds > 0)) || seconds=1
  fi
  "$sevenn_python" "$ROOT/bench/gpu_race.py" race --lmp "$lmp" --peer-lmp "$peer_lmp" --mpirun "$MPIRUN" \
    --models "$models" --out "$out" --device "$device" --sevenn-python "$sevenn_python" \
    --mace-python "$mace_python" --seconds "$seconds" "${tiny_flag[@]}"
  kill "${pids[@]}" 2> /dev/null || true
  grep -h "==\|Error\|error" "$out"/export_*.log | tail -20 || true
}

case ${1:-} in
  prepare) prepare ;;
  run)
    shift
    [[ ${1:-} == --tiny ]] && { GPU_RACE_TINY=1; shift; }
    run "$@" ;;
  *) sed -n '2,/^set /{/^set /!p}' "$0" >&2; exit 2 ;;
esac
