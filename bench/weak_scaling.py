"""A weak-scaling model of pair_style nvalchemi for message-passing models: from phase costs
measured here it predicts, for halo modes layerwise, deep and gp, the step time and efficiency
of 1 to 1000 ranks at a fixed number of atoms per rank, for the pretrained SevenNet-0 (float32)
and a MACE model (float64, the one of bench/integration_overhead.py); it checks the prediction
against 1, 2, 4 and 8 ranks on this machine and plots it.

    build/venv-sevenn/bin/python bench/weak_scaling.py measure --framework sevenn --lmp build/lammps/lmp \\
        --out build/bench/weak_scaling
    build/venv-mace/bin/python bench/weak_scaling.py measure --framework mace --lmp build/lammps/lmp \\
        --out build/bench/weak_scaling
    build/venv-mace/bin/python bench/weak_scaling.py plot build/bench/weak_scaling/{sevenn,mace}.json \\
        --png doc/nvalchemi_weak_scaling.png

The model, per rank and step, for a cube of n atoms per rank (side s, number density rho), a
model of L layers, cutoff rc, exchanged feature width W (the spec's exchange_feature_width) and
element size B, LAMMPS' skin d:

* rows with a ghost shell of thickness h hold rho((s + 2h)^3 - s^3) ghosts (LAMMPS' brick
  ghosts: slabs with corners); h = rc + d in halo modes layerwise and gp's graph, L rc + d in
  deep;
* model time = a x (rows whose atoms receive edges) + b x (rows without edges): layerwise n and
  its ghosts; deep n + its ghosts, all with edges (every layer on every row); gp n and the
  (P - 1) n rows of the other ranks. a and b come from the model phase (fix nvalchemi/dd's
  statistic 8) of two one-rank runs of the weak-scaling cube: halo gp (rows: the owned atoms
  alone) gives a, layerwise (the same atoms and their ghost rows) then b. Glue time (statistic
  9: graph, tensors, tally) is c x (n + LAMMPS ghosts), c from the same runs. One-rank layerwise
  runs of larger cubes record how the model's time per atom changes with size (on these CPUs it
  grows: caches), which the model, at one size, leaves out;
* exchange: layerwise 2(L - 1) halo refreshes a step (forward and backward), each 6 swaps of
  the brick pattern, ghosts x W x B bytes in all; a swap to another rank costs lambda + bytes /
  beta, one within the rank bytes / beta_local (beta_local measured: the one-rank exchange
  phase); gp 2(L - 1) all-gathers (forward) and reduce-scatters (backward) of (P - 1) n W B bytes,
  ceil(log2 P) lambda each; deep none inside the model;
* ideal = a x n, the model on the owned atoms alone; efficiency = ideal / step time. The plot
  also draws strong scaling: a system of STRONG_ATOMS split over the ranks (n = atoms / P, the
  measured density).

lambda and beta are the network's latency and bandwidth between nodes (--latency, --bandwidth:
2 us and 10 GB/s by default, an InfiniBand-class link shared by the ranks of a node; stated, not
measured here). The check runs the same per-rank cube on 1, 2, 4 and 8 ranks (grids 1x1x1,
2x1x1, 2x2x1, 2x2x2; the ranks on this machine talk through shared memory, priced as local
copies plus lambda 1 us); 4 and 8 ranks oversubscribe the 2 cores, so their measured step time
is scaled by cores / ranks. measure prints and writes <out>/<framework>.json (--runs-from: fit
and predict again from the runs of such a file, without LAMMPS); plot draws the prediction
(lines) and the measurements (points).
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
from harness import address_space_cap, last_run_rows, run_lammps, seconds_per_step  # noqa: E402
from integration_overhead import INPUT, SPACING, export, mace_model  # noqa: E402

GRIDS = {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2)}
MODES = ("layerwise", "deep", "gp")
SKIN = 2.0  # LAMMPS' default in metal units
# fix nvalchemi/dd statistics read (doc/fix_nvalchemi_dd.rst): ghosts (total), model, glue, exchange
STATS = {"ghosts": 5, "model": 8, "glue": 9, "exchange": 10}

FRAMEWORKS = {
    "sevenn": {"label": "SevenNet-0 (float32)", "elements": ("Si",), "cells": (3, 4, 5), "skip": ("deep",),
               "skip_why": "deep: a 27 A ghost shell; 64 atoms already took 23.6 GB (bench/sevenn_race.py)"},
    "mace": {"label": "MACE, 2 layers, 32x0e+32x1o (float64)", "elements": ("H", "O"), "cells": (6, 8, 10),
             "skip": (), "skip_why": ""},
}


def lattice(framework, cells, grid):
    """(atoms, the cube side per rank): Si diamond, `cells` cubic cells per rank side, for
    SevenNet; for MACE the H/O jittered simple-cubic lattice of bench/integration_overhead.py,
    `cells` sites per rank side."""
    from ase import Atoms
    from ase.build import bulk
    reps = tuple(cells * g for g in grid)
    if framework == "sevenn":
        atoms = bulk("Si", "diamond", a=5.43, cubic=True).repeat(reps)
        atoms.rattle(stdev=0.05, seed=20261205)
        return atoms, 5.43 * cells
    rng = np.random.default_rng(20261205)
    sites = np.stack(np.meshgrid(*[np.arange(r) for r in reps], indexing="ij"), -1).reshape(-1, 3).astype(float)
    positions = (sites + 0.5 + rng.uniform(-0.1, 0.1, sites.shape)) * SPACING
    numbers = rng.choice([1, 8], len(sites), p=[0.6, 0.4])
    atoms = Atoms(numbers=numbers, positions=positions, cell=np.diag(np.array(reps) * SPACING), pbc=True)
    return atoms, SPACING * cells


def write_data(atoms, elements, path):
    from ase.data import atomic_masses, atomic_numbers
    cell = np.diag(atoms.cell)
    types = {atomic_numbers[e]: i + 1 for i, e in enumerate(elements)}
    with open(path, "w") as f:
        f.write(f"weak_scaling\n\n{len(atoms)} atoms\n{len(elements)} atom types\n\n")
        for length, axis in zip(cell, "xyz"):
            f.write(f"0 {float(length)!r} {axis}lo {axis}hi\n")
        f.write("\nMasses\n\n" + "".join(f"{t} {atomic_masses[z]}\n" for z, t in types.items()))
        f.write("\nAtoms # atomic\n\n")
        for i, (z, r) in enumerate(zip(atoms.numbers, atoms.positions)):
            f.write(f"{i + 1} {types[int(z)]} {float(r[0])!r} {float(r[1])!r} {float(r[2])!r}\n")


def export_model(framework, workdir):
    import torch
    if framework == "sevenn":
        from sevenn.util import pretrained_name_to_path
        source = pretrained_name_to_path("7net-0")
    else:
        source = os.path.join(workdir, "mace.model")
        torch.save(mace_model(), source)
    path = os.path.join(workdir, f"{framework}_layerwise.pt")
    export(framework, source, path)
    return path


def measure_one(args, model, framework, cells, ranks, mode, workdir):
    """One LAMMPS run: per-rank cube of `cells`, `ranks` ranks, halo `mode`; the phases of its last
    run (mean over steps; maxima over ranks as fix nvalchemi/dd reports them)."""
    grid = GRIDS[ranks]
    atoms, side = lattice(framework, cells, grid)
    rundir = tempfile.mkdtemp(dir=workdir)
    atoms.wrap()
    write_data(atoms, FRAMEWORKS[framework]["elements"], os.path.join(rundir, "system.data"))
    columns = " ".join(f"f_dd[{i}]" for i in STATS.values())
    with open(os.path.join(rundir, "in.weak"), "w") as f:
        f.write(INPUT.format(processors=f"processors {' '.join(map(str, grid))}\n", data="system.data", model=model,
                             pair_args=f" halo {mode}", elements=" ".join(FRAMEWORKS[framework]["elements"]),
                             columns=columns, steps=args.steps))
    proc = run_lammps(args.lmp, args.mpirun, ranks, "in.weak", rundir, timeout=3600,
                      wrapper=address_space_cap(0.75, ranks))
    if proc.returncode != 0:
        errors = re.findall(r"^ERROR.*$", proc.stdout + proc.stderr, re.M)
        print(f"weak_scaling: LAMMPS failed ({framework}, {mode}, {ranks} ranks): "
              f"{errors[0] if errors else proc.stderr[-500:]}", file=sys.stderr)
        return None
    rows = np.array([row[2:] for row in last_run_rows(proc.stdout)])
    phases = dict(zip(STATS, rows.mean(axis=0)))
    return {"framework": framework, "mode": mode, "ranks": ranks, "atoms_per_rank": len(atoms) // ranks,
            "side": side, "ghosts_per_rank": phases.pop("ghosts") / ranks,
            **{f"{k}_s": v for k, v in phases.items()}, "step_s": seconds_per_step(proc.stdout)}


def ghosts(n, side, shell):
    """Brick ghosts of a cube of n atoms and side `side` under a ghost shell `shell` thick."""
    return n / side ** 3 * ((side + 2 * shell) ** 3 - side ** 3)


def predict(fit, mode, ranks, latency, bandwidth, atoms_per_rank=None):
    """Per-rank step time (s) and its parts for `ranks` ranks (a cubic-ish grid) in halo `mode`,
    with the measured atoms per rank or `atoms_per_rank` (the same density)."""
    n, side, L = fit["atoms_per_rank"], fit["side"], fit["layers"]
    if atoms_per_rank is not None:
        n, side = atoms_per_rank, side * (atoms_per_rank / n) ** (1 / 3)
    if mode == "deep":
        g = ghosts(n, side, L * fit["cutoff"] + SKIN)
        model, rows, exchange = fit["a"] * (n + g), n + g, 0.0
        glue = fit["c"] * (n + g)
    else:
        g = ghosts(n, side, fit["cutoff"] + SKIN)
        glue = fit["c"] * (n + g)
        bytes_row = fit["width"] * fit["element_bytes"]
        calls = 2 * (L - 1)
        if mode == "layerwise":
            model, rows = fit["a"] * n + fit["b"] * g, n + g
            remote = sum(2 for p in grid_of(ranks) if p > 1)
            # the ghosts' bytes split evenly over the 6 swaps, `remote` of them to other ranks
            seconds_per_byte = remote / 6 / bandwidth + (1 - remote / 6) * fit["local_s_per_byte"]
            per_call = remote * latency + g * bytes_row * seconds_per_byte
        else:
            others = (ranks - 1) * n
            model, rows = fit["a"] * n + fit["b"] * others, ranks * n
            per_call = (math.ceil(math.log2(ranks)) * latency + others * bytes_row / bandwidth) if ranks > 1 else 0.0
        exchange = calls * per_call
    step = model + glue + exchange
    return {"step_s": step, "model_s": model, "glue_s": glue, "exchange_s": exchange, "rows": rows, "ghosts": g,
            "efficiency": fit["a"] * n / step}


def grid_of(ranks):
    """LAMMPS' choice for a cube: the factorisation of `ranks` into 3 factors of least surface."""
    best = None
    for px in range(1, ranks + 1):
        for py in range(1, ranks // px + 1):
            if ranks % (px * py) == 0:
                pz = ranks // (px * py)
                surface = px * py + py * pz + px * pz
                if best is None or surface < best[0]:
                    best = (surface, (px, py, pz))
    return best[1]


def measure(args):
    from nvalchemi_lammps.export import read_metadata
    fw = FRAMEWORKS[args.framework]
    if args.runs_from:  # the runs of an earlier measure, fitted anew
        with open(args.runs_from) as f:
            earlier = json.load(f)
        runs, meta = earlier["runs"], earlier["metadata"]
    else:
        os.environ["OMP_NUM_THREADS"] = "1"
        workdir = tempfile.mkdtemp(prefix="weak_scaling.")
        model = export_model(args.framework, workdir)
        meta = read_metadata(model)
        small = fw["cells"][0]
        runs = [measure_one(args, model, args.framework, cells, 1, "layerwise", workdir) for cells in fw["cells"][1:]]
        for mode in MODES:
            if mode not in fw["skip"]:
                runs += [measure_one(args, model, args.framework, small, ranks, mode, workdir) for ranks in GRIDS]
        runs = [r for r in runs if r is not None]
    for run in runs:
        print(json.dumps(run), flush=True)
    # the fit, at the per-rank size of the weak-scaling runs: a from halo gp on one rank (its rows
    # are the owned atoms alone), b from layerwise on one rank (the same atoms and its ghost rows),
    # c from the glue per row of both
    size = min(r["atoms_per_rank"] for r in runs)
    one = {r["mode"]: r for r in runs if r["ranks"] == 1 and r["atoms_per_rank"] == size}
    base, alone = one["layerwise"], one["gp"]
    a = alone["model_s"] / size
    b = (base["model_s"] - alone["model_s"]) / base["ghosts_per_rank"]
    c = float(np.mean([r["glue_s"] / (r["atoms_per_rank"] + r["ghosts_per_rank"]) for r in (base, alone)]))
    spec = meta["spec"]
    layers, width = spec["num_message_passing_layers"], spec["exchange_feature_width"]
    element_bytes = 4 if meta["dtype"] == "float32" else 8
    local = base["exchange_s"] / (2 * (layers - 1) * base["ghosts_per_rank"] * width * element_bytes)
    # the model's time per owned atom over system size on one rank (layerwise): a above holds at
    # the weak-scaling size only where it changes with size
    per_atom = {r["atoms_per_rank"]: r["model_s"] / r["atoms_per_rank"]
                for r in runs if r["ranks"] == 1 and r["mode"] == "layerwise"}
    fit = {"framework": args.framework, "label": fw["label"], "a": a, "b": b, "c": c,
           "atoms_per_rank": size, "side": base["side"], "cutoff": meta["cutoff"],
           "layers": layers, "width": width, "element_bytes": element_bytes, "local_s_per_byte": local,
           "model_s_per_atom_by_size": per_atom, "skip": list(fw["skip"]), "skip_why": fw["skip_why"]}
    # the check: prediction for this machine (shared memory: local copies, 1 us a message)
    checks = []
    for r in runs:
        if r["atoms_per_rank"] != base["atoms_per_rank"]:
            continue
        p = predict(fit, r["mode"], r["ranks"], 1e-6, 1 / local)
        measured = r["step_s"] * min(1.0, args.cores / r["ranks"])
        checks.append({"mode": r["mode"], "ranks": r["ranks"], "measured_step_s": measured,
                       "predicted_step_s": p["step_s"], "ratio": measured / p["step_s"],
                       "measured_ghosts": r["ghosts_per_rank"], "predicted_ghosts": p["ghosts"],
                       "measured_efficiency": fit["a"] * fit["atoms_per_rank"] / measured})
    for check in checks:
        print(json.dumps({"check": check}), flush=True)
    prediction = {mode: [{"ranks": p, **predict(fit, mode, p, args.latency, args.bandwidth)} for p in RANKS]
                  for mode in MODES}
    strong = {mode: [{"ranks": p, **predict(fit, mode, p, args.latency, args.bandwidth, STRONG_ATOMS / p)}
                     for p in RANKS] for mode in MODES}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.framework}.json"), "w") as f:
        json.dump({"fit": fit, "metadata": meta, "runs": runs, "checks": checks, "prediction": prediction,
                   "strong": strong,
                   "latency": args.latency, "bandwidth": args.bandwidth}, f, indent=1)
    print(json.dumps({"fit": fit}))
    for mode in MODES:
        print(mode, " ".join(f"{p['ranks']}:{p['efficiency']:.2f}" for p in prediction[mode]))


