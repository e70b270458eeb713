/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the TorchScript model runner, what every runner shares, and
   the choice of runner by file contents (with nvalchemi_aoti.cpp, the only
   translation units with LibTorch headers besides the ops). Implements the
   model contract of doc/Howto_nvalchemi_contract.rst.
------------------------------------------------------------------------- */

#include "nvalchemi_torch.h"

#include "nvalchemi_metadata.h"
#include "nvalchemi_ops.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <sstream>

namespace LAMMPS_NS {
namespace NVAlchemi {

  const char *const ContractInputs::NAMES[ContractInputs::COUNT] = {
      "positions", "atomic_numbers", "neighbor_list", "edge_vectors", "cell", "pbc", "n_owned"};

  namespace {
    template <typename T>
    torch::Tensor to_tensor(const std::vector<T> &values, c10::IntArrayRef shape,
                            torch::Dtype source, torch::Dtype target)
    {
      auto view = torch::from_blob(const_cast<T *>(values.data()), shape, source);
      return view.to(target, /*non_blocking=*/false, /*copy=*/true);
    }

    torch::Tensor pbc_tensor(const Cell &cell)
    { return torch::tensor({cell.pbc[0], cell.pbc[1], cell.pbc[2]}, torch::kBool).view({1, 3}); }

    // the lattice [1, 3, 3] (rows a, b, c), a copy in `real`
    torch::Tensor cell_tensor(const Cell &cell, torch::Dtype real)
    {
      auto view =
          torch::from_blob(const_cast<double *>(&cell.lattice[0][0]), {1, 3, 3}, torch::kFloat64);
      return view.to(real, /*non_blocking=*/false, /*copy=*/true);
    }
  }    // namespace

  ContractInputs contract_inputs(const Graph &graph, const Cell &cell, torch::Dtype real,
                                 bool differentiate)
  {
    const int64_t nrows = graph.tensor_rows();
    const int64_t nedges = graph.tensor_edges();
    const auto view = [](const auto &buffer, c10::IntArrayRef shape, torch::Dtype type) {
      using T = typename std::decay_t<decltype(buffer)>::value_type;
      return torch::from_blob(const_cast<T *>(buffer.data()), shape, type);
    };
    ContractInputs in;
    in.tensors[0] = view(graph.positions, {nrows, 3}, torch::kFloat64).to(real);
    in.tensors[1] = view(graph.atomic_numbers, {nrows}, torch::kInt64);
    in.tensors[2] = view(graph.edges, {nedges, 2}, torch::kInt64);
    in.tensors[3] = view(graph.edge_vectors, {nedges, 3}, torch::kFloat64).to(real);
    // a model that brings its own forces may still call requires_grad_() on its inputs
    in.tensors[3].requires_grad_(differentiate);
    in.tensors[4] = cell_tensor(cell, real);
    in.tensors[5] = pbc_tensor(cell);
    in.tensors[6] = torch::tensor(static_cast<int64_t>(graph.n_owned), torch::kInt64);
    for (int k = 0; k < ContractInputs::COUNT; ++k) in.versions[k] = in.tensors[k]._version();
    return in;
  }

  void check_inputs_unchanged(const ContractInputs &in)
  {
    for (int k = 0; k < ContractInputs::COUNT; ++k)
      if (in.tensors[k]._version() != in.versions[k])
        throw std::runtime_error(std::string("the model changed its input '") +
                                 ContractInputs::NAMES[k] +
                                 "' in place; inputs are the package's buffers, read-only to the "
                                 "model: compute on a copy (.clone()) or out of place");
  }

  torch::Tensor real_rows(const torch::Tensor &tensor, const Graph &graph)
  {
    if (graph.padding_rows == 0 || tensor.dim() == 0 || tensor.size(0) != graph.tensor_rows())
      return tensor;
    return tensor.narrow(0, 0, graph.num_rows());
  }

  SharedValues edge_gradient_values(const torch::Tensor &gradient, const Graph &graph)
  {
    if (!gradient.defined()) return {};
    auto g = std::make_shared<torch::Tensor>(
        gradient.narrow(0, 0, graph.num_edges()).to(torch::kFloat64).contiguous());
    const double *values = g->data_ptr<double>();
    return {std::shared_ptr<const double>(std::move(g), values), 3 * graph.num_edges()};
  }

  void copy_output(const torch::Tensor &tensor, const Graph &graph, OutputTensor &out)
  {
    const auto t = real_rows(tensor.detach(), graph).to(torch::kFloat64).contiguous();
    out.shape.assign(t.sizes().begin(), t.sizes().end());
    out.values.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }

  ExchangeScope::ExchangeScope(Exchanger *exchanger)
  { set_current_exchanger(exchanger); }
  ExchangeScope::~ExchangeScope()
  { set_current_exchanger(nullptr); }

  void ModelRunner::set_num_threads(int nthreads)
  { at::set_num_threads(nthreads); }

