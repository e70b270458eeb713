"""Other frameworks' deployed files that pair_style nvalchemi reads as they are, asked for what
they cannot give: each run on 2 ranks must stop with a LAMMPS error that says why and what to do,
never run with a silent wrong answer. The files are the nequip fixture's (nequip_models.py):
nequip-compile's packages for pair_style nequip (refused: its forces are the whole graph's) and
pair_style allegro (not in another halo mode; no per-atom virials), and its TorchScript file.

    python foreign_errors.py --lmp LMP --mpirun MPIRUN --models <nequip fixture dir>
"""

import argparse
import os
import re
import sys
import tempfile

from harness import run_lammps

CU_BOX = """units metal
atom_style atomic
lattice fcc 3.6
region box block 0 3 0 3 0 3
create_box 1 box
create_atoms 1 box
mass 1 63.546
"""

HO_BOX = """units metal
atom_style atomic
region box block 0 6 0 6 0 6
create_box 2 box
create_atoms 1 random 20 7 box overlap 1.0
create_atoms 2 random 10 8 box overlap 1.0
mass 1 1.008
mass 2 15.999
"""

# name: (system, model file, pair_style keywords, pair_coeff elements, more commands, expected error)
CASES = {
    "nequip_target_refused": (
        CU_BOX, "nequip_trained.nequip.pt2", "", "Cu", "run 0",
        r"takes 'pos edge_index atom_types cell edge_cell_shift' \(nequip-compile --target pair_nequip.*"
        r"cannot be limited to a\s+rank's own atoms.*nvalchemi-nequip-export"),
    "allegro_package_halo": (
        CU_BOX, "allegro_trained.nequip.pt2", "halo layerwise", "Cu", "run 0",
        r"is a nequip \(nequip-compile --target pair_allegro\) file, which runs exactly only in\s+halo local"),
    "allegro_package_atom_virials": (
        CU_BOX, "allegro_trained.nequip.pt2", "", "Cu",
        "compute s all stress/atom NULL\ncompute sum all reduce sum c_s[1]\nthermo_style custom step c_sum\nrun 0",
        r"returns no per-atom virials"),
    "nequip_pth_static_shapes": (
        HO_BOX, "nequip.nequip.pth", "static_shapes yes", "H O", "run 0",
        r"runs exactly only in halo deep with 2\s+message-passing layers and without static shapes"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--models", required=True, help="the nequip fixture's directory")
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="foreign_errors") as workdir:
        for name, (system, model, keywords, elements, commands, expected) in CASES.items():
            rundir = os.path.join(workdir, name)
            os.makedirs(rundir)
            with open(os.path.join(rundir, "in.lmp"), "w") as f:
                f.write(f"{system}pair_style nvalchemi {os.path.join(args.models, model)} {keywords}\n"
                        f"pair_coeff * * {elements}\n{commands}\n")
            proc = run_lammps(args.lmp, args.mpirun, 2, "in.lmp", rundir, timeout=120)
            output = proc.stdout + proc.stderr
            if proc.returncode != 0 and re.search(r"ERROR.*" + expected, output, re.DOTALL):
                print(f"{name:32s} ok")
            else:
                failures.append(name)
                print(f"{name:32s} FAIL (exit {proc.returncode}), expected /{expected}/:\n{output[-3000:]}")
    if failures:
        sys.exit(f"FAIL: {', '.join(failures)}")
    print("PASS")


if __name__ == "__main__":
    main()
