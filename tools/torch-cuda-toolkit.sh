#!/usr/bin/env bash
# What CMake needs to configure against the LibTorch of a PyTorch that pip installed, written as
# CMake arguments to a file (empty for a CPU build). A CUDA build of torch (what pip serves by
# default on most Linux machines) makes TorchConfig.cmake look for the CUDA toolkit it was built
# with: its nvcc and runtime headers. The runtime headers and libraries come with torch's own
# nvidia-* wheels; nvcc does not. Where no nvcc of torch's CUDA release is on PATH, this installs
# the nvidia-cuda-nvcc wheel of that release into the same environment and points CMake at the
# wheels' toolkit folder (site-packages/nvidia/cu<major>). Nothing is needed at run time: a
# LAMMPS run loads LibTorch's CUDA libraries from the wheels as torch itself does.
#
# usage: tools/torch-cuda-toolkit.sh <python with torch> <file for the CMake arguments>
set -euo pipefail

python=${1:?usage: torch-cuda-toolkit.sh <python> <cmake-args-file>}
out=${2:?usage: torch-cuda-toolkit.sh <python> <cmake-args-file>}

read -r torch_version cuda < <("$python" -W ignore -c "import torch; print(torch.__version__, torch.version.cuda or '')" 2>/dev/null)
if [ -z "$cuda" ]; then
  : > "$out"
  exit 0
fi
nvcc_release=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\),.*/\1/p' || true)
if [ "$nvcc_release" = "$cuda" ]; then
  # the toolkit's own folder, as nvcc reports it: the nvcc on PATH may be a wrapper script
  # elsewhere, beside which CMake would look for the headers and runtime in vain
  top=$(nvcc -dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)
  top=$(cd "${top:-$(dirname "$(command -v nvcc)")/..}" && pwd)
  echo "torch-cuda-toolkit: torch $torch_version is a CUDA $cuda build; nvcc $nvcc_release on PATH" \
       "(toolkit $top) serves CMake"
  echo "-DCUDAToolkit_ROOT=$top -DCUDA_TOOLKIT_ROOT_DIR=$top -DCMAKE_CUDA_COMPILER=$top/bin/nvcc" > "$out"
  exit 0
fi

major=${cuda%%.*}
site=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
root=$site/nvidia/cu$major
if [ ! -f "$root/include/cuda_runtime.h" ]; then
  echo "torch-cuda-toolkit: ERROR: torch $torch_version is a CUDA $cuda build, but its CUDA runtime" \
       "headers are not in $root (the layout of the CUDA $major wheels this script knows): install a" \
       "CUDA $cuda toolkit and put its nvcc on PATH, or install torch's CPU build" >&2
  exit 1
fi
# nvcc of torch's own CUDA release, with the front end (nvvm) and headers (crt) of that release:
# nvcc's wheel alone would take the newest of those, whose PTX its ptxas cannot assemble
compiler=(nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt)
if ! "$python" - "$cuda" "${compiler[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    sys.exit(not all(version(name).startswith(sys.argv[1] + ".") for name in sys.argv[2:]))
except PackageNotFoundError:
    sys.exit(1)
PY
then
  echo "torch-cuda-toolkit: torch $torch_version is a CUDA $cuda build and no nvcc $cuda is on" \
       "PATH${nvcc_release:+ (nvcc $nvcc_release is)}: installing ${compiler[*]} $cuda beside it"
  # (pip's configured local wheel folders hold none of them)
  env -u PIP_FIND_LINKS "$python" -m pip install -q --disable-pip-version-check "${compiler[@]/%/==$cuda.*}"
fi
# the wheels' folder arranged as a toolkit's: nvcc links from lib64 (the wheels have lib), and
# CMake's CUDA modules look for unversioned library names (the wheels ship versioned ones)
[ -e "$root/lib64" ] || ln -s lib "$root/lib64"
for lib in "$root"/lib/lib*.so.[0-9]*; do
  [ -e "${lib%%.so.*}.so" ] || ln -s "$(basename "$lib")" "${lib%%.so.*}.so"
done
echo "torch-cuda-toolkit: CMake takes the CUDA $cuda toolkit of the wheels in $root"
echo "-DCUDAToolkit_ROOT=$root -DCUDA_TOOLKIT_ROOT_DIR=$root -DCMAKE_CUDA_COMPILER=$root/bin/nvcc" > "$out"
