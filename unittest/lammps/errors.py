"""Bad input to pair_style nvalchemi and fix nvalchemi/dd gives a clear LAMMPS error, on 2 ranks,
without a hang.

Each case runs a small LAMMPS input on 2 MPI ranks and asserts a non-zero exit and the expected
ERROR message. The broken models are written here with the project's own export helper.

The one-rank cases run a slab that leaves rank 1 without atoms, with a model whose output is
wrong only on a rank that owns no atoms: every check on what a model returned must stop all
ranks (here: the error comes from proc 1) without leaving rank 0 waiting in a collective, and
each run has a 60 s timeout.
"""

import argparse
import json
import os
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

import torch

import nvalchemi_lammps.ops  # noqa: F401  (torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import METADATA_FILE, make_metadata
from harness import run_lammps


def save_unchecked(module: torch.nn.Module, path: str, **metadata_args) -> None:
    """A scripted model with its metadata, without save_model's check on what it writes: these
    models are wrong on purpose, for LAMMPS to refuse."""
    torch.jit.save(torch.jit.script(module), path,
                   _extra_files={METADATA_FILE: json.dumps(make_metadata(**metadata_args), sort_keys=True)})


BASE = """units {units}
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
mass * 1.0
{newton}pair_style nvalchemi {model}{keywords}
pair_coeff * * {elements}
{after}run 0
"""


class WrongShape(torch.nn.Module):
    """Returns one atomic energy too many: the runner must refuse it mid-run."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        n = inputs["positions"].shape[0]
        return {"atomic_energies": torch.zeros(n + 1, dtype=torch.float64)}


class WrongOnEmptyRank(torch.nn.Module):
    """Returns what force strategy 'model' and the extra outputs of ONE_RANK_SPEC need, but on a
    rank that owns no atoms the output `fault` has a shape no check accepts."""

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        n = inputs["positions"].shape[0]
        f64 = torch.float64
        out = {"atomic_energies": torch.zeros(n, dtype=f64), "forces": torch.zeros(n, 3, dtype=f64),
               "virial": torch.zeros(1, 3, 3, dtype=f64), "atomic_virials": torch.zeros(n, 3, 3, dtype=f64),
               "charges": torch.zeros(n, dtype=f64), "dipole": torch.zeros(3, dtype=f64)}
        if int(inputs["n_owned"]) == 0:
            out[self.fault] = torch.zeros(n + 2, 5, dtype=f64)
        return out


ONE_RANK_SPEC = {"preset": "SPEC_UMA_HALO", "halo": "local",
                 "outputs": {"charges": {"kind": "per_node", "reduce": "owned_only"},
                             "dipole": {"kind": "per_graph", "reduce": "all_reduce"}}}

# a slab in the lower half of the box: on a 2x1x1 grid rank 1 owns no atoms
ONE_RANK_BASE = """units lj
atom_style atomic
processors 2 1 1
lattice fcc 0.8442
region box block 0 8 0 4 0 4
create_box 1 box
region slab block 0 3.5 INF INF INF INF
create_atoms 1 region slab
mass * 1.0
pair_style nvalchemi {model}
pair_coeff * * Ar
{after}run 0
"""


class FailsInOneQuarter(torch.nn.Module):
    """A two-layer model that refreshes its ghost rows between layers (so the other ranks wait in
    the exchange) and, if `fault` says so, fails where it owns atoms in the third quarter of the
    box in x (rank 2 of a 4x1x1 grid): it raises (from its first call, or its sixth), or returns
    its energies as float32."""

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault
        self.calls = 0

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        self.calls += 1
        n_owned = int(inputs["n_owned"])
        rows = inputs["positions"].shape[0]
        receivers = inputs["neighbor_list"][:, 1]
        r2 = (inputs["edge_vectors"] * inputs["edge_vectors"]).sum(1)
        h = torch.zeros(rows, 1, dtype=torch.float64).index_add(0, receivers, torch.exp(-r2).unsqueeze(1))
        h = torch.ops.nvalchemi.refresh_neighbors(h)
        fraction = inputs["positions"][:n_owned, 0] / inputs["cell"][0, 0, 0]
        mine = bool(((fraction >= 0.5) & (fraction < 0.75)).any())
        if mine and (self.fault == "raise" or (self.fault == "raise_on_6th_call" and self.calls >= 6)):
            raise RuntimeError("deliberate failure in the third quarter of the box")
        h = torch.ops.nvalchemi.refresh_neighbors(h * h)
        energies = h[:, 0]
        if mine and self.fault == "float32":
            energies = energies.to(torch.float32)
        return {"atomic_energies": energies}


# a 4x1x1 grid over a bulk crystal: rank 2 owns the third quarter of the box in x
FOUR_RANK_BASE = """units lj
atom_style atomic
processors 4 1 1
lattice fcc 0.8442
region box block 0 8 0 4 0 4
create_box 2 box
create_atoms 1 box
mass * 1.0
{setup}pair_style nvalchemi {model}{keywords}
pair_coeff * * {elements}
{after}"""


class WritesIntoInput(torch.nn.Module):
    """Scales its edge vectors in place: the inputs are the package's buffers, read-only."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        senders = inputs["neighbor_list"][:, 0]
        senders.zero_()
        return {"atomic_energies": torch.zeros(inputs["positions"].shape[0], dtype=torch.float64)}


