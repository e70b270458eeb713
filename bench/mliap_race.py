"""MACE side by side in LAMMPS: MACE's own recommended route, LAMMPS' ML-IAP package (pair_style
mliap unified with the file `mace_create_lammps_model --format mliap` writes, run as mliap/kk on
Kokkos' OpenMP backend, as MACE's class requires), built by bench/mliap_peer_build.sh, against
pair_style nvalchemi with the same weights exported by nvalchemi-mace-export for halo mode
layerwise, as TorchScript and as an AOTInductor package compiled for this CPU. Not part of make
test (the `bench` label runs a smoke run: tiny MACE, smallest cell).

    make mliap-race       (the peer built, then this script with its defaults), or by hand:
    bench/mliap_peer_build.sh build
    build/venv-mace/bin/python bench/mliap_race.py --lmp build/lammps/lmp \\
        --peer-lmp build/mliap-peer/build/lmp --out build/bench/mliap_race [--cells 3 4 5] \\
        [--grids 1x1x1 2x1x1 2x2x1] [--dtypes float64 float32] [--steps 2] [--tiny]

The model: a MACE of MACE-MP-0 medium's architecture (128x0e + 128x1o, L = 3, correlation 3, two
interactions, 89 elements, r_max 6 A; bench/gpu_race.py's mace_model) with random weights and the
full Clebsch-Gordan basis MACE-MP-0 has (ML-IAP's writer converts the model to cuEquivariance's
layout, which fails for a reduced basis). --tiny: 8 channels, L = 2. Systems: rattled diamond Si,
cells^3 x 8 atoms, LAMMPS' default metal skin (2 A). Each (style, dtype, cell, grid) is one
LAMMPS run: `run 0` (energy and forces, dumped), then `run --steps` timed ("Loop time"), every
rank on one thread under /usr/bin/time (peak resident memory per rank), its address space capped.
Agreement is against MACE's own ASE calculator in float64 on the same cell: energy per atom and
the largest force component difference, float32 runs included (their figure is float32's). A
run that is refused or fails is recorded with its message. Writes <out>/results.jsonl and
<out>/results.md. --check exits non-zero where a run of this package fails or, in float64,
differs from the calculator by more than 1e-9 eV/atom or eV/A (the smoke test).

ML-IAP's run needs the mace venv's packages inside LAMMPS' embedded Python (PYTHONPATH: that
venv's site-packages, LAMMPS' python/ for lammps.mliap, and cuEquivariance, which the writer
imports, from the peer folder), and MACE_ALLOW_CPU=true when the file is written (MACE's class
keeps its settings in the pickled file).
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_race import mace_model  # noqa: E402
from sevenn_race import console, make_cell, race_arguments, race_one, record, write_data  # noqa: E402

STYLES = ("mliap", "nvalchemi layerwise", "nvalchemi compiled")
# what --check allows a float64 run of this package against MACE's calculator
CHECK_TOLERANCE = 1e-9


def peer_environment(peer_lmp):
    """The environment ML-IAP's embedded Python needs (see the module's docstring)."""
    build = os.path.abspath(os.path.join(os.path.dirname(peer_lmp), "..", ".."))
    site = [p for p in sys.path if p.endswith("site-packages")]
    extra = glob.glob(os.path.join(build, "mliap-peer", "pydeps", "lib", "python*", "site-packages"))
    paths = [os.path.join(build, "lammps-src", "python")] + extra + site
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), MACE_ALLOW_CPU="true")


def cueq_dependencies(peer_lmp):
    """cuEquivariance (pure Python, no GPU kernels) in the peer folder, for ML-IAP's writer; why
    not, where pip cannot install it (else "")."""
    target = os.path.abspath(os.path.join(os.path.dirname(peer_lmp), "..", "pydeps"))
    if glob.glob(os.path.join(target, "lib", "python*", "site-packages", "cuequivariance_torch")):
        return ""
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--prefix", target, "--ignore-installed",
                           "--no-deps", "cuequivariance", "cuequivariance-torch"], capture_output=True, text=True)
    return "" if proc.returncode == 0 else "pip could not install cuequivariance: " + proc.stderr.strip()[-160:]


def write_models(workdir, tiny, dtypes, peer_lmp, styles):
    """{(style, dtype): (pair lines, note)}: each style's file of the same weights."""
    import torch
    source = os.path.join(workdir, "mace.model")
    torch.save(mace_model(tiny, reduced_cg=False), source)
    pairs = {}
    for dtype in dtypes:
        if "mliap" in styles and peer_lmp:
            model = os.path.join(workdir, f"mace_{dtype}.model")
            subprocess.run(["cp", source, model], check=True)
            proc = subprocess.run(console("mace.cli.create_lammps_model", model, "--format", "mliap", "--dtype", dtype),
                                  cwd=workdir, capture_output=True, text=True, env=peer_environment(peer_lmp))
            written = model + "-mliap_lammps.pt"
            pairs[("mliap", dtype)] = ((f"pair_style mliap unified {written} 0\npair_coeff * * Si", "")
                                       if proc.returncode == 0 else
                                       ("", "mace_create_lammps_model failed: " + proc.stderr.strip().splitlines()[-1][:160]))
        for style, suffix in (("nvalchemi layerwise", "pt"), ("nvalchemi compiled", "pt2")):
            if style not in styles:
                continue
            output = os.path.join(workdir, f"mace_layerwise_{dtype}.{suffix}")
            proc = subprocess.run(console("nvalchemi_lammps.mace_export", source, "-o", output, "--dtype", dtype),
                                  cwd=workdir, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"nvalchemi-mace-export failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
            pairs[(style, dtype)] = (f"pair_style nvalchemi {output}\npair_coeff * * Si", "")
    return source, pairs


def oracle(source, atoms):
    """MACE's own calculator in float64: energy (eV) and forces (eV/A)."""
    from mace.calculators import MACECalculator
    atoms = atoms.copy()
    atoms.calc = MACECalculator(model_paths=source, device="cpu", default_dtype="float64")
    return atoms.get_potential_energy(), atoms.get_forces()


def markdown(results):
    lines = ["| atoms | grid | dtype | style | us/atom-step | peak MB/rank (max) | dE/atom (eV) | max dF (eV/A) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r["status"] == "ok":
            lines.append(f"| {r['atoms']} | {r['grid']} | {r['dtype']} | {r['style']} | "
                         f"{1e6 * r['s_per_step'] / r['atoms']:.0f} | {r['peak_rss_mb_max']:.0f} | "
                         f"{r['de_per_atom_ev']:.1e} | {r['max_df_ev_per_a']:.1e} |")
        else:
            lines.append(f"| {r['atoms']} | {r['grid']} | {r['dtype']} | {r['style']} | "
                         f"refused or failed: {r['status']} | | | |")
    return "\n".join(lines) + "\n"


def failed_checks(results):
    """This package's runs that failed or, in float64, disagree with MACE's calculator."""
    bad = []
    for r in results:
        if not r["style"].startswith("nvalchemi"):
            continue
        if r["status"] != "ok":
            bad.append(f"{r['style']} {r['dtype']} {r['grid']}: {r['status']}")
        elif r["dtype"] == "float64" and not (r["de_per_atom_ev"] <= CHECK_TOLERANCE
                                              and r["max_df_ev_per_a"] <= CHECK_TOLERANCE):
            bad.append(f"{r['style']} {r['grid']}: dE/atom {r['de_per_atom_ev']:.2e}, max dF {r['max_df_ev_per_a']:.2e}")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    race_arguments(parser, [3, 4, 5], ["1x1x1", "2x1x1", "2x2x1"])
    parser.add_argument("--peer-lmp", default="", help="LAMMPS with ML-IAP and Python (mliap_peer_build.sh); "
                                                       "without it, or where it is missing, ML-IAP is not raced")
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--styles", nargs="+", default=list(STYLES), choices=STYLES)
    parser.add_argument("--tiny", action="store_true", help="a tiny MACE (8 channels, L = 2) instead")
    parser.add_argument("--check", action="store_true", help="exit non-zero where a run of this package fails "
                                                             "or, in float64, disagrees with MACE's calculator")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.makedirs(args.out, exist_ok=True)
    peer = args.peer_lmp if args.peer_lmp and os.path.exists(args.peer_lmp) else ""
    if "mliap" in args.styles and not peer:
        print(f"note: no ML-IAP peer build ({args.peer_lmp or 'no --peer-lmp'}): ML-IAP is not raced "
              "(bench/mliap_peer_build.sh builds it)")
    elif "mliap" in args.styles:
        missing = cueq_dependencies(peer)
        if missing:
            print(f"note: {missing}: ML-IAP is not raced")
            peer = ""
    workdir = tempfile.mkdtemp(prefix="mliap_race.")
    source, pairs = write_models(workdir, args.tiny, args.dtypes, peer, args.styles)
    results = []
    with open(os.path.join(args.out, "results.jsonl"), "w") as jsonl:
        for cells in args.cells:
            atoms = make_cell(cells)
            data = os.path.join(workdir, f"si_{len(atoms)}.data")
            write_data(atoms, data)
            reference = oracle(source, atoms)
            for dtype in args.dtypes:
                for style in args.styles:
                    if (style, dtype) not in pairs:
                        continue
                    pair, note = pairs[(style, dtype)]
                    for grid in args.grids:
                        result = {"bench": "mliap_race", "style": style, "dtype": dtype, "atoms": len(atoms),
                                  "grid": grid}
                        if note:
                            result["status"] = note
                        elif style == "mliap":
                            result.update(race_one(args, peer, pair, data, grid, atoms, reference, workdir,
                                                   lmp_args=["-k", "on", "t", "1", "-sf", "kk"],
                                                   env=peer_environment(peer)))
                        else:
                            result.update(race_one(args, args.lmp, pair, data, grid, atoms, reference, workdir))
                        result["bench"] = "mliap_race"
                        record(result, results, jsonl)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(results))
    print(markdown(results))
    bad = failed_checks(results) if args.check else []
    if bad:
        sys.exit("FAIL: " + "; ".join(bad))


if __name__ == "__main__":
    main()
