"""Write TorchScript models that pair_style nvalchemi can run.

The model contract (inputs, outputs, metadata, units, signs) is doc/Howto_nvalchemi_contract.rst;
this module is its Python side, for both formats pair_style nvalchemi loads:

* TorchScript (.pt): `save_model` scripts a module and stores the metadata inside the archive;
  `save_scripted_model` does the same for a module scripted already (e3nn models go through
  e3nn.util.jit.compile);
* AOTInductor (.pt2): `save_aoti_model` (or `save_model` to a path ending in .pt2) compiles the
  module ahead of time together with the gradient of the energy its spec's force strategy
  differentiates, because an exported program cannot be differentiated from C++ (doc/Howto_nvalchemi_contract.rst, "AOTInductor
  models").

`read_metadata` (nvalchemi_lammps.model_file) reads the metadata of either back.
"""

import argparse
import concurrent.futures
import contextlib
import copy
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

import nvalchemi_lammps.ops  # noqa: F401  (the exchange ops, opaque to tracing)
from nvalchemi_lammps import package_cache
from nvalchemi_lammps.contract import (AOTI_ENERGY_OUTPUT, AOTI_OWNED_ROWS, AOTI_OWNED_ROWS_AS_SIZE,  # noqa: F401
                                       CONTRACT_INPUTS, CONTRACT_VERSION, METADATA_FILE, TOOLKIT_SPEC_VERSION)  # (the export's API)
from nvalchemi_lammps.contract import (AOTI_GRADIENT, AOTI_GRADIENT_OF_ALL_ROWS, AOTI_GRADIENT_OF_OWNED_ROWS,
                                       AOTI_NO_GRADIENT, AOTI_OUTPUTS)
from nvalchemi_lammps.contract import (AOTI_HOOK_INPUTS, AOTI_HOOK_OUTPUTS, AOTI_PACKAGE_SUFFIX,
                                       BUILTIN_OP_NAMESPACES, HOOK_INPUTS, HOOK_OUTPUTS, TORCHSCRIPT,
                                       TORCHSCRIPT_SUFFIX)
from nvalchemi_lammps.model_file import (AOTINDUCTOR, DEFAULT_ENERGY_KEY, LoadedModel, output_format,
                                         read_metadata)  # noqa: F401  (the export's API)
from nvalchemi_lammps.owned_rows import traced_owned_count
from nvalchemi_lammps.spec import DEFAULT_SPEC, effective_spec, energy_share, forces_from_node_energies


def make_metadata(*, cutoff: float, species: Sequence[int], units: str,
                  dtype: torch.dtype = torch.float64, spec: Optional[Dict] = None) -> Dict:
    """The metadata of a contract model (see `save_model` for the arguments)."""
    if dtype not in (torch.float64, torch.float32):
        raise ValueError("dtype must be torch.float64 or torch.float32")
    return {
        "contract_version": CONTRACT_VERSION,
        "cutoff": float(cutoff),
        "species": [int(z) for z in species],
        "units": units,
        "dtype": "float64" if dtype == torch.float64 else "float32",
        "spec": spec if spec is not None else DEFAULT_SPEC,
        # the PyTorch that wrote the model: pair_style nvalchemi warns when LAMMPS runs another
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda or "",
    }


def save_scripted_model(scripted: torch.jit.ScriptModule, path: str, **metadata_args) -> Dict:
    """Save a scripted module with its metadata (arguments as for `save_model`); returns the
    metadata."""
    metadata = make_metadata(**metadata_args)
    torch.jit.save(scripted, path, _extra_files={METADATA_FILE: json.dumps(metadata, sort_keys=True)})
    require_ranks_in_step(path, metadata)
    return metadata


def require_ranks_in_step(path: str, metadata: Dict, name: Optional[str] = None) -> None:
    """Remove the model just written to `path` and raise ValueError if a rank without atoms
    would make other exchange calls than a rank with atoms (nvalchemi-check's "in step" check):
    pair_style nvalchemi stops such a run; or if the model cannot be evaluated as a rank of a
    decomposed run on the check's small random cell of its species. `name`: the file the
    message names (default `path`)."""
    from nvalchemi_lammps import check as nvalchemi_check
    # a spec in the toolkit's layout, which only the pair style translates: checked on the rows
    # of halo mode layerwise
    halo = "layerwise" if metadata["spec"].get("version") == TOOLKIT_SPEC_VERSION else ""
    try:
        spec = nvalchemi_check.checked_spec(metadata["spec"], halo)
        in_step, detail = nvalchemi_check.check_in_step(LoadedModel(path), metadata, spec, atoms=8, seed=1)
    except Exception as exc:  # noqa: BLE001  (any failure of the evaluation itself)
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]  # a TorchScript trace ends in it
        in_step, detail = False, (f"evaluating it as one rank of a decomposed run, on a random cell of 8 atoms of "
                                  f"its species, failed: {cause}")
    if not in_step:
        os.remove(path)
        raise ValueError(f"{name or path} not written: {detail}")


