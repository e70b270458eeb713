"""SevenNet-0 side by side in LAMMPS: SevenNet's own styles, pair_style e3gnn (serial) and
e3gnn/parallel, built from the sevenn wheel's sources by bench/sevenn_peer_build.sh, against
pair_style nvalchemi with the same pretrained model exported by nvalchemi-sevenn-export (halo
layerwise as TorchScript and as an AOTInductor package compiled for this CPU, and deep on the
smallest cell), all float32 as SevenNet runs. Not part of make test.

    make sevenn-race      (the peer built, then this script with its defaults), or by hand:
    bench/sevenn_peer_build.sh build
    build/venv-sevenn/bin/python bench/sevenn_race.py --lmp build/lammps/lmp \\
        --peer-lmp build/sevenn-peer/build/lmp --out build/bench/sevenn_race [--cells 3 5 7] \\
        [--grids 1x1x1 2x1x1 2x2x1 4x1x1] [--steps 2] [--styles STYLE ...]

Systems: rattled diamond Si, cells^3 x 8 atoms (216, 1000, 2744 by default: SevenNet-0 on the
CPU takes 3 to 5 MB per atom on one rank, and the test machine has 24 GB), LAMMPS' default metal
skin (2 A), MD at 300 K. Each (style, cell, processor grid) is one LAMMPS run: `run 0`
(energy and forces, dumped), then `run --steps` timed ("Loop time"), every rank on one LibTorch
thread under /usr/bin/time (peak resident memory per rank), its address space capped (the ranks
together at --memory-fraction of the machine's memory). Agreement is against SevenNet's own
ASE calculator (float32, as shipped) on the same cell: energy per atom and the largest force
component difference. A run the style refuses or that fails is recorded with its message, not
skipped. The serial style runs on one rank, plus once on two ranks on the smallest cell (where
it fails); halo deep runs on one rank on the smallest cell only (its ghost shell is 5 layers of
5 A plus the skin, too large for this machine's memory). Prints and writes <out>/results.jsonl
(one object per run) and <out>/results.md. CPU timings of a shared 2-core machine: 4 ranks
oversubscribe it, so compare styles at the same grid, within one run.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from ase.build import bulk

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
from harness import (address_space_cap, atoms_per_rank, peak_rss_per_rank_mb, peak_rss_wrapper,  # noqa: E402
                     run_lammps, seconds_per_step)

INPUT = """units metal
atom_style atomic
processors {grid}
read_data {data}
{pair}
velocity all create 300 4928 loop geom
timestep 0.001
fix 1 all nve
thermo_style custom step pe
thermo_modify norm no format float %.17g
dump f all custom 1 forces.dump id fx fy fz
dump_modify f sort id format float %.10g
run 0
undump f
{runs}
"""


def make_cell(cells):
    atoms = bulk("Si", "diamond", a=5.43, cubic=True).repeat(cells)
    atoms.rattle(stdev=0.05, seed=20261205)
    atoms.wrap()
    return atoms


def write_data(atoms, path):
    length = float(atoms.cell[0, 0])
    with open(path, "w") as f:
        f.write(f"Si for sevenn_race\n\n{len(atoms)} atoms\n1 atom types\n\n0 {length!r} xlo xhi\n"
                f"0 {length!r} ylo yhi\n0 {length!r} zlo zhi\n\nMasses\n\n1 28.0855\n\nAtoms # atomic\n\n")
        for i, r in enumerate(atoms.positions):
            f.write(f"{i + 1} 1 {float(r[0])!r} {float(r[1])!r} {float(r[2])!r}\n")


def oracle(atoms, device="cpu"):
    """SevenNet's own calculator as shipped (float32): energy (eV) and forces (eV/A)."""
    from sevenn.calculator import SevenNetCalculator
    calc = SevenNetCalculator("7net-0", device=device)
    atoms = atoms.copy()
    atoms.calc = calc
    return atoms.get_potential_energy(), atoms.get_forces()


