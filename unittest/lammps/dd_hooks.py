"""fix nvalchemi/dd on 1 and several ranks, each hook against an independent oracle.

    --case stats      owned atoms per rank and owner changes vs a dump of each atom's rank
                      (compute property/atom proc) every step; edges vs the 1-rank run; the
                      drift value vs a least-squares slope of thermo etotal
    --case restart    owner changes and drift across `run`, write_restart/read_restart
    --case guard      an infinite force (fix addforce) on one atom is stopped naming that atom
                      and the rank that owns it (from a dump of an independent run); maxforce
                      abort names every atom above it, clamp scales exactly those forces
    --case validate   passes on correct runs (LJ, SchNet layerwise and deep, model forces,
                      empty subdomains, NULL types under hybrid/overlay); fails on a misdeclared spec that is right on 1 rank
    --case hook       harmonic restraint hook vs fix spring/self, centre umbrella vs fix
                      spring tether, for each scope, on 1 and --np ranks; the hook's virial
                      vs the value recomputed from the dump; the restraint at stage
                      before_compute, and compiled as an AOTInductor package (.pt2); observers
                      at stages after_step and before_step see
                      the velocities of the dump of that step / of the step before; minimize with the restraint hook
                      reaches the energies of minimize with fix spring/self
    --case snapshot   extended XYZ read back by ASE: every atom once, sorted, 1 = --np ranks

Values are compared by relative difference (max |a - b| / max |b|) against --tol (1e-10).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

from typing import Dict

import numpy as np
import torch

from harness import Checks, input_head, make_system, read_dumps, relative_difference, run_lammps, thermo_table, worse

HOOKS = os.path.join(os.path.dirname(__file__), "..", "..", "models", "hooks.py")

STATS = " ".join(f"f_dd[{i}]" for i in range(1, 14))

def dd_input(comm, grid, data, pair, body):
    """The input of one run: the system from `data` on the processor `grid` (after `comm`), the
    pair lines, NVE, then `body`."""
    return input_head(f"read_data {data}", pair, comm=f"{comm}processors {grid}\n") + body


PAIRS = {
    "lj/cut": "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\n",
    "nvalchemi": "pair_style nvalchemi {model}\npair_coeff * * Ar Ar\n",
}


def lammps(args, workdir, label, nranks, text, expect_failure=False):
    """Run `text` in workdir/label on nranks; returns (screen output, log text)."""
    rundir = os.path.join(workdir, label)
    os.makedirs(rundir, exist_ok=True)
    with open(os.path.join(rundir, "in.test"), "w") as f:
        f.write(text)
    proc = run_lammps(args.lmp, args.mpirun, nranks, "in.test", rundir, timeout=600)
    output = proc.stdout + proc.stderr
    if (proc.returncode != 0) != expect_failure:
        sys.exit(f"FAIL: {label}: exit {proc.returncode}, expected "
                 f"{'an error' if expect_failure else 'success'}:\n{output[-4000:]}")
    log = os.path.join(rundir, "log.lammps")
    return output, open(log).read() if os.path.exists(log) else ""


def grid_commands(args):
    if args.tiled:
        return "comm_style tiled\n", "* * *", "fix balance all balance 10 1.0 rcb\n"
    return "", " ".join(map(str, args.grid)), ""


# ---- stats ---------------------------------------------------------------------------------

def case_stats(args, workdir, fail):
    data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
    comm, grid, balance = grid_commands(args)
    steps = 40
    body = (f"{balance}compute proc all property/atom proc\n"
            "dump owners all custom 1 owners.dump id c_proc\ndump_modify owners sort id\n"
            "fix dd all nvalchemi/dd drift 1 6 1.0 warn\n"
            f"thermo 1\nthermo_style custom step etotal atoms {STATS}\n"
            "thermo_modify norm no format float %.17g\n"
            f"run {steps}\n")
    for pair in ("nvalchemi", "lj/cut"):
        runs = {}
        for nranks in sorted({1, args.np}):
            text = dd_input(comm=comm, grid=grid if nranks > 1 else "1 1 1",
                                   data=data, pair=PAIRS[pair].format(model=args.model), body=body)
            label = f"stats_{pair.replace('/', '_')}_np{nranks}"
            _, log = lammps(args, workdir, label, nranks, text)
            runs[nranks] = (thermo_table(log), read_dumps(os.path.join(workdir, label, "owners.dump")))
        thermo, dumps = runs[args.np]
        natoms = len(dumps[0])
        bad_counts, bad_changes, total_changes = [], [], 0
        for step in range(steps + 1):
            stats = thermo[step][2:]
            ranks = dumps[step][:, 1].astype(int)
            owned = np.bincount(ranks, minlength=args.np)
            if not (stats[0] == owned.min() and stats[1] == owned.max() and stats[2] * args.np == natoms
                    and abs(stats[3] - owned.max() / (natoms / args.np)) < 1e-12):
                bad_counts.append((step, list(stats[:4]), list(owned)))
            if step > 0:
                changed = int(np.sum(ranks != dumps[step - 1][:, 1].astype(int)))
                total_changes += changed
                if stats[6] != changed:
                    bad_changes.append((step, stats[6], changed))
        fail.expect(not bad_counts, f"{pair} np{args.np}: owned min/max/mean/imbalance match the dump's "
                   f"per-rank counts and sum to natoms={natoms} at all {steps + 1} steps {bad_counts[:3]}")
        fail.expect(not bad_changes, f"{pair} np{args.np}: owner changes match the dump at every step "
                   f"({total_changes} in all) {bad_changes[:3]}")
        if args.np > 1:
            fail.expect(total_changes > 0, f"{pair} np{args.np}: atoms changed owner during the run")
            fail.expect(min(thermo[s][2 + 4] for s in thermo) > 0, f"{pair} np{args.np}: ghost atoms counted")
        serial = runs[1][0]
        if pair == "nvalchemi":
            fail.expect(all(thermo[s][2 + 5] == serial[s][2 + 5] for s in thermo),
                       f"nvalchemi np{args.np}: edges total equals the 1-rank count at every step "
                       f"({int(thermo[0][2 + 5])} at step 0)")
            fail.expect(all(thermo[s][2 + 7] > 0 and thermo[s][2 + 8] > 0 for s in thermo),
                       "nvalchemi: model and glue times reported")
        else:
            fail.expect(all(not np.any(thermo[s][[2 + 5, 2 + 7, 2 + 8, 2 + 9]]) for s in thermo),
                       "lj/cut: edges and model times are zero for a pair style without a model")
        # drift: least-squares slope of etotal per atom over the last 6 steps
        for step in range(6, steps + 1):
            t = np.arange(step - 5, step + 1)
            e = np.array([thermo[s][0] for s in t]) / natoms
            slope = np.polyfit(t, e, 1)[0]
            if abs(thermo[step][2 + 10] - slope) > 1e-9 * max(abs(slope), 1e-6):
                fail.expect(False, f"{pair}: drift on step {step} is {thermo[step][2 + 10]}, oracle {slope}")
                break
        else:
            fail.expect(True, f"{pair} np{args.np}: drift equals the least-squares slope of etotal/atoms "
                       "over the window at every step")


# ---- restart -------------------------------------------------------------------------------

def case_restart(args, workdir, fail):
    data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
    comm, grid, balance = grid_commands(args)
    pair = PAIRS["nvalchemi"].format(model=args.model)
    watch = (f"compute proc all property/atom proc\nthermo 1\nthermo_style custom step {STATS}\n"
             "thermo_modify format float %.17g\n")
    fix = "fix dd all nvalchemi/dd drift 1 8 1.0 warn\n"
    dump = "write_dump all custom owners{tag}.dump id c_proc modify sort id\n"
    continuous = (dd_input(comm=comm, grid=grid, data=data, pair=pair, body=balance + fix + watch +
                                  "run 20\n" + "run 20\n"))
    _, log = lammps(args, workdir, "restart_continuous", args.np, continuous)
    reference = thermo_table(log)
    first = dd_input(comm=comm, grid=grid, data=data, pair=pair, body=balance + fix + watch + "run 20\n" +
                            dump.format(tag=20) + "write_restart state.restart\n")
    lammps(args, workdir, "restart_first", args.np, first)
    second = (f"{comm}processors {grid}\nread_restart ../restart_first/state.restart\n{pair}"
              "neighbor 0.3 bin\nneigh_modify every 1 delay 0 check yes\nfix integrate all nve\n"
              + balance + fix + watch + "dump owners all custom 20 owners20.dump id c_proc\n"
              "dump_modify owners sort id\nrun 20\n")
    _, log = lammps(args, workdir, "restart_second", args.np, second)
    resumed = thermo_table(log)
    before = np.loadtxt(os.path.join(workdir, "restart_first", "owners20.dump"), skiprows=9)
    after = read_dumps(os.path.join(workdir, "restart_second", "owners20.dump"))[20]
    moved = int(np.sum(before[:, 1] != after[:, 1]))
    fail.expect(resumed[20][6] == moved,
               f"after read_restart the first count ({int(resumed[20][6])}) is the atoms whose rank "
               f"changed since the restart was written ({moved})")
    changes = [(s, reference[s][6], resumed[s][6]) for s in range(20, 41) if reference[s][6] != resumed[s][6]]
    fail.expect(not changes, f"owner changes on steps 20-40 equal those of one continuous run of two "
               f"`run 20` {changes[:3]}")
    drift = max(abs(reference[s][10] - resumed[s][10]) for s in range(20, 41))
    scale = max(abs(reference[s][10]) for s in range(20, 41))
    fail.expect(drift <= args.tol * scale, f"drift window carried through the restart: {drift / scale:.2e} relative")


# ---- guard ---------------------------------------------------------------------------------

def case_guard(args, workdir, fail):
    data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
    comm, grid, _ = grid_commands(args)
    for nranks in sorted({1, args.np}):
        setup = dict(comm=comm if nranks > 1 else "", grid=grid if nranks > 1 else "1 1 1", data=data)
        # owners at step 0, from an independent run: make the force on an atom of the last rank
        # infinite (fix addforce, defined before the guard's fix, acts before it); the model's
        # own non-finite results are pair_style nvalchemi's to stop (errors.py)
        lammps(args, workdir, f"guard_owner_np{nranks}", nranks, dd_input(
            pair=PAIRS["lj/cut"], body="compute proc all property/atom proc\nrun 0\n"
            "write_dump all custom owners.dump id c_proc modify sort id\n", **setup))
        owners = np.loadtxt(os.path.join(workdir, f"guard_owner_np{nranks}", "owners.dump"), skiprows=9)
        atom = int(owners[owners[:, 1] == nranks - 1, 0].min())
        body = (f"variable infinite atom (id=={atom})*1e308*10\nfix poison all addforce v_infinite 0 0\n"
                "fix dd all nvalchemi/dd guard 1\nrun 10\n")
        text = dd_input(pair=PAIRS["nvalchemi"].format(model=args.model), body=body, **setup)
        output, _ = lammps(args, workdir, f"guard_nan_np{nranks}", nranks, text, expect_failure=True)
        expected = rf"ERROR.*guard on step 0: non-finite forces on 1 atoms, IDs: {atom} \(rank {nranks - 1}\)"
        fail.expect(re.search(expected, output) is not None,
                   f"np{nranks}: guard names atom {atom} (infinite force) and its rank {nranks - 1}")

    pair = PAIRS["nvalchemi"].format(model=args.model)
    dump = "write_dump all custom forces.dump id fx fy fz modify sort id format float %.17g\n"
    _, _ = lammps(args, workdir, "guard_free", 1, dd_input(comm="", grid="1 1 1", data=data, pair=pair,
                                                                  body="run 0\n" + dump))
    free = np.loadtxt(os.path.join(workdir, "guard_free", "forces.dump"), skiprows=9)
    magnitude = np.linalg.norm(free[:, 1:4], axis=1)
    limit = float(np.quantile(magnitude, 0.9))
    above = free[magnitude > limit, 0].astype(int)
    text = dd_input(comm=comm, grid=grid, data=data, pair=pair,
                           body=f"fix dd all nvalchemi/dd guard 1 maxforce {limit!r} abort\nrun 0\n")
    output, _ = lammps(args, workdir, "guard_abort", args.np, text, expect_failure=True)
    match = re.search(r"forces above maxforce \S+ on (\d+) atoms, IDs:((?: \d+ \(rank \d+\))+)", output)
    named = [int(w) for w in re.findall(r"(\d+) \(rank", match.group(2))] if match else []
    fail.expect(match is not None and int(match.group(1)) == len(above) and set(named) <= set(above)
               and len(named) == min(len(above), 8 * args.np),
               f"maxforce abort counts the {len(above)} atoms above {limit:.3f} and names them")

    text = dd_input(comm=comm, grid=grid, data=data, pair=pair,
                           body=f"fix dd all nvalchemi/dd guard 1 maxforce {limit!r} clamp\n"
                                "thermo_style custom step f_dd[13]\nrun 0\n" + dump)
    output, log = lammps(args, workdir, "guard_clamp", args.np, text)
    clamped = np.loadtxt(os.path.join(workdir, "guard_clamp", "forces.dump"), skiprows=9)
    expected = free[:, 1:4] * np.minimum(1.0, limit / magnitude)[:, None]
    fail.expect(relative_difference(clamped[:, 1:4], expected) <= args.tol,
               f"clamp scales exactly the forces above the limit to it: "
               f"{relative_difference(clamped[:, 1:4], expected):.1e}")
    fail.expect(thermo_table(log)[0][0] == len(above) and "WARNING: Fix nvalchemi/dd guard clamped" in output,
               f"clamp warns and counts {len(above)} clamped forces in f_dd[13]")


# ---- validate ------------------------------------------------------------------------------

def validations(output):
    return [tuple(float(x) for x in m) for m in re.findall(
        r"validate step \d+: .*?energy \S+ \((\S+) relative\), forces \S+ \((\S+)\)(?:, virial \S+ \((\S+)\))?",
        output)]


def case_validate(args, workdir, fail):
    comm, grid, _ = grid_commands(args)
    runs = [("LJ", "bulk", f"pair_style nvalchemi {args.model}\npair_coeff * * Ar Ar\n", 20, 5),
            ("LJ, empty subdomains", "slab", f"pair_style nvalchemi {args.model}\npair_coeff * * Ar Ar\n", 20, 5),
            ("LJ, model forces", "bulk",
             f"pair_style nvalchemi {args.forces_model} forces model\npair_coeff * * Ar Ar\n", 20, 5),
            ("LJ type 1 under hybrid/overlay with lj/cut", "bulk",
             f"pair_style hybrid/overlay nvalchemi {args.model} lj/cut 2.5\npair_coeff * * nvalchemi Ar NULL\n"
             "pair_coeff 1 2 lj/cut 1.0 1.0\npair_coeff 2 2 lj/cut 1.0 1.0\n", 20, 5),
            ("SchNet layerwise", "bulk", f"pair_style nvalchemi {args.layerwise_model}\npair_coeff * * Ar Ar\n", 10, 5),
            ("SchNet deep", "bulk", f"pair_style nvalchemi {args.deep_model}\npair_coeff * * Ar Ar\n", 2, 1)]
    for name, system, pair, steps, every in runs:
        data = make_system(args.lmp, args.mpirun, args.box, system, workdir)
        text = dd_input(comm=comm, grid=grid if system == "bulk" else "4 1 1", data=data, pair=pair,
                               body=f"fix dd all nvalchemi/dd validate {every} {args.tol}\nrun {steps}\n")
        output, _ = lammps(args, workdir, "validate_" + re.sub(r"\W+", "_", name), args.np, text)
        found = validations(output)
        worst = worse(*(worse(*(x for x in v if x is not None)) for v in found)) if found else None
        fail.expect(len(found) == steps // every + 1 and worst is not None and worst <= args.tol,
                   f"{name} np{args.np}: {len(found)} validations pass, largest relative difference {worst}")

    # a partial energy declared replicated: invisible on 1 rank, forces and energy / nprocs on more
    data = make_system(args.lmp, args.mpirun, args.box, "bulk", workdir)
    wrong = (f"pair_style nvalchemi {args.forces_model} forces global_energy output energy per_graph owned_only\n"
             "pair_coeff * * Ar Ar\n")
    body = f"fix dd all nvalchemi/dd validate 5 {args.tol}\nrun 5\n"
    output, _ = lammps(args, workdir, "validate_wrong_np1", 1,
                       dd_input(comm="", grid="1 1 1", data=data, pair=wrong, body=body))
    fail.expect(len(validations(output)) == 2, "misdeclared spec on 1 rank: validate passes (nothing to catch)")
    output, _ = lammps(args, workdir, "validate_wrong", args.np,
                       dd_input(comm=comm, grid=grid, data=data, pair=wrong, body=body), expect_failure=True)
    match = re.search(r"ERROR: Fix nvalchemi/dd validate: on step 0 the decomposed run differs from the "
                      r"single-process reference by (\S+) relative", output)
    expected = 1.0 - 1.0 / args.np
    fail.expect(match is not None and abs(float(match.group(1)) - expected) < 1e-6,
               f"misdeclared spec on {args.np} ranks: validate stops the run, difference "
               f"{match.group(1) if match else None} (expected 1 - 1/{args.np})")


# ---- hook ----------------------------------------------------------------------------------

class KineticProbe(torch.nn.Module):
    """An observer: prints sum |v|^2, the number of atoms and the sum of their atomic numbers
    (-1 when the batch has none), returns nothing."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        v = batch["velocities"]
        z = int(batch["atomic_numbers"].sum()) if "atomic_numbers" in batch else -1
        print("KINETIC_PROBE", float((v * v).sum()), v.shape[0], z)
        return {}


