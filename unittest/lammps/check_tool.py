"""nvalchemi-check (python/nvalchemi_lammps/check.py) gives the right verdict: models that run
correctly in pair_style nvalchemi pass; a model that sums energies over ghost rows, a model
built for halo mode deep checked as layerwise or gp, a model that fails on a rank without atoms
and a model that skips its exchange call on a rank without atoms (both of which save_model
refuses to write), a model that updates owned rows only and reads the ghost rows unrefreshed
and a model without metadata fail, each naming the failing check; a model with its own forces
gets its checks skipped, not passed. A halo mode gp model passes; the format is told by the
file's contents (a TorchScript file named .pt2, an AOTInductor package named .pt). With
--export, the generic export command (nvalchemi-export) writes the SchNet reference model from
its source as TorchScript (.pt, with a note that PyTorch deprecates it) and, for a name without
a suffix, as a float32 AOTInductor package whose forces are checked against differences of its
own energy, compiled for AVX2 CPUs (--cpu-isa avx2, recorded as the package's AOTI_CPU_ISA);
exported again, the package is copied from the package cache; all pass, and a --format that
contradicts the name is refused. The layerwise SchNet model updates owned rows only
(unittest/export/owned_rows_only.py).

    python check_tool.py --python PY --check nvalchemi_check.py --ready M.pt [M.pt2 ...]
                         --deep-model schnet_deep.pt [--own-forces long_range_ar.pt]

--check may be the nvalchemi-check console script of an installed nvalchemi-lammps.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict

import torch

from nvalchemi_lammps.export import (METADATA_FILE, example_inputs, make_metadata, require_program_as_module,
                                     save_model)
from nvalchemi_lammps.model_file import LoadedModel
from nvalchemi_lammps.owned_rows import owned_count, owned_rows, per_row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))
from owned_rows_only import require_owned_rows_only  # noqa: E402


class NaNEnergies(torch.nn.Module):
    """Pair energies over zero for the pairs beyond half the cutoff: NaN there."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        r = (inputs["edge_vectors"] ** 2).sum(dim=1).sqrt()
        pair = torch.where(r > 1.0, torch.zeros_like(r) / 0.0, torch.exp(-r))
        energies = torch.zeros(inputs["positions"].shape[0], dtype=r.dtype)
        return {"atomic_energies": energies.index_add(0, inputs["neighbor_list"][:, 1], pair)}


class GhostSum(torch.nn.Module):
    """Pair energies into every row, summed by the model over all rows (ghosts too) into
    per-row energies: right in one process, wrong on a rank."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        r2 = (inputs["edge_vectors"] ** 2).sum(dim=1)
        pair = torch.exp(-r2)
        n = inputs["positions"].shape[0]
        total = pair.sum() * 0.5
        return {"atomic_energies": torch.full((n,), 1.0, dtype=r2.dtype) * total / n}


class FailsWithoutAtoms(torch.nn.Module):
    """Right on any rank with atoms; fails on one with none (it reads row 0)."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        r2 = (inputs["edge_vectors"] ** 2).sum(dim=1)
        energies = torch.zeros(inputs["positions"].shape[0], dtype=r2.dtype)
        energies = energies.index_add(0, inputs["neighbor_list"][:, 1], 0.5 * torch.exp(-r2))
        return {"atomic_energies": energies + 0.0 * inputs["positions"][0, 0]}


class SkipsExchangeWithoutAtoms(torch.nn.Module):
    """Pair energies refreshed to ghost rows, except on a rank that owns no atoms, which returns
    early without the exchange call the other ranks make."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        r2 = (inputs["edge_vectors"] ** 2).sum(dim=1)
        energies = torch.zeros(inputs["positions"].shape[0], dtype=r2.dtype)
        if int(inputs["n_owned"]) == 0:
            return {"atomic_energies": energies}
        energies = energies.index_add(0, inputs["neighbor_list"][:, 1], 0.5 * torch.exp(-r2))
        return {"atomic_energies": energies + 0.0 * torch.ops.nvalchemi.refresh_neighbors(energies)}


class OwnedRowsWithoutRefresh(torch.nn.Module):
    """Two layers that update owned rows only (nvalchemi_lammps.owned_rows), the second reading
    the ghost rows as padded, never refreshed: right in one process, wrong on a rank."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        senders, receivers = inputs["neighbor_list"][:, 0], inputs["neighbor_list"][:, 1]
        w = torch.exp(-(inputs["edge_vectors"] ** 2).sum(dim=1))
        rows = inputs["positions"].shape[0]
        owned = owned_count(inputs["n_owned"], rows)
        h = torch.ones(rows, dtype=w.dtype)
        for _ in range(2):
            messages = torch.zeros_like(h).index_add(0, receivers, h[senders] * w)
            h = per_row(owned_rows(h, owned) + torch.tanh(owned_rows(messages, owned)), rows)
        return {"atomic_energies": h}


