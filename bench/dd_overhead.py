"""Cost of fix nvalchemi/dd hooks on a Lennard-Jones melt run by pair_style nvalchemi, measured in
one run: time per step with each hook configuration against the same run without the fix.

    build/venv/bin/python bench/dd_overhead.py --lmp build/lammps/lmp --model potentials/lj_ar.pt

Prints one JSON object per (atoms, ranks, variant): seconds per step (LAMMPS' "Loop time") and
the ratio to the run without the fix. The hook variants call models/hooks.py's centre
umbrella (in scope local it biases each rank's own centre: a cost measurement only). CPU
timings of a shared machine: compare the ratios, not the absolute times.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, run_lammps, seconds_per_step  # noqa: E402

HOOKS = os.path.join(os.path.dirname(__file__), "..", "models", "hooks.py")

INPUT = """{system}pair_style nvalchemi {model}
pair_coeff * * Ar
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix 1 all nve
{fix}thermo 10
{thermo}run 5
run {steps}
"""

STATS = "thermo_style custom step pe " + " ".join(f"f_dd[{i}]" for i in range(1, 14)) + "\n"

VARIANTS = {
    "no fix": ("", ""),
    "statistics in thermo every 10 steps": ("fix dd all nvalchemi/dd\n", STATS),
    "guard every step": ("fix dd all nvalchemi/dd guard 1\n", ""),
    "drift every step": ("fix dd all nvalchemi/dd drift 1 10 1.0 warn\n", ""),
    "hook local every step": ("fix dd all nvalchemi/dd hook {hook} local 1\n", ""),
    "hook global every step": ("fix dd all nvalchemi/dd hook {hook} global 1\n", ""),
    "hook rank_zero every step": ("fix dd all nvalchemi/dd hook {hook} rank_zero 1\n", ""),
    "validate every 10 steps": ("fix dd all nvalchemi/dd validate 10 1e-10\n", ""),
}


def measure(args, cells, ranks, fix, thermo, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), model=os.path.abspath(args.model), fix=fix,
                             thermo=thermo, steps=args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"run failed:\n{proc.stdout[-3000:]}")
    return seconds_per_step(proc.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", required=True)
    parser.add_argument("--cells", type=int, nargs="+", default=[10], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        hook = os.path.join(workdir, "umbrella.pt")
        subprocess.run([sys.executable, HOOKS, "umbrella", "--k", "10.0", "--target", "8", "8", "8", "-o", hook],
                       check=True)
        for cells in args.cells:
            for ranks in args.ranks:
                base = None
                for name, (fix, thermo) in VARIANTS.items():
                    seconds = measure(args, cells, ranks, fix.format(hook=hook), thermo, workdir)
                    base = base or seconds
                    print(json.dumps({"benchmark": "dd_overhead", "atoms": 4 * cells ** 3, "ranks": ranks,
                                      "steps": args.steps, "variant": name, "s_per_step": seconds,
                                      "ratio_to_no_fix": seconds / base}), flush=True)


if __name__ == "__main__":
    main()
