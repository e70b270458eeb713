"""SevenNet exports for the parity tests, by the nvalchemi-sevenn-export command as a user runs it
(python/nvalchemi_lammps/sevenn_export.py):

  * the pretrained SevenNet-0 the sevenn wheel ships (7net-0): layerwise in float64 (updating
    owned rows only: owned_rows_only.py) and float32;
  * the pretrained multi-fidelity SevenNet-MF-0 (7net-mf-0) at its PBE fidelity, layerwise in
    float64; without --modal the command must stop and name the fidelities;
  * a SevenNet of the user's own training: `sevenn train` on sevenn_train.yaml (two epochs of a
    tiny H/O model on EMT-labelled frames written here) writes a checkpoint, exported layerwise
    and deep (SevenNet-0's deep ghost shell, 5 layers x 5 A, is too large for a test), and
    deployed by SevenNet's own `sevenn deploy` (trained_deployed.pt, float32: what pair_style
    e3gnn reads);
  * SevenNet-0 deployed by `sevenn deploy 7net-0` (sevenn0_deployed.pt), which one rank runs on
    small Si cells with periodic images folded;
  * links to the wheel's checkpoints of the two pretrained models, the oracles' sources.

With --packages, the AOTInductor packages (.pt2) of SevenNet-0 (float32, as shipped, and float64,
which examples/production runs) and the trained checkpoint (layerwise, float64, updating owned
rows only) instead, by the same command, kept between runs
(harness.kept_file) under a key of the checkpoint, the arguments, the exporter's sources and the
versions that compile them (a test of its own, so that the compile keeps no other test waiting).

    python unittest/export/sevenn_models.py [--packages] <output dir>
"""

import os
import shutil
import subprocess
import sys

import numpy as np

from owned_rows_only import require_owned_rows_only


def training_frames(path: str) -> None:
    """Six jittered 27-atom H/O cells labelled by ASE's EMT (energy, forces, stress)."""
    from ase import Atoms
    from ase.calculators.emt import EMT
    from ase.io import write
    rng = np.random.default_rng(20261204)
    grid = np.array([(i, j, k) for i in range(3) for j in range(3) for k in range(3)], float)
    frames = []
    for _ in range(6):
        positions = (grid + 0.5 + rng.uniform(-0.1, 0.1, grid.shape)) * 1.9
        atoms = Atoms(numbers=rng.choice([1, 8], len(grid)), positions=positions, cell=np.eye(3) * 5.7, pbc=True)
        atoms.calc = EMT()
        atoms.get_potential_energy()
        atoms.get_stress()
        frames.append(atoms)
    write(path, frames)


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    bin_dir = os.path.dirname(sys.executable)
    export = os.path.join(bin_dir, "nvalchemi-sevenn-export")

    def run(*args):
        subprocess.run([export, *args], check=True)

    # the oracles' sources: the wheel's checkpoints of the pretrained names the exports are made from
    from sevenn.util import pretrained_name_to_path
    for name, link in (("7net-0", "sevenn0.pth"), ("7net-mf-0", "sevenn_mf0.pth")):
        link = os.path.join(outdir, link)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(pretrained_name_to_path(name), link)

    run("7net-0", "-o", os.path.join(outdir, "sevenn0_layerwise_float64.pt"), "--dtype", "float64")
    require_owned_rows_only(os.path.join(outdir, "sevenn0_layerwise_float64.pt"))
    run("7net-0", "-o", os.path.join(outdir, "sevenn0_layerwise_float32.pt"))

    # a multi-fidelity model without --modal: a message naming the fidelities, not a guess
    proc = subprocess.run([export, "7net-mf-0", "-o", os.path.join(outdir, "unwritten.pt")],
                          capture_output=True, text=True)
    if proc.returncode == 0 or "give --modal" not in proc.stderr or "PBE" not in proc.stderr:
        sys.exit(f"FAIL: nvalchemi-sevenn-export 7net-mf-0 without --modal did not stop with a message:\n"
                 f"{proc.stderr[-2000:]}")
    run("7net-mf-0", "--modal", "PBE", "-o", os.path.join(outdir, "sevenn_mf0_pbe_layerwise_float64.pt"),
        "--dtype", "float64")

    train_dir = os.path.join(outdir, "train")
    shutil.rmtree(train_dir, ignore_errors=True)
    os.makedirs(train_dir)
    training_frames(os.path.join(train_dir, "train.extxyz"))
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sevenn_train.yaml"),
                os.path.join(train_dir, "input.yaml"))
    subprocess.run([os.path.join(bin_dir, "sevenn"), "train", "input.yaml"], cwd=train_dir, check=True,
                   stdout=subprocess.DEVNULL)
    checkpoint = os.path.join(train_dir, "checkpoint_2.pth")
    for halo in ("layerwise", "deep"):
        run(checkpoint, "-o", os.path.join(outdir, f"trained_{halo}_float64.pt"), "--dtype", "float64", "--halo", halo)
    # the file pair_style e3gnn reads, as SevenNet's own tool writes it (float32), which
    # pair_style nvalchemi reads as it is
    subprocess.run([os.path.join(bin_dir, "sevenn"), "deploy", checkpoint, "-o",
                    os.path.join(outdir, "trained_deployed")], check=True, stdout=subprocess.DEVNULL)
    # SevenNet-0 as a user deploys it for pair_style e3gnn: on a small cell's one rank its 5 layers
    # of 5 A run on the folded cell, not on a ghost shell of tens of thousands of images
    subprocess.run([os.path.join(bin_dir, "sevenn"), "deploy", "7net-0", "-o",
                    os.path.join(outdir, "sevenn0_deployed")], check=True, stdout=subprocess.DEVNULL)


# the packages the tests run: (checkpoint in the output dir, package, export arguments)
# (SevenNet-MF-0 compiles for minutes too: checked by hand, not here)
PACKAGES = (("sevenn0.pth", "sevenn0_layerwise_float32.pt2", ()),
            ("sevenn0.pth", "sevenn0_layerwise_float64.pt2", ("--dtype", "float64")),
            ("train/checkpoint_2.pth", "trained_layerwise_float64.pt2", ("--dtype", "float64")))


def packages(outdir: str) -> None:
    """The AOTInductor packages of the checkpoints main linked or trained."""
    import sevenn
    from harness import kept_file, package_key
    export = os.path.join(os.path.dirname(sys.executable), "nvalchemi-sevenn-export")
    for checkpoint, file, args in PACKAGES:
        checkpoint = os.path.join(outdir, checkpoint)
        key = package_key(checkpoint, *args, sevenn.__version__)
        kept_file(key, os.path.join(outdir, file),
                  lambda path: subprocess.run([export, checkpoint, "-o", path, *args], check=True))
        if "float64" in args:
            require_owned_rows_only(os.path.join(outdir, file))


if __name__ == "__main__":
    if sys.argv[1] == "--packages":
        packages(sys.argv[2])
    else:
        main(sys.argv[1])
