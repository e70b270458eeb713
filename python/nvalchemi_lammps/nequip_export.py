"""Export a NequIP or Allegro model (the nequip framework, PyPI nequip and nequip-allegro) to a
model that pair_style nvalchemi runs.

    nvalchemi-nequip-export in.ckpt|in.nequip.zip -o out.pt|out.pt2 --units metal
                            [--halo layerwise|deep] [--dtype float64|float32] [--species H O ...]
                            [--device cpu|cuda]

The output is TorchScript (.pt) or AOTInductor (.pt2), with the package's metadata
(doc/Howto_nvalchemi_contract.rst): cutoff = the model's r_max, species = its type names as
elements (or --species, in type order), units = the LAMMPS unit style of the model's training
data. The nequip framework is unit-agnostic: a model is in whatever units its data were, and its
checkpoint does not record them, so --units is required (metal for eV and Angstrom, real for
kcal/mol and Angstrom, ...); a model whose metadata has a "units" entry is exported in those,
and --units must then agree. The model returns nequip's per-atom
energies as `atomic_energies`; pair_style nvalchemi takes forces and virial from their gradient.

How the nequip framework is fitted to the contract:
  * nequip's edge_index[0] is the centre atom and its edge vectors point from the centre to the
    neighbour, the reverse of the contract (row 0 the sender, vector receiver - sender): the
    wrapper swaps the rows and negates the vectors, and hands nequip the ready-made vectors
    (geometry only from edge_vectors);
  * NequIP (message passing) in halo mode layerwise: the model runs in the framework's mode for
    LAMMPS' ML-IAP interface, in which the interaction blocks update the local rows only
    (nvalchemi_lammps.owned_rows) and every block but the first calls its ghost-exchange module
    before the convolution; the exported blocks read the owned row count from the data (under
    the key that switches the mode on, which LAMMPS' ML-IAP uses for its data object) and use a
    ghost-exchange module that extends the owned rows' features to the ghost rows with
    torch.ops.nvalchemi.refresh_neighbors. An AOTInductor export does the same, the owned
    count a size of the compiled program (export.save_aoti_model). In halo mode deep the no-op
    module stays and the ghost shell holds every layer's receptive field;
  * Allegro is strictly local (one cutoff, no exchange between atoms): halo mode local;
  * a rank with no atoms runs the model on zero rows, making the same exchange calls as every
    other rank (pair_style nvalchemi stops a run whose ranks' calls differ).

nequip is needed only here, never by a LAMMPS run. It pins e3nn 0.6, which mace-torch does not
accept: keep the two exporters in separate environments.
"""

import argparse
from typing import Dict, List, Optional

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import (
    add_output_arguments, atomic_number, centre_first_edges, frozen_copy, missing_framework, output_path,
    override_method, require_release, save_aoti_model, save_scripted_model, species_index)
from nvalchemi_lammps.model_file import AOTINDUCTOR, output_format
from nvalchemi_lammps.spec import EXPORTER_HALO_MODES, exporter_spec
from nvalchemi_lammps.owned_rows import owned_count, per_row, with_ghost_rows


# nequip releases whose ghost-exchange module (private to nequip) has the place and meaning the
# layerwise export relies on; keep equal to the nequip extra in pyproject.toml
SUPPORTED_NEQUIP = ((0, 17, 0), (0, 19, 99))


def _import_nequip():
    try:
        import nequip
        from nequip.nn._ghost_exchange_base import NoOpGhostExchangeModule  # noqa: F401  (the hook)
        from nequip.nn.interaction_block import InteractionBlock
    except ImportError as exc:
        raise missing_framework("nequip_export", "the nequip framework is not installed, or is a release "
                                "without the ghost-exchange hook", "nequip", exc) from exc
    require_release("nequip_export", "nequip", nequip.__version__, SUPPORTED_NEQUIP,
                    "the layerwise export replaces a private module of its interaction blocks; "
                    "install a supported nequip")
    return InteractionBlock


