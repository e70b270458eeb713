#!/usr/bin/env bash
# Installs what the build needs and is missing: Debian packages, the pinned LAMMPS source tarball
# (verified by checksum) and a Python virtual environment with PyTorch 2.13, whose LibTorch the
# package links (the CPU build where pip serves it, as here; with a CUDA build,
# tools/torch-cuda-toolkit.sh finds or installs the nvcc CMake needs and writes the CMake
# arguments to <build-dir>/torch-cmake-args). Idempotent: a second run checks and returns in about a second.
#
# usage: tools/install-deps.sh <build-dir>
set -euo pipefail

build_dir=${1:?usage: install-deps.sh <build-dir>}
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)

# googletest (its source) and libyaml-dev: LAMMPS' force-style harness (unittest/force-styles)
apt_packages=(libopenmpi-dev openmpi-bin ccache libfftw3-dev zlib1g-dev libgtest-dev googletest libyaml-dev time)
lammps_version=20260704+dfsg-2
lammps_tarball=lammps_20260704+dfsg.orig.tar.gz
lammps_sha256=cddbc45a047416bd48a4a0b87f24a5b61b3446982b74d18cafe619c22b17eb62
torch_version=2.13.0

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages ------------------------------------------------------------------------
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
apt_updated=0
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt packages: ${missing[*]}"
  as_root apt-get update -qq
  apt_updated=1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- LAMMPS source (skipped when the user points LAMMPS_DIR at their own tree) --------------
if [ -z "${LAMMPS_DIR:-}" ]; then
  src_dir="$build_dir/lammps-src"
  if [ ! -f "$src_dir/src/pair.h" ]; then
    dl_dir="$build_dir/downloads"
    mkdir -p "$dl_dir"
    if ! echo "$lammps_sha256  $dl_dir/$lammps_tarball" | sha256sum -c --status 2>/dev/null; then
      # A deb-src line for unstable changes no installed package; it only lets apt find sources.
      srcfile=/etc/apt/sources.list.d/nvalchemi-lammps-src.sources
      if [ ! -f "$srcfile" ]; then
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: unstable\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
          | as_root tee "$srcfile" >/dev/null
        apt_updated=0
      fi
      [ $apt_updated = 1 ] || as_root apt-get update -qq
      echo "install-deps: downloading LAMMPS source $lammps_version (about 214 MB)"
      # The archive lacks the .dsc, so apt-get exits 100 after the tarball arrives; the checksum
      # below is what decides success.
      (cd "$dl_dir" && apt-get source --download-only "lammps=$lammps_version" >/dev/null 2>&1) || true
      echo "$lammps_sha256  $dl_dir/$lammps_tarball" | sha256sum -c --status || {
        echo "install-deps: ERROR: $dl_dir/$lammps_tarball is missing or fails its sha256 check" \
          "(Debian may no longer serve lammps $lammps_version): build against a LAMMPS 4 Jul 2026 source" \
          "tree of your own: make LAMMPS_DIR=<that tree>" >&2
        exit 1
      }
    fi
    rm -rf "$src_dir.tmp" && mkdir -p "$src_dir.tmp"
    tar -xzf "$dl_dir/$lammps_tarball" -C "$src_dir.tmp"
    rm -rf "$src_dir" && mv "$src_dir.tmp" "$src_dir"
  fi
fi

# --- GoogleTest for LAMMPS' unit-test harness: Debian's source as the local tarball that LAMMPS'
# GTEST_URL/GTEST_SHA256 take (LAMMPS would otherwise download it from GitHub) -----------------
gtest_tarball="$build_dir/downloads/googletest-debian.tar.gz"
if [ ! -f "$gtest_tarball" ]; then
  mkdir -p "$build_dir/downloads"
  tar -czf "$gtest_tarball.tmp" -C /usr/src googletest && mv "$gtest_tarball.tmp" "$gtest_tarball"
fi

# --- Python virtual environment with PyTorch (LibTorch for C++, torch for the model scripts) --
venv="$build_dir/venv"
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  echo "install-deps: creating $venv with torch==$torch_version"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version" numpy
fi
# pip may have given the CUDA build of torch (the default on most Linux machines; this project's
# machines are served the CPU build): then CMake needs the CUDA toolkit it was built with
"$(dirname "$0")/torch-cuda-toolkit.sh" "$venv/bin/python" "$build_dir/torch-cmake-args"
# ASE reads the extended-XYZ snapshots of fix nvalchemi/dd in the tests (an oracle, never a
# requirement of the package)
ase_version=3.26.0
if ! "$venv/bin/python" -c "import ase, sys; sys.exit(ase.__version__ != '$ase_version')" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check "ase==$ase_version"
fi
# clang-format checks the package's C++ against LAMMPS' style (.clang-format; the test
# clang_format): PyPI's build, pinned, so that every machine formats alike
clang_format_version=23.1.5
if [ "$("$venv/bin/clang-format" --version 2>/dev/null | awk '{print $3}')" != "$clang_format_version" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check "clang-format==$clang_format_version"
fi
# the package's model tools (python/, nvalchemi_lammps), editable: the reference-model scripts
# and the tests import them as users do
repo=$(cd "$(dirname "$0")/.." && pwd)
if ! "$venv/bin/python" -c "import nvalchemi_lammps.export" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e "$repo/python"
fi
