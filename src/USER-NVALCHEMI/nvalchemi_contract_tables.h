/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model contract's tables, defined once for the C++ core and the Python
   tools (doc/Howto_nvalchemi_contract.rst). The contract's version, the name of the metadata
   entry, the metadata keys with their types and checks, LAMMPS' unit styles with their factors,
   the contract's inputs in the positional order of a compiled program, and the names a compiled
   package records are JSON, held here as one string: the pair style reads it
   (nvalchemi_model_metadata.cpp, nvalchemi_model_units.cpp; the names below at compile time) and the
   Python package (nvalchemi_lammps.contract, which ships this file) reads the text between the
   R"json( and )json" markers. Edit the JSON only.

   metadata_keys, per key:
     type        "integer", "number", "string", "object" or "atomic_numbers" (a non-empty list of
                 integers 1..118)
     required    whether a file without it is refused
     check       "positive" (a number > 0), "contract_version" (this table's), "unit_style" (a
                 name of unit_styles, checked where units are converted), or a list of the values
                 allowed
   hook_inputs, hook_outputs: the names of what fix nvalchemi/dd's hook is given and may return
   (doc/fix_nvalchemi_dd.rst); a hook compiled as an AOTInductor package takes the inputs it
   records in aoti_hook_inputs positionally, in this order, and returns the outputs it records
   in aoti_hook_outputs, in this order (both space-separated names).
   aoti_outputs, aoti_gradient: a model package's metadata entries naming the outputs its program
   returns before the gradient with respect to edge_vectors, and which energy sum that gradient
   is of, one of aoti_gradients (doc/Howto_nvalchemi_contract.rst, "AOTInductor models").
   spec_version: the spec's own JSON layout (MLIPSpec::to_json); toolkit_spec_version: the
   nvalchemi toolkit's MLIPSpec.to_dict() layout, which the spec readers also take.
   exchange_ops: the schemas of the torch.ops.nvalchemi operators, each "name(arguments) ->
   result" (nvalchemi_halo_ops_torch.cpp registers them in LibTorch, nvalchemi_lammps.ops in Python).
   builtin_op_namespaces: the operator namespaces no operator library provides (ATen's,
   TorchScript's own node kinds, the exchange ops'): a model's calls outside them name the
   libraries it needs (the exporters record them in the spec's custom_ops; the runners name a
   missing one in their error).
   aoti_format, torchscript_format: the names of the two formats a model file has; a file is an
   AOTInductor package where it starts with aoti_package_signature and holds aoti_package_marker
   (a zip archive with entries under <name>/data/aotinductor/), else a TorchScript archive; the
   writers make a package of a name ending in aoti_package_suffix (their default) and a
   TorchScript archive of one ending in torchscript_suffix.
   unit_styles: how many of the style's length units make one Angstrom (LAMMPS' force->angstrom)
   and how many of its energy units one electron volt; lj has none (reduced units). 1 eV =
   23.060549 kcal/mol is LAMMPS' own metal <-> real factor (utils::get_conversion_factor) and
   1.6021765e-19 J its elementary charge of units si (force->qelectron); micro's energy unit is
   pg um^2/us^2 = 1e-15 J, nano's ag nm^2/ns^2 = 1e-21 J; electron's Bohr radius (0.52917720859 A)
   and Hartree (27.21138386 eV) are CODATA 2006, as LAMMPS' constants of that style (the table
   holds their inverses, 1/0.52917720859 and 1/27.21138386, as Python's repr writes them).
   Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_CONTRACT_TABLES_H
#define LMP_NVALCHEMI_CONTRACT_TABLES_H

#include <cstddef>
#include <string_view>

namespace LAMMPS_NS {
namespace NVAlchemi {

