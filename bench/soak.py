"""Soak: long runs on 2 ranks with fix nvalchemi/dd statistics and reneighboring on every step,
sampling each rank's resident memory through the run. Not a test: it reports, per model,

  rss_slope_kb_per_1000_steps   least-squares slope of each rank's resident memory after the
                                warm-up (the first --warmup fraction of the samples), the
                                largest over the ranks: flat memory is about 0
  rss_mb_after_warmup, rss_mb_at_end, rss_mb_min/max_after_warmup  (the largest rank's)
  energy_drift_per_atom_per_1000_steps  slope of thermo etotal (per atom) over the run
  energy_change_per_atom        last minus first etotal per atom

    build/venv/bin/python bench/soak.py --lmp build/lammps/lmp --models build/nvalchemi/potentials

Defaults: 100000 steps of the LJ model (500 atoms) and 10000 of the 3-layer layerwise
message-passing model (256 atoms, overlaid on lj/cut). Each memory sample is placed at the step
of the last thermo line in the log (flushed at every thermo output, 50 per run), so the slope's
resolution is 1/50 of the run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, thermo_table  # noqa: E402

INPUT = """{system}{pair}neighbor 0.3 bin
neigh_modify every 1 delay 0 check no
timestep 0.005
fix nve all nve
fix dd all nvalchemi/dd
thermo_style custom step etotal pe f_dd[1] f_dd[2] f_dd[5] f_dd[6]
thermo {thermo}
thermo_modify flush yes
run {steps}
"""

PAIRS = {
    "lj_ar.pt": "pair_style nvalchemi {model}\npair_coeff * * Ar\n",
    "schnet_layerwise.pt": ("pair_style hybrid/overlay nvalchemi {model} lj/cut 2.5\n"
                            "pair_coeff * * nvalchemi Ar\npair_coeff * * lj/cut 1.0 1.0\n"),
}


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def ranks_in(rundir, lmp):
    """PIDs of the lmp processes working in rundir."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/exe") == os.path.realpath(lmp) and \
                    os.readlink(f"/proc/{entry}/cwd") == os.path.realpath(rundir):
                pids.append(int(entry))
        except OSError:
            continue
    return sorted(pids)


def soak(args, model, steps, cells, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    thermo = max(steps // 50, 1)
    with open(os.path.join(rundir, "in.soak"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 1.0),
                             pair=PAIRS[model].format(model=os.path.join(os.path.abspath(args.models), model)),
                             thermo=thermo, steps=steps))
    cmd = [args.mpirun, "-np", "2", "--oversubscribe", os.path.abspath(args.lmp), "-in", "in.soak", "-log", "log.lammps"]
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=rundir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples = {}    # pid -> [(step, kB)]: the step of the last thermo line written (flushed)
    log = os.path.join(rundir, "log.lammps")
    while proc.poll() is None:
        written = thermo_table(open(log).read()) if os.path.exists(log) else {}
        for pid in ranks_in(rundir, args.lmp):
            kb = rss_kb(pid)
            if kb and written:
                samples.setdefault(pid, []).append((max(written), kb))
        time.sleep(args.interval)
    output = proc.stdout.read()
    if proc.returncode != 0:
        sys.exit(f"soak of {model} failed:\n{output[-3000:]}")
    table = thermo_table(open(os.path.join(rundir, "log.lammps")).read())
    steps_done = np.array(sorted(table))
    etotal = np.array([table[s][0] for s in steps_done])
    result = {"benchmark": "soak", "model": model, "ranks": 2, "atoms": 4 * cells ** 3, "steps": steps,
              "rss_samples_per_rank": min((len(v) for v in samples.values()), default=0)}
    # the samples of the warm-up (and of the start-up, before the first thermo line) left out
    slopes, after, end, low, high = [], [], [], [], []
    for series in samples.values():
        step, kb = np.array(series).T
        keep = step >= args.warmup * steps
        if keep.sum() >= 3:
            slopes.append(float(np.polyfit(step[keep], kb[keep], 1)[0]) * 1000)
            after.append(float(kb[keep][0]) / 1024)
            end.append(float(kb[keep][-1]) / 1024)
            low.append(float(kb[keep].min()) / 1024)
            high.append(float(kb[keep].max()) / 1024)
    if slopes:
        result.update({"rss_slope_kb_per_1000_steps": max(slopes, key=abs), "rss_mb_after_warmup": max(after),
                       "rss_mb_at_end": max(end), "rss_mb_min_after_warmup": min(low),
                       "rss_mb_max_after_warmup": max(high)})
    result["energy_drift_per_atom_per_1000_steps"] = float(np.polyfit(steps_done, etotal, 1)[0]) * 1000
    result["energy_change_per_atom"] = float(etotal[-1] - etotal[0])
    result["seconds"] = time.time() - start
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--models", required=True, help="the reference models' folder")
    parser.add_argument("--lj-steps", type=int, default=100000)
    parser.add_argument("--mp-steps", type=int, default=10000)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between memory samples")
    parser.add_argument("--warmup", type=float, default=0.2, help="fraction of the run left out of the slope")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-soak-") as workdir:
        for model, steps, cells in (("lj_ar.pt", args.lj_steps, 5), ("schnet_layerwise.pt", args.mp_steps, 4)):
            print(json.dumps(soak(args, model, steps, cells, workdir)), flush=True)


if __name__ == "__main__":
    main()
