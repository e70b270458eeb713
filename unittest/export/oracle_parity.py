"""A MACE, NequIP, Allegro or SevenNet model exported by python/nvalchemi_lammps/mace_export.py,
nequip_export.py or sevenn_export.py, run by pair_style nvalchemi on N ranks, against the
framework's own ASE calculator on the whole periodic cell (the oracle: mace-torch, nequip or
sevenn evaluating the model it built, never this package) and against the same export on 1 rank.

With --dropin STYLE, the N-rank run is an input as written for the framework's own pair style
(mace, e3gnn, allegro: the settings their documentation asks for, their pair_style and pair_coeff
lines naming the file) with only those two lines changed, on LAMMPS' own processor grid.

After `run 0`: energy, every atom's force and the stress tensor. float64: 1e-10 relative to both;
float32: the ASE calculator in float32 and the 1-rank run to --tol (default 1e-5). SevenNet's
calculator runs in float32 as shipped; its float64 oracle is the same calculator code on the
model cast to float64 (a deep copy, as the exporter casts) with the graph kept in float64
(sevenn_float64_calculator). With --kokkos
the N-rank run is pair_style nvalchemi/kk (-k on t 1 -sf kk). Runs in the framework's own
virtual environment (tools/install-export-venvs.sh).
"""

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile

import numpy as np
from ase import Atoms
from ase.data import atomic_masses, atomic_numbers

from harness import (content_key, decomposition, input_head, kept_arrays, kokkos_switches, ran_nvalchemi_kk,
                     relative_difference, run_snapshots, snapshot_commands, worse)

NKTV2P = 1.6021765e6  # LAMMPS metal units: bar per eV/A^3
DUMP_COLUMNS = "id type xu yu zu fx fy fz"
GLOBALS = ["pe", "c_p[1]", "c_p[2]", "c_p[3]", "c_p[4]", "c_p[5]", "c_p[6]"]

OBSERVE = """compute p all pressure NULL virial
thermo_style custom step pe c_p[*]
"""


def make_atoms(box: str, system: str, elements) -> Atoms:
    """The elements on a jittered simple-cubic lattice (spacing 1.9 A, no pair closer than
    ~1.1 A). bulk: 3x3x3 sites filling the cell; slab: the same sites in a cell twice as long in
    x, so that on a 4x1x1 grid two ranks own no atoms. si8, si64: diamond silicon's cubic cell
    (a = 5.43 A) and its 2x2x2 supercell, rattled by 0.05 A: cells far smaller than the ghost
    shell of a deep model's layers (SevenNet-0: 5 layers of 5 A)."""
    rng = np.random.default_rng(20261201)
    if system in ("si8", "si64"):
        from ase.build import bulk
        atoms = bulk("Si", "diamond", a=5.43, cubic=True)
        if system == "si64":
            atoms = atoms.repeat(2)
        atoms.positions += rng.normal(0.0, 0.05, atoms.positions.shape)
        return atoms
    spacing, sites = 1.9, 3
    grid = np.array([(i, j, k) for i in range(sites) for j in range(sites) for k in range(sites)], float)
    frac = (grid + 0.5 + rng.uniform(-0.1, 0.1, grid.shape)) / sites
    length = spacing * sites
    cell = np.diag([length, length, length])
    if box == "tri":
        cell[1, 0], cell[2, 0], cell[2, 1] = 0.6, -0.4, 0.5
    positions = frac @ cell
    if system == "slab":
        cell[0] *= 2.0
    weights = [0.6, 0.4] if len(elements) == 2 else None
    numbers = rng.choice([atomic_numbers[e] for e in elements], len(positions), p=weights)
    return Atoms(numbers=numbers, positions=positions, cell=cell, pbc=True)


def write_data(atoms: Atoms, elements, path: str) -> None:
    (lx, _, _), (xy, ly, _), (xz, yz, lz) = atoms.cell[:].tolist()
    types = {atomic_numbers[e]: t + 1 for t, e in enumerate(elements)}
    masses = "".join(f"{t + 1} {atomic_masses[atomic_numbers[e]]}\n" for t, e in enumerate(elements))
    with open(path, "w") as f:
        f.write(f"{' '.join(elements)} for oracle_parity\n\n{len(atoms)} atoms\n{len(elements)} atom types\n\n"
                f"0 {lx!r} xlo xhi\n0 {ly!r} ylo yhi\n0 {lz!r} zlo zhi\n{xy!r} {xz!r} {yz!r} xy xz yz\n\n"
                f"Masses\n\n{masses}\nAtoms # atomic\n\n")
        for i, (z, r) in enumerate(zip(atoms.numbers, atoms.positions)):
            f.write(f"{i + 1} {types[int(z)]} {float(r[0])!r} {float(r[1])!r} {float(r[2])!r}\n")


def lammps(args, workdir, label, nranks, grid, tiled, data, kokkos=False):
    comm, balance = decomposition(grid, tiled)
    text = input_head(f"read_data {data}", f"pair_style nvalchemi {args.model}\npair_coeff * * {' '.join(args.elements)}",
                      units="metal", comm=comm, balance=balance, neighbor=False, dt=None, integrate=False)
    return observe(args, workdir, label, nranks, text, kokkos)


