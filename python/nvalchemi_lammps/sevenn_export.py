"""Export a SevenNet model (PyPI sevenn: SevenNet-0, SevenNet-MF-0 or a checkpoint of the user's
own training) to a model that pair_style nvalchemi runs.

    nvalchemi-sevenn-export 7net-0|checkpoint.pth -o out.pt|out.pt2 [--modal NAME]
                            [--halo layerwise|deep] [--dtype float32|float64] [--device cpu|cuda]

The input is a SevenNet checkpoint file or a name SevenNet's own tools accept for the pretrained
models its wheel ships (7net-0, 7net-0_22May2024, 7net-mf-0, 7net-l3i5); --modal picks the
fidelity of a multi-fidelity model (SevenNet-MF-0: PBE or R2SCAN). The output is TorchScript
(.pt) or an AOTInductor package (.pt2, compiled for --device by export.save_aoti_model),
by its name, with the package's metadata (doc/Howto_nvalchemi_contract.rst): cutoff = the
checkpoint's, species = its elements (every one it was trained on; pair_coeff maps LAMMPS types
to them), units metal (eV, Angstrom), float32 by default as SevenNet runs (its weights are
float32), or float64 for exact parity across ranks. The model returns SevenNet's per-atom
energies as `atomic_energies`; pair_style nvalchemi takes forces and virial from their gradient
(SevenNet's own force output module is left out).

How SevenNet is fitted to the contract:
  * SevenNet's edge_index[0] is the centre atom and its edge vectors point from the centre to the
    neighbour, the reverse of the contract (export.centre_first_edges);
  * the one-hot species embedding, which SevenNet builds in float32 whatever the model's dtype,
    is built by the wrapper in the exported dtype, with the keys SevenNet's embedding writes;
  * the convolutions size their message sums, and a multi-fidelity model's linear layers their
    fidelity one-hot, by the node features' row count (x.shape[0]) where SevenNet takes len(x),
    which a trace for AOTInductor would freeze to one atom count;
  * halo mode layerwise: the first layer's embeddings and the linear layers before its
    convolution run on every row (the convolution reads its senders' features), and every
    convolution but the first refreshes the ghost rows' features first, with
    torch.ops.nvalchemi.refresh_neighbors (the features SevenNet's e3gnn/parallel sends through
    LAMMPS' communication before layers 2 to 5). After its convolution a layer works on owned
    rows only (nvalchemi_lammps.owned_rows), as in SevenNet's own ML-IAP mode; so does an
    AOTInductor package, the owned count a size of the compiled program (export.save_aoti_model);
  * halo mode deep: the model is left as it is and the ghost shell holds every layer's
    receptive field (cutoff x layers: 25 A for SevenNet-0, an expensive shell);
  * a rank with no atoms runs the model on zero rows, making the same exchange calls as every
    other rank (pair_style nvalchemi stops a run whose ranks' calls differ).

sevenn is needed only here, never by a LAMMPS run.
"""

import argparse
from typing import Dict, List, Optional, Tuple

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import (
    AOTINDUCTOR, add_output_arguments, centre_first_edges, frozen_copy, missing_framework, output_format,
    output_path, override_method, require_release, save_aoti_model, save_scripted_model, species_index)
from nvalchemi_lammps.spec import EXPORTER_HALO_MODES, exporter_spec
from nvalchemi_lammps.owned_rows import owned_count, owned_rows, per_row, with_ghost_rows

# sevenn releases whose model layout (module names, data keys) the exporter relies on; keep equal
# to the sevenn extra in pyproject.toml
SUPPORTED_SEVENN = ((0, 13, 0), (0, 13, 99))

# the keys (sevenn._keys) under which SevenNet's species embedding writes its node features,
# one-hot attributes and type indices; scripted code spells them (and the other keys of SevenNet's
# data it writes or narrows) out, TorchScript reading no module-level strings
EMBEDDING_KEYS = ("x", "node_attr", "atom_type")


def _import_sevenn():
    try:
        import sevenn
        from sevenn.nn.convolution import IrrepsConvolution
        from sevenn.nn.linear import IrrepsLinear
        from sevenn.util import load_checkpoint
    except ImportError as exc:
        raise missing_framework("sevenn_export", "sevenn is not installed", "sevenn", exc) from exc
    require_release("sevenn_export", "sevenn", sevenn.__version__, SUPPORTED_SEVENN,
                    "the export relies on the layout of SevenNet's model (its module names and data "
                    "keys); install a supported sevenn")
    return IrrepsConvolution, IrrepsLinear, load_checkpoint