def case_hook(args, workdir, fail):
    data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
    comm, grid, _ = grid_commands(args)
    pair = PAIRS["lj/cut"]
    k = 2.0
    lammps(args, workdir, "hook_x0", 1, dd_input(comm="", grid="1 1 1", data=data, pair=pair, body=(
        "write_dump all custom x0.dump id xu yu zu modify sort id format float %.17g\n")))
    restraint = os.path.join(workdir, "restraint.pt")
    subprocess.run([sys.executable, HOOKS, "restraint", "--reference", os.path.join(workdir, "hook_x0", "x0.dump"),
                    "--k", str(k), "-o", restraint], check=True)
    x0 = np.loadtxt(os.path.join(workdir, "hook_x0", "x0.dump"), skiprows=9)
    target = x0[:, 1:4].mean(axis=0) + np.array([0.3, -0.2, 0.1])
    umbrella = os.path.join(workdir, "umbrella.pt")
    subprocess.run([sys.executable, HOOKS, "umbrella", "--target", *map(str, target), "--k", "50.0",
                    "-o", umbrella], check=True)

    steps = 50
    watch = ("compute vir all pressure NULL virial\nthermo_style custom step pe c_vir[*] vol\n"
             "thermo_modify norm no format float %.17g\nthermo 10\n"
             f"dump d all custom {steps} traj.dump id xu yu zu fx fy fz\n"
             "dump_modify d sort id format float %.17g\n"
             f"run {steps}\n")
    natives = {"restraint": f"fix native all spring/self {k}\nfix_modify native energy yes\n",
               "umbrella": "fix native all spring tether 50.0 {} {} {} 0.0\nfix_modify native energy yes\n".format(*target)}
    hooks = {"restraint": (restraint, ("local", "global", "rank_zero"), " virial yes"),
             "umbrella": (umbrella, ("global", "rank_zero"), "")}

    def run(label, nranks, fixes):
        text = dd_input(comm=comm if nranks > 1 else "", grid=grid if nranks > 1 else "1 1 1",
                               data=data, pair=pair, body=fixes + watch)
        _, log = lammps(args, workdir, label, nranks, text)
        return thermo_table(log), read_dumps(os.path.join(workdir, label, "traj.dump"))

    # the restraint before the pair forces: the same as after them
    thermo, frames = run(f"hook_restraint_before_compute_np{args.np}", args.np,
                         f"fix dd all nvalchemi/dd hook {restraint} local 1 stage before_compute\n"
                         "fix_modify dd energy yes\n")
    ref_thermo, ref_frames = run("native_restraint_stage_np1", 1, natives["restraint"])
    worst = worse(*(worse(relative_difference(frames[s][:, 1:7], ref_frames[s][:, 1:7]),
                          abs(thermo[s][0] - ref_thermo[s][0]) / abs(ref_thermo[s][0])) for s in (0, steps)))
    fail.expect(worst <= args.tol, f"restraint at stage before_compute, np{args.np}: equals fix spring/self: {worst:.1e}")

    # the restraint compiled as an AOTInductor package (models/hooks.py -o NAME.pt2): the same
    package = os.path.join(workdir, "restraint.pt2")
    subprocess.run([sys.executable, HOOKS, "restraint", "--reference", os.path.join(workdir, "hook_x0", "x0.dump"),
                    "--k", str(k), "-o", package], check=True)
    thermo, frames = run(f"hook_restraint_package_np{args.np}", args.np,
                         f"fix dd all nvalchemi/dd hook {package} local 1\nfix_modify dd energy yes\n")
    worst = worse(*(worse(relative_difference(frames[s][:, 1:7], ref_frames[s][:, 1:7]),
                          abs(thermo[s][0] - ref_thermo[s][0]) / abs(ref_thermo[s][0])) for s in (0, steps)))
    fail.expect(worst <= args.tol, f"restraint as an AOTInductor package, np{args.np}: equals fix spring/self: "
                                   f"{worst:.1e}")

    # observers: after the step they see the state the dump of that step writes; before the step
    # (defined before the integrator) the state of the previous step's dump. Under pair_style
    # nvalchemi the batch carries the atomic numbers of its pair_coeff (Ar, 18).
    probe = os.path.join(workdir, "kinetic_probe.pt")
    torch.jit.script(KineticProbe()).save(probe)
    observers = [("after_step", "rank_zero", pair, 1, -1),
                 ("before_step", "global", PAIRS["nvalchemi"].format(model=args.model), 0, 18)]
    for stage, scope, observed_pair, offset, z in observers:
        text = dd_input(comm=comm, grid=grid, data=data, pair=observed_pair, body=(
            f"unfix integrate\nfix dd all nvalchemi/dd hook {probe} {scope} 1 stage {stage}\nfix integrate all nve\n"
            "dump v all custom 1 v.dump id vx vy vz\ndump_modify v sort id format float %.17g\nrun 10\n"))
        output, _ = lammps(args, workdir, f"hook_observer_{stage}", args.np, text)
        printed = [(float(x), int(n), int(zsum)) for x, n, zsum in
                   re.findall(r"KINETIC_PROBE (\S+) (\d+) (-?\d+)", output)]
        dumps = read_dumps(os.path.join(workdir, f"hook_observer_{stage}", "v.dump"))
        expected = [(float(np.sum(dumps[s - 1 + offset][:, 1:4] ** 2)), len(dumps[s]),
                     z * len(dumps[s]) if z > 0 else -1) for s in range(1, 11)]
        if scope == "global":  # every rank calls the module on the whole group; lines may interleave
            printed, expected = sorted(printed), sorted(expected * args.np)
        fail.expect(len(printed) == len(expected) and all(n == m and zs == ze and abs(a - b) <= args.tol * b
                                              for (a, n, zs), (b, m, ze) in zip(printed, expected)),
                   f"observer at stage {stage}, scope {scope}, np{args.np}: called once per step on the whole "
                   f"group with the velocities of the dump of step {'s' if offset else 's-1'} and the atomic "
                   f"numbers of the pair style ({len(printed)} calls over all ranks)")

    # energy minimization: the hook's energy is part of the minimized energy
    def minimized(label, fixes):
        text = dd_input(comm=comm, grid=grid, data=data, pair=pair, body=(
            fixes + "thermo_modify format float %.17g\nminimize 0 1e-12 2000 20000\n"))
        output, _ = lammps(args, workdir, label, args.np, text)
        match = re.search(r"Energy initial, next-to-last, final =\s*\n\s*(\S+)\s+(\S+)\s+(\S+)", output)
        return np.array([float(x) for x in match.groups()]) if match else np.full(3, np.nan)
    native_min = minimized("minimize_native", natives["restraint"])
    hook_min = minimized("minimize_hook", f"fix dd all nvalchemi/dd hook {restraint} local 1\nfix_modify dd energy yes\n")
    fail.expect(relative_difference(hook_min, native_min) <= args.tol,
               f"minimize with the restraint hook, np{args.np}: initial, next-to-last and final energy equal "
               f"fix spring/self ({relative_difference(hook_min, native_min):.1e})")

    for name, (module, scopes, virial) in hooks.items():
        native = {n: run(f"native_{name}_np{n}", n, natives[name]) for n in sorted({1, args.np})}
        for scope in scopes:
            for nranks in sorted({1, args.np}):
                fixes = f"fix dd all nvalchemi/dd hook {module} {scope} 1\nfix_modify dd energy yes{virial}\n"
                thermo, frames = run(f"hook_{name}_{scope}_np{nranks}", nranks, fixes)
                ref_thermo, ref_frames = native[1]
                worst = 0.0
                for step in (0, steps):
                    worst = worse(worst, relative_difference(frames[step][:, 1:7], ref_frames[step][:, 1:7]),
                                  abs(thermo[step][0] - ref_thermo[step][0]) / abs(ref_thermo[step][0]))
                ok = worst <= args.tol
                message = (f"{name} hook, scope {scope}, np{nranks}: positions, forces and pe equal fix "
                           f"{'spring/self' if name == 'restraint' else 'spring tether'} on 1 rank at steps "
                           f"0 and {steps}: {worst:.1e}")
                if virial:
                    # the hook's virial, sum (x - x0) (x) f with f = -k (x - x0), added to the pair's
                    w_all = []
                    for step in (0, steps):
                        dx = frames[step][:, 1:4] - x0[:, 1:4]
                        w = -k * np.einsum("ia,ib->ab", dx, dx)
                        vol = thermo[step][7]
                        expected = ref_thermo[step][1:7] + np.array([w[0, 0], w[1, 1], w[2, 2], w[0, 1], w[0, 2],
                                                                     w[1, 2]]) / vol
                        w_all.append(relative_difference(thermo[step][1:7], expected))
                    ok = ok and worse(*w_all) <= 1e-9
                    message += f"; virial = spring/self + sum dx (x) f / V: {worse(*w_all):.1e}"
                fail.expect(ok, message)


