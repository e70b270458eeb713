"""Halo mode gp (graph partition) against layerwise halo for the SchNet-style model
(models/schnet.py, the layerwise build: one model file runs in both modes) over system size,
depth (message-passing layers) and ranks, measured in one run.

    build/venv/bin/python bench/gp_halo.py --lmp build/lammps/lmp

Prints one JSON object per (atoms, layers, ranks, mode): time per step, the exchange ops' share
of it (fix nvalchemi/dd statistic 10, maximum over ranks), rows per rank (layerwise: owned +
ghost atoms; gp: every atom of the system) and the energy at step 0, which must be the same in
both modes; then the ratio gp / layerwise. CPU timings of a shared machine: read the ratios.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from harness import last_run_column, melt_commands, run_lammps, seconds_per_step, timed_run_commands  # noqa: E402,E501
import schnet  # noqa: E402
from nvalchemi_lammps.export import save_model  # noqa: E402

INPUT = """{system}pair_style nvalchemi {model} halo {mode}
pair_coeff * * Ar
neighbor 0.3 bin
"""


def measure(args, model, mode, cells, ranks, workdir):
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(system=melt_commands(cells, 1.5), model=model, mode=mode) +
                timed_run_commands(args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"{mode} run failed:\n{proc.stdout[-3000:]}")
    out = proc.stdout
    energy = float(out.split("Step ")[1].splitlines()[1].split()[1])
    exchange = last_run_column(out, 2)
    step = seconds_per_step(out)
    nlocal = float(out.split("Nlocal:")[-1].split()[0])
    nghost = float(out.split("Nghost:")[-1].split()[0])
    rows = 4 * cells ** 3 if mode == "gp" else nlocal + nghost
    return {"s_per_step": step, "exchange_share": sum(exchange) / len(exchange) / step,
            "rows_per_rank": rows, "energy_step0": energy}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--cells", type=int, nargs="+", default=[6, 10, 14], help="fcc cells per edge (4 atoms each)")
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 3, 6])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvalchemi-bench-") as workdir:
        for layers in args.layers:
            model = os.path.join(workdir, f"schnet_{layers}.pt")
            save_model(schnet.SchNet(True, layers=layers), model, cutoff=schnet.CUTOFF, species=schnet.SPECIES,
                       units="lj", spec={"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": layers,
                                         "exchange_feature_width": schnet.FEATURES})
            for cells, ranks in ((c, r) for c in args.cells for r in args.ranks):
                result = {mode: measure(args, model, mode, cells, ranks, workdir) for mode in ("layerwise", "gp")}
                common = {"benchmark": "gp_halo", "atoms": 4 * cells ** 3, "layers": layers, "ranks": ranks}
                for mode, r in result.items():
                    print(json.dumps({**common, "mode": mode, "steps": args.steps, **r}), flush=True)
                print(json.dumps({**common, "gp_over_layerwise": result["gp"]["s_per_step"] / result["layerwise"]["s_per_step"],
                                  "energy_relative_difference": abs(result["gp"]["energy_step0"] - result["layerwise"]["energy_step0"])
                                  / abs(result["layerwise"]["energy_step0"])}), flush=True)


if __name__ == "__main__":
    main()
