"""Export a trained MACE model (mace-torch) to a model that pair_style nvalchemi runs.

    nvalchemi-mace-export in.model -o out.pt|out.pt2 [--dtype float64|float32] [--head NAME]
                          [--halo layerwise|deep] [--device cpu|cuda]

The exported file is TorchScript (.pt) or an AOTInductor package (.pt2) with the package's
metadata (doc/Howto_nvalchemi_contract.rst): cutoff = the model's r_max, species = its atomic
numbers, units metal, and a SPEC_MPNN_HALO spec with the number of interactions as layers. It
returns MACE's node energies (E0 included) as `atomic_energies`; pair_style nvalchemi takes
forces and virial from their gradient (inside the compiled program for a .pt2).

How MACE is fitted to the contract:
  * geometry only from edge_vectors: MACE builds each vector as positions[receiver] -
    positions[sender] + shift, so the wrapper passes zero positions and shifts = edge_vectors;
    MACE's edge_index row 0 is the sender, as in the contract's neighbor_list;
  * halo layerwise: the model runs in MACE's own LAMMPS mode (its hook for LAMMPS' ML-IAP
    interface), kept on when scripted (mace_owned_rows): the blocks update owned rows only
    (nvalchemi_lammps.owned_rows) and every block but the first calls its handle_lammps(
    node_feats, ...) before the convolution, which the exported blocks override to extend the
    owned rows' features to the ghost rows with torch.ops.nvalchemi.refresh_neighbors. Both are
    private to mace-torch, so the versions this is known to be right for are pinned below;
  * halo deep: the blocks are left as they are and the ghost shell holds every layer's
    receptive field (cutoff x interactions);
  * every rank runs MACE on its rows plus one padding row without edges (MACE fails on zero
    rows), so a rank that owns no atoms and has no ghosts makes the same exchange calls, with
    empty rows, as every other rank (pair_style nvalchemi stops a run whose ranks' calls differ).

A package is compiled from the model rebuilt the way MACE prepares one for torch.compile (e3nn's
generated code as Python, not TorchScript) and with e3nn's TorchScript spherical harmonics run as
Python while it is traced, so that atom and edge counts stay sizes the program reads on every
call; the exchange ops are calls inside it. In halo mode layerwise a package updates owned rows
only, as the TorchScript export does: the owned count is a size of the program as well
(owned_rows.owned_count, export.save_aoti_model).

mace-torch is needed only here, never by a LAMMPS run. Import order matters with torch >= 2.6:
mace before e3nn.
"""

import argparse
import inspect
from typing import Any, Dict, Optional, Tuple

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import (add_output_arguments, frozen, frozen_copy, missing_framework, output_path,
                                     override_method, python_functions, require_release, save_aoti_model,
                                     save_scripted_model, species_index)
from nvalchemi_lammps.model_file import AOTINDUCTOR, output_format
from nvalchemi_lammps.spec import EXPORTER_HALO_MODES, exporter_spec
from nvalchemi_lammps.owned_rows import at_least_one, owned_count, per_row, with_ghost_rows

# mace-torch releases whose InteractionBlock.handle_lammps has the signature and meaning the
# layerwise override relies on (checked at export time as well)
SUPPORTED_MACE = ((0, 3, 14), (0, 3, 16))
HANDLE_LAMMPS_PARAMETERS = ["self", "node_feats", "lammps_class", "lammps_natoms", "first_layer"]


def _import_mace():
    try:
        import mace  # noqa: F401  (before e3nn)
        from mace.modules.blocks import InteractionBlock
        from e3nn import o3
        from e3nn.util import jit
    except ImportError as exc:
        raise missing_framework("mace_export", "mace-torch is not installed", "mace", exc) from exc
    require_release("mace_export", "mace-torch", mace.__version__, SUPPORTED_MACE,
                    "the layerwise export overrides a private method of its interaction blocks; "
                    "install a supported mace-torch or export with --halo deep after checking "
                    "the result with nvalchemi-check")
    parameters = list(inspect.signature(InteractionBlock.handle_lammps).parameters)
    if parameters != HANDLE_LAMMPS_PARAMETERS:
        raise SystemExit(f"mace_export: mace-torch {mace.__version__}'s InteractionBlock."
                         f"handle_lammps{tuple(parameters)} is not the hook this exporter knows")
    return InteractionBlock, jit, o3