class HookForcesWhereAtoms(torch.nn.Module):
    """Returns forces only when it sees atoms: in scope local, some ranks do and some do not."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        if batch["positions"].shape[0] > 0:
            return {"forces": torch.zeros_like(batch["positions"])}
        return {"energy": torch.zeros(1, dtype=torch.float64)}


class NoExchange(torch.nn.Module):
    """Valid outputs, but no exchange call: a model built for halo mode deep."""

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return {"atomic_energies": torch.zeros(inputs["positions"].shape[0], dtype=torch.float64)}


class HookCallsOps(torch.nn.Module):
    """A hook that calls an exchange op, which only a model evaluated by pair_style nvalchemi may."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return {"forces": torch.ops.nvalchemi.refresh_neighbors(torch.zeros_like(batch["positions"]))}


class HookNoVirial(torch.nn.Module):
    """A bias hook that returns energy but no virial."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return {"energy": batch["positions"].sum()}


class HookZeroForces(torch.nn.Module):
    """Returns zero forces of the right shape."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return {"forces": torch.zeros_like(batch["positions"])}


class HookBadForces(torch.nn.Module):
    """Returns one force row too many."""

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        n = batch["positions"].shape[0]
        return {"forces": torch.zeros(n + 1, 3, dtype=torch.float64)}


