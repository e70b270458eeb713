"""The GPU check of pair_style nvalchemi (run by bench/gpu_check.sh; doc/Build_nvalchemi.rst).

    gpu_check.py reference --lmp LMP --models DIR --out reference.json
        the parity system (system.data, beside reference.json) and, on 1 rank with device cpu,
        energies, pressures and forces of the parity cases after run 0 and after 20 NVE
        steps, in full precision (made on the development machine's CPU)
    gpu_check.py check --lmp LMP --models DIR --reference reference.json --out DIR [--mpirun M]
        the same cases on the same system.data on the device LibTorch sees (cuda, or cpu where
        there is none) on 1, 2 and 4 ranks (sharing the one GPU), and on this machine's CPU, each against the reference (1e-10 relative); then
        the step time of a 16k-atom Lennard-Jones system and of the 3-layer message-passing
        model, cpu against the device, in the same run. Writes results.json and results.md.

Needs python3 with numpy and (for `check`) torch, only to ask whether a GPU is there.
Exits non-zero when a parity case fails.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unittest", "lammps"))
from harness import melt_commands, relative_difference, seconds_per_step, snapshot_commands  # noqa: E402

TOLERANCE = 1e-10
STEPS = (0, 20)
GLOBALS = ("pe", "pxx", "pyy", "pzz", "pxy", "pxz", "pyz")

# name: model file, pair_style keywords, extra input lines (after pair_coeff)
CASES = {
    "lj": ("lj_ar.pt", "", ""),
    # the exchange ops stage device rows through the host; validate runs the reference there too
    "layerwise": ("schnet_layerwise.pt", "", "fix dd all nvalchemi/dd validate 10 1e-10\n"),
    "deep": ("schnet_deep.pt", "", ""),
    # the halo's own graph (all-gathered positions) and padded inputs
    "gp": ("schnet_layerwise.pt", " halo gp", ""),
    "static_shapes": ("schnet_layerwise.pt", " static_shapes yes", ""),
}

# the parity system, made once on 1 rank (create_atoms numbers atoms, and displace_atoms draws
# its random numbers, by rank) and read by every run
SYSTEM_INPUT = """{system}displace_atoms all random 0.05 0.05 0.05 8765 units lattice
write_data system.data
"""

PARITY_INPUT = """units lj
atom_style atomic
read_data {data}
pair_style nvalchemi {model}{keywords} device {device}
pair_coeff * * Ar
{extra}neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.002
fix nve all nve
thermo 10
{snapshots}"""

TIMING_INPUT = """{system}pair_style nvalchemi {model} device {device}{threads}
pair_coeff * * Ar
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix nve all nve
thermo {steps}
run 5
run {steps}
"""

# what is timed: name, model, fcc cells per side (4 atoms each), steps
TIMINGS = (("lj_16k", "lj_ar.pt", 16, 100), ("mpnn_3layer_4k", "schnet_layerwise.pt", 10, 20))


def run_lammps(args, nranks, rundir, text, timeout=900):
    with open(os.path.join(rundir, "in.check"), "w") as f:
        f.write(text)
    cmd = ([args.mpirun, "-np", str(nranks)] if args.mpirun else []) + [os.path.abspath(args.lmp), "-in", "in.check"]
    if nranks > 1 and not args.mpirun:
        raise SystemExit("FAIL: a run on several ranks needs --mpirun")
    proc = subprocess.run(cmd, cwd=rundir, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} in {rundir} (exit {proc.returncode}):\n"
                         f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def make_system(args, workdir):
    """The parity system's data file (500 atoms, perturbed fcc, with velocities)."""
    run_lammps(args, 1, workdir, SYSTEM_INPUT.format(system=melt_commands(5, 1.5)))
    return os.path.join(workdir, "system.data")


def parity_run(args, workdir, data, case, device, nranks):
    """{step: {"globals": [...], "forces": [[id, fx, fy, fz], ...]}} of one case."""
    model, keywords, extra = CASES[case]
    rundir = tempfile.mkdtemp(prefix=f"{case}.{device}.np{nranks}.", dir=workdir)
    run_lammps(args, nranks, rundir, PARITY_INPUT.format(
        data=data, model=os.path.join(os.path.abspath(args.models), model), keywords=keywords,
        device=device, extra=extra, snapshots=snapshot_commands(STEPS, "id fx fy fz", GLOBALS)))
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
        worst = max(worst, relative_difference(got_f[:, 1:], ref_f[:, 1:]))
        for got_g, ref_g in zip(got["globals"], ref["globals"]):
            worst = max(worst, relative_difference(np.array([got_g]), np.array([ref_g])))
    return worst