RANKS = (1, 2, 4, 8, 16, 27, 64, 125, 216, 512, 1000)
STRONG_ATOMS = 100000  # the system of the strong-scaling panel


def plot(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    results = [json.load(open(path)) for path in args.results]
    fig, axes = plt.subplots(2, len(results), figsize=(5.5 * len(results), 8), squeeze=False)
    colors = {"layerwise": "tab:blue", "deep": "tab:orange", "gp": "tab:green"}
    for column, result in enumerate(results):
        fit = result["fit"]
        weak, strong = axes[0][column], axes[1][column]
        for mode in MODES:
            style = ":" if mode in fit["skip"] else "-"
            note = ", not run here: out of memory" if mode in fit["skip"] else ""
            points = result["prediction"][mode]
            weak.plot([p["ranks"] for p in points], [p["efficiency"] for p in points], style, color=colors[mode],
                      label=f"{mode} (predicted{note})")
            measured = [c for c in result["checks"] if c["mode"] == mode]
            if measured:
                weak.plot([c["ranks"] for c in measured], [c["measured_efficiency"] for c in measured], "o",
                          color=colors[mode], label=f"{mode} (measured here)")
            points = result["strong"][mode]
            strong.plot([p["ranks"] for p in points], [p["efficiency"] for p in points], style, color=colors[mode],
                        label=f"{mode} (predicted{note})")
        weak.set_title(f"{fit['label']}: weak scaling, {fit['atoms_per_rank']} atoms per rank", fontsize=9)
        strong.set_title(f"{fit['label']}: strong scaling, {STRONG_ATOMS} atoms", fontsize=9)
        for ax in (weak, strong):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("ranks")
            ax.set_ylabel("efficiency: model on owned atoms / step")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"pair_style nvalchemi, bench/weak_scaling.py (network: {result['latency'] * 1e6:.0f} us, "
                 f"{result['bandwidth'] / 1e9:.0f} GB/s)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(args.png)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--framework", choices=FRAMEWORKS, required=True)
    m.add_argument("--lmp")
    m.add_argument("--runs-from", help="fit and predict from the runs of an earlier measure (its JSON)")
    m.add_argument("--mpirun", default="mpirun")
    m.add_argument("--out", required=True)
    m.add_argument("--steps", type=int, default=2)
    m.add_argument("--cores", type=int, default=os.cpu_count())
    m.add_argument("--latency", type=float, default=2e-6, help="seconds per message between nodes")
    m.add_argument("--bandwidth", type=float, default=10e9, help="bytes per second between nodes")
    p = sub.add_parser("plot")
    p.add_argument("results", nargs="+")
    p.add_argument("--png", required=True)
    args = parser.parse_args()
    if args.command == "measure" and not (args.lmp or args.runs_from):
        parser.error("measure needs --lmp (or --runs-from)")
    measure(args) if args.command == "measure" else plot(args)


if __name__ == "__main__":
    main()
