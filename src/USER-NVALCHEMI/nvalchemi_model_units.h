/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a model written in one LAMMPS unit style run in another: the factors between
   LAMMPS' physical unit styles, in one table, and what they convert
   (doc/Howto_nvalchemi_contract.rst, Units). Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_UNITS_H
#define LMP_NVALCHEMI_MODEL_UNITS_H

#include <map>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct MLIPSpec;

  // How a model's units meet the run's: the run's lengths (positions, edge vectors, cell) are
  // multiplied by `length` on their way into the model, its energy share by `energy` on the way
  // out, the share's gradient with respect to the edge vectors by both, and each output named in
  // `outputs` by its factor (outputs not named stay in the model's units).
  struct UnitConversion {
    double length = 1.0;    // model length units per run length unit
    double energy = 1.0;    // run energy units per model energy unit
    std::map<std::string, double> outputs;

    bool converts() const { return length != 1.0 || energy != 1.0; }
    // energy / length: forces and energy gradients, from the model's units to the run's
    double force() const { return energy * length; }
    // a length of the model's (its cutoff) in run units
    double run_length(double model_length) const { return model_length / length; }
    // the factor of output `name` (1 for one the package does not know the dimension of)
    double output(const std::string &name) const
    {
      const auto found = outputs.find(name);
      return found == outputs.end() ? 1.0 : found->second;
    }
  };

  // The conversion for a model in unit style `model_units` run in `run_units` (LAMMPS' names:
  // metal, real, si, cgs, electron, micro, nano; lj only with lj), with the factors of the
  // outputs of `spec` whose dimension the package knows: energies (the node energy key,
  // `energy`, the node virial key, `virial`), `forces` (energy/length) and `stress`
  // (energy/length^3). Throws std::invalid_argument saying what to do for a style LAMMPS does not
  // define or for lj units on one side only.
  UnitConversion unit_conversion(const std::string &model_units, const std::string &run_units,
                                 const MLIPSpec &spec);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
