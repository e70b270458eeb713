"""The names and checks the model contract fixes (doc/Howto_nvalchemi_contract.rst), which the
export writes and the checker reads: read from the contract's tables as the C++ core defines them
(src/USER-NVALCHEMI/nvalchemi_contract_tables.h, which this package ships), so that neither side
spells them a second time. `check_metadata` applies the table's metadata checks as
pair_style nvalchemi's reader does (nvalchemi_model_metadata.cpp)."""

import json
import math
from typing import Dict, List

from nvalchemi_lammps.tables import read_table

TABLES = read_table("nvalchemi_contract_tables.h", "CONTRACT_TABLES_JSON")
CONTRACT_VERSION: int = TABLES["contract_version"]
METADATA_FILE: str = TABLES["metadata_file"]
# the AOTInductor package's metadata entry naming the energy output (its outputs are positional)
AOTI_ENERGY_OUTPUT: str = TABLES["aoti_energy_output"]
# the entry saying how the program takes n_owned: AOTI_OWNED_ROWS_AS_SIZE, a tensor of n_owned rows
# (the owned atoms' atomic numbers: the count is a size of the program, values unused), or absent
# for the contract's scalar (packages written before)
AOTI_OWNED_ROWS: str = TABLES["aoti_owned_rows"]
AOTI_OWNED_ROWS_AS_SIZE: str = TABLES["aoti_owned_rows_as_size"]
# the entries naming the outputs a package's program returns, in order, before the gradient
# with respect to edge_vectors (space-separated), and which energy sum that gradient is of: the
# energy output's owned rows, all its rows, or none (an empty gradient: the model's own forces)
AOTI_OUTPUTS: str = TABLES["aoti_outputs"]
AOTI_GRADIENT: str = TABLES["aoti_gradient"]
AOTI_GRADIENT_OF_OWNED_ROWS, AOTI_GRADIENT_OF_ALL_ROWS, AOTI_NO_GRADIENT = TABLES["aoti_gradients"]
# the formats' names (pair_style nvalchemi's log prints them), the name a package is written as,
# and what an AOTInductor package (a zip archive) starts with, and holds where a TorchScript
# archive does not
AOTINDUCTOR: str = TABLES["aoti_format"]
TORCHSCRIPT: str = TABLES["torchscript_format"]
AOTI_PACKAGE_SUFFIX: str = TABLES["aoti_package_suffix"]
TORCHSCRIPT_SUFFIX: str = TABLES["torchscript_suffix"]
AOTI_PACKAGE_SIGNATURE: str = TABLES["aoti_package_signature"]
AOTI_PACKAGE_MARKER: str = TABLES["aoti_package_marker"]
# what fix nvalchemi/dd's hook is given and may return; a hook package's metadata entries naming
# the inputs it takes and the outputs it returns, in order
HOOK_INPUTS = tuple(TABLES["hook_inputs"])
HOOK_OUTPUTS = tuple(TABLES["hook_outputs"])
AOTI_HOOK_INPUTS: str = TABLES["aoti_hook_inputs"]
AOTI_HOOK_OUTPUTS: str = TABLES["aoti_hook_outputs"]
# the spec's own JSON layout, and the nvalchemi toolkit's MLIPSpec.to_dict() layout
SPEC_VERSION: int = TABLES["spec_version"]
TOOLKIT_SPEC_VERSION: int = TABLES["toolkit_spec_version"]
# the torch.ops.nvalchemi operators' schemas, "name(arguments) -> result"
EXCHANGE_OPS = tuple(TABLES["exchange_ops"])
# the operator namespaces no operator library provides (ATen's, TorchScript's, the exchange ops')
BUILTIN_OP_NAMESPACES = frozenset(TABLES["builtin_op_namespaces"])
# the contract's inputs, in the positional order of an AOTInductor model
CONTRACT_INPUTS = tuple(TABLES["contract_inputs"])
UNIT_STYLES: List[str] = [style["name"] for style in TABLES["unit_styles"]]


