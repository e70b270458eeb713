/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the model deviation of a committee of models.
------------------------------------------------------------------------- */

#include "nvalchemi_outputs_committee.h"

#include <algorithm>
#include <cmath>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // population standard deviation of the members' values
    double deviation(const std::vector<double> &values)
    {
      double mean = 0.0;
      for (double v : values) mean += v;
      mean /= static_cast<double>(values.size());
      double variance = 0.0;
      for (double v : values) variance += (v - mean) * (v - mean);
      return std::sqrt(variance / static_cast<double>(values.size()));
    }
  }    // namespace

  void force_deviation(const std::vector<const double *> &forces, int64_t atoms, double *out)
  {
    const size_t members = forces.size();
    std::vector<double> component(members);
    for (int64_t i = 0; i < atoms; ++i) {
      double squares = 0.0;
      for (int d = 0; d < 3; ++d) {
        for (size_t k = 0; k < members; ++k) component[k] = forces[k][3 * i + d];
        const double s = deviation(component);
        squares += s * s;
      }
      out[i] = std::sqrt(squares);
    }
  }

  std::array<double, 3> virial_deviation(const std::vector<std::array<double, 6>> &virials,
                                         double atoms)
  {
    // the 9 components in row-major order, as Voigt indices
    static constexpr int FULL[9] = {0, 3, 4, 3, 1, 5, 4, 5, 2};
    std::vector<double> component(virials.size());
    double largest = 0.0, smallest = HUGE_VAL, squares = 0.0;
    for (int c : FULL) {
      for (size_t k = 0; k < virials.size(); ++k) component[k] = virials[k][c] / atoms;
      const double s = deviation(component);
      largest = std::max(largest, s);
      smallest = std::min(smallest, s);
      squares += s * s;
    }
    return {largest, smallest, std::sqrt(squares) / 3.0};
  }

  double energy_deviation(const std::vector<double> &energies, double atoms)
  {
    std::vector<double> per_atom(energies.size());
    for (size_t k = 0; k < energies.size(); ++k) per_atom[k] = energies[k] / atoms;
    return deviation(per_atom);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