def observe(args, workdir, label, nranks, text, kokkos=False):
    """Run `text` (the system and its pair style) to step 0 on `nranks` ranks: the energy, the
    forces, the stress and the positions there."""
    text += OBSERVE + snapshot_commands([0], DUMP_COLUMNS, GLOBALS)
    snaps, output = run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, [0],
                                  lmp_args=kokkos_switches(1) if kokkos else None)
    if kokkos and not ran_nvalchemi_kk(output):
        sys.exit("FAIL: the -sf kk run did not use pair_style nvalchemi/kk")
    rows, g = snaps[0]
    # LAMMPS' pressure tensor (virial part, bar) -> ASE's stress (eV/A^3, Voigt xx yy zz yz xz xy)
    pxx, pyy, pzz, pxy, pxz, pyz = g[1:7]
    stress = -np.array([pxx, pyy, pzz, pyz, pxz, pxy]) / NKTV2P
    return {"energy": g[0:1], "forces": rows[:, 5:8], "stress": stress, "positions": rows[:, 2:5]}


# Inputs as written for the frameworks' pair styles (their documentation's settings and lines)
FRAMEWORK_INPUTS = {
    "mace": """units metal
atom_style atomic
atom_modify map yes
newton on
read_data {data}
pair_style mace no_domain_decomposition
pair_coeff * * {model} {elements}
""",
    "e3gnn": """units metal
atom_style atomic
read_data {data}
pair_style e3gnn
pair_coeff * * {model} {elements}
""",
    "allegro": """units metal
atom_style atomic
newton on
read_data {data}
pair_style allegro
pair_coeff * * {model} {elements}
""",
}


def dropin_input(style, data, model, elements):
    """FRAMEWORK_INPUTS[style] for `model` with its pair_style and pair_coeff lines changed to
    pair_style nvalchemi's, and nothing else: exits the test if any other line differs."""
    theirs = FRAMEWORK_INPUTS[style].format(data=data, model=model, elements=" ".join(elements))
    ours = [f"pair_style nvalchemi {model}" if line.startswith("pair_style ") else
            f"pair_coeff * * {' '.join(elements)}" if line.startswith("pair_coeff ") else line
            for line in theirs.splitlines()]
    changed = [(a, b) for a, b in zip(theirs.splitlines(), ours) if a != b]
    if len(changed) != 2:
        sys.exit(f"FAIL: the {style} input changed in {len(changed)} lines, not 2: {changed}")
    for a, b in changed:
        print(f"changed: {a!r} -> {b!r}")
    return "\n".join(ours) + "\n"


def lammps_dropin(args, workdir, label, nranks, data):
    """The N-rank run of the framework's own input with two lines changed (dropin_input)."""
    return observe(args, workdir, label, nranks, dropin_input(args.dropin, data, args.model, args.elements))


def sevenn_float64_calculator(source: str, modal):
    """SevenNet's ASE calculator, float64 throughout: the model built from the checkpoint, deep-
    copied and cast to float64, its species one-hot (built in float32 by SevenNet) cast to the
    model's dtype by a forward hook, and the calculator's graph converted with SevenNet's own
    dtype_correct to float64 instead of float32."""
    import copy
    import torch
    from ase.calculators.calculator import Calculator, all_changes
    from sevenn.atom_graph_data import AtomGraphData
    from sevenn.calculator import SevenNetCalculator
    from sevenn.train.dataload import unlabeled_atoms_to_graph
    from sevenn.util import dtype_correct, load_checkpoint

    model = load_checkpoint(source).build_model(enable_cueq=False, enable_flash=False, enable_oeq=False)
    model = copy.deepcopy(model).to(torch.float64)

    def float64_onehot(module, inputs, data):
        for key in (module.key_output, module.key_additional_output):
            if key is not None:
                data[key] = data[key].to(torch.float64)
        return data

    model._modules["onehot_idx_to_onehot"].register_forward_hook(float64_onehot)

    class Float64Calculator(SevenNetCalculator):
        def calculate(self, atoms=None, properties=None, system_changes=all_changes):
            Calculator.calculate(self, atoms, properties, system_changes)
            graph = unlabeled_atoms_to_graph(atoms, self.cutoff, with_shift=False)
            data = AtomGraphData(**{k: dtype_correct(v, torch.float64) for k, v in graph.items()})
            if self.modal:
                data["data_modality"] = self.modal
            self.results = self.output_to_results(self.model(data))

    return Float64Calculator(model, file_type="model_instance", device="cpu", modal=modal)


