/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef PAIR_CLASS
// clang-format off
PairStyle(nvalchemi,PairNVAlchemi);
// clang-format on
#else

#ifndef LMP_PAIR_NVALCHEMI_H
#define LMP_PAIR_NVALCHEMI_H

#include "pair.h"

namespace LAMMPS_NS {

class PairNVAlchemi : public Pair {
 public:
  PairNVAlchemi(class LAMMPS *);
  ~PairNVAlchemi() override;

  void compute(int, int) override;
  void settings(int, char **) override;
  void coeff(int, char **) override;
  void init_style() override;
  double init_one(int, int) override;
  double memory_usage() override;

 protected:
  struct State;    // model, metadata and per-step buffers (LibTorch stays out of this header)
  State *state;
  double cutoff;

  virtual void allocate();
  void load_model(const char *file);
};

}    // namespace LAMMPS_NS

#endif
#endif
