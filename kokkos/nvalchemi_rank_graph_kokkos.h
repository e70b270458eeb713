/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the rank graph of pair_style nvalchemi/kk, built in parallel from Kokkos views
   and the Kokkos neighbor list into views of DeviceType's memory, which the model reads as
   tensors there (a resident RankGraph, padded there with static shapes); the edge gradients the
   model leaves there become forces scattered into the Kokkos force view and a virial reduced
   there. The graph and the gradients are copied to the host only for host code that reads them
   or for a non-finite gradient.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RANK_GRAPH_KOKKOS_H
#define LMP_NVALCHEMI_RANK_GRAPH_KOKKOS_H

#include "kokkos_type.h"

#include "nvalchemi_rank_graph.h"

#include <memory>
#include <vector>

namespace LAMMPS_NS {
class AtomKokkos;
class NeighList;
namespace NVAlchemi {

  template <class DeviceType> class KokkosRankGraph : public RankGraph {
   public:
    using AT = ArrayTypes<DeviceType>;
    explicit KokkosRankGraph(AtomKokkos *atom);
    ~KokkosRankGraph() override;

    // What the next build reads besides the atoms' views: the Kokkos neighbor list (with the
    // ghost atoms' lists when `ghost_lists`) and the atomic number of each type (0: skipped).
    void take(NeighList *list, bool ghost_lists,
              const typename AT::t_int_1d &atomic_number_of_type);

    bool resident() const override { return true; }
    // The plain style's graph (build_graph), built in parallel; `atoms` and `list` give the
    // sizes, the views the values.
    void build(const AtomsView &atoms, const NeighborView &list, double cutoff, bool list_is_new,
               Graph &graph, std::vector<int> &atom_row) override;
    void pad(Graph &graph, int64_t rows, int64_t edges, double cutoff) override;
    void to_host(Graph &graph) override;
    void outputs_to_host(Graph &graph, ModelOutputs &outputs, bool needed) override;
    // into the Kokkos force view (`f` unused), marked modified in DeviceType's space
    void add_edge_forces(const Graph &graph, const ModelOutputs &outputs, double *const *f,
                         double *virial) override;
    std::unique_ptr<MeasuredExchanger> row_exchange(const Graph &graph, AtomComm &atoms,
                                                    bool owned_rows_complete) override;

   private:
    struct Arrays;    // the graph's arrays in DeviceType's memory, and the build's scratch
    std::unique_ptr<Arrays> arrays;
    AtomKokkos *atomKK;
    NeighList *list = nullptr;
    bool ghost_lists = false;
    typename AT::t_int_1d z_of_type;
    bool graph_on_host = false;    // this step's graph is in the host buffers too
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
