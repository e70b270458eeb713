"""The GPU check of pair_style nvalchemi (run by bench/gpu_check.sh; doc/Build_nvalchemi.rst).

    gpu_check.py reference --lmp LMP --models DIR --out reference.json
        the parity systems (<system>.data, beside reference.json) and, on 1 rank with device
        cpu, energies, pressures and forces of the TorchScript parity cases after run 0 and
        after 20 NVE steps, in full precision (made on the development machine's CPU)
    gpu_check.py check --lmp LMP --models DIR --reference reference.json --out DIR [--mpirun M]
        the same cases on the same data files on the device LibTorch sees (cuda, or cpu where
        there is none) on 1, 2 and 4 ranks (sharing the one GPU), and on this machine's CPU,
        each against the reference (1e-10 relative); the AOTInductor cases (.pt2 packages that
        gpu_check.sh compiles there for that device) against their TorchScript twin's
        reference; then step times, cpu against the device, in the same run, with the graph built
        on the device and on the host (pair_style keyword graph), each with fix nvalchemi/dd's
        phase times (which synchronize the device) from a short run after the timed one. A run that fails
        is recorded with its error and the check goes on; with --seconds, runs that would start
        later are recorded as not run. Writes results.json and results.md after every run.

Needs python3 with numpy and (for `check`) torch, only to ask whether a GPU is there and which
torch it is.
Exits non-zero when a parity case fails or does not run.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple, Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unittest", "lammps"))
from harness import melt_commands, relative_difference, snapshot_commands, thermo_table, worse  # noqa: E402

TOLERANCE = 1e-10
STEPS = (0, 20)
GLOBALS = ("pe", "pxx", "pyy", "pzz", "pxy", "pxz", "pyz")

# the systems: how each is made (once, on 1 rank: create_atoms numbers atoms, and displace_atoms
# and create_atoms random draw their random numbers, by rank), and what an input that reads it sets
SYSTEMS = {
    # a perturbed fcc Lennard-Jones solid, 500 atoms
    "ar": {"make": melt_commands(5, 1.5) + "displace_atoms all random 0.05 0.05 0.05 8765 units lattice\n",
           "units": "lj", "elements": "Ar", "neighbor": 0.3, "timestep": 0.002},
    # examples/mace's triclinic water-like cell, 51 atoms
    "ho": {"make": "units metal\natom_style atomic\nregion box prism 0 8 0 8 0 8 0.8 -0.5 0.4\n"
                   "create_box 2 box\ncreate_atoms 1 random 34 4127 NULL overlap 1.4 maxtry 200\n"
                   "create_atoms 2 random 17 9317 NULL overlap 1.4 maxtry 200\n"
                   "mass 1 1.008\nmass 2 15.999\nvelocity all create 300.0 4928 loop geom\n",
           "units": "metal", "elements": "H O", "neighbor": 1.0, "timestep": 0.0002},
}

# name: system, model file, pair_style keywords, extra input lines (after pair_coeff), the case
# whose reference it is compared with (None: its own, made on the development machine)
CASES = {
    "lj": ("ar", "lj_ar.pt", "", "", None),
    # the package's own step: zero energies that depend on the edges (gpu_check.py reference
    # writes the model)
    "zero": ("ar", "zero_ar.pt", "", "", None),
    # the graph built on the host and copied (on a GPU the default is graph device)
    "lj_graph_host": ("ar", "lj_ar.pt", " graph host", "", "lj"),
    "layerwise_graph_host": ("ar", "schnet_layerwise.pt", " graph host", "", "layerwise"),
    # calls captured as CUDA graphs and replayed (models without exchange calls; GPU only)
    "lj_cuda_graph": ("ar", "lj_ar.pt", " static_shapes yes cuda_graph yes", "", "lj"),
    "deep_cuda_graph": ("ar", "schnet_deep.pt", " static_shapes yes cuda_graph yes", "", "deep"),
    # the operator library's fused kernel (its CUDA kernel on a GPU), built on the checked machine
    "lj_fused": ("ar", "lj_ar_fused.pt", " library {kernels}", "", "lj"),
    # the exchange ops stage device rows through the host; validate runs the reference there too
    "layerwise": ("ar", "schnet_layerwise.pt", "", "fix dd all nvalchemi/dd validate 10 1e-10\n", None),
    "deep": ("ar", "schnet_deep.pt", "", "", None),
    # the halo's own graph (all-gathered positions) and padded inputs
    "gp": ("ar", "schnet_layerwise.pt", " halo gp", "", None),
    "static_shapes": ("ar", "schnet_layerwise.pt", " static_shapes yes", "", None),
    # a model nobody here wrote: a MACE export (e3nn's operations), float64, triclinic cell
    "mace": ("ho", "mace_ho_tiny.pt", "", "", None),
    # AOTInductor packages compiled on the checked machine for its device, the same weights
    "layerwise_aoti": ("ar", "schnet_layerwise.pt2", "", "", "layerwise"),
    "deep_aoti": ("ar", "schnet_deep.pt2", "", "", "deep"),
    # a package's run captured as a CUDA graph (AOTInductor's single-threaded runner)
    "deep_aoti_cuda_graph": ("ar", "schnet_deep.pt2", " static_shapes yes cuda_graph yes", "", "deep"),
}

PARITY_INPUT = """units {units}
atom_style atomic
read_data {data}
pair_style nvalchemi {model}{keywords} device {device}
pair_coeff * * {elements}
{extra}neighbor {neighbor} bin
neigh_modify every 1 delay 0 check yes
timestep {timestep}
fix nve all nve
thermo 10
{snapshots}"""

# the timed run (the second), then fix nvalchemi/dd's phase times of each step of a short run
TIMING_INPUT = """{system}pair_style nvalchemi {model} device {device}{threads}{keywords}
pair_coeff * * {elements}
neighbor {neighbor} bin
neigh_modify every 1 delay 0 check yes
timestep {timestep}
fix nve all nve
thermo {steps}
run 5
run {steps}
fix dd all nvalchemi/dd
thermo_style custom step f_dd[14] f_dd[15] f_dd[16] f_dd[17] f_dd[18] f_dd[10] f_dd[9]
thermo 1
run 5
"""
PHASES = ("graph", "tensors", "forward", "backward", "tally", "exchange", "glue")


class Timing(NamedTuple):
    """A timed system: `make` the lines that make it (None: the system's data file, replicated
    `replicate` times per side); with_cpu: also timed on the CPU (a .pt2 package is compiled for
    the checked device only); keywords: pair_style keywords."""
    name: str
    system: str
    make: Optional[str]
    replicate: int
    model: str
    steps: int
    with_cpu: bool
    keywords: str = ""


# the package's own step (the zero model) and the LJ model with the graph built on the device and
# on the host, 16k and 131k atoms; then models whose step is mostly the model's
TIMINGS = tuple(Timing(f"{model}_{size}_graph_{where}", "ar", melt_commands(cells, 1.5), 1, f"{model}_ar.pt",
                       steps, with_cpu and model == "lj", f" graph {where}")
                for model in ("zero", "lj")
                for size, cells, steps, with_cpu in (("16k", 16, 100, True), ("131k", 32, 50, False))
                for where in ("device", "host")) + (
           Timing("zero_16k_cuda_graph", "ar", melt_commands(16, 1.5), 1, "zero_ar.pt", 100, False,
                  " static_shapes yes cuda_graph yes"),
           Timing("lj_16k_cuda_graph", "ar", melt_commands(16, 1.5), 1, "lj_ar.pt", 100, False,
                  " static_shapes yes cuda_graph yes"),
           Timing("mpnn_3layer_4k", "ar", melt_commands(10, 1.5), 1, "schnet_layerwise.pt", 20, True),
           Timing("mpnn_3layer_4k_aoti", "ar", melt_commands(10, 1.5), 1, "schnet_layerwise.pt2", 20, False),
           Timing("mace_3k", "ho", None, 4, "mace_ho_tiny.pt", 10, True))


class RunFailed(Exception):
    pass


def run_lammps(args, nranks, rundir, text, timeout=600):
    with open(os.path.join(rundir, "in.check"), "w") as f:
        f.write(text)
    if nranks > 1 and not args.mpirun:
        raise SystemExit("FAIL: a run on several ranks needs --mpirun")
    cmd = ([args.mpirun, "-np", str(nranks)] if args.mpirun else []) + [os.path.abspath(args.lmp), "-in", "in.check"]
    try:
        proc = subprocess.run(cmd, cwd=rundir, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"{' '.join(cmd)} in {rundir}: no end after {timeout} s")
    if proc.returncode != 0:
        raise RunFailed(f"{' '.join(cmd)} in {rundir} (exit {proc.returncode}):\n"
                        f"{proc.stdout[-3000:]}\n{proc.stderr[-1500:]}")
    return proc.stdout


def data_file(folder, system):
    return os.path.join(folder, f"{system}.data")


def make_systems(args, folder):
    for system, settings in SYSTEMS.items():
        run_lammps(args, 1, folder, settings["make"] + f"write_data {system}.data\n")


def parity_run(args, workdir, datadir, case, device, nranks):
    """{step: {"globals": [...], "forces": [[id, fx, fy, fz], ...]}} of one case."""
    system, model, keywords, extra, _ = CASES[case]
    settings = SYSTEMS[system]
    model_path = os.path.join(os.path.abspath(args.models), model)
    if not os.path.exists(model_path):
        raise RunFailed(f"no model {model_path}")
    rundir = tempfile.mkdtemp(prefix=f"{case}.{device}.np{nranks}.", dir=workdir)
    output = run_lammps(args, nranks, rundir, PARITY_INPUT.format(
        data=data_file(datadir, system), model=model_path, keywords=keywords.format(kernels=args.kernels),
        device=device, extra=extra, units=settings["units"], elements=settings["elements"],
        neighbor=settings["neighbor"], timestep=settings["timestep"],
        snapshots=snapshot_commands(STEPS, "id fx fy fz", GLOBALS)))
    if "cuda_graph yes" in keywords and "captured as a CUDA graph" not in output:
        raise RunFailed("cuda_graph yes captured nothing: "
                        + " ".join(line for line in output.splitlines() if "cuda_graph" in line)[:500])
    return {str(step): {"globals": np.loadtxt(os.path.join(rundir, f"step{step}.global"), ndmin=1).tolist(),
                        "forces": np.loadtxt(os.path.join(rundir, f"step{step}.dump"), skiprows=9, ndmin=2).tolist()}
            for step in STEPS}


def worst_difference(tested, reference):
    """The largest relative difference over steps of energy and pressures (each) and forces."""
    worst = 0.0
    for step, ref in reference.items():
        got = tested[step]
        ref_f, got_f = np.array(ref["forces"]), np.array(got["forces"])
        if not np.array_equal(ref_f[:, 0], got_f[:, 0]):
            return float("inf")
        worst = worse(worst, relative_difference(got_f[:, 1:], ref_f[:, 1:]))
        for got_g, ref_g in zip(got["globals"], ref["globals"]):
            worst = worse(worst, relative_difference(np.array([got_g]), np.array([ref_g])))
    return worst


def write_zero_model(path):
    """The zero model (bench/run.py's ZeroEdges), for the LJ system."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run import ZeroEdges, save_model
    save_model(ZeroEdges(), path, cutoff=2.5, species=[18], units="lj", spec={"preset": "SPEC_LJ_HALO"})


def gpu_device():
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else None
    except ImportError:
        return None


def time_step(args, workdir, datadir, timing, steps, device, threads):
    """(seconds per step, atoms, {phase: mean seconds}) of one timed system on `device`."""
    settings = SYSTEMS[timing.system]
    make, r = timing.make, timing.replicate
    if make is None:
        make = (f"units {settings['units']}\natom_style atomic\n"
                f"read_data {data_file(datadir, timing.system)}\nreplicate {r} {r} {r}\n")
    rundir = tempfile.mkdtemp(prefix=f"time.{timing.name}.{device}.", dir=workdir)
    output = run_lammps(args, 1, rundir, TIMING_INPUT.format(
        system=make, model=os.path.join(os.path.abspath(args.models), timing.model), device=device,
        threads=f" threads {threads}" if threads else "", keywords=timing.keywords, steps=steps,
        elements=settings["elements"], neighbor=settings["neighbor"], timestep=settings["timestep"]), timeout=900)
    seconds, timed_steps = re.findall(r"Loop time of ([\d.eE+-]+) on \d+ procs for (\d+) steps", output)[1]
    phases = np.array(list(thermo_table(output.split("Loop time of")[-2]).values()))
    return (float(seconds) / int(timed_steps), int(re.findall(r"Loop time of .* steps with (\d+) atoms", output)[-1]),
            dict(zip(PHASES, phases[1:].mean(axis=0).tolist())))


def write_results(results, out):
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(f"# GPU check on {results['host']}: device {results['device']}, {results['torch']}\n\n"
                "| case | device | ranks | worst relative difference | ok |\n|---|---|---|---|---|\n")
        for p in results["parity"]:
            worst = f"{p['worst_relative']:.3g}" if "worst_relative" in p else p["error"].splitlines()[0][:120]
            f.write(f"| {p['case']} | {p['device']} | {p['ranks']} | {worst} | {p['ok']} |\n")
        f.write("\n| system | atoms | steps | cpu ms/step (threads) | device ms/step | device us/atom-step "
                "| cpu/device | device phases, ms (" + ", ".join(PHASES) + ") |\n|---|---|---|---|---|---|---|---|\n")
        for t in results["timings"]:
            cpu, gpu = t.get("cpu_seconds_per_step"), t.get("device_seconds_per_step")
            phases = t.get("device_phases", {})
            f.write(f"| {t['system']} | {t.get('atoms', '')} | {t['steps']} | "
                    + (f"{1e3 * cpu:.2f} ({t['cpu_threads']})" if cpu else t.get("error", "not run")[:80]) + " | "
                    + (f"{1e3 * gpu:.2f} | {1e6 * gpu / t['atoms']:.3f}" if gpu else " | ") + " | "
                    + (f"{cpu / gpu:.2f}x" if cpu and gpu else "") + " | "
                    + " ".join(f"{1e3 * phases[p]:.2f}" for p in PHASES if p in phases) + " |\n")


def check(args):
    started = time.monotonic()

    def time_left():
        return args.seconds <= 0 or time.monotonic() - started < args.seconds

    with open(args.reference) as f:
        reference = json.load(f)
    device = gpu_device()
    tested = device or "cpu"
    import torch
    results = {"host": platform.node(), "device": device or "none (cpu only)", "tolerance": TOLERANCE,
               "torch": f"torch {torch.__version__}", "parity": [], "timings": []}
    if device:
        results["gpu"] = torch.cuda.get_device_name(0)
    os.makedirs(args.out, exist_ok=True)
    failed = False
    datadir = os.path.dirname(os.path.abspath(args.reference))
    with tempfile.TemporaryDirectory(prefix="nvalchemi-gpu-check-") as workdir:
        # every case on 1 rank first, so that a run cut short by --seconds has seen each of them
        runs = [(tested, n) for n in ((1, 2, 4) if args.mpirun else (1,))]
        if device:
            runs.append(("cpu", 1))
        for run_device, nranks in runs:
            for case, (_, model, _, _, twin) in CASES.items():
                if args.cases and case not in args.cases.split(","):
                    continue
                if model.endswith(".pt2") and run_device != tested:
                    continue  # compiled for the tested device; the suite checks .pt2 on the CPU
                if "cuda_graph" in CASES[case][2] and run_device != "cuda":
                    continue  # a GPU's
                entry = {"case": case, "device": run_device, "ranks": nranks, "ok": False}
                if not time_left():
                    entry["error"] = "not run: out of time"
                else:
                    try:
                        entry["worst_relative"] = worst_difference(
                            parity_run(args, workdir, datadir, case, run_device, nranks), reference[twin or case])
                        entry["ok"] = entry["worst_relative"] <= TOLERANCE
                    except RunFailed as e:
                        entry["error"] = str(e)
                failed = failed or not entry["ok"]
                results["parity"].append(entry)
                print(f"{'ok' if entry['ok'] else 'FAIL':4s} {case} device {run_device} np{nranks}: "
                      + (f"{entry['worst_relative']:.3g}" if "worst_relative" in entry else entry["error"]),
                      flush=True)
                write_results(results, args.out)
        threads = args.cpu_threads or os.cpu_count()
        for timing in TIMINGS:
            steps = max(2, timing.steps // args.timing_divisor)
            entry = {"system": timing.name, "model": timing.model, "steps": steps, "cpu_threads": threads}
            try:
                for run_device, key, n in (("cpu", "cpu", threads), (device, "device", 0)):
                    if "cuda_graph" in timing.keywords and run_device != "cuda":
                        continue
                    if run_device and (timing.with_cpu or run_device == tested) and time_left():
                        entry[f"{key}_seconds_per_step"], entry["atoms"], entry[f"{key}_phases"] = time_step(
                            args, workdir, datadir, timing, steps, run_device, n)
            except RunFailed as e:
                entry["error"] = str(e)
            results["timings"].append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "error"}), entry.get("error", ""), flush=True)
            write_results(results, args.out)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("reference", "check"))
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="", help="launcher for runs on several ranks (none: 1 rank only)")
    parser.add_argument("--models", required=True, help="folder with the models CASES and TIMINGS name")
    parser.add_argument("--reference", help="reference.json (check)")
    parser.add_argument("--kernels", default="", help="the operator library nvalchemi_kernels.so (check)")
    parser.add_argument("--out", required=True, help="reference.json (reference) or a results folder (check)")
    parser.add_argument("--cpu-threads", type=int, default=0, help="LibTorch threads of the timed CPU runs")
    parser.add_argument("--timing-divisor", type=int, default=1, help="divide the timed steps (a quick CPU trial)")
    parser.add_argument("--cases", default="", help="the parity cases to run, comma-separated (default: all)")
    parser.add_argument("--seconds", type=float, default=0, help="start no run after this many seconds (0: no limit)")
    args = parser.parse_args()
    if args.mode == "reference":
        write_zero_model(os.path.join(args.models, "zero_ar.pt"))
        folder = os.path.dirname(os.path.abspath(args.out))
        make_systems(args, folder)
        with tempfile.TemporaryDirectory(prefix="nvalchemi-gpu-reference-") as workdir:
            reference = {case: parity_run(args, workdir, folder, case, "cpu", 1)
                         for case, (*_, twin) in CASES.items() if twin is None}
        with open(args.out, "w") as f:
            json.dump(reference, f)
        print(f"wrote {args.out}")
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
