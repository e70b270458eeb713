/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: one rank's step, without LAMMPS: the rank graph (where it is built and kept:
   nvalchemi_rank_graph.h), the graph the halo mode gives the model, static shapes, the model
   call with its exchange ops, the outputs in rows of the rank's atoms and what is consolidated
   from them. pair_style nvalchemi and nvalchemi/kk drive it in phases, and do between them what
   needs LAMMPS (the memory check, the exchange calls' checks, logs, errors, tallies).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_STEP_ENGINE_H
#define LMP_NVALCHEMI_STEP_ENGINE_H

#include "nvalchemi_outputs.h"
#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_pair_model.h"
#include "nvalchemi_rank_graph.h"
#include "nvalchemi_rank_graph_build.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mpi.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  class AtomComm;
  class Halo;

  // The last step of a rank. Wall times in seconds: the model's forward and backward without
  // the exchange ops it made; the exchange ops; glue, the rest of the step (graph and tensor
  // building, conversion of the outputs, consolidation, tallies). Its phases: graph (and
  // padding), tensors (inputs made, outputs converted), forward and backward (exchange calls in
  // them included), tally (consolidation into the run's energy, forces and virial).
  struct StepSummary {
    double model = 0.0, exchange = 0.0, glue = 0.0;
    double graph = 0.0, tensors = 0.0, forward = 0.0, backward = 0.0, tally = 0.0;
    int64_t edges = 0;
  };

  // What the spec of a model does not declare, found alike on every rank: the caller may stop
  // every rank with a collective. (A model's or its outputs' failure on one rank is any other
  // std::exception, OutputError among them.)
  class CollectiveError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // The atom ID of a row of the rank graph (messages that name atoms; halo mode gp's graph).
  using RowIds = std::function<int64_t(int64_t row)>;

  // A pair style's model (PairModel: loaded by setup_pair_model) and the steps it runs.
  class StepEngine : public PairModel {
   public:
    StepEngine();
    ~StepEngine();
    StepEngine(const StepEngine &) = delete;
    StepEngine &operator=(const StepEngine &) = delete;

    // After a model is loaded: where its graphs are built (a resident builder keeps them where
    // the model runs), the halo mode's object for the ranks of `world` (exchanges through
    // `atoms`; `atom_ids`: LAMMPS keeps atom IDs), static shapes and cached outputs forgotten.
    void use(std::unique_ptr<RankGraph> builder, AtomComm &atoms, MPI_Comm world, bool atom_ids);
    double volume = 0.0;    // of the periodic cell of the evaluated configuration
    // The halo mode's object made again (atom IDs kept or not), the builder kept.
    void remake_halo(AtomComm &atoms, MPI_Comm world, bool atom_ids);
    Halo &halo() const { return *halo_mode; }
    RankGraph &rank_graph() const { return *builder; }
    Graph &graph() { return rank; }
    const ModelOutputs &outputs() const { return out; }
    double cutoff = 0.0;                       // in the run's units
    std::vector<int> atomic_number_of_type;    // [ntypes+1], 0 for NULL types; pair_coeff's
    // force evaluations of the run so far (the same count on every rank), and the one whose
    // configuration the model last ran on
    int64_t force_calls = 0, evaluated_call = -1;

    // ---- one evaluation, in phases ----
    // The rank graph from `atoms` and `list`, and the graph the model sees (collective where
    // the halo mode's graph spans ranks). `list_build` tells the neighbor list apart from those
    // before it (the caller's count of runs, the count of list builds in the run): only a new
    // list changes atoms' types, indices and ghosts. Throws std::runtime_error.
    Graph &build(const AtomsView &atoms, const NeighborView &list,
                 const std::array<int64_t, 2> &list_build, const RowIds &ids);
    // whether the last build took a new neighbor list
    bool list_was_new() const { return list_new; }
    // The graph's values on the host (for the memory check's sample, host code).
    void graph_to_host() { builder->to_host(rank); }
    // Static shapes: `model_graph` padded to capacities that only grow, the same on every rank
    // of `world` (grown together from the largest need: collective). True when they grew; then
    // `need` holds the largest rows and edges any rank needed.
    bool pad_to_capacity(Graph &model_graph, MPI_Comm world, int64_t need[2]);
    int64_t row_capacity() const { return rows_padded; }
    int64_t edge_capacity() const { return edges_padded; }
    // The model call on `model_graph` with its exchange ops (the halo's exchanger, its counts
    // restarted). Throws the model's error, unless the ranks' exchange calls mismatched (the
    // caller's check of them, check_exchange_calls, says where). With `cuda_graph`, the calls
    // are captured once the ranks agree that one made no exchange call.
    void call_model(const Graph &model_graph, const Cell &cell);
    // After the call's checks: the outputs in rows of the rank graph, the framework's outputs
    // provided, on the host when `host_outputs` (or a gradient is not finite), and checked
    // finite (throws OutputError naming the atom). Counts the evaluation; fills last_step()
    // but its glue and tally.
    void finish(bool host_outputs, const RowIds &ids);
    int64_t evaluations() const { return evaluation_count; }
    StepSummary &last_step() { return summary; }
    // Whether each phase waits for the device (fix nvalchemi/dd's phase times).
    void synchronize_phases(bool on);

    // ---- what the last evaluation gives ----
    RankResult result() const { return {spec, share, rank, out, volume, nprocs}; }
    // Its energy per atom added to `eatom` (NVAlchemi::add_atom_energies); its forces through
    // `consumer` (consolidate_forces) and per-atom virials added to `vatom` unless it is null.
    // Throw CollectiveError where the spec does not declare what they need.
    void add_atom_energies(double *eatom) const;
    void tally_forces(ForceConsumer &consumer, double *const *vatom) const;
    // The outputs and the graph on the host (host code reads them).
    void to_host() { builder->outputs_to_host(rank, out, true); }
    // A model output consolidated as the spec says, once per evaluation (collective): `width`
    // values per owned atom, or `size` global values. Throws CollectiveError when the spec does
    // not declare it so or the model has not run, OutputError (rank-local) when its values are
    // wrong.
    const double *consolidated(const std::string &name, bool peratom, int n, AtomComm &atoms);
    // scratch of [rows][3] for consolidation
    std::vector<double> row_forces;
    // The model on a whole system in one process (reference_contribution): `x` [natoms][3],
    // LAMMPS types `type`, in `cell`.
    Contribution reference(const std::vector<double> &x, const std::vector<int> &type,
                           const Cell &cell);

    // bytes held by the step (graphs, outputs, the halo mode's), not the model's
    double memory_bytes() const;

   private:
    int nprocs = 1;
    std::array<int64_t, 5> list_taken{};    // list_build, the atoms' and the list's sizes
    bool list_new = false;
    std::unique_ptr<RankGraph> builder;
    std::unique_ptr<Halo> halo_mode;
    Graph rank;
    std::vector<int> atom_row;
    ModelOutputs out;
    int64_t rows_padded = 0, edges_padded = 0;
    int64_t evaluation_count = 0;
    bool synchronized = false;
    StepSummary summary;
    struct Consolidated {
      std::vector<double> values;
      int64_t evaluation = -1;
    };
    std::map<std::string, Consolidated> cached;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
