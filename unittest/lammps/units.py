"""A model written in metal units runs in other unit styles, converted at load (doc/pair_nvalchemi.rst).

Two committed metal-units models, each on its own small system:
  * mace_ho_tiny.pt: H and O in a triclinic cell, forces by autograd of node energies (the edge
    gradients), halo layerwise with exchange calls;
  * ewald_nacl.pt: distorted rock salt, forces and virial returned by the model, which reads
    positions and cell (reciprocal space); its extra outputs `charges` and `kspace_energy` have no
    dimension the package knows and stay in the model's units.
Each runs with `units metal` on 1 rank (the reference), `units real` on 1 and 2 ranks and
`units electron` on 2 ranks, the same geometry written in each style's length unit. Checks, to
1e-12 relative: the potential energy times the energy factor, forces times energy/length,
per-atom energies, the virial (the pressure compute's virial times volume over LAMMPS' nktv2p of
each style) times the energy factor; the extra outputs unchanged. The factors are written here as
LAMMPS and CODATA 2006 state them, independently of the package's table.
"""

import argparse
import os
import tempfile

import numpy as np

from harness import Checks, relative_difference, run_input

KCAL_PER_EV = 23.060549      # LAMMPS' metal -> real factor (utils::get_conversion_factor)
BOHR = 0.52917720859         # Angstrom
HARTREE = 27.21138386        # eV
# style: (Angstrom per length unit, energy units per eV, LAMMPS' nktv2p of update.cpp)
STYLES = {"metal": (1.0, 1.0, 1.6021765e6),
          "real": (1.0, KCAL_PER_EV, 68568.415),
          "electron": (BOHR, 1.0 / HARTREE, 2.94210108e13)}
RUNS = (("metal", 1), ("real", 1), ("real", 2), ("electron", 2))

INPUT = """units {units}
atom_style atomic
read_data {data}
mass * 1.0
pair_style nvalchemi {model}
pair_coeff * * {elements}
compute pv all pressure NULL virial
compute pea all pe/atom
{extra_computes}thermo_style custom step pe vol c_pv[1] c_pv[2] c_pv[3] c_pv[4] c_pv[5] c_pv[6]{extra_thermo}
thermo_modify norm no format float %.17g
run 0
write_dump all custom atoms.dump id fx fy fz c_pea{extra_atoms} modify sort id format float %.17g
"""


def mace_system(rng):
    """51 H and O atoms, at least 1 A apart, in the triclinic cell of examples/mace."""
    lx = ly = lz = 8.0
    xy, xz, yz = 0.8, -0.5, 0.4
    h = np.array([[lx, 0, 0], [xy, ly, 0], [xz, yz, lz]])
    frac = []
    while len(frac) < 51:
        f = rng.random(3)
        if all(np.linalg.norm((((f - g) + 0.5) % 1.0 - 0.5) @ h) > 1.0 for g in frac):
            frac.append(f)
    return np.array(frac) @ h, [1] * 34 + [2] * 17, (lx, ly, lz, xy, xz, yz)


def nacl_system(rng):
    """Rock salt, 2x2x2 conventional cells of 5.64 A, every atom moved up to 0.1 A."""
    a = 5.64
    basis = [((0, 0, 0), 1), ((0.5, 0.5, 0), 1), ((0.5, 0, 0.5), 1), ((0, 0.5, 0.5), 1),
             ((0.5, 0, 0), 2), ((0, 0.5, 0), 2), ((0, 0, 0.5), 2), ((0.5, 0.5, 0.5), 2)]
    x, types = [], []
    for cell in np.ndindex(2, 2, 2):
        for b, t in basis:
            x.append((np.array(cell) + b) * a)
            types.append(t)
    x = np.array(x) + rng.uniform(-0.1, 0.1, (len(x), 3))
    return x, types, (2 * a, 2 * a, 2 * a, 0.0, 0.0, 0.0)


