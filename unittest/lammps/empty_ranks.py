"""Ranks without atoms, with and without ghost atoms, must never hang a run: every rank makes the
same exchange calls, and a model whose calls depend on its rank's data stops every rank with an
error.

The system is an fcc slab (x in [0.2, 13.9] lattice units) in a box 40 lattice units long in x
(periodic, or fixed with --boundary f), 4 in y and z. On a 4x1x1 grid the first two subdomains
share the slab, the fourth owns no atoms but holds ghosts of it (across the periodic boundary)
and the third owns none and holds none, more than 6 lattice units (10 sigma, 21 A) from the
slab, farther than any model's ghost cutoff; on a 2x1x1 grid with a fixed x boundary the second
rank owns no atoms and holds no ghosts; on 3x1x1 the second shares the slab and the third has
nothing. The test checks from LAMMPS' run statistics that some rank had neither.

Without --expect-error: after `run 0` on --np ranks, energy, virial, every atom's force and
per-atom energy equal the same model's 1-rank run to --tol relative. With --expect-error TEXT:
the run on --np ranks must stop with an error containing TEXT (and the model's file name); a
run that does not end within --timeout seconds fails as a hang either way.
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

from harness import (Checks, input_head, kokkos_switches, ran_nvalchemi_kk, relative_difference, run_lammps,
                     run_snapshots, snapshot_commands, write_system)

SLAB = ("boundary {boundary} p p\n"
        "region box block 0 40 0 4 0 4\n"
        "create_box 2 box\n"
        "region slab block 0.2 13.9 INF INF INF INF\n"
        "create_atoms 1 region slab\n")

OBSERVE = """compute pe all pe/atom
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[*]
thermo_modify norm no
"""
DUMP_COLUMNS = "id fx fy fz c_pe"
GLOBALS = ["pe", "c_vir[1]", "c_vir[2]", "c_vir[3]", "c_vir[4]", "c_vir[5]", "c_vir[6]"]


def run_statistic(output, name):
    """(average, maximum, minimum) of a per-rank count LAMMPS prints after the last run
    ("Nlocal:", "Nghost:")."""
    ave, high, low = re.findall(rf"{name}:\s+(\S+) ave\s+(\S+) max\s+(\S+) min", output)[-1]
    return float(ave), float(high), float(low)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--units", default="lj")
    parser.add_argument("--lattice", default="0.8442", help="LAMMPS' fcc lattice argument in --units")
    parser.add_argument("--elements", nargs=2, default=["Ar", "Ar"], help="the element of each of the two types")
    parser.add_argument("--keywords", default="", help="more pair_style keywords (e.g. 'halo gp')")
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--grid", type=int, nargs=3, required=True)
    parser.add_argument("--tiled", action="store_true", help="comm_style tiled (on the --grid partition)")
    parser.add_argument("--boundary", choices=("p", "f"), default="p", help="the x boundary")
    parser.add_argument("--kokkos", action="store_true", help="run under -k on t 1 -sf kk")
    parser.add_argument("--expect-error", default="", help="the run on --np ranks must stop with this error")
    parser.add_argument("--tol", type=float, default=1e-10)
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    lmp_args = kokkos_switches(1) if args.kokkos else None
    check = Checks(48)

    with tempfile.TemporaryDirectory(prefix="nvalchemi-empty-") as workdir:
        data = write_system(args.lmp, args.mpirun, SLAB.format(boundary=args.boundary), workdir, args.units,
                            args.lattice)

        def input_text(nranks, grid):
            comm = ("comm_style tiled\n" if args.tiled and nranks > 1 else "") + "processors " + " ".join(map(str, grid))
            keywords = f" {args.keywords}" if args.keywords else ""
            pair = f"pair_style nvalchemi {args.model}{keywords}\npair_coeff * * {' '.join(args.elements)}"
            return input_head(f"read_data {data}", pair, units=args.units, boundary=f"boundary {args.boundary} p p",
                              comm=comm, neighbor=False, dt=None, integrate=False) + OBSERVE

        label = f"np{args.np}"
        if args.expect_error:
            rundir = os.path.join(workdir, label)
            os.makedirs(rundir)
            with open(os.path.join(rundir, "in.test"), "w") as f:
                f.write(input_text(args.np, args.grid) + "run 0\n")
            start = time.monotonic()
            proc = run_lammps(args.lmp, args.mpirun, args.np, "in.test", rundir, timeout=args.timeout,
                              lmp_args=lmp_args)
            seconds = time.monotonic() - start
            output = proc.stdout + proc.stderr
            errors = [line for line in output.splitlines() if "ERROR" in line]
            print(f"the run on {args.np} ranks ended in {seconds:.1f} s (exit {proc.returncode}): "
                  f"{errors[0] if errors else 'no error'}")
            named = any(args.expect_error in line and os.path.basename(args.model) in line for line in errors)
            if proc.returncode == 0 or not named:
                sys.exit(f"FAIL: expected an error naming {os.path.basename(args.model)} and containing "
                         f"'{args.expect_error}'\n{output[-4000:]}")
            print("EMPTY_RANKS " + json.dumps({"model": os.path.basename(args.model), "np": args.np,
                                               "error_after_seconds": round(seconds, 1)}))
            return

        snapshot = snapshot_commands([0], DUMP_COLUMNS, GLOBALS)
        single, _ = run_snapshots(args.lmp, args.mpirun, 1, os.path.join(workdir, "np1"), "the 1-rank run",
                                  input_text(1, (1, 1, 1)) + snapshot, [0], lmp_args=lmp_args)
        tested, output = run_snapshots(args.lmp, args.mpirun, args.np, os.path.join(workdir, label),
                                       f"the {args.np}-rank run", input_text(args.np, args.grid) + snapshot, [0],
                                       lmp_args=lmp_args)
        (atoms1, globals1), (atoms, globals_) = single[0], tested[0]
        check("energy vs np1", relative_difference(globals_[0:1], globals1[0:1]), args.tol)
        check("virial vs np1", relative_difference(globals_[1:], globals1[1:]), args.tol)
        check("forces vs np1", relative_difference(atoms[:, 1:4], atoms1[:, 1:4]), args.tol)
        check("per-atom energies vs np1", relative_difference(atoms[:, 4], atoms1[:, 4]), args.tol)
        nlocal, nghost = run_statistic(output, "Nlocal"), run_statistic(output, "Nghost")
        print(f"atoms per rank: {nlocal[2]:g} to {nlocal[1]:g}; ghost atoms per rank: {nghost[2]:g} to {nghost[1]:g}")
        if nlocal[2] != 0 or nghost[2] != 0:
            check.failures.append("no rank was without atoms and ghost atoms: the test's geometry is off")
        if args.kokkos and not ran_nvalchemi_kk(output):
            check.failures.append("the run under -sf kk did not use pair_style nvalchemi/kk")
        print("PARITY " + json.dumps({"test": "empty_ranks", "model": os.path.basename(args.model), "np": args.np,
                                      "grid": args.grid, "tiled": args.tiled, "boundary": args.boundary,
                                      "keywords": args.keywords, "max_relative_difference": check.worst}))
        check.exit_on_failure()


if __name__ == "__main__":
    main()
