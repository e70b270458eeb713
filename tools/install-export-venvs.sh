#!/usr/bin/env bash
# Installs the model export tools (python/, the nvalchemi-lammps Python package) with their
# optional dependencies into virtual environments of their own under the build directory, for
# the export tests: venv-mace (mace-torch and the e3nn 0.4 it pins) and venv-nequip (nequip,
# nequip-allegro and their e3nn 0.6), venv-sevenn (sevenn, with its pretrained
# models); and venv-torch-only, PyTorch and nothing else, into which
# the test unittest/export/torch_only.py installs the tools as a user would. Never needed by a
# LAMMPS run. With "mace", venv-mace alone: `make` compiles examples/mace's model with it.
# Idempotent: a second run compares a stamp and returns at once.
#
# usage: tools/install-export-venvs.sh <build-dir> [mace]
set -euo pipefail

build_dir=${1:?usage: install-export-venvs.sh <build-dir> [mace]}
only=${2:-}
case $only in "" | mace) ;; *) echo "install-export-venvs: unknown '$only' (mace, or nothing for all)" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)

torch_version=2.13.0
mace_pins=(mace-torch==0.3.16 e3nn==0.4.4)
nequip_pins=(nequip==0.19.1 nequip-allegro==0.8.3 e3nn==0.6.0)
sevenn_pins=(sevenn==0.13.0 e3nn==0.6.0)

# install <venv name> <extra> <pins...>: the package (editable, so python/ edits take effect)
# with one extra, the pins applied
install() {
  local venv="$build_dir/$1" extra=$2
  shift 2
  local stamp_text
  stamp_text="torch==$torch_version $* $(sha256sum "$repo/python/pyproject.toml" | cut -d' ' -f1)"
  if [ -f "$venv/.nvalchemi-stamp" ] && [ "$(cat "$venv/.nvalchemi-stamp")" = "$stamp_text" ]; then
    return 0
  fi
  echo "install-export-venvs: creating $venv ($extra: $*)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version"
  "$venv/bin/pip" install -q --disable-pip-version-check -e "$repo/python[$extra]" "$@"
  echo "$stamp_text" > "$venv/.nvalchemi-stamp"
}

install venv-mace mace "${mace_pins[@]}"
[ "$only" = mace ] && exit 0
install venv-nequip nequip "${nequip_pins[@]}"
install venv-sevenn sevenn "${sevenn_pins[@]}"

venv="$build_dir/venv-torch-only"
if [ ! -f "$venv/.nvalchemi-stamp" ] || [ "$(cat "$venv/.nvalchemi-stamp")" != "torch==$torch_version" ]; then
  echo "install-export-venvs: creating $venv (torch only)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version"
  echo "torch==$torch_version" > "$venv/.nvalchemi-stamp"
fi