def gpu_device():
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else None
    except ImportError:
        return None


def time_step(args, workdir, name, model, cells, steps, device, threads):
    rundir = tempfile.mkdtemp(prefix=f"time.{name}.{device}.", dir=workdir)
    output = run_lammps(args, 1, rundir, TIMING_INPUT.format(
        system=melt_commands(cells, 1.5), model=os.path.join(os.path.abspath(args.models), model),
        device=device, threads=f" threads {threads}" if threads else "", steps=steps), timeout=1800)
    return seconds_per_step(output)


def check(args):
    with open(args.reference) as f:
        reference = json.load(f)
    device = gpu_device()
    tested = device or "cpu"
    results = {"host": platform.node(), "device": device or "none (cpu only)", "tolerance": TOLERANCE,
               "parity": [], "timings": []}
    if device:
        import torch
        results["gpu"] = torch.cuda.get_device_name(0)
    os.makedirs(args.out, exist_ok=True)
    failed = False
    with tempfile.TemporaryDirectory(prefix="nvalchemi-gpu-check-") as workdir:
        data = os.path.join(os.path.dirname(os.path.abspath(args.reference)), "system.data")
        runs = [(tested, n) for n in ((1, 2, 4) if args.mpirun else (1,))]
        if device:
            runs.append(("cpu", 1))
        for case in CASES:
            for run_device, nranks in runs:
                worst = worst_difference(parity_run(args, workdir, data, case, run_device, nranks),
                                         reference[case])
                ok = worst <= TOLERANCE
                failed = failed or not ok
                results["parity"].append({"case": case, "device": run_device, "ranks": nranks,
                                          "worst_relative": worst, "ok": ok})
                print(f"{'ok' if ok else 'FAIL':4s} {case} device {run_device} np{nranks}: {worst:.3g}", flush=True)
        threads = args.cpu_threads or os.cpu_count()
        for name, model, cells, steps in TIMINGS:
            steps = max(2, steps // args.timing_divisor)
            cpu = time_step(args, workdir, name, model, cells, steps, "cpu", threads)
            entry = {"system": name, "atoms": 4 * cells ** 3, "steps": steps, "cpu_threads": threads,
                     "cpu_seconds_per_step": cpu}
            if device:
                gpu = time_step(args, workdir, name, model, cells, steps, device, 0)
                entry.update(gpu_seconds_per_step=gpu, gpu_speedup=cpu / gpu)
            results["timings"].append(entry)
            print(json.dumps(entry), flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(f"# GPU check on {results['host']}: device {results['device']}\n\n"
                "| case | device | ranks | worst relative difference | ok |\n|---|---|---|---|---|\n")
        for p in results["parity"]:
            f.write(f"| {p['case']} | {p['device']} | {p['ranks']} | {p['worst_relative']:.3g} | {p['ok']} |\n")
        f.write("\n| system | atoms | cpu ms/step (threads) | device ms/step | speed-up |\n|---|---|---|---|---|\n")
        for t in results["timings"]:
            gpu = t.get("gpu_seconds_per_step")
            f.write(f"| {t['system']} | {t['atoms']} | {1e3 * t['cpu_seconds_per_step']:.2f} ({t['cpu_threads']}) | "
                    + (f"{1e3 * gpu:.2f} | {t['gpu_speedup']:.2f}x |\n" if gpu else "no GPU | |\n"))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("reference", "check"))
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="", help="launcher for 2-rank runs (none: 1 rank only)")
    parser.add_argument("--models", required=True, help="folder with lj_ar.pt, schnet_layerwise.pt, schnet_deep.pt")
    parser.add_argument("--reference", help="reference.json (check)")
    parser.add_argument("--out", required=True, help="reference.json (reference) or a results folder (check)")
    parser.add_argument("--cpu-threads", type=int, default=0, help="LibTorch threads of the timed CPU runs")
    parser.add_argument("--timing-divisor", type=int, default=1, help="divide the timed steps (a quick CPU trial)")
    args = parser.parse_args()
    if args.mode == "reference":
        with tempfile.TemporaryDirectory(prefix="nvalchemi-gpu-reference-") as workdir:
            data = make_system(args, os.path.dirname(os.path.abspath(args.out)))
            reference = {case: parity_run(args, workdir, data, case, "cpu", 1) for case in CASES}
        with open(args.out, "w") as f:
            json.dump(reference, f)
        print(f"wrote {args.out}")
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
