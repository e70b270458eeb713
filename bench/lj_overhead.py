"""Cost of running Lennard-Jones through pair_style nvalchemi instead of LAMMPS' native lj/cut,
on the same system and ranks, measured in one run, for each model file given: the TorchScript
model (LibTorch autograd) and its AOTInductor build (forward and gradient compiled ahead of time).

    build/venv/bin/python bench/lj_overhead.py --lmp build/lammps/lmp \
        --model build/nvalchemi/potentials/lj_ar.pt build/nvalchemi/potentials/lj_ar.pt2

Prints one JSON object per (model, atoms, ranks): time per step of each style (LAMMPS' "Loop
time"), their ratio, and the largest peak resident memory of a rank (LibTorch included). Figures
are CPU timings of a shared machine: compare the ratios, not the absolute times.
"""

import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, run_lammps, seconds_per_step  # noqa: E402

INPUT = """{system}{pair}
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix 1 all nve
thermo {steps}
run 5
run {steps}
"""

PAIRS = {"lj/cut": "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0",
         "nvalchemi": "pair_style nvalchemi {model}\npair_coeff * * Ar"}


def measure(args, style, cells, ranks, workdir, model=""):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), steps=args.steps,
                             pair=PAIRS[style].format(model=os.path.abspath(model))))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=1800,
                      wrapper=["/usr/bin/time", "-f", "PEAK_RSS_KB %M"])
    if proc.returncode != 0:
        sys.exit(f"{style} run failed:\n{proc.stdout[-3000:]}")
    peak_rss_mb = max(int(kb) for kb in re.findall(r"PEAK_RSS_KB (\d+)", proc.stderr)) / 1024
    return seconds_per_step(proc.stdout), peak_rss_mb


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", required=True, nargs="+", help="LJ model files (.pt, .pt2)")
    parser.add_argument("--cells", type=int, nargs="+", default=[10, 16], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for cells in args.cells:
            for ranks in args.ranks:
                ref, ref_mem = measure(args, "lj/cut", cells, ranks, workdir)
                for model in args.model:
                    ml, ml_mem = measure(args, "nvalchemi", cells, ranks, workdir, model)
                    print(json.dumps({"benchmark": "lj_overhead", "model": os.path.basename(model),
                                      "atoms": 4 * cells ** 3, "ranks": ranks, "steps": args.steps,
                                      "lj_cut_s_per_step": ref, "nvalchemi_s_per_step": ml,
                                      "ratio_nvalchemi_over_lj_cut": ml / ref,
                                      "lj_cut_peak_rss_mb_per_rank": ref_mem,
                                      "nvalchemi_peak_rss_mb_per_rank": ml_mem}), flush=True)


if __name__ == "__main__":
    main()
