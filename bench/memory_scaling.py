"""Peak memory per atom of pair_style nvalchemi with the Lennard-Jones model, from about a
thousand to a quarter million atoms on one rank, measured in one run.

    build/venv/bin/python bench/memory_scaling.py --lmp build/lammps/lmp \\
        --model build/nvalchemi/potentials/lj_ar.pt

The peak resident memory of a run holds what does not grow with the system (LibTorch, LAMMPS,
the model); a run on --base-cells (32 atoms) measures it, and each system's figure is
(peak - that peak) / (atoms - base atoms). Each system runs twice: with glibc's malloc as it
comes, whose mmap threshold adapts upwards (to 32 MB) so that freed blocks below it stay in the
heap for reuse and count in the peak, and with MALLOC_MMAP_THRESHOLD_=65536, which returns every
larger block when it is freed, so that the peak is the memory in use. Prints one JSON object per
system and a last one with the spread of the second figures (largest / smallest), which is flat
when memory grows linearly with the atoms.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import melt_commands, peak_rss_mb, peak_rss_wrapper, run_lammps  # noqa: E402

INPUT = """{system}pair_style nvalchemi {model}
pair_coeff * * Ar
neighbor 0.3 bin
fix 1 all nve
thermo {steps}
run {steps}
"""


# glibc: blocks above 64 KiB are mapped and returned when freed, so that the peak is what is in use
IN_USE = {"MALLOC_MMAP_THRESHOLD_": "65536"}


def measure(args, cells, workdir, env=None):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 3.0), model=os.path.abspath(args.model), steps=args.steps))
    wrapper = ["env"] + [f"{k}={v}" for k, v in (env or {}).items()] + peak_rss_wrapper(rundir)
    proc = run_lammps(args.lmp, args.mpirun, 1, "in.bench", rundir, timeout=3600, wrapper=wrapper)
    if proc.returncode != 0:
        sys.exit(f"run of {4 * cells ** 3} atoms failed:\n{proc.stdout[-3000:]}")
    return peak_rss_mb(rundir)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--model", required=True, help="the LJ model (.pt or .pt2)")
    parser.add_argument("--cells", type=int, nargs="+", default=[6, 10, 16, 25, 40],
                        help="fcc cells per edge, 4 atoms each (default: 864 to 256000 atoms)")
    parser.add_argument("--base-cells", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        base_atoms = 4 * args.base_cells ** 3
        base, base_in_use = (measure(args, args.base_cells, workdir, env) for env in (None, IN_USE))
        per_atom = []
        for cells in args.cells:
            atoms = 4 * cells ** 3
            peak, in_use = (measure(args, cells, workdir, env) for env in (None, IN_USE))
            per_atom.append(1024 * (in_use - base_in_use) / (atoms - base_atoms))
            print(json.dumps({"benchmark": "memory_scaling", "model": os.path.basename(args.model), "atoms": atoms,
                              "peak_rss_mb": peak, "base_peak_rss_mb": base,
                              "kb_per_atom_default_malloc": 1024 * (peak - base) / (atoms - base_atoms),
                              "peak_rss_in_use_mb": in_use, "base_peak_rss_in_use_mb": base_in_use,
                              "kb_per_atom": per_atom[-1]}), flush=True)
        print(json.dumps({"benchmark": "memory_scaling", "model": os.path.basename(args.model),
                          "atoms_range": [4 * args.cells[0] ** 3, 4 * args.cells[-1] ** 3],
                          "kb_per_atom_largest_over_smallest": max(per_atom) / min(per_atom)}), flush=True)


if __name__ == "__main__":
    main()
