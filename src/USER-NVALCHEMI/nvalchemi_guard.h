/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the force check of fix nvalchemi/dd guard on one rank's atoms: non-finite
   forces, forces above a limit (named, or clamped to it). Plain C++17.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_GUARD_H
#define LMP_NVALCHEMI_GUARD_H

#include <cstdint>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct ForceCheck {
    int64_t non_finite = 0, too_large = 0, clamped = 0;    // counts on this rank
    std::vector<int> non_finite_atoms, too_large_atoms;    // the first `named` of each
  };

  // Checks the forces f[i] of the atoms i < n with mask[i] & groupbit; `max_force` 0 checks
  // finiteness only. With `clamp`, forces above max_force are scaled to it in place (direction
  // kept) instead of being reported.
  ForceCheck check_forces(double **f, const int *mask, int groupbit, int n, double max_force,
                          bool clamp, int named);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