class _RefreshGhostRows:
    """forward of nequip's ghost-exchange module for halo mode layerwise: the node features of
    the rows the block updated (the owned rows) extended to every row, ghost rows taking their
    owners' values (with ghost_included, the ghost rows given are overwritten as well)."""

    def forward(self, data: Dict[str, torch.Tensor], ghost_included: bool) -> Dict[str, torch.Tensor]:
        data[self.field] = with_ghost_rows(data[self.field], data["atom_types"].shape[0])
        return data


class _OwnedRowCount:
    """_get_mliap_num_local of nequip's interaction blocks: the rows a block updates, the
    owned ones (nequip's own reads them from LAMMPS' ML-IAP data object, and is not scripted).
    NequipContractModel puts n_owned under nequip's switch for that mode,
    AtomicDataDict.LMP_MLIAP_DATA_KEY; scripted code spells the key out (TorchScript reads no
    module-level strings)."""

    def _get_mliap_num_local(self, data: Dict[str, torch.Tensor]) -> int:
        return owned_count(data["lmp_mliap_data"], data["atom_types"].shape[0])


class NequipContractModel(torch.nn.Module):
    """A nequip-framework energy model behind the contract's inputs and outputs."""

    def __init__(self, energy_model: torch.nn.Module, species: List[int], owned_rows: bool):
        super().__init__()
        self.energy_model = energy_model
        self.register_buffer("type_index", species_index(species))
        self.owned_rows = owned_rows

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        neighbor_list = inputs["neighbor_list"]
        # nequip runs on zero rows: a rank without atoms makes the same exchange calls as the others
        n = inputs["atomic_numbers"].shape[0]
        edge_index, centre_to_neighbour = centre_first_edges(neighbor_list, edge_vectors)
        data: Dict[str, torch.Tensor] = {
            "pos": torch.zeros((n, 3), dtype=edge_vectors.dtype, device=edge_vectors.device),
            "edge_index": edge_index,
            "edge_vectors": centre_to_neighbour,
            "atom_types": self.type_index[inputs["atomic_numbers"]],
        }
        # rows the layers update: the owned ones (nequip's ML-IAP mode, on whatever their count:
        # with every row owned it updates every row), or every row
        owned = owned_count(inputs["n_owned"], n) if self.owned_rows else n
        if self.owned_rows:
            data["lmp_mliap_data"] = inputs["n_owned"]
        out = self.energy_model(data)
        energies = out["atomic_energy"].view(-1)
        return {"atomic_energies": per_row(energies[:owned], n).to(edge_vectors.dtype)}


def energy_model_of(graph_model: torch.nn.Module) -> torch.nn.Module:
    """The per-atom energy network inside a nequip GraphModel (without its force/stress output)."""
    inner = getattr(graph_model, "model", graph_model)
    return getattr(inner, "func", inner)


def species_of(graph_model: torch.nn.Module, species: Optional[List[str]]) -> List[int]:
    names = species or list(graph_model.type_names)
    if len(names) != len(graph_model.type_names):
        raise SystemExit(f"nequip_export: the model has {len(graph_model.type_names)} types "
                         f"({' '.join(graph_model.type_names)}); --species names {len(names)}")
    unknown = [name for name in names if atomic_number(name) is None]
    if unknown:
        raise SystemExit(f"nequip_export: type names {' '.join(unknown)} are not elements: give --species, "
                         f"one element per type in the model's order ({' '.join(graph_model.type_names)})")
    return [atomic_number(name) for name in names]


def units_of(metadata: Dict, units: Optional[str]) -> str:
    """The LAMMPS unit style to export in: the model's own "units" entry where its metadata has
    one (and `units`, if given, must agree), else `units`, which is then required."""
    recorded = metadata.get("units")
    if recorded and units and recorded != units:
        raise SystemExit(f"nequip_export: the model records units '{recorded}' but --units says '{units}'")
    if not (recorded or units):
        raise SystemExit("nequip_export: the checkpoint does not record the units of its training data: give "
                         "--units, the LAMMPS unit style they are in (metal for eV and Angstrom, real for "
                         "kcal/mol and Angstrom)")
    return recorded or units


