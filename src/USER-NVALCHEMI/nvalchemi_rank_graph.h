/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: where a rank's graph is built and kept, behind one interface that the step
   engine owns: on the host (HostRankGraph, here), on the model's device with LibTorch's
   operators (nvalchemi_rank_graph_torch.h) or in a Kokkos execution space
   (kokkos/nvalchemi_rank_graph_kokkos.h). Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RANK_GRAPH_H
#define LMP_NVALCHEMI_RANK_GRAPH_H

#include "nvalchemi_outputs.h"
#include "nvalchemi_rank_graph_build.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  class AtomComm;
  class MeasuredExchanger;

  // A rank graph is built each step from this rank's atoms and neighbor list. A resident one
  // keeps its arrays where the model runs (Graph::resident): its host buffers are sized but hold
  // values only after to_host, and the edge gradients the model leaves there are reduced to
  // forces and the global virial there.
  class RankGraph {
   public:
    virtual ~RankGraph() = default;

    // Whether the graphs it builds are resident (then the global virial comes from the edges,
    // where they are: pair_modify nofdotr implied).
    virtual bool resident() const = 0;

    // This step's graph into `graph` (`atom_row`: scratch, the row of each LAMMPS atom as
    // build_graph makes it). `list_is_new`: LAMMPS built the neighbor list since the last call
    // (only then do atoms' types, indices and ghosts change).
    virtual void build(const AtomsView &atoms, const NeighborView &list, double cutoff,
                       bool list_is_new, Graph &graph, std::vector<int> &atom_row) = 0;

    // Static shapes: `graph` (which this builder built) padded to `rows` and `edges` where it
    // lives (pad_graph's dead rows and edges).
    virtual void pad(Graph &graph, int64_t rows, int64_t edges, double cutoff) = 0;

    // The graph's values in its host buffers, for host code; idempotent within a step.
    virtual void to_host(Graph &graph) = 0;

    // After the model call on `graph`: the edge gradients reduced where they are; the graph and
    // the gradients on the host when `needed` by host code or when a gradient is not finite
    // (the host check names it). Idempotent within a step.
    virtual void outputs_to_host(Graph &graph, ModelOutputs &outputs, bool needed) = 0;

    // The forces of the edge gradients (an edge r = x_receiver - x_sender with gradient g pulls
    // -g on its receiver and +g on its sender) added to the atoms' forces: `f`, the host's
    // per-atom forces, or the builder's own (Kokkos' force view); their virial -r (x) g added to
    // `virial` unless it is null.
    virtual void add_edge_forces(const Graph &graph, const ModelOutputs &outputs, double *const *f,
                                 double *virial) = 0;

    // The exchange ops' rows of `graph` through `atoms` (NVAlchemi::RowExchange's contract),
    // mapped where the rows live.
    virtual std::unique_ptr<MeasuredExchanger> row_exchange(const Graph &graph, AtomComm &atoms,
                                                            bool owned_rows_complete);

    // Whether build and pad wait for the device before they return (the graph phase's time).
    virtual void set_synchronized_phases(bool) {}

    // bytes it holds beside the graph's host buffers
    virtual double memory_bytes() const { return 0.0; }

   protected:
    // add_edge_forces from the outputs' host edge gradients into `f` (a graph on the host)
    static void add_host_edge_forces(const Graph &graph, const ModelOutputs &outputs,
                                     double *const *f, double *virial);
  };

  // The graph built and kept on the host (build_graph, pad_graph).
  class HostRankGraph : public RankGraph {
   public:
    bool resident() const override { return false; }
    void build(const AtomsView &atoms, const NeighborView &list, double cutoff, bool list_is_new,
               Graph &graph, std::vector<int> &atom_row) override;
    void pad(Graph &graph, int64_t rows, int64_t edges, double cutoff) override;
    void to_host(Graph &) override {}
    void outputs_to_host(Graph &, ModelOutputs &, bool) override {}
    void add_edge_forces(const Graph &graph, const ModelOutputs &outputs, double *const *f,
                         double *virial) override
    { add_host_edge_forces(graph, outputs, f, virial); }
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
