"""Integration overhead of the framework exporters: a LAMMPS step of pair_style nvalchemi against
the bare model's forward and backward (energy, forces, stress) on the same periodic cell in the
framework's own code, for a MACE or a NequIP model of production size (random weights, H and O,
r_max 4.5 A, float64) or the pretrained SevenNet-0 (r_max 5 A, float32 as SevenNet runs it), halo
layerwise, on 1 and 2 ranks, over system size.

    build/venv-mace/bin/python bench/integration_overhead.py --framework mace --lmp build/lammps/lmp
    build/venv-nequip/bin/python bench/integration_overhead.py --framework nequip --lmp build/lammps/lmp
    build/venv-sevenn/bin/python bench/integration_overhead.py --framework sevenn --lmp build/lammps/lmp
        [--baseline GIT_REV] [--sites 6 10 17] [--ranks 1 2] [--steps 3] [--jit-optimize] [--compiled]

--baseline also exports the same model with the python/ package of an earlier commit (before
layers updated owned rows only) and times it in the same run: before and after; --jit-optimize
also runs each export with TorchScript's graph executor optimizing (pair_style keyword
jit_optimize yes) against the default (no), in the same run; --compiled also exports the model
as an AOTInductor package (.pt2, compiled for this CPU) and times it in the same run. Run in the framework's venv
(tools/install-export-venvs.sh). Prints one JSON object per (export, atoms, ranks): ms per step
(LAMMPS "Loop time", LibTorch on one thread per rank), peak resident memory (largest rank,
/usr/bin/time), the bare model's ms on one thread, the overhead (step x ranks / bare: CPU time
against CPU time), rows per rank (owned + ghost), the energy after `run 0` (equal for every
export and rank count) and where the step goes (fix nvalchemi/dd's phase times, as
bench/phase_times.py reads them). CPU timings of a shared machine: compare within one run.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from ase import Atoms
from ase.data import atomic_masses

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
from harness import (atoms_per_rank, last_run_rows, peak_rss_mb, peak_rss_wrapper, run_lammps,  # noqa: E402
                     seconds_per_step)
from phase_times import PHASES  # noqa: E402

ELEMENTS = ("H", "O")
R_MAX = 4.5
SPACING = 2.0  # A between lattice sites: ~47 neighbours within r_max


def mace_model():
    import mace  # noqa: F401  (before e3nn)
    from e3nn import o3
    from mace import modules
    torch.manual_seed(20261204)
    torch.set_default_dtype(torch.float64)
    block = modules.interaction_classes["RealAgnosticResidualInteractionBlock"]
    return modules.ScaleShiftMACE(
        r_max=R_MAX, num_bessel=8, num_polynomial_cutoff=5, max_ell=3, interaction_cls=block,
        interaction_cls_first=block, num_interactions=2, num_elements=2,
        hidden_irreps=o3.Irreps("32x0e + 32x1o"), MLP_irreps=o3.Irreps("16x0e"),
        atomic_energies=np.array([-13.6, -432.1]), avg_num_neighbors=40.0, atomic_numbers=[1, 8],
        correlation=3, gate=torch.nn.functional.silu, atomic_inter_scale=1.0, atomic_inter_shift=0.0).eval()


def nequip_model():
    from nequip.model import NequIPGNNModel
    from nequip.utils.global_state import set_global_state
    set_global_state()
    return NequIPGNNModel(num_layers=3, l_max=2, num_features=32, radial_mlp_width=32, seed=20261204,
                          model_dtype="float64", r_max=R_MAX, type_names=list(ELEMENTS), avg_num_neighbors=40.0,
                          per_type_energy_scales={"H": 1.0, "O": 1.0},
                          per_type_energy_shifts={"H": -13.6, "O": -432.1}).eval()


def bare_evaluation(framework, source):
    """A function of an ase.Atoms timing the framework's own forward and backward (energy, forces,
    stress) on the whole periodic cell, the graph built beforehand; returns seconds."""
    torch.set_num_threads(1)
    if framework == "mace":
        from mace.calculators import MACECalculator
        calc = MACECalculator(model_paths=source, device="cpu", default_dtype="float64")
        model = calc.models[0]

        def evaluate(atoms):
            batch = calc._atoms_to_batch(atoms).to_dict()
            start = time.perf_counter()
            out = model(batch, compute_stress=True)
            assert out["forces"] is not None
            return time.perf_counter() - start
        return evaluate
    if framework == "sevenn":
        from sevenn.atom_graph_data import AtomGraphData
        from sevenn.calculator import SevenNetCalculator
        from sevenn.train.dataload import unlabeled_atoms_to_graph
        calc = SevenNetCalculator(source, device="cpu")

        def evaluate(atoms):
            data = AtomGraphData.from_numpy_dict(unlabeled_atoms_to_graph(atoms, calc.cutoff))
            start = time.perf_counter()
            out = calc.model(data)
            assert out["inferred_force"] is not None and out["inferred_stress"] is not None
            return time.perf_counter() - start
        return evaluate
    from nequip.data.transforms import ChemicalSpeciesToAtomTypeMapper, NeighborListTransform
    from nequip.integrations.ase import NequIPCalculator
    model = torch.load(source, weights_only=False).eval()
    calc = NequIPCalculator(model=model, device="cpu", transforms=[
        ChemicalSpeciesToAtomTypeMapper(model_type_names=list(ELEMENTS),
                                        chemical_species_to_atom_type_map={e: e for e in ELEMENTS}),
        NeighborListTransform(r_max=R_MAX)])

    def evaluate(atoms):
        data = calc.atoms_to_data(atoms)
        start = time.perf_counter()
        calc.call_model(data)
        return time.perf_counter() - start
    return evaluate


def make_atoms(sites: int) -> Atoms:
    """sites^3 atoms, 60% H and 40% O, on a jittered simple-cubic lattice of spacing SPACING."""
    rng = np.random.default_rng(20261204)
    grid = np.stack(np.meshgrid(*[np.arange(sites)] * 3, indexing="ij"), -1).reshape(-1, 3).astype(float)
    frac = (grid + 0.5 + rng.uniform(-0.1, 0.1, grid.shape)) / sites
    cell = np.diag([SPACING * sites] * 3)
    numbers = rng.choice([1, 8], len(grid), p=[0.6, 0.4])
    return Atoms(numbers=numbers, positions=frac @ cell, cell=cell, pbc=True)


def write_data(atoms: Atoms, path: str) -> None:
    length = float(atoms.cell[0, 0])
    with open(path, "w") as f:
        f.write(f"H O for integration_overhead\n\n{len(atoms)} atoms\n2 atom types\n\n0 {length!r} xlo xhi\n"
                f"0 {length!r} ylo yhi\n0 {length!r} zlo zhi\n\nMasses\n\n1 {atomic_masses[1]}\n2 {atomic_masses[8]}\n\n"
                "Atoms # atomic\n\n")
        for i, (z, r) in enumerate(zip(atoms.numbers, atoms.positions)):
            f.write(f"{i + 1} {1 if z == 1 else 2} {float(r[0])!r} {float(r[1])!r} {float(r[2])!r}\n")


EXPORT = """import sys, torch
from nvalchemi_lammps import {framework}_export as exporter
print(exporter.__file__, file=sys.stderr)
model = {load}
exporter.export(model, sys.argv[2], **({arguments}))
"""


def export(framework, source, output, python_path=None):
    """Export `source` with the exporter of this checkout, or of the python/ tree at python_path."""
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path + os.pathsep + env.get("PYTHONPATH", "")
    arguments = {"nequip": "{'units': 'metal'}", "sevenn": "{'dtype': torch.float32}"}.get(framework, "{}")
    load = "exporter.load(sys.argv[1])" if framework == "sevenn" else "torch.load(sys.argv[1], weights_only=False)"
    proc = subprocess.run([sys.executable, "-c", EXPORT.format(framework=framework, arguments=arguments, load=load),
                           source, output], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"export of {source} failed:\n{proc.stderr[-3000:]}")
    used = [line for line in proc.stderr.splitlines() if line.endswith(f"{framework}_export.py")]
    if python_path and not (used and used[0].startswith(python_path)):
        sys.exit(f"the baseline export did not use {python_path}: {used}")


# also bench/weak_scaling.py's run ({processors}: a "processors" line or nothing; {pair_args}: the
# pair style's keywords)
INPUT = """units metal
atom_style atomic
{processors}read_data {data}
pair_style nvalchemi {model}{pair_args}
pair_coeff * * {elements}
velocity all create 300 4928459 loop geom
timestep 0.0005
fix 1 all nve
fix dd all nvalchemi/dd
thermo_style custom step pe {columns}
thermo_modify norm no format float %.15g
thermo 1
run 0
run {steps}
"""


def step(args, model, data, ranks, workdir, pair_args=""):
    rundir = tempfile.mkdtemp(dir=workdir)
    columns = " ".join(f"f_dd[{i}]" for i in PHASES.values())
    with open(os.path.join(rundir, "in.bench"), "w") as f:
        f.write(INPUT.format(processors="", data=data, model=model, pair_args=pair_args,
                             elements=" ".join(ELEMENTS), steps=args.steps, columns=columns))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.bench", rundir, timeout=3600,
                      wrapper=peak_rss_wrapper(rundir))
    if proc.returncode != 0:
        sys.exit(f"LAMMPS failed on {model}, {ranks} ranks:\n{proc.stdout[-3000:]}")
    out = proc.stdout
    nlocal, nghost = atoms_per_rank(out)
    energy = float(re.findall(r"^\s+0\s+(\S+)", out, re.M)[0])
    # fix nvalchemi/dd's phase times (maximum over ranks), mean over the steps of the last run
    rows = [row[2:] for row in last_run_rows(out)]
    phases = {f"{name}_ms": 1e3 * sum(r[k] for r in rows) / len(rows) for k, name in enumerate(PHASES)}
    return seconds_per_step(out), nlocal + nghost, energy, {**phases, "peak_rss_mb": peak_rss_mb(rundir)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", choices=("mace", "nequip", "sevenn"), required=True)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--baseline", default=None, help="a git revision whose python/ exports the 'before' model")
    parser.add_argument("--sites", type=int, nargs="+", default=[6, 10, 17], help="lattice sites per side")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--jit-optimize", action="store_true",
                        help="also time each export with the pair_style keyword jit_optimize yes")
    parser.add_argument("--compiled", action="store_true", help="also time an AOTInductor package (.pt2)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    workdir = tempfile.mkdtemp(prefix="integration_overhead.")
    if args.framework == "sevenn":
        from sevenn.util import pretrained_name_to_path
        source = pretrained_name_to_path("7net-0")
    else:
        source = os.path.join(workdir, f"{args.framework}.model")
        torch.save(mace_model() if args.framework == "mace" else nequip_model(), source)
    exports = {"owned rows": os.path.join(workdir, "owned_rows.pt")}
    export(args.framework, source, exports["owned rows"])
    if args.compiled:
        exports["compiled (.pt2)"] = os.path.join(workdir, "compiled.pt2")
        export(args.framework, source, exports["compiled (.pt2)"])
    if args.baseline:
        tree = os.path.join(workdir, "baseline")
        os.makedirs(tree)
        archive = subprocess.run(["git", "-C", os.path.join(HERE, ".."), "archive", args.baseline, "python"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        exports[f"every row ({args.baseline})"] = os.path.join(workdir, "every_row.pt")
        export(args.framework, source, exports[f"every row ({args.baseline})"], os.path.join(tree, "python"))
    bare = bare_evaluation(args.framework, source)
    for sites in args.sites:
        atoms = make_atoms(sites)
        data = os.path.join(workdir, f"system_{sites}.data")
        write_data(atoms, data)
        bare(atoms)  # warm-up
        bare_s = min(bare(atoms) for _ in range(2))
        runs = [(name, model, "") for name, model in exports.items()]
        if args.jit_optimize:
            runs += [(f"{name}, jit_optimize yes", model, " jit_optimize yes") for name, model in exports.items()]
        for name, model, pair_args in runs:
            for ranks in args.ranks:
                seconds, rows, energy, phases = step(args, model, data, ranks, workdir, pair_args)
                print(json.dumps({"bench": "integration_overhead", "framework": args.framework, "export": name,
                                  "atoms": len(atoms), "ranks": ranks, "ms_per_step": 1e3 * seconds,
                                  "bare_ms": 1e3 * bare_s, "overhead": seconds * ranks / bare_s,
                                  "rows_per_rank": rows, "energy_step0": energy, **phases}), flush=True)


if __name__ == "__main__":
    main()
