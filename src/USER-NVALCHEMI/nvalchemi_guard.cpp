/* ----------------------------------------------------------------------
   USER-NVALCHEMI: force checks of fix nvalchemi/dd guard.
------------------------------------------------------------------------- */

#include "nvalchemi_guard.h"

#include <cmath>

namespace LAMMPS_NS {
namespace NVAlchemi {

  ForceCheck check_forces(double **f, const int *mask, int groupbit, int n, double max_force,
                          bool clamp, int named)
  {
    ForceCheck check;
    const double max_sq = max_force * max_force;
    for (int i = 0; i < n; ++i) {
      if (!(mask[i] & groupbit)) continue;
      const double fsq = f[i][0] * f[i][0] + f[i][1] * f[i][1] + f[i][2] * f[i][2];
      if (!std::isfinite(fsq)) {
        if (check.non_finite++ < named) check.non_finite_atoms.push_back(i);
      } else if (max_force > 0.0 && fsq > max_sq) {
        if (clamp) {
          const double scale = max_force / std::sqrt(fsq);
          for (int d = 0; d < 3; ++d) f[i][d] *= scale;
          ++check.clamped;
        } else if (check.too_large++ < named) {
          check.too_large_atoms.push_back(i);
        }
      }
    }
    return check;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
