/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef COMPUTE_CLASS
// clang-format off
ComputeStyle(nvalchemi/global,ComputeNVAlchemiGlobal);
// clang-format on
#else

#ifndef LMP_COMPUTE_NVALCHEMI_GLOBAL_H
#define LMP_COMPUTE_NVALCHEMI_GLOBAL_H

#include "compute.h"

namespace LAMMPS_NS {

class ComputeNVAlchemiGlobal : public Compute {
 public:
  ComputeNVAlchemiGlobal(class LAMMPS *, int, char **);
  ~ComputeNVAlchemiGlobal() override;
  void init() override;
  double compute_scalar() override;
  void compute_vector() override;

 private:
  char *output;    // name of the model output
  int size;        // number of values: 1 gives a global scalar, more a global vector
  class PairNVAlchemi *pair;
};

}    // namespace LAMMPS_NS

#endif
#endif