def save_model(
    module: torch.nn.Module,
    path: str,
    *,
    cutoff: float,
    species: Sequence[int],
    units: str,
    dtype: torch.dtype = torch.float64,
    spec: Optional[Dict] = None,
    device: str = "cpu",
) -> Dict:
    """Script `module` and save it with its metadata; returns the metadata. A path ending in
    .pt2 writes an AOTInductor package instead (`save_aoti_model`), compiled for `device`
    ("cpu" or "cuda": the pair style's device keyword must match it); a TorchScript model runs
    on any device, so `device` does not apply to it.

    species: atomic numbers the model handles. units: a LAMMPS unit style ("metal", "real",
    "lj", ...). spec: the model's default MLIPSpec as a dict, a preset plus overrides
    ({"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}) or a full spec with a
    "version" key (doc/Howto_nvalchemi_spec.rst); {"preset": "SPEC_LJ_HALO"} if omitted.
    """
    written = output_format(path)  # a name of neither format stops here, before any work
    require_finite_example(module.to(dtype).eval(), path, species, cutoff, dtype, spec)
    if written == AOTINDUCTOR:
        return save_aoti_model(module, path, cutoff=cutoff, species=species, units=units,
                               dtype=dtype, spec=spec, device=device)
    scripted = torch.jit.script(module.to(dtype).eval())
    return save_scripted_model(scripted, path, cutoff=cutoff, species=species, units=units,
                               dtype=dtype, spec=spec)


def require_finite_example(module: torch.nn.Module, path: str, species: Sequence[int], cutoff: float,
                           dtype: torch.dtype, spec: Optional[Dict]) -> None:
    """Raises ValueError when `module`, on the small graph of example_inputs, fails, returns an
    output that is not finite or, where its forces are the gradient of its owned node energies
    (the spec's force strategy node_energy), gives an edge-vector gradient that is not: such a
    file would stop LAMMPS at its first step (or, saved unchecked, run with NaN forces)."""
    device = next((p.device for p in module.parameters()), torch.device("cpu"))
    values = [t.to(device) for t in example_inputs(species, cutoff, dtype)]
    inputs = dict(zip(CONTRACT_INPUTS, values[:-1] + [torch.tensor(values[-1].shape[0], device=device)]))
    inputs["edge_vectors"] = inputs["edge_vectors"].detach().requires_grad_(True)
    graph = f"a small example graph ({values[0].shape[0]} atoms, {values[2].shape[0]} edges, {dtype})"
    try:
        effective = effective_spec(spec)
    except ValueError:
        effective = None  # the toolkit's layout, or the spec's own errors, which saving reports
    bad = {}
    try:
        with torch.enable_grad():
            outputs = module(inputs)
            bad = {name: int((~torch.isfinite(value)).sum()) for name, value in outputs.items()
                   if torch.is_tensor(value) and value.is_floating_point() and not bool(torch.isfinite(value).all())}
            energy_key = effective["node_energy_key"] if effective else None
            energies = outputs.get(energy_key) if energy_key else None
            if (not bad and effective and forces_from_node_energies(effective) and torch.is_tensor(energies)
                    and energies.requires_grad):
                (gradient,) = torch.autograd.grad([energies[: int(inputs["n_owned"])].sum()],
                                                  [inputs["edge_vectors"]], allow_unused=True)
                if gradient is not None and not bool(torch.isfinite(gradient).all()):
                    bad["d(energy)/d(edge_vectors)"] = int((~torch.isfinite(gradient)).sum())
    except Exception as exc:  # noqa: BLE001  (any failure here would be LAMMPS' first step's)
        raise ValueError(f"{path} not written: the model failed on {graph}: {exc}") from exc
    if bad:
        listed = ", ".join(f"{name} ({count} values)" for name, count in bad.items())
        raise ValueError(f"{path} not written: the model returns numbers that are not finite on {graph}: {listed}; "
                         "LAMMPS would stop at the first step. Check the model (divisions by edge lengths, "
                         "logarithms, uninitialized parameters) before saving it")


