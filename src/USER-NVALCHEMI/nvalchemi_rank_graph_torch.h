/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the rank graph built where the model runs (pair_style nvalchemi ... graph
   device), with LibTorch's operators on the model's device: a RankGraph whose LibTorch stays in
   the .cpp.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RANK_GRAPH_TORCH_H
#define LMP_NVALCHEMI_RANK_GRAPH_TORCH_H

#include "nvalchemi_rank_graph.h"
#include "nvalchemi_step_device.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // build_graph's graph, kept on `device` (a resident graph, Graph::resident). When the neighbor
  // list is new, its candidate edges (candidate_edges: every pair of rows it holds, in
  // build_graph's order) and the rows' atom indices and atomic numbers go to the device once;
  // every step only the positions of the atoms go there, and the rows' positions, the edge
  // vectors and the edges within the cutoff are selected there (in build_graph's order: the
  // same graph to the bit), padded there with static shapes. After the model call, the edge
  // gradients it left there become per-row forces and the global virial there, which come back
  // in one copy with a count of non-finite gradients (reduce_gradients). On the CPU device the
  // same code runs on LibTorch's CPU tensors, which the tests compare with the host builder.
  class TorchRankGraph : public RankGraph {
   public:
    explicit TorchRankGraph(const Device &device);
    ~TorchRankGraph() override;
    TorchRankGraph(const TorchRankGraph &) = delete;
    TorchRankGraph &operator=(const TorchRankGraph &) = delete;

    bool resident() const override { return true; }

    // This step's graph into `graph` (its host buffers sized, not filled; `atom_row` scratch as
    // build_graph's). With `list_is_new` the rows and candidate edges are made from `atoms`'
    // types and `list` and sent; else those of the last such call serve (LAMMPS changes atoms'
    // types and indices, and ghosts, only when it builds the neighbor list).
    void build(const AtomsView &atoms, const NeighborView &list, double cutoff, bool list_is_new,
               Graph &graph, std::vector<int> &atom_row) override;
    // pad_graph on the device: `graph` (built here) padded to `rows` and `edges`.
    void pad(Graph &graph, int64_t rows, int64_t edges, double cutoff) override;
    // The graph's values into its host buffers; once per build or pad.
    void to_host(Graph &graph) override;
    // The resident gradients reduced (reduce_gradients); the graph and the gradients copied to
    // the host when needed or a gradient is not finite.
    void outputs_to_host(Graph &graph, ModelOutputs &outputs, bool needed) override;
    // The reduced row forces added at the rows' atoms, or the host gradients' edge forces.
    void add_edge_forces(const Graph &graph, const ModelOutputs &outputs, double *const *f,
                         double *virial) override;

    // The real edges' gradients `gradients` (resident: on this device, [edges][3]) of the model
    // call on `graph`, reduced on the device: each edge r = x_receiver - x_sender with gradient g
    // pulls -g on its receiver and +g on its sender, and adds -r (x) g to the virial. Brought
    // back in one copy; once per build (later calls return at once).
    void reduce_gradients(const Graph &graph, const SharedValues &gradients);
    bool reduced() const { return reduced_this_build; }
    // what reduce_gradients brought back: forces [rows][3] of the graph's real rows, the virial
    // (LAMMPS order xx yy zz xy xz yz), and how many gradient values were not finite
    const double *row_forces() const { return reduced_values.data(); }
    const double *virial() const { return reduced_values.data() + 3 * reduced_rows; }
    int64_t non_finite_gradients() const;
    // `gradients` (resident) on the host, in memory the next call reuses once `host` lets go
    void gradients_to_host(const SharedValues &gradients, SharedValues &host);

    // Whether build and pad wait for the device before they return (the graph phase's time).
    void set_synchronized_phases(bool on) override;

    // bytes of device memory (host memory on the CPU device) it holds
    double memory_bytes() const override;

   private:
    struct Tensors;    // LibTorch's
    std::unique_ptr<Tensors> tensors;
    bool graph_on_host = false, reduced_this_build = false;
    int64_t reduced_rows = 0;
    std::vector<double> reduced_values;    // row forces, virial, non-finite count
    Buffer<int64_t> candidates;            // host scratch of candidate_edges
    std::shared_ptr<std::vector<double>> host_gradients;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
