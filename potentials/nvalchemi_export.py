"""Write TorchScript models that pair_style nvalchemi can run.

The model contract (inputs, outputs, metadata, units, signs) is doc/Howto_nvalchemi_contract.rst;
this module is its Python side: `save_model` scripts a module and stores the metadata inside the
archive, `save_scripted_model` does the same for a module scripted already (e3nn models go
through e3nn.util.jit.compile), `read_metadata` reads it back.
"""

import json
from typing import Dict, Optional, Sequence

import torch

CONTRACT_VERSION = 1
METADATA_FILE = "nvalchemi_metadata.json"


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
        "spec": spec if spec is not None else {"preset": "SPEC_LJ_HALO"},
    }


def save_scripted_model(scripted: torch.jit.ScriptModule, path: str, **metadata_args) -> Dict:
    """Save a scripted module with its metadata (arguments as for `save_model`); returns the
    metadata."""
    metadata = make_metadata(**metadata_args)
    torch.jit.save(scripted, path, _extra_files={METADATA_FILE: json.dumps(metadata, sort_keys=True)})
    return metadata


def save_model(
    module: torch.nn.Module,
    path: str,
    *,
    cutoff: float,
    species: Sequence[int],
    units: str,
    dtype: torch.dtype = torch.float64,
    spec: Optional[Dict] = None,
) -> Dict:
    """Script `module` and save it with its metadata; returns the metadata.

    species: atomic numbers the model handles. units: a LAMMPS unit style ("metal", "real",
    "lj", ...). spec: the model's default MLIPSpec as a dict, a preset plus overrides
    ({"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}) or a full spec with a
    "version" key (doc/Howto_nvalchemi_spec.rst); {"preset": "SPEC_LJ_HALO"} if omitted.
    """
    scripted = torch.jit.script(module.to(dtype).eval())
    return save_scripted_model(scripted, path, cutoff=cutoff, species=species, units=units,
                               dtype=dtype, spec=spec)


def read_metadata(path: str) -> Dict:
    """The metadata stored in a saved model."""
    extra = {METADATA_FILE: ""}
    torch.jit.load(path, _extra_files=extra)
    return json.loads(extra[METADATA_FILE])
