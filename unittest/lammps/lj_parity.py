"""Parity of pair_style nvalchemi (Lennard-Jones TorchScript model) with LAMMPS' own lj/cut.

One test case = one system, processor grid and variant. It runs three LAMMPS jobs on the same
system: lj/cut on 1 rank (the independent oracle), nvalchemi on 1 rank, and nvalchemi on --np
ranks with --grid; each does `run 0` and then 100 NVE steps. At both points it compares total
energy, the global virial, every atom's position and force, per-atom energies and per-atom
virials, and checks that the per-atom values sum to the globals. Relative difference of an
array = max |a - b| / max |b|; the test fails above --tol (1e-10).
"""

import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

from harness import decomposition, input_head, make_system, relative_difference, run_snapshots, snapshot_commands, worse

STEPS = (0, 100)
DUMP_COLUMNS = "id xu yu zu fx fy fz c_pe c_st[1] c_st[2] c_st[3] c_st[4] c_st[5] c_st[6]"

PAIR = {
    "lj/cut": "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\n",
    "nvalchemi": "pair_style nvalchemi {model}\npair_coeff * * Ar Ar\n",
    "nofdotr": "pair_style nvalchemi {model}\npair_coeff * * Ar Ar\npair_modify nofdotr\n",
    # nvalchemi handles type 1 only; lj/cut the pairs with type 2
    "hybrid-null": ("pair_style hybrid/overlay nvalchemi {model} lj/cut 2.5\n"
                    "pair_coeff * * nvalchemi Ar NULL\n"
                    "pair_coeff 1 2 lj/cut 1.0 1.0\npair_coeff 2 2 lj/cut 1.0 1.0\n"),
    "plugin": "plugin load {plugin}\npair_style nvalchemi {model}\npair_coeff * * Ar Ar\n",
    # the three force strategies on the LJ model that also returns its own forces and energy
    "forces-node_energy": "pair_style nvalchemi {forces_model} forces node_energy\npair_coeff * * Ar Ar\n",
    "forces-global_energy": "pair_style nvalchemi {forces_model} forces global_energy\npair_coeff * * Ar Ar\n",
    "forces-model": "pair_style nvalchemi {forces_model} forces model\npair_coeff * * Ar Ar\n",
    # the toolkit's stress (-W/V) instead of a virial, and a spec in the toolkit's own layout
    "toolkit-stress-nofdotr": "pair_style nvalchemi {stress_model}\npair_coeff * * Ar Ar\npair_modify nofdotr\n",
    # inputs padded to capacities agreed over ranks, and two LibTorch threads per rank
    "static-shapes": "pair_style nvalchemi {model} static_shapes yes\npair_coeff * * Ar Ar\n",
    "threads": "pair_style nvalchemi {model} threads 2 device cpu\npair_coeff * * Ar Ar\n",
    "forces-model-nofdotr": ("pair_style nvalchemi {forces_model} forces model\npair_coeff * * Ar Ar\n"
                             "pair_modify nofdotr\n"),
    # the LJ model whose pair energies come from the fused kernel library, named twice (loaded once)
    "fused": ("pair_style nvalchemi {fused_model} library {kernels} library {kernels}\n"
              "pair_coeff * * Ar Ar\n"),
}

# variants whose tested run must equal the plain-PyTorch model on 1 rank more tightly than --tol
SINGLE_RANK_TOL = {"fused": 1e-12}

OBSERVE = """compute pe all pe/atom
compute st all stress/atom NULL virial
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[*] vol
thermo_modify norm no
"""

GLOBALS = ["pe", "c_vir[1]", "c_vir[2]", "c_vir[3]", "c_vir[4]", "c_vir[5]", "c_vir[6]", "vol"]