class _ContractProgram(torch.nn.Module):
    """The contract model as an AOTInductor program sees it: the seven inputs positionally, n_owned
    as a tensor of n_owned rows (AOTI_OWNED_ROWS_AS_SIZE: the owned count a size the program
    reads on every call, which owned_rows.owned_count hands a model's owned-row updates), and
    out: the model's outputs `names`, in order, then the gradient with respect to edge_vectors
    of the energy sum `gradient_of` says (AOTI_GRADIENT: the owned rows of `energy_output`, all
    its rows, or none, an empty [0, 3] for a model that returns its own forces)."""

    def __init__(self, module: torch.nn.Module, names: Sequence[str], energy_output: str, gradient_of: str):
        super().__init__()
        self.module = module
        self.names = list(names)
        self.energy_output = energy_output
        self.gradient_of = gradient_of

    def forward(self, positions, atomic_numbers, neighbor_list, edge_vectors, cell, pbc, owned_rows):
        count = owned_rows.shape[0]
        torch._check(count <= atomic_numbers.shape[0])
        n_owned = torch.full((), count, dtype=torch.int64, device=atomic_numbers.device)
        differentiate = self.gradient_of != AOTI_NO_GRADIENT
        if differentiate:
            edge_vectors = edge_vectors.detach().requires_grad_(True)
        inputs = dict(zip(CONTRACT_INPUTS, (positions, atomic_numbers, neighbor_list, edge_vectors,
                                            cell, pbc, n_owned)))
        with traced_owned_count(count):
            outputs = self.module(inputs)
        returned = tuple(outputs[name].detach() for name in self.names)
        if not differentiate:
            return returned + (edge_vectors.new_zeros(0, 3),)
        energies = outputs[self.energy_output]
        if self.gradient_of == AOTI_GRADIENT_OF_OWNED_ROWS:  # rows of any width ([N] or [N, 1])
            rows = energies.shape[0]
            owned = (torch.arange(rows, device=energies.device) < count).to(energies.dtype)
            energies = energies.reshape(rows, -1) * owned.unsqueeze(1)
        (gradient,) = torch.autograd.grad([energies.sum()], [edge_vectors], allow_unused=True)
        if gradient is None:
            gradient = torch.zeros_like(edge_vectors)
        return returned + (gradient,)


def compiled_share(spec: Optional[Dict]) -> Tuple[str, str]:
    """(energy output, AOTI_GRADIENT's value) a package of a model of spec `spec` compiles in:
    the energy share of its effective spec (spec.energy_share). A spec in the toolkit's layout,
    which only the pair style translates, gets the default energy's owned rows."""
    try:
        key, owned_rows, differentiate = energy_share(effective_spec(spec))
    except ValueError:
        return DEFAULT_ENERGY_KEY, AOTI_GRADIENT_OF_OWNED_ROWS
    if not differentiate:
        return key, AOTI_NO_GRADIENT
    return key, AOTI_GRADIENT_OF_OWNED_ROWS if owned_rows else AOTI_GRADIENT_OF_ALL_ROWS


def output_names(module: torch.nn.Module, example: Tuple[torch.Tensor, ...]) -> List[str]:
    """The names of the outputs `module` returns on the program's positional `example`, in the
    order it returns them."""
    inputs = dict(zip(CONTRACT_INPUTS, example[:-1] + (torch.tensor(example[-1].shape[0]),)))
    inputs["edge_vectors"] = inputs["edge_vectors"].detach().requires_grad_(True)
    with torch.enable_grad():
        return list(module(inputs))


def example_inputs(species: Sequence[int], cutoff: float, dtype: torch.dtype, rows: int = 12,
                   edges: int = 40, owned: int = 8):
    """A small made-up graph in the AOTInductor program's positional order (only its types and
    ranks matter to tracing; sizes are dynamic in the program)."""
    g = torch.Generator().manual_seed(0)
    zs = torch.tensor(list(species), dtype=torch.int64)
    atomic_numbers = zs[torch.randint(0, len(zs), (rows,), generator=g)]
    neighbor_list = torch.randint(0, rows, (edges, 2), generator=g)
    directions = torch.nn.functional.normalize(torch.randn(edges, 3, generator=g, dtype=torch.float64), dim=1)
    lengths = cutoff * (0.5 + 0.4 * torch.rand(edges, 1, generator=g, dtype=torch.float64))
    return (torch.rand(rows, 3, generator=g, dtype=torch.float64).to(dtype), atomic_numbers,
            neighbor_list, (directions * lengths).to(dtype),
            (3 * cutoff * torch.eye(3, dtype=torch.float64)).view(1, 3, 3).to(dtype),
            torch.ones(1, 3, dtype=torch.bool), atomic_numbers[:owned])


def with_called_operators(spec: Optional[Dict], program) -> Optional[Dict]:
    """`spec` with the operators an exported program calls from operator libraries added to its
    custom_ops, which LAMMPS checks before the first step (a compiled package does not name
    them otherwise). A spec in the toolkit's layout is left as it is."""
    called = sorted({node.target._schema.name for node in program.graph.nodes
                     if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
                     and node.target.namespace not in BUILTIN_OP_NAMESPACES})
    spec = dict(spec if spec is not None else DEFAULT_SPEC)
    if called and "core" not in spec:
        spec["custom_ops"] = sorted(set(spec.get("custom_ops", [])) | set(called))
    return spec


@contextlib.contextmanager
def python_functions(*modules):
    """Within the block, the TorchScript functions (`torch.jit.script` of a Python function)
    that `modules` define are the Python functions they were made from. make_fx runs a
    TorchScript function with the sizes of its example inputs, which would fix the program's
    atom and edge counts; its Python function traces with symbolic sizes. torch.jit.script keeps
    that function for torch.compile (`_torchdynamo_inline`)."""
    swapped = [(module, name, value) for module in modules for name, value in vars(module).items()
               if isinstance(value, torch.jit.ScriptFunction) and hasattr(value, "_torchdynamo_inline")]
    for module, name, value in swapped:
        setattr(module, name, value._torchdynamo_inline)
    try:
        yield
    finally:
        for module, name, value in swapped:
            setattr(module, name, value)


