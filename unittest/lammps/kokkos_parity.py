"""The variants that keep the rank graph where the model runs against pair_style nvalchemi's
host-built graph: pair_style nvalchemi/kk (KOKKOS package, OpenMP backend), and pair_style
nvalchemi ... graph device (--graph-device: the graph built with LibTorch's operators, here on the
CPU device).

One case = a model (--kind: the LJ model, or the SchNet-style model in halo mode layerwise or
deep) with the pair style's --keywords (halo gp, static_shapes yes), a rank count with its
processor grid (or comm_style tiled), a box and a number of OpenMP threads. The reference is
the plain style on 1 rank; the same input then runs on --np ranks under `-k on t T -sf kk` (pair_style nvalchemi/kk, atom_style atomic/kk, fix nve/kk: the input
unchanged), or with the variant --style names in the input (/kk/host, /kk/device). After
run 0 and after --steps NVE steps, energy, the global virial, every atom's position and force,
per-atom energies and per-atom virials must agree to --tol relative.

With --graph-device the tested run is the plain style with `graph device` on --np ranks and the
reference the plain style with `graph host` on the same ranks and grid (the same graph, only the
forces summed in another order).
"""

import argparse
import json
import os
import sys
import tempfile

# Runs with 2 threads must be reproducible under load: MKL otherwise picks its GEMM code path and
# thread count by machine load (as mp_parity.py says); once, on a loaded machine, the model's
# first evaluation moved forces by 2.6e-10 relative while step 5 agreed to 5e-15.
os.environ["MKL_DYNAMIC"] = "FALSE"
os.environ["MKL_CBWR"] = "COMPATIBLE"

from harness import (Checks, decomposition, input_head, kokkos_switches, make_system, ran_nvalchemi_kk,
                     relative_difference, run_snapshots, snapshot_commands)

DUMP_COLUMNS = "id xu yu zu fx fy fz c_pe c_st[1] c_st[2] c_st[3] c_st[4] c_st[5] c_st[6]"
GLOBALS = ["pe", "c_vir[1]", "c_vir[2]", "c_vir[3]", "c_vir[4]", "c_vir[5]", "c_vir[6]"]

OBSERVE = """compute pe all pe/atom
compute st all stress/atom NULL
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[*]
thermo_modify norm no
"""

# per dump row: positions, forces, per-atom energy, per-atom virial (dump columns after id)
QUANTITIES = {"positions": slice(1, 4), "forces": slice(4, 7), "atomic_energies": slice(7, 8),
              "atomic_virials": slice(8, 14)}


def run(args, workdir, label, nranks, grid, tiled, threads, data, graph=""):
    comm, balance = decomposition(grid, tiled)
    # the Kokkos run takes the variant from the suffix switch, or names it (--style)
    style = args.style if threads else ""
    pair = (f"pair_style nvalchemi{style} {getattr(args, f'{args.kind}_model')} {args.keywords}{graph}\n"
            "pair_coeff * * Ar Ar")
    text = input_head(f"read_data {data}", pair, comm=comm, balance=balance) + OBSERVE
    steps = [0, args.steps] if args.steps else [0]
    text += snapshot_commands(steps, DUMP_COLUMNS, GLOBALS)
    switches = kokkos_switches(threads) if threads else None
    return run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, steps,
                         lmp_args=switches)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--lj-model", required=True)
    parser.add_argument("--layerwise-model", required=True)
    parser.add_argument("--deep-model", required=True)
    parser.add_argument("--kind", choices=("lj", "layerwise", "deep"), required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--grid", type=int, nargs=3, default=(0, 0, 0))
    parser.add_argument("--tiled", action="store_true", help="comm_style tiled with balance rcb")
    parser.add_argument("--box", choices=("ortho", "tri"), default="ortho")
    parser.add_argument("--system", choices=("bulk", "slab"), default="bulk")
    parser.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank of the /kk run")
    parser.add_argument("--steps", type=int, default=20, help="NVE steps after run 0 (0: run 0 only)")
    parser.add_argument("--style", choices=("/kk", "/kk/host", "/kk/device"), default="",
                        help="name this variant in the Kokkos run's input (default: nvalchemi, made /kk by -sf kk)")
    parser.add_argument("--keywords", default="", help="pair_style keywords of both runs")
    parser.add_argument("--graph-device", action="store_true",
                        help="test pair_style nvalchemi ... graph device against graph host on --np ranks")
    parser.add_argument("--tol", type=float, default=1e-10)
    args = parser.parse_args()

    check = Checks(60)
    with tempfile.TemporaryDirectory(prefix="nvalchemi-kk-") as workdir:
        data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
        if args.graph_device:
            plain, _ = run(args, workdir, f"host.np{args.np}", args.np, args.grid, args.tiled, 0, data,
                           " graph host")
            kk, log = run(args, workdir, f"device.np{args.np}", args.np, args.grid, args.tiled, 0, data,
                          " graph device")
        else:
            plain, _ = run(args, workdir, "plain.np1", 1, (1, 1, 1), False, 0, data)
            label = f"kk.np{args.np}.t{args.threads}"
            kk, log = run(args, workdir, label, args.np, args.grid, args.tiled, args.threads, data)
        if args.graph_device and "graph device:" not in log:
            check.failures.append("the graph device run did not say it builds the graph on the device")
        if not args.graph_device and not ran_nvalchemi_kk(log):
            check.failures.append("the -sf kk run did not use pair_style nvalchemi/kk (no such neighbor list)")
        for step in plain:
            (a, ga), (b, gb) = plain[step], kk[step]
            check(f"step {step}: energy", relative_difference(gb[0:1], ga[0:1]), args.tol)
            check(f"step {step}: virial", relative_difference(gb[1:7], ga[1:7]), args.tol)
            for name, columns in QUANTITIES.items():
                check(f"step {step}: {name}", relative_difference(b[:, columns], a[:, columns]), args.tol)

    print("PARITY " + json.dumps({"test": "graph_device" if args.graph_device else "kokkos", "kind": args.kind, "np": args.np, "grid": args.grid,
                                  "tiled": args.tiled, "box": args.box, "system": args.system,
                                  "threads": args.threads,
                                  "style": "graph device" if args.graph_device else args.style or "-sf kk",
                                  "keywords": args.keywords,
                                  "max_relative_difference": check.worst}))
    check.exit_on_failure()


if __name__ == "__main__":
    sys.exit(main())