def make_models(workdir, lj_model):
    models = {}
    # the LJ model's file with one byte changed in the middle, and cut short
    with open(lj_model, "rb") as f:
        archive = bytearray(f.read())
    models["truncated"] = os.path.join(workdir, "truncated.pt")
    with open(models["truncated"], "wb") as f:
        f.write(archive[:len(archive) // 2])
    archive[len(archive) // 2] ^= 0x20
    models["damaged"] = os.path.join(workdir, "damaged.pt")
    with open(models["damaged"], "wb") as f:
        f.write(archive)
    for name, hook in (("hook_no_virial", HookNoVirial()), ("hook_bad_forces", HookBadForces()),
                       ("hook_calls_ops", HookCallsOps()),
                       ("hook_zero_forces", HookZeroForces()), ("hook_forces_where_atoms", HookForcesWhereAtoms())):
        models[name] = os.path.join(workdir, f"{name}.pt")
        torch.jit.script(hook).save(models[name])
    plain = torch.jit.script(WrongShape())
    models["no_metadata"] = os.path.join(workdir, "no_metadata.pt")
    torch.jit.save(plain, models["no_metadata"])
    models["future_version"] = os.path.join(workdir, "future_version.pt")
    meta = {"contract_version": 99, "cutoff": 2.5, "species": [18], "units": "lj", "dtype": "float64",
            "spec": {"preset": "SPEC_LJ_HALO"}}
    torch.jit.save(plain, models["future_version"], _extra_files={METADATA_FILE: json.dumps(meta)})
    # written by another PyTorch release, in other units than the run's: the warning, then the error
    models["another_torch"] = os.path.join(workdir, "another_torch.pt")
    torch.jit.save(plain, models["another_torch"], _extra_files={METADATA_FILE: json.dumps(
        dict(meta, contract_version=1, units="metal", torch_version="2.9.1+cu128", cuda_version="12.8"))})
    models["unknown_units"] = os.path.join(workdir, "unknown_units.pt")
    save_unchecked(WrongShape(), models["unknown_units"], cutoff=2.5, species=[18], units="atomic")
    models["missing_key"] = os.path.join(workdir, "missing_key.pt")
    del meta["units"]
    meta["contract_version"] = 1
    torch.jit.save(plain, models["missing_key"], _extra_files={METADATA_FILE: json.dumps(meta)})
    for name, spec in (("no_exchange_layerwise", {"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}),
                       ("no_exchange_local", {"preset": "SPEC_LJ_HALO", "num_message_passing_layers": 2})):
        models[name] = os.path.join(workdir, f"{name}.pt")
        save_unchecked(NoExchange(), models[name], cutoff=2.5, species=[18], units="lj", spec=spec)
    # specs in the toolkit's own layout (MLIPSpec.to_dict(), version 2)
    toolkit_local = {"version": 2, "core": {"policy": {"kind": "local"}, "custom_ops": [], "third_party_helpers": []},
                     "output_kinds": [["atomic_energies", "per_node"]], "all_reduce_outputs": [], "compile": None}
    models["toolkit_shard"] = os.path.join(workdir, "toolkit_shard.pt")
    save_unchecked(NoExchange(), models["toolkit_shard"], cutoff=2.5, species=[18], units="lj",
               spec=dict(toolkit_local, core={"policy": {"kind": "shard"}}))
    models["toolkit_kindless"] = os.path.join(workdir, "toolkit_kindless.pt")
    save_unchecked(NoExchange(), models["toolkit_kindless"], cutoff=2.5, species=[18], units="lj",
               spec=dict(toolkit_local, all_reduce_outputs=["charges"]))
    for fault in ("atomic_energies", "forces", "virial", "atomic_virials", "charges", "dipole"):
        models[f"wrong_on_empty_rank_{fault}"] = os.path.join(workdir, f"wrong_on_empty_rank_{fault}.pt")
        save_unchecked(WrongOnEmptyRank(fault), models[f"wrong_on_empty_rank_{fault}"], cutoff=2.5, species=[18],
                   units="lj", spec=ONE_RANK_SPEC)
    models["bad_spec"] = os.path.join(workdir, "bad_spec.pt")
    save_unchecked(WrongShape(), models["bad_spec"], cutoff=2.5, species=[18], units="lj",
               spec={"preset": "SPEC_LJ_HALO", "halo_mode": "local"})
    models["unregistered_custom_op"] = os.path.join(workdir, "unregistered_custom_op.pt")
    save_unchecked(WrongShape(), models["unregistered_custom_op"], cutoff=2.5, species=[18], units="lj",
               spec={"preset": "SPEC_LJ_HALO", "custom_ops": ["nvalchemi_kernels::not_a_kernel"]})
    models["writes_into_input"] = os.path.join(workdir, "writes_into_input.pt")
    save_unchecked(WritesIntoInput(), models["writes_into_input"], cutoff=2.5, species=[18], units="lj")
    models["wrong_shape"] = os.path.join(workdir, "wrong_shape.pt")
    save_unchecked(WrongShape(), models["wrong_shape"], cutoff=2.5, species=[18], units="lj")
    for fault in ("raise", "raise_on_6th_call", "float32"):
        models[f"fails_in_one_quarter_{fault}"] = os.path.join(workdir, f"fails_in_one_quarter_{fault}.pt")
        save_unchecked(FailsInOneQuarter(fault), models[f"fails_in_one_quarter_{fault}"], cutoff=2.5, species=[18],
                   units="lj", spec={"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 2})
    models["metadata_not_json"] = os.path.join(workdir, "metadata_not_json.pt")
    torch.jit.save(plain, models["metadata_not_json"], _extra_files={METADATA_FILE: '{"contract_version": 1, "cutoff": 2.5,'})
    models["energies_per_graph"] = os.path.join(workdir, "energies_per_graph.pt")
    save_unchecked(NoExchange(), models["energies_per_graph"], cutoff=2.5, species=[18], units="lj",
               spec={"preset": "SPEC_LJ_HALO", "outputs": {"atomic_energies": {"kind": "per_graph",
                                                                               "reduce": "all_reduce"}}})
    models["not_torchscript"] = os.path.join(workdir, "not_torchscript.pt")
    with open(models["not_torchscript"], "w") as f:
        f.write("this is not a TorchScript archive\n")
    # what torch.save writes (a framework's training checkpoint, without the framework here)
    models["checkpoint"] = os.path.join(workdir, "checkpoint.pth")
    torch.save({"model_state_dict": {"weight": torch.ones(3)}, "epoch": 2}, models["checkpoint"])
    return models


def retarget_aoti_package(source, path, **changes):
    """A copy of the AOTInductor package `source` whose recorded target (AOTI_MACHINE,
    AOTI_CPU_ISA, ...) says otherwise."""
    import zipfile
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("_metadata.json"):
                data = json.dumps(dict(json.loads(data), **changes)).encode()
            dst.writestr(item, data)
    return path


def missing_cpu_isa():
    """An instruction set AOTInductor names that this CPU lacks, or None."""
    caps = torch._C._cpu._get_cpu_capability()
    for isa, flag in (("AMX_TILE", "amx_tile"), ("AVX512_BF16", "avx512_bf16"), ("AVX512", "avx512_f"),
                      ("AVX2", "avx2")):
        if not caps.get(flag, False):
            return isa
    return None


def aoti_cases(aoti_model, workdir):
    ok = {"units": "lj", "newton": "", "model": aoti_model, "keywords": "", "elements": "Ar Ar", "after": ""}
    other_machine = retarget_aoti_package(aoti_model, os.path.join(workdir, "other_machine.pt2"),
                                          AOTI_MACHINE="riscv64")
    found = [
        ("AOTInductor package with another force strategy", dict(ok, keywords=" forces global_energy"),
         r"Model .*lj_ar\.pt2 with the pair_style keywords given: the package was compiled to differentiate "
         r"the sum of the owned rows of 'atomic_energies' and the spec this run uses asks to differentiate "
         r"the sum of 'energy'; a package's forces are compiled in"),
        ("AOTInductor package with its node energies summed over ghost rows",
         dict(ok, keywords=" output atomic_energies per_node all_reduce"),
         r"the package was compiled to differentiate the sum of the owned rows of 'atomic_energies' and the "
         r"spec this run uses asks to differentiate the sum of 'atomic_energies'"),
        ("a model package given as fix nvalchemi/dd's hook",
         dict(ok, after=f"fix dd all nvalchemi/dd hook {aoti_model} local 1\n"),
         r"Cannot load fix nvalchemi/dd hook .*lj_ar\.pt2 on device cpu: the AOTInductor package records no "
         r"nvalchemi_hook_inputs, so it is not a hook \(a model file\?\)"),
        ("AOTInductor package compiled for another machine", dict(ok, model=other_machine),
         r"Cannot load .*other_machine\.pt2 as an AOTInductor model: the package was compiled for riscv64 "
         r"and this is"),
    ]
    isa = missing_cpu_isa()
    if isa is None:
        print("note: this CPU has every instruction set the ISA check knows; that case is not run")
    else:
        other_cpu = retarget_aoti_package(aoti_model, os.path.join(workdir, "other_cpu.pt2"), AOTI_CPU_ISA=isa)
        found.append(("AOTInductor package compiled for another CPU", dict(ok, model=other_cpu),
                      rf"the package was compiled for the CPU instruction set '{isa}' and this CPU lacks {isa}: "
                      r"export it again on this machine, or with --cpu-isa avx2"))
    return found


def device_cases(lj_model, aoti_model, workdir):
    """The device keyword on a machine whose LibTorch sees no GPU (the test machines)."""
    ok = {"units": "lj", "newton": "", "model": lj_model, "keywords": "", "elements": "Ar Ar", "after": ""}
    found = [
        ("device not cpu or cuda", dict(ok, keywords=" device gpu"),
         r"pair_style nvalchemi device: the device must be cpu, cuda or cuda:N \(N a GPU number\), not 'gpu'"),
        ("device cuda with a number that is not one", dict(ok, keywords=" device cuda:one"),
         r"the device must be cpu, cuda or cuda:N \(N a GPU number\), not 'cuda:one'"),
    ]
    if torch.cuda.is_available():
        print("note: LibTorch sees a GPU here; the cases of device cuda without one are not run")
        return found
    no_gpu = (r"( needs a LibTorch built with CUDA, and this one is a CPU-only build: build the package against "
              r"a CUDA LibTorch|: LibTorch sees no GPU on this node)")
    gpu_package = retarget_aoti_package(aoti_model, os.path.join(workdir, "gpu_package.pt2"), AOTI_DEVICE_KEY="cuda")
    return found + [
        ("device cuda without a GPU", dict(ok, keywords=" device cuda"), r"pair_style nvalchemi device cuda" + no_gpu),
        ("device cuda:1 without a GPU", dict(ok, keywords=" device cuda:1"),
         r"pair_style nvalchemi device cuda:1" + no_gpu),
        ("AOTInductor package compiled for a GPU, run on the CPU", dict(ok, model=gpu_package),
         r"Cannot load .*gpu_package\.pt2 as an AOTInductor model: the package was compiled for device 'cuda' and "
         r"this pair style runs its model on device 'cpu': use the pair_style keyword device cuda"),
    ]


def library_cases(fused_model, fused_package, models, workdir):
    """The library keyword: files that are no operator library, and a model calling an operator
    that no loaded library registers."""
    ok = {"units": "lj", "newton": "", "model": fused_model, "keywords": "", "elements": "Ar Ar", "after": ""}
    not_shared = os.path.join(workdir, "not_a_library.so")
    with open(not_shared, "w") as f:
        f.write("this is text, not a shared object\n")
    return [
        ("operator library that does not exist", dict(ok, keywords=" library /nonexistent/ops.so"),
         r"pair_style nvalchemi library: cannot find the operator library /nonexistent/ops\.so: check the path"),
        ("operator library that is not a shared object", dict(ok, keywords=f" library {not_shared}"),
         r"pair_style nvalchemi library: cannot load the operator library .*not_a_library\.so: .*(invalid ELF header|"
         r"file too short).* \(an operator library is a shared object built against the same LibTorch"),
        ("model calling an operator no library registers", ok,
         r"Cannot load .*lj_ar_fused\.pt as a TorchScript model: the model calls the operator "
         r"nvalchemi_kernels::lj_edge_energy, which no loaded library registers: .*'library <file>\.so'"),
        ("package calling an operator no library registers", dict(ok, model=fused_package),
         r"Cannot load .*lj_ar_fused\.pt2 as an AOTInductor model: the model calls the operator "
         r"nvalchemi_kernels::lj_edge_energy, which no loaded library registers: .*'library <file>\.so'"),
        ("spec listing an operator no library registers", dict(ok, model=models["unregistered_custom_op"]),
         r"Model .*unregistered_custom_op\.pt needs the operator\(s\) nvalchemi_kernels::not_a_kernel, which no "
         r"loaded library registers"),
    ]


def cases(lj_model, models):
    ok = {"units": "lj", "newton": "", "model": lj_model, "keywords": "", "elements": "Ar Ar", "after": ""}
    return [
        ("missing model file", dict(ok, model="/nonexistent/lj.pt"),
         r"Cannot open pair_style nvalchemi model file /nonexistent/lj\.pt: check the path, which is relative to "
         r"the directory LAMMPS runs in \(where it is not found there, LAMMPS looks for the file's base name, "
         r"lj\.pt, in \$LAMMPS_POTENTIALS\)"),
        ("element the model lacks", dict(ok, elements="Ar Cu"),
         r"Model .*lj_ar\.pt has no parameters for element Cu; it knows: Ar"),
        ("not an element", dict(ok, elements="Ar Xx"), r"'Xx' is not a chemical element symbol"),
        ("lj model in physical units", dict(ok, units="metal"),
         r"Model .*lj_ar\.pt works in 'lj' units but this run uses 'units metal': lj units are reduced "
         r"units with no conversion to physical ones.*use 'units lj'"),
        ("model units not a LAMMPS unit style", dict(ok, model=models["unknown_units"]),
         r"Model .*unknown_units\.pt declares units 'atomic', which is not a LAMMPS unit style"),
        ("model without metadata", dict(ok, model=models["no_metadata"]),
         r"has no USER-NVALCHEMI metadata \(nvalchemi_metadata\.json"),
        ("newer contract version", dict(ok, model=models["future_version"]),
         r"invalid metadata: contract_version is 99 but this build of USER-NVALCHEMI implements version 1"),
        ("metadata without units", dict(ok, model=models["missing_key"]),
         r"invalid metadata: missing key 'units'"),
        ("pair_coeff again after a new pair_style", dict(ok, after=f"pair_style nvalchemi {lj_model}\n"),
         r"All pair coeffs are not set"),
        ("not a model file", dict(ok, model=models["not_torchscript"]),
         r"Cannot load .*not_torchscript\.pt as a model: it is not a model file \(pair_style nvalchemi reads "
         r"TorchScript files \(\.pt\) and AOTInductor packages \(\.pt2\), which are zip archives"),
        ("a checkpoint written by torch.save", dict(ok, model=models["checkpoint"]),
         r"Cannot load .*checkpoint\.pth as a model: it is a checkpoint written by torch\.save \(a pickled Python "
         r"object that needs Python to read\), not a deployed model: export the model"),
        ("model file on pair_coeff, as pair_style mace inputs have it", dict(ok, elements=f"{lj_model} Ar Ar"),
         r"pair_coeff nvalchemi takes an element symbol or NULL for each atom type, and '.*lj_ar\.pt' looks like a "
         r"model file: pair_style nvalchemi names the model"),
        ("damaged model file", dict(ok, model=models["damaged"]),
         r"Cannot load .*damaged\.pt as a TorchScript model: its entry '.*' fails its CRC-32 check: the file is "
         r"damaged"),
        ("truncated model file", dict(ok, model=models["truncated"]),
         r"Cannot load .*truncated\.pt as a TorchScript model: the zip archive is truncated or damaged"),
        ("metadata that is not JSON", dict(ok, model=models["metadata_not_json"]),
         r"Model .*metadata_not_json\.pt has invalid metadata: not valid JSON: .*parse error at line 1, column 39"),
        ("spec declaring the node energies per_graph", dict(ok, model=models["energies_per_graph"]),
         r"Model .*energies_per_graph\.pt with the pair_style keywords given: force strategy 'node_energy' needs "
         r"the spec to declare the energy it uses: 'atomic_energies' as per_node"),
        ("model writing into its input", dict(ok, model=models["writes_into_input"]),
         r"failed on step 0: the model changed its input 'neighbor_list' in place; inputs are the "
         r"package's buffers, read-only to the model"),
        ("CUDA graph on the CPU", dict(ok, keywords=" cuda_graph yes"),
         r"pair_style nvalchemi cuda_graph yes captures a model's calls on a GPU at fixed shapes: it "
         r"needs device cuda and static_shapes yes \(model .*: TorchScript, device cpu, static_shapes no\)"),
        ("graph built nowhere", dict(ok, keywords=" graph gpu"),
         r"pair_style nvalchemi graph must be host \(built on the CPU, copied to the model's device\) or "
         r"device \(built on the model's device\), not gpu"),
        ("no LibTorch threads", dict(ok, keywords=" threads 0"),
         r"pair_style nvalchemi threads must be at least 1 \(LibTorch threads per rank\)"),
        ("static_shapes not a yes/no", dict(ok, keywords=" static_shapes maybe"),
         r"Expected boolean parameter instead of 'maybe' in input script or data file"),
        ("pair_modify shift yes", dict(ok, after="pair_modify shift yes\n"),
         r"cannot shift its energy \(pair_modify shift yes\): the model defines its own cutoff"),
        ("pair_modify tail yes", dict(ok, after="pair_modify tail yes\n"),
         r"has no tail correction \(pair_modify tail yes\)"),
        ("compute of an output the model does not return",
         dict(ok, keywords=" output dipole per_graph all_reduce",
              after="compute mu all nvalchemi/global dipole 3\nthermo_style custom step c_mu[1]\n"),
         r"compute nvalchemi/global needs model output 'dipole' with 3 values; the model returned: "
         r"atomic_energies \[\d+\], energy \[1,1\]"),
        ("multi-layer model without exchange calls in halo mode local", dict(ok, model=models["no_exchange_local"]),
         r"Model .*no_exchange_local\.pt declares 2 message-passing layers but made no exchange call in halo "
         r"mode 'local', which the spec of model .*no_exchange_local\.pt sets: .* needs halo mode 'deep'"),
        ("multi-layer model without exchange calls in halo mode layerwise",
         dict(ok, model=models["no_exchange_layerwise"]),
         r"declares 3 message-passing layers but made no exchange call in halo mode 'layerwise', which the spec"),
        ("halo override to a mode the model does not exchange in",
         dict(ok, model=models["no_exchange_layerwise"], keywords=" halo local"),
         r"declares 3 message-passing layers but made no exchange call in halo mode 'local', which the "
         r"pair_style keywords set"),
        ("halo mode gp without atom IDs", dict(ok, model=models["no_exchange_layerwise"], keywords=" halo gp",
                                               units="lj\natom_modify id no"),
         r"Halo mode 'gp' of pair style nvalchemi maps ghost atoms to their atoms' rows by atom ID"),
        ("deep-halo model in halo mode gp", dict(ok, model=models["no_exchange_layerwise"], keywords=" halo gp"),
         r"declares 3 message-passing layers but made no exchange call in halo mode 'gp', which the "
         r"pair_style keywords set"),
        ("toolkit spec with a sharded storage policy", dict(ok, model=models["toolkit_shard"]),
         r"invalid metadata: spec key 'core\.policy' kind 'shard' \(owned rows only, cross-rank reads by global "
         r"atom id\) has no counterpart in LAMMPS' spatial decomposition"),
        ("toolkit spec with an output of no kind", dict(ok, model=models["toolkit_kindless"]),
         r"output 'charges' has kind 'unknown': declare it per_node"),
        ("exchange op called by a hook", dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_calls_ops']} local 1\n"),
         r"torch\.ops\.nvalchemi\.refresh_neighbors was called outside a pair_style nvalchemi model evaluation"),
        ("unknown key in the model's spec", dict(ok, model=models["bad_spec"]),
         r"invalid metadata: unknown spec key 'halo_mode'"),
        ("unknown spec preset keyword", dict(ok, keywords=" spec SPEC_FOO"),
         r"pair_style nvalchemi spec: unknown spec preset 'SPEC_FOO'"),
        ("unknown force strategy keyword", dict(ok, keywords=" forces magic"),
         r"unknown force strategy 'magic' \(valid: model, node_energy, global_energy\)"),
        ("model forces the model does not declare", dict(ok, keywords=" forces model"),
         r"force strategy 'model' needs the spec to declare output 'forces'"),
        ("output keyword missing values", dict(ok, keywords=" output charges per_node"),
         r"Illegal pair_style nvalchemi output command: missing argument"),
        ("unknown keyword", dict(ok, keywords=" bogus 1"), r"Unknown pair_style nvalchemi keyword: bogus"),
        ("newton pair off", dict(ok, newton="newton off on\n"), r"requires newton pair on"),
        ("model output of the wrong shape", dict(ok, model=models["wrong_shape"]),
         r"model .*wrong_shape\.pt failed on step 0: 'atomic_energies' must have one row per atom"),
        # fix nvalchemi/dd
        ("fix: unknown keyword", dict(ok, after="fix dd all nvalchemi/dd bogus 1\n"),
         r"Unknown fix nvalchemi/dd keyword: bogus"),
        ("fix: zero interval", dict(ok, after="fix dd all nvalchemi/dd validate 0 1e-10\n"),
         r"fix nvalchemi/dd validate: the interval must be > 0, got 0"),
        ("fix: unknown hook scope", dict(ok, after="fix dd all nvalchemi/dd hook h.pt everywhere 1\n"),
         r"hook scope must be local, global or rank_zero, got everywhere"),
        ("fix: missing hook file", dict(ok, after="fix dd all nvalchemi/dd hook /nonexistent/h.pt local 1\n"),
         r"Cannot open fix nvalchemi/dd hook file /nonexistent/h\.pt"),
        ("fix: hook that is not TorchScript", dict(ok, after=f"fix dd all nvalchemi/dd hook {models['not_torchscript']} local 1\n"),
         r"Cannot load fix nvalchemi/dd hook .*not_torchscript\.pt as a TorchScript module"),
        ("fix: maxforce without guard", dict(ok, after="fix dd all nvalchemi/dd maxforce 10 clamp\n"),
         r"maxforce needs the guard keyword"),
        ("fix: validate without a model", dict(ok, after="pair_style lj/cut 2.5\npair_coeff * * 1 1\n"
                                               "fix dd all nvalchemi/dd validate 1 1e-10\n"),
         r"validate needs exactly one pair_style nvalchemi \(found 0\)"),
        ("fix: energy without a hook", dict(ok, after="fix dd all nvalchemi/dd\nfix_modify dd energy yes\n"),
         r"Fix dd nvalchemi/dd does not support fix_modify energy command"),
        ("fix: hook without the virial fix_modify asks for",
         dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_no_virial']} global 1\nfix_modify dd virial yes\n"),
         r"fix_modify virial yes needs fix nvalchemi/dd hook .*hook_no_virial\.pt to return 'virial'"),
        ("fix: unknown stage", dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_no_virial']} local 1 stage never\n"),
         r"stage must be before_step, before_compute, after_compute or after_step, got never"),
        ("fix: stage without a hook", dict(ok, after="fix dd all nvalchemi/dd stage after_step\n"),
         r"stage sets where the hook runs: it needs the hook keyword"),
        ("fix: hook energy at a stage without forces",
         dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_no_virial']} global 1 stage after_step\n"
                        "fix_modify dd energy yes\n"),
         r"fix_modify energy or virial with fix nvalchemi/dd needs the hook at stage before_compute or "
         r"after_compute \(it is at after_step\)"),
        ("fix: hook forces at a stage where they cannot act",
         dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_zero_forces']} rank_zero 1 stage after_step\n"
                        "velocity all create 1.0 1\nfix nve all nve\nrun 1\n"),
         r"hook .*hook_zero_forces\.pt returned forces at stage after_step, where they would not act"),
        ("drive no without a model that drives", dict(ok, keywords=" drive no"),
         r"pair_style nvalchemi .*lj_ar\.pt drive no adds nothing to the dynamics: use it as a sub-style of "
         r"pair_style hybrid/overlay"),
        ("deviation of one model", dict(ok, after="compute dev all nvalchemi/deviation\nthermo_style custom step c_dev[4]\n"),
         r"compute nvalchemi/deviation needs a committee of at least two pair_style nvalchemi models.*\(found 1\)"),
        ("committee members with other elements",
         dict(ok, after=f"pair_style hybrid/overlay nvalchemi {lj_model} nvalchemi {lj_model} drive no\n"
                        "pair_coeff * * nvalchemi 1 Ar Ar\npair_coeff * * nvalchemi 2 Ar NULL\n"
                        "compute dev all nvalchemi/deviation\nthermo_style custom step c_dev[4]\n"),
         r"sub-styles 1 and 2 give the atom types different elements \(or NULL\)"),
        ("fix: snapshot_if without v_", dict(ok, after="fix dd all nvalchemi/dd snapshot 1 s.xyz snapshot_if 3\n"),
         r"snapshot_if takes an equal-style variable as v_name, got 3"),
        ("fix: snapshot_if of no variable", dict(ok, after="fix dd all nvalchemi/dd snapshot 1 s.xyz snapshot_if v_nope\n"),
         r"Variable nope of fix nvalchemi/dd snapshot_if does not exist"),
        ("fix: hook forces of the wrong shape", dict(ok, after=f"fix dd all nvalchemi/dd hook {models['hook_bad_forces']} local 1\n"),
         r"Fix nvalchemi/dd hook .*hook_bad_forces\.pt failed on step 0: the hook's output 'forces' has \d+ values, expected"),
    ]


def one_rank_cases(models):
    def model(fault):
        return models[f"wrong_on_empty_rank_{fault}"]
    returned = r".*the model returned: "
    return [
        ("node energies", dict(model=model("atomic_energies"), after=""),
         r"'atomic_energies' must have one row per atom"),
        ("model forces", dict(model=model("forces"), after=""),
         r"Force strategy 'model' needs model output 'forces' with 3 values on each of the \d+ atom rows" + returned),
        ("model virial without F dot r", dict(model=model("virial"), after="pair_modify nofdotr\n"),
         r"The global virial needs model output 'virial' with 9 values" + returned),
        ("per-atom virials", dict(model=model("atomic_virials"),
                                  after="compute s all stress/atom NULL\ncompute sp all reduce sum c_s[1]\n"
                                        "thermo_style custom step c_sp\n"),
         r"Per-atom virials needs model output 'atomic_virials' with 9 values" + returned),
        ("compute nvalchemi/atom", dict(model=model("charges"),
                                        after="compute q all nvalchemi/atom charges\ncompute qs all reduce sum c_q\n"
                                              "thermo_style custom step c_qs\n"),
         r"compute nvalchemi/atom needs model output 'charges' with 1 value" + returned),
        ("compute nvalchemi/global", dict(model=model("dipole"),
                                          after="compute mu all nvalchemi/global dipole 3\nthermo_style custom step c_mu[1]\n"),
         r"compute nvalchemi/global needs model output 'dipole' with 3 values" + returned),
        ("hook forces on some ranks only", dict(model=model("dipole"),
                                                after=f"fix dd all nvalchemi/dd hook {models['hook_forces_where_atoms']} "
                                                      "local 1 stage after_step\nvelocity all create 1.0 1\n"
                                                      "fix nve all nve\nrun 1\n"),
         r"hook .*hook_forces_where_atoms\.pt returned forces at stage after_step"),
    ]


def four_rank_cases(models, nan_model):
    """Failures on rank 2 of 4 only: (name, fields, expected error, files check or None)."""
    ok = {"setup": "", "model": models["fails_in_one_quarter_raise"], "keywords": "", "elements": "Ar Ar",
          "after": "run 0\n"}
    on_2 = r"pair_style nvalchemi: model .*"
    return [
        ("the model raises on rank 2 while the others wait in its exchange", ok,
         on_2 + r"fails_in_one_quarter_raise\.pt failed on step 0: .*deliberate failure in the third quarter", None),
        ("a float32 output from a float64 model on rank 2", dict(ok, model=models["fails_in_one_quarter_float32"]),
         on_2 + r"failed on step 0: the model returned 'atomic_energies' as float32 on cpu; its outputs must be "
         r"float64 \(the metadata's dtype\) on cpu", None),
        ("NaN from the model on rank 2", dict(ok, model=nan_model, keywords=" forces model", elements="Ar Ne",
                                              setup="region third block 4.2 4.8 INF INF INF INF\n"
                                                    "set region third type 2\n"),
         on_2 + r"nan_probe\.pt on step 0: the model returned a non-finite energy \(nan\) for this rank's atoms",
         None),
        ("a failure on rank 2 at step 5 leaves whole snapshot and restart files",
         dict(ok, model=models["fails_in_one_quarter_raise_on_6th_call"],
              after="velocity all create 1.0 1\nfix nve all nve\nfix dd all nvalchemi/dd snapshot 1 snap.xyz\n"
                    "restart 2 state.*.restart\nrun 20\n"),
         on_2 + r"failed on step 5: .*deliberate failure", check_files_left),
    ]


def check_files_left(args, rundir):
    """After a run stopped at step 5: the snapshot holds whole frames of steps 0-4 and each
    restart file reads back."""
    import ase.io
    failures = []
    frames = ase.io.read(os.path.join(rundir, "snap.xyz"), index=":")
    if len(frames) != 5 or any(len(frame) != 512 for frame in frames):
        failures.append(f"snapshot: {len(frames)} frames of {[len(f) for f in frames]} atoms, expected 5 of 512")
    for step in (2, 4):
        with open(os.path.join(rundir, f"in.read{step}"), "w") as f:
            f.write(f"read_restart state.{step}.restart\npair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\nrun 0\n")
        proc = run_lammps(args.lmp, args.mpirun, 1, f"in.read{step}", rundir, timeout=60)
        if proc.returncode != 0 or "512 atoms" not in proc.stdout:
            failures.append(f"restart file of step {step} does not read back:\n{proc.stdout[-1500:]}")
    return failures


def check_another_torch_warned(args, rundir):
    """Rank 0 warned once of the PyTorch that wrote the model, naming both versions."""
    log = open(os.path.join(rundir, "log.lammps")).read()
    warning = re.findall(r"WARNING: Model \S*another_torch\.pt was written by PyTorch 2\.9\.1\+cu128 \(CUDA 12\.8\) "
                         r"and this LAMMPS runs LibTorch 2\.\d+\.\d+: .*export it again", log.replace("\n", " "))
    return [] if len(warning) == 1 else [f"another PyTorch: expected one warning naming both versions in:\n{log[-2000:]}"]


def run_case(args, workdir, n, name, text, expected, proc_pattern="", timeout=120, nranks=2, check=None):
    """Run one bad input in case<n>/: (its report line, its failures). It must exit non-zero with
    an ERROR (from the rank `proc_pattern` names) matching `expected`; then `check(args, rundir)`
    lists what else is wrong."""
    rundir = os.path.join(workdir, f"case{n}")
    os.makedirs(rundir)
    with open(os.path.join(rundir, "in.error"), "w") as f:
        f.write(text)
    proc = run_lammps(args.lmp, args.mpirun, nranks, "in.error", rundir, timeout=timeout)
    output = proc.stdout + proc.stderr
    found = re.search(r"ERROR" + proc_pattern + r".*" + expected, output, re.DOTALL)
    status = "ok" if proc.returncode != 0 and found else "FAIL"
    report = f"{status:4s} {name}: exit {proc.returncode}" + (f": {found.group(0)[:300]!r}" if found else "")
    if status != "ok":
        return report, [f"{name}: expected a non-zero exit and /{expected}/, got exit {proc.returncode}:\n"
                        f"{output[-2000:]}"]
    return report, check(args, rundir) if check else []


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--aoti-model", required=True, help="the LJ model as an AOTInductor package")
    parser.add_argument("--fused-model", required=True, help="the LJ model calling the fused kernel library")
    parser.add_argument("--fused-package", required=True, help="its AOTInductor package")
    parser.add_argument("--nan-model", required=True, help="nan_probe.pt: NaN energy and forces on Ne atoms")
    parser.add_argument("--only", default="", help="run the cases whose name matches this regular expression")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (each a LAMMPS job of its own)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nvalchemi-errors-") as workdir:
        models = make_models(workdir, args.model)
        all_cases = (cases(args.model, models) + aoti_cases(args.aoti_model, workdir)
                     + device_cases(args.model, args.aoti_model, workdir)
                     + library_cases(args.fused_model, args.fused_package, models, workdir))
        jobs = [(n, name, BASE.format(**fields), expected, {}) for n, (name, fields, expected) in enumerate(all_cases)]
        # a model output wrong on rank 1 only: the error comes from proc 1, within the timeout
        jobs += [(n, f"one rank: {name}", ONE_RANK_BASE.format(**fields), expected,
                  {"proc_pattern": r" on proc 1:" if "hook" not in name else "", "timeout": 60})
                 for n, (name, fields, expected) in enumerate(one_rank_cases(models), start=len(all_cases))]
        # a failure on one rank of four: every rank stops within the timeout, the error names the
        # cause and comes from that rank; files written before it are whole
        jobs += [(n, f"rank 2 of 4: {name}", FOUR_RANK_BASE.format(**fields), expected,
                  {"proc_pattern": r" on proc 2: ", "timeout": 60, "nranks": 4, "check": check})
                 for n, (name, fields, expected, check) in enumerate(four_rank_cases(models, args.nan_model),
                                                                     start=1000)]
        jobs.append((2000, "model written by another PyTorch (a warning), in other units (the error)",
                     BASE.format(units="lj", newton="", model=models["another_torch"], keywords="",
                                 elements="Ar Ar", after=""),
                     r"works in 'metal' units but this run uses 'units lj': lj units are reduced units",
                     {"check": check_another_torch_warned}))
        jobs = [job for job in jobs if re.search(args.only, job[1])]
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda job: run_case(args, workdir, *job[:4], **job[4]), jobs))
    failures = []
    for report, found in results:
        print(report)
        failures += found
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
