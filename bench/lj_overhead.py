"""Cost of running Lennard-Jones through pair_style nvalchemi instead of LAMMPS' native lj/cut,
on the same system, neighbor settings and ranks, measured in one run, for each model file given:
the TorchScript model (LibTorch autograd), its AOTInductor build (forward and gradient compiled
ahead of time), and a model returning zeros from the same inputs (bench/run.py writes it), whose
step is the package's own cost: neighbor list, graph, tensors, tally.

    build/venv/bin/python bench/lj_overhead.py --lmp build/lammps/lmp \\
        --model build/nvalchemi/potentials/lj_ar.pt potentials/lj_ar.pt2

Prints one JSON object per (model, threads, graph, atoms, ranks): time per step of each style (LAMMPS'
"Loop time", the best of --repeat runs, taken in turns with lj/cut), their ratio, and the
largest peak resident memory of a rank (LibTorch included). Figures are CPU timings of a shared
machine: compare the ratios, not the absolute times.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, peak_rss_mb, peak_rss_wrapper, run_lammps, seconds_per_step  # noqa: E402

INPUT = """{system}{pair}
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix 1 all nve
thermo {steps}
run 5
run {steps}
"""

PAIRS = {"lj/cut": "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0",
         "nvalchemi": "pair_style nvalchemi {model}{keywords}\npair_coeff * * Ar"}


def measure(args, style, cells, ranks, workdir, model="", threads=0, graph=""):
    rundir = tempfile.mkdtemp(dir=workdir)
    keywords = (f" threads {threads}" if threads else "") + (f" graph {graph}" if graph else "") + "".join(f" library {os.path.abspath(f)}" for f in args.library)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), steps=args.steps,
                             pair=PAIRS[style].format(model=os.path.abspath(model), keywords=keywords)))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=1800,
                      wrapper=peak_rss_wrapper(rundir))
    if proc.returncode != 0:
        sys.exit(f"{style} run failed:\n{proc.stdout[-3000:]}")
    return seconds_per_step(proc.stdout), peak_rss_mb(rundir)


def best_of(args, runs):
    """Each run of `runs` (name -> callable) `args.repeat` times, in turns; the fastest of each."""
    best = {}
    for _ in range(args.repeat):
        for name, run in runs.items():
            seconds, rss = run()
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, rss)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", required=True, nargs="+", help="LJ model files (.pt, .pt2)")
    parser.add_argument("--cells", type=int, nargs="+", default=[10, 16], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, nargs="+", default=[0],
                        help="LibTorch threads per rank (pair_style keyword threads; 0: not given)")
    parser.add_argument("--graph", nargs="+", default=[""], choices=("", "host", "device"),
                        help="where each step's graph is built (pair_style keyword graph; '': not given)")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--library", nargs="*", default=[],
                        help="operator libraries every nvalchemi run loads (a model calling fused kernels)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each style; the fastest counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for cells in args.cells:
            for ranks in args.ranks:
                runs = {("lj/cut", 0, ""): lambda: measure(args, "lj/cut", cells, ranks, workdir)}
                for model in args.model:
                    for threads in args.threads:
                        for graph in args.graph:
                            runs[(model, threads, graph)] = (lambda m=model, t=threads, g=graph:
                                                             measure(args, "nvalchemi", cells, ranks, workdir, m, t, g))
                best = best_of(args, runs)
                ref, ref_mem = best[("lj/cut", 0, "")]
                for (model, threads, graph), (ml, ml_mem) in best.items():
                    if model == "lj/cut":
                        continue
                    print(json.dumps({"benchmark": "lj_overhead", "model": os.path.basename(model),
                                      "threads": threads, "graph": graph or "default", "atoms": 4 * cells ** 3, "ranks": ranks,
                                      "steps": args.steps, "repeat": args.repeat,
                                      "lj_cut_s_per_step": ref, "nvalchemi_s_per_step": ml,
                                      "ratio_nvalchemi_over_lj_cut": ml / ref,
                                      "lj_cut_peak_rss_mb_per_rank": ref_mem,
                                      "nvalchemi_peak_rss_mb_per_rank": ml_mem}), flush=True)


if __name__ == "__main__":
    main()