  static constexpr const char *CONTRACT_TABLES_JSON = R"json(
{
  "contract_version": 1,
  "metadata_file": "nvalchemi_metadata.json",
  "metadata_keys": [
    {"name": "contract_version", "type": "integer", "required": true, "check": "contract_version"},
    {"name": "cutoff", "type": "number", "required": true, "check": "positive"},
    {"name": "species", "type": "atomic_numbers", "required": true},
    {"name": "units", "type": "string", "required": true, "check": "unit_style"},
    {"name": "dtype", "type": "string", "required": true, "check": ["float64", "float32"]},
    {"name": "spec", "type": "object", "required": true},
    {"name": "torch_version", "type": "string", "required": false},
    {"name": "cuda_version", "type": "string", "required": false}
  ],
  "unit_styles": [
    {"name": "lj"},
    {"name": "metal", "per_angstrom": 1.0, "per_ev": 1.0},
    {"name": "real", "per_angstrom": 1.0, "per_ev": 23.060549},
    {"name": "si", "per_angstrom": 1.0e-10, "per_ev": 1.6021765e-19},
    {"name": "cgs", "per_angstrom": 1.0e-8, "per_ev": 1.6021765e-12},
    {"name": "electron", "per_angstrom": 1.8897261328856432, "per_ev": 0.03674932539796232},
    {"name": "micro", "per_angstrom": 1.0e-4, "per_ev": 1.6021765e-4},
    {"name": "nano", "per_angstrom": 1.0e-1, "per_ev": 160.21765}
  ],
  "contract_inputs": ["positions", "atomic_numbers", "neighbor_list", "edge_vectors", "cell",
                      "pbc", "n_owned"],
  "aoti_energy_output": "nvalchemi_energy_output",
  "aoti_owned_rows": "nvalchemi_owned_rows",
  "aoti_owned_rows_as_size": "size",
  "aoti_outputs": "nvalchemi_outputs",
  "aoti_gradient": "nvalchemi_gradient",
  "aoti_gradients": ["owned_rows", "all_rows", "none"],
  "aoti_format": "AOTInductor",
  "torchscript_format": "TorchScript",
  "aoti_package_suffix": ".pt2",
  "torchscript_suffix": ".pt",
  "aoti_package_signature": "PK",
  "aoti_package_marker": "/data/aotinductor/",
  "hook_inputs": ["positions", "velocities", "forces", "atom_ids", "atom_types", "atomic_numbers",
                  "cell", "pbc"],
  "hook_outputs": ["forces", "energy", "virial"],
  "aoti_hook_inputs": "nvalchemi_hook_inputs",
  "aoti_hook_outputs": "nvalchemi_hook_outputs",
  "spec_version": 1,
  "toolkit_spec_version": 2,
  "exchange_ops": [
    "refresh_neighbors(Tensor x) -> Tensor",
    "refresh_neighbors_backward(Tensor grad) -> Tensor",
    "scatter_to_owners(Tensor x) -> Tensor",
    "scatter_to_owners_backward(Tensor grad) -> Tensor",
    "system_sum(Tensor values, int scope) -> Tensor",
    "system_sum_backward(Tensor grad, Tensor values, int scope) -> Tensor",
    "rank_sum(Tensor x) -> Tensor",
    "rank_sum_backward(Tensor grad) -> Tensor"
  ],
  "builtin_op_namespaces": ["aten", "prim", "prims", "nvalchemi", "attr", "onnx", "scope", "user",
                            "_caffe2", "dimname", "namespaces", "cuda", "profiler", "quantized"]
}
)json";

  // Where the value of top-level key `key` starts in the table (its first character after the
  // colon and blanks), or npos: the search the readers below share, at compile time.
  constexpr std::size_t contract_value(std::string_view key)
  {
    const std::string_view table = CONTRACT_TABLES_JSON;
    for (std::size_t at = table.find('"'); at != std::string_view::npos;
         at = table.find('"', at + 1)) {
      if (table.substr(at + 1, key.size()) != key || table.substr(at + 1 + key.size(), 1) != "\"")
        continue;
      const std::size_t colon = table.find_first_not_of(" \n", at + key.size() + 2);
      if (colon == std::string_view::npos || table[colon] != ':') continue;
      return table.find_first_not_of(" \n", colon + 1);
    }
    return std::string_view::npos;
  }

  // The string value of top-level key `key` of the table ("key": "value"), read at compile time
  // so that sources without a JSON parser (the LibTorch runners) name what the table says.
  constexpr std::string_view contract_name(std::string_view key)
  {
    const std::string_view table = CONTRACT_TABLES_JSON;
    const std::size_t open = contract_value(key);
    if (open == std::string_view::npos || table[open] != '"') return {};
    const std::size_t close = table.find('"', open + 1);
    if (close == std::string_view::npos) return {};
    return table.substr(open + 1, close - open - 1);
  }

  // The integer value of top-level key `key`, at compile time; -1 where it is none.
  constexpr int contract_integer(std::string_view key)
  {
    const std::string_view table = CONTRACT_TABLES_JSON;
    std::size_t digit = contract_value(key);
    if (digit == std::string_view::npos || table[digit] < '0' || table[digit] > '9') return -1;
    int value = 0;
    while (digit < table.size() && table[digit] >= '0' && table[digit] <= '9')
      value = 10 * value + (table[digit++] - '0');
    return value;
  }

  // Item `index` of the list of strings at top-level key `key`, at compile time.
  constexpr std::string_view contract_list_item(std::string_view key, int index)
  {
    const std::string_view table = CONTRACT_TABLES_JSON;
    const std::size_t list = contract_value(key);
    if (list == std::string_view::npos || table[list] != '[') return {};
    const std::size_t end = table.find(']', list);
    if (end == std::string_view::npos) return {};
    std::size_t open = table.find('"', list);
    for (int i = 0; i < index && open < end; ++i) {
      const std::size_t close = table.find('"', open + 1);
      open = close < end ? table.find('"', close + 1) : end;
    }
    if (open >= end) return {};
    return table.substr(open + 1, table.find('"', open + 1) - open - 1);
  }