def calculator(args):
    """The framework's ASE calculator on the model file it saved."""
    import torch
    torch.set_num_threads(1)
    if args.framework == "sevenn":
        if not args.float32:
            return sevenn_float64_calculator(args.source, args.modal)
        from sevenn.calculator import SevenNetCalculator
        return SevenNetCalculator(args.source, device="cpu", modal=args.modal)
    if args.framework == "mace":
        import mace  # noqa: F401  (before e3nn)
        from mace.calculators import MACECalculator
        return MACECalculator(model_paths=args.source, device="cpu",
                              default_dtype="float32" if args.float32 else "float64")
    from nequip.data.transforms import ChemicalSpeciesToAtomTypeMapper, NeighborListTransform
    from nequip.integrations.ase import NequIPCalculator
    from nequip.utils.global_state import set_global_state
    set_global_state()  # what nequip's own tools do first: float64 positions, no TF32
    if args.source.endswith((".ckpt", ".nequip.zip")):  # what nequip-train and nequip-package write
        from nequip.model.saved_models.load_utils import load_saved_model
        model = load_saved_model(args.source).eval()
    else:
        model = torch.load(args.source, weights_only=False).eval()
    names = list(model.type_names)
    return NequIPCalculator(model=model, device="cpu", transforms=[
        ChemicalSpeciesToAtomTypeMapper(model_type_names=names,
                                        chemical_species_to_atom_type_map={n: n for n in names}),
        NeighborListTransform(r_max=float(model.metadata["r_max"] if isinstance(model.metadata, dict)
                                          else model.metadata()["r_max"]))])


# the packages whose versions an oracle's numbers depend on, beside its model file
ORACLE_PACKAGES = {"mace": ("torch", "e3nn", "mace-torch"), "nequip": ("torch", "e3nn", "nequip", "nequip-allegro"),
                   "sevenn": ("torch", "e3nn", "sevenn")}


def oracle(args, atoms):
    """The framework's ASE calculator's energy, forces and stress of `atoms`, kept in the reference
    cache (the tests of one source model and system share it, whatever export and grid they run)."""
    def evaluate():
        calc = calculator(args)
        evaluated = atoms.copy()
        evaluated.calc = calc
        return {"energy": np.array([evaluated.get_potential_energy()]), "forces": evaluated.get_forces(),
                "stress": evaluated.get_stress(voigt=True)}

    versions = [importlib.metadata.version(package) for package in ORACLE_PACKAGES[args.framework]]
    source = os.path.abspath(args.source) if os.path.exists(args.source) else args.source  # or a pretrained name
    key = content_key(os.path.abspath(__file__), args.framework, versions, source, args.modal, args.float32,
                      atoms.numbers, atoms.positions, atoms.cell[:])
    return kept_arrays(key, evaluate)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True, help="the exported model (.pt)")
    parser.add_argument("--framework", choices=("mace", "nequip", "sevenn"), required=True)
    parser.add_argument("--source", required=True,
                        help="the framework's model it was exported from (mace-torch .model, nequip torch.save, "
                             "SevenNet checkpoint or pretrained name)")
    parser.add_argument("--modal", default=None, help="SevenNet: the fidelity of a multi-fidelity model")
    parser.add_argument("--elements", nargs="+", default=["H", "O"], help="the atom types' elements")
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--grid", type=int, nargs=3, default=(0, 0, 0))
    parser.add_argument("--tiled", action="store_true", help="comm_style tiled with balance rcb")
    parser.add_argument("--box", choices=("ortho", "tri"), default="ortho")
    parser.add_argument("--system", choices=("bulk", "slab", "si8", "si64"), default="bulk")
    parser.add_argument("--float32", action="store_true", help="the export is float32")
    parser.add_argument("--kokkos", action="store_true", help="the N-rank run under -k on t 1 -sf kk")
    parser.add_argument("--tol", type=float, default=None)
    parser.add_argument("--dropin", choices=sorted(FRAMEWORK_INPUTS),
                        help="the N-rank run: the input of this framework pair style, two lines changed")
    args = parser.parse_args()
    tol = args.tol if args.tol is not None else (1e-5 if args.float32 else 1e-10)

    failures, worst = [], 0.0

    def check(name, value):
        nonlocal worst
        worst = worse(worst, value)
        ok = value <= tol
        print(f"{name:45s} {value:10.3e}  {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{name} = {value:.3e} > {tol:.0e}")

    atoms = make_atoms(args.box, args.system, args.elements)
    with tempfile.TemporaryDirectory(prefix="nvalchemi-export-") as workdir:
        data = os.path.join(workdir, "system.data")
        write_data(atoms, args.elements, data)
        single = lammps(args, workdir, "np1", 1, (1, 1, 1), False, data)
        if args.dropin:
            tested = lammps_dropin(args, workdir, f"dropin.np{args.np}", args.np, data)
        elif args.np == 1 and not args.tiled and not args.kokkos:
            tested = single  # the same run
        else:
            tested = lammps(args, workdir, f"tested.np{args.np}", args.np, args.grid, args.tiled, data,
                            args.kokkos)
        reference = oracle(args, atoms)
        for key in ("energy", "forces", "stress"):
            check(f"{key} vs {args.framework}'s ASE calculator", relative_difference(tested[key], reference[key]))
            if tested is not single:
                check(f"{key} vs nvalchemi np1", relative_difference(tested[key], single[key]))

    print("PARITY " + json.dumps({"test": args.framework, "model": os.path.basename(args.model), "np": args.np,
                                  "grid": args.grid, "tiled": args.tiled, "box": args.box,
                                  "system": args.system, "kokkos": args.kokkos,
                                  "max_relative_difference": worst}))
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
