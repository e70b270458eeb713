#!/usr/bin/env bash
# Writes the logs kept beside each example, log.<date>.<name>.g++.1 and .g++.4 (and, for
# examples/lj, the KOKKOS run log.<date>.lj.kk.g++.2), in place of the older ones, with the lmp
# that `make` built. unittest/lammps/examples.py checks that they echo the inputs as they are and
# print the effective spec this build prints: run this after changing an input or the spec.
# Usage: tools/example-logs.sh [build dir [example ...]]   (default: every example)
set -euo pipefail
cd "$(dirname "$0")/.."
lmp=$(realpath "${1:-build}")/lammps/lmp
shift || true
only=" $* "
[ -x "$lmp" ] || { echo "example-logs: no $lmp: run make first" >&2; exit 1; }
# OpenMPI refuses root without these, and 4 ranks on fewer cores without oversubscription
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
date=$(date +%-d%b%y)
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/in.$name" ] || continue
  [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
  (
    cd "$dir"
    rm -f log.*
    for np in 1 4; do
      mpirun -np "$np" "$lmp" -in "in.$name" -log "log.$date.$name.g++.$np" > /dev/null
    done
    if [ "$name" = lj ]; then
      mpirun -np 2 "$lmp" -k on t 2 -sf kk -in in.lj -log "log.$date.lj.kk.g++.2" > /dev/null
    fi
  )
  echo "example-logs: examples/$name"
done
