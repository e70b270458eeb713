"""Check a model file before a LAMMPS run: its metadata, its contract, its forces, and whether it
gives the same answer split into owned and ghost rows as a rank of a decomposed run sees it.

    nvalchemi-check model.pt [--halo local|layerwise|deep|gp] [--atoms N] [--seed S]
    python -m nvalchemi_lammps.check model.pt2

Runs in plain PyTorch (no LAMMPS, no MPI), for TorchScript (.pt) and AOTInductor (.pt2) files:

  metadata    the keys and values pair_style nvalchemi requires (doc/Howto_nvalchemi_contract.rst)
  contract    the model takes the contract's inputs and returns one per-atom energy per row,
              none on a rank with no atoms
  in step     a rank with atoms and ghosts, one with ghosts only and one with neither make the
              same exchange calls (torch.ops.nvalchemi.*, forward and backward) in the same
              order: pair_style nvalchemi stops a run whose ranks' calls differ, so a model
              whose calls depend on its rank's data fails here, before LAMMPS starts
  forces      on a small random periodic cell of the model's species (the whole cell in one
              process, every periodic image an edge): forces from the edge gradients equal
              central finite differences of the energy
  split       the same cell as one rank sees it: the atoms owned, periodic images within the
              halo as ghost rows (one cutoff; layers x cutoff in halo mode deep), edges only
              into owned rows except in mode deep, and the exchange ops acting on ghost rows
              (nvalchemi_lammps.ops.owners): energy and forces equal the whole-cell evaluation.
              In halo mode gp a rank's model sees every atom, the other ranks' as rows
              refreshed from their owners: checked on this split, the periodic images
              standing in for those rows

The halo modes, what each asks of a rank's graph, and the presets are the C++ core's
(nvalchemi_lammps.spec reads them from the tables pair_style nvalchemi compiles in).

and prints a verdict; the exit status is 0 only if every check passed. A model that sums
energies over ghost rows, or needs an exchange it does not make (a model built for halo mode
deep checked as layerwise), fails `split`. Models whose forces are not the gradient of owned
node energies (force strategy model or global_energy) get the first two checks only.
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile
from typing import Dict, List, Tuple

import torch

import nvalchemi_lammps.ops
from nvalchemi_lammps.contract import TOOLKIT_SPEC_VERSION, check_metadata, contract_inputs
from nvalchemi_lammps.model_file import AOTINDUCTOR, LoadedModel
from nvalchemi_lammps.periodic import lattice_shifts, periodic_edges
from nvalchemi_lammps.spec import HALO_MODES, effective_spec, forces_from_node_energies, halo_rules


def checked_spec(spec: Dict, halo: str) -> Dict:
    """The effective spec the checks run with (nvalchemi_lammps.spec.effective_spec), `halo`
    (when given) overriding the spec's halo mode. Of a spec in the toolkit's layout, which only
    the pair style translates, the checks read the force strategy, and `halo` must be given."""
    overrides = {"halo": halo} if halo else {}
    if spec.get("version") == TOOLKIT_SPEC_VERSION:
        if not halo:
            raise ValueError("cannot tell the halo mode of a spec in the toolkit's layout: give --halo")
        strategy = (spec.get("compile") or {}).get("force_strategy")
        spec = {"compile": {"force_strategy": strategy}} if strategy else {}
    return effective_spec(spec, overrides)


def random_cell(species: List[int], cutoff: float, atoms: int, seed: int, dtype: torch.dtype):
    """`atoms` atoms of the model's species in a triclinic periodic cell at a density that gives
    each about a dozen neighbours, no two closer than a third of the cutoff."""
    g = torch.Generator().manual_seed(seed)
    density = 12.0 / (4.0 / 3.0 * math.pi * cutoff ** 3)
    length = (atoms / density) ** (1.0 / 3.0)
    cell = torch.tensor([[length, 0.0, 0.0], [0.1 * length, length, 0.0], [-0.1 * length, 0.05 * length, length]],
                        dtype=torch.float64)
    positions: List[torch.Tensor] = []
    while len(positions) < atoms:
        candidate = torch.rand(3, generator=g, dtype=torch.float64) @ cell
        if all(_distance(candidate, p, cell) > cutoff / 3 for p in positions):
            positions.append(candidate)
    numbers = torch.tensor(species, dtype=torch.int64)[torch.randint(0, len(species), (atoms,), generator=g)]
    return torch.stack(positions), numbers, cell


def _distance(a, b, cell):
    frac = torch.linalg.solve(cell.T, a - b)
    frac = frac - torch.round(frac)
    return float((frac @ cell).norm())


def owned_rows_complete(halo: str) -> bool:
    """Whether owned rows see every edge in halo mode `halo` (the exchange ops' sums then have
    nothing to add into them)."""
    return halo_rules(halo)["ghost_receivers"]


def rank_graph(positions, cell, cutoff, halo: str, layers: int):
    """The cell as one rank of a decomposed run sees it: the atoms as owned rows, then every
    periodic image within the halo of an owned atom as a ghost row (halo_rules: one cutoff or
    one per layer); edges within the cutoff into owned rows, and into ghost rows where the halo
    mode gives ghosts edges of their own. In halo mode gp the other ranks' atoms stand in for
    the ghosts, refreshed from their owners alike. Returns (rows, row_atom, senders,
    receivers)."""
    n = positions.shape[0]
    rules = halo_rules(halo)
    shell = cutoff * (max(1, layers) if rules["ghost_shell"] == "layers" else 1)
    ghosts, ghost_atom = [], []
    for shift in lattice_shifts(cell, shell):
        if not shift.any():
            continue
        image = positions + shift
        near = ((image.unsqueeze(1) - positions.unsqueeze(0)).norm(dim=-1) < shell).any(dim=1)
        ghosts.append(image[near])
        ghost_atom.append(torch.arange(n)[near])
    rows = torch.cat([positions] + ghosts)
    row_atom = torch.cat([torch.arange(n)] + ghost_atom)
    d = (rows.unsqueeze(1) - rows.unsqueeze(0)).norm(dim=-1)  # [receiver, sender]
    d.fill_diagonal_(float("inf"))
    if not rules["ghost_receivers"]:
        d[n:] = float("inf")  # only owned receivers
    recv, send = (d < cutoff).nonzero(as_tuple=True)
    return rows, row_atom, send, recv


def evaluate(model, rows, row_atom, senders, receivers, edge_vectors, numbers, cell, n_owned, dtype,
             halo=None):
    """Energy of the owned rows and the forces on the atoms (from the edge gradients). halo:
    None for one process owning every row, else the exchange ops act as on one rank of that
    halo mode."""
    inputs = contract_inputs(rows.to(dtype), numbers[row_atom], torch.stack([senders, receivers], dim=1),
                             edge_vectors.to(dtype), cell.view(1, 3, 3).to(dtype),
                             torch.ones(1, 3, dtype=torch.bool), torch.tensor(n_owned, dtype=torch.int64))
    if halo is None:
        energies, gradient = model(inputs)
    else:
        with nvalchemi_lammps.ops.owners(row_atom, n_owned, owned_rows_complete=owned_rows_complete(halo)):
            energies, gradient = model(inputs)
    if energies.dim() != 1 or energies.shape[0] != rows.shape[0]:
        raise ValueError(f"'{model.energy_key}' has shape {list(energies.shape)}, expected [{rows.shape[0]}] "
                         "(one energy per row)")
    gradient = gradient.to(torch.float64)
    forces = torch.zeros(numbers.shape[0], 3, dtype=torch.float64)
    forces.index_add_(0, row_atom[receivers], -gradient).index_add_(0, row_atom[senders], gradient)
    return float(energies[:n_owned].to(torch.float64).sum()), forces


def exchange_calls(model, rows, senders, receivers, numbers, cell, n_owned, dtype, halo, differentiate):
    """The calls that communicate (nvalchemi_lammps.ops.recorded_calls) of one model evaluation on a
    rank with `rows` ([R, 3] positions; rows [0, n_owned) owned, the others ghosts of atoms on
    other ranks), forward and, where the package differentiates, backward."""
    inputs = contract_inputs(rows.to(dtype), numbers, torch.stack([senders, receivers], dim=1),
                             (rows[receivers] - rows[senders]).to(dtype), cell.view(1, 3, 3).to(dtype),
                             torch.ones(1, 3, dtype=torch.bool), torch.tensor(n_owned, dtype=torch.int64))
    with nvalchemi_lammps.ops.owners(torch.arange(rows.shape[0]), n_owned, owned_rows_complete=owned_rows_complete(halo)), \
            nvalchemi_lammps.ops.recorded_calls() as calls:
        if differentiate:
            model(inputs)
        else:
            model.module(inputs)
    return list(calls)


def check_in_step(model, meta: Dict, spec: Dict, atoms: int, seed: int) -> Tuple[bool, str]:
    """Whether a rank with atoms and ghosts, a rank with ghosts only and a rank with neither make
    the same exchange calls, and the first rank again (TorchScript runs an optimized graph from
    its second call, which must keep the calls' order), running with the effective spec `spec`
    (checked_spec); (verdict, detail)."""
    halo = spec["halo"]
    dtype = torch.float64 if meta["dtype"] == "float64" else torch.float32
    cutoff = float(meta["cutoff"])
    positions, numbers, cell = random_cell(meta["species"], cutoff, atoms, seed, torch.float64)
    rows, row_atom, senders, receivers = rank_graph(positions, cell, cutoff, halo, spec["num_message_passing_layers"])
    none = torch.zeros(0, dtype=torch.int64)
    differentiate = model.format == AOTINDUCTOR or forces_from_node_energies(spec)
    ranks = (("a rank with atoms and ghosts", rows, senders, receivers, numbers[row_atom], atoms),
             ("a rank with ghosts only", rows[atoms:], none, none, numbers[row_atom[atoms:]], 0),
             ("a rank with no atoms and no ghosts", rows[:0], none, none, none, 0),
             ("the rank with atoms and ghosts evaluated again", rows, senders, receivers, numbers[row_atom], atoms))
    made = [(name, exchange_calls(model, r, s, t, z, cell, owned, dtype, halo, differentiate))
            for name, r, s, t, z, owned in ranks]

    def listed(calls):
        return ", ".join(f"{op}({size})" for op, size in calls) or "none"

    first = made[0][1]
    for name, calls in made[1:]:
        if calls != first:
            return False, (f"{made[0][0]} made {len(first)} exchange call(s) [{listed(first)}], {name} "
                           f"{len(calls)} [{listed(calls)}]: pair_style nvalchemi would stop the run. Every rank "
                           "must make the same torch.ops.nvalchemi calls in the same order, with empty rows "
                           "where it has none: keep the control flow around them independent of the rank's "
                           "data (no early return for an empty graph)")
    return True, f"{len(first)} exchange call(s) on every rank, with and without atoms: [{listed(first)}]"


# rank 0's line naming what pair_style nvalchemi loaded (pair_nvalchemi.cpp, apply_model)
_LOADED = re.compile(r"pair_style nvalchemi \([^)]*\): model .* \((?P<format>[^()]*)\), contract v\d+, units "
                     r"(?P<units>\w+), (?P<dtype>float\d+), cutoff (?P<cutoff>\S+), species:(?P<species>( \w+)+)")


def through_lammps(args, report, skip) -> bool:
    """A file without the package's metadata (another framework's deployed file, or no model),
    judged by pair_style nvalchemi itself through LAMMPS' Python module, on one process: whether
    it loads the file and as what, then its forces on a random periodic cell against central
    differences of its energy, as LAMMPS computes both. False where LAMMPS' module is not
    importable (the caller judges the file alone)."""
    try:
        from lammps import lammps
    except ImportError:
        return False

    model = '"' + args.model.replace('"', '\\"') + '"'
    with tempfile.TemporaryDirectory(prefix="nvalchemi-check-") as workdir:
        log = os.path.join(workdir, "log.lammps")
        refusal = None
        # a model in physical units loads in any physical style, one in lj units only in lj
        for units in ("metal", "lj"):
            lmp = lammps(cmdargs=["-log", log, "-screen", "none", "-nocite"])
            if not lmp.has_style("pair", "nvalchemi"):  # another LAMMPS: it cannot judge
                lmp.close()
                return False
            try:
                lmp.commands_string(f"units {units}\nregion box block 0 10 0 10 0 10\ncreate_box 1 box\n"
                                    f"pair_style nvalchemi {model}")
                refusal = None
            except Exception as exc:  # noqa: BLE001  (LAMMPS' error is the verdict)
                refusal = str(exc).strip()
            finally:
                lmp.close()
            if refusal is None or "lj units" not in refusal:
                break
        if refusal is not None:
            report("load", False, f"pair_style nvalchemi refuses it: {refusal}")
            return True
        with open(log) as f:
            loaded = _LOADED.search(f.read())
        if loaded is None:
            report("load", False, "pair_style nvalchemi loaded it but did not log what it loaded")
            return True
        symbols = loaded["species"].split()
        cutoff, units, dtype = float(loaded["cutoff"]), loaded["units"], loaded["dtype"]
        report("load", True, f"pair_style nvalchemi reads it as {loaded['format']}: units {units}, {dtype}, "
                             f"cutoff {cutoff}, species {loaded['species'].strip()}")
        # the cell's atoms as indices into the species (LAMMPS types from 1)
        positions, species_index, cell = random_cell(list(range(len(symbols))), cutoff, args.atoms, args.seed,
                                                     torch.float64)
        lmp = lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
        try:
            (lx, _, _), (xy, ly, _), (xz, yz, lz) = cell.tolist()
            lmp.commands_string(f"units {units}\natom_modify map yes\n"
                                f"region box prism 0 {lx!r} 0 {ly!r} 0 {lz!r} {xy!r} {xz!r} {yz!r}\n"
                                f"create_box {len(symbols)} box\nmass * 1.0\nthermo_modify norm no\n")
            lmp.create_atoms(args.atoms, list(range(1, args.atoms + 1)), [int(t) + 1 for t in species_index],
                             positions.reshape(-1).tolist())
            lmp.commands_string(f"pair_style nvalchemi {model}\npair_coeff * * {' '.join(symbols)}\nrun 0")
            energy = lmp.get_thermo("pe")
            forces = torch.tensor(list(lmp.gather_atoms("f", 1, 3)), dtype=torch.float64).view(-1, 3)
            if not (math.isfinite(energy) and bool(torch.isfinite(forces).all())):
                report("forces", False, f"on {args.atoms} atoms LAMMPS computed an energy of {energy} and "
                                        f"{int((~torch.isfinite(forces)).sum())} force components that are not "
                                        "finite")
                return True
            # a float32 energy's differences need a longer step (its rounding over the step)
            h, fd_tol = (1e-5 * cutoff, 1e-6) if dtype == "float64" else (1e-2, 1e-2)
            g = torch.Generator().manual_seed(args.seed)
            picks = [(int(torch.randint(args.atoms, (1,), generator=g)), int(torch.randint(3, (1,), generator=g)))
                     for _ in range(args.fd)]
            fd = []
            for atom, dim in picks:
                energies = []
                for step in (h, -h):
                    moved = positions[atom].clone()
                    moved[dim] += step
                    lmp.command(f"set atom {atom + 1} x {float(moved[0])!r} y {float(moved[1])!r} "
                                f"z {float(moved[2])!r}")
                    lmp.command("run 0")
                    energies.append(lmp.get_thermo("pe"))
                lmp.command(f"set atom {atom + 1} x {float(positions[atom, 0])!r} y {float(positions[atom, 1])!r} "
                            f"z {float(positions[atom, 2])!r}")
                fd.append(-(energies[0] - energies[1]) / (2 * h))
            analytic = torch.tensor([float(forces[atom, dim]) for atom, dim in picks], dtype=torch.float64)
            error = relative(analytic, torch.tensor(fd, dtype=torch.float64)) if picks else 0.0
            report("forces", error <= fd_tol, f"{args.atoms} atoms as pair_style nvalchemi runs the file: "
                                              f"{len(picks)} components vs central differences: {error:.2e} "
                                              f"relative (allowed {fd_tol:.0e})")
        except Exception as exc:  # noqa: BLE001
            report("forces", False, f"pair_style nvalchemi failed on {args.atoms} atoms: {str(exc).strip()}")
        finally:
            lmp.close()
    skip("split", "a file of another framework runs in the halo mode its format fixes; a decomposed run of "
                  "it is LAMMPS' own (compare runs on 1 and N ranks)")
    return True


# forces of a float32 AOTInductor program against five-point differences of its own energy:
# the differences' float32 rounding (about 1e-4 of the largest force on the check's cells) and
# the stencil's error, with room; a wrong sign or a missing term is off by order 1
FD_TOL_FLOAT32_PROGRAM = 3e-3


def relative(a, b):
    """max |a - b| / max |b|; NaN where either holds a number that is not finite, so that every
    comparison `value <= tol` fails on it."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if not (bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())):
        return math.nan
    scale = float(b.abs().max())
    diff = float((a - b).abs().max())
    return diff / scale if scale > 0 else diff


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvalchemi-check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a model file (.pt or .pt2)")
    parser.add_argument("--halo", choices=HALO_MODES, default="",
                        help="the halo mode to check (default: the spec's)")
    parser.add_argument("--atoms", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fd", type=int, default=6, help="force components checked by finite differences")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    passed = []

    skipped = []

    def report(name, ok, detail):
        passed.append(ok)
        print(f"{'PASS' if ok else 'FAIL'}  {name:9s} {detail}")

    def skip(name, why):
        skipped.append(name)
        print(f"SKIP  {name:9s} {why}")

    def verdict():
        good = all(passed)
        if not good:
            print(f"verdict: {args.model} is NOT ready for pair_style nvalchemi (see FAIL above)")
        elif skipped:
            print(f"verdict: {args.model} passed what was checked; not checked: {', '.join(skipped)}")
        else:
            print(f"verdict: {args.model} is ready for pair_style nvalchemi")
        return 0 if good else 1

    try:
        model = LoadedModel(args.model)
    except Exception as exc:  # noqa: BLE001  (any loader failure is the verdict)
        if not through_lammps(args, report, skip):
            report("load", False, f"neither a TorchScript archive nor an AOTInductor package: {exc}")
        return verdict()
    print(f"nvalchemi-check: {args.model} ({model.format})")
    if not model.metadata_text and through_lammps(args, report, skip):
        return verdict()
    try:
        meta = check_metadata(model.metadata_text)
        spec = checked_spec(meta["spec"], args.halo)
        halo, layers = spec["halo"], spec["num_message_passing_layers"]
        system_rows = (" (checked as one rank of it sees the system: the other ranks' atoms as rows "
                       "refreshed from their owners)") if halo_rules(halo)["model_rows"] == "system" else ""
        report("metadata", True, f"cutoff {meta['cutoff']}, species {meta['species']}, units {meta['units']}, "
                                 f"{meta['dtype']}, halo {halo}{system_rows}, {layers} layer(s)")
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        report("metadata", False, str(exc))
        return verdict()

    dtype = torch.float64 if meta["dtype"] == "float64" else torch.float32
    # what each check allows: rounding in float64, single precision in float32
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    cutoff = float(meta["cutoff"])
    positions, numbers, cell = random_cell(meta["species"], cutoff, args.atoms, args.seed, dtype)
    senders, receivers, shifts = periodic_edges(positions, cell, cutoff)
    atoms = torch.arange(args.atoms)

    def whole_cell(x, of=None, in_dtype=dtype):
        return evaluate(of or model, x, atoms, senders, receivers, x[receivers] - x[senders] - shifts, numbers,
                        cell, args.atoms, in_dtype)

    try:
        energy, forces = whole_cell(positions)
    except Exception as exc:  # noqa: BLE001
        report("contract", False, f"evaluating the model on {args.atoms} atoms failed: {exc}")
        return verdict()
    try:  # a rank that owns no atoms and has no ghosts
        empty = torch.zeros(0, dtype=torch.int64)
        evaluate(model, torch.zeros(0, 3, dtype=torch.float64), empty, empty, empty,
                 torch.zeros(0, 3, dtype=torch.float64), numbers, cell, 0, dtype)
    except Exception as exc:  # noqa: BLE001
        report("contract", False, f"the model fails on a rank with no atoms (it must return an "
                                  f"empty '{model.energy_key}'): {exc}")
        return verdict()
    if not (math.isfinite(float(energy)) and bool(torch.isfinite(forces).all())):
        report("contract", False, f"on {args.atoms} atoms the model returned an energy of {float(energy):.10g} and "
                                  f"{int((~torch.isfinite(forces)).sum())} force components that are not finite")
        return verdict()
    report("contract", True, f"{args.atoms} atoms, {senders.shape[0]} edges: energy {energy:.10g}; "
                             "no atoms: no energies")
    try:
        report("in step", *check_in_step(model, meta, spec, args.atoms, args.seed))
    except Exception as exc:  # noqa: BLE001
        report("in step", False, f"evaluating the model as one rank failed: {exc}")

    if not forces_from_node_energies(spec):
        why = ("the spec's forces are not the gradient of owned node energies (the model brings its "
               "own, or a replicated energy): this tool checks node-energy models only")
        skip("forces", why)
        skip("split", why)
        return verdict()
    if dtype == torch.float32 and model.format == AOTINDUCTOR:
        # a float32 program has no float64 twin: difference its own energy, over a step long
        # enough that float32 rounding stays far below it, with a five-point stencil
        fd_model, fd_dtype, fd_tol, h = model, torch.float32, FD_TOL_FLOAT32_PROGRAM, 2e-3 * cutoff
        stencil, how = ((2, -1 / 12), (1, 8 / 12), (-1, -8 / 12), (-2, 1 / 12)), "five-point differences"
    else:
        # differences of a float32 energy are rounding: difference a float64 copy of the model
        fd_model, fd_tol = (model, 1e-6) if dtype == torch.float64 else (model.in_float64(), 1e-4)
        # the edges stay fixed, so the energy is smooth in the positions: a small step is safe
        fd_dtype, h = torch.float64, 1e-5 * cutoff
        stencil, how = ((1, 1 / 2), (-1, -1 / 2)), "central differences"
    g = torch.Generator().manual_seed(args.seed)
    picks = [(int(torch.randint(args.atoms, (1,), generator=g)), int(torch.randint(3, (1,), generator=g)))
             for _ in range(args.fd)]
    fd = []
    for atom, dim in picks:
        derivative = 0.0
        for steps, weight in stencil:
            moved = positions.clone()
            moved[atom, dim] += steps * h
            derivative += weight * whole_cell(moved, fd_model, fd_dtype)[0]
        fd.append(-derivative / h)
    analytic = torch.tensor([float(forces[atom, dim]) for atom, dim in picks], dtype=torch.float64)
    error = relative(analytic, torch.tensor(fd, dtype=torch.float64)) if picks else 0.0
    report("forces", error <= fd_tol, f"{len(picks)} components vs {how}: {error:.2e} "
                                      f"relative (allowed {fd_tol:.0e})")

    try:
        rows, row_atom, rank_senders, rank_receivers = rank_graph(positions, cell, cutoff, halo, layers)
        split_energy, split_forces = evaluate(model, rows, row_atom, rank_senders, rank_receivers,
                                              rows[rank_receivers] - rows[rank_senders], numbers, cell,
                                              args.atoms, dtype, halo=halo)
        e_err, f_err = relative(split_energy, energy), relative(split_forces, forces)
        ok = e_err <= tol and f_err <= tol
        hint = "" if ok else (" (a model must compute geometry from edge_vectors, sum only owned rows' "
                              "energies and, with more than one layer in halo mode layerwise, refresh "
                              "ghost rows between layers)")
        report("split", ok, f"{args.atoms} owned + {rows.shape[0] - args.atoms} ghost rows, halo {halo}: "
                            f"energy {e_err:.2e}, forces {f_err:.2e} relative to the whole cell "
                            f"(allowed {tol:.0e}){hint}")
    except Exception as exc:  # noqa: BLE001
        report("split", False, f"evaluating the model as one rank failed: {exc}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