  namespace {
    // A TorchScript module: forward(Dict[str, Tensor]) -> Dict[str, Tensor]; the package
    // differentiates the energy share with LibTorch's autograd.
    class TorchScriptRunner : public ModelRunner {
     public:
      explicit TorchScriptRunner(const std::string &archive)
      {
        rethrow_torch_errors([&] {
          std::istringstream stream(archive);
          torch::jit::ExtraFilesMap extra{{METADATA_FILE, ""}};
          module = torch::jit::load(stream, torch::kCPU, extra);
          module.eval();
          metadata = extra[METADATA_FILE];
        });
      }

      const char *format() const override { return "TorchScript"; }
      const std::string &metadata_text() const override { return metadata; }
      void set_float64(bool float64) override
      { dtype = float64 ? torch::kFloat64 : torch::kFloat32; }
      void check_share(const EnergyShare &) const override {}

      void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                    Exchanger *exchanger, ModelOutputs &outputs) override
      {
        ExchangeScope scope(exchanger);
        rethrow_torch_errors([&] {
          auto start = Clock::now();
          ContractInputs in = contract_inputs(graph, cell, dtype, share.differentiate);
          c10::Dict<std::string, torch::Tensor> inputs;
          for (int k = 0; k < ContractInputs::COUNT; ++k)
            inputs.insert(ContractInputs::NAMES[k], in.tensors[k]);
          outputs.marshal_seconds = seconds_since(start);

          start = Clock::now();
          const c10::IValue result = module.forward({inputs});
          outputs.forward_seconds = seconds_since(start);
          if (!result.isGenericDict())
            throw std::runtime_error("the model's forward() must return a Dict[str, Tensor]");
          const auto dict = result.toGenericDict();

          if (!dict.contains(share.key))
            throw std::runtime_error("the model's output has no '" + share.key +
                                     "' entry, the energy its spec names");
          auto energy = real_rows(dict.at(share.key).toTensor(), graph);
          if (share.owned_rows) {
            if (energy.dim() == 0 || energy.size(0) != graph.num_rows())
              throw std::runtime_error("'" + share.key + "' must have one row per atom (" +
                                       std::to_string(graph.tensor_rows()) + ")");
            energy = energy.narrow(0, 0, graph.n_owned);
          }
          const auto total = energy.sum() * share.weight;
          outputs.energy_share = total.item<double>();

          outputs.edge_gradients = {};
          start = Clock::now();
          if (share.differentiate && total.requires_grad())
            outputs.edge_gradients = edge_gradient_values(
                torch::autograd::grad({total}, {in.edge_vectors()}, {}, /*retain_graph=*/false,
                                      /*create_graph=*/false, /*allow_unused=*/true)[0],
                graph);
          outputs.backward_seconds = seconds_since(start);
          check_inputs_unchanged(in);

          start = Clock::now();
          // the same outputs as last step (the usual case) are overwritten in place
          bool same_keys = outputs.tensors.size() == dict.size();
          for (const auto &item : dict)
            same_keys = same_keys && outputs.tensors.count(item.key().toStringRef()) == 1;
          if (!same_keys) outputs.tensors.clear();
          for (const auto &item : dict)
            copy_output(item.value().toTensor(), graph, outputs.tensors[item.key().toStringRef()]);
          outputs.marshal_seconds += seconds_since(start);
        });
      }

     private:
      torch::jit::Module module;
      std::string metadata;
      torch::Dtype dtype = torch::kFloat64;
    };
  }    // namespace

  bool is_aoti_package(const std::string &file_bytes)
  {
    // a .pt2 is a zip archive whose entries (names stored uncompressed) sit under
    // <name>/data/aotinductor/; a TorchScript archive has none there
    return file_bytes.compare(0, 2, "PK") == 0 &&
        file_bytes.find("/data/aotinductor/") != std::string::npos;
  }

  std::unique_ptr<ModelRunner> load_model(const std::string &file_bytes)
  {
    register_exchange_ops();    // before deserializing: the model's code may call them
    if (is_aoti_package(file_bytes)) return load_aoti_model(file_bytes);
    return std::make_unique<TorchScriptRunner>(file_bytes);
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
      c10::Dict<std::string, torch::Tensor> inputs;
      inputs.insert("positions", to_tensor(batch.positions, {n, 3}, f64, f64));
      inputs.insert("velocities", to_tensor(batch.velocities, {n, 3}, f64, f64));
      inputs.insert("forces", to_tensor(batch.forces, {n, 3}, f64, f64));
      inputs.insert("atom_ids", to_tensor(batch.atom_ids, {n}, torch::kInt64, torch::kInt64));
      inputs.insert("atom_types", to_tensor(batch.atom_types, {n}, torch::kInt64, torch::kInt64));
      if (!batch.atomic_numbers.empty())
        inputs.insert("atomic_numbers",
                      to_tensor(batch.atomic_numbers, {n}, torch::kInt64, torch::kInt64));
      inputs.insert("cell", cell_tensor(batch.cell, f64));
      inputs.insert("pbc", pbc_tensor(batch.cell));

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
