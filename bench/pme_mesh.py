"""The particle-mesh model (models/pme.py) over mesh size and ranks: what the whole-mesh
all-reduce (torch.ops.nvalchemi.rank_sum) and the FFT every rank repeats cost, measured in one run.

    build/venv/bin/python bench/pme_mesh.py --lmp build/lammps/lmp

Prints one JSON object per (atoms, mesh, ranks): time per step, the exchange ops' time per step
(fix nvalchemi/dd statistic 10, maximum over ranks: the mesh all-reduce and the system sums) and
its share; then, per (atoms, mesh), the speedup of each rank count over the first (1 rank). The mesh work
does not shrink with more ranks, so the speedup falls as the mesh grows: where it stops paying
is where that speedup is gone. CPU timings of a shared machine: read the ratios.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from harness import last_run_column, run_lammps, seconds_per_step, timed_run_commands  # noqa: E402
import pme  # noqa: E402
from nvalchemi_lammps.export import save_model  # noqa: E402

INPUT = """units metal
atom_style atomic
lattice custom 5.64 a1 1 0 0 a2 0 1 0 a3 0 0 1 basis 0 0 0 basis 0.5 0.5 0 basis 0.5 0 0.5 &
  basis 0 0.5 0.5 basis 0.5 0 0 basis 0 0.5 0 basis 0 0 0.5 basis 0.5 0.5 0.5
region box block 0 {cells} 0 {cells} 0 {cells}
create_box 2 box
create_atoms 1 box basis 5 2 basis 6 2 basis 7 2 basis 8 2
mass * 30.0
displace_atoms all random 0.1 0.1 0.1 4127
pair_style nvalchemi {model}
pair_coeff * * Na Cl
neighbor 1.0 bin
"""


def measure(args, model, cells, ranks, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(cells=cells, model=model) + timed_run_commands(args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"run failed:\n{proc.stdout[-3000:]}")
    out = proc.stdout
    exchange = last_run_column(out, 2)
    step = seconds_per_step(out)
    return {"s_per_step": step, "exchange_s_per_step": sum(exchange) / len(exchange),
            "exchange_share": sum(exchange) / len(exchange) / step}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--cells", type=int, nargs="+", default=[4], help="rock-salt cells per edge (8 atoms each)")
    parser.add_argument("--mesh", type=int, nargs="+", default=[16, 32, 48, 64])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for mesh in args.mesh:
            model = os.path.join(workdir, f"pme_{mesh}.pt")
            save_model(pme.PME(pme.SPECIES, pme.CHARGES, mesh), model, cutoff=pme.CUTOFF, species=pme.SPECIES,
                       units="metal", spec=pme.PME_SPEC)
            for cells in args.cells:
                result = {r: measure(args, model, cells, r, workdir) for r in args.ranks}
                common = {"benchmark": "pme_mesh", "atoms": 8 * cells ** 3, "mesh": mesh}
                for ranks, r in result.items():
                    print(json.dumps({**common, "ranks": ranks, "steps": args.steps, **r}), flush=True)
                base = result[args.ranks[0]]["s_per_step"]
                print(json.dumps({**common, "base_ranks": args.ranks[0],
                                  "speedup": {str(n): base / r["s_per_step"] for n, r in result.items()}}), flush=True)


if __name__ == "__main__":
    main()