def run_case(args, label, pair_variant, nranks, grid, workdir, data):
    pair = PAIR[pair_variant].format(model=args.model, plugin=args.plugin, forces_model=args.forces_model,
                                     stress_model=args.stress_model, fused_model=args.fused_model,
                                     kernels=args.kernels)
    text = input_head(f"read_data {data}", pair, comm=decomposition(grid, False)[0]) + OBSERVE
    text += snapshot_commands(STEPS, DUMP_COLUMNS, GLOBALS)
    snapshots, log = run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, STEPS)
    results = {}
    for step, (atoms, glob) in snapshots.items():
        results[step] = {"ids": atoms[:, 0], "positions": atoms[:, 1:4], "forces": atoms[:, 4:7],
                         "atomic_energies": atoms[:, 7], "atomic_virials": atoms[:, 8:14],
                         "energy": glob[0:1], "virial": glob[1:7], "volume": glob[7]}
    return results, log


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--grid", type=int, nargs=3, required=True)
    parser.add_argument("--box", choices=("ortho", "tri"), default="ortho")
    parser.add_argument("--system", choices=("bulk", "slab"), default="bulk")
    parser.add_argument("--variant", choices=tuple(v for v in PAIR if v != "lj/cut"), default="nvalchemi")
    parser.add_argument("--plugin", default="")
    parser.add_argument("--forces-model", default="", help="LJ model written with --model-forces")
    parser.add_argument("--stress-model", default="", help="LJ model returning 'stress' (spec_models.py)")
    parser.add_argument("--fused-model", default="", help="LJ model written with --fused")
    parser.add_argument("--kernels", default="", help="the operator library nvalchemi_kernels.so")
    parser.add_argument("--tol", type=float, default=1e-10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nvalchemi-parity-") as workdir:
        data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
        oracle, _ = run_case(args, "lj_cut.np1", "lj/cut", 1, (1, 1, 1), workdir, data)
        single, _ = run_case(args, "nvalchemi.np1", "nvalchemi", 1, (1, 1, 1), workdir, data)
        tested, log = run_case(args, f"tested.{args.variant}.np{args.np}", args.variant, args.np,
                               args.grid, workdir, data)

    if args.system == "slab" and not re.search(r"Nlocal:.*\s0 min", log):
        sys.exit("FAIL: the slab system was meant to leave some subdomains without atoms:\n" + log[-3000:])
    if args.variant == "plugin" and ("Overriding built-in pair style nvalchemi from plugin" not in log
                                     or "pair_style nvalchemi (plugin)" not in log):
        sys.exit("FAIL: the run did not use the plugin's pair style:\n" + log[-3000:])
    if args.variant == "threads" and "pair_style nvalchemi: device cpu (as requested)" not in log:
        sys.exit("FAIL: the run did not report the device it was asked for:\n" + log[-3000:])
    if args.variant == "fused" and not re.search(r"operator library .*nvalchemi_kernels\.so loaded\n.*"
                                                  r"loaded already \(once per process\).*"
                                                  r"nvalchemi_kernels::lj_edge_energy +registered", log, re.DOTALL):
        sys.exit("FAIL: the run did not load the kernel library once and list its operator:\n" + log[-3000:])
    if args.variant == "static-shapes" and "pair_style nvalchemi: static shapes:" not in log:
        sys.exit("FAIL: the run did not report its static-shape capacities:\n" + log[-3000:])

    worst = 0.0
    failures = []
    report = {}
    for step in STEPS:
        t = tested[step]
        if t["ids"].size == 0 or not np.array_equal(t["ids"], oracle[step]["ids"]):
            sys.exit(f"FAIL: step {step}: the runs hold different atoms")
        checks = {}
        for ref_name, ref in (("lj/cut", oracle[step]), ("nvalchemi.np1", single[step])):
            for key in ("energy", "virial", "positions", "forces", "atomic_energies", "atomic_virials"):
                checks[f"{key} vs {ref_name}"] = relative_difference(t[key], ref[key])
        # per-atom values add up to the globals (lj units: pressure * volume = virial)
        checks["sum atomic_energies vs energy"] = relative_difference(t["atomic_energies"].sum(keepdims=True), t["energy"])
        checks["sum atomic_virials vs -virial"] = relative_difference(t["atomic_virials"].sum(axis=0), -t["virial"] * t["volume"])
        for name, value in checks.items():
            worst = worse(worst, value)
            tol = SINGLE_RANK_TOL.get(args.variant, args.tol) if name.endswith("vs nvalchemi.np1") else args.tol
            status = "ok" if value <= tol else "FAIL"
            print(f"step {step:3d}  {name:40s} {value:10.3e}  {status}")
            if not value <= tol:
                failures.append(f"step {step}: {name} = {value:.3e} (tolerance {tol})")
        report[step] = checks
    print("PARITY " + json.dumps({"np": args.np, "grid": args.grid, "box": args.box, "system": args.system,
                                  "variant": args.variant, "max_relative_difference": worst}))
    if failures:
        sys.exit("FAIL: relative differences above tolerance {}:\n  {}".format(args.tol, "\n  ".join(failures)))


if __name__ == "__main__":
    main()
