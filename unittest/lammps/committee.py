"""Committee deviation (compute nvalchemi/deviation) against an independent oracle and across
decompositions.

A committee of three SchNet-style models (potentials/committee_ar_*.pt: members 0 and 1 built for
halo mode layerwise, member 2 for deep) as sub-styles of pair_style hybrid/overlay; member 0
drives, 1 and 2 are `drive no`. The system is an fcc argon slab (x in [0.5, 4.5] lattice units of a
box 14 long with fixed x boundaries; two atom types, both Ar), so that on 4x1x1 one rank owns no
atoms but holds ghosts and another has neither (more than the deep member's ghost shell away).

- Oracle, after `run 0` on 1 rank: each member evaluated alone on the whole periodic cell in
  plain PyTorch (schnet.reference), the deviations computed from those by DeePMD-kit's formulas
  in numpy: every atom's force deviation and the 7 global values, to --tol relative.
- Parity: per-atom deviations and the global values after 0 and --steps NVE steps on 2 (1x2x1),
  4 (4x1x1, empty subdomains) and 3 ranks (comm_style tiled) equal the 1-rank run's to --tol.
- The deepmd-layout file written by fix ave/time, and fix nvalchemi/dd snapshot_if: the frames
  written are those whose largest force deviation is above the threshold.
"""

import argparse
import os
import tempfile

import numpy as np

from harness import (Checks, decomposition, input_head, relative_difference, run_snapshots, snapshot_commands,
                     write_system)
from empty_ranks import run_statistic
from mp_parity import evaluate_oracle

# written once on 1 rank (harness.write_system: displaced, two types, velocities), so that atom
# IDs do not depend on the decomposition
SLAB = """boundary f p p
region box block 0 14 0 5 0 5
create_box 2 box
region slab block 0.5 4.5 INF INF INF INF
create_atoms 1 region slab
"""
GLOBALS = [f"c_dev[{k}]" for k in range(1, 8)] + ["pe", "lx", "ly", "lz"]
MODEL_DEVI_COLUMNS = "max_devi_v min_devi_v avg_devi_v max_devi_f min_devi_f avg_devi_f devi_e"


def committee_lines(potentials):
    members = [f"{potentials}/committee_ar_0.pt", f"{potentials}/committee_ar_1.pt drive no",
               f"{potentials}/committee_ar_2_deep.pt drive no"]
    return ("pair_style hybrid/overlay " + " ".join(f"nvalchemi {m}" for m in members) + "\n" +
            "".join(f"pair_coeff * * nvalchemi {k + 1} Ar Ar\n" for k in range(3)) +
            "compute dev all nvalchemi/deviation\nthermo_style custom step pe c_dev[*]\nthermo_modify norm no\n")


def run(args, workdir, label, nranks, grid, tiled, steps, extra=""):
    comm, balance = decomposition(grid, tiled)
    text = input_head(f"read_data {args.data}", committee_lines(args.potentials), boundary="boundary f p p",
                      comm=comm, balance=balance) + extra
    text += snapshot_commands(steps, "id xu yu zu c_dev", GLOBALS)
    return run_snapshots(args.lmp, args.mpirun, nranks, os.path.join(workdir, label), label, text, steps)


def oracle(args, atoms, cell):
    """Each member alone on the whole cell in plain PyTorch (mp_parity.evaluate_oracle); deepmd's
    deviations in numpy."""
    energies, forces, virials = [], [], []
    for name in ("committee_ar_0.pt", "committee_ar_1.pt", "committee_ar_2_deep.pt"):
        result = evaluate_oracle(os.path.join(args.potentials, name), atoms[:, 1:4], cell)
        energies.append(float(result["energy"][0]))
        forces.append(result["forces"])
        xx, yy, zz, xy, xz, yz = result["virial"]
        virials.append(np.array([xx, xy, xz, xy, yy, yz, xz, yz, zz]))
    n = atoms.shape[0]
    per_atom = np.linalg.norm(np.std(np.array(forces), axis=0), axis=-1)
    v = np.std(np.array(virials) / n, axis=0)
    e = np.std(np.array(energies) / n)
    return energies[0], per_atom, np.array([v.max(), v.min(), np.linalg.norm(v) / 3, per_atom.max(),
                                            per_atom.min(), per_atom.mean(), e])