def export(graph_model: torch.nn.Module, output: str, *, units: Optional[str] = None, halo: str = "layerwise",
           dtype: Optional[torch.dtype] = None, species: Optional[List[str]] = None,
           device: str = "cpu") -> Dict:
    """Write `graph_model` (a nequip GraphModel, left as it is) to `output` (.pt, or .pt2
    compiled for `device`, "cpu" or "cuda") for LAMMPS `units` (units_of); returns the metadata
    written."""
    interaction_block = _import_nequip()
    from e3nn.util.jit import script
    if halo not in EXPORTER_HALO_MODES:
        raise SystemExit(f"nequip_export: halo must be {' or '.join(EXPORTER_HALO_MODES)}, not '{halo}'")
    numbers = species_of(graph_model, species)
    meta = graph_model.metadata() if callable(graph_model.metadata) else graph_model.metadata
    units = units_of(meta, units)
    cutoff = float(meta["r_max"])
    dtype = dtype or graph_model.model_dtype
    energy_model = frozen_copy(energy_model_of(graph_model), dtype)
    blocks = [m for m in energy_model.modules() if isinstance(m, interaction_block)]
    layers = max(1, len(blocks))
    width = 0  # the widest row refresh_neighbors moves (Allegro, a one-layer NequIP: strictly local)
    if layers > 1 and halo == "layerwise":
        if any(getattr(layer, "resnet", False) and getattr(getattr(layer, "conv", None), "is_first_layer", False)
               for layer in energy_model.modules()):
            raise SystemExit("nequip_export: the model's first layer adds its input to its output on every atom "
                             "(a residual update), which the layerwise export cannot run: its interaction "
                             "blocks update owned atoms only, as in nequip's ML-IAP mode; export with --halo deep")
        for block in blocks:
            override_method(block, _OwnedRowCount._get_mliap_num_local)
            exchange = block.ghost_exchange
            override_method(exchange, _RefreshGhostRows.forward)
            width = max(width, exchange.irreps_in[exchange.field].dim)
    spec = exporter_spec(halo, layers, width)
    wrapper = NequipContractModel(energy_model, numbers, owned_rows=layers > 1 and halo == "layerwise")
    metadata_args = dict(cutoff=cutoff, species=numbers, units=units, dtype=dtype, spec=spec)
    if output_format(output) == AOTINDUCTOR:
        return save_aoti_model(wrapper, output, device=device, **metadata_args)
    return save_scripted_model(script(wrapper), output, **metadata_args)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvalchemi-nequip-export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a nequip checkpoint (.ckpt) or package (.nequip.zip)")
    add_output_arguments(parser, ", compiled for --device")
    parser.add_argument("--units", default=None,
                        help="the LAMMPS unit style of the model's training data (metal: eV, Angstrom); "
                             "required unless the model's metadata records it")
    parser.add_argument("--halo", choices=EXPORTER_HALO_MODES, default="layerwise",
                        help="for NequIP (message passing); Allegro is always local")
    parser.add_argument("--dtype", choices=("float64", "float32"), default=None,
                        help="default: the model's own model_dtype")
    parser.add_argument("--species", nargs="+", default=None,
                        help="an element per model type, in the model's type order (default: the type names)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="what a .pt2 package is compiled for (pair_style ... device must match)")
    args = parser.parse_args(argv)
    output = output_path(parser.prog, args.output, args.format, args.cpu_isa)
    _import_nequip()
    from nequip.model.saved_models.load_utils import load_saved_model
    from nequip.utils.global_state import set_global_state
    set_global_state()  # as nequip's own tools do before loading a model
    model = load_saved_model(args.model)
    dtype = {"float64": torch.float64, "float32": torch.float32, None: None}[args.dtype]
    metadata = export(model.eval(), output, units=args.units, halo=args.halo, dtype=dtype,
                      species=args.species, device=args.device)
    print(f"nequip_export: wrote {output}: cutoff {metadata['cutoff']}, species {metadata['species']}, "
          f"units {metadata['units']}, {metadata['dtype']}, {metadata['spec']}")


if __name__ == "__main__":
    main()
