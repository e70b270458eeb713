"""A tiny random MACE model (mace-torch; 2 interactions, H and O, r_max 3 A, fixed seed) saved as
mace-torch saves a trained one, and its exports by the one command a user runs,
nvalchemi-mace-export (python/nvalchemi_lammps/mace_export.py, installed with the nvalchemi-lammps package
next to this Python): halo layerwise and deep, float64 and float32; the layerwise export
updates owned rows only (owned_rows_only.py); and the file pair_style mace reads, written by
MACE's own mace_create_lammps_model (tiny.model-lammps.pt). With --packages, the AOTInductor packages (.pt2)
of the same model instead, the layerwise one updating owned rows only too: a test of its own, so
that their compile time keeps no other test waiting; kept between runs (harness.kept_file) under
a key of the model's parameters, the exporter's sources and the versions that compile them. With
--example, the package examples/mace and examples/dftd3 run (potentials/mace_ho_tiny.pt2, which
`make` writes): the layerwise float64 one, by the same command, so that the exporter's package
cache serves the tests' copy.

    python unittest/export/mace_models.py [--packages] <output dir>
    python unittest/export/mace_models.py --example <package>
"""

import os
import subprocess
import sys
import tempfile

import mace  # noqa: F401  (before e3nn)
import numpy as np
import torch
from e3nn import o3
from mace import modules
from owned_rows_only import require_owned_rows_only

R_MAX = 3.0


def tiny_mace(seed: int = 20261201) -> torch.nn.Module:
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        block = modules.interaction_classes["RealAgnosticResidualInteractionBlock"]
        return modules.ScaleShiftMACE(
            r_max=R_MAX, num_bessel=4, num_polynomial_cutoff=5, max_ell=2,
            interaction_cls=block, interaction_cls_first=block, num_interactions=2,
            num_elements=2, hidden_irreps=o3.Irreps("8x0e + 8x1o"), MLP_irreps=o3.Irreps("8x0e"),
            atomic_energies=np.array([-13.6, -432.1]), avg_num_neighbors=6.0,
            atomic_numbers=[1, 8], correlation=2, gate=torch.nn.functional.silu,
            atomic_inter_scale=0.7, atomic_inter_shift=0.05)
    finally:
        torch.set_default_dtype(previous)


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    source = os.path.join(outdir, "tiny.model")
    torch.save(tiny_mace(), source)
    export = os.path.join(os.path.dirname(sys.executable), "nvalchemi-mace-export")
    if not os.path.exists(export):
        sys.exit(f"FAIL: {export} is missing: tools/install-export-venvs.sh installs it")
    for halo in ("layerwise", "deep"):
        for dtype in ("float64", "float32"):
            subprocess.run([export, source, "-o", os.path.join(outdir, f"tiny_{halo}_{dtype}.pt"),
                            "--halo", halo, "--dtype", dtype], check=True)
    require_owned_rows_only(os.path.join(outdir, "tiny_layerwise_float64.pt"))
    # the file pair_style mace reads, as MACE's own tool writes it (tiny.model-lammps.pt), which
    # pair_style nvalchemi reads as it is; e3nn's checkpoint loading needs torch.load unrestricted
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "mace_create_lammps_model"), source,
                    "--dtype", "float64"], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1"))


# the packages the tests run: (halo, dtype)
PACKAGES = (("layerwise", "float64"), ("deep", "float32"))


def export_package(source: str, package: str, halo: str, dtype: str) -> None:
    """nvalchemi-mace-export's package of `source`: the one command the tests' packages and the
    example's are written by, so that they share the exporter's package cache."""
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "nvalchemi-mace-export"), source, "-o", package,
                    "--halo", halo, "--dtype", dtype], check=True)


def packages(outdir: str) -> None:
    """The AOTInductor packages of tiny.model (written by main), by nvalchemi-mace-export."""
    from harness import kept_file, package_key
    source = os.path.join(outdir, "tiny.model")
    parameters = [value.numpy() for value in torch.load(source, weights_only=False).state_dict().values()]
    for halo, dtype in PACKAGES:
        key = package_key(*parameters, mace.__version__, halo, dtype)
        package = os.path.join(outdir, f"tiny_{halo}_{dtype}.pt2")
        kept_file(key, package, lambda path: export_package(source, path, halo, dtype))
        if halo == "layerwise":
            require_owned_rows_only(package)


def example(package: str) -> None:
    """The layerwise float64 package of the tiny model at `package`, as packages() writes it."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "tiny.model")
        torch.save(tiny_mace(), source)
        export_package(source, package, "layerwise", "float64")


if __name__ == "__main__":
    if sys.argv[1] == "--packages":
        packages(sys.argv[2])
    elif sys.argv[1] == "--example":
        example(sys.argv[2])
    else:
        main(sys.argv[1])