def console(module, *args):
    """A command of an entry point (module:main) run by this python: the same in a venv, whose
    scripts sit beside it, and in a folder of unpacked wheels, which has none."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.argv[0] = {module!r}; sys.exit(main())",
            *args]


def exports(workdir, device="cpu", styles=None):
    """The pair_style and pair_coeff lines of each style (or of `styles`): the peer's serial and
    per-layer deployments (sevenn get_model), the package's layerwise (TorchScript and, compiled
    for `device`, AOTInductor) and deep exports."""
    files = {"serial": os.path.join(workdir, "deployed_serial.pt"),
             "parallel": os.path.join(workdir, "deployed_parallel"),
             "layerwise": os.path.join(workdir, "sevennet0_layerwise.pt"),
             "compiled": os.path.join(workdir, "sevennet0_layerwise.pt2"),
             "deep": os.path.join(workdir, "sevennet0_deep.pt")}
    export = "nvalchemi_lammps.sevenn_export"
    commands = {"e3gnn": console("sevenn.main.sevenn", "get_model", "7net-0", "-o", files["serial"]),
                "e3gnn/parallel": console("sevenn.main.sevenn", "get_model", "7net-0", "-p", "-o", files["parallel"]),
                "nvalchemi layerwise": console(export, "7net-0", "-o", files["layerwise"]),
                "nvalchemi compiled": console(export, "7net-0", "-o", files["compiled"], "--device", device),
                "nvalchemi deep": console(export, "7net-0", "--halo", "deep", "-o", files["deep"])}
    for style, cmd in commands.items():
        if styles is not None and style not in styles:
            continue
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    pairs = {"e3gnn": f"pair_style e3gnn\npair_coeff * * {files['serial']} Si",
             "nvalchemi layerwise": f"pair_style nvalchemi {files['layerwise']}\npair_coeff * * Si",
             "nvalchemi compiled": f"pair_style nvalchemi {files['compiled']}\npair_coeff * * Si",
             "nvalchemi deep": f"pair_style nvalchemi {files['deep']}\npair_coeff * * Si"}
    if os.path.isdir(files["parallel"]):
        layers = len([f for f in os.listdir(files["parallel"]) if f.startswith("deployed_parallel_")])
        pairs["e3gnn/parallel"] = f"pair_style e3gnn/parallel\npair_coeff * * {layers} {files['parallel']} Si"
    return {style: pair for style, pair in pairs.items() if styles is None or style in styles}


def failure(proc):
    """The line that says why a run failed: LAMMPS' ERROR, else a signal, else the exit status
    and the last line printed."""
    text = proc.stdout + proc.stderr
    for pattern in (r"^ERROR.*$", r"^.*(?:Segmentation fault|signal \d+|Signal: \w+).*$"):
        match = re.search(pattern, text, re.M)
        if match:
            return match.group(0).strip()[:160]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("-")]
    return f"exit status {proc.returncode}: {lines[-1][:120] if lines else ''}"


def race_one(args, lmp, pair, data, grid, atoms, reference, workdir, lmp_args=None, env=None):
    """One run of `pair` on the cell `data` on processor grid `grid`: its status, step time, peak
    memory per rank and agreement with `reference` (energy, forces); `lmp_args`, `env`: as
    harness.run_lammps takes them."""
    ranks = int(np.prod([int(n) for n in grid.split("x")]))
    rundir = tempfile.mkdtemp(dir=workdir)
    with open(os.path.join(rundir, "in.race"), "w") as f:
        f.write(INPUT.format(grid=grid.replace("x", " "), data=data, pair=pair, runs=f"run {args.steps}"))
    result = {"bench": "sevenn_race", "atoms": len(atoms), "grid": grid, "ranks": ranks}
    try:
        proc = run_lammps(lmp, args.mpirun, ranks, "in.race", rundir, timeout=args.timeout,
                          wrapper=address_space_cap(args.memory_fraction, ranks) + peak_rss_wrapper(rundir),
                          lmp_args=lmp_args, env=env)
    except SystemExit as exc:
        return {**result, "status": f"no result within {args.timeout} s: {str(exc).splitlines()[0][:120]}"}
    if proc.returncode != 0:
        return {**result, "status": failure(proc)}
    rss = peak_rss_per_rank_mb(rundir)
    energy = float(re.findall(r"^\s+0\s+(\S+)\s*$", proc.stdout, re.M)[0])
    forces = np.loadtxt(os.path.join(rundir, "forces.dump"), skiprows=9)[:, 1:]
    nlocal, nghost = atoms_per_rank(proc.stdout)
    ref_energy, ref_forces = reference
    return {**result, "status": "ok", "s_per_step": seconds_per_step(proc.stdout),
            "peak_rss_mb_max": max(rss), "peak_rss_mb_mean": sum(rss) / len(rss),
            "lammps_ghosts_per_rank": nghost, "energy_ev": energy,
            "de_per_atom_ev": abs(energy - ref_energy) / len(atoms),
            "max_df_ev_per_a": float(np.abs(forces - ref_forces).max())}


def record(result, results, jsonl):
    """One run's result: kept, printed and written as a JSON line at once (a long race keeps
    what it measured if it stops)."""
    results.append(result)
    print(json.dumps(result), flush=True)
    jsonl.write(json.dumps(result) + "\n")
    jsonl.flush()


def race_arguments(parser, cells, grids):
    """The arguments every race takes: the LAMMPS of this package, mpirun, the output folder, the
    cells and processor grids raced, the timed steps and the limits of one run."""
    parser.add_argument("--lmp", required=True, help="LAMMPS with USER-NVALCHEMI")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--out", required=True)
    parser.add_argument("--cells", type=int, nargs="+", default=cells, help="diamond cells per side")
    parser.add_argument("--grids", nargs="+", default=grids)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--memory-fraction", type=float, default=0.9,
                        help="the address space all ranks of a run may take, as a fraction of the machine's memory")


def markdown(results):
    lines = ["| atoms | grid | style | s/step | peak MB/rank (max) | dE/atom (eV) | max dF (eV/A) |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        if r["status"] == "ok":
            lines.append(f"| {r['atoms']} | {r['grid']} | {r['style']} | {r['s_per_step']:.3f} | "
                         f"{r['peak_rss_mb_max']:.0f} | {r['de_per_atom_ev']:.1e} | {r['max_df_ev_per_a']:.1e} |")
        else:
            lines.append(f"| {r['atoms']} | {r['grid']} | {r['style']} | refused or failed: {r['status']} | | | |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    race_arguments(parser, [3, 5, 7], ["1x1x1", "2x1x1", "2x2x1", "4x1x1"])
    parser.add_argument("--peer-lmp", required=True, help="LAMMPS with sevenn's styles (sevenn_peer_build.sh)")
    parser.add_argument("--styles", nargs="+", default=None,
                        help="race only these styles (default: all; e3gnn, e3gnn/parallel, nvalchemi layerwise, "
                             "nvalchemi compiled, nvalchemi deep)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.makedirs(args.out, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="sevenn_race.")
    pairs = exports(workdir, styles=args.styles)
    results = []
    with open(os.path.join(args.out, "results.jsonl"), "w") as jsonl:
        for cells in args.cells:
            atoms = make_cell(cells)
            data = os.path.join(workdir, f"si_{len(atoms)}.data")
            write_data(atoms, data)
            reference = oracle(atoms)
            smallest = cells == min(args.cells)
            plan = [("e3gnn", "1x1x1")] + ([("e3gnn", "2x1x1")] if smallest else [])
            plan += [(style, grid) for style in ("e3gnn/parallel", "nvalchemi layerwise", "nvalchemi compiled")
                     for grid in args.grids]
            plan += [("nvalchemi deep", "1x1x1")] if smallest else []
            plan = [(style, grid) for style, grid in plan if args.styles is None or style in args.styles]
            for style, grid in plan:
                lmp = args.peer_lmp if style.startswith("e3gnn") else args.lmp
                record({"style": style, **race_one(args, lmp, pairs[style], data, grid, atoms, reference, workdir)},
                       results, jsonl)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
