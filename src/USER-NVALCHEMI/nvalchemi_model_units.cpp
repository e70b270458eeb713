/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the factors between LAMMPS' physical unit styles, and what they convert.
------------------------------------------------------------------------- */

#include "nvalchemi_model_units.h"

#include "nvalchemi_contract_tables.h"
#include "nvalchemi_spec.h"

#include "json.h"

#include <stdexcept>
#include <string>
#include <vector>

using LAMMPS_NS::json;

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // A physical unit style of LAMMPS (update.cpp, Update::set_units): how many of its length
    // units make one Angstrom (LAMMPS' force->angstrom) and how many of its energy units one
    // electron volt, as the contract's table gives them (nvalchemi_contract_tables.h)
    struct UnitStyle {
      std::string name;
      double per_angstrom, per_ev;
    };

    const std::vector<UnitStyle> &physical_styles()
    {
      static const std::vector<UnitStyle> styles = [] {
        std::vector<UnitStyle> found;
        const json tables = json::parse(CONTRACT_TABLES_JSON);
        for (const json &style : tables.at("unit_styles"))
          if (style.contains("per_angstrom"))
            found.push_back({style.at("name").get<std::string>(),
                             style.at("per_angstrom").get<double>(),
                             style.at("per_ev").get<double>()});
        return found;
      }();
      return styles;
    }

    const UnitStyle *find_style(const std::string &name)
    {
      for (const UnitStyle &style : physical_styles())
        if (name == style.name) return &style;
      return nullptr;
    }

    // "lj, real, metal, ..." (every style of the table)
    std::string style_names(const char *last_separator)
    {
      const json styles = json::parse(CONTRACT_TABLES_JSON).at("unit_styles");
      std::string names;
      for (size_t i = 0; i < styles.size(); ++i)
        names += (i == 0                       ? ""
                      : i + 1 == styles.size() ? last_separator
                                               : ", ") +
            styles[i].at("name").get<std::string>();
      return names;
    }
  }    // namespace

  UnitConversion unit_conversion(const std::string &model_units, const std::string &run_units,
                                 const MLIPSpec &spec)
  {
    UnitConversion c;
    const UnitStyle *model = find_style(model_units);
    if (!model && model_units != "lj")
      throw std::invalid_argument("declares units '" + model_units +
                                  "', which is not a LAMMPS unit style (" + style_names(", ") +
                                  "): export it again with one of them");
    if (model_units == run_units) return c;
    if (model_units == "lj" || run_units == "lj")
      throw std::invalid_argument(
          "works in '" + model_units + "' units but this run uses 'units " + run_units +
          "': lj units are reduced units with no conversion to physical ones, so a model in lj "
          "units runs only with 'units lj' and a model in physical units never does; use 'units " +
          model_units + "' before the box is defined, or export the model for the run's units");
    const UnitStyle *run = find_style(run_units);
    if (!run)
      throw std::invalid_argument("cannot be converted to 'units " + run_units +
                                  "': the package knows the factors of " + style_names(" and "));
    c.length = model->per_angstrom / run->per_angstrom;
    c.energy = run->per_ev / model->per_ev;
    if (!c.converts()) return c;

    // the outputs whose dimension the spec's roles say; any other stays in the model's units
    c.outputs["energy"] = c.energy;
    c.outputs["virial"] = c.energy;
    c.outputs["forces"] = c.force();
    c.outputs["stress"] = c.energy * c.length * c.length * c.length;
    if (spec.node_energy_key) c.outputs[*spec.node_energy_key] = c.energy;
    if (spec.node_virial_key) c.outputs[*spec.node_virial_key] = c.energy;
    return c;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
