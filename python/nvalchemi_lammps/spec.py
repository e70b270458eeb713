"""The spec's tables as the C++ core defines them, and the spec a model runs with.

The halo modes (with what each asks of a rank's graph), the force strategies, the defaults of an
unset field and the presets are defined once, in src/USER-NVALCHEMI/nvalchemi_spec_tables.h,
which LAMMPS compiles in and this package ships (nvalchemi_spec_tables.h beside this file): this
module reads its JSON, so that nvalchemi-check and the exporters cannot drift from what
pair_style nvalchemi runs. `effective_spec` composes a model's spec as the pair style does
(MLIPSpec::operator| and resolved(): doc/Howto_nvalchemi_spec.rst) and returns what the pair
style prints as the "effective spec".
"""

import copy
from typing import Dict, List, Optional, Tuple

from nvalchemi_lammps.contract import SPEC_VERSION, TOOLKIT_SPEC_VERSION
from nvalchemi_lammps.tables import read_table

TABLES = read_table("nvalchemi_spec_tables.h", "SPEC_TABLES_JSON")
HALO_MODES: List[str] = [mode["name"] for mode in TABLES["halo_modes"]]
PRESETS: Dict[str, Dict] = {preset["name"]: preset["spec"] for preset in TABLES["presets"]}
# the package's force strategy names, and the toolkit's synonyms for them
_FORCE_STRATEGY = {name: entry["name"] for entry in TABLES["force_strategies"]
                   for name in (entry["name"], entry["toolkit_name"])}
# the halo modes the framework exporters write (nvalchemi-mace-export, -nequip-export,
# -sevenn-export): owned-row updates with ghost rows refreshed between layers, or every
# layer's ghosts on the rank
EXPORTER_HALO_MODES = ("layerwise", "deep")
assert set(EXPORTER_HALO_MODES) <= set(HALO_MODES)
# the spec of a model whose writer gave none
DEFAULT_SPEC: Dict = TABLES["default_spec"]


def halo_rules(mode: str) -> Dict:
    """What halo mode `mode` asks of a rank's graph: ghost_receivers (ghost atoms have edges of
    their own), ghost_shell ("cutoff", or "layers": max(1, layers) cutoffs), model_rows ("rank",
    or "system": every atom, other ranks' owned rows standing in for ghosts)."""
    for rules in TABLES["halo_modes"]:
        if rules["name"] == mode:
            return rules
    raise ValueError(f"unknown halo mode '{mode}' (valid: {', '.join(HALO_MODES)})")


# the keys of the spec's JSON layout that are not fields of a spec (MLIPSpec::from_json's)
_LAYOUT_KEYS = ("preset", "version")


def _compose(left: Dict, right: Dict) -> Dict:
    """MLIPSpec::operator|: fields set on the right win; a field that is an object (the outputs,
    the compile policy) merges key by key."""
    merged = copy.deepcopy(left)
    for key, value in right.items():
        if isinstance(value, dict):
            merged.setdefault(key, {}).update(copy.deepcopy(value))
        elif key not in _LAYOUT_KEYS:
            merged[key] = copy.deepcopy(value)
    return merged


def effective_spec(spec: Optional[Dict], overrides: Optional[Dict] = None) -> Dict:
    """The spec a model of spec `spec` (its metadata's: a preset plus overrides, or a full spec
    of version 1) runs with, `overrides` (the pair style's keywords, as a spec) applied over it,
    every unset field at its default: the pair style's "effective spec", in its JSON layout.
    Raises ValueError for an unknown preset, and for the toolkit's layout (version 2), whose
    translation only the pair style makes."""
    composed = {}
    for part in (spec or DEFAULT_SPEC), (overrides or {}):
        if part.get("version", SPEC_VERSION) != SPEC_VERSION:
            layout = " (the toolkit's layout)" if part["version"] == TOOLKIT_SPEC_VERSION else ""
            raise ValueError(f"a spec of version {part['version']}{layout} is read by "
                             "pair_style nvalchemi only: give the halo mode")
        if "preset" in part:
            if part["preset"] not in PRESETS:
                raise ValueError(f"unknown spec preset '{part['preset']}' (valid: {', '.join(PRESETS)})")
            composed = _compose(composed, PRESETS[part["preset"]])
        composed = _compose(composed, part)
    resolved = _compose(TABLES["defaults"], composed)
    resolved["compile"]["force_strategy"] = _FORCE_STRATEGY[resolved["compile"]["force_strategy"]]
    for output in resolved.get("outputs", {}).values():
        if not output.get("autograd", True):
            del output["autograd"]  # what the pair style prints only when set
    if resolved["halo"] not in HALO_MODES:
        raise ValueError(f"unknown halo mode '{resolved['halo']}' (valid: {', '.join(HALO_MODES)})")
    return dict(version=SPEC_VERSION, **resolved)


def energy_share(effective: Dict) -> Tuple[str, bool, bool]:
    """(energy output, whether only its owned rows are summed, whether the forces are the sum's
    gradient): the energy share the pair style takes of an effective spec (energy_share,
    nvalchemi_outputs_consolidate.cpp), for which an AOTInductor package compiles its gradient
    in. The pair style refuses a package whose share is not the run's. ValueError where the spec
    declares no energy its force strategy can use."""
    strategy = effective["compile"]["force_strategy"]
    node, outputs = effective["node_energy_key"], effective.get("outputs", {})
    differentiate = strategy != "model"
    if strategy != "global_energy" and outputs.get(node, {}).get("kind") == "per_node":
        declared = outputs[node]
        sums_ghost_rows = declared["reduce"] == "all_reduce" or (declared["reduce"] == "none"
                                                                 and declared.get("autograd", False))
        return node, not sums_ghost_rows, differentiate
    if strategy != "node_energy" and outputs.get("energy", {}).get("kind") == "per_graph":
        return "energy", False, differentiate
    raise ValueError(f"force strategy '{strategy}' needs the spec to declare the energy it uses: "
                     f"'{node}' as per_node or 'energy' as per_graph")


def forces_from_node_energies(effective: Dict) -> bool:
    """Whether an effective spec's forces are the gradient of owned node energies."""
    return effective["compile"]["force_strategy"] == "node_energy"


def exporter_spec(halo: str, layers: int, exchange_feature_width: int = 0) -> Dict:
    """The spec a framework exporter writes for a message-passing model of `layers` layers
    (Allegro and other strictly local models: layers <= 1) in halo mode `halo` (one of
    EXPORTER_HALO_MODES); `exchange_feature_width`: the widest row a layerwise model refreshes.
    What exporter_spec_json (nvalchemi_spec.h) gives the readers of other frameworks' files."""
    if halo not in EXPORTER_HALO_MODES:
        raise ValueError(f"halo must be {' or '.join(EXPORTER_HALO_MODES)}, not '{halo}'")
    presets = TABLES["exporter_presets"]
    if layers <= 1:
        return {"preset": presets["strictly_local"]}
    spec: Dict = {"preset": presets["message_passing"], "num_message_passing_layers": layers}
    if halo == "deep":
        spec["halo"] = "deep"
    elif exchange_feature_width:
        spec["exchange_feature_width"] = exchange_feature_width
    return spec