def frames_in(path):
    """Timesteps of the extended-XYZ frames in `path`."""
    steps = []
    for line in open(path):
        if "timestep=" in line:
            steps.append(int(line.split("timestep=")[1].split()[0]))
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--potentials", required=True, help="the folder of committee_ar_*.pt")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--tol", type=float, default=1e-10)
    args = parser.parse_args()
    args.potentials = os.path.abspath(args.potentials)
    check = Checks(60)
    steps = [0, args.steps]
    every = max(1, args.steps // 4)

    with tempfile.TemporaryDirectory(prefix="nvalchemi-committee-") as workdir:
        args.data = write_system(args.lmp, args.mpirun, SLAB, workdir)
        single, _ = run(args, workdir, "np1", 1, (1, 1, 1), False, steps)

        atoms, g = single[0]
        energy, per_atom, values = oracle(args, atoms, np.diag(g[8:11]))
        check("per-atom force deviation vs oracle", relative_difference(atoms[:, 4], per_atom), args.tol)
        check("7 global deviations vs oracle", relative_difference(g[0:7], values), args.tol)
        check("energy of the driving member vs oracle", relative_difference(g[7:8], np.array([energy])), args.tol)
        check.expect(values[3] > 1e-3 and values[6] > 0.0, f"the members disagree (max_devi_f {values[3]:.3g})")

        for label, nranks, grid, tiled in (("np2_1x2x1", 2, (1, 2, 1), False), ("np4_4x1x1", 4, (4, 1, 1), False),
                                           ("np3_tiled", 3, (0, 0, 0), True)):
            tested, output = run(args, workdir, label, nranks, grid, tiled, steps)
            if label == "np4_4x1x1":
                check.expect(run_statistic(output, "Nlocal")[2] == 0 and run_statistic(output, "Nghost")[2] == 0,
                             "on 4x1x1 a rank has neither atoms nor ghost atoms")
            for step in steps:
                check(f"{label} step {step}: per-atom deviations vs np1",
                      relative_difference(tested[step][0][:, 4], single[step][0][:, 4]), args.tol)
                check(f"{label} step {step}: global deviations vs np1",
                      relative_difference(tested[step][1][:8], single[step][1][:8]), args.tol)

        # the deepmd file and the frames selected above a threshold (between the run's values)
        threshold = float(0.5 * (single[0][1][3] + single[args.steps][1][3]))
        extra = (f'fix devi all ave/time {every} 1 {every} c_dev[*] file model_devi.out format " %.17g" '
                 f'title1 "# model deviation" title2 "# step {MODEL_DEVI_COLUMNS}"\n'
                 f'variable above equal "c_dev[4] > {threshold!r}"\n'
                 f"fix dd all nvalchemi/dd snapshot {every} candidates.xyz snapshot_if v_above\n")
        run(args, workdir, "np2_selected", 2, (1, 2, 1), False, steps, extra)
        rundir = os.path.join(workdir, "np2_selected")
        table = np.loadtxt(os.path.join(rundir, "model_devi.out"), ndmin=2)
        header = open(os.path.join(rundir, "model_devi.out")).read().splitlines()[1]
        check.expect(header.split()[1:] == ["step"] + MODEL_DEVI_COLUMNS.split(),
                     f"model_devi.out has deepmd's columns: {header}")
        rows = {int(row[0]): row[1:] for row in table}
        for step in steps:
            check(f"model_devi.out step {step} vs compute",
                  relative_difference(rows[step], single[step][1][:7]), args.tol)
        expected = sorted(s for s, row in rows.items() if row[3] > threshold)
        written = frames_in(os.path.join(rundir, "candidates.xyz"))
        check.expect(0 < len(expected) < len(rows) and sorted(set(written)) == expected,
                     f"snapshot_if wrote the frames above max_devi_f {threshold:.4g}: {written} (expected {expected})")
    check.exit_on_failure()


if __name__ == "__main__":
    main()
