"""Message passing across ranks: the 3-layer SchNet-style reference model (models/schnet.py)
in halo mode layerwise (exchange ops between layers) or deep (ghost shell of 3 cutoffs), or a
model given by --model in the halo mode --mode names (local, layerwise, deep or gp).

After `run 0`, energy, every atom's force, the global virial and per-atom energies must equal
(a) the plain-PyTorch oracle (the saved model evaluated in one process on the whole periodic
cell, schnet.reference, whose forces are autograd of a single-process energy) and (b) the same
model on 1 rank (in the halo mode --single-mode names, if given), to --tol relative. With
--steps N it also runs N NVE steps (model overlaid on lj/cut, so atoms keep their distance) on
1 rank and on the tested ranks, and compares positions (to --trajectory-tol).
"""

import argparse
import json
import os
import tempfile

# The oracle must be bitwise reproducible: MKL otherwise picks its GEMM code path and thread
# count by machine load, which moved this model's energy by 1.7e-12 relative between runs.
os.environ["MKL_DYNAMIC"] = "FALSE"
os.environ["MKL_CBWR"] = "COMPATIBLE"

import importlib.util

import numpy as np

from harness import (Checks, content_key, decomposition, input_head, kept_arrays, make_system, relative_difference,
                     run_snapshots, snapshot_commands)

DUMP_COLUMNS = "id type xu yu zu fx fy fz c_pe"
GLOBALS = ["pe", "c_vir[1]", "c_vir[2]", "c_vir[3]", "c_vir[4]", "c_vir[5]", "c_vir[6]", "vol",
           "lx", "ly", "lz", "xy", "xz", "yz"]

OBSERVE = """compute pe all pe/atom
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[*]
thermo_modify norm no
"""


def model_file(args):
    if args.model:
        return args.model
    return args.layerwise_model if args.mode == "layerwise" else args.deep_model


def lammps_run(args, workdir, label, nranks, grid, tiled, data, steps, with_lj, static_shapes=False,
               mode=None, model=None):
    model = model or model_file(args)
    # a model given by --model runs in the halo mode --mode names (or `mode`), whatever its spec says
    keywords = f" halo {mode or args.mode}" if args.model else ""
    if static_shapes:
        keywords += " static_shapes yes"
    if with_lj:
        pair = (f"pair_style hybrid/overlay nvalchemi {model}{keywords} lj/cut 2.5\n"
                "pair_coeff * * nvalchemi Ar Ar\npair_coeff * * lj/cut 1.0 1.0")
    else:
        pair = f"pair_style nvalchemi {model}{keywords}\npair_coeff * * Ar Ar"
    comm, balance = decomposition(grid, tiled)
    text = input_head(f"read_data {data}", pair, comm=comm, balance=balance) + OBSERVE
    text += snapshot_commands(steps, DUMP_COLUMNS, GLOBALS)
    snaps, log = run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, steps)
    return snaps, log


def unpack(snapshot):
    atoms, g = snapshot
    lx, ly, lz, xy, xz, yz = g[8:14]
    return {"types": atoms[:, 1].astype(int), "positions": atoms[:, 2:5], "forces": atoms[:, 5:8],
            "atomic_energies": atoms[:, 8], "energy": g[0:1], "virial": g[1:7] * g[7],
            "cell": np.array([[lx, 0, 0], [xy, ly, 0], [xz, yz, lz]])}


def oracle_key(*parts):
    """content_key of `parts` and of what else the oracle's numbers depend on: this file, the
    reference model's code, the package's periodic oracle and the installed torch."""
    code = [importlib.util.find_spec(name).origin for name in ("schnet", "torch", "nvalchemi_lammps")]
    code = [code[0], os.path.join(os.path.dirname(code[1]), "version.py"),
            os.path.join(os.path.dirname(code[2]), "periodic.py")]
    return content_key(os.path.abspath(__file__), *code, *parts)


def evaluate_oracle(model_path, positions, cell):
    """Energy, forces, virial and per-atom energies of the saved model evaluated in one process on
    the whole periodic cell (schnet.reference, forces by autograd of a single-process energy)."""
    import torch
    import nvalchemi_lammps.ops  # noqa: F401  (single-process torch.ops.nvalchemi)
    import schnet

    torch.set_num_threads(1)
    model = torch.jit.load(model_path)
    x = torch.tensor(positions, dtype=torch.float64)
    numbers = torch.full((x.shape[0],), 18, dtype=torch.int64)
    energy, forces, virial, energies = schnet.reference(model, x, numbers, torch.tensor(cell, dtype=torch.float64))
    return {"energy": energy.numpy().reshape(1), "forces": forces.detach().numpy(),
            "virial": virial.detach().numpy(), "atomic_energies": energies.numpy()}


def oracle(model_path, state):
    """The plain-PyTorch oracle of `state`, kept in the reference cache (the tests of one model
    and system share it; torch is imported only where it is evaluated)."""
    return kept_arrays(oracle_key("oracle", model_path, state["positions"], state["cell"]),
                       lambda: evaluate_oracle(model_path, state["positions"], state["cell"]))


def finite_difference_forces(model_path, state, count, h=1e-5):
    """-dE/dx by central differences of the single-process energy, for `count` force components
    (picked at random, seeded): (the picks, the forces), kept in the reference cache."""
    rng = np.random.default_rng(7)
    picks = [(int(rng.integers(len(state["positions"]))), int(rng.integers(3))) for _ in range(count)]

    def differences():
        forces = []
        for atom, dim in picks:
            plus, minus = state["positions"].copy(), state["positions"].copy()
            plus[atom, dim] += h
            minus[atom, dim] -= h
            de = (evaluate_oracle(model_path, plus, state["cell"])["energy"][0] -
                  evaluate_oracle(model_path, minus, state["cell"])["energy"][0])
            forces.append(-de / (2 * h))
        return {"forces": np.array(forces)}

    key = oracle_key("finite differences", model_path, state["positions"], state["cell"], picks, h)
    return picks, kept_arrays(key, differences)["forces"]


