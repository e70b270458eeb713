/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef FIX_CLASS
// clang-format off
FixStyle(nvalchemi/dd,FixNVAlchemiDD);
// clang-format on
#else

#ifndef LMP_FIX_NVALCHEMI_DD_H
#define LMP_FIX_NVALCHEMI_DD_H

#include "fix.h"

namespace LAMMPS_NS {

class FixNVAlchemiDD : public Fix {
 public:
  FixNVAlchemiDD(class LAMMPS *, int, char **);
  ~FixNVAlchemiDD() override;
  int setmask() override;
  void init() override;
  void setup(int) override;
  void setup_pre_force(int) override;
  void min_setup(int) override;
  void initial_integrate(int) override;
  void pre_force(int) override;
  void min_pre_force(int) override;
  void post_force(int) override;
  void min_post_force(int) override;
  void end_of_step() override;
  void post_run() override;
  double compute_scalar() override;
  double compute_vector(int) override;

  void write_restart(FILE *) override;
  void restart(char *) override;
  void grow_arrays(int) override;
  void copy_arrays(int, int, int) override;
  int pack_exchange(int, double *) override;
  int unpack_exchange(int, double *) override;
  int pack_restart(int, double *) override;
  void unpack_restart(int, int) override;
  int size_restart(int) override;
  int maxsize_restart() override;
  double memory_usage() override;

 protected:
  struct State;    // the features and their state (LibTorch stays out of this header)
  State *state;
  int *owner;    // rank that owned each atom at the previous step

  void count_owner_changes();
  void update_stats();
  void run_hook();
  void write_snapshot();
  void request_sampled_energy();
  bool due(int every) const;
};

}    // namespace LAMMPS_NS

#endif
#endif
