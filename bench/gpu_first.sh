#!/usr/bin/env bash
# The first run on a GPU machine (doc/Build_nvalchemi.rst, "Checking on a GPU"): the GPU check,
# then as much of the GPU race as time allows, in one call that ends within 9 minutes.
#
#   bench/gpu_first.sh prepare       on the development machine, after `make nvalchemi`:
#                                    bench/gpu_check.sh prepare and bench/gpu_race.sh prepare
#                                    (build/gpu-check and build/gpu-race, about 55 MB together:
#                                    carry both to the GPU machine)
#   bench/gpu_first.sh run [--tiny] [OUT]
#                                    on the GPU machine (python3 with torch, cmake, a C++
#                                    compiler, nvcc; no network). One LAMMPS with the package is
#                                    built, by the check, and serves the race too; the race's
#                                    peer build (e3gnn) and its exports run beside the check's
#                                    build. In this order, no new run starting after the
#                                    deadline: the check's parity cases (graph device and graph
#                                    host against the CPU reference on 1, 2 and 4 ranks: LJ, a
#                                    message-passing model in each halo mode, a MACE export,
#                                    .pt2 packages compiled there; cuda_graph yes, and whether a
#                                    capture happened), its step times (the zero model at 16k
#                                    atoms first), then the race. Writes OUT/results.json (the
#                                    check's and the race's results) and OUT/summary.md (their
#                                    tables), and each tool's logs under OUT/check and OUT/race.
#                                    OUT: default $OUT, else build/gpu-first/out.
#
# Settings: PYTHON (default python3); GPU_FIRST_SECONDS, the time after which no new run starts,
# counted from the start (default 480: the call ends within 9 minutes with the last run);
# GPU_FIRST_CHECK_SECONDS, when the check's runs stop so that the race gets the rest (default 300);
# GPU_FIRST_WORK, the build folder (default /tmp/nvalchemi-gpu-first).
# A rehearsal on a CPU (--tiny): tiny race sizes, the check's timed steps divided by 20, and, to
# spare the builds, GPU_FIRST_LMP and GPU_FIRST_PEER_LMP name LAMMPS builds to use and
# GPU_RACE_SEVENN_PYTHON / GPU_RACE_MACE_PYTHON pythons with the frameworks (bench/gpu_race.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

prepare() {
  "$ROOT/bench/gpu_check.sh" prepare
  "$ROOT/bench/gpu_race.sh" prepare
}

run() {
  local tiny=
  [[ ${1:-} == --tiny ]] && { tiny=1; shift; }
  local out=${1:-${OUT:-$ROOT/build/gpu-first/out}} work=${GPU_FIRST_WORK:-/tmp/nvalchemi-gpu-first}
  local deadline=${GPU_FIRST_SECONDS:-480} check_deadline=${GPU_FIRST_CHECK_SECONDS:-300}
  [[ -n $tiny && -z ${GPU_FIRST_SECONDS:-} ]] && deadline=0 check_deadline=0
  mkdir -p "$out/check" "$out/race" "$work"
  exec > >(tee "$out/gpu_first.log") 2>&1
  echo "== gpu_first $(date -u) on $(hostname); deadline ${deadline} s (check ${check_deadline} s)"
  local gate=$work/race.go
  rm -f "$gate"

  # the race prepares beside the check (peer build, exports), waits for the check's LAMMPS and
  # for the gate, then runs until the deadline (both count from this start)
  local lmp=${GPU_FIRST_LMP:-$work/check/build/lmp}
  (export GPU_RACE_WORK=$work/race GPU_RACE_LMP=$lmp GPU_RACE_WAIT_FOR=$gate
   [[ -n ${GPU_FIRST_PEER_LMP:-} ]] && export GPU_RACE_PEER_LMP=$GPU_FIRST_PEER_LMP
   ((deadline > 0)) && export GPU_RACE_SECONDS=$deadline
   "$ROOT/bench/gpu_race.sh" run ${tiny:+--tiny} "$out/race" > /dev/null 2>&1) &
  local race=$!

  # the check builds the LAMMPS both use (unless one is given) and runs first
  local check_status=0
  (export GPU_CHECK_WORK=$work/check
   [[ -n ${GPU_FIRST_LMP:-} ]] && export GPU_CHECK_LMP=$GPU_FIRST_LMP
   ((check_deadline > 0)) && export GPU_CHECK_SECONDS=$check_deadline
   [[ -n $tiny ]] && export GPU_CHECK_ARGS="--timing-divisor 20 ${GPU_CHECK_ARGS:-}"
   "$ROOT/bench/gpu_check.sh" run "$out/check") || check_status=$?
  echo "== check finished in ${SECONDS} s (exit ${check_status})"
  [[ -x $lmp ]] || echo "== no LAMMPS at $lmp: the race cannot run"
  touch "$gate"
  local race_status=0
  wait $race || race_status=$?
  echo "== race finished in ${SECONDS} s (exit ${race_status})"
  tail -5 "$out/race/gpu_race.log" 2> /dev/null || true

  "${PYTHON:-python3}" - "$out" "$check_status" "$race_status" <<'EOF'
import json, os, sys
out, check_status, race_status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def read(tool, name):
    path = os.path.join(out, tool, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f) if name.endswith(".json") else f.read()
results = {"check": read("check", "results.json"), "check_exit": check_status,
           "race": read("race", "results.json"), "race_exit": race_status}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=1)
with open(os.path.join(out, "summary.md"), "w") as f:
    for tool, status in (("check", check_status), ("race", race_status)):
        f.write(f"# GPU {tool} (exit {status})\n\n")
        f.write(read(tool, "results.md") or f"no results: see {tool}/gpu_{tool}.log\n")
        f.write("\n")
print(open(os.path.join(out, "summary.md")).read()[:6000])
EOF
  exit $((check_status != 0 || race_status != 0))
}

case ${1:-} in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  *) sed -n '2,/^set /{/^set /!p}' "$0" >&2; exit 2 ;;
esac