class _SizedMessageSum:
    """IrrepsConvolution.forward (of a serial model: is_parallel off) with its message sum sized
    by the node features' row count, x.shape[0]: SevenNet's message_gather takes len(x), a Python
    int that a trace for AOTInductor freezes to the example's row count. The same operations
    otherwise, in TorchScript too."""

    def forward(self, data: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        assert self.convolution is not None, "Convolution is not instantiated"
        assert self.weight_nn is not None, "Weight_nn is not instantiated"
        weight = self.weight_nn(data[self.key_weight_input])
        x = data[self.key_x]
        edge_src = data[self.key_edge_idx][1]
        edge_dst = data[self.key_edge_idx][0]
        message = self.convolution(x[edge_src], data[self.key_filter], weight)
        shape: List[int] = [x.shape[0]] + list(message.shape[1:])
        summed = torch.zeros(shape, dtype=x.dtype, device=x.device)
        summed.scatter_reduce_(0, edge_dst.unsqueeze(-1).expand_as(message), message, reduce="sum")
        data[self.key_x] = summed.div(self.denominator)
        return data


class _SizedModalPatch:
    """IrrepsLinear._patch_modal_to_data of a multi-fidelity model, for one graph (is_batch_data
    off), with the fidelity's one-hot expanded to the input's row count, x.shape[0], where SevenNet
    takes len(x), which a trace for AOTInductor freezes. The same operations otherwise."""

    def _patch_modal_to_data(self, data: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        x = data[self.key_input]
        modality = data[self.key_modal_attr].expand(x.shape[0], -1).to(x.dtype)
        data[self.key_input] = torch.cat([x, modality], dim=1)
        return data


class OwnedRowsConvolution(torch.nn.Module):
    """A SevenNet convolution in halo mode layerwise. Before it (all but the first) the owned
    rows' features are extended to every row, ghost rows taking their owners' values; after it,
    the layer's node-wise tensors keep their owned rows only, so the rest of the layer and the
    readout work on owned rows."""

    def __init__(self, convolution: torch.nn.Module, refresh: bool):
        super().__init__()
        self.convolution = convolution
        self.refresh = refresh

    def forward(self, data: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        # nvalchemi_rows: one entry per row, never narrowed; nvalchemi_n_owned: the contract's n_owned
        rows = data["nvalchemi_rows"].shape[0]
        owned = owned_count(data["nvalchemi_n_owned"], rows)
        if self.refresh:
            data["x"] = with_ghost_rows(data["x"], rows)
        data = self.convolution(data)
        # the node features, one-hot attributes, type indices and self-connection term
        for key in ("x", "node_attr", "atom_type", "self_cont_tmp"):
            if key in data:
                data[key] = owned_rows(data[key], owned)
        return data


class SevennetContractModel(torch.nn.Module):
    """A SevenNet energy model (AtomGraphSequential without its force output and species
    embedding) behind the contract's inputs and outputs."""

    def __init__(self, model: torch.nn.Module, species: List[int], num_species: int, owned_rows: bool):
        super().__init__()
        self.model = model
        self.register_buffer("type_index", species_index(species))
        self.num_species = num_species
        self.owned_rows = owned_rows

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        index = self.type_index[inputs["atomic_numbers"]]
        n = index.shape[0]
        onehot = torch.nn.functional.one_hot(index, self.num_species).to(edge_vectors.dtype)
        edge_index, centre_to_neighbour = centre_first_edges(inputs["neighbor_list"], edge_vectors)
        data: Dict[str, torch.Tensor] = {
            "edge_index": edge_index,
            "edge_vec": centre_to_neighbour,
            # what SevenNet's species embedding writes (EMBEDDING_KEYS)
            "x": onehot,
            "node_attr": onehot,
            "atom_type": index,
            "nvalchemi_rows": index,
            "nvalchemi_n_owned": inputs["n_owned"],
        }
        out = self.model(data)
        energies = out["atomic_energy"].view(-1)
        # layerwise: the readout ran on the owned rows only
        owned = owned_count(inputs["n_owned"], n) if self.owned_rows else n
        return {"atomic_energies": per_row(energies[:owned], n).to(edge_vectors.dtype)}


def load(model: str, modal: Optional[str] = None):
    """SevenNet's model built from a checkpoint file or pretrained name (sevenn.util.
    load_checkpoint), switched to one fidelity (`modal`) for a multi-fidelity model."""
    _, _, load_checkpoint = _import_sevenn()
    try:
        checkpoint = load_checkpoint(model)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"sevenn_export: {exc}") from exc
    built = checkpoint.build_model(enable_cueq=False, enable_flash=False, enable_oeq=False)
    modals = list(built.modal_map or {})
    if modals and modal is None:
        raise SystemExit(f"sevenn_export: {model} is a multi-fidelity model: give --modal, "
                         f"one of {', '.join(modals)}")
    if modal is not None:
        if not modals:
            raise SystemExit(f"sevenn_export: {model} has one fidelity: --modal {modal} does not apply")
        if modal not in modals:
            raise SystemExit(f"sevenn_export: {model} has no modal '{modal}' "
                             f"(its modals: {', '.join(modals)})")
        built.prepare_modal_deploy(modal)
    return built


def contract_model(model: torch.nn.Module, *, halo: str = "layerwise",
                   dtype: torch.dtype = torch.float32) -> Tuple[torch.nn.Module, Dict]:
    """`model` (SevenNet's AtomGraphSequential, as `load` returns it; left as it is) behind the
    contract, for either format: (the wrapper, the arguments of its metadata)."""
    convolution_class, linear_class, _ = _import_sevenn()
    if halo not in EXPORTER_HALO_MODES:
        raise SystemExit(f"sevenn_export: halo must be {' or '.join(EXPORTER_HALO_MODES)}, not '{halo}'")
    if model.type_map is None or not model.cutoff:
        raise SystemExit("sevenn_export: the model records no type map or cutoff; "
                         "export a SevenNet checkpoint")
    model = frozen_copy(model, dtype)
    model.set_is_batch_data(False)
    model.eval_type_map = False
    embedding = model._modules.get("onehot_idx_to_onehot")
    if embedding is None or (embedding.key_output, embedding.key_additional_output,
                             embedding.key_save) != EMBEDDING_KEYS:
        raise SystemExit("sevenn_export: the model's species embedding is not the one this exporter knows")
    model.delete_module_by_key("onehot_idx_to_onehot")  # the wrapper embeds, in the model's dtype
    model.delete_module_by_key("force_output")  # pair_style nvalchemi differentiates the energies
    convolutions = [name for name, module in model._modules.items()
                    if isinstance(module, convolution_class)]
    layers = len(convolutions)
    if layers == 0 or any(model._modules[name].is_parallel for name in convolutions):
        raise SystemExit("sevenn_export: the model has no convolution this exporter knows "
                         "(SevenNet's IrrepsConvolution, serial)")
    # the widest row refresh_neighbors moves: the features a convolution but the first reads
    spec = exporter_spec(halo, layers, max((model._modules[name]._comm_size for name in convolutions[1:]),
                                           default=0))
    for name in convolutions:
        override_method(model._modules[name], _SizedMessageSum.forward)
    for module in model._modules.values():
        if isinstance(module, linear_class) and module.num_modalities > 1:
            override_method(module, _SizedModalPatch._patch_modal_to_data)
    owned_rows_only = layers > 1 and halo == "layerwise"
    if owned_rows_only:
        for i, name in enumerate(convolutions):
            model._modules[name] = OwnedRowsConvolution(model._modules[name], refresh=i > 0)
    # the elements in the order of SevenNet's type indices (its type map: atomic number -> index)
    species = sorted((int(z) for z in model.type_map), key=model.type_map.__getitem__)
    wrapper = SevennetContractModel(model, species, embedding.num_classes, owned_rows_only)
    return wrapper, dict(cutoff=float(model.cutoff), species=species, units="metal", dtype=dtype,
                         spec=spec)


def export(model: torch.nn.Module, output: str, *, halo: str = "layerwise",
           dtype: torch.dtype = torch.float32, device: str = "cpu") -> Dict:
    """Write `model` (SevenNet's AtomGraphSequential, as `load` returns it; left as it is) to
    `output` (.pt, or .pt2 compiled for `device`, "cpu" or "cuda"); returns the metadata
    written."""
    wrapper, metadata_args = contract_model(model, halo=halo, dtype=dtype)
    if output_format(output) == AOTINDUCTOR:
        return save_aoti_model(wrapper, output, device=device, **metadata_args)
    from e3nn.util.jit import script
    return save_scripted_model(script(wrapper), output, **metadata_args)


def main(argv: Optional[List[str]] = None):
    parser = argparse.ArgumentParser(prog="nvalchemi-sevenn-export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model",
                        help="a SevenNet checkpoint (.pth) or pretrained name (7net-0, 7net-mf-0, ...)")
    add_output_arguments(parser, ", compiled for --device")
    parser.add_argument("--modal", default=None,
                        help="the fidelity of a multi-fidelity model (SevenNet-MF-0: PBE, R2SCAN)")
    parser.add_argument("--halo", choices=EXPORTER_HALO_MODES, default="layerwise")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="float32: as SevenNet runs (its weights are float32); "
                             "float64: exact parity across ranks")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="what a .pt2 package is compiled for (pair_style ... device must match)")
    args = parser.parse_args(argv)
    output = output_path(parser.prog, args.output, args.format, args.cpu_isa)
    model = load(args.model, args.modal)
    metadata = export(model, output, halo=args.halo,
                      dtype=torch.float64 if args.dtype == "float64" else torch.float32, device=args.device)
    print(f"sevenn_export: wrote {output}: cutoff {metadata['cutoff']}, "
          f"{len(metadata['species'])} species, units {metadata['units']}, {metadata['dtype']}, "
          f"{metadata['spec']}")


if __name__ == "__main__":
    main()