  // Version of the model contract this build implements.
  static constexpr int CONTRACT_VERSION = contract_integer("contract_version");
  // The entry of a model file (a TorchScript extra file, a package's metadata) holding its
  // metadata JSON.
  static constexpr std::string_view METADATA_FILE = contract_name("metadata_file");
  // A compiled package's metadata: the name of its energy output (its outputs are positional),
  // and how it takes n_owned (AOTI_OWNED_ROWS_AS_SIZE: a tensor of n_owned rows; absent: the
  // contract's scalar, packages written before)
  static constexpr std::string_view AOTI_ENERGY_OUTPUT = contract_name("aoti_energy_output");
  static constexpr std::string_view AOTI_OWNED_ROWS = contract_name("aoti_owned_rows");
  static constexpr std::string_view AOTI_OWNED_ROWS_AS_SIZE =
      contract_name("aoti_owned_rows_as_size");
  // and, since packages return every output of the model: the outputs the program returns,
  // in order, before the gradient with respect to edge_vectors (space-separated), and which energy
  // sum that gradient is of: the energy output's owned rows, all its rows, or none (a model that
  // returns its own forces: an empty gradient). Absent: (energies, gradient of the owned rows).
  static constexpr std::string_view AOTI_OUTPUTS = contract_name("aoti_outputs");
  static constexpr std::string_view AOTI_GRADIENT = contract_name("aoti_gradient");
  static constexpr std::string_view AOTI_GRADIENT_OF_OWNED_ROWS =
      contract_list_item("aoti_gradients", 0);
  static constexpr std::string_view AOTI_GRADIENT_OF_ALL_ROWS =
      contract_list_item("aoti_gradients", 1);
  static constexpr std::string_view AOTI_NO_GRADIENT = contract_list_item("aoti_gradients", 2);
  // the formats' names, and what an AOTInductor package (a zip archive) starts with and holds
  // where a TorchScript archive does not
  static constexpr std::string_view AOTI_FORMAT = contract_name("aoti_format");
  static constexpr std::string_view TORCHSCRIPT_FORMAT = contract_name("torchscript_format");
  static constexpr std::string_view AOTI_PACKAGE_SIGNATURE =
      contract_name("aoti_package_signature");
  static constexpr std::string_view AOTI_PACKAGE_MARKER = contract_name("aoti_package_marker");
  // a hook package's metadata: the hook inputs it takes and the outputs it returns, in order
  static constexpr std::string_view AOTI_HOOK_INPUTS = contract_name("aoti_hook_inputs");
  static constexpr std::string_view AOTI_HOOK_OUTPUTS = contract_name("aoti_hook_outputs");
  // the spec's own JSON layout and the toolkit's MLIPSpec.to_dict() layout
  static constexpr int SPEC_VERSION = contract_integer("spec_version");
  static constexpr int TOOLKIT_SPEC_VERSION = contract_integer("toolkit_spec_version");

  // The schema of exchange op `name` ("name(arguments) -> result"), at compile time; empty where
  // the table has none.
  constexpr std::string_view exchange_op_schema(std::string_view name)
  {
    for (int k = 0;; ++k) {
      const std::string_view schema = contract_list_item("exchange_ops", k);
      if (schema.empty()) return {};
      if (schema.substr(0, name.size()) == name && schema.substr(name.size(), 1) == "(")
        return schema;
    }
  }

  // Whether operators of namespace `ns` are ATen's, TorchScript's own node kinds or the exchange
  // ops' (builtin_op_namespaces): none that an operator library registers.
  constexpr bool is_builtin_namespace(std::string_view ns)
  {
    for (int k = 0;; ++k) {
      const std::string_view builtin = contract_list_item("builtin_op_namespaces", k);
      if (builtin.empty()) return false;
      if (builtin == ns) return true;
    }
  }

  static_assert(CONTRACT_VERSION > 0 && !METADATA_FILE.empty() && !AOTI_ENERGY_OUTPUT.empty() &&
                    !AOTI_OWNED_ROWS.empty() && !AOTI_OWNED_ROWS_AS_SIZE.empty() &&
                    !AOTI_PACKAGE_SIGNATURE.empty() && !AOTI_PACKAGE_MARKER.empty() &&
                    !AOTI_FORMAT.empty() && !TORCHSCRIPT_FORMAT.empty() &&
                    !AOTI_HOOK_INPUTS.empty() && !AOTI_HOOK_OUTPUTS.empty() && SPEC_VERSION > 0 &&
                    TOOLKIT_SPEC_VERSION > 0 && is_builtin_namespace("aten") &&
                    is_builtin_namespace("quantized") && !is_builtin_namespace("ate"),
                "nvalchemi_contract_tables.h: a name the C++ core reads is missing from the table");

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
