"""The GPU race (run by bench/gpu_race.sh; doc/Howto_nvalchemi_benchmarks.rst): real models on
one device against their own LAMMPS styles and calculators.

    gpu_race.py export --framework sevenn|mace --out DIR --device cpu|cuda --formats pt|pt2 [--tiny]
        in the framework's python: SevenNet-0 (float32, as shipped) deployed by sevenn for
        pair_style e3gnn and e3gnn/parallel and exported by nvalchemi-sevenn-export, or a MACE
        model of MACE-MP-0 medium's size (128x0e+128x1o, max_ell 3, correlation 3, 2
        interactions, r_max 6 A, 89 elements; random weights, fixed seed; --tiny: 8x0e+8x1o,
        max_ell 2, correlation 2) saved as mace-torch saves one and exported by
        nvalchemi-mace-export, float32; --formats pt: TorchScript (and sevenn's deployments),
        pt2: the AOTInductor package compiled for --device. Writes DIR/pairs.json (style:
        pair_style and pair_coeff lines) or DIR/pairs_pt2.json.
    gpu_race.py calculator --framework sevenn|mace --model DIR --cells N --device D --steps S --out F
        in the framework's python: the framework's own ASE calculator on the cell (energy,
        forces, seconds per calculate() over S calls after one, peak memory); F is JSON.
    gpu_race.py race --lmp LMP --peer-lmp LMP --mpirun M --models DIR --out DIR
                     --sevenn-python P --mace-python P [--seconds S] [--tiny]
        the runs, in this order so that a run cut short by --seconds has the ratios first: on
        each timed cell (1000 and 5832 atoms; --tiny: 64 and 216), the calculator of each
        framework, then every LAMMPS style on 1, 2 and 4 ranks (--tiny: 1 and 2; e3gnn on one
        rank only); then each style and calculator on one rank over growing cells until it
        fails (the largest cell that fits). Rattled diamond Si for both models, LAMMPS' metal
        skin, NVE at 300 K: `run 0` (forces dumped), a warm-up run, then the timed run ("Loop
        time", all ranks sharing the one device). Peak memory: on a GPU, each process's largest
        use in nvidia-smi --query-compute-apps (the CUDA context and the caching allocator's
        reserve included; the device's own used memory above its idle level beside it), on the
        CPU each rank's peak resident memory (/usr/bin/time). Agreement: energy per atom and the
        largest force component against the framework's calculator on the same cell and device.
        A run that fails is recorded with its message. Writes OUT/results.json and
        OUT/results.md after every run.

No timed assertions: the figures are read off results.md.
"""

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unittest", "lammps"))
sys.path.insert(0, HERE)
from harness import atoms_per_rank, peak_rss_per_rank_mb, peak_rss_wrapper, run_lammps, seconds_per_step  # noqa: E402

# cells of 8-atom diamond Si per side: the timed ones, then the ladder of the largest that fits
TIMED_CELLS, LADDER = (5, 9), (11, 14, 17, 20, 25, 32, 40)
TINY_TIMED_CELLS, TINY_LADDER = (2, 3), (4,)
STEPS, TINY_STEPS = (3, 10), (1, 2)  # warm-up, timed
LADDER_STEPS = (1, 2)
MACE_R_MAX = 6.0

GRIDS = {1: "1 1 1", 2: "2 1 1", 4: "2 2 1"}


# -- export (in the framework's python) ---------------------------------------------------------

def mace_model(tiny, reduced_cg=True):
    """A MACE model of MACE-MP-0 medium's size (or a tiny one), random weights, fixed seed;
    reduced_cg=False: the full Clebsch-Gordan basis of MACE-MP-0's own symmetric contractions
    (trained before mace-torch reduced it), which MACE's ML-IAP writer can convert."""
    import mace  # noqa: F401  (before e3nn)
    import torch
    from e3nn import o3
    from mace import modules
    torch.manual_seed(20261206)
    torch.set_default_dtype(torch.float64)
    numbers = list(range(1, 90))
    width, max_ell, correlation = (8, 2, 2) if tiny else (128, 3, 3)
    return modules.ScaleShiftMACE(
        r_max=MACE_R_MAX, num_bessel=8, num_polynomial_cutoff=5, max_ell=max_ell,
        interaction_cls=modules.interaction_classes["RealAgnosticResidualInteractionBlock"],
        interaction_cls_first=modules.interaction_classes["RealAgnosticInteractionBlock"],
        num_interactions=2, num_elements=len(numbers),
        hidden_irreps=o3.Irreps(f"{width}x0e + {width}x1o"), MLP_irreps=o3.Irreps("16x0e"),
        atomic_energies=-np.linspace(1.0, 5.0, len(numbers)), avg_num_neighbors=61.96,
        atomic_numbers=numbers, correlation=correlation, gate=torch.nn.functional.silu,
        radial_MLP=[64, 64, 64], atomic_inter_scale=1.0, atomic_inter_shift=0.0,
        use_reduced_cg=reduced_cg).eval()


