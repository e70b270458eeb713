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
  struct Device;
  struct ModelOutputs;
  class MeasuredExchanger;
  class AtomComm;
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
  // nvalchemi/global. Collective: every rank must call. peratom_output returns `width` values
  // per owned atom (row-major, atoms [0, nlocal)); global_output returns `size` values.
  const double *peratom_output(const char *name, int width);
  const double *global_output(const char *name, int size);

  // Committee members (compute nvalchemi/deviation). Collective: the model run on the
  // configuration of the run's last force evaluation, unless it ran on it already (a member
  // that drives the dynamics always has); then decomposed_contribution gives its result.
  void evaluate_configuration();
  // false for `drive no`: the member adds nothing to LAMMPS' energy, forces and virial
  bool drives_dynamics() const;
  // force evaluations (compute() calls) so far: the same count on every rank
  bigint force_evaluations() const;

  // For fix nvalchemi/dd validate. Collective: this run's last evaluation, consolidated over
  // ranks; forces of owned atoms [0, nlocal).
  void decomposed_contribution(NVAlchemi::Contribution &);
  // Rank-local: the model on a whole system (positions [natoms][3], LAMMPS types) in one
  // process, periodic images as edge shifts, no ghost atoms; forces in input order.
  void reference_contribution(const std::vector<double> &x, const std::vector<int> &type,
                              NVAlchemi::Contribution &);

  // This rank's last step. Wall times in seconds: the model's forward and backward without the
  // exchange ops it made; the exchange ops; glue, the rest of compute() (graph and tensor
  // building, conversion of the outputs, consolidation, tallies). Its phases: graph (and
  // padding), tensors (inputs made, outputs converted), forward and backward (exchange calls in
  // them included), tally (consolidation into LAMMPS' energy, forces and virial).
  struct StepSummary {
    double model = 0.0, exchange = 0.0, glue = 0.0;
    double graph = 0.0, tensors = 0.0, forward = 0.0, backward = 0.0, tally = 0.0;
    bigint edges = 0;
  };
  const StepSummary &last_step() const { return summary; }
  // Whether the step waits for the device at the end of each phase, so that last_step()'s
  // phase times hold the device's work (fix nvalchemi/dd, which reports them, asks at each
  // init; init_style clears it). No effect on the CPU.
  void synchronize_phases(bool on);
  // element of each atom type (0: NULL), [ntypes+1]; empty before pair_coeff
  const std::vector<int> &atomic_number_of_type() const;
  // the device this rank runs the model on (fix nvalchemi/dd runs its hook there too)
  const NVAlchemi::Device &device() const;

 protected:
  struct State;    // model, spec and per-step buffers (LibTorch stays out of this header)
  struct Tally;                // the consolidated forces and virials into LAMMPS' arrays
  State *state;
  double cutoff;
  StepSummary summary;
  double saved_cutghostuser;    // comm_modify cutoff before a deep halo raised it; < 0: untouched

  virtual void allocate();
  // what a variant does before the model runs on the current configuration (the Kokkos style
  // syncs the atoms' arrays)
  virtual void begin_evaluation() {}
  // what a variant (the Kokkos style) does its own way: the neighbor list it asks for, this
  // rank's graph built from it, and the edge forces (with their virial, when `virial` is not
  // null) added into the atoms' forces
  virtual void request_neighbor_list();
  virtual void build_rank_graph(NVAlchemi::Graph &);
  virtual void add_edge_forces(const NVAlchemi::Graph &, const NVAlchemi::ModelOutputs &,
                               double *virial);
  // the global virial of framework forces from the edges (pair_modify nofdotr implied), where
  // the graph is kept off the host (graph device, the Kokkos variant)
  virtual bool virial_from_edges() const;
  // the exchange ops' rows of `rank_graph` through `atoms`, this rank's per-atom communication
  // (halo modes local, layerwise, deep; `owned_rows_complete` as NVAlchemi::RowExchange takes
  // it): rows in host memory here
  virtual std::unique_ptr<NVAlchemi::MeasuredExchanger>
  make_row_exchange(const NVAlchemi::Graph &rank_graph, NVAlchemi::AtomComm &atoms,
                    bool owned_rows_complete);
  // A rank graph kept with the edge gradients on the model's device (a resident graph: graph
  // device, NVAlchemi::DeviceGraph, or the Kokkos variant's) is copied to the host here: the
  // graph's buffers before the model call (graph_to_host); after it, the graph and the outputs'
  // edge_gradients (step_to_host) when `needed` by host code or when an edge gradient is not
  // finite (the check names it). Idempotent within a step; nothing to do for a graph built on
  // the host.
  virtual void graph_to_host(NVAlchemi::Graph &);
  // `graph` padded to `rows` and `edges` (NVAlchemi::pad_graph), where it lives
  virtual void pad_graph(NVAlchemi::Graph &graph, int64_t rows, int64_t edges);
  virtual void step_to_host(NVAlchemi::Graph &, NVAlchemi::ModelOutputs &, bool needed);
  bool differentiates_energy() const;
  double evaluate_model(bool host_outputs);
  void apply_model();
  void make_halo();
  const double *consolidated_output(const char *name, bool peratom, int n);
  NVAlchemi::Graph &halo_model_graph();
  void check_memory(const NVAlchemi::Graph &model_graph);
  void pad_to_capacity(NVAlchemi::Graph &);
  void tally_energy();
  void tally_forces();
  void report_cuda_graph(int captures_before, const NVAlchemi::Graph &model_graph);
};

}    // namespace LAMMPS_NS

#endif
#endif
