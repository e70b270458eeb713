"""How long an AOTInductor package takes to write, and what the time goes to
(doc/Howto_nvalchemi_benchmarks.rst, "Compile time"). No timed assertions: the figures are read
off the JSON lines and the table.

    compile_time.py --out DIR [--models lj,schnet,mace_tiny,mace_medium,sevennet0]
                    [--settings default,sequential,wrapper_O0] [--build build]

Each model is written by its exporter's Python API (export.save_aoti_model for the test models
LJ and SchNet, nvalchemi_lammps.mace_export for a tiny MACE and one of MACE-MP-0 medium's size
with random weights, nvalchemi_lammps.sevenn_export for the pretrained SevenNet-0), float64
except SevenNet-0 (float32, as shipped), in a process of its own with an empty Inductor cache
("cold"), then again with the cache the first left ("warm"). Per run: the trace of forward and
backward with its export, AOTInductor's compile (export.COMPILE_SECONDS), the process's wall
time, and the package's call on a 64-atom random cell (milliseconds, median of 10 after 2).
The warm run keeps its package in an empty package cache (nvalchemi_lammps.package_cache; off
for the cold run), and a third run ("kept") copies it from there.
Of the compile, *cxx*: the C++ compiler's share (Inductor's AotCodeCompiler.compile: the object
files and the link); the rest is Inductor's lowering in Python.
Settings: default; sequential (the wrapper's and the kernels' object files compiled one after
the other, as AOTInductor does, not side by side as the exporter does,
export.wrapper_beside_kernels); wrapper_O0 (AOT_INDUCTOR_COMPILE_WRAPPER_OPT_LEVEL=O0: the
generated run function compiled without optimization; the kernels keep theirs).

    compile_time.py one --model M --out FILE.pt2      (in the model's python: one run, one JSON line)
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# each model's python, relative to the build folder (the venvs make test makes)
PYTHONS = {"lj": "venv", "schnet": "venv", "mace_tiny": "venv-mace", "mace_medium": "venv-mace",
           "sevennet0": "venv-sevenn"}
# (the environment of each; NVALCHEMI_BENCH_SEQUENTIAL is read by this script's `one` alone)
SETTINGS = {"default": {}, "sequential": {"NVALCHEMI_BENCH_SEQUENTIAL": "1"},
            "wrapper_O0": {"AOT_INDUCTOR_COMPILE_WRAPPER_OPT_LEVEL": "O0"}}


def write_model(name, path):
    """Write model `name` to the package `path` with its exporter; (species, cutoff, dtype)."""
    import torch
    from nvalchemi_lammps import export
    if name == "lj":
        from lennard_jones import LennardJones
        export.save_aoti_model(LennardJones(1.0, 1.0, 2.5, True), path, cutoff=2.5, species=[18], units="lj")
        return [18], 2.5, torch.float64
    if name == "schnet":
        import schnet
        export.save_aoti_model(schnet.SchNet(True), path, cutoff=schnet.CUTOFF, species=schnet.SPECIES, units="lj",
                               spec={"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": schnet.LAYERS,
                                     "exchange_feature_width": schnet.FEATURES})
        return schnet.SPECIES, schnet.CUTOFF, torch.float64
    if name.startswith("mace"):
        from nvalchemi_lammps import mace_export
        if name == "mace_tiny":
            from mace_models import tiny_mace
            model = tiny_mace()
        else:
            from gpu_race import mace_model
            model = mace_model(tiny=False)
        meta = mace_export.export(model, path)
        return meta["species"], meta["cutoff"], torch.float64
    from nvalchemi_lammps import sevenn_export
    meta = sevenn_export.export(sevenn_export.load("7net-0"), path)
    return meta["species"][:4], meta["cutoff"], torch.float32


def call_milliseconds(path, species, cutoff, dtype):
    """The package's call on a 64-atom random cell: median milliseconds of 10 calls after 2."""
    import torch
    from nvalchemi_lammps.check import random_cell
    from nvalchemi_lammps.model_file import LoadedModel
    from nvalchemi_lammps.periodic import periodic_inputs
    positions, numbers, cell = random_cell(species, cutoff, 64, 7, torch.float64)
    inputs = periodic_inputs(positions, numbers, cell, cutoff)
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    model = LoadedModel(path)
    times = []
    for call in range(12):
        start = time.perf_counter()
        model(inputs)
        if call >= 2:
            times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def one(args):
    for folder in ("python", "models", "bench", os.path.join("unittest", "export")):
        sys.path.insert(0, os.path.join(ROOT, folder))
    from nvalchemi_lammps import export
    if os.environ.get("NVALCHEMI_BENCH_SEQUENTIAL") == "1":
        export.wrapper_beside_kernels = contextlib.nullcontext
    start = time.monotonic()
    species, cutoff, dtype = write_model(args.model, args.out)
    wall = time.monotonic() - start
    from torch._dynamo.utils import compilation_time_metrics
    phases = {entry["phase"]: round(entry["seconds"], 1) for entry in export.COMPILE_SECONDS}
    phases.setdefault("compile", 0.0)  # copied from the package cache
    phases["cxx"] = round(sum(compilation_time_metrics.get("AotCodeCompiler.compile", [])), 1)
    print(json.dumps({"model": args.model, "wall_s": round(wall, 1), **phases,
                      "call_ms": round(call_milliseconds(args.out, species, cutoff, dtype), 3),
                      "bytes": os.path.getsize(args.out)}))


def markdown(rows):
    lines = ["| model | setting | cache | trace and export (s) | compile (s) | of it cxx (s) | wall (s) | call (ms) | MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['setting']} | {r['cache']} | failed: {r['error'][:120]} ||||||")
            continue
        lines.append(f"| {r['model']} | {r['setting']} | {r['cache']} | {r.get('trace and export', '')} | "
                     f"{r.get('compile', '')} | {r.get('cxx', '')} | {r['wall_s']} | {r['call_ms']} | {r['bytes'] / 1e6:.1f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="all", choices=("all", "one"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--model")
    parser.add_argument("--models", default=",".join(PYTHONS))
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    if args.mode == "one":
        return one(args)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    results = os.path.join(args.out, "compile_time.jsonl")
    open(results, "w").close()
    for name in args.models.split(","):
        python = os.path.join(args.build, PYTHONS[name], "bin", "python")
        for setting in args.settings.split(","):
            with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache, \
                    tempfile.TemporaryDirectory(prefix="package-cache-") as packages:
                for state in ("cold", "warm", "kept"):
                    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, **SETTINGS[setting],
                               NVALCHEMI_PACKAGE_CACHE="off" if state == "cold" else packages)
                    proc = subprocess.run([python, __file__, "one", "--model", name, "--out",
                                           os.path.join(args.out, f"{name}_{setting}_{state}.pt2")],
                                          capture_output=True, text=True, env=env)
                    row = {"setting": setting, "cache": state}
                    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
                    if proc.returncode or not lines:
                        row.update(model=name, error=(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"])
                        row["error"] = row["error"][0]
                    else:
                        row.update(json.loads(lines[-1]))
                    rows.append(row)
                    with open(results, "a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    with open(os.path.join(args.out, "compile_time.md"), "w") as f:
        f.write(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