def export(args):
    from sevenn_race import console, exports
    os.makedirs(args.out, exist_ok=True)
    suffix = "" if args.formats == "pt" else "_pt2"
    if args.framework == "sevenn":
        styles = ["e3gnn", "e3gnn/parallel", "nvalchemi layerwise"] if args.formats == "pt" else ["nvalchemi compiled"]
        pairs = exports(os.path.abspath(args.out), args.device, styles)
    else:
        import torch
        source = os.path.join(os.path.abspath(args.out), "mace.model")
        if not os.path.exists(source):
            torch.save(mace_model(args.tiny), source)
        output = os.path.join(os.path.abspath(args.out), f"mace_layerwise.{args.formats}")
        subprocess.run(console("nvalchemi_lammps.mace_export", source, "-o", output, "--dtype", "float32",
                               "--device", args.device), check=True)
        style = "nvalchemi layerwise" if args.formats == "pt" else "nvalchemi compiled"
        pairs = {style: f"pair_style nvalchemi {output}\npair_coeff * * Si"}
    with open(os.path.join(args.out, f"pairs{suffix}.json"), "w") as f:
        json.dump(pairs, f, indent=1)


# -- the frameworks' calculators (in the framework's python) -----------------------------------

def calculator(args):
    import torch
    from sevenn_race import make_cell
    atoms = make_cell(args.cells)
    if args.framework == "sevenn":
        from sevenn.calculator import SevenNetCalculator
        calc = SevenNetCalculator("7net-0", device=args.device)
    else:
        from mace.calculators import MACECalculator
        calc = MACECalculator(model_paths=os.path.join(args.model, "mace.model"), device=args.device,
                              default_dtype="float32")
    result = {"atoms": len(atoms)}
    try:
        seconds = []
        for _ in range(args.steps + 1):
            if args.device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            calc.calculate(atoms, ["energy", "forces", "stress"])
            if args.device == "cuda":
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
        result.update(status="ok", energy_ev=float(calc.results["energy"]),
                      forces=np.asarray(calc.results["forces"]).tolist(), s_per_step=float(np.mean(seconds[1:])))
        if args.device == "cuda":
            result["torch_max_allocated_mb"] = torch.cuda.max_memory_allocated() / 2**20
    except Exception as exc:  # an out-of-memory error is a result: the cell does not fit
        result["status"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
    with open(args.out, "w") as f:
        json.dump(result, f)


# -- the race ----------------------------------------------------------------------------------

class GpuMemory:
    """Polls nvidia-smi while a run goes: each process's largest use (MiB) and the device's."""

    def __init__(self):
        self.per_process, self.device_peak, self.stop = {}, 0.0, threading.Event()
        self.idle = self.used()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    @staticmethod
    def query(what):
        proc = subprocess.run(["nvidia-smi", f"--query-{what}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True)
        return [line.split(",") for line in proc.stdout.splitlines() if line.strip()]

    def used(self):
        rows = self.query("gpu=memory.used")
        return float(rows[0][0]) if rows else 0.0

    def poll(self):
        while not self.stop.is_set():
            for pid, mib in self.query("compute-apps=pid,used_memory"):
                if mib.strip().isdigit():
                    self.per_process[pid] = max(self.per_process.get(pid, 0.0), float(mib))
            self.device_peak = max(self.device_peak, self.used())
            self.stop.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def report(self):
        result = {"gpu_mb_device_above_idle": self.device_peak - self.idle}
        if self.per_process:
            result["gpu_mb_per_process_max"] = max(self.per_process.values())
        return result


def agreement(energy, forces, reference):
    if not reference or reference.get("status") != "ok":
        return {}
    return {"de_per_atom_ev": abs(energy - reference["energy_ev"]) / len(forces),
            "max_df_ev_per_a": float(np.abs(np.asarray(forces) - np.asarray(reference["forces"])).max())}


class Race:
    def __init__(self, args):
        self.args, self.started = args, time.monotonic()
        self.gpu = args.device == "cuda"
        self.workdir = tempfile.mkdtemp(prefix="gpu_race.")
        import torch
        self.results = {"host": platform.node(), "device": args.device, "torch": torch.__version__,
                        "gpu": torch.cuda.get_device_name(0) if self.gpu else None, "tiny": args.tiny,
                        "budget_seconds": args.seconds, "runs": []}
        self.references = {}  # (framework, cells): the calculator's result
        self.failed = set()  # (framework, style) that failed on the ladder

    def time_left(self):
        return self.args.seconds <= 0 or time.monotonic() - self.started < self.args.seconds

    def pairs(self, framework):
        pairs = {}
        for name in ("pairs.json", "pairs_pt2.json"):
            path = os.path.join(self.args.models, framework, name)
            if os.path.exists(path):
                with open(path) as f:
                    pairs.update(json.load(f))
        return pairs

    def record(self, entry):
        entry["us_per_atom_step"] = (1e6 * entry["s_per_step"] / entry["atoms"]) if "s_per_step" in entry else None
        self.results["runs"].append(entry)
        print(json.dumps({k: v for k, v in entry.items() if k != "forces"}), flush=True)
        with open(os.path.join(self.args.out, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1)
        with open(os.path.join(self.args.out, "results.md"), "w") as f:
            f.write(markdown(self.results))

    def calculator(self, framework, cells, steps):
        from sevenn_race import make_cell
        entry = {"framework": framework, "style": "calculator", "cells": cells, "atoms": len(make_cell(cells)),
                 "ranks": 1}
        if not self.time_left():
            return self.record({**entry, "status": "not run: out of time"})
        out = os.path.join(self.workdir, f"{framework}_{cells}.json")
        python = self.args.sevenn_python if framework == "sevenn" else self.args.mace_python
        cmd = [python, os.path.abspath(__file__), "calculator", "--framework", framework, "--cells", str(cells),
               "--model", os.path.join(self.args.models, framework), "--device", self.args.device,
               "--steps", str(steps), "--out", out]
        rundir = tempfile.mkdtemp(dir=self.workdir)
        wrapper = peak_rss_wrapper(rundir) if os.path.exists("/usr/bin/time") else []
        try:
            with GpuMemory() if self.gpu else _NoMemory() as memory:
                proc = subprocess.run(wrapper + cmd, capture_output=True, text=True, timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            return self.record({**entry, "status": f"no result within {self.args.timeout} s"})
        if not os.path.exists(out):
            return self.record({**entry, "status": f"exit {proc.returncode}: {(proc.stdout + proc.stderr)[-300:]}"})
        with open(out) as f:
            result = json.load(f)
        self.references[(framework, cells)] = result
        entry.update({k: v for k, v in result.items() if k not in ("forces", "atoms")})
        entry.update(memory.report())
        if wrapper:
            entry["peak_rss_mb_max"] = max(peak_rss_per_rank_mb(rundir))
        self.record(entry)
        return entry["status"] == "ok"

    def lammps(self, framework, style, pair, cells, ranks, steps):
        from sevenn_race import INPUT, failure, make_cell, write_data
        atoms = make_cell(cells)
        entry = {"framework": framework, "style": style, "cells": cells, "atoms": len(atoms), "ranks": ranks}
        if not self.time_left():
            return self.record({**entry, "status": "not run: out of time"})
        if pair is None:
            return self.record({**entry, "status": "no model: its export failed or was not finished"})
        data = os.path.join(self.workdir, f"si_{cells}.data")
        if not os.path.exists(data):
            write_data(atoms, data)
        if style.startswith("nvalchemi"):
            pair = pair.replace("\n", f" device {self.args.device}\n", 1)
        rundir = tempfile.mkdtemp(dir=self.workdir)
        with open(os.path.join(rundir, "in.race"), "w") as f:
            # a warm-up run, then the timed one (whose loop time seconds_per_step reads)
            f.write(INPUT.format(grid=GRIDS[ranks], data=data, pair=pair, runs=f"run {steps[0]}\nrun {steps[1]}"))
        wrapper = peak_rss_wrapper(rundir) if os.path.exists("/usr/bin/time") else []
        lmp = self.args.peer_lmp if style.startswith("e3gnn") else self.args.lmp
        try:
            with GpuMemory() if self.gpu else _NoMemory() as memory:
                proc = run_lammps(lmp, self.args.mpirun, ranks, "in.race", rundir, timeout=self.args.timeout,
                                  wrapper=wrapper)
        except SystemExit as exc:
            return self.record({**entry, "status": f"no result within {self.args.timeout} s: "
                                                   f"{str(exc).splitlines()[0][:120]}"})
        if proc.returncode != 0:
            return self.record({**entry, "status": failure(proc)})
        energy = float(re.findall(r"^\s+0\s+(\S+)\s*$", proc.stdout, re.M)[0])
        forces = np.loadtxt(os.path.join(rundir, "forces.dump"), skiprows=9)[:, 1:]
        entry.update(status="ok", s_per_step=seconds_per_step(proc.stdout), energy_ev=energy,
                     atoms_per_rank_owned_ghost=atoms_per_rank(proc.stdout), **memory.report(),
                     **agreement(energy, forces, self.references.get((framework, cells))))
        if wrapper:
            entry["peak_rss_mb_max"] = max(peak_rss_per_rank_mb(rundir))
        self.record(entry)
        return True

    def run(self):
        args = self.args
        timed, ladder = (TINY_TIMED_CELLS, TINY_LADDER) if args.tiny else (TIMED_CELLS, LADDER)
        steps = TINY_STEPS if args.tiny else STEPS
        ranks = (1, 2) if args.tiny else (1, 2, 4)
        styles = {"sevenn": ("e3gnn", "e3gnn/parallel", "nvalchemi layerwise", "nvalchemi compiled"),
                  "mace": ("nvalchemi layerwise", "nvalchemi compiled")}
        for cells in timed:
            for framework in ("sevenn", "mace"):
                self.calculator(framework, cells, steps[1])
            for n in ranks:
                for framework, names in styles.items():
                    pairs = self.pairs(framework)  # the compiled exports may arrive late
                    for style in names:
                        if style != "e3gnn" or n == 1:
                            self.lammps(framework, style, pairs.get(style), cells, n, steps)
        # the largest cell that fits, on one rank: each style climbs until it fails
        for cells in ladder:
            for framework, names in styles.items():
                if (framework, "calculator") not in self.failed:
                    if not self.calculator(framework, cells, LADDER_STEPS[1]):
                        self.failed.add((framework, "calculator"))
                pairs = self.pairs(framework)
                for style in names:
                    if (framework, style) not in self.failed:
                        if not self.lammps(framework, style, pairs.get(style), cells, 1, LADDER_STEPS):
                            self.failed.add((framework, style))
        shutil.rmtree(self.workdir, ignore_errors=True)


class _NoMemory:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def report(self):
        return {}


def markdown(results):
    gpu = results["device"] == "cuda"
    memory = "peak GPU MB per process (device above idle)" if gpu else "peak RSS MB per rank (largest)"
    lines = [f"# GPU race on {results['host']}: device {results['device']} {results['gpu'] or ''}, "
             f"torch {results['torch']}{' (tiny sizes)' if results['tiny'] else ''}\n"]
    size = "tiny (8x0e+8x1o)" if results["tiny"] else "MACE-MP-0 medium's size"
    for framework in ("sevenn", "mace"):
        runs = [r for r in results["runs"] if r["framework"] == framework]
        lines += [f"\n## {'SevenNet-0 float32' if framework == 'sevenn' else 'MACE, float32, ' + size}\n",
                  f"| atoms | ranks | style | us/atom-step | ms/step | {memory} | dE/atom (eV) | max dF (eV/A) |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in runs:
            if r["status"] != "ok":
                lines.append(f"| {r['atoms']} | {r['ranks']} | {r['style']} | {r['status'][:160]} | | | | |")
                continue
            if gpu:
                mem = (f"{r.get('gpu_mb_per_process_max', float('nan')):.0f} "
                       f"({r.get('gpu_mb_device_above_idle', float('nan')):.0f})")
            else:
                mem = f"{r.get('peak_rss_mb_max', float('nan')):.0f}"
            de, df = r.get("de_per_atom_ev"), r.get("max_df_ev_per_a")
            lines.append(f"| {r['atoms']} | {r['ranks']} | {r['style']} | {r['us_per_atom_step']:.3f} | "
                         f"{1e3 * r['s_per_step']:.2f} | {mem} | {'' if de is None else f'{de:.1e}'} | "
                         f"{'' if df is None else f'{df:.1e}'} |")
        fits = {}
        for r in runs:
            if r["status"] == "ok" and r["ranks"] == 1:
                fits[r["style"]] = max(fits.get(r["style"], 0), r["atoms"])
        lines.append("\nLargest cell run on one rank: " +
                     ", ".join(f"{style} {atoms}" for style, atoms in fits.items()) + "\n")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("export", "calculator", "race"))
    parser.add_argument("--framework", choices=("sevenn", "mace"))
    parser.add_argument("--formats", choices=("pt", "pt2"), default="pt")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (a CPU trial)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", help="the folder of a framework's exports (calculator)")
    parser.add_argument("--cells", type=int)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--lmp")
    parser.add_argument("--peer-lmp", help="LAMMPS with sevenn's e3gnn styles (bench/sevenn_peer_build.sh)")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--models", help="the export folders, one per framework (race)")
    parser.add_argument("--sevenn-python", default=sys.executable)
    parser.add_argument("--mace-python", default=sys.executable)
    parser.add_argument("--seconds", type=float, default=0, help="start no run after this many seconds (0: no limit)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a run may take")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    if args.mode == "export":
        export(args)
    elif args.mode == "calculator":
        calculator(args)
    else:
        os.makedirs(args.out, exist_ok=True)
        Race(args).run()


if __name__ == "__main__":
    main()