def save_aoti_model(
    module: torch.nn.Module,
    path: str,
    *,
    cutoff: float,
    species: Sequence[int],
    units: str,
    dtype: torch.dtype = torch.float64,
    spec: Optional[Dict] = None,
    device: str = "cpu",
) -> Dict:
    """Compile `module` with AOTInductor into the package `path` (.pt2) with its metadata;
    returns the metadata. Arguments as for `save_model`. The program returns every output of the
    module and the gradient of the energy its spec's force strategy differentiates, compiled in
    (compiled_share): the pair style refuses to run the package with keywords that change them.

    The program is compiled for this machine's CPU (its instruction set is recorded and
    checked when LAMMPS loads it; target_cpu("avx2") first targets older CPUs), or with
    device="cuda" for this machine's kind of GPU, run with `pair_style ... device cuda`. A
    program compiled before is copied from the package cache (nvalchemi_lammps.package_cache).
    """
    from torch.export import Dim
    from torch.fx.experimental.proxy_tensor import make_fx

    start = time.monotonic()
    module = module.to(dtype).to(device).eval()
    example = tuple(t.to(device) for t in example_inputs(species, cutoff, dtype))
    energy_output, gradient_of = compiled_share(spec)
    names = output_names(module, example)
    if energy_output not in names:
        raise ValueError(f"{path}: the model returns no '{energy_output}', the energy its spec's force "
                         f"strategy uses (it returns: {', '.join(names)})")
    wrapper = _ContractProgram(module, names, energy_output, gradient_of)
    # sizes of 0 and 1 (a rank without atoms, without ghosts) reasoned about as any other, not
    # decided by the example's sizes
    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        # autograd.grad cannot be exported directly: trace forward and backward into one graph first
        graph = make_fx(wrapper, tracing_mode="symbolic", _allow_non_fake_inputs=True)(*example)
        # the trace keeps plain tensor attributes (not parameters or buffers) as constants, which
        # export refuses: make them buffers
        for name, value in list(vars(graph).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                delattr(graph, name)
                graph.register_buffer(name, value)
        rows, edges, owned = Dim("rows", min=0), Dim("edges", min=0), Dim("owned", min=0)
        program = torch.export.export(graph, example, strict=False,
                                      dynamic_shapes=({0: rows}, {0: rows}, {0: edges}, {0: edges},
                                                      None, None, {0: owned}))
    metadata = make_metadata(cutoff=cutoff, species=species, units=units, dtype=dtype,
                             spec=with_called_operators(spec, program))
    COMPILE_SECONDS.append({"path": path, "phase": "trace and export", "seconds": time.monotonic() - start})

    def check(unchecked: str) -> None:
        require_program_as_module(unchecked, path, wrapper, example)
        require_ranks_in_step(unchecked, metadata, name=path)

    compile_package(program, path, {METADATA_FILE: json.dumps(metadata, sort_keys=True),
                                     AOTI_ENERGY_OUTPUT: energy_output, AOTI_OWNED_ROWS: AOTI_OWNED_ROWS_AS_SIZE,
                                     AOTI_OUTPUTS: " ".join(names), AOTI_GRADIENT: gradient_of},
                    device, check)
    return metadata


def compile_package(program, path: str, recorded: Dict[str, str], device: str,
                    check: Optional[Callable[[str], None]] = None) -> None:
    """AOTInductor's package of the exported `program` at `path`, recording the metadata entries
    `recorded`; copied from the package cache where the same program was compiled before.
    `check` (the file; raises, having removed it, to refuse it) runs on the package under
    another name in the same folder first: a package that fails it, or crashes the process while
    it runs, leaves no file at `path` and does not enter the cache (a cached package that fails
    it leaves the cache)."""
    key = package_cache.package_key(program, recorded, device)
    folder, name = os.path.split(path)
    # (a folder of its own, so that the package's files are named after it as after `path`)
    unchecked_folder = tempfile.mkdtemp(prefix=".nvalchemi-unchecked-", dir=folder or ".")
    unchecked = os.path.join(unchecked_folder, name)
    try:
        cached = package_cache.reuse(key, unchecked)
        if not cached:
            with compile_progress(path, device), wrapper_beside_kernels():
                torch._inductor.aoti_compile_and_package(program, package_path=unchecked,
                                                         inductor_configs={"aot_inductor.metadata": recorded})
        if check:
            try:
                check(unchecked)
            except ValueError:
                if cached:
                    package_cache.forget(key)
                raise
        if not cached:
            package_cache.keep(key, unchecked)
        os.replace(unchecked, path)
    finally:
        shutil.rmtree(unchecked_folder, ignore_errors=True)


def require_program_as_module(package: str, path: str, module: torch.nn.Module, example: Tuple[torch.Tensor, ...]) -> None:
    """Remove the package `package` (to be written as `path`) and raise ValueError unless its
    program returns what `module` (the module it was compiled from, run eagerly) returns on
    `example`, to rounding: a compiler defect that computes something else stops the export,
    not a LAMMPS run. A line on stderr first says what runs, for a defect that crashes."""
    with torch.enable_grad():
        expected = [value.detach() for value in module(*example)]
    print(f"  checking {os.path.basename(path)}: its compiled program against the model on a small example",
          file=sys.stderr, flush=True)
    try:
        returned = list(torch._inductor.aoti_load_package(package)(*example))
    except Exception as exc:  # noqa: BLE001  (any failure of the program itself)
        os.remove(package)
        raise ValueError(f"{path} not written: its compiled program failed on the example it was traced on: "
                         f"{exc}") from exc
    names = list(getattr(module, "names", [])) + ["the gradient of the energy"]
    problems = [] if len(returned) == len(expected) else [
        f"it returns {len(returned)} tensors, the model {len(expected)}"]
    # an output that should be zero comes out as rounding noise: errors are measured against the
    # output's largest value, but not below a millionth of the largest value of any output
    largest = max([float(w[torch.isfinite(w)].abs().max()) for w in expected
                   if w.is_floating_point() and bool(torch.isfinite(w).any())] + [0.0])
    for k, (want, got) in enumerate(zip(expected, returned)):
        name = names[k] if k < len(names) else f"output {k}"
        if got.shape != want.shape or got.dtype != want.dtype:
            problem = f"{name} is {tuple(got.shape)} {got.dtype}, the model's {tuple(want.shape)} {want.dtype}"
        elif not want.is_floating_point():
            problem = "" if torch.equal(got, want) else f"{name} differs"
        elif not torch.equal(torch.isfinite(want), torch.isfinite(got)) or not torch.equal(
                want[~torch.isfinite(want)].nan_to_num(), got[~torch.isfinite(got)].nan_to_num()):
            problem = f"{name} is not finite where the model's is finite, or the other way round"
        else:
            # rounding of float64 (float32) sums taken in another order: far below these bounds
            tolerance = 1e-9 if want.dtype == torch.float64 else 1e-3
            finite = torch.isfinite(want)
            scale = max(float(want[finite].abs().max()) if bool(finite.any()) else 0.0, 1e-6 * largest, 1e-300)
            error = float((got - want)[finite].abs().max()) if bool(finite.any()) else 0.0
            problem = "" if error <= tolerance * scale else (
                f"{name} differs by {error:.3g} (the model's largest value is {scale:.3g})")
        problems += [problem] if problem else []
    if problems:
        os.remove(package)
        raise ValueError(f"{path} not written: its compiled program does not compute what the model does on the "
                         f"example it was traced on: {'; '.join(problems)}. This is a defect of the compiler "
                         f"(AOTInductor, torch {torch.__version__}); export the model as TorchScript (.pt), "
                         "or write the operation that differs another way")


class _PositionalHook(torch.nn.Module):
    """A fix nvalchemi/dd hook module (Dict[str, Tensor] -> Dict[str, Tensor]) as a package
    runs it: the inputs `inputs` positionally, the outputs `outputs` as a tuple, in order."""

    def __init__(self, hook: torch.nn.Module, inputs: Sequence[str], outputs: Sequence[str]):
        super().__init__()
        self.hook, self.inputs, self.outputs = hook, tuple(inputs), tuple(outputs)

    def forward(self, *values):
        returned = self.hook(dict(zip(self.inputs, values)))
        return tuple(returned[name] for name in self.outputs)


def example_hook_batch(atoms: int = 2, atomic_numbers: bool = False) -> Dict[str, torch.Tensor]:
    """A made-up batch of `atoms` atoms of fix nvalchemi/dd's hook inputs (doc/fix_nvalchemi_dd.rst)."""
    g = torch.Generator().manual_seed(1)
    batch = {"positions": 4.0 * torch.rand(atoms, 3, generator=g, dtype=torch.float64),
             "velocities": torch.rand(atoms, 3, generator=g, dtype=torch.float64),
             "forces": torch.rand(atoms, 3, generator=g, dtype=torch.float64),
             "atom_ids": torch.arange(1, atoms + 1), "atom_types": torch.ones(atoms, dtype=torch.int64),
             "atomic_numbers": torch.full((atoms,), 18, dtype=torch.int64),
             "cell": 4.0 * torch.eye(3, dtype=torch.float64).view(1, 3, 3),
             "pbc": torch.ones(1, 3, dtype=torch.bool)}
    if not atomic_numbers:
        del batch["atomic_numbers"]
    assert set(batch) <= set(HOOK_INPUTS)
    return batch


def save_hook(hook: torch.nn.Module, path: str, *, atomic_numbers: bool = False, device: str = "cpu") -> Dict:
    """Compile a fix nvalchemi/dd hook module into the AOTInductor package `path` (.pt2), for
    `device`; returns what the package records (its inputs and outputs). The module takes and
    returns what a TorchScript hook does (Dict[str, Tensor], float64); atomic_numbers: whether
    it reads the batch's atomic numbers, which the fix gives only under a pair_style nvalchemi
    that names the species. The outputs it returns (of forces, energy, virial) are found by
    calling it on a made-up batch, and the package returns those, in that order."""
    from torch.export import Dim

    hook = hook.to(torch.float64).eval()
    atoms = 2
    batch = {name: value.to(device)
             for name, value in example_hook_batch(atoms, atomic_numbers=atomic_numbers).items()}
    inputs = [name for name in HOOK_INPUTS if name in batch]
    outputs = [name for name in HOOK_OUTPUTS if name in hook(batch)]
    if not outputs:
        raise ValueError(f"the hook returned none of {', '.join(HOOK_OUTPUTS)}")
    # the per-atom inputs (a row per atom; cell and pbc have one) take any atom count, from 0
    rows = Dim("atoms", min=0)
    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        program = torch.export.export(_PositionalHook(hook, inputs, outputs), tuple(batch[name] for name in inputs),
                                      strict=False,
                                      dynamic_shapes={"values": tuple({0: rows} if batch[name].shape[0] == atoms else None
                                                                      for name in inputs)})
    recorded = {AOTI_HOOK_INPUTS: " ".join(inputs), AOTI_HOOK_OUTPUTS: " ".join(outputs)}
    compile_package(program, path, recorded, device)
    return recorded


# one compile at a time patches Inductor's builder (wrapper_beside_kernels)
_BUILDER_PATCH = threading.Lock()


@contextlib.contextmanager
def wrapper_beside_kernels():
    """AOTInductor compiles a package's C++ as two object files, its run function (the wrapper)
    and its kernels, one after the other (torch 2.13's AotCodeCompiler.compile; each takes tens
    of seconds for a MACE-MP-0-sized model): compile the wrapper in a thread while the kernels
    compile, and wait for it as soon as they are done (before the constants and the link). Only
    this thread's compiles, one context at a time; where Inductor's builder is not as this
    expects, or the CPU has one core, it compiles as it would."""
    from torch._inductor import cpp_builder
    builder = getattr(cpp_builder, "CppBuilder", None)
    build = getattr(builder, "build", None)
    if build is None or (os.cpu_count() or 1) < 2:
        yield
        return
    owner = threading.get_ident()
    pending = []

    def target(compile_job) -> str:
        return str(getattr(compile_job, "_target_file", ""))

    def wait_for_wrapper() -> None:
        while pending:
            try:
                pending.pop(0).result()
            except Exception as exc:  # Inductor's own advice where it compiles the wrapper itself
                if " is too big to optimize" in str(exc):
                    raise RuntimeError("Please use torch._inductor.config.aot_inductor.compile_wrapper_opt_level "
                                       "= 'O0' flag.") from exc
                raise

    def overlapped(compile_job):
        if threading.get_ident() != owner:
            return build(compile_job)
        if target(compile_job).endswith(".wrapper.o"):
            pending.append(pool.submit(build, compile_job))
            return None
        if target(compile_job).endswith(".kernel.o"):
            try:
                return build(compile_job)
            finally:
                wait_for_wrapper()
        wait_for_wrapper()
        return build(compile_job)

    with _BUILDER_PATCH, concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        builder.build = overlapped
        try:
            yield
        finally:
            builder.build = build


# what each package written by this process took, by phase ({"path", "phase", "seconds"}): the
# trace of the forward and backward and its export, then AOTInductor's compile (bench/compile_time.py)
COMPILE_SECONDS: List[Dict] = []


@contextlib.contextmanager
def compile_progress(path: str, device: str, every: float = 30.0):
    """Lines on stderr while AOTInductor compiles `path` (minutes on a CPU): when it starts, every
    `every` seconds while it runs, and how long it took (COMPILE_SECONDS)."""
    start = time.monotonic()
    done = threading.Event()

    def report():
        while not done.wait(every):
            print(f"  still compiling {os.path.basename(path)}: {time.monotonic() - start:.0f} s",
                  file=sys.stderr, flush=True)

    print(f"compiling {path} with AOTInductor for {device} (minutes on a CPU)", file=sys.stderr, flush=True)
    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()
    seconds = time.monotonic() - start
    COMPILE_SECONDS.append({"path": path, "phase": "compile", "seconds": seconds})
    print(f"compiled {path} in {seconds:.0f} s", file=sys.stderr, flush=True)


# ---- what the framework exporters (mace_export, nequip_export, sevenn_export) share ------------------------

# --format's choices, the file's format for each
OUTPUT_FORMATS = {"aotinductor": AOTINDUCTOR, "torchscript": TORCHSCRIPT}
# --cpu-isa's choices: the vector instruction set of the package's kernels (ATEN_CPU_CAPABILITY,
# which the package records as AOTI_CPU_ISA and the pair style checks at load) and the -march
# its C++ is compiled with, which must not exceed it (Inductor's default, native, may emit any
# instruction of the exporting CPU, recorded or not)
# (no avx512: Inductor then prefers the AVX512 variants this CPU has, VNNI or AMX, which plain
# AVX-512 CPUs refuse)
CPU_TARGETS = {"avx2": ("avx2", "x86-64-v3"), "default": ("default", "x86-64")}


def add_output_arguments(parser: argparse.ArgumentParser, compiled: str = "") -> None:
    """The exporters' -o and --format; `compiled`: what a package is compiled for, for the help."""
    parser.add_argument("-o", "--output", required=True,
                        help=f"the file to write: an AOTInductor package (NAME{AOTI_PACKAGE_SUFFIX}, or NAME: "
                             f"{AOTI_PACKAGE_SUFFIX} is added{compiled}), or TorchScript (NAME{TORCHSCRIPT_SUFFIX}, "
                             "deprecated by PyTorch)")
    parser.add_argument("--format", choices=tuple(OUTPUT_FORMATS), default=None,
                        help="the file's format (default: told by the name, aotinductor for a name "
                             f"ending in neither {AOTI_PACKAGE_SUFFIX} nor {TORCHSCRIPT_SUFFIX})")
    parser.add_argument("--cpu-isa", choices=("native",) + tuple(CPU_TARGETS), default="native",
                        help="the CPUs a package's code runs on: native (this CPU and its like), or on x86-64 "
                             "avx2 (every x86-64 CPU since about 2015) or default (any x86-64 CPU, slowest)")


def target_cpu(isa: str) -> None:
    """Compile the packages this process writes for the CPUs of `isa` (a --cpu-isa choice): the
    vector instruction set of their kernels and the -march of their C++ (native: this CPU's)."""
    if isa == "native":
        return
    if platform.machine() not in ("x86_64", "AMD64"):
        raise ValueError(f"--cpu-isa {isa} targets x86-64 CPUs and this is {platform.machine()}: leave it native")
    capability, march = CPU_TARGETS[isa]
    os.environ["ATEN_CPU_CAPABILITY"] = capability  # read by Inductor at each compile
    torch._inductor.config.cpp.march = march


def output_path(tool: str, output: str, output_format_name: Optional[str] = None, cpu_isa: str = "native") -> str:
    """The file an exporter's command line writes for -o `output` and --format: a name ending in
    .pt2 or .pt keeps it (a --format against it stops the tool), any other gets the format's
    suffix, an AOTInductor package's by default. For TorchScript, a note on stderr that PyTorch
    deprecates it; for a package, the CPUs it is compiled for (target_cpu)."""
    wanted = OUTPUT_FORMATS.get(output_format_name) if output_format_name else None
    suffixes = {AOTINDUCTOR: AOTI_PACKAGE_SUFFIX, TORCHSCRIPT: TORCHSCRIPT_SUFFIX}
    try:
        named = output_format(output)
    except ValueError:
        named = None
        output += suffixes[wanted or AOTINDUCTOR]
    if named and wanted and named != wanted:
        raise SystemExit(f"{tool}: {output} ends in {suffixes[named]} ({named}) but --format is "
                         f"{output_format_name}: name it NAME{suffixes[wanted]}")
    if output_format(output) == AOTINDUCTOR:
        try:
            target_cpu(cpu_isa)
        except ValueError as exc:
            raise SystemExit(f"{tool}: {exc}") from exc
    elif cpu_isa != "native":
        raise SystemExit(f"{tool}: --cpu-isa is for an AOTInductor package; {output} is TorchScript, "
                         "which LibTorch runs on any CPU")
    else:
        print(f"{tool}: note: {output} is TorchScript, which PyTorch {torch.__version__.split('+')[0]} "
              f"deprecates; pair_style nvalchemi reads it, but an AOTInductor package "
              f"({AOTI_PACKAGE_SUFFIX}, the default) is the format PyTorch keeps and the faster one",
              file=sys.stderr)
    return output


def missing_framework(tool: str, what: str, extra: str, exc: ImportError) -> SystemExit:
    """The exit of a framework exporter run by a python without its framework (`what`: "mace-torch
    is not installed"): how to install it, and, from the repository's build/venv (the package's
    tools without the frameworks), the framework's own venv that `make test` made."""
    message = (f"{tool}: {what} ({exc}); from the USER-NVALCHEMI repository, pip install "
               f"'./python[{extra}]' (the releases it supports)")
    own = os.path.join(os.path.dirname(sys.prefix), f"venv-{extra}", "bin", f"nvalchemi-{extra}-export")
    if os.path.basename(sys.prefix) == "venv" and os.path.exists(own):
        message += f", or run {own}: build/venv has the package's tools without the frameworks"
    return SystemExit(message)


def require_release(tool: str, package: str, version: str, supported, why: str) -> None:
    """Stop (SystemExit) unless `version` of `package` lies in `supported` = (lowest, highest)
    release tuples: an exporter that relies on a framework's private code says so (`why`)."""
    release = tuple(int(part) for part in version.split("+")[0].split(".")[:3])
    low, high = supported
    if not low <= release <= high:
        raise SystemExit(f"{tool}: {package} {version} is outside the supported range "
                         f"{'.'.join(map(str, low))} to {'.'.join(map(str, high))}: {why}")


_OVERRIDDEN: Dict = {}


def override_method(module: torch.nn.Module, function) -> None:
    """Switch `module` to a subclass of its class whose method `function.__name__` is
    `function` (one subclass per class and function). TorchScript compiles the method from
    `function`'s source, so it must be defined in a module or class body under that name."""
    cls = type(module)
    key = (cls, function)
    if key not in _OVERRIDDEN:
        _OVERRIDDEN[key] = type(cls.__name__ + "Exchanging", (cls,),
                                {function.__name__: function, "__module__": function.__module__})
    module.__class__ = _OVERRIDDEN[key]


def frozen_copy(module: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A deep copy of a framework's `module` cast to `dtype`, in eval mode, its parameters without
    gradients: what an exporter wraps and scripts, leaving the user's model as it is (and, for
    e3nn modules, casting a copy keeps their constants consistent, unlike casting in place)."""
    return frozen(copy.deepcopy(module).to(dtype))


def frozen(module: torch.nn.Module) -> torch.nn.Module:
    """`module` in eval mode, its parameters without gradients (the one an export traces)."""
    module.eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def centre_first_edges(neighbor_list: torch.Tensor,
                       edge_vectors: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The contract's edges (neighbor_list rows (sender, receiver), vectors receiver - sender)
    the way nequip and SevenNet take them: edge_index (2, edges) with row 0 the centre (the
    receiver) and row 1 the neighbour, and vectors from the centre to the neighbour."""
    return torch.stack([neighbor_list[:, 1], neighbor_list[:, 0]]), -edge_vectors


def species_index(species: Sequence[int]) -> torch.Tensor:
    """A table from atomic number (0..118) to the position of that element in `species`, -1
    for the others: a framework's type index from the contract's atomic_numbers."""
    index = torch.full((119,), -1, dtype=torch.int64)
    for i, z in enumerate(species):
        index[int(z)] = i
    return index


# the chemical elements by atomic number (index 0: none), so that the tools need nothing beyond torch
ELEMENTS = ("", *"""H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As
    Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er
    Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr
    Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og""".split())


def atomic_number(symbol: str) -> Optional[int]:
    """The atomic number of an element symbol ("O": 8), None for anything else."""
    return ELEMENTS.index(symbol) if symbol in ELEMENTS[1:] else None


def _element_numbers(names: List[str]) -> List[int]:
    """Atomic numbers from symbols or numbers ("H", "O" or "1", "8")."""
    numbers = []
    for name in names:
        if name.isdigit() and 1 <= int(name) < len(ELEMENTS):
            numbers.append(int(name))
        elif atomic_number(name) is not None:
            numbers.append(atomic_number(name))
        else:
            raise SystemExit(f"nvalchemi-export: '{name}' is not a chemical element symbol or atomic number")
    return numbers


def _factory(reference: str):
    """`path/to/file.py:name` or `module:name`: the callable `name` there."""
    where, _, name = reference.rpartition(":")
    if not where or not name:
        raise SystemExit(f"nvalchemi-export: give the model as FILE.py:NAME or MODULE:NAME, not '{reference}'")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(where))[0], where)
        if spec is None or not os.path.exists(where):
            raise SystemExit(f"nvalchemi-export: cannot read {where}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    if not hasattr(module, name):
        raise SystemExit(f"nvalchemi-export: {where} has no '{name}'")
    return getattr(module, name)


def main(argv=None):
    """nvalchemi-export: a torch.nn.Module written to the contract, saved with its metadata."""
    parser = argparse.ArgumentParser(
        prog="nvalchemi-export",
        description="Write a model that follows the USER-NVALCHEMI contract (a torch.nn.Module taking "
                    "Dict[str, Tensor]) to a file pair_style nvalchemi loads: an AOTInductor package "
                    "(.pt2, the default) or TorchScript (.pt). MODEL is FILE.py:NAME or MODULE:NAME, NAME a class or "
                    "function that returns the module, called with --kwargs.")
    parser.add_argument("model", help="FILE.py:NAME or MODULE:NAME")
    add_output_arguments(parser)
    parser.add_argument("--cutoff", type=float, required=True, help="the model's cutoff, in its length unit")
    parser.add_argument("--species", nargs="+", required=True, help="element symbols or atomic numbers")
    parser.add_argument("--units", required=True, help="LAMMPS unit style of the model (metal, real, ...)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for NAME")
    parser.add_argument("--spec", default=None,
                        help='the model\'s spec: JSON text or a .json file (default {"preset": "SPEC_LJ_HALO"})')
    args = parser.parse_args(argv)
    output = output_path(parser.prog, args.output, args.format, args.cpu_isa)
    spec = None
    if args.spec:
        spec = json.load(open(args.spec)) if args.spec.endswith(".json") else json.loads(args.spec)
    species = _element_numbers(args.species)  # before the model is built: the cheap mistakes first
    module = _factory(args.model)(**json.loads(args.kwargs))
    metadata = save_model(module, output, cutoff=args.cutoff, species=species,
                          units=args.units, dtype=torch.float64 if args.dtype == "float64" else torch.float32,
                          spec=spec)
    print(f"nvalchemi-export: wrote {output} ({output_format(output)}): "
          f"{json.dumps(metadata, sort_keys=True)}")


if __name__ == "__main__":
    main()