def contract_inputs(*values) -> Dict:
    """The model's input dict from its values in the contract's order (CONTRACT_INPUTS)."""
    if len(values) != len(CONTRACT_INPUTS):
        raise ValueError(f"the contract has {len(CONTRACT_INPUTS)} inputs ({', '.join(CONTRACT_INPUTS)}), "
                         f"got {len(values)} values")
    return dict(zip(CONTRACT_INPUTS, values))
ELEMENTS = 118


def _wrong_type(key: str, expected: str) -> ValueError:
    return ValueError(f"key '{key}' must be {expected}")


INT_RANGE = (-2**31, 2**31 - 1)  # the C++ reader's int


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and INT_RANGE[0] <= value <= INT_RANGE[1]


def _check_value(entry: Dict, key: str, value) -> None:
    kind = entry["type"]
    if kind == "integer" and not _is_integer(value):
        raise _wrong_type(key, "an integer")
    if kind == "number" and not (_is_integer(value) or isinstance(value, float)):
        raise _wrong_type(key, "a number")
    if kind == "string" and not isinstance(value, str):
        raise _wrong_type(key, "a string")
    if kind == "object" and not isinstance(value, dict):
        raise _wrong_type(key, "a JSON object (a preset name plus overrides, or a full spec)")
    if kind == "atomic_numbers":
        if not isinstance(value, list) or not value:
            raise _wrong_type(key, "a non-empty list of atomic numbers")
        if any(not _is_integer(z) or not 1 <= z <= ELEMENTS for z in value):
            raise _wrong_type(key, "a non-empty list of atomic numbers (1..118)")
    check = entry.get("check")
    if check == "positive" and not (value > 0 and math.isfinite(value)):
        raise ValueError(f"key '{key}' must be positive and finite")
    if check == "contract_version" and value != CONTRACT_VERSION:
        raise ValueError(f"contract_version is {value} but this build of USER-NVALCHEMI implements version "
                         f"{CONTRACT_VERSION}")
    if check == "unit_style" and value not in UNIT_STYLES:
        raise ValueError(f"declares units '{value}', which is not a LAMMPS unit style ({', '.join(UNIT_STYLES)}): "
                         "export it again with one of them")
    if isinstance(check, list) and value not in check:
        raise ValueError(f"key '{key}' must be {' or '.join(json.dumps(c) for c in check)}, not {json.dumps(value)}")


def check_metadata(text: str) -> Dict:
    """The metadata JSON `text` as a dict, checked as pair_style nvalchemi checks it (unknown and
    missing keys, types, values); raises ValueError naming what is wrong."""
    if not text:
        raise ValueError(f"no metadata ({METADATA_FILE}): write the model with nvalchemi_lammps.export.save_model "
                         "(another framework's deployed file is judged by pair_style nvalchemi itself where LAMMPS' "
                         "Python module is importable: run the nvalchemi-check of build/venv)")
    def refuse_constant(name):  # NaN, Infinity: not JSON, as the C++ reader says
        raise json.JSONDecodeError(f"'{name}' is not a JSON value", text, text.find(name))

    def finite_float(literal):  # 1e400: a number overflow to the C++ reader
        value = float(literal)
        if not math.isfinite(value):
            raise json.JSONDecodeError(f"number overflow parsing '{literal}'", text, text.find(literal))
        return value

    try:
        meta = json.loads(text, parse_constant=refuse_constant, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise ValueError("the top level must be a JSON object")
    keys = {entry["name"]: entry for entry in TABLES["metadata_keys"]}
    for key in meta:
        if key not in keys:
            raise ValueError(f"unknown key '{key}'")
    for key, entry in keys.items():
        if key in meta:
            _check_value(entry, key, meta[key])
        elif entry["required"]:
            raise ValueError(f"missing key '{key}'")
    return meta
