"""A model file as pair_style nvalchemi reads it: its format told by its contents, as the C++
core's load_model tells it (a .pt2 name does not make an AOTInductor package), its metadata,
and the model as (atomic energies, d(owned energy)/d(edge_vectors)) of the contract's inputs.
The one reader of model files for nvalchemi-check, the exporters and the tests."""

import copy
import json
from typing import Dict, Tuple

import torch

from nvalchemi_lammps.contract import (AOTI_ENERGY_OUTPUT, AOTI_GRADIENT, AOTI_NO_GRADIENT, AOTI_OUTPUTS,
                                      AOTI_OWNED_ROWS, AOTI_OWNED_ROWS_AS_SIZE,
                                      AOTI_PACKAGE_MARKER, AOTI_PACKAGE_SIGNATURE, AOTI_PACKAGE_SUFFIX,
                                      AOTINDUCTOR, CONTRACT_INPUTS, METADATA_FILE, TORCHSCRIPT,
                                      TORCHSCRIPT_SUFFIX)
from nvalchemi_lammps.spec import TABLES as SPEC_TABLES

# the energy output of a model whose spec does not name one
DEFAULT_ENERGY_KEY: str = SPEC_TABLES["defaults"]["node_energy_key"]


def file_format(path: str) -> str:
    """AOTINDUCTOR for a zip archive with entries under <name>/data/aotinductor/ (what an
    AOTInductor package holds and a TorchScript archive does not), else TORCHSCRIPT."""
    with open(path, "rb") as model:
        data = model.read()
    signed = data.startswith(AOTI_PACKAGE_SIGNATURE.encode())
    return AOTINDUCTOR if signed and AOTI_PACKAGE_MARKER.encode() in data else TORCHSCRIPT


def output_format(path: str) -> str:
    """The format a writer makes of the file `path`: an AOTInductor package for a name ending in
    .pt2, TorchScript for .pt (the exporters' command lines add the suffix: export.output_path)."""
    for suffix, written in (AOTI_PACKAGE_SUFFIX, AOTINDUCTOR), (TORCHSCRIPT_SUFFIX, TORCHSCRIPT):
        if path.endswith(suffix):
            return written
    raise ValueError(f"{path}: name the file {AOTI_PACKAGE_SUFFIX} (an AOTInductor package) or "
                     f"{TORCHSCRIPT_SUFFIX} (TorchScript)")


class LoadedModel:
    """A model file as (atomic energies, d(energy)/d(edge_vectors)) of contract inputs: the owned
    rows' energy for a TorchScript file, the energy its spec differentiates for a package (its
    compiled gradient; zeros where it has none)."""

    def __init__(self, path: str):
        self.path = path
        self.format = file_format(path)
        if self.format == AOTINDUCTOR:
            self.program = torch._inductor.aoti_load_package(path)
            meta = self.program.get_metadata()
            self.metadata_text = meta.get(METADATA_FILE, "")
            self.energy_key = meta.get(AOTI_ENERGY_OUTPUT, DEFAULT_ENERGY_KEY)
            self.owned_rows_as_size = meta.get(AOTI_OWNED_ROWS) == AOTI_OWNED_ROWS_AS_SIZE
            # what the program returns before the gradient (packages written before: the energies),
            # and whether that gradient is none (a model that returns its own forces)
            self.output_names = meta.get(AOTI_OUTPUTS, self.energy_key).split()
            self.no_gradient = meta.get(AOTI_GRADIENT) == AOTI_NO_GRADIENT
            if DEFAULT_ENERGY_KEY in self.output_names:  # per-row energies, as for TorchScript
                self.energy_key = DEFAULT_ENERGY_KEY
        else:
            extra = {METADATA_FILE: ""}
            self.module = torch.jit.load(path, _extra_files=extra)
            self.metadata_text = extra[METADATA_FILE]
            self.energy_key = DEFAULT_ENERGY_KEY

    def metadata(self) -> Dict:
        return json.loads(self.metadata_text)

    def in_float64(self) -> "LoadedModel":
        """A float64 copy of a TorchScript model (an AOTInductor program keeps its dtype)."""
        if self.format == AOTINDUCTOR:
            raise ValueError("an AOTInductor program computes in the dtype it was compiled for")
        twin = copy.copy(self)
        twin.module = copy.deepcopy(self.module).to(torch.float64)
        return twin

    def __call__(self, inputs: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.format == AOTINDUCTOR:
            positional = [inputs[name] for name in CONTRACT_INPUTS]
            if self.owned_rows_as_size:  # as the pair style passes it
                positional[-1] = inputs["atomic_numbers"][: int(inputs["n_owned"])]
            *values, gradient = self.program(*positional)
            energies = values[self.output_names.index(self.energy_key)]
            if self.no_gradient:
                gradient = torch.zeros_like(positional[3])
            return energies, gradient
        edge_vectors = inputs["edge_vectors"].detach().requires_grad_(True)
        outputs = self.module(dict(inputs, edge_vectors=edge_vectors))
        if self.energy_key not in outputs:
            raise ValueError(f"the model returned no '{self.energy_key}' (it returned: {', '.join(outputs)})")
        energies = outputs[self.energy_key]
        total = energies[: int(inputs["n_owned"])].sum()
        gradient = None
        if total.requires_grad:  # as the pair style does: energies independent of the edges
            (gradient,) = torch.autograd.grad([total], [edge_vectors], allow_unused=True)
        return energies.detach(), torch.zeros_like(edge_vectors) if gradient is None else gradient


def read_metadata(path: str) -> Dict:
    """The metadata stored in a saved model (TorchScript or AOTInductor)."""
    return LoadedModel(path).metadata()
