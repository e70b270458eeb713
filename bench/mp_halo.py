"""Layerwise vs deep halo for the 3-layer SchNet-style model (models/schnet.py), measured in
one run on the same systems and ranks, for each model format asked for (--format pt pt2: the
TorchScript and the AOTInductor build of the same weights).

    build/venv/bin/python bench/mp_halo.py --lmp build/lammps/lmp --models build/nvalchemi/potentials

Prints one JSON object per (atoms, ranks, mode): time per step (LAMMPS "Loop time"), rows per
rank (owned + ghost atoms the model processes: Nlocal + Nghost, averaged over ranks), peak
resident memory of the largest rank (LibTorch included), and the total energy, which must be
the same in both modes. CPU timings of a shared machine: compare ratios within one run.
"""

import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import atoms_per_rank, melt_commands, peak_rss_mb, peak_rss_wrapper, run_lammps, seconds_per_step  # noqa: E402

INPUT = """{system}pair_style nvalchemi {model}
pair_coeff * * Ar
neighbor 0.3 bin
fix 1 all nve
thermo_style custom step pe
thermo_modify norm no format float %.15g
run 0
run {steps}
"""


def measure(args, mode, cells, ranks, workdir, extension=".pt"):
    rundir = tempfile.mkdtemp(dir=workdir)
    folder = args.packages if extension == ".pt2" and args.packages else args.models
    model = os.path.abspath(os.path.join(folder, f"schnet_{mode}{extension}"))
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 1.5), steps=args.steps, model=model))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=3600,
                      wrapper=peak_rss_wrapper(rundir))
    if proc.returncode != 0:
        sys.exit(f"{mode} run failed:\n{proc.stdout[-3000:]}")
    out = proc.stdout
    nlocal, nghost = atoms_per_rank(out)
    energy = float(re.findall(r"^\s+0\s+(\S+)\s*$", out, re.M)[0])
    rss = peak_rss_mb(rundir)
    return {"s_per_step": seconds_per_step(out), "rows_per_rank": nlocal + nghost,
            "owned_per_rank": nlocal, "peak_rss_mb": rss, "energy_step0": energy}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--models", required=True, help="folder with schnet_layerwise.pt and schnet_deep.pt")
    parser.add_argument("--packages", default="", help="folder with their .pt2 packages (default: --models)")
    parser.add_argument("--cells", type=int, nargs="+", default=[10, 16], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--format", nargs="+", choices=("pt", "pt2"), default=["pt"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for cells, ranks, fmt in ((c, r, f) for c in args.cells for r in args.ranks for f in args.format):
                result = {mode: measure(args, mode, cells, ranks, workdir, "." + fmt) for mode in ("layerwise", "deep")}
                for mode, r in result.items():
                    print(json.dumps({"benchmark": "mp_halo", "format": fmt, "atoms": 4 * cells ** 3, "ranks": ranks,
                                      "mode": mode, "steps": args.steps, **r}), flush=True)
                print(json.dumps({"benchmark": "mp_halo", "format": fmt, "atoms": 4 * cells ** 3, "ranks": ranks,
                                  "speedup_layerwise_over_deep": result["deep"]["s_per_step"] / result["layerwise"]["s_per_step"],
                                  "rows_deep_over_layerwise": result["deep"]["rows_per_rank"] / result["layerwise"]["rows_per_rank"],
                                  "energy_relative_difference": abs(result["deep"]["energy_step0"] - result["layerwise"]["energy_step0"])
                                  / abs(result["layerwise"]["energy_step0"])}), flush=True)


if __name__ == "__main__":
    main()
