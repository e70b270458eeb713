/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef COMPUTE_CLASS
// clang-format off
ComputeStyle(nvalchemi/atom,ComputeNVAlchemiAtom);
// clang-format on
#else

#ifndef LMP_COMPUTE_NVALCHEMI_ATOM_H
#define LMP_COMPUTE_NVALCHEMI_ATOM_H

#include "compute.h"

namespace LAMMPS_NS {

class ComputeNVAlchemiAtom : public Compute {
 public:
  ComputeNVAlchemiAtom(class LAMMPS *, int, char **);
  ~ComputeNVAlchemiAtom() override;
  void init() override;
  void compute_peratom() override;
  double memory_usage() override;

 private:
  char *output;    // name of the model output
  int width;       // values per atom: 1 gives a per-atom vector, more a per-atom array
  int nmax;
  class PairNVAlchemi *pair;
};

}    // namespace LAMMPS_NS

#endif
#endif
