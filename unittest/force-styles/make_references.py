"""Writes the inputs and references of LAMMPS' own force-style harness (unittest/force-styles,
test_pair_style) for pair_style nvalchemi: data.nvalchemi and one YAML file per model.

  atomic-pair-nvalchemi_lj.yaml              the LJ model (lj_ar.pt)
  atomic-pair-nvalchemi_lj_model_forces.yaml the LJ model returning its own forces (forces model)
      both with the references test_pair_style -g writes for LAMMPS' lj/cut 2.5 on the same system:
      only the pair lines differ
  atomic-pair-nvalchemi_schnet_layerwise.yaml
  atomic-pair-nvalchemi_schnet_deep.yaml     the SchNet-style model (halo modes layerwise, deep)
      with references from the plain-PyTorch oracle (schnet.reference on the whole periodic cell):
      energy, virial and forces at the data file's positions and after the harness' `run 4` of
      fix nve, which this script integrates itself (velocity Verlet, the oracle's forces)

The YAMLs follow the idioms of LAMMPS' own ML styles (pace, mliap, snap): newton pair pinned on in
the pre-commands, an empty `extract`. Models are named relative to $LAMMPS_POTENTIALS, which the
ctest sets to the build's potentials folder. The system is an fcc crystal displaced by 0.1 lattice
units, so that no force or stress component is a near-cancellation: the harness judges each
component by its own relative error.

    python unittest/force-styles/make_references.py --lmp build/lammps/lmp \
        --test-pair-style build/lammps/test_pair_style --potentials build/nvalchemi/potentials
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

os.environ["MKL_DYNAMIC"] = "FALSE"
os.environ["MKL_CBWR"] = "COMPATIBLE"

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))  # the reference models
import nvalchemi_lammps.ops  # noqa: E402,F401  (single-process torch.ops.nvalchemi for the oracle)
import schnet  # noqa: E402

SETUP = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
set type 1 type/fraction 2 0.3 4321
mass * 1.0
displace_atoms all random 0.1 0.1 0.1 8765 units lattice
velocity all create 1.5 87287 loop geom
write_data {out}
"""

# the LAMMPS style whose test_pair_style -g output is the LJ references
LJ_CUT = """---
lammps_version: ""
date_generated: ""
epsilon: 5e-13
skip_tests:
prerequisites: ! |
  atom atomic
  pair lj/cut
pre_commands: ! ""
post_commands: ! ""
input_file: in.nvalchemi
pair_style: lj/cut 2.5
pair_coeff: ! |
  * * 1.0 1.0
extract: ! ""
natoms: 256
...
"""

# The harness judges every force and stress component by its own relative error. After the run one
# SchNet force component is 2e-5 of a typical one, where LAMMPS and the oracle differ by 1e-16
# absolute: 5.6e-12 relative, above the 5 x 5e-13 the LJ files allow for run forces.
MESSAGE_PASSING_EPSILON = "2e-12"
PINNED_NEWTON = "pre_commands: |\n  variable newton_pair delete\n  variable newton_pair index on\n"
TIMESTEP = 0.005  # in.nvalchemi
RUN_STEPS = 4     # test_pair_style's run_lammps()


def nvalchemi_yaml(lj_yaml, pair_style, values=None, epsilon=None):
    """The lj/cut YAML with the pair lines of pair_style nvalchemi (and, if given, other values)."""
    text = lj_yaml.replace("  pair lj/cut\n", "  pair nvalchemi\n")
    if epsilon:
        text = text.replace("epsilon: 5e-13\n", f"epsilon: {epsilon}\n")
    text = text.replace('pre_commands: ""\n', PINNED_NEWTON)
    text = text.replace("pair_style: lj/cut 2.5\n", f"pair_style: nvalchemi {pair_style}\n")
    text = text.replace("pair_coeff: |\n  * * 1.0 1.0\n", "pair_coeff: |\n  * * Ar Ar\n")
    for key, block in (values or {}).items():
        text, count = re.subn(rf"^{key}:.*?(?=^\w|^\.\.\.)", block, text, count=1, flags=re.MULTILINE | re.DOTALL)
        if count != 1:
            sys.exit(f"make_references: no '{key}' in the generated YAML")
    return text


