"""Where a step of pair_style nvalchemi goes, as fix nvalchemi/dd reports it (its statistics
8-10 and 14-18, maximum over ranks), averaged over the steps of one run, for each model given.

    build/venv/bin/python bench/phase_times.py --lmp build/lammps/lmp \\
        --model build/nvalchemi/potentials/lj_ar.pt build/nvalchemi/potentials/lj_ar.pt2

Prints one JSON object per (model, atoms, ranks): milliseconds per step in graph (and padding),
tensors (inputs made, outputs converted), forward, backward (the package's autograd; 0 for a
compiled program, whose forward holds it), exchange (inside forward and backward), tally, and
LAMMPS' whole step; plus the glue (everything but the model and the exchange) and its share.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, run_lammps, seconds_per_step  # noqa: E402

# fix nvalchemi/dd statistics (doc/fix_nvalchemi_dd.rst), 1-based
PHASES = {"model": 8, "glue": 9, "exchange": 10, "graph": 14, "tensors": 15, "forward": 16, "backward": 17,
          "tally": 18}

INPUT = """{system}pair_style nvalchemi {model}
pair_coeff * * Ar
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix 1 all nve
fix dd all nvalchemi/dd
thermo_style custom step {columns}
thermo_modify format float %.9g
thermo 1
run 5
run {steps}
"""


def measure(args, model, cells, ranks, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    columns = " ".join(f"f_dd[{i}]" for i in PHASES.values())
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), model=os.path.abspath(model), columns=columns,
                             steps=args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"run with {model} failed:\n{proc.stdout[-3000:]}")
    # the thermo rows of the last run, without its setup step
    block = proc.stdout.split("Step ")[-1].split("Loop time")[0].splitlines()[2:]
    rows = [[float(v) for v in line.split()[1:]] for line in block if line.strip()]
    means = {name: 1e3 * sum(r[k] for r in rows) / len(rows) for k, name in enumerate(PHASES)}
    step_ms = 1e3 * seconds_per_step(proc.stdout)
    return dict(means, step=step_ms, glue_share_of_step=means["glue"] / step_ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", required=True, nargs="+", help="single-species Ar models (.pt, .pt2)")
    parser.add_argument("--cells", type=int, nargs="+", default=[10], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for cells in args.cells:
            for ranks in args.ranks:
                for model in args.model:
                    ms = measure(args, model, cells, ranks, workdir)
                    print(json.dumps({"benchmark": "phase_times", "model": os.path.basename(model),
                                      "atoms": 4 * cells ** 3, "ranks": ranks, "steps": args.steps,
                                      **{f"{k}_ms" if k != "glue_share_of_step" else k: v for k, v in ms.items()}}),
                          flush=True)


if __name__ == "__main__":
    main()
