/* ----------------------------------------------------------------------
   USER-NVALCHEMI: model metadata and the periodic table.
   Plain C++17 + the JSON library shipped with LAMMPS; no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#include "nvalchemi_model_metadata.h"

#include "json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using LAMMPS_NS::json;

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    const char *const ELEMENTS[] = {
        "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si", "P",
        "S",  "Cl", "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn",
        "Ga", "Ge", "As", "Se", "Br", "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru", "Rh",
        "Pd", "Ag", "Cd", "In", "Sn", "Sb", "Te", "I",  "Xe", "Cs", "Ba", "La", "Ce", "Pr", "Nd",
        "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er", "Tm", "Yb", "Lu", "Hf", "Ta", "W",  "Re",
        "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra", "Ac", "Th",
        "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr", "Rf", "Db",
        "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og"};
    constexpr int NUM_ELEMENTS = sizeof(ELEMENTS) / sizeof(ELEMENTS[0]);

    [[noreturn]] void wrong_type(const char *key, const char *expected)
    { throw std::invalid_argument(std::string("key '") + key + "' must be " + expected); }

    // the table's metadata keys (nvalchemi_contract_tables.h)
    const json &metadata_keys()
    {
      static const json keys = json::parse(CONTRACT_TABLES_JSON).at("metadata_keys");
      return keys;
    }

    // a JSON integer that fits an int (nlohmann's integers are 64-bit, which get<int> truncates)
    bool is_int(const json &value)
    {
      if (!value.is_number_integer()) return false;
      if (value.is_number_unsigned())
        return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max());
      const int64_t v = value.get<int64_t>();
      return v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max();
    }

    // Checks `value` of key `key` as its entry of the table says; throws naming what is wrong.
    void check_value(const json &entry, const std::string &key, const json &value)
    {
      const std::string type = entry.at("type").get<std::string>();
      const char *name = key.c_str();
      if (type == "integer" && !is_int(value)) wrong_type(name, "an integer");
      if (type == "number" && !value.is_number()) wrong_type(name, "a number");
      if (type == "string" && !value.is_string()) wrong_type(name, "a string");
      if (type == "object" && !value.is_object())
        wrong_type(name, "a JSON object (a preset name plus overrides, or a full spec)");
      if (type == "atomic_numbers") {
        if (!value.is_array() || value.empty())
          wrong_type(name, "a non-empty list of atomic numbers");
        for (const json &z : value)
          if (!is_int(z) || z.get<int>() < 1 || z.get<int>() > NUM_ELEMENTS)
            wrong_type(name, "a non-empty list of atomic numbers (1..118)");
      }
      if (!entry.contains("check")) return;
      const json &check = entry.at("check");
      if (check == "positive" && !(value.get<double>() > 0.0 && std::isfinite(value.get<double>())))
        throw std::invalid_argument("key '" + key + "' must be positive and finite");
      if (check == "contract_version" && value.get<int>() != CONTRACT_VERSION)
        throw std::invalid_argument("contract_version is " + std::to_string(value.get<int>()) +
                                    " but this build of USER-NVALCHEMI implements version " +
                                    std::to_string(CONTRACT_VERSION));
      if (check.is_array() && std::find(check.begin(), check.end(), value) == check.end()) {
        std::string allowed;
        for (size_t i = 0; i < check.size(); ++i)
          allowed += (i == 0 ? "" : " or ") + check[i].dump();
        throw std::invalid_argument("key '" + key + "' must be " + allowed + ", not " +
                                    value.dump());
      }
      // "unit_style": where the units are converted (unit_conversion), which names the styles
    }
  }    // namespace

  ModelMetadata parse_metadata(const std::string &text)
  {
    json root;
    try {
      root = json::parse(text);
    } catch (json::exception &e) {
      throw std::invalid_argument(std::string("not valid JSON: ") + e.what());
    }
    if (!root.is_object()) throw std::invalid_argument("the top level must be a JSON object");

    for (const auto &item : root.items()) {
      const auto entry =
          std::find_if(metadata_keys().begin(), metadata_keys().end(), [&](const json &e) {
            return e.at("name") == item.key();
          });
      if (entry == metadata_keys().end())
        throw std::invalid_argument("unknown key '" + item.key() + "'");
    }
    for (const json &entry : metadata_keys()) {
      const std::string key = entry.at("name").get<std::string>();
      if (root.contains(key))
        check_value(entry, key, root.at(key));
      else if (entry.at("required").get<bool>())
        throw std::invalid_argument("missing key '" + key + "'");
    }

    ModelMetadata meta;
    meta.contract_version = root.at("contract_version").get<int>();
    meta.cutoff = root.at("cutoff").get<double>();
    meta.species = root.at("species").get<std::vector<int>>();
    meta.units = root.at("units").get<std::string>();
    meta.dtype = root.at("dtype").get<std::string>();
    meta.spec = MLIPSpec::from_json(root.at("spec").dump());
    if (root.contains("torch_version")) meta.torch_version = root.at("torch_version");
    if (root.contains("cuda_version")) meta.cuda_version = root.at("cuda_version");
    return meta;
  }

  int atomic_number(const std::string &symbol)
  {
    for (int i = 0; i < NUM_ELEMENTS; ++i)
      if (symbol == ELEMENTS[i]) return i + 1;
    return 0;
  }

  std::string element_symbol(int z)
  { return (z >= 1 && z <= NUM_ELEMENTS) ? ELEMENTS[z - 1] : "?"; }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