class _RefreshBeforeConvolution:
    """handle_lammps for halo mode layerwise: before every convolution but the first (whose
    features are species embeddings, computed on every row), the owned rows' features are
    extended to the ghost rows, which take their owners' values. lammps_natoms: (owned rows,
    other rows), the last of which is the wrapper's padding row (MaceContractModel), no atom's:
    it is not exchanged."""

    def handle_lammps(self, node_feats: torch.Tensor, lammps_class: Optional[Any],
                      lammps_natoms: Tuple[int, int], first_layer: bool) -> torch.Tensor:
        if first_layer:
            return node_feats
        atoms = lammps_natoms[0] + lammps_natoms[1] - 1
        return per_row(with_ghost_rows(node_feats[:min(lammps_natoms[0], atoms)], atoms), atoms + 1)


def _update_owned_rows(model: torch.nn.Module, interaction_base: type) -> int:
    """Switch `model` to MACE's LAMMPS mode on owned rows and every interaction block to a
    subclass whose handle_lammps refreshes ghost rows; returns the number of blocks switched."""
    from nvalchemi_lammps.mace_owned_rows import SUPPORTED_MODELS, owned_rows_forward
    if not isinstance(model, SUPPORTED_MODELS):
        raise SystemExit(f"mace_export: {type(model).__name__} is not a MACE energy model "
                         f"({', '.join(c.__name__ for c in SUPPORTED_MODELS)} or a subclass); "
                         "export with --halo deep")
    override_method(model, owned_rows_forward(type(model)))
    blocks = [block for block in model.modules() if isinstance(block, interaction_base)]
    for block in blocks:
        override_method(block, _RefreshBeforeConvolution.handle_lammps)
    return len(blocks)


class MaceContractModel(torch.nn.Module):
    """A MACE model behind the contract's inputs and outputs."""

    def __init__(self, model: torch.nn.Module, head: int, owned_rows: bool):
        super().__init__()
        self.model = model
        self.register_buffer("species_index", species_index(model.atomic_numbers))
        self.num_elements = len(model.atomic_numbers)
        self.register_buffer("head", torch.tensor([head], dtype=torch.int64))
        self.owned_rows = owned_rows

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        atomic_numbers = inputs["atomic_numbers"]
        n = atomic_numbers.shape[0]
        # one padding row after the atoms' rows, without edges: MACE cannot run on zero rows, and
        # a rank without atoms must still make every exchange call the other ranks make
        rows = n + 1
        index = torch.cat([self.species_index[atomic_numbers],
                           torch.zeros(1, dtype=torch.int64, device=edge_vectors.device)])
        node_attrs = torch.nn.functional.one_hot(index, self.num_elements).to(edge_vectors.dtype)
        num_edges = edge_vectors.shape[0]
        # rows the layers update (mace_owned_rows): the owned ones, or every row (halo deep); at
        # least one, as MACE cannot run on zero rows: a rank without atoms updates a ghost's row
        # or the padding row, which the refresh overwrites (refresh_neighbors ignores ghost rows)
        owned = owned_count(inputs["n_owned"], n) if self.owned_rows else rows
        updated = at_least_one(owned)
        data: Dict[str, torch.Tensor] = {
            "positions": torch.zeros((rows, 3), dtype=edge_vectors.dtype, device=edge_vectors.device),
            "node_attrs": node_attrs,
            "edge_index": inputs["neighbor_list"].t(),
            "shifts": edge_vectors,
            "unit_shifts": torch.zeros((num_edges, 3), dtype=edge_vectors.dtype, device=edge_vectors.device),
            "cell": inputs["cell"],
            "batch": torch.zeros(updated, dtype=torch.int64, device=edge_vectors.device),
            "ptr": torch.arange(2, device=edge_vectors.device) * rows,
            "head": self.head,
            "vectors": edge_vectors,
            "natoms": torch.stack([torch.full((), updated, dtype=torch.int64, device=edge_vectors.device),
                                   torch.full((), rows - updated, dtype=torch.int64, device=edge_vectors.device)]),
        }
        out = self.model(data, training=False, compute_force=False, compute_virials=False,
                         compute_stress=False, compute_displacement=False)
        energies = out["node_energy"]
        assert energies is not None
        return {"atomic_energies": per_row(energies[:owned], rows)[:n].to(edge_vectors.dtype)}


