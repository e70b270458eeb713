/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model deviation of a committee of models (LAMMPS-free), as DeePMD-kit
   defines it (dp model-devi, pair_style deepmd with several models): population standard
   deviations over the members of each atom's force, of the virial and of the energy, the
   latter two per atom.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_OUTPUTS_COMMITTEE_H
#define LMP_NVALCHEMI_OUTPUTS_COMMITTEE_H

#include <array>
#include <cstdint>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Each atom's force deviation sqrt(<|F_k - <F>|^2>) over the members k: `forces` holds one
  // [atoms][3] array per member; `deviation` [atoms].
  void force_deviation(const std::vector<const double *> &forces, int64_t atoms, double *deviation);

  // The deviation of each of the 9 components of W/atoms over the members (virials in LAMMPS'
  // order xx yy zz xy xz yz, symmetric): {largest, smallest, norm of the 9 / 3}.
  std::array<double, 3> virial_deviation(const std::vector<std::array<double, 6>> &virials,
                                         double atoms);

  // The deviation of E/atoms over the members.
  double energy_deviation(const std::vector<double> &energies, double atoms);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
