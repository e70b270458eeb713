#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (`make sanitize`): builds the package's unit tests
# and its plugin with -fsanitize=address,undefined in <build>/sanitize, runs the unit tests, then
# one 4-rank LAMMPS run per halo mode (local: the LJ model; layerwise and deep: the SchNet-style
# model; each with fix nvalchemi/dd validate and guard) with the sanitized plugin loaded into the
# project's lmp, whose ranks get the sanitizer runtimes preloaded. Any report fails the run.
# LibTorch and MPI keep memory for the whole process: leak checking is off. The AOTInductor
# runtime compiled into a .pt2 model frees a std::stable_partition buffer from operator new
# (nothrow) with free(), inside PyTorch's aoti_runtime/model_container.h: alloc-dealloc-mismatch
# is off for that reason alone.
#
# usage: tools/sanitize.sh <build-dir>   (after `make nvalchemi`)
set -euo pipefail

build_dir=$(cd "${1:?usage: sanitize.sh <build-dir>}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$build_dir/sanitize
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

test -f "$tree/CMakeCache.txt" || cmake -S "$root" -B "$tree" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DLAMMPS_SOURCE_DIR="$build_dir/lammps-src/src" -DLAMMPS_BINARY="$build_dir/lammps/lmp" \
  -DNVALCHEMI_PYTHON="$build_dir/venv/bin/python" > "$tree.configure.log"
cmake --build "$tree" -j "$(nproc)" --target test_nvalchemi_core nvalchemiplugin

# OpenMPI refuses to run as root without these (CI and these machines run as root)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
echo "== unit tests"
"$tree/unittest/test_nvalchemi_core" --gtest_brief=1

preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
models=$tree/potentials
work=$(mktemp -d /tmp/nvalchemi-sanitize-XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
for mode in local layerwise deep; do
  case $mode in
    local) model=$models/lj_ar.pt ;;
    *) model=$models/schnet_$mode.pt ;;
  esac
  cat > "$work/in.$mode" <<EOF
plugin load $tree/plugin/nvalchemiplugin.so
units lj
atom_style atomic
processors 2 2 1
lattice fcc 0.8442
region box block 0 6 0 6 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.5 87287 loop geom
pair_style hybrid/overlay nvalchemi $model lj/cut 2.5
pair_coeff * * nvalchemi Ar
pair_coeff * * lj/cut 1.0 1.0
fix nve all nve
fix dd all nvalchemi/dd validate 5 1e-10 guard 1
compute pe all pe/atom
compute st all stress/atom NULL virial
thermo_style custom step pe press f_dd[1] f_dd[2]
thermo 5
run 10
EOF
  echo "== 4 ranks, halo mode $mode"
  if ! (cd "$work" && mpirun -np 4 --oversubscribe env LD_PRELOAD="$preload" "$build_dir/lammps/lmp" \
        -in "in.$mode" -log none > "out.$mode" 2>&1) ||
     grep -q -E "ERROR|Sanitizer|runtime error" "$work/out.$mode" ||
     ! grep -q "pair_style nvalchemi (plugin)" "$work/out.$mode"; then
    tail -80 "$work/out.$mode"
    status=1
  else
    grep -E "validate step 10|Loop time" "$work/out.$mode"
  fi
done
exit $status