def read_data(path):
    """Positions, velocities (sorted by ID), masses per type, types and the orthogonal cell."""
    lines = open(path).read().splitlines()
    box = [list(map(float, line.split()[:2])) for line in lines if line.endswith(("xlo xhi", "ylo yhi", "zlo zhi"))]

    def section(name):
        start = next(i for i, line in enumerate(lines) if line.startswith(name)) + 2
        rows = []
        for line in lines[start:]:
            if not line.strip():
                break
            rows.append([float(w) for w in line.split()])
        return np.array(sorted(rows, key=lambda r: r[0]))

    atoms, velocities, masses = section("Atoms"), section("Velocities"), section("Masses")
    cell = np.diag([hi - lo for lo, hi in box])
    mass = dict(zip(masses[:, 0].astype(int), masses[:, 1]))
    return atoms[:, 2:5], velocities[:, 1:4], np.array([mass[int(t)] for t in atoms[:, 1]]), cell


def oracle(model, positions, cell):
    numbers = torch.full((positions.shape[0],), 18, dtype=torch.int64)
    energy, forces, virial, _ = schnet.reference(model, torch.tensor(positions), numbers, torch.tensor(cell))
    return float(energy), forces.detach().numpy(), virial.detach().numpy()


def blocks(prefix, energy, virial, forces):
    stress = "  " + " ".join(f"{v:23.16e}" for v in virial)
    rows = "\n".join(f"{i + 1:5d} {f[0]:23.16e} {f[1]:23.16e} {f[2]:23.16e}" for i, f in enumerate(forces))
    return {f"{prefix}_vdwl": f"{prefix}_vdwl: {energy!r}\n",
            f"{prefix}_stress": f"{prefix}_stress: |-\n{stress}\n",
            f"{prefix}_forces": f"{prefix}_forces: |2\n{rows}\n"}


def message_passing_values(model_path, data):
    """init_* at the data file's positions and run_* after fix nve's RUN_STEPS steps."""
    torch.set_num_threads(1)
    model = torch.jit.load(model_path)
    x, v, m, cell = read_data(data)
    energy, forces, virial = oracle(model, x, cell)
    values = blocks("init", energy, virial, forces)
    dtfm = (0.5 * TIMESTEP / m)[:, None]  # fix nve's arithmetic, in its order
    for _ in range(RUN_STEPS):
        v = v + dtfm * forces
        x = x + TIMESTEP * v
        energy, forces, virial = oracle(model, x, cell)
        v = v + dtfm * forces
    values.update(blocks("run", energy, virial, forces))
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--test-pair-style", required=True)
    parser.add_argument("--potentials", required=True, help="the folder of the built reference models")
    parser.add_argument("--out", default=HERE)
    args = parser.parse_args()
    data = os.path.join(args.out, "data.nvalchemi")
    with tempfile.TemporaryDirectory(prefix="nvalchemi-force-styles-") as work:
        with open(os.path.join(work, "in.setup"), "w") as f:
            f.write(SETUP.format(out=data))
        subprocess.run([os.path.abspath(args.lmp), "-in", "in.setup", "-log", "none"], cwd=work, check=True,
                       capture_output=True)
        if args.out != HERE:
            subprocess.run(["cp", os.path.join(HERE, "in.nvalchemi"), args.out], check=True)
        with open(os.path.join(work, "lj_cut.yaml"), "w") as f:
            f.write(LJ_CUT)
        subprocess.run([os.path.abspath(args.test_pair_style), "lj_cut.yaml", "-d", args.out, "-g", "generated.yaml"],
                       cwd=work, check=True, capture_output=True)
        lj_yaml = open(os.path.join(work, "generated.yaml")).read()
    outputs = {
        "lj": nvalchemi_yaml(lj_yaml, "lj_ar.pt"),
        "lj_model_forces": nvalchemi_yaml(lj_yaml, "lj_ar_forces.pt forces model"),
    }
    for mode in ("layerwise", "deep"):
        values = message_passing_values(os.path.join(args.potentials, f"schnet_{mode}.pt"), data)
        outputs[f"schnet_{mode}"] = nvalchemi_yaml(lj_yaml, f"schnet_{mode}.pt", values, MESSAGE_PASSING_EPSILON)
    for name, text in outputs.items():
        path = os.path.join(args.out, f"atomic-pair-nvalchemi_{name}.yaml")
        with open(path, "w") as f:
            f.write(text.replace("tags: generated\n", "tags: nvalchemi\n"))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
