/* ----------------------------------------------------------------------
   USER-NVALCHEMI: TorchScript model runner (the only translation unit with LibTorch headers).
   Implements the model contract of doc/Howto_nvalchemi_contract.rst.
------------------------------------------------------------------------- */

#include "nvalchemi_model.h"

#include "nvalchemi_metadata.h"
#include "nvalchemi_ops.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/script.h>

#include <chrono>
#include <sstream>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct TorchModel::Impl {
    torch::jit::Module module;
    std::string metadata;
    torch::Dtype dtype = torch::kFloat64;
  };

  namespace {
    // A copy of `values` as a tensor of `shape` in `dtype` (the copy keeps the model from
    // aliasing, or writing into, the graph's buffers).
    template <typename T>
    torch::Tensor to_tensor(const std::vector<T> &values, c10::IntArrayRef shape,
                            torch::Dtype source, torch::Dtype target)
    {
      auto view = torch::from_blob(const_cast<T *>(values.data()), shape, source);
      return view.to(target, /*non_blocking=*/false, /*copy=*/true);
    }

    // the exchanger the ops see, for the duration of one forward and backward pass
    struct ExchangeScope {
      explicit ExchangeScope(Exchanger *exchanger) { set_current_exchanger(exchanger); }
      ~ExchangeScope() { set_current_exchanger(nullptr); }
    };

    template <typename F> void rethrow_torch_errors(F &&body)
    {
      try {
        body();
      } catch (const c10::Error &e) {
        throw std::runtime_error(e.what_without_backtrace());
      }
    }
  }    // namespace

  TorchModel::TorchModel(const std::string &archive) : impl(new Impl)
  {
    register_exchange_ops();
    rethrow_torch_errors([&] {
      std::istringstream stream(archive);
      torch::jit::ExtraFilesMap extra{{METADATA_FILE, ""}};
      impl->module = torch::jit::load(stream, torch::kCPU, extra);
      impl->module.eval();
      impl->metadata = extra[METADATA_FILE];
    });
  }

  TorchModel::~TorchModel() = default;

  const std::string &TorchModel::metadata_text() const
  { return impl->metadata; }

  void TorchModel::set_float64(bool float64)
  { impl->dtype = float64 ? torch::kFloat64 : torch::kFloat32; }

  void TorchModel::set_num_threads(int nthreads)
  { at::set_num_threads(nthreads); }

  void TorchModel::evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                            Exchanger *exchanger, ModelOutputs &outputs)
  {
    ExchangeScope scope(exchanger);
    using Clock = std::chrono::steady_clock;
    const auto seconds_since = [](Clock::time_point start) {
      return std::chrono::duration<double>(Clock::now() - start).count();
    };
    rethrow_torch_errors([&] {
      auto start = Clock::now();
      const int64_t nrows = graph.num_rows();
      const int64_t nedges = graph.num_edges();
      const torch::Dtype real = impl->dtype;

      auto edge_vectors = to_tensor(graph.edge_vectors, {nedges, 3}, torch::kFloat64, real);
      // a model that brings its own forces may still call requires_grad_() on its inputs
      edge_vectors.requires_grad_(share.differentiate);

      std::vector<double> lattice(&cell.lattice[0][0], &cell.lattice[0][0] + 9);
      auto pbc = torch::tensor({cell.pbc[0], cell.pbc[1], cell.pbc[2]}, torch::kBool).view({1, 3});

      c10::Dict<std::string, torch::Tensor> inputs;
      inputs.insert("positions", to_tensor(graph.positions, {nrows, 3}, torch::kFloat64, real));
      inputs.insert("atomic_numbers",
                    to_tensor(graph.atomic_numbers, {nrows}, torch::kInt64, torch::kInt64));
      inputs.insert("neighbor_list",
                    to_tensor(graph.edges, {nedges, 2}, torch::kInt64, torch::kInt64));
      inputs.insert("edge_vectors", edge_vectors);
      inputs.insert("cell", to_tensor(lattice, {1, 3, 3}, torch::kFloat64, real));
      inputs.insert("pbc", pbc);
      inputs.insert("n_owned", torch::tensor(static_cast<int64_t>(graph.n_owned), torch::kInt64));

      outputs.marshal_seconds = seconds_since(start);

      const c10::IValue result = impl->module.forward({inputs});
      if (!result.isGenericDict())
        throw std::runtime_error("the model's forward() must return a Dict[str, Tensor]");
      const auto dict = result.toGenericDict();

      if (!dict.contains(share.key))
        throw std::runtime_error("the model's output has no '" + share.key +
                                 "' entry, the energy its spec names");
      auto energy = dict.at(share.key).toTensor();
      if (share.owned_rows) {
        if (energy.dim() == 0 || energy.size(0) != nrows)
          throw std::runtime_error("'" + share.key + "' must have one row per atom (" +
                                   std::to_string(nrows) + ")");
        energy = energy.narrow(0, 0, graph.n_owned);
      }
      const auto total = energy.sum() * share.weight;
      outputs.energy_share = total.item<double>();

      outputs.edge_gradients.clear();
      if (share.differentiate) {
        torch::Tensor gradient;
        if (total.requires_grad())
          gradient = torch::autograd::grad({total}, {edge_vectors}, {}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true)[0];
        if (!gradient.defined()) gradient = torch::zeros_like(edge_vectors);
        const auto g = gradient.to(torch::kFloat64).contiguous();
        outputs.edge_gradients.assign(g.data_ptr<double>(), g.data_ptr<double>() + 3 * nedges);
      }

      start = Clock::now();
      outputs.tensors.clear();
      for (const auto &item : dict) {
        const auto tensor = item.value().toTensor().detach().to(torch::kFloat64).contiguous();
        OutputTensor &out = outputs.tensors[item.key().toStringRef()];
        out.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
        out.values.assign(tensor.data_ptr<double>(), tensor.data_ptr<double>() + tensor.numel());
      }
      outputs.marshal_seconds += seconds_since(start);
    });
  }

  struct TorchHook::Impl {
    torch::jit::Module module;
  };

  TorchHook::TorchHook(const std::string &archive) : impl(new Impl)
  {
    register_exchange_ops();
    rethrow_torch_errors([&] {
      std::istringstream stream(archive);
      impl->module = torch::jit::load(stream, torch::kCPU);
      impl->module.eval();
    });
  }

  TorchHook::~TorchHook() = default;

  void TorchHook::call(const HookBatch &batch, HookResult &result)
  {
    rethrow_torch_errors([&] {
      const int64_t n = batch.n;
      const auto f64 = torch::kFloat64;
      std::vector<double> lattice(&batch.cell.lattice[0][0], &batch.cell.lattice[0][0] + 9);
      c10::Dict<std::string, torch::Tensor> inputs;
      inputs.insert("positions", to_tensor(batch.positions, {n, 3}, f64, f64));
      inputs.insert("velocities", to_tensor(batch.velocities, {n, 3}, f64, f64));
      inputs.insert("forces", to_tensor(batch.forces, {n, 3}, f64, f64));
      inputs.insert("atom_ids", to_tensor(batch.atom_ids, {n}, torch::kInt64, torch::kInt64));
      inputs.insert("atom_types", to_tensor(batch.atom_types, {n}, torch::kInt64, torch::kInt64));
      if (!batch.atomic_numbers.empty())
        inputs.insert("atomic_numbers",
                      to_tensor(batch.atomic_numbers, {n}, torch::kInt64, torch::kInt64));
      inputs.insert("cell", to_tensor(lattice, {1, 3, 3}, f64, f64));
      inputs.insert(
          "pbc",
          torch::tensor({batch.cell.pbc[0], batch.cell.pbc[1], batch.cell.pbc[2]}, torch::kBool)
              .view({1, 3}));

      const c10::IValue value = impl->module.forward({inputs});
      if (!value.isGenericDict())
        throw std::runtime_error("the hook's forward() must return a Dict[str, Tensor]");
      const auto dict = value.toGenericDict();
      const auto output = [&](const char *key, int64_t numel) {
        const auto t = dict.at(key).toTensor().detach().to(f64).contiguous();
        if (t.numel() != numel)
          throw std::runtime_error(std::string("the hook's output '") + key + "' has " +
                                   std::to_string(t.numel()) + " values, expected " +
                                   std::to_string(numel));
        return t;
      };
      result.has_forces = dict.contains("forces");
      result.has_energy = dict.contains("energy");
      result.has_virial = dict.contains("virial");
      if (result.has_forces) {
        const auto f = output("forces", 3 * n);
        result.forces.assign(f.data_ptr<double>(), f.data_ptr<double>() + 3 * n);
      }
      if (result.has_energy) result.energy = output("energy", 1).item<double>();
      if (result.has_virial) {
        const auto w = output("virial", 9);
        std::copy_n(w.data_ptr<double>(), 9, result.virial);
      }
    });
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
