/* ----------------------------------------------------------------------
   USER-NVALCHEMI: one rank's step, without LAMMPS (nvalchemi_step_engine.h)
------------------------------------------------------------------------- */

#include "nvalchemi_step_engine.h"

#include "nvalchemi_dd_reference.h"
#include "nvalchemi_halo.h"
#include "nvalchemi_halo_row_exchange.h"

#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  StepEngine::StepEngine() = default;
  StepEngine::~StepEngine() = default;

  void StepEngine::use(std::unique_ptr<RankGraph> graph_builder, AtomComm &atoms, MPI_Comm world,
                       bool atom_ids)
  {
    builder = std::move(graph_builder);
    builder->set_synchronized_phases(synchronized);
    MPI_Comm_size(world, &nprocs);
    remake_halo(atoms, world, atom_ids);
    rows_padded = edges_padded = 0;
    cached.clear();
  }

  void StepEngine::remake_halo(AtomComm &atoms, MPI_Comm world, bool atom_ids)
  {
    // the exchanger maps the rank graph's rows where its builder keeps them
    halo_mode = make_halo(
        *spec.halo,
        [this, &atoms](bool complete) {
          return builder->row_exchange(rank, atoms, complete);
        },
        world, atom_ids);
  }

  Graph &StepEngine::build(const AtomsView &atoms, const NeighborView &list,
                           const std::array<int64_t, 2> &list_build, const RowIds &ids)
  {
    const std::array<int64_t, 5> list_now{list_build[0], list_build[1], atoms.nlocal, atoms.nall,
                                          list.inum + list.gnum};
    list_new = list_now != list_taken;
    list_taken = list_now;
    builder->build(atoms, list, cutoff, list_new, rank, atom_row);
    if (halo_mode->makes_model_graph()) builder->to_host(rank);
    return halo_mode->model_graph(rank, ids);
  }

  bool StepEngine::pad_to_capacity(Graph &model_graph, MPI_Comm world, int64_t need[2])
  {
    need[0] = model_graph.num_rows();
    need[1] = model_graph.num_edges();
    MPI_Allreduce(MPI_IN_PLACE, need, 2, MPI_INT64_T, MPI_MAX, world);
    // rows strictly above the need: the last row is the dead row that padding edges loop on
    const int64_t rows =
        grown_capacity(rows_padded, need[0], *spec.compile.atom_capacity_growth, true);
    const int64_t edges =
        grown_capacity(edges_padded, need[1], *spec.compile.edge_capacity_growth, false);
    const bool grew = rows != rows_padded || edges != edges_padded;
    rows_padded = rows;
    edges_padded = edges;
    // a graph of the halo mode's own is on the host
    if (model_graph.resident.set)
      builder->pad(model_graph, rows, edges, cutoff);
    else
      pad_graph(model_graph, rows, edges, cutoff);
    return grew;
  }

  void StepEngine::call_model(const Graph &model_graph, const Cell &cell)
  {
    MeasuredExchanger &exchange = halo_mode->exchanger();
    exchange.seconds = 0.0;
    exchange.refreshes = 0;
    exchange.start_evaluation();
    const Clock::time_point start = Clock::now();
    try {
      model->evaluate(model_graph, cell, share, &exchange, out);
      exchange.agree(ExchangeCall::RETURNED, 0);
      // a replay makes no exchange call either: the host's communication is not in the graph
      if (cuda_graph) model->cuda_graphs().enable(exchange.point().calls == 0);
    } catch (std::exception &) {
      if (!exchange.mismatched()) throw;
    }
    summary.model = seconds_since(start);    // the call's whole time until finish() splits it
  }

  void StepEngine::finish(bool host_outputs, const RowIds &ids)
  {
    const Clock::time_point start = Clock::now();
    // the consolidation reads rows of this rank's atoms
    halo_mode->to_rank_rows(spec, rank, out);
    const double call_seconds = summary.model + seconds_since(start);
    ++evaluation_count;
    provide_framework_outputs(spec, share, out);
    builder->outputs_to_host(rank, out, host_outputs);
    check_finite(spec, share, rank, out, ids);

    summary.exchange = halo_mode->exchanger().seconds;
    summary.model = call_seconds - summary.exchange - out.marshal_seconds;
    summary.tensors = out.marshal_seconds;
    summary.forward = out.forward_seconds;
    summary.backward = out.backward_seconds;
    summary.edges = rank.num_edges();
  }

  void StepEngine::synchronize_phases(bool on)
  {
    synchronized = on;
    if (model) model->set_synchronized_phases(on);
    if (builder) builder->set_synchronized_phases(on);
  }

  void StepEngine::add_atom_energies(double *eatom) const
  {
    if (!NVAlchemi::add_atom_energies(result(), eatom))
      throw CollectiveError("Per-atom energy needs the spec of pair_style nvalchemi to declare "
                            "the node energies '" +
                            *spec.node_energy_key + "' as per_node");
  }

  void StepEngine::tally_forces(ForceConsumer &consumer, double *const *vatom) const
  {
    const RankResult rank_result = result();
    if (!consolidate_forces(rank_result, consumer))
      throw CollectiveError(
          "The global virial without F dot r (pair_modify nofdotr) with force strategy 'model' "
          "needs the spec to declare model output 'virial' [1,3,3] or the toolkit's 'stress' "
          "[1,3,3] per_graph, or per-atom virials '" +
          *spec.node_virial_key + "' [N,3,3] per_node");
    if (!vatom || add_atom_virials(rank_result, vatom)) return;
    const std::string foreign = model->foreign_format();
    if (!foreign.empty())
      throw CollectiveError("Model " + model_file + " is a " + foreign +
                            " file, which returns no per-atom virials (as that framework's pair "
                            "style, which refuses them too): drop compute stress/atom, or export "
                            "the model with nvalchemi-nequip-export");
    throw CollectiveError("Per-atom virials with force strategy 'model' need the spec to declare "
                          "output '" +
                          *spec.node_virial_key + "' per_node");
  }

  const double *StepEngine::consolidated(const std::string &name, bool peratom, int n,
                                         AtomComm &atoms)
  {
    auto declared = spec.outputs.find(name);
    const bool fits = declared != spec.outputs.end() &&
        (peratom ? declared->second.kind == OutputKind::PER_NODE
                 : (declared->second.kind == OutputKind::PER_GRAPH ||
                    declared->second.kind == OutputKind::GLOBAL));
    if (!fits)
      throw CollectiveError(
          "Model output '" + name + "' is not declared " +
          (peratom ? "per_node" : "per_graph or global") +
          " in the spec of pair_style nvalchemi: declare it in the model's spec or with 'output " +
          name + (peratom ? " per_node" : " per_graph") + " <reduce>'");
    if (evaluation_count == 0)
      throw CollectiveError("Model output '" + name + "' requested before the model ran");

    Consolidated &c = cached[name];
    if (c.evaluation == evaluation_count) return c.values.data();
    to_host();
    const RankResult rank_result = result();
    if (peratom)
      consolidated_per_atom(rank_result, name, n, atoms, c.values);
    else
      consolidated_global(rank_result, name, n, atoms, c.values);
    c.evaluation = evaluation_count;
    return c.values.data();
  }

  Contribution StepEngine::reference(const std::vector<double> &x, const std::vector<int> &type,
                                     const Cell &cell)
  {
    std::vector<int64_t> atomic_numbers(type.size());
    for (size_t i = 0; i < type.size(); ++i) atomic_numbers[i] = atomic_number_of_type[type[i]];
    return reference_contribution(*model, spec, share, x, atomic_numbers, cell, cutoff);
  }

  double StepEngine::memory_bytes() const
  {
    double bytes = rank.memory_bytes() + (builder ? builder->memory_bytes() : 0.0) +
        static_cast<double>(atom_row.capacity()) * sizeof(int) +
        static_cast<double>(row_forces.capacity()) * sizeof(double);
    if (out.edge_gradients.get())
      bytes += static_cast<double>(3 * rank.num_edges()) * sizeof(double);
    for (const auto &entry : out.tensors)
      bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
    for (const auto &entry : cached)
      bytes += static_cast<double>(entry.second.values.capacity()) * sizeof(double);
    if (halo_mode) bytes += halo_mode->memory_bytes();
    return bytes;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
