"""MLIPSpec-driven consolidation of every model output, on 1, 2 and 4 ranks.

Runs the probe model (spec_models.py) on the same system with each processor grid and reads its
extra outputs through compute nvalchemi/atom and nvalchemi/global, after `run 0` and after 20
NVE steps. Checks:
  * every output on N ranks equals the 1-rank value (relative difference <= 1e-10);
  * independent identities: the three coordination outputs agree once consolidated, `volume`
    equals LAMMPS' vol, `energy` equals LAMMPS' pe, `cell_diagonal` equals lx ly lz;
  * a deliberately wrong spec (`output dipole per_graph none`, `output coordination per_node
    owned_only`) gives a different number on 2 ranks: the checks can fail;
  * round trip: the effective spec LAMMPS printed, stored as a full spec in a new model's
    metadata, gives bit-identical results and prints the same spec.
"""

import argparse
import json
import os
import re
import tempfile

import numpy as np

from harness import Checks, decomposition, input_head, make_system, relative_difference, run_snapshots, snapshot_commands

from nvalchemi_lammps.export import save_model
from spec_models import Probe

STEPS = (0, 20)
GRIDS = ((1, (1, 1, 1)), (2, (1, 1, 2)), (4, (2, 2, 1)), (4, (4, 1, 1)))
PER_ATOM = "id c_c c_co c_cn c_d[*]"
GLOBALS = ["c_dip[1]", "c_dip[2]", "c_dip[3]", "c_vol", "c_volo", "c_cd[1]", "c_cd[2]", "c_cd[3]",
           "c_e", "pe", "vol", "lx", "ly", "lz"]

OBSERVE = """compute c all nvalchemi/atom coordination
compute co all nvalchemi/atom coordination_owned
compute cn all nvalchemi/atom coordination_none
compute d all nvalchemi/atom descriptor 20
compute dip all nvalchemi/global dipole 3
compute vol all nvalchemi/global volume
compute volo all nvalchemi/global volume_owned
compute cd all nvalchemi/global cell_diagonal 3
compute e all nvalchemi/global energy
thermo_style custom step pe c_e c_vol
thermo_modify norm no
"""


def run(args, workdir, label, nranks, grid, data, model, keywords=""):
    text = input_head(f"read_data {data}", f"pair_style nvalchemi {model}{keywords}\npair_coeff * * Ar Ar",
                      comm=decomposition(grid, False)[0]) + OBSERVE
    text += snapshot_commands(STEPS, PER_ATOM, GLOBALS)
    snapshots, log = run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, STEPS)
    results = {}
    for step, (atoms, values) in snapshots.items():
        results[step] = {"coordination": atoms[:, 1], "coordination_owned": atoms[:, 2],
                         "coordination_none": atoms[:, 3], "descriptor": atoms[:, 4:24],
                         **{g: values[i:i + 1] for i, g in enumerate(GLOBALS)}}
    spec = re.search(r"^effective spec:\n(\{\n.*?\n\})\n", log, re.DOTALL | re.MULTILINE).group(1)
    return results, spec


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True, help="lj_probe.pt from spec_models.py")
    parser.add_argument("--tol", type=float, default=1e-10)
    args = parser.parse_args()

    check = Checks(60)

    with tempfile.TemporaryDirectory(prefix="nvalchemi-spec-") as workdir:
        data = make_system(args.lmp, args.mpirun, "ortho", "bulk", workdir)
        reference, spec_text = run(args, workdir, "np1", 1, (1, 1, 1), data, args.model)
        for nranks, grid in GRIDS[1:]:
            label = f"np{nranks}_{'x'.join(map(str, grid))}"
            tested, _ = run(args, workdir, label, nranks, grid, data, args.model)
            for step in STEPS:
                for key, value in tested[step].items():
                    d = relative_difference(value, reference[step][key])
                    check(f"{label} step {step} {key} vs np1", d, args.tol)

        for step in STEPS:
            r = reference[step]
            for key in ("coordination_owned", "coordination_none"):
                d = relative_difference(r[key], r["coordination"])
                check(f"step {step} {key} vs coordination", d, 1e-12, parity=False)
            for a, b in (("c_vol", "vol"), ("c_volo", "vol"), ("c_e", "pe"), ("c_cd[1]", "lx"),
                         ("c_cd[2]", "ly"), ("c_cd[3]", "lz")):
                d = relative_difference(r[a], r[b])
                check(f"step {step} {a} vs {b}", d, 1e-12, parity=False)

        # wrong specs must give wrong numbers on 2 ranks
        for keywords, key in ((" output dipole per_graph none", "c_dip[1]"),
                              (" output coordination per_node owned_only", "coordination")):
            wrong, _ = run(args, workdir, "wrong" + keywords.split()[1], 2, (1, 1, 2), data, args.model, keywords)
            d = relative_difference(wrong[0][key], reference[0][key])
            check.expect(d > 1e-3, f"wrong spec '{keywords.strip()}' changes {key} by {d:.3e} (more than 1e-3)")

        # round trip: the printed effective spec, as a full spec in a model's metadata
        full_spec = json.loads(spec_text)
        roundtrip_model = os.path.join(workdir, "lj_probe_full_spec.pt")
        save_model(Probe(), roundtrip_model, cutoff=2.5, species=[18], units="lj", spec=full_spec)
        direct, _ = run(args, workdir, "direct_np2", 2, (1, 1, 2), data, args.model)
        again, spec_again = run(args, workdir, "roundtrip_np2", 2, (1, 1, 2), data, roundtrip_model)
        check.expect(spec_again == spec_text, "round trip: the printed spec is unchanged")
        for step in STEPS:
            for key in direct[step]:
                d = float(np.max(np.abs(again[step][key] - direct[step][key])))
                check(f"round trip step {step} {key} (must be bit-identical)", d, 0.0)

    check.exit_on_failure()


if __name__ == "__main__":
    main()
