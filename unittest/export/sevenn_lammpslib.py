"""ASE's LAMMPSlib (ase.calculators.lammpslib) relaxes a rattled 8-atom silicon cell with the
float32 SevenNet-0 export (what `nvalchemi-sevenn-export 7net-0 -o sevennet0.pt` writes) through
LAMMPS' own Python module, here in build/venv; SevenNet's own ASE calculator, in SevenNet's venv
(a child process, --sevenn-python), relaxes the same start with the same optimizer (BFGS, fmax
1e-3 eV/A). Both end at the same energy (1e-6 relative: float32 rounding) and structure (1e-5 A),
and at LAMMPSlib's end point the two calculators give the same forces (to 1e-5 of the starting
forces' largest component).

    python sevenn_lammpslib.py --model sevenn0_layerwise_float32.pt --sevenn-python PY --workdir DIR
"""

import argparse
import os
import subprocess
import sys

import numpy as np

FMAX = 1e-3


def start_atoms():
    from ase.build import bulk
    atoms = bulk("Si", "diamond", a=5.43, cubic=True)
    atoms.rattle(stdev=0.05, seed=1)
    return atoms


def relax(atoms, calculator):
    """BFGS to FMAX: the end energy, positions, forces and the number of steps."""
    from ase.optimize import BFGS
    atoms.calc = calculator
    optimizer = BFGS(atoms, logfile=None)
    converged = optimizer.run(fmax=FMAX, steps=200)
    return {"energy": atoms.get_potential_energy(), "positions": atoms.get_positions(),
            "forces": atoms.get_forces(), "steps": optimizer.get_number_of_steps(),
            "converged": converged}


def reference(out, check_positions):
    """In SevenNet's venv: its calculator's relaxation, and its forces at `check_positions`."""
    import torch
    from sevenn.calculator import SevenNetCalculator
    torch.set_num_threads(1)
    calculator = SevenNetCalculator("7net-0", device="cpu")
    atoms = start_atoms()
    start_forces = atoms.copy()
    start_forces.calc = calculator
    f_start = start_forces.get_forces()
    result = relax(atoms, calculator)
    at_check = start_atoms()
    at_check.set_positions(np.load(check_positions))
    at_check.calc = calculator
    np.savez(out, f_start=f_start, f_check=at_check.get_forces(),
             **{k: np.asarray(v) for k, v in result.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model")
    parser.add_argument("--sevenn-python")
    parser.add_argument("--workdir")
    parser.add_argument("--reference", nargs=2, metavar=("OUT", "CHECK_POSITIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference:
        reference(*args.reference)
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lammps"))
    from harness import Checks
    from ase.calculators.lammpslib import LAMMPSlib
    checks = Checks()
    os.makedirs(args.workdir, exist_ok=True)

    calculator = LAMMPSlib(lmpcmds=[f"pair_style nvalchemi {os.path.abspath(args.model)}", "pair_coeff * * Si"],
                           atom_types={"Si": 1}, atom_type_masses={"Si": 28.0855},
                           log_file=os.path.join(args.workdir, "log.lammpslib"), keep_alive=True)
    tested = relax(start_atoms(), calculator)
    check_positions = os.path.join(args.workdir, "lammpslib_end.npy")
    np.save(check_positions, tested["positions"])
    out = os.path.join(args.workdir, "sevenn_reference.npz")
    child = subprocess.run([args.sevenn_python, os.path.abspath(__file__), "--reference", out, check_positions],
                           capture_output=True, text=True, timeout=600)
    checks.expect(child.returncode == 0, f"SevenNet's relaxation runs (exit {child.returncode})"
                  + ("" if child.returncode == 0 else f":\n{child.stdout[-2000:]}{child.stderr[-3000:]}"))
    checks.exit_on_failure()
    ref = np.load(out)

    print(f"LAMMPSlib: {tested['steps']} BFGS steps to E = {tested['energy']:.8f} eV; "
          f"SevenNet: {int(ref['steps'])} steps to E = {float(ref['energy']):.8f} eV")
    checks.expect(bool(tested["converged"]) and bool(ref["converged"]),
                  f"both relaxations reach fmax {FMAX} eV/A")
    checks("energy at the end: LAMMPSlib vs SevenNet (relative)",
           abs(tested["energy"] - float(ref["energy"])) / abs(float(ref["energy"])), 1e-6)
    checks("positions at the end: largest difference (A)",
           float(np.max(np.abs(tested["positions"] - ref["positions"]))), 1e-5, parity=False)
    scale = float(np.max(np.abs(ref["f_start"])))
    checks("forces at LAMMPSlib's end point (of the starting forces)",
           float(np.max(np.abs(tested["forces"] - ref["f_check"]))) / scale, 1e-5)
    checks.exit_on_failure()


if __name__ == "__main__":
    main()