class _kept:
    def __init__(self, path):
        os.makedirs(path)
        self.path = path

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--layerwise-model", required=True)
    parser.add_argument("--deep-model", required=True)
    parser.add_argument("--mode", choices=("local", "layerwise", "deep", "gp"), required=True,
                        help="halo mode: picks the SchNet build, or is given as 'halo <mode>' to --model")
    parser.add_argument("--single-mode", choices=("local", "layerwise", "deep", "gp"), default=None,
                        help="the halo mode of the 1-rank runs (default: --mode), with --model")
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--grid", type=int, nargs=3, default=(0, 0, 0))
    parser.add_argument("--tiled", action="store_true", help="comm_style tiled with balance rcb")
    parser.add_argument("--box", choices=("ortho", "tri"), default="ortho")
    parser.add_argument("--system", choices=("bulk", "slab"), default="bulk")
    parser.add_argument("--steps", type=int, default=0, help="NVE trajectory length to compare (0: none)")
    parser.add_argument("--tol", type=float, default=1e-10)
    parser.add_argument("--trajectory-tol", type=float, default=1e-8)
    parser.add_argument("--trajectory-reference", choices=("same", "layerwise"), default="same",
                        help="the 1-rank trajectory: the model run, or its layerwise build (the same "
                             "weights, which skips the deep ghost shell of a whole cell on one rank)")
    parser.add_argument("--keep", default="", help="work in this (new) directory and keep it")
    parser.add_argument("--model", default="", help="run this model instead of the SchNet build of --mode")
    parser.add_argument("--oracle-model", default="",
                        help="the TorchScript model the oracle evaluates (default: the model run); "
                             "for an AOTInductor .pt2, its TorchScript twin with the same weights")
    parser.add_argument("--fd", type=int, default=0,
                        help="also compare this many force components with finite differences")
    parser.add_argument("--static-shapes", action="store_true",
                        help="run the tested (not the 1-rank) jobs with static_shapes yes: padded inputs")
    parser.add_argument("--no-virial-oracle", action="store_true",
                        help="compare the virial with the 1-rank run only (the oracle's virial "
                             "comes from edge vectors, which misses a model's use of positions)")
    args = parser.parse_args()

    check = Checks(55)

    label = f"{args.mode}.np{args.np}" + (".tiled" if args.tiled else "")
    with (tempfile.TemporaryDirectory(prefix="nvalchemi-mp-") if not args.keep else _kept(args.keep)) as workdir:
        data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
        single_snaps, _ = lammps_run(args, workdir, "np1", 1, (1, 1, 1), False, data, [0], False,
                                     mode=args.single_mode)
        tested_snaps, log = lammps_run(args, workdir, label, args.np, args.grid, args.tiled, data, [0], False,
                                       args.static_shapes)
        single, tested = unpack(single_snaps[0]), unpack(tested_snaps[0])
        oracle_model = args.oracle_model or model_file(args)
        reference = oracle(oracle_model, single)
        for key in ("energy", "forces", "virial", "atomic_energies"):
            if key != "virial" or not args.no_virial_oracle:
                check(f"{key} vs plain-PyTorch oracle", relative_difference(tested[key], reference[key]), args.tol)
            check(f"{key} vs nvalchemi np1", relative_difference(tested[key], single[key]), args.tol)
        if args.fd:
            picks, fd = finite_difference_forces(oracle_model, single, args.fd)
            lammps = np.array([tested["forces"][atom, dim] for atom, dim in picks])
            check(f"{args.fd} forces on {args.np} ranks vs finite differences", relative_difference(lammps, fd), 1e-7, parity=False)
        # one rank folds the periodic images onto the cell's atoms; several raise the ghost cutoff
        said = ("halo mode deep on one rank folds periodic images" if args.np == 1 else
                "halo mode deep raises the ghost cutoff")
        if args.mode == "deep" and said not in log:
            check.failures.append(f"the deep run's log lacks '{said}'")
        if args.static_shapes and "pair_style nvalchemi: static shapes:" not in log:
            check.failures.append("the run with static shapes did not report its capacities")
        if args.steps:
            steps = [0, args.steps]
            reference_model = args.layerwise_model if args.trajectory_reference == "layerwise" else None
            one, _ = lammps_run(args, workdir, "traj.np1", 1, (1, 1, 1), False, data, steps, True,
                                mode=args.single_mode, model=reference_model)
            many, _ = lammps_run(args, workdir, f"traj.{label}", args.np, args.grid, args.tiled, data, steps, True,
                                 args.static_shapes)
            a, b = unpack(one[args.steps]), unpack(many[args.steps])
            moved = float(np.max(np.abs(a["positions"] - unpack(one[0])["positions"])))
            print(f"largest displacement over {args.steps} steps: {moved:.3f}")
            check(f"positions after {args.steps} steps, np{args.np} vs np1 (max abs)",
                  float(np.max(np.abs(b["positions"] - a["positions"]))), args.trajectory_tol)

    print("PARITY " + json.dumps({"test": "mp", "mode": args.mode, "np": args.np, "grid": args.grid,
                                  "tiled": args.tiled, "box": args.box, "system": args.system,
                                  "max_relative_difference": check.worst}))
    check.exit_on_failure()


if __name__ == "__main__":
    main()
