"""Every benchmark of bench/ in one run (`make bench`): JSON lines to <out>/results.jsonl and the
tables of doc/Howto_nvalchemi_benchmarks.rst to <out>/results.md.

    build/venv/bin/python bench/run.py --lmp build/lammps/lmp --models build/nvalchemi/potentials \\
        --out build/bench --kernels build/nvalchemi/plugin/nvalchemi_kernels.so

It writes the zero model (the LJ model's inputs, zero energies: its step is the package's own
cost) next to the results, then runs lj_overhead.py (the package's cost, the LJ model in both
formats and the LJ model calling the fused kernel of nvalchemi_kernels.so against lj/cut, 4000
and 16384 atoms, 1 and 2 ranks; LibTorch threads), mp_halo.py (layerwise vs deep halo, both
formats, 1, 2 and 4 ranks), gp_halo.py (halo mode gp vs layerwise over size, depth and ranks),
pme_mesh.py (the particle-mesh model over mesh size and ranks), phase_times.py (fix
nvalchemi/dd's phase times; pair_style nvalchemi/kk against nvalchemi), memory_scaling.py (peak
memory per atom, 864 to 256000 atoms) and soak.py (100000 LJ and 10000 message-passing steps on
2 ranks: resident memory slope, energy drift). --quick runs each on tiny
systems, to check that the benchmarks work (the test suite does); its figures mean nothing.
CPU timings of a shared machine: read the ratios, which are measured in one run.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from typing import Dict

import torch

from nvalchemi_lammps.export import save_model

HERE = os.path.dirname(os.path.abspath(__file__))


class Zero(torch.nn.Module):
    """The LJ model's contract with zero atomic energies: nothing to differentiate."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return {"atomic_energies": torch.zeros(inputs["positions"].shape[0], dtype=inputs["edge_vectors"].dtype)}