def run(args, *extra):
    proc = subprocess.run([args.python, args.check, *extra], capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def require_compiled_as_traced(package: str, workdir: str, failures: list) -> None:
    """The exporter's check of a compiled program against the module it was traced from (a
    compiler defect) passes the package's own program and refuses, removing the file and naming
    the output, one whose energies are off by 1e-6 relative."""
    meta = LoadedModel(package).metadata()
    example = example_inputs(meta["species"], meta["cutoff"], torch.float64)
    program = torch._inductor.aoti_load_package(package)

    class Compiled(torch.nn.Module):
        names = program.get_metadata()["nvalchemi_outputs"].split()

        def __init__(self, perturbed: bool):
            super().__init__()
            self.perturbed = perturbed

        def forward(self, *inputs):
            returned = list(program(*inputs))
            if self.perturbed:
                returned[0] = returned[0] * (1 + 1e-6)
            return tuple(returned)

    for perturbed in (False, True):
        copy = os.path.join(workdir, "compiled_copy.pt2")
        shutil.copyfile(package, copy)
        try:
            require_program_as_module(copy, "checked.pt2", Compiled(perturbed), example)
            refused = ""
        except ValueError as exc:
            refused = str(exc)
        want = ("checked.pt2 not written: its compiled program does not compute what the model does" in refused
                and f"{Compiled.names[0]} differs by" in refused and not os.path.exists(copy)) if perturbed \
            else refused == ""
        what = "refuses a program off by 1e-6" if perturbed else "passes the program against itself"
        print(f"{'ok  ' if want else 'FAIL'} the export's compiled-program check {what}")
        if not want:
            failures.append(f"the export's compiled-program check {what}: {refused or 'no refusal'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", required=True)
    parser.add_argument("--check", required=True)
    parser.add_argument("--ready", nargs="*", default=[])
    parser.add_argument("--deep-model", default="")
    parser.add_argument("--foreign", nargs="*", default=[],
                        help="other frameworks' deployed files, which pass as pair_style nvalchemi runs them")
    parser.add_argument("--own-forces", default="")
    parser.add_argument("--export", default="", help="the nvalchemi-export script")
    args = parser.parse_args()
    failures = []
    # files without the package's metadata are judged through LAMMPS' Python module where it is
    lammps_here = subprocess.run([args.python, "-c", "import lammps"], capture_output=True).returncode == 0

    def expect(label, extra, code, texts):
        rc, out = run(args, *extra)
        missing = [t for t in texts if t not in out]
        ok = rc == code and not missing
        print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {rc}")
        if not ok:
            failures.append(f"{label}: exit {rc} (expected {code}), missing {missing}\n{out[-2000:]}")

    for model in args.foreign:
        expect(f"foreign: {os.path.basename(model)}", [model], 0,
               ["PASS  load", "pair_style nvalchemi reads it as", "PASS  forces", "SKIP  split",
                "passed what was checked"])
    if not args.ready:
        if failures:
            sys.exit("FAIL:\n" + "\n".join(failures))
        return
    for model in args.ready:
        expect(f"ready: {os.path.basename(model)}", [model], 0,
               ["PASS  in step", "PASS  forces", "PASS  split", "is ready for pair_style nvalchemi"])
        if os.path.basename(model) == "schnet_layerwise.pt":
            require_owned_rows_only(model)
    expect("deep model checked as layerwise", [args.deep_model, "--halo", "layerwise"], 1,
           ["PASS  forces", "FAIL  split", "halo layerwise", "is NOT ready"])
    if args.own_forces:
        expect("own forces", [args.own_forces], 0, ["SKIP  forces", "SKIP  split", "not checked: forces, split"])
    with tempfile.TemporaryDirectory(prefix="nvalchemi-check-") as workdir:
        ghost_sum = os.path.join(workdir, "ghost_sum.pt")
        save_model(GhostSum(), ghost_sum, cutoff=2.0, species=[18], units="lj")
        expect("energies summed over ghost rows", [ghost_sum], 1, ["PASS  forces", "FAIL  split", "is NOT ready"])
        unrefreshed = os.path.join(workdir, "owned_rows_without_refresh.pt")
        save_model(OwnedRowsWithoutRefresh(), unrefreshed, cutoff=2.0, species=[18], units="lj",
                   spec={"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 2})
        expect("reads ghost rows it updated on owned rows only, unrefreshed", [unrefreshed], 1,
               ["PASS  forces", "FAIL  split", "is NOT ready"])
        def require_refusal(what, module, path, metadata_args, because):
            """save_model refuses `module` (no file left, the reason in its message); the model is
            then written without the export's check, for nvalchemi-check."""
            try:
                save_model(module, path, **metadata_args)
                failures.append(f"save_model wrote a model that {what}")
            except ValueError as exc:
                refused = "not written" in str(exc) and because in str(exc) and not os.path.exists(path)
                print(f"{'ok  ' if refused else 'FAIL'} save_model refuses a model that {what}")
                if not refused:
                    failures.append(f"save_model's refusal of a model that {what}: {exc}")
            torch.jit.save(torch.jit.script(module), path,
                           _extra_files={METADATA_FILE: json.dumps(make_metadata(**metadata_args))})

        no_atoms = os.path.join(workdir, "fails_without_atoms.pt")
        require_refusal("fails on a rank with no atoms", FailsWithoutAtoms(), no_atoms,
                        dict(cutoff=2.0, species=[18], units="lj"), "failed")
        expect("fails on a rank with no atoms", [no_atoms], 1, ["FAIL  contract", "a rank with no atoms"])
        skips = os.path.join(workdir, "skips_exchange.pt")
        layerwise = dict(cutoff=2.0, species=[18], units="lj",
                         spec={"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 2})
        require_refusal("makes other exchange calls on a rank without atoms", SkipsExchangeWithoutAtoms(), skips,
                        layerwise, "a rank with ghosts only 0")
        expect("skips its exchange call on a rank without atoms", [skips], 1,
               ["FAIL  in step", "a rank with atoms and ghosts made 2 exchange call(s)",
                "a rank with ghosts only 0 [none]", "is NOT ready"])
        # halo mode gp: the layerwise SchNet model under the gp preset passes; the deep one fails
        # its split as it fails layerwise's (where the reference models are the ones checked)
        schnet_layerwise = next((m for m in args.ready if os.path.basename(m) == "schnet_layerwise.pt"), None)
        if schnet_layerwise:
            gp_model = os.path.join(workdir, "schnet_gp.pt")
            meta = LoadedModel(schnet_layerwise).metadata()
            meta["spec"] = {"preset": "SPEC_MPNN_GP", "num_message_passing_layers": 3}
            torch.jit.save(torch.jit.load(schnet_layerwise), gp_model, _extra_files={METADATA_FILE: json.dumps(meta)})
            expect("halo mode gp", [gp_model], 0, ["halo gp (checked as one rank", "PASS  in step", "PASS  split",
                                                   "is ready for pair_style nvalchemi"])
        expect("deep model checked as gp", [args.deep_model, "--halo", "gp"], 1, ["FAIL  split", "is NOT ready"])
        # the format is told by the contents, not the name
        for model in args.ready:
            name = os.path.basename(model)
            if name in ("lj_ar.pt", "lj_ar.pt2"):
                misnamed = os.path.join(workdir, "misnamed_" + (name[:-1] if name.endswith("2") else name + "2"))
                shutil.copyfile(model, misnamed)
                expect(f"{name} named {os.path.basename(misnamed)}", [misnamed], 0,
                       ["(AOTInductor)" if name.endswith("2") else "(TorchScript)", "is ready"])
        no_metadata = os.path.join(workdir, "no_metadata.pt")
        torch.jit.save(torch.jit.script(GhostSum()), no_metadata)
        # judged by pair_style nvalchemi itself where LAMMPS' Python module is importable
        expect("no metadata", [no_metadata], 1,
               ["FAIL  load", "has no USER-NVALCHEMI metadata (nvalchemi_metadata.json"] if lammps_here else
               ["FAIL  metadata", "no metadata (nvalchemi_metadata.json)", "run the nvalchemi-check of build/venv"])
        nan_model = os.path.join(workdir, "nan_energies.pt")
        require_refusal("returns energies that are not finite", NaNEnergies(), nan_model,
                        dict(cutoff=2.0, species=[18], units="lj"), "not finite")
        expect("energies that are not finite", [nan_model], 1, ["FAIL  contract", "not finite", "is NOT ready"])
        for model in (m for m in args.ready if os.path.basename(m) == "lj_ar.pt2"):
            require_compiled_as_traced(model, workdir, failures)
        if args.export:
            schnet = os.path.join(os.path.dirname(__file__), "..", "..", "models", "schnet.py")
            # a name without a suffix is a package (schnet_cli.pt2), here in float32 and for AVX2 CPUs,
            # whose forces are checked against differences of its own energy; .pt is TorchScript,
            # with a note
            # the second package is the first's program: the package cache copies it
            package_cache = dict(os.environ, NVALCHEMI_PACKAGE_CACHE=os.path.join(workdir, "package_cache"))
            for name, written, options, fragments in (
                    ("schnet_cli.pt", "schnet_cli.pt", [], ["PASS  forces    6 components vs central"]),
                    ("schnet_cli", "schnet_cli.pt2", ["--dtype", "float32", "--cpu-isa", "avx2"],
                     ["(AOTInductor)", "PASS  forces    6 components vs five-point differences"]),
                    ("schnet_again.pt2", "schnet_again.pt2", ["--dtype", "float32", "--cpu-isa", "avx2"],
                     ["(AOTInductor)", "PASS  forces    6 components vs five-point differences"])):
                proc = subprocess.run([args.python, args.export, f"{schnet}:SchNet", "--kwargs", '{"layerwise": true}',
                                       "-o", os.path.join(workdir, name), "--cutoff", "2.5", "--species", "Ar",
                                       "--units", "lj", "--spec",
                                       '{"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}'] + options,
                                      capture_output=True, text=True, timeout=600, env=package_cache)
                path = os.path.join(workdir, written)
                if proc.returncode != 0 or not os.path.exists(path):
                    failures.append(f"nvalchemi-export {name} failed or wrote no {written}:\n"
                                    f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
                    continue
                deprecated = "TorchScript, which PyTorch" in proc.stderr
                if deprecated != written.endswith(".pt"):
                    failures.append(f"nvalchemi-export {name}: the note on TorchScript's deprecation is "
                                    f"{'there' if deprecated else 'missing'}:\n{proc.stderr[-2000:]}")
                expect(f"exported by nvalchemi-export: {name}", [path], 0, fragments + ["PASS  split", "is ready"])
                reused = "reused the package compiled before" in proc.stderr
                if reused != (name == "schnet_again.pt2"):
                    failures.append(f"nvalchemi-export {name}: the package cache {'was' if reused else 'was not'} "
                                    f"used:\n{proc.stderr[-2000:]}")
                if "--cpu-isa" in options:
                    isa = torch._inductor.aoti_load_package(path).get_metadata().get("AOTI_CPU_ISA")
                    if isa != "AVX2":
                        failures.append(f"nvalchemi-export {name} --cpu-isa avx2 recorded AOTI_CPU_ISA {isa}")
            contradicted = subprocess.run([args.python, args.export, f"{schnet}:SchNet", "-o",
                                           os.path.join(workdir, "named.pt2"), "--format", "torchscript", "--cutoff",
                                           "2.5", "--species", "Ar", "--units", "lj"],
                                          capture_output=True, text=True, timeout=600)
            if contradicted.returncode == 0 or "but --format is torchscript: name it NAME.pt" not in contradicted.stderr:
                failures.append(f"nvalchemi-export -o named.pt2 --format torchscript was not refused:\n"
                                f"{contradicted.stderr[-2000:]}")
        not_a_model = os.path.join(workdir, "not_a_model.pt")
        with open(not_a_model, "w") as f:
            f.write("not a model\n")
        expect("not a model file", [not_a_model], 1, ["FAIL  load"] + (["it is not a model file"] if lammps_here else []))
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