def load_mace(path: str) -> torch.nn.Module:
    """A mace-torch model file (torch.save of the model, what MACE's training writes)."""
    _import_mace()
    model = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "atomic_numbers"):
        raise SystemExit(f"mace_export: {path} does not hold a MACE model")
    return model


def export(model: torch.nn.Module, output: str, *, dtype: torch.dtype = torch.float64,
           head: Optional[str] = None, halo: str = "layerwise", device: str = "cpu") -> Dict:
    """Write `model` (a MACE torch.nn.Module, left as it is) to `output`: TorchScript (.pt) or an
    AOTInductor package (.pt2) compiled for `device` ("cpu" or "cuda"); returns the metadata
    written."""
    interaction_base, jit, o3 = _import_mace()
    heads = list(getattr(model, "heads", None) or ["Default"])
    if head is None:
        head = heads[-1]
    if head not in heads:
        raise SystemExit(f"mace_export: the model has no head '{head}' (its heads: {', '.join(heads)})")
    if halo not in EXPORTER_HALO_MODES:
        raise SystemExit(f"mace_export: halo must be {' or '.join(EXPORTER_HALO_MODES)}, not '{halo}'")
    compiled = output_format(output) == AOTINDUCTOR
    model = _traceable_copy(model, dtype) if compiled else frozen_copy(model, dtype)
    layers = int(model.num_interactions)
    if halo == "layerwise" and _update_owned_rows(model, interaction_base) != layers:
        raise SystemExit("mace_export: the model's interaction blocks are not the ones its "
                         "num_interactions counts; export with --halo deep")
    wrapper = MaceContractModel(model, heads.index(head), halo == "layerwise")
    # the widest row refresh_neighbors moves: the features a convolution reads
    spec = exporter_spec(halo, layers, max(o3.Irreps(block.edge_irreps).dim for block in model.interactions))
    metadata_args = dict(cutoff=float(model.r_max), species=[int(z) for z in model.atomic_numbers],
                         units="metal", dtype=dtype, spec=spec)
    if compiled:
        from e3nn.o3 import _spherical_harmonics
        with python_functions(_spherical_harmonics):
            return save_aoti_model(wrapper, output, device=device, **metadata_args)
    # e3nn's modules must be compiled its way before the wrapper is scripted
    return save_scripted_model(torch.jit.script(jit.compile(wrapper)), output, **metadata_args)


def _traceable_copy(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A copy of `model` that AOTInductor can trace, its parameters in `dtype`, frozen: rebuilt
    the way MACE prepares a model for torch.compile (mace.tools.compile.prepare of
    extract_model: the same model with e3nn's generated code left as Python, not TorchScript,
    whose fixed sizes a trace could not vary). Built with `dtype` as the default, so that the
    parameters are copied, not rounded through float32."""
    from mace.tools.compile import prepare
    from mace.tools.scripts_utils import extract_model
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return frozen(prepare(extract_model)(frozen_copy(model, dtype)))
    finally:
        torch.set_default_dtype(default)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvalchemi-mace-export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a mace-torch model file (.model)")
    add_output_arguments(parser, ", compiled for --device")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--head", default=None, help="the head to export (default: the last)")
    parser.add_argument("--halo", choices=EXPORTER_HALO_MODES, default="layerwise")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="what a .pt2 package is compiled for (pair_style ... device must match)")
    args = parser.parse_args(argv)
    output = output_path(parser.prog, args.output, args.format, args.cpu_isa)
    metadata = export(load_mace(args.model), output,
                      dtype=torch.float64 if args.dtype == "float64" else torch.float32,
                      head=args.head, halo=args.halo, device=args.device)
    print(f"mace_export: wrote {output}: cutoff {metadata['cutoff']}, species "
          f"{metadata['species']}, {metadata['dtype']}, {metadata['spec']}")


if __name__ == "__main__":
    main()