class ZeroEdges(torch.nn.Module):
    """The LJ model's contract with zero atomic energies that depend on the edges (a zero
    gradient): its step is the package's own with the backward pass and the edge forces."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        zero = torch.zeros_like(inputs["positions"][:, 0])
        return {"atomic_energies": zero.index_add(0, inputs["neighbor_list"][:, 1], 0.0 * inputs["edge_vectors"][:, 0])}


def run(script, *args):
    cmd = [sys.executable, os.path.join(HERE, script), *map(str, args)]
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def ms(seconds):
    return f"{1e3 * seconds:.2f}"


def markdown(results):
    by = defaultdict(list)
    for r in results:
        by[r["benchmark"]].append(r)
    out = ["# USER-NVALCHEMI benchmarks (CPU, one run; read the ratios)\n"]

    cost = [r for r in by["lj_overhead"] if r["threads"] == 0]
    rows = defaultdict(dict)
    for r in cost:
        rows[(r["atoms"], r["ranks"])]["lj/cut"] = r["lj_cut_s_per_step"]
        rows[(r["atoms"], r["ranks"])][r["model"]] = r["nvalchemi_s_per_step"]
    models = sorted({r["model"] for r in cost}, key=lambda m: (m != "zero_ar.pt", m))
    out.append("## The package's own cost and the LJ model against lj/cut (ms/step, ratio to lj/cut)\n")
    out.append(table(["atoms", "ranks", "lj/cut"] + models,
                     [[a, n, ms(v["lj/cut"])] + [f"{ms(v[m])} ({v[m] / v['lj/cut']:.2f}x)" for m in models]
                      for (a, n), v in sorted(rows.items())]))

    scaling = []
    for atoms in sorted({a for a, _ in rows}):
        if (atoms, 1) in rows and (atoms, 2) in rows:
            one, two = rows[(atoms, 1)], rows[(atoms, 2)]
            scaling.append([atoms] + [f"{one[m] / two[m]:.2f}x" for m in ["lj/cut"] + models])
    out.append("\n## Strong scaling, 1 to 2 ranks (speedup)\n")
    out.append(table(["atoms", "lj/cut"] + models, scaling))

    threads = [r for r in by["lj_overhead"] if r["threads"] > 0]
    if threads:
        out.append("\n## LibTorch threads per rank (pair_style keyword threads), LJ model\n")
        out.append(table(["model", "atoms", "ranks", "threads", "ms/step", "ratio to lj/cut"],
                         [[r["model"], r["atoms"], r["ranks"], r["threads"], ms(r["nvalchemi_s_per_step"]),
                           f"{r['ratio_nvalchemi_over_lj_cut']:.2f}x"] for r in threads]))

    halo = defaultdict(dict)
    for r in by["mp_halo"]:
        if "mode" in r:
            halo[(r["format"], r["atoms"], r["ranks"])][r["mode"]] = r
    out.append("\n## 3-layer message passing: layerwise vs deep halo (ms/step, rows per rank)\n")
    out.append(table(["format", "atoms", "ranks", "layerwise", "deep", "layerwise speedup", "rows deep/layerwise"],
                     [[f, a, n, ms(v["layerwise"]["s_per_step"]), ms(v["deep"]["s_per_step"]),
                       f"{v['deep']['s_per_step'] / v['layerwise']['s_per_step']:.2f}x",
                       f"{v['deep']['rows_per_rank'] / v['layerwise']['rows_per_rank']:.2f}"]
                      for (f, a, n), v in sorted(halo.items())]))

    gp = defaultdict(dict)
    for r in by["gp_halo"]:
        if "mode" in r:
            gp[(r["atoms"], r["layers"], r["ranks"])][r["mode"]] = r
    out.append("\n## Halo mode gp vs layerwise, SchNet-style model (ms/step, exchange share, rows per rank)\n")
    out.append(table(["atoms", "layers", "ranks", "layerwise", "gp", "gp / layerwise", "exchange share (layerwise, gp)",
                      "rows per rank (layerwise, gp)"],
                     [[a, l, n, ms(v["layerwise"]["s_per_step"]), ms(v["gp"]["s_per_step"]),
                       f"{v['gp']['s_per_step'] / v['layerwise']['s_per_step']:.2f}x",
                       f"{100 * v['layerwise']['exchange_share']:.0f}%, {100 * v['gp']['exchange_share']:.0f}%",
                       f"{v['layerwise']['rows_per_rank']:.0f}, {v['gp']['rows_per_rank']:.0f}"]
                      for (a, l, n), v in sorted(gp.items())]))

    mesh = [r for r in by["pme_mesh"] if "ranks" in r]
    speedups = {(r["atoms"], r["mesh"]): r for r in by["pme_mesh"] if "ranks" not in r}
    out.append("\n## Particle-mesh model: mesh size and ranks (ms/step, mesh all-reduce and sums per step)\n")
    out.append(table(["atoms", "mesh", "ranks", "ms/step", "exchange ms/step", "exchange share", "speedup over the fewest ranks"],
                     [[r["atoms"], f"{r['mesh']}^3", r["ranks"], ms(r["s_per_step"]), ms(r["exchange_s_per_step"]),
                       f"{100 * r['exchange_share']:.0f}%",
                       f"{speedups[(r['atoms'], r['mesh'])]['speedup'][str(r['ranks'])]:.2f}x"]
                      for r in mesh]))

    phases = ["graph", "tensors", "forward", "backward", "exchange", "tally", "glue", "step"]
    out.append("\n## Phase times per step, fix nvalchemi/dd (ms, largest rank)\n")
    out.append(table(["model", "atoms", "ranks", "style", "threads"] + phases + ["glue share"],
                     [[r["model"], r["atoms"], r["ranks"], r["style"], r["threads"]]
                      + [f"{r[p + '_ms']:.2f}" for p in phases]
                      + [f"{100 * r['glue_share_of_step']:.0f}%"] for r in by["phase_times"] if "style" in r]))
    out.append("\n## pair_style nvalchemi/kk (-k on t T -sf kk) over nvalchemi (threads T), same run\n")
    out.append(table(["model", "atoms", "ranks", "threads", "step", "graph", "glue", "glue share (plain, kk)"],
                     [[r["model"], r["atoms"], r["ranks"], r["threads"]]
                      + [f"{r['kk_over_plain_' + k]:.2f}x" for k in ("step", "graph", "glue")]
                      + [f"{100 * r['glue_share_plain']:.0f}%, {100 * r['glue_share_kk']:.0f}%"]
                      for r in by["phase_times"] if "kk_over_plain_step" in r]))

    memory = [r for r in by["memory_scaling"] if "atoms" in r]
    spread = [r for r in by["memory_scaling"] if "kb_per_atom_largest_over_smallest" in r]
    out.append("\n## Peak memory per atom, LJ model, 1 rank (kB per atom above the 32-atom run)\n")
    out.append(table(["atoms", "peak RSS (MB)", "kB per atom", "peak RSS, blocks > 64 KiB returned (MB)", "kB per atom"],
                     [[r["atoms"], f"{r['peak_rss_mb']:.0f}", f"{r['kb_per_atom_default_malloc']:.2f}",
                       f"{r['peak_rss_in_use_mb']:.0f}", f"{r['kb_per_atom']:.2f}"] for r in memory]))
    if spread:
        out.append(f"\nLargest / smallest kB per atom (memory in use): "
                   f"{spread[0]['kb_per_atom_largest_over_smallest']:.2f}\n")
    out.append("\n## Soak: 2 ranks, fix nvalchemi/dd, reneighboring every step (memory after warm-up)\n")
    out.append(table(["model", "atoms", "steps", "RSS after warm-up (MB)", "RSS at end (MB)",
                      "RSS slope (kB / 1000 steps)", "energy drift (per atom / 1000 steps)"],
                     [[r["model"], r["atoms"], r["steps"], f"{r.get('rss_mb_after_warmup', 0):.1f}",
                       f"{r.get('rss_mb_at_end', 0):.1f}", f"{r.get('rss_slope_kb_per_1000_steps', 0):.1f}",
                       f"{r['energy_drift_per_atom_per_1000_steps']:.2e}"] for r in by["soak"]]))
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--models", required=True, help="the reference models' folder (lj_ar.pt, schnet_*.pt ...)")
    parser.add_argument("--packages", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "potentials"),
                        help="the folder of their AOTInductor packages (lj_ar.pt2, schnet_*.pt2), which make "
                             "compiles into potentials/ (the default)")
    parser.add_argument("--out", required=True, help="folder for the zero model and the results")
    parser.add_argument("--kernels", required=True, help="the package's operator library nvalchemi_kernels.so")
    parser.add_argument("--quick", action="store_true", help="tiny systems, one repeat: checks that it all runs")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lmp = ["--lmp", os.path.abspath(args.lmp), "--mpirun", args.mpirun]
    model = lambda name: os.path.join(os.path.abspath(args.packages if name.endswith(".pt2") else args.models),  # noqa: E731
                                      name)
    zero = os.path.join(args.out, "zero_ar.pt")
    save_model(Zero(), zero, cutoff=2.5, species=[18], units="lj", spec={"preset": "SPEC_LJ_HALO"})

    q = args.quick
    cells = ["--cells", 3] if q else ["--cells", 10, 16]
    results = run("lj_overhead.py", *lmp, "--model", zero, model("lj_ar.pt"), model("lj_ar.pt2"),
                  model("lj_ar_fused.pt"), "--library", os.path.abspath(args.kernels), *cells,
                  "--repeat", 1 if q else 5, "--steps", 5 if q else 50)
    results += run("lj_overhead.py", *lmp, "--model", model("lj_ar.pt"), "--threads", 1, 2,
                   "--cells", 3 if q else 10, "--repeat", 1 if q else 2, "--steps", 5 if q else 50)
    results += run("mp_halo.py", *lmp, "--models", os.path.abspath(args.models), "--packages",
                   os.path.abspath(args.packages), "--format", "pt", "pt2",
                   *(["--cells", 4, "--ranks", 1, 2, "--steps", 1] if q else ["--cells", 10, "--ranks", 1, 2, 4]))
    results += run("gp_halo.py", *lmp, *(["--cells", 3, "--layers", 2, "--ranks", 2, "--steps", 1] if q else []))
    results += run("pme_mesh.py", *lmp, *(["--cells", 2, "--mesh", 16, "--ranks", 1, 2, "--steps", 1] if q else []))
    results += run("phase_times.py", *lmp, "--model", model("lj_ar.pt"), model("lj_ar.pt2"),
                   model("schnet_layerwise.pt"), "--cells", 3 if q else 10, "--steps", 3 if q else 20)
    results += run("phase_times.py", *lmp, "--kokkos", "--model", model("lj_ar.pt"), model("schnet_layerwise.pt"),
                   *(["--cells", 3, "--ranks", 1, "--steps", 3] if q else ["--cells", 10, 16, "--threads", 1, "--steps", 20]))
    results += run("memory_scaling.py", *lmp, "--model", model("lj_ar.pt"),
                   "--cells", *([3, 4] if q else [6, 10, 16, 25, 40]))
    results += run("soak.py", *lmp, "--models", os.path.abspath(args.models),
                   *(["--lj-steps", 500, "--mp-steps", 20, "--interval", 0.2] if q else []))

    with open(os.path.join(args.out, "results.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in results)
    text = markdown(results)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
