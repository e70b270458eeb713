"""oneMKL's VML first call under threads (PyTorch issue 188792): fresh processes with two
LibTorch threads against one. Not a test.

PyTorch's CPU wheels up to 2.14.1 bundle oneMKL 2024.2, whose VML unary functions (sin, exp,
sqrt, ...) choose their kernel on their first call without a lock: when that call runs on
several threads at once, one thread's chunk can come from a low-accuracy kernel. Every LAMMPS
rank is a fresh process, so pair_style nvalchemi calls each such function once on one thread
before LibTorch runs a model on more (nvalchemi_runner.cpp). This benchmark counts, over --runs
fresh processes each:

  lammps   pair_style nvalchemi MODEL threads 2, run 0: forces against the threads 1 run
  python   (--python, the control) the same file evaluated by torch in a fresh Python process
           with torch.set_num_threads(2) and no warm-up: forces against one thread

a run "differs" when its forces differ from the single-threaded ones by more than --tol
relative. Writes one JSON line per arm (runs, differing, largest difference) to --out.

    build/venv-sevenn/bin/python bench/vml_first_call.py --lmp build/lammps/lmp \\
        --model build/nvalchemi/unittest/sevenn/sevenn0_layerwise_float64.pt --elements Si --runs 65 --python
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unittest", "lammps"))
from harness import relative_difference  # noqa: E402

DATA = """diamond cell of {element}, {n}x{n}x{n}, rattled

{atoms_count} atoms
1 atom types

0 {a2!r} xlo xhi
0 {a2!r} ylo yhi
0 {a2!r} zlo zhi

Masses

1 28.0855

Atoms # atomic

{atoms}
"""

INPUT = """units metal
atom_style atomic
atom_modify map yes
read_data {data}
pair_style nvalchemi {model} threads {threads}
pair_coeff * * {element}
dump f all custom 1 {dump} id fx fy fz
dump_modify f sort id format float %.17g
run 0
"""

PYTHON = """
import sys, numpy as np, torch
torch.set_num_threads(int(sys.argv[3]))
from nvalchemi_lammps.model_file import LoadedModel
from nvalchemi_lammps.check import evaluate
from nvalchemi_lammps.periodic import periodic_edges
from ase.data import atomic_numbers
model = LoadedModel(sys.argv[1])
data = np.load(sys.argv[2])
dtype = torch.float64 if model.metadata()["dtype"] == "float64" else torch.float32
x = torch.tensor(data["positions"], dtype=torch.float64)
cell = torch.tensor(data["cell"], dtype=torch.float64)
numbers = torch.full((x.shape[0],), atomic_numbers[sys.argv[5]], dtype=torch.int64)
s, r, shifts = periodic_edges(x, cell, float(model.metadata()["cutoff"]))
_, forces = evaluate(model, x, torch.arange(x.shape[0]), s, r, x[r] - x[s] - shifts, numbers, cell,
                     x.shape[0], dtype)
np.save(sys.argv[4], forces.numpy())
"""


def diamond(n, a=5.43, seed=7):
    """The 8 n^3 atoms of a diamond n x n x n supercell, rattled by 0.05 A."""
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0],
                      [.25, .25, .25], [.25, .75, .75], [.75, .25, .75], [.75, .75, .25]])
    cells = np.array([(i, j, k) for i in range(n) for j in range(n) for k in range(n)])
    positions = ((cells[:, None, :] + basis[None, :, :]).reshape(-1, 3)) * a
    positions += np.random.default_rng(seed).normal(0.0, 0.05, positions.shape)
    return positions % (n * a), np.diag([n * a] * 3)


def lammps_forces(args, workdir, data, threads, label):
    dump = os.path.join(workdir, f"{label}.dump")
    text = INPUT.format(data=data, model=args.model, threads=threads, element=args.elements, dump=dump)
    path = os.path.join(workdir, f"{label}.in")
    with open(path, "w") as f:
        f.write(text)
    subprocess.run([args.lmp, "-in", path, "-log", "none", "-screen", "none"], check=True, cwd=workdir,
                   env=dict(os.environ, OMP_NUM_THREADS="1"))
    rows = np.loadtxt(dump, skiprows=9)
    return rows[np.argsort(rows[:, 0]), 1:4]


def python_forces(args, workdir, arrays, threads, label):
    out = os.path.join(workdir, f"{label}.npy")
    subprocess.run([sys.executable, "-c", PYTHON, args.model, arrays, str(threads), out, args.elements],
                   check=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    return np.load(out)


def count(arm, runs, reference, forces_of, tol):
    differences = [relative_difference(forces_of(run), reference) for run in range(runs)]
    differing = sum(1 for d in differences if not d <= tol)
    largest = float("nan") if any(d != d for d in differences) else max(differences)
    result = {"arm": arm, "runs": runs, "differing": differing, "largest_relative_difference": largest,
              "tol": tol}
    print(json.dumps(result), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--model", required=True, help="a float64 model of --elements (TorchScript or package)")
    parser.add_argument("--elements", default="Si", help="the one element of the diamond cell")
    parser.add_argument("--runs", type=int, default=65)
    # ATen splits an elementwise op over threads only above 32768 elements: the cell must be large
    # enough that the model's transcendental functions of its edges are split
    parser.add_argument("--cells", type=int, default=3, help="the diamond supercell's cells per side")
    parser.add_argument("--tol", type=float, default=1e-12)
    parser.add_argument("--python", action="store_true", help="also the control: torch in fresh Python processes")
    parser.add_argument("--out", default="vml_first_call.jsonl")
    args = parser.parse_args()

    positions, cell = diamond(args.cells)
    results = []
    with tempfile.TemporaryDirectory(prefix="nvalchemi-vml-") as workdir:
        data = os.path.join(workdir, "system.data")
        atoms = "\n".join(f"{i + 1} 1 {float(x)!r} {float(y)!r} {float(z)!r}"
                          for i, (x, y, z) in enumerate(positions))
        with open(data, "w") as f:
            f.write(DATA.format(element=args.elements, n=args.cells, atoms_count=len(positions),
                                a2=float(cell[0, 0]), atoms=atoms))
        reference = lammps_forces(args, workdir, data, 1, "one_thread")
        results.append(count("lammps", args.runs, reference,
                             lambda run: lammps_forces(args, workdir, data, 2, f"run{run}"), args.tol))
        if args.python:
            arrays = os.path.join(workdir, "system.npz")
            np.savez(arrays, positions=positions, cell=cell)
            reference = python_forces(args, workdir, arrays, 1, "py_one_thread")
            results.append(count("python", args.runs, reference,
                                 lambda run: python_forces(args, workdir, arrays, 2, f"py{run}"), args.tol))
    with open(args.out, "a") as f:
        for result in results:
            f.write(json.dumps(dict(result, model=os.path.basename(args.model), atoms=len(positions))) + "\n")


if __name__ == "__main__":
    main()
