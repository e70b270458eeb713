"""Where a step of pair_style nvalchemi goes, as fix nvalchemi/dd reports it (its statistics
8-10 and 14-18, maximum over ranks), averaged over the steps of one run, for each model given.

    build/venv/bin/python bench/phase_times.py --lmp build/lammps/lmp \\
        --model build/nvalchemi/potentials/lj_ar.pt potentials/lj_ar.pt2

Prints one JSON object per (model, atoms, ranks, style): milliseconds per step in graph (and
padding), tensors (inputs made, outputs converted), forward, backward (the package's autograd; 0
for a compiled program, whose forward holds it), exchange (inside forward and backward), tally,
and LAMMPS' whole step; plus the glue (everything but the model and the exchange) and its share.
With --kokkos, each case runs twice in one go, as pair_style nvalchemi with `threads T` and as
pair_style nvalchemi/kk under `-k on t T -sf kk` (T: --threads), and a line per case gives the
ratios kk / plain of step, graph and glue times.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import kokkos_switches, last_run_rows, melt_commands, run_lammps, seconds_per_step  # noqa: E402

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


def measure(args, model, cells, ranks, workdir, style="plain"):
    """Mean phase times (ms) of `model` as pair_style nvalchemi (style plain: with the threads
    keyword when --threads > 1) or nvalchemi/kk (style kk: the same input under -sf kk)."""
    rundir = tempfile.mkdtemp(dir=workdir)
    columns = " ".join(f"f_dd[{i}]" for i in PHASES.values())
    pair_model = os.path.abspath(model)
    if style == "plain" and args.threads > 1:
        pair_model += f" threads {args.threads}"
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), model=pair_model, columns=columns,
                             steps=args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=1800,
                      lmp_args=kokkos_switches(args.threads) if style == "kk" else None)
    if proc.returncode != 0:
        sys.exit(f"run with {model} failed:\n{proc.stdout[-3000:]}")
    rows = [row[1:] for row in last_run_rows(proc.stdout)]
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
    parser.add_argument("--kokkos", action="store_true",
                        help="measure pair_style nvalchemi/kk (-k on t T -sf kk) beside the plain style")
    parser.add_argument("--threads", type=int, default=1, help="threads per rank (T) of both styles")
    args = parser.parse_args()
    styles = ("plain", "kk") if args.kokkos else ("plain",)
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for cells in args.cells:
            for ranks in args.ranks:
                for model in args.model:
                    case = {"model": os.path.basename(model), "atoms": 4 * cells ** 3, "ranks": ranks,
                            "steps": args.steps}
                    measured = {}
                    for style in styles:
                        ms = measured[style] = measure(args, model, cells, ranks, workdir, style)
                        print(json.dumps({"benchmark": "phase_times", **case, "style": style, "threads": args.threads,
                                          **{f"{k}_ms" if k != "glue_share_of_step" else k: v
                                             for k, v in ms.items()}}), flush=True)
                    if args.kokkos:
                        plain, kk = measured["plain"], measured["kk"]
                        print(json.dumps({"benchmark": "phase_times", **case, "threads": args.threads,
                                          **{f"kk_over_plain_{k}": kk[k] / plain[k] for k in ("step", "graph", "glue")},
                                          "glue_share_plain": plain["glue_share_of_step"],
                                          "glue_share_kk": kk["glue_share_of_step"]}), flush=True)


if __name__ == "__main__":
    main()
