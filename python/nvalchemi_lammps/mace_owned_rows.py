"""MACE's own forward, run on owned rows (nvalchemi_lammps.owned_rows) when scripted.

mace-torch has a LAMMPS mode (for LAMMPS' ML-IAP interface) in which every interaction block
truncates its messages, skip connection and node attributes to the local atoms, the product
basis and readouts run on those rows only, and each block but the first extends its features to
the ghost rows through `handle_lammps` before the convolution. That is the owned-row update of
halo mode layerwise. MACE switches the mode off when scripted (its graph preparation,
`prepare_graph`, forces lammps_mliap False under TorchScript); `owned_rows_forward` is the
model's own forward with a graph preparation that keeps the mode, so the exported blocks and
MACE's code stay MACE's. Imported only by mace_export, after mace (before e3nn).
"""

import types
from typing import Dict

import torch
from mace.modules import models as mace_models
from mace.modules.utils import GraphContext, InteractionKwargs


def prepare_owned_rows_graph(data: Dict[str, torch.Tensor], compute_virials: bool = False,
                             compute_stress: bool = False, compute_displacement: bool = False,
                             lammps_mliap: bool = False) -> GraphContext:
    """MACE's graph context in its LAMMPS mode, from MaceContractModel's data: `batch` one
    entry per owned row, `node_attrs` one per row, `vectors` the edge vectors; lammps_class
    (which the blocks only test against None) is the `natoms` tensor (owned rows, other rows).
    The counts are read from shapes, not from `natoms`' values, so that a trace for AOTInductor
    keeps them symbolic."""
    vectors = data["vectors"]
    natoms = data["natoms"]
    n_owned = data["batch"].shape[0]
    n_other = data["node_attrs"].shape[0] - n_owned
    return GraphContext(
        is_lammps=True,
        num_graphs=1,
        num_atoms_arange=torch.arange(n_owned, device=vectors.device),
        displacement=None,
        positions=torch.zeros((n_owned, 3), dtype=vectors.dtype, device=vectors.device),
        vectors=vectors,
        lengths=torch.linalg.vector_norm(vectors, dim=1, keepdim=True),
        cell=data["cell"],
        node_heads=data["head"][data["batch"]],
        interaction_kwargs=InteractionKwargs(natoms, (n_owned, n_other)),
    )


def owned_rows_forward(model_class: type):
    """`model_class.forward` (MACE's, unchanged) resolving prepare_graph to
    prepare_owned_rows_graph: a function for export.override_method."""
    forward = model_class.forward
    scope = dict(forward.__globals__, prepare_graph=prepare_owned_rows_graph)
    function = types.FunctionType(forward.__code__, scope, forward.__name__, forward.__defaults__,
                                  forward.__closure__)
    function.__kwdefaults__ = forward.__kwdefaults__
    function.__module__ = forward.__module__
    function.__qualname__ = forward.__qualname__
    return function


SUPPORTED_MODELS = (mace_models.MACE,)  # MACE and its subclasses (ScaleShiftMACE)
