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

#include <memory>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {
  struct Contribution;
  struct Graph;
  class RankGraph;
  class StepEngine;
}    // namespace NVAlchemi

class PairNVAlchemi : public Pair {
 public:
  PairNVAlchemi(class LAMMPS *);
  ~PairNVAlchemi() override;

  void compute(int, int) override;
  void settings(int, char **) override;
  void coeff(int, char **) override;
  void init_style() override;
  double init_one(int, int) override;
  int pack_forward_comm(int, int *, double *, int, int *) override;
  void unpack_forward_comm(int, int, double *) override;
  int pack_reverse_comm(int, int, double *) override;
  void unpack_reverse_comm(int, int *, double *) override;
  double memory_usage() override;

  // every pair_style nvalchemi of the run (the sub-styles of a hybrid in order)
  static std::vector<PairNVAlchemi *> instances(class Force *force);

  // A model output consolidated as its spec says, for compute nvalchemi/atom and
  // nvalchemi/global. Collective: every rank must call. `peratom`: `n` values per owned atom
  // (row-major, atoms [0, nlocal)); else `n` global values.
  const double *consolidated_output(const char *name, bool peratom, int n);

  // Committee members (compute nvalchemi/deviation). Collective: the model run on the
  // configuration of the run's last force evaluation, unless it ran on it already (a member
  // that drives the dynamics always has); then decomposed_contribution gives its result.
  void evaluate_configuration();

  // For fix nvalchemi/dd validate. Collective: this run's last evaluation, consolidated over
  // ranks; forces of owned atoms [0, nlocal).
  void decomposed_contribution(NVAlchemi::Contribution &);
  // Rank-local: the model on a whole system (positions [natoms][3], LAMMPS types) in one
  // process, periodic images as edge shifts, no ghost atoms; forces in input order.
  void reference_contribution(const std::vector<double> &x, const std::vector<int> &type,
                              NVAlchemi::Contribution &);

  // The step engine: the model (its device, whether it drives the dynamics), the element of
  // each atom type, force evaluations so far, the last step's phase times, whether phases
  // wait for the device (nvalchemi_step_engine.h)
  NVAlchemi::StepEngine &engine() const;

 protected:
  struct State;    // the step engine and what the LAMMPS side keeps (LibTorch stays out)
  struct Tally;    // the consolidated forces and virials into LAMMPS' arrays
  State *state;
  double cutoff;
  double saved_cutghostuser;    // comm_modify cutoff before a deep halo raised it; < 0: untouched

  virtual void allocate();
  // What a variant (the Kokkos style) does its own way: syncs before the model runs on the
  // current configuration, the neighbor list it asks for, and where the rank graph is built and
  // kept (the step engine's RankGraph: on the host or, with graph device, on the model's device)
  virtual void begin_evaluation() {}
  virtual void request_neighbor_list();
  virtual std::unique_ptr<NVAlchemi::RankGraph> make_rank_graph();

 private:
  void apply_model();
  void use_halo();
  void evaluate_model(bool host_outputs);
  void tally_energy();
  void tally_forces();
  template <typename F> void stop_on_error(const char *what, F &&body);
};

}    // namespace LAMMPS_NS

#endif
#endif