def write_data(path, x, types, box, per_angstrom):
    """A LAMMPS data file of the system with every length in a unit of which one Angstrom holds
    `per_angstrom`."""
    lx, ly, lz, xy, xz, yz = (v * per_angstrom for v in box)
    with open(path, "w") as f:
        f.write(f"units test\n\n{len(x)} atoms\n2 atom types\n\n0 {lx:.17g} xlo xhi\n0 {ly:.17g} ylo yhi\n"
                f"0 {lz:.17g} zlo zhi\n{xy:.17g} {xz:.17g} {yz:.17g} xy xz yz\n\nAtoms # atomic\n\n")
        for i, (p, t) in enumerate(zip(x * per_angstrom, types), start=1):
            f.write(f"{i} {t} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")


def run(args, workdir, case, units, nranks):
    rundir = os.path.join(workdir, f"{case['name']}.{units}.np{nranks}")
    angstrom, _, _ = STYLES[units]
    data = os.path.join(workdir, f"{case['name']}.{units}.data")
    if not os.path.exists(data):
        write_data(data, case["x"], case["types"], case["box"], 1.0 / angstrom)
    proc = run_input(args.lmp, args.mpirun, nranks, rundir, f"{case['name']} {units} np{nranks}",
                     INPUT.format(units=units, data=data, **case["input"]))
    thermo = proc.stdout.split("Step ")[-1].split("Loop time")[0].splitlines()
    names, values = thermo[0].split(), [float(v) for v in thermo[1].split()]
    atoms = np.loadtxt(os.path.join(rundir, "atoms.dump"), skiprows=9, ndmin=2)
    return {"log": proc.stdout, "thermo": dict(zip(["Step"] + names, values)), "atoms": atoms}


def in_metal(result, units, extra_thermo):
    """The run's energy, forces, per-atom energies and virial in metal units (eV, A), the extra
    outputs as they were."""
    angstrom, per_ev, nktv2p = STYLES[units]
    t = result["thermo"]
    virial = np.array([t[f"c_pv[{k}]"] for k in range(1, 7)]) * t["Volume"] / nktv2p
    return {"energy": np.array([t["PotEng"]]) / per_ev,
            "forces": result["atoms"][:, 1:4] / per_ev / angstrom,
            "atom energies": result["atoms"][:, 4] / per_ev,
            "virial": virial / per_ev,
            **{name: np.array([t[name]]) for name in extra_thermo},
            **({"charges": result["atoms"][:, 5]} if result["atoms"].shape[1] > 5 else {})}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--potentials", required=True, help="the committed potentials/ folder")
    parser.add_argument("--tol", type=float, default=1e-12)
    args = parser.parse_args()

    rng = np.random.default_rng(20261206)
    x, types, box = mace_system(rng)
    mace = {"name": "mace", "x": x, "types": types, "box": box, "extra_thermo": [],
            "input": {"model": os.path.join(os.path.abspath(args.potentials), "mace_ho_tiny.pt"), "elements": "H O",
                      "extra_computes": "", "extra_thermo": "", "extra_atoms": ""}}
    x, types, box = nacl_system(rng)
    ewald = {"name": "ewald", "x": x, "types": types, "box": box, "extra_thermo": ["c_ek"],
             "input": {"model": os.path.join(os.path.abspath(args.potentials), "ewald_nacl.pt"), "elements": "Na Cl",
                       "extra_computes": "compute q all nvalchemi/atom charges\n"
                                         "compute ek all nvalchemi/global kspace_energy\n",
                       "extra_thermo": " c_ek", "extra_atoms": " c_q"}}

    check = Checks(60)
    with tempfile.TemporaryDirectory(prefix="nvalchemi-units-") as workdir:
        for case in (mace, ewald):
            reference = None
            for units, nranks in RUNS:
                result = run(args, workdir, case, units, nranks)
                values = in_metal(result, units, case["extra_thermo"])
                if reference is None:
                    reference = values
                    check.expect("converted to" not in result["log"], f"{case['name']}: metal run converts nothing")
                    check.expect(np.max(np.abs(values["forces"])) > 1e-3 and abs(values["virial"]).max() > 1e-3,
                                 f"{case['name']}: forces and virial not zero")
                    continue
                check.expect(f"works in metal units: converted to {units}" in result["log"],
                             f"{case['name']} {units}: the conversion logged")
                for key, value in values.items():
                    check(f"{case['name']} {units} np{nranks} {key}", relative_difference(value, reference[key]),
                          args.tol)
    print(f"largest difference: {check.worst:.3e}")
    check.exit_on_failure()


if __name__ == "__main__":
    main()
