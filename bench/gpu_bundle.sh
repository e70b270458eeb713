# What bench/gpu_check.sh and bench/gpu_race.sh share (sourced, not run): the pieces of a bundle
# that travels to a machine with a GPU and no network, and the steps that build LAMMPS with the
# package there against that machine's python's LibTorch.
#
# Preparing (on the development machine):
#   bundle_lammps_source BUNDLE   BUNDLE/lammps.tar.gz: the trimmed LAMMPS source
#   bundle_mpich BUNDLE PYTHON    BUNDLE/$MPICH_WHEEL, downloaded once and checked
#   bundle_zlib BUNDLE            BUNDLE/zlib: zlib's headers
# Running (on the machine to check):
#   start_run TOOL OUT PYTHON     everything from here on also in OUT/TOOL.log; stops unless
#                                 PYTHON imports torch; logs the date, host, torch and GPUs
#   use_mpi BUNDLE WORK PYTHON    the machine's MPI, else (or with GPU_CHECK_MPICH=1) the
#                                 wheel's MPICH; sets MPIRUN
#   lammps_cmake_args BUNDLE      sets CMAKE_ARGS: generator, compiler launcher, zlib
#   build_lammps BUNDLE WORK PYTHON LOGDIR   LAMMPS with the package in WORK/build (WORK/build/lmp)

MPICH_WHEEL=mpich-5.0.2-py3-none-manylinux_2_28_x86_64.whl
MPICH_SHA256=8fed465ebff269ea2ebac179a25de02671ddf8df476e0f115be089015015cfd4
GPU_BUNDLE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bundle_lammps_source() {
  # the LAMMPS source the build needs: its CMake files, the core sources and the bundled fmt and
  # nlohmann/json headers (no packages)
  local lammps_src=$GPU_BUNDLE_ROOT/build/lammps-src bundle
  bundle=$(cd "$1" && pwd)
  (cd "$lammps_src" && find src -maxdepth 1 -type f -print0 | tar czf "$bundle/lammps.tar.gz" \
     --null -T - --transform 's,^,lammps/,' cmake src/STUBS src/fmt src/nlohmann LICENSE README)
}

bundle_mpich() {
  if [[ ! -f $1/$MPICH_WHEEL ]]; then
    "$2" -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
      --python-version 3.12 -d "$1" mpich==5.0.2
  fi
  echo "$MPICH_SHA256  $1/$MPICH_WHEEL" | sha256sum -c --quiet ||
    { echo "$MPICH_WHEEL does not have the pinned checksum" >&2; exit 1; }
}

bundle_zlib() {
  # for a machine that has zlib's library but not its development files
  mkdir -p "$1/zlib" && cp /usr/include/zlib.h /usr/include/zconf.h "$1/zlib/"
}

start_run() {
  local tool=$1 out=$2 python=$3
  exec > >(tee "$out/$tool.log") 2>&1
  "$python" -c "import torch" ||
    { echo "$tool.sh run: $python has no torch (set PYTHON=<python with torch>)" >&2; exit 1; }
  echo "== $(date -u) on $(hostname): $("$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "GPUs", torch.cuda.device_count())')"
  command -v nvidia-smi > /dev/null && nvidia-smi -L || true
}

use_mpi() {
  local bundle=$1 work=$2 python=$3
  MPIRUN=mpirun
  # the wheel's compiler wrappers are relocatable
  if [[ -n ${GPU_CHECK_MPICH:-} ]] || ! command -v mpicxx > /dev/null; then
    local prefix=$work/mpich/mpich-5.0.2.data/data
    if [[ ! -x $prefix/bin/mpicxx ]]; then
      "$python" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
        "$bundle/$MPICH_WHEEL" "$work/mpich"
      chmod +x "$prefix"/bin/*
    fi
    export PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    MPIRUN=$prefix/bin/mpiexec
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  # a LibTorch with CUDA needs its toolkit
  if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
}

lammps_cmake_args() {
  CMAKE_ARGS=()
  command -v ninja > /dev/null && CMAKE_ARGS+=(-G Ninja)
  command -v ccache > /dev/null && CMAKE_ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if ! echo '#include <zlib.h>' | c++ -E -x c++ - > /dev/null 2>&1; then
    CMAKE_ARGS+=(-DZLIB_INCLUDE_DIR="$1/zlib"
                 -DZLIB_LIBRARY="$(ldconfig -p | awk '/libz\.so\.1 /{print $NF; exit}')")
  fi
}

build_lammps() {
  local bundle=$1 work=$2 python=$3 logs=$4
  [[ -d $work/lammps ]] || tar xzf "$bundle/lammps.tar.gz" -C "$work"
  lammps_cmake_args "$bundle"
  cmake -S "$work/lammps/cmake" -B "$work/build" "${CMAKE_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_MPI=on -DBUILD_OMP=off \
    -DCMAKE_PROJECT_lammps_INCLUDE="$GPU_BUNDLE_ROOT/cmake/USER-NVALCHEMI.cmake" -DPKG_USER-NVALCHEMI=on \
    -DNVALCHEMI_PYTHON="$(command -v "$python")" > "$logs/configure.log"
  cmake --build "$work/build" -j "$(nproc)" > "$logs/build.log" || { tail -50 "$logs/build.log"; return 1; }
}
