"""Step time of two LAMMPS builds on the same inputs, runs taken in turns, for a change that must
not change speed (a restructuring): the zero model (the LJ model's inputs, zero energies: the
package's own cost) on an fcc melt, and any model given with --model on a rattled fcc lattice.

    build/venv/bin/python bench/build_compare.py --lmp /tmp/before/lmp build/lammps/lmp \\
        --model build/nvalchemi/unittest/mace/tiny_layerwise_float64.pt:C --ranks 1 4

Prints one JSON object per (model, atoms, ranks): each build's best seconds per step over
--repeat runs and their ratio (second build over first). CPU timings of a shared machine: read
the ratio, which is measured in one run.
"""

import argparse
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, run_lammps, seconds_per_step  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lj_overhead import INPUT  # noqa: E402
from run import Zero  # noqa: E402

from nvalchemi_lammps.export import save_model  # noqa: E402

# lj_overhead.py's input: the pair lines after the system, 5 warm-up steps, then the timed run
PAIR = "\npair_style nvalchemi {model}\npair_coeff * * {element}"


def system(element, cells):
    """An fcc melt for the zero model (LJ units); a rattled fcc lattice in metal units for a real
    model."""
    if element == "Ar":
        return melt_commands(cells, 3.0)
    return (f"units metal\nboundary p p p\nlattice fcc 3.6\nregion box block 0 {cells} 0 {cells} 0 {cells}\n"
            f"create_box 1 box\ncreate_atoms 1 box\nmass 1 12.0\ndisplace_atoms all random 0.1 0.1 0.1 4527\n"
            f"velocity all create 300 4928459\ntimestep 0.0005")


def measure(lmp, mpirun, model, element, cells, ranks, steps, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=system(element, cells), steps=steps,
                             pair=PAIR.format(model=os.path.abspath(model), element=element)))
    proc = run_lammps(lmp, mpirun, ranks, "in.bench", rundir, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"{lmp} failed:\n{proc.stdout[-3000:]}")
    return seconds_per_step(proc.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", nargs=2, required=True, help="the two LAMMPS executables (before, after)")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", nargs="*", default=[], help="FILE:ELEMENT, besides the zero model")
    parser.add_argument("--zero-cells", type=int, default=16, help="fcc cells per edge of the zero model's melt")
    parser.add_argument("--model-cells", type=int, default=3, help="fcc cells per edge for --model")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each build; the fastest counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-compare-") as workdir:
        zero = os.path.join(workdir, "zero.pt")
        torch.manual_seed(0)
        save_model(Zero(), zero, cutoff=2.5, species=[18], units="lj", spec={"preset": "SPEC_LJ_HALO"})
        cases = [(zero, "Ar", args.zero_cells)] + [(m.split(":")[0], m.split(":")[1], args.model_cells)
                                                    for m in args.model]
        for model, element, cells in cases:
            for ranks in args.ranks:
                best = [float("inf"), float("inf")]
                for _ in range(args.repeat):
                    for b, lmp in enumerate(args.lmp):
                        best[b] = min(best[b], measure(lmp, args.mpirun, model, element, cells, ranks, args.steps,
                                                       workdir))
                print(json.dumps({"benchmark": "build_compare", "model": os.path.basename(model),
                                  "atoms": 4 * cells ** 3, "ranks": ranks, "steps": args.steps,
                                  "repeat": args.repeat, "before_lmp": args.lmp[0], "after_lmp": args.lmp[1],
                                  "before_s_per_step": best[0], "after_s_per_step": best[1],
                                  "ratio_after_over_before": best[1] / best[0]}), flush=True)


if __name__ == "__main__":
    main()
