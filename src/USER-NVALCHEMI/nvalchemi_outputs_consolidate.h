/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the rules that turn one rank's model outputs into its part of the
   decomposed result: which energy each rank differentiates, which rows of an output carry its
   consolidated value, and the checks on what a model returned.
   Plain C++17: no LAMMPS classes, no LibTorch, no MPI (doc/Howto_nvalchemi_spec.rst); what
   is summed over ranks goes through an AtomComm.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_OUTPUTS_CONSOLIDATE_H
#define LMP_NVALCHEMI_OUTPUTS_CONSOLIDATE_H

#include "nvalchemi_outputs.h"
#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_spec.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  class AtomComm;

  // A model output that is missing or has the wrong shape on this rank. Raised on rank-local
  // data, so the caller must stop every rank without a collective (LAMMPS' error->one).
  class OutputError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // The toolkit's consolidation rule (output_consolidation.py), in LAMMPS terms:
  //   per_node  owned_only               owned rows, as they are
  //   per_node  all_reduce               ghost rows summed into their owners
  //   per_node  none                     owned rows; an autograd output: as all_reduce
  //   per_graph all_reduce               summed over ranks
  //   per_graph none / owned_only        replicated: counted once
  // and an autograd output (OutputSpec::autograd) other than per_node owned_only is divided
  // by nprocs first; a per_graph autograd output is then summed over ranks.

  // A per-node output whose ghost rows are partial contributions owed to their owners.
  bool sums_ghost_rows(const OutputSpec &spec);

  // Factor on every row of a per-node output: 1/nprocs for an autograd output, else 1.
  double row_weight(const OutputSpec &spec, int nprocs);

  // Weight of a per-graph value in this rank's part of a sum over ranks: a partial counts as
  // it is; a value replicated on every rank counts 1/nprocs, so the ranks together count it
  // once; an autograd value (nprocs times this rank's part) counts 1/nprocs.
  double rank_sum_weight(const OutputSpec &spec, int nprocs);

  // Whether the ranks' values of a per-graph output are summed (weighted by rank_sum_weight)
  // rather than replicated (rank 0's copy is the value).
  bool sums_over_ranks(const OutputSpec &spec);

  // Rows of a per-node output that carry its consolidated value: all rows for partials that
  // the owners sum, else the owned rows.
  int64_t consolidated_rows(const OutputSpec &spec, const Graph &graph);

  // The energy this rank sums (and differentiates unless the model brings its forces), for a
  // resolved spec (each rank's shares sum to the total energy). Throws std::invalid_argument
  // when the spec does not declare what its force strategy needs.
  EnergyShare energy_share(const MLIPSpec &spec, int nprocs);

  // "atomic_energies [12], forces [12,3]": what the model returned, for error messages.
  std::string describe_outputs(const ModelOutputs &outputs);

  // The output `key` with `width` values on each of the graph's rows. Throws OutputError naming
  // what the model returned otherwise.
  const OutputTensor &row_output(const ModelOutputs &outputs, const std::string &key,
                                 const Graph &graph, int64_t width, const std::string &purpose);

  // The output `key` with exactly `size` values. Throws OutputError otherwise.
  const OutputTensor &sized_output(const ModelOutputs &outputs, const std::string &key,
                                   int64_t size, const std::string &purpose);

  // Outputs the framework provides when a model does not return them: a per-graph 'energy'
  // declared all_reduce is this rank's energy share when the share comes from node energies.
  void provide_framework_outputs(const MLIPSpec &spec, const EnergyShare &share,
                                 ModelOutputs &outputs);

  // Whether the spec declares a global virial of the model's own ('virial' or the toolkit's
  // 'stress', per_graph), which add_model_virial reads.
  bool declares_model_virial(const MLIPSpec &spec);

  // This rank's part of the model's own global virial (LAMMPS order xx yy zz xy xz yz, added
  // to `virial`), from the first output the spec declares of: 'virial' [1,3,3] per_graph; the
  // toolkit's 'stress' [1,3,3] = -W / volume per_graph; the per-atom virials of node_virial_key
  // [N,3,3] per_node, summed over their consolidated rows (the toolkit's node_virial_key
  // reduction). Returns false when the spec declares none of them; throws OutputError, naming
  // `purpose`, when the declared output is missing.
  bool add_model_virial(const MLIPSpec &spec, const Graph &graph, const ModelOutputs &outputs,
                        double volume, int nprocs, const std::string &purpose, double virial[6]);

  // A model result that is not finite on this rank: its energy share, its edge gradients on the
  // host (the framework's forces) or, with force strategy 'model', the forces on the rows the
  // tally reads.
  // Throws OutputError naming the first atom affected (`atom_id` of a row) and how many values
  // are not finite; returns quietly otherwise.
  void check_finite(const MLIPSpec &spec, const EnergyShare &share, const Graph &graph,
                    const ModelOutputs &outputs, const std::function<int64_t(int64_t)> &atom_id);

  // One rank's result of its last evaluation, as the consolidation reads it.
  struct RankResult {
    const MLIPSpec &spec;
    const EnergyShare &share;
    const Graph &graph;    // rows of the rank's atoms (a halo mode maps the model's rows back)
    const ModelOutputs &outputs;
    double volume;    // of the periodic cell
    int nprocs;
  };

  // Where a rank's forces and virial of one evaluation go: LAMMPS' forces and virial (the pair
  // style's tallies, which move the atoms) or a Contribution (fix nvalchemi/dd validate).
  // consolidate_forces decides every row, weight and virial term; a consumer only adds them up.
  class ForceConsumer {
   public:
    virtual ~ForceConsumer() = default;
    // Framework forces from the outputs' edge gradients (on the host, or on the device for a
    // resident graph): edge e, r = x_receiver - x_sender (receiver edges[2e+1], sender
    // edges[2e]), with energy gradient g[3e..3e+2], pulls -g on its receiver's row and +g on its
    // sender's (ghost rows: partials for their owners); with `virial` not null, their virial
    // -r (x) g summed over the edges (add_edge_virial) is added to it.
    virtual void edge_forces(const Graph &graph, const ModelOutputs &outputs, double *virial) = 0;
    // The model's own forces: weight * forces[3r..3r+2] on rows [0, rows).
    virtual void row_forces(const Graph &graph, const double *forces, int64_t rows,
                            double weight) = 0;
    // Whether the consumer takes this rank's part of the global virial.
    virtual bool wants_virial() const = 0;
    // This rank's part of the global virial (xx yy zz xy xz yz).
    virtual void virial(const double part[6]) = 0;
  };

  // This rank's forces and global virial of one evaluation, by the spec: from the edge
  // gradients (the virial -r (x) g summed over edges) when the rank's energy share is
  // differentiated, else the model's forces on their consolidated rows with their row weight
  // and the model's virial (add_model_virial). Returns false when the consumer wants a virial
  // that the spec does not declare. Throws OutputError.
  bool consolidate_forces(const RankResult &result, ForceConsumer &consumer);

  // Per-atom energies and virials: what the pair style tallies into LAMMPS' eatom[atom] and
  // vatom[atom][6] (ghost atoms too, whose partials LAMMPS sums into their owners).
  // The node energies (node_energy_key) on their consolidated rows. Returns false when the spec
  // does not declare them per_node. Throws OutputError.
  bool add_atom_energies(const RankResult &result, double *eatom);
  // With a differentiated energy share, each edge's -r (x) g split evenly between its two atoms;
  // else the model's per-atom virials (node_virial_key [N,3,3]) on their consolidated rows with
  // their row weight. Returns false when the spec does not declare those per_node. Throws
  // OutputError.
  bool add_atom_virials(const RankResult &result, double *const *vatom);

  // One evaluation's energy, forces and virial: a rank's part, or (summed over ranks) the
  // decomposed result that fix nvalchemi/dd validate compares with the single-process reference.
  struct Contribution {
    double energy = 0.0;
    bool has_virial = false;    // false: a model with its own forces and no 'virial' output
    double virial[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};    // xx yy zz xy xz yz
    std::vector<double> forces;                           // [atoms][3]
    // largest force term (edge-gradient component, or model force component): the scale that
    // forces cancelling to zero, as in a perfect crystal, are judged against
    double force_scale = 0.0;
  };

  // This rank's part of one evaluation as a Contribution (consolidate_forces, the path the pair
  // style's tallies take): forces on the graph's rows in `row_forces` (ghost rows hold partials
  // for their owners). Throws OutputError.
  void rank_contribution(const MLIPSpec &spec, const EnergyShare &share, const Graph &graph,
                         const ModelOutputs &outputs, double volume, int nprocs,
                         Contribution &contribution, std::vector<double> &row_forces);

  // Collective through `atoms`. Per-node model output `name`, `width` values on each row,
  // consolidated by the toolkit's rule: `values` [atoms.num_atoms()][width], owned atoms first
  // (ghost partials summed into their owners, autograd outputs weighted). Throws OutputError
  // when this rank's model did not return it so.
  void consolidated_per_atom(const RankResult &result, const std::string &name, int width,
                             AtomComm &atoms, std::vector<double> &values);

  // Collective through `atoms`. Per-graph or global model output `name` of `size` values,
  // consolidated: per_graph partials summed over ranks, replicated values taken from the first
  // rank, global values each rank's own. Throws OutputError.
  void consolidated_global(const RankResult &result, const std::string &name, int size,
                           AtomComm &atoms, std::vector<double> &values);

  // Collective through `atoms`. The decomposed result of the evaluation: energy and virial
  // summed over ranks, forces of the owned atoms [0, nlocal) with ghost partials summed into
  // them; `row_forces` is scratch. Throws OutputError.
  void decomposed_contribution(const RankResult &result, int nlocal, AtomComm &atoms,
                               Contribution &contribution, std::vector<double> &row_forces);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
