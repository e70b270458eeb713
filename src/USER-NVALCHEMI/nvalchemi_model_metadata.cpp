/* ----------------------------------------------------------------------
   USER-NVALCHEMI: model metadata and the periodic table.
   Plain C++17 + the JSON library shipped with LAMMPS; no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#include "nvalchemi_model_metadata.h"

#include "json.h"

#include <set>
#include <stdexcept>

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

    const json &require(const json &obj, const char *key)
    {
      auto it = obj.find(key);
      if (it == obj.end()) throw std::invalid_argument(std::string("missing key '") + key + "'");
      return *it;
    }

    [[noreturn]] void wrong_type(const char *key, const char *expected)
    { throw std::invalid_argument(std::string("key '") + key + "' must be " + expected); }

    std::string require_string(const json &obj, const char *key)
    {
      const json &v = require(obj, key);
      if (!v.is_string()) wrong_type(key, "a string");
      return v.get<std::string>();
    }

    int require_int(const json &obj, const char *key)
    {
      const json &v = require(obj, key);
      if (!v.is_number_integer()) wrong_type(key, "an integer");
      return v.get<int>();
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

    static const std::set<std::string> known = {
        "contract_version", "cutoff", "species", "units", "dtype", "spec", "torch_version",
        "cuda_version"};
    for (const auto &item : root.items())
      if (!known.count(item.key())) throw std::invalid_argument("unknown key '" + item.key() + "'");

    ModelMetadata meta;
    meta.contract_version = require_int(root, "contract_version");
    if (meta.contract_version != CONTRACT_VERSION)
      throw std::invalid_argument("contract_version is " + std::to_string(meta.contract_version) +
                                  " but this build of USER-NVALCHEMI implements version " +
                                  std::to_string(CONTRACT_VERSION));

    const json &cutoff = require(root, "cutoff");
    if (!cutoff.is_number()) wrong_type("cutoff", "a number");
    meta.cutoff = cutoff.get<double>();
    if (!(meta.cutoff > 0.0)) throw std::invalid_argument("key 'cutoff' must be positive");

    const json &species = require(root, "species");
    if (!species.is_array() || species.empty())
      wrong_type("species", "a non-empty list of atomic numbers");
    for (const auto &z : species) {
      if (!z.is_number_integer() || z.get<int>() < 1 || z.get<int>() > NUM_ELEMENTS)
        wrong_type("species", "a non-empty list of atomic numbers (1..118)");
      meta.species.push_back(z.get<int>());
    }

    meta.units = require_string(root, "units");
    meta.dtype = require_string(root, "dtype");
    if (meta.dtype != "float64" && meta.dtype != "float32")
      throw std::invalid_argument("key 'dtype' must be \"float64\" or \"float32\", not \"" +
                                  meta.dtype + "\"");

    const json &spec = require(root, "spec");
    if (!spec.is_object())
      wrong_type("spec", "a JSON object (a preset name plus overrides, or a full spec)");
    meta.spec = MLIPSpec::from_json(spec.dump());
    if (root.contains("torch_version")) meta.torch_version = require_string(root, "torch_version");
    if (root.contains("cuda_version")) meta.cuda_version = require_string(root, "cuda_version");
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
