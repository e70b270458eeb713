/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the rank graph on the host, and what every rank graph
   shares (nvalchemi_rank_graph.h)
------------------------------------------------------------------------- */

#include "nvalchemi_rank_graph.h"

#include "nvalchemi_halo_row_exchange.h"

namespace LAMMPS_NS {
namespace NVAlchemi {

  std::unique_ptr<MeasuredExchanger> RankGraph::row_exchange(const Graph &graph, AtomComm &atoms,
                                                             bool owned_rows_complete)
  { return std::make_unique<RowExchange>(graph, atoms, owned_rows_complete); }

  void HostRankGraph::build(const AtomsView &atoms, const NeighborView &list, double cutoff,
                            bool /*list_is_new*/, Graph &graph, std::vector<int> &atom_row)
  { build_graph(atoms, list, cutoff, graph, atom_row); }

  void HostRankGraph::pad(Graph &graph, int64_t rows, int64_t edges, double cutoff)
  { pad_graph(graph, rows, edges, cutoff); }

  void RankGraph::add_host_edge_forces(const Graph &graph, const ModelOutputs &outputs,
                                       double *const *f, double *virial)
  {
    const double *g = outputs.host_edge_gradients();
    NVAlchemi::add_edge_forces(graph, g, f);
    if (virial) add_edge_virial(graph, g, virial);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