# ---- snapshot ------------------------------------------------------------------------------

def read_extxyz(path):
    """Frames as (header dict, rows of strings)."""
    frames, lines = [], open(path).read().splitlines()
    k = 0
    while k < len(lines):
        n = int(lines[k])
        header = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', lines[k + 1]))
        frames.append((header, [line.split() for line in lines[k + 2:k + 2 + n]]))
        k += 2 + n
    return frames


def case_snapshot(args, workdir, fail):
    import ase.io  # the test oracle for the file format

    data = make_system(args.lmp, args.mpirun, args.box, args.system, workdir)
    comm, grid, _ = grid_commands(args)
    pair = f"pair_style nvalchemi {args.model}\npair_coeff * * Ar Ar\n"
    body = ("group heavy type 2\n"
            "fix dd all nvalchemi/dd snapshot 10 all.xyz\nfix part heavy nvalchemi/dd snapshot 10 heavy.xyz\n"
            "thermo_style custom step pe\nthermo_modify norm no format float %.17g\nthermo 10\n"
            "dump d all custom 10 traj.dump id type x y z fx fy fz\ndump_modify d sort id format float %.17g\n"
            "run 20\n")
    runs = {}
    for nranks in sorted({1, args.np}):
        label = f"snapshot_np{nranks}"
        _, log = lammps(args, workdir, label, nranks, dd_input(
            comm=comm if nranks > 1 else "", grid=grid if nranks > 1 else "1 1 1", data=data, pair=pair, body=body))
        runs[nranks] = (thermo_table(log), read_dumps(os.path.join(workdir, label, "traj.dump")),
                        os.path.join(workdir, label))
    thermo, dumps, rundir = runs[args.np]
    frames = read_extxyz(os.path.join(rundir, "all.xyz"))
    atoms = ase.io.read(os.path.join(rundir, "all.xyz"), index=":")
    fail.expect(len(frames) == 3 and len(atoms) == 3, "snapshots at steps 0, 10, 20, read by ASE")
    worst = 0.0
    for (header, rows), image, step in zip(frames, atoms, (0, 10, 20)):
        dump = dumps[step]
        ids = np.array([int(r[-1]) for r in rows])
        fail.expect(np.array_equal(ids, dump[:, 0].astype(int)), f"step {step}: every atom once, sorted by ID")
        # the test systems' boxes start at the origin, so positions need no shift
        worst = worse(worst, relative_difference(image.get_forces(), dump[:, 5:8]),
                      relative_difference(image.get_positions(), dump[:, 2:5]),
                      abs(image.get_potential_energy() - thermo[step][0]) / abs(thermo[step][0]))
        fail.expect(list(image.get_chemical_symbols()) == ["Ar"] * len(ids) and all(image.pbc),
                   f"step {step}: species and pbc")
    fail.expect(worst <= args.tol, f"ASE reads the dump's forces, thermo pe and positions: {worst:.1e}")
    heavy = ase.io.read(os.path.join(rundir, "heavy.xyz"), index=":")
    expected = int(np.sum(dumps[0][:, 1] == 2))
    fail.expect(all(len(a) == expected for a in heavy), f"a group's snapshot holds its {expected} atoms")

    serial = read_extxyz(os.path.join(runs[1][2], "all.xyz"))
    same_layout = all(h1.keys() == h2.keys() and h1["Lattice"] == h2["Lattice"] and
                      [r[0] for r in r1] == [r[0] for r in r2] and [r[-1] for r in r1] == [r[-1] for r in r2]
                      for (h1, r1), (h2, r2) in zip(frames, serial))
    numbers = worse(*(relative_difference(np.array([[float(x) for x in r[1:7]] for r in r1]),
                                          np.array([[float(x) for x in r[1:7]] for r in r2]))
                      for (_, r1), (_, r2) in zip(frames, serial)))
    fail.expect(same_layout and numbers <= args.tol,
               f"np{args.np} snapshots equal the 1-rank ones: same atoms, order, species and cell; numbers {numbers:.1e}")
    # before any dynamics only the forces' and the energy's last bits may differ (ghost partials and
    # each atom's edges summed in another order)
    (h1, r1), (h2, r2) = frames[0], serial[0]
    energies = abs(float(h1["energy"]) - float(h2["energy"])) / abs(float(h2["energy"]))
    fail.expect({**h1, "energy": 0} == {**h2, "energy": 0} and energies <= args.tol
               and [r[:4] + r[7:] for r in r1] == [r[:4] + r[7:] for r in r2],
               f"step 0: np{args.np} and 1-rank snapshots have the identical header but the energy "
               f"({energies:.1e}), species, positions and IDs")


CASES = {"stats": case_stats, "restart": case_restart, "guard": case_guard, "validate": case_validate,
         "hook": case_hook, "snapshot": case_snapshot}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True, help="Lennard-Jones model (lj_ar.pt)")
    parser.add_argument("--forces-model", help="Lennard-Jones with its own forces (lj_ar_forces.pt)")
    parser.add_argument("--layerwise-model")
    parser.add_argument("--deep-model")
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--grid", type=int, nargs=3, default=[2, 2, 1])
    parser.add_argument("--tiled", action="store_true", help="comm_style tiled with fix balance rcb")
    parser.add_argument("--box", default="ortho", choices=["ortho", "tri"])
    parser.add_argument("--system", default="bulk")
    parser.add_argument("--tol", type=float, default=1e-10)
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    args = parser.parse_args()

    fail = Checks()
    workdir = tempfile.mkdtemp(prefix=f"nvalchemi-dd-{args.case}-")
    CASES[args.case](args, workdir, fail)
    if not args.keep:
        subprocess.run(["rm", "-rf", workdir])
    else:
        print(f"run directories kept in {workdir}")
    fail.exit_on_failure()


if __name__ == "__main__":
    main()
