/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef COMPUTE_CLASS
// clang-format off
ComputeStyle(nvalchemi/deviation,ComputeNVAlchemiDeviation);
// clang-format on
#else

#ifndef LMP_COMPUTE_NVALCHEMI_DEVIATION_H
#define LMP_COMPUTE_NVALCHEMI_DEVIATION_H

#include "compute.h"

#include <vector>

namespace LAMMPS_NS {

class ComputeNVAlchemiDeviation : public Compute {
 public:
  ComputeNVAlchemiDeviation(class LAMMPS *, int, char **);
  ~ComputeNVAlchemiDeviation() override;
  void init() override;
  void compute_vector() override;
  void compute_peratom() override;
  double memory_usage() override;

 private:
  std::vector<class PairNVAlchemi *> members;    // the committee: every pair_style nvalchemi
  bigint evaluated = -1;                         // the force evaluation the deviations belong to
  int nmax = 0;
  bool warned_virial = false;
  void evaluate();
};

}    // namespace LAMMPS_NS

#endif
#endif
