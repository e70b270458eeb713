"""Whole workflows around `run`: each equal, to --tol relative, to the same workflow run
uninterrupted on 1 rank (for the LJ model also to LAMMPS' own lj/cut doing the same).

One case = one workflow, for the LJ model (--kind lj, `pair_style nvalchemi` alone) or a
message-passing model (--kind mp, overlaid on lj/cut so that atoms keep their distance). Every
run dumps positions, velocities, forces and per-atom energies of every atom, and the thermo
table (energy, virial, volume, pressure) in full precision, every --every steps; the checks
compare every frame the reference and the tested runs share.

  restart    write_restart mid-run on --np ranks, read_restart on another rank count, continue
  data       the same through write_data / read_data
  minimize   min_style cg and fire: the same path and final state on --np ranks (forces, which
             the minimization drives to zero, judged against their size at its start)
  npt        fix npt for 200 steps: pressure and volume path
  rerun      rerun of the reference run's dump on --np ranks gives its energies and forces
  chain      the run as `run N pre no post no` pieces
  balance    fix balance during the run: brick (shift) and tiled (rcb)
  boundary   shrink-wrapped (s s p) and fixed (f p p) boundaries around a film
  null_rank  hybrid/overlay with the model on type 1 only (NULL type 2); one rank owns only type 2
  isolated   atoms with no neighbor within the cutoff, alone on their ranks
  hot        a hot system whose atoms change rank every few steps (and the test says how many)
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from harness import (SYSTEMS, input_head, make_system, read_dumps, relative_difference, run_input,
                     single_rank_kept, thermo_table, worse, write_system)

DUMP_COLUMNS = "id proc type xu yu zu vx vy vz fx fy fz c_pe"
THERMO = "step pe c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6] vol press"
# per-atom and global quantities compared, as columns of the dump (after id) and the thermo table
ATOM_FIELDS = {"positions": slice(3, 6), "velocities": slice(6, 9), "forces": slice(9, 12), "atomic_energies": 12}
GLOBAL_FIELDS = {"energy": 0, "virial": slice(1, 7), "volume": 7, "pressure": 8}

PAIRS = {
    "lj": "pair_style nvalchemi {model}\npair_coeff * * Ar Ar\n",
    "lj/cut": "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\n",
    "mp": ("pair_style hybrid/overlay nvalchemi {model} lj/cut 2.5\n"
           "pair_coeff * * nvalchemi Ar Ar\npair_coeff * * lj/cut 1.0 1.0\n"),
}
# the model on type 1 only; lj/cut covers what it leaves, so that the LJ variant is lj/cut itself
NULL_PAIRS = {
    "lj": ("pair_style hybrid/overlay nvalchemi {model} lj/cut 2.5\npair_coeff * * nvalchemi Ar NULL\n"
           "pair_coeff 1 2 lj/cut 1.0 1.0\npair_coeff 2 2 lj/cut 1.0 1.0\n"),
    "lj/cut": PAIRS["lj/cut"],
    "mp": ("pair_style hybrid/overlay nvalchemi {model} lj/cut 2.5\n"
           "pair_coeff * * nvalchemi Ar NULL\npair_coeff * * lj/cut 1.0 1.0\n"),
}

EXTRA_SYSTEMS = {
    # a film with vacuum on both sides in x (for non-periodic boundaries)
    "film": ("region box block 0 12 0 5 0 5\ncreate_box 2 box\n"
             "region film block 3.2 8.9 INF INF INF INF\ncreate_atoms 1 region film\n"),
    # the slab of harness.SYSTEMS plus three atoms far from it and from each other: on a 4x1x1
    # grid ranks 2 and 3 own only atoms without neighbors
    "isolated": (SYSTEMS["slab"].format(region="block", tilt="") +
                 "create_atoms 1 single 8 2.5 2.5\ncreate_atoms 1 single 10 1 1\ncreate_atoms 1 single 10 3.5 3.5\n"),
}

OBSERVE = """compute pe all pe/atom
compute vir all pressure NULL virial
thermo_style custom {thermo}
thermo_modify norm no format float %.17g
thermo {every}
dump snap all custom {every} snap.*.dump {columns}
dump_modify snap sort id format float %.17g
"""


class Run:
    """One LAMMPS job: its input is made of the header (system and pair), fixes, observation and
    a body; its result is {step: (atom rows, thermo values)} over the frames it dumped."""

    def __init__(self, args, workdir):
        self.args, self.workdir = args, workdir

    def dir(self, label):
        return os.path.join(self.workdir, label.replace("/", "_").replace(" ", "_"))

    def __call__(self, label, nranks, pair, body, read="", fixes="fix integrate all nve\n", comm="",
                 boundary="", dt=0.005, writes_files=False):
        """The frames of the run ({step: (atom rows, thermo values)}); a single-rank run is kept
        (harness.single_rank_kept) unless it `writes_files` that a later run reads."""
        rundir = self.dir(label)
        text = input_head(read or f"read_data {self.args.data}", pair.format(model=self.args.model),
                          boundary=boundary, comm=comm, dt=dt, integrate=False)
        text += fixes + OBSERVE.format(thermo=THERMO, every=self.args.every, columns=DUMP_COLUMNS) + body

        def make():
            run_input(self.args.lmp, self.args.mpirun, nranks, rundir, label, text, timeout=600)
            table = thermo_table(open(os.path.join(rundir, "log.lammps")).read())
            frames = {}
            for name in os.listdir(rundir):
                if name.startswith("snap.") and name.endswith(".dump"):
                    frames.update(read_dumps(os.path.join(rundir, name)))
            arrays = {}
            for step in frames.keys() & table.keys():
                arrays[f"atoms{step}"], arrays[f"thermo{step}"] = frames[step], table[step]
            return arrays

        arrays = make() if writes_files else single_rank_kept(self.args.lmp, nranks, text, make)
        return {int(name[5:]): (arrays[name], arrays["thermo" + name[5:]])
                for name in arrays if name.startswith("atoms")}


class Checks:
    def __init__(self, tol):
        self.tol, self.failures, self.worst, self.count = tol, [], 0.0, 0

    def compare(self, name, tested, reference, atom_fields=tuple(ATOM_FIELDS), global_fields=tuple(GLOBAL_FIELDS),
                first_frame_scale=()):
        """Every frame both runs hold: the same atoms, and each field within tol. Fields named in
        first_frame_scale are judged against their magnitude in the first frame (forces that a
        minimization drives to zero: their rounding error stays that of the starting forces)."""
        shared = sorted(set(tested) & set(reference))
        if len(shared) < 2:
            self.failures.append(f"{name}: the runs share {len(shared)} frames (expected several)")
            return
        first = reference[shared[0]][0]
        worst = 0.0
        for step in shared:
            (t_atoms, t_glob), (r_atoms, r_glob) = tested[step], reference[step]
            if not np.array_equal(t_atoms[:, 0], r_atoms[:, 0]):
                self.failures.append(f"{name} step {step}: the runs hold different atoms")
                continue
            values = {}
            for f in atom_fields:
                t, r = t_atoms[:, ATOM_FIELDS[f]], r_atoms[:, ATOM_FIELDS[f]]
                values[f] = (float(np.max(np.abs(t - r)) / np.max(np.abs(first[:, ATOM_FIELDS[f]])))
                             if f in first_frame_scale else relative_difference(t, r))
            values.update({f: relative_difference(np.atleast_1d(t_glob[GLOBAL_FIELDS[f]]),
                                                  np.atleast_1d(r_glob[GLOBAL_FIELDS[f]])) for f in global_fields})
            for field, value in values.items():
                worst = worse(worst, value)
                self.count += 1
                if not value <= self.tol:
                    self.failures.append(f"{name} step {step}: {field} differs by {value:.3e} relative")
        self.worst = worse(self.worst, worst)
        print(f"{name:60s} {len(shared):3d} frames  worst {worst:10.3e}  {'ok' if worst <= self.tol else 'FAIL'}")

    def require(self, ok, message):
        print(("ok   " if ok else "FAIL ") + message)
        if not ok:
            self.failures.append(message)


def merged(*parts):
    out = {}
    for part in parts:
        out.update(part)
    return out


def other_rank_count(np_):
    return 2 if np_ != 2 else 3


# ---- cases ---------------------------------------------------------------------------------

def case_restart(args, run, checks, pair, references):
    for via, write, read in (("restart", "write_restart state.restart", "read_restart ../{first}/state.restart"),
                             ("data", "write_data state.data nocoeff", "read_data ../{first}/state.data")):
        if via != args.case:
            continue
        # the uninterrupted run is that of cases chain and balance (one kept reference run)
        first = run(f"{via}.first.np{args.np}", args.np, pair, f"run 50\n{write}\n")
        second = run(f"{via}.second.np{other_rank_count(args.np)}", other_rank_count(args.np), pair,
                     "reset_timestep 50\nrun 50\n" if via == "data" else "run 50\n", read=read.format(
                         first=f"{via}.first.np{args.np}"))
        for ref_name, reference in references(lambda p: run(f"{via}.uninterrupted.{p}", 1, PAIRS[p], "run 100\n")):
            checks.compare(f"{via}: np{args.np} -> np{other_rank_count(args.np)} vs uninterrupted {ref_name}",
                           merged(first, second), reference)


def case_minimize(args, run, checks, pair, references):
    # tolerances 0: every run takes all 60 iterations; dumps every 10 follow the path
    for style in ("cg", "fire"):
        body = f"min_style {style}\nminimize 0 0 60 100000\n"
        tested = run(f"minimize.{style}.np{args.np}", args.np, pair, body, fixes="")
        for ref_name, reference in references(lambda p: run(f"minimize.{style}.{p}", 1, PAIRS[p], body, fixes="")):
            checks.compare(f"minimize {style}: np{args.np} vs {ref_name}", tested, reference,
                           atom_fields=("positions", "forces", "atomic_energies"), first_frame_scale=("forces",))
        checks.require(max(tested) == 60, f"minimize {style} ran all 60 iterations (last frame {max(tested)})")


def case_npt(args, run, checks, pair, references):
    fixes = "fix integrate all npt temp 1.0 1.0 0.5 iso 1.0 1.0 2.0\n"
    tested = run(f"npt.np{args.np}", args.np, pair, "run 200\n", fixes=fixes)
    for ref_name, reference in references(lambda p: run(f"npt.{p}", 1, PAIRS[p], "run 200\n", fixes=fixes)):
        checks.compare(f"npt: np{args.np} vs {ref_name}", tested, reference)
    volumes = [tested[s][1][GLOBAL_FIELDS["volume"]] for s in sorted(tested)]
    checks.require(abs(volumes[-1] / volumes[0] - 1) > 1e-3,
                   f"npt changed the volume ({volumes[0]:.4f} -> {volumes[-1]:.4f})")


def case_rerun(args, run, checks, pair, references):
    every = args.every
    # the reference run writes the trajectory the rerun reads back
    trajectory = (f"dump traj all custom {every} traj.dump id type x y z ix iy iz\n"
                  "dump_modify traj sort id format float %.17g\n")
    for ref_name, reference in references(lambda p: run(f"rerun.source.{p}", 1, PAIRS[p], trajectory + "run 60\n",
                                                        writes_files=True)):
        source = os.path.join(run.dir(f"rerun.source.{args.reference_pairs[ref_name]}"), "traj.dump")
        tested = run(f"rerun.{ref_name}.np{args.np}", args.np, pair,
                     f"rerun {source} dump x y z ix iy iz box yes\n")
        checks.compare(f"rerun of the {ref_name} trajectory: np{args.np} vs {ref_name}", tested, reference,
                       atom_fields=("positions", "forces", "atomic_energies"), global_fields=("energy", "virial"))


def case_chain(args, run, checks, pair, references):
    chain = "run 20\n" + "run 20 pre no post no\n" * 3 + "run 20 pre yes post no\n"
    tested = run(f"chain.np{args.np}", args.np, pair, chain)
    for ref_name, reference in references(lambda p: run(f"chain.uninterrupted.{p}", 1, PAIRS[p], "run 100\n")):
        checks.compare(f"run pre no post no chain: np{args.np} vs uninterrupted {ref_name}", tested, reference)


def case_balance(args, run, checks, pair, references):
    variants = {"brick": ("", "fix balance all balance 10 1.05 shift xyz 10 1.05\n"),
                "tiled": ("comm_style tiled\n", "fix balance all balance 10 1.05 rcb\n")}
    reference = dict(references(lambda p: run(f"balance.{p}", 1, PAIRS[p], "run 100\n")))
    for name, (comm, balance) in variants.items():
        tested = run(f"balance.{name}.np{args.np}", args.np, pair, "run 100\n",
                     comm=comm, fixes="fix integrate all nve\n" + balance)
        for ref_name, ref in reference.items():
            checks.compare(f"fix balance {name}: np{args.np} vs {ref_name}", tested, ref)


def case_boundary(args, run, checks, pair, references):
    for boundary in ("s s p", "f p p"):
        tested = run(f"boundary.{boundary.replace(' ', '')}.np{args.np}", args.np, pair, "run 100\n",
                     boundary=f"boundary {boundary}\n", comm="processors 2 * *\n" if args.np % 2 == 0 else "")
        for ref_name, reference in references(lambda p: run(f"boundary.{boundary.replace(' ', '')}.{p}", 1, PAIRS[p],
                                                            "run 100\n", boundary=f"boundary {boundary}\n")):
            checks.compare(f"boundary {boundary}: np{args.np} vs {ref_name}", tested, reference)


def case_null_rank(args, run, checks, pair, references):
    # type 2 beyond x = 3/4 of the box: on a 4x1x1 grid the last rank owns only type 2 (NULL)
    retype = "variable far atom x>0.75*lx\ngroup far variable far\nset group far type 2\n"
    null_pair = NULL_PAIRS[args.kind]
    read = f"read_data {args.data}\n{retype}"
    tested = run(f"null_rank.np{args.np}", args.np, null_pair, "run 100\n", read=read, comm="processors 4 1 1\n")
    refs = [("nvalchemi np1", run("null_rank.np1", 1, null_pair, "run 100\n", read=read))]
    if args.kind == "lj":
        refs.append(("lj/cut np1", run("null_rank.lj_cut", 1, NULL_PAIRS["lj/cut"], "run 100\n", read=read)))
    for ref_name, reference in refs:
        checks.compare(f"NULL-type rank: np{args.np} vs {ref_name}", tested, reference)
    rows = tested[0][0]
    last = rows[rows[:, 1] == 3]
    checks.require(len(last) > 0 and np.all(last[:, 2] == 2),
                   f"at step 0 rank 3 owns {len(last)} atoms, all of type 2 (NULL for the model)")


def case_isolated(args, run, checks, pair, references):
    tested = run(f"isolated.np{args.np}", args.np, pair, "run 100\n", comm="processors 4 1 1\n")
    for ref_name, reference in references(lambda p: run(f"isolated.{p}", 1, PAIRS[p], "run 100\n")):
        checks.compare(f"isolated atoms: np{args.np} vs {ref_name}", tested, reference)
    rows = tested[0][0]
    for rank in (2, 3):
        mine = rows[rows[:, 1] == rank]
        checks.require(len(mine) > 0 and np.all(mine[:, ATOM_FIELDS["forces"]] == 0.0),
                       f"at step 0 rank {rank} owns {len(mine)} atoms, all without neighbors (zero force)")


def case_hot(args, run, checks, pair, references):
    hot = "velocity all create 6.0 4928 loop geom\n"
    tested = run(f"hot.np{args.np}", args.np, pair, hot + "run 100\n", comm="processors 4 1 1\n", dt=0.002)
    for ref_name, reference in references(lambda p: run(f"hot.{p}", 1, PAIRS[p], hot + "run 100\n", dt=0.002)):
        checks.compare(f"hot system: np{args.np} vs {ref_name}", tested, reference)
    owners = {s: rows[:, 1] for s, (rows, _) in tested.items()}
    steps = sorted(owners)
    per_frame = [int(np.count_nonzero(owners[a] != owners[b])) for a, b in zip(steps, steps[1:])]
    # owners change at reneighboring, the first one some 18 steps in
    checks.require(min(per_frame[1:]) > 0, f"atoms changed rank in every {args.every}-step window after the first "
                                           f"reneighboring: {per_frame}")


CASES = {"restart": case_restart, "data": case_restart, "minimize": case_minimize, "npt": case_npt,
         "rerun": case_rerun, "chain": case_chain, "balance": case_balance, "boundary": case_boundary,
         "null_rank": case_null_rank, "isolated": case_isolated, "hot": case_hot}
CASE_SYSTEMS = {"boundary": "film", "isolated": "isolated", "null_rank": "bulk"}


def make_data(args, workdir, system_name):
    if system_name in EXTRA_SYSTEMS:
        return write_system(args.lmp, args.mpirun, EXTRA_SYSTEMS[system_name], workdir)
    return make_system(args.lmp, args.mpirun, "ortho", system_name, workdir)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--kind", choices=("lj", "mp"), required=True,
                        help="lj: the LJ model alone (also checked against lj/cut); mp: a message-passing model "
                             "overlaid on lj/cut")
    parser.add_argument("--case", choices=tuple(CASES), required=True)
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--every", type=int, default=10, help="steps between compared frames")
    parser.add_argument("--tol", type=float, default=1e-10)
    args = parser.parse_args()
    if args.case in ("null_rank", "isolated", "hot") and args.np != 4:
        parser.error(f"case {args.case} lays its system out for a 4x1x1 grid: --np 4")

    checks = Checks(args.tol)
    pair = PAIRS[args.kind]

    def references(make):
        """(name, frames) of the reference runs, each made by make(pair key): the model on 1 rank,
        and lj/cut for the LJ model."""
        return [(name, make(p)) for name, p in args.reference_pairs.items()]

    # the reference runs by name, and their PAIRS key
    args.reference_pairs = {"nvalchemi np1": args.kind}
    if args.kind == "lj":
        args.reference_pairs["lj/cut np1"] = "lj/cut"

    with tempfile.TemporaryDirectory(prefix="nvalchemi-continuity-") as workdir:
        args.data = make_data(args, workdir, CASE_SYSTEMS.get(args.case, "bulk"))
        CASES[args.case](args, Run(args, workdir), checks, pair, references)

    print("CONTINUITY " + json.dumps({"case": args.case, "kind": args.kind, "np": args.np,
                                      "compared": checks.count, "max_relative_difference": checks.worst}))
    if checks.failures:
        sys.exit("FAIL:\n  " + "\n  ".join(checks.failures[:40]))


if __name__ == "__main__":
    main()
