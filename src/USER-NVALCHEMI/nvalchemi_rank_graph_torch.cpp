/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the rank graph built where the model runs (LibTorch).
------------------------------------------------------------------------- */

#include "nvalchemi_rank_graph_torch.h"

#include "nvalchemi_runner_torch.h"

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct TorchRankGraph::Tensors {
    explicit Tensors(const Device &device) :
        device(device), placement(device),
        reals(torch::TensorOptions().dtype(torch::kFloat64).device(placement.device())),
        integers(torch::TensorOptions().dtype(torch::kInt64).device(placement.device()))
    {
    }
    Device device;
    Placement placement;    // stages the atoms' positions (double precision)
    torch::TensorOptions reals, integers;
    // from the last new neighbor list: the LAMMPS index and atomic number of each row, the
    // candidate edges [candidates][2] (sender row, receiver row)
    torch::Tensor row_atom, row_atomic_numbers, candidates;
    // this step's graph (padded after pad)
    torch::Tensor positions, atomic_numbers, edges, edge_vectors;

    // a host array on the device (a copy, also on the CPU: the host array changes)
    torch::Tensor sent(const void *data, int64_t rows, int64_t width, torch::Dtype type) const
    {
      if (rows * width == 0) return torch::zeros({rows, width}, integers);
      const auto host = torch::from_blob(const_cast<void *>(data), {rows, width}, type);
      return host.to(integers.device(), torch::kInt64, /*non_blocking=*/false, /*copy=*/true);
    }

    Graph::Resident resident() const
    {
      Graph::Resident r;
      r.set = true;
      r.device = device;
      r.positions = positions.data_ptr<double>();
      r.edge_vectors = edge_vectors.data_ptr<double>();
      r.atomic_numbers = atomic_numbers.data_ptr<int64_t>();
      r.edges = edges.data_ptr<int64_t>();
      return r;
    }
  };

  TorchRankGraph::TorchRankGraph(const Device &device) : tensors(std::make_unique<Tensors>(device))
  {
  }
  TorchRankGraph::~TorchRankGraph() = default;

  void TorchRankGraph::build(const AtomsView &atoms, const NeighborView &list, double cutoff,
                             bool list_is_new, Graph &graph, std::vector<int> &atom_row)
  {
    Tensors &t = *tensors;
    graph_on_host = reduced_this_build = false;
    rethrow_torch_errors([&] {
      if (list_is_new) {
        build_rows(atoms, graph, atom_row);
        candidate_edges(list, atom_row, graph.n_owned, candidates);
        const int64_t nrows = graph.num_rows();
        t.row_atom = t.sent(graph.row_atom.data(), nrows, 1, torch::kInt32).view({nrows});
        t.row_atomic_numbers =
            t.sent(graph.atomic_numbers.data(), nrows, 1, torch::kInt64).view({nrows});
        t.candidates = t.sent(candidates.data(), static_cast<int64_t>(candidates.size() / 2), 2,
                              torch::kInt64);
      }
      const int64_t nrows = graph.num_rows();

      // the atoms' positions (a view of LAMMPS' array on the CPU), the rows' among them, and
      // every candidate's edge vector r = x_receiver - x_sender, kept within the cutoff
      const torch::Tensor x = atoms.nall > 0
          ? t.placement.input(0, atoms.x[0], {atoms.nall, 3}, torch::kFloat64, true)
          : torch::zeros({0, 3}, t.reals);
      t.positions = x.index_select(0, t.row_atom);
      t.atomic_numbers = t.row_atomic_numbers;
      const torch::Tensor r = t.positions.index_select(0, t.candidates.select(1, 1)) -
          t.positions.index_select(0, t.candidates.select(1, 0));
      // summed as build_graph sums: (dx dx + dy dy) + dz dz
      const torch::Tensor dx = r.select(1, 0), dy = r.select(1, 1), dz = r.select(1, 2);
      const torch::Tensor kept = (dx * dx + dy * dy + dz * dz < cutoff * cutoff).nonzero().view(-1);
      t.edges = t.candidates.index_select(0, kept);
      t.edge_vectors = r.index_select(0, kept);

      const int64_t nedges = t.edges.size(0);
      size_resident_buffers(graph, nedges, nrows, nedges);
      graph.resident = t.resident();
      t.placement.phase_end();
    });
  }

  void TorchRankGraph::pad(Graph &graph, int64_t rows, int64_t edges, double cutoff)
  {
    Tensors &t = *tensors;
    graph_on_host = false;
    const int64_t nrows = graph.num_rows(), nedges = graph.num_edges();
    rethrow_torch_errors([&] {
      // dead rows (atomic number 0, at the origin) and dead edges (self-loops of the last row,
      // one cutoff long), as pad_graph makes them
      auto dead_vectors = torch::zeros({edges - nedges, 3}, t.reals);
      dead_vectors.select(1, 0).fill_(cutoff);
      t.positions = torch::cat({t.positions, torch::zeros({rows - nrows, 3}, t.reals)});
      t.atomic_numbers = torch::cat({t.atomic_numbers, torch::zeros({rows - nrows}, t.integers)});
      t.edges = torch::cat({t.edges, torch::full({edges - nedges, 2}, rows - 1, t.integers)});
      t.edge_vectors = torch::cat({t.edge_vectors, dead_vectors});
      t.placement.phase_end();
    });
    size_resident_buffers(graph, nedges, rows, edges);
    graph.resident = t.resident();
  }

  void TorchRankGraph::to_host(Graph &graph)
  {
    if (graph_on_host || !graph.resident.set) return;
    Tensors &t = *tensors;
    const auto copy = [](const torch::Tensor &from, void *to, torch::Dtype type) {
      torch::from_blob(to, from.sizes(), type).copy_(from);
    };
    rethrow_torch_errors([&] {
      copy(t.positions, graph.positions.data(), torch::kFloat64);
      copy(t.atomic_numbers, graph.atomic_numbers.data(), torch::kInt64);
      copy(t.edges, graph.edges.data(), torch::kInt64);
      copy(t.edge_vectors, graph.edge_vectors.data(), torch::kFloat64);
    });
    graph_on_host = true;
  }

  void TorchRankGraph::reduce_gradients(const Graph &graph, const SharedValues &gradients)
  {
    if (reduced_this_build) return;
    Tensors &t = *tensors;
    const int64_t nrows = graph.num_rows(), nedges = graph.num_edges();
    rethrow_torch_errors([&] {
      const torch::Tensor g = gradients.empty()
          ? torch::zeros({0, 3}, t.reals)
          : torch::from_blob(const_cast<double *>(gradients.get()), {nedges, 3}, t.reals);
      const torch::Tensor edges = t.edges.narrow(0, 0, nedges);
      const torch::Tensor r = t.edge_vectors.narrow(0, 0, nedges);
      auto forces = torch::zeros({nrows, 3}, t.reals);
      forces.index_add_(0, edges.select(1, 1), g, -1.0);
      forces.index_add_(0, edges.select(1, 0), g);
      // -r (x) g summed over the edges, in LAMMPS' order xx yy zz xy xz yz
      const auto voigt = torch::tensor({0, 4, 8, 1, 2, 5}, t.integers);
      const torch::Tensor virial = -torch::mm(r.t(), g).reshape(-1).index_select(0, voigt);
      const torch::Tensor non_finite =
          torch::isfinite(g).logical_not().sum().to(torch::kFloat64).view({1});
      const torch::Tensor all =
          torch::cat({forces.reshape(-1), virial, non_finite}).to(torch::kCPU).contiguous();
      reduced_values.assign(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
    });
    reduced_rows = nrows;
    reduced_this_build = true;
  }

  void TorchRankGraph::outputs_to_host(Graph &graph, ModelOutputs &outputs, bool needed)
  {
    if (!graph.resident.set) return;
    const SharedValues &resident = outputs.resident_edge_gradients;
    if (!resident.empty()) {
      reduce_gradients(graph, resident);
      needed = needed || non_finite_gradients() > 0;
    }
    if (!needed) return;
    to_host(graph);
    if (!resident.empty() && outputs.edge_gradients.empty())
      gradients_to_host(resident, outputs.edge_gradients);
  }

  void TorchRankGraph::add_edge_forces(const Graph &graph, const ModelOutputs &outputs,
                                       double *const *f, double *virial)
  {
    if (outputs.resident_edge_gradients.empty()) {
      // a graph the halo mode made on the host had the model call
      add_host_edge_forces(graph, outputs, f, virial);
      return;
    }
    reduce_gradients(graph, outputs.resident_edge_gradients);
    const double *forces = row_forces();
    for (int64_t r = 0, n = graph.num_rows(); r < n; ++r)
      for (int d = 0; d < 3; ++d) f[graph.row_atom[r]][d] += forces[3 * r + d];
    if (virial)
      for (int v = 0; v < 6; ++v) virial[v] += this->virial()[v];
  }

  void TorchRankGraph::set_synchronized_phases(bool on)
  { tensors->placement.synchronized_phases = on; }

  int64_t TorchRankGraph::non_finite_gradients() const
  { return reduced_this_build ? static_cast<int64_t>(reduced_values.back()) : 0; }

  void TorchRankGraph::gradients_to_host(const SharedValues &gradients, SharedValues &host)
  {
    const int64_t n = gradients.size();
    // the last step's copy is no one's now (the runner cleared edge_gradients): it serves again
    if (!host_gradients || host_gradients.use_count() > 1)
      host_gradients = std::make_shared<std::vector<double>>();
    host_gradients->resize(n);
    rethrow_torch_errors([&] {
      torch::from_blob(host_gradients->data(), {n}, torch::kFloat64)
          .copy_(torch::from_blob(const_cast<double *>(gradients.get()), {n}, tensors->reals));
    });
    host = {std::shared_ptr<const double>(host_gradients, host_gradients->data()), n};
  }

  double TorchRankGraph::memory_bytes() const
  {
    const Tensors &t = *tensors;
    double bytes = static_cast<double>(reduced_values.capacity()) * sizeof(double) +
        static_cast<double>(candidates.capacity()) * sizeof(int64_t);
    if (host_gradients) bytes += static_cast<double>(host_gradients->capacity()) * sizeof(double);
    for (const torch::Tensor *kept : {&t.row_atom, &t.row_atomic_numbers, &t.candidates,
                                      &t.positions, &t.atomic_numbers, &t.edges, &t.edge_vectors})
      if (kept->defined()) bytes += static_cast<double>(kept->nbytes());
    return bytes;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
