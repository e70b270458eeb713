/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the factors between LAMMPS' physical unit styles, and what they convert.
------------------------------------------------------------------------- */

#include "nvalchemi_units.h"

#include "nvalchemi_spec.h"

#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // A physical unit style of LAMMPS (update.cpp, Update::set_units): how many of its length
    // units make one Angstrom (LAMMPS' force->angstrom) and how many of its energy units one
    // electron volt.
    struct UnitStyle {
      const char *name;
      double per_angstrom, per_ev;
    };

    // 1 eV = 23.060549 kcal/mol is LAMMPS' own metal <-> real factor (utils::
    // get_conversion_factor) and 1.6021765e-19 J its elementary charge of units si (force->
    // qelectron); micro's energy unit is pg um^2/us^2 = 1e-15 J, nano's ag nm^2/ns^2 = 1e-21 J;
    // electron's Bohr radius (0.52917720859 A) and Hartree (27.21138386 eV) are CODATA 2006,
    // as LAMMPS' constants of that style (force->angstrom 1.88972612, boltz 3.16681534e-6).
    constexpr UnitStyle STYLES[] = {
        {"metal", 1.0, 1.0},
        {"real", 1.0, 23.060549},
        {"si", 1.0e-10, 1.6021765e-19},
        {"cgs", 1.0e-8, 1.6021765e-12},
        {"electron", 1.0 / 0.52917720859, 1.0 / 27.21138386},
        {"micro", 1.0e-4, 1.6021765e-4},
        {"nano", 1.0e-1, 160.21765},
    };

    const UnitStyle *find_style(const std::string &name)
    {
      for (const UnitStyle &style : STYLES)
        if (name == style.name) return &style;
      return nullptr;
    }
  }    // namespace

  UnitConversion unit_conversion(const std::string &model_units, const std::string &run_units,
                                 const MLIPSpec &spec)
  {
    UnitConversion c;
    const UnitStyle *model = find_style(model_units);
    if (!model && model_units != "lj")
      throw std::invalid_argument("declares units '" + model_units +
                                  "', which is not a LAMMPS unit style (lj, real, metal, si, cgs, "
                                  "electron, micro, nano): export it again with one of them");
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
                                  "': the package knows the factors of lj, real, metal, si, cgs, "
                                  "electron, micro and nano");
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
