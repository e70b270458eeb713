/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the TorchScript model runner, what every runner shares, and
   the choice of runner by file contents (with nvalchemi_aoti.cpp, the only
   translation units with LibTorch headers besides the ops). Implements the
   model contract of doc/Howto_nvalchemi_contract.rst.
------------------------------------------------------------------------- */

#include "nvalchemi_torch.h"

#include "nvalchemi_archive.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_ops.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

namespace LAMMPS_NS {
namespace NVAlchemi {

  const char *const ContractInputs::NAMES[ContractInputs::COUNT] = {
      "positions", "atomic_numbers", "neighbor_list", "edge_vectors", "cell", "pbc", "n_owned"};

  CudaRuntime cuda_runtime()
  { return {at::hasCUDA(), static_cast<int>(torch::cuda::device_count())}; }

  torch::Device torch_device(const Device &device)
  {
    if (!device.is_cuda()) return torch::kCPU;
    return {torch::kCUDA, static_cast<c10::DeviceIndex>(std::max(0, device.index))};
  }

  Placement::Placement(const Device &device) : where(torch_device(device))
  {
    // float32 on a GPU stays IEEE float32: no TF32 in matrix products or cuDNN (the toolkit's
    // pin_fp32)
    if (device.is_cuda()) {
      at::globalContext().setAllowTF32CuBLAS(false);
      at::globalContext().setAllowTF32CuDNN(false);
    }
  }

  torch::Tensor Placement::input(int slot, const void *data, c10::IntArrayRef shape,
                                 torch::Dtype type, bool real_valued)
  {
    const torch::Dtype target = real_valued ? real : type;
    auto view = torch::from_blob(const_cast<void *>(data), shape, type);
    if (where.is_cpu()) return view.to(target);    // the view itself when target is its dtype
    // a pinned host copy, then an asynchronous copy to the device (ordered before the model's
    // kernels on the same stream; the outputs' copy back ends the step in sync)
    const int64_t bytes = view.numel() * static_cast<int64_t>(view.element_size());
    if (static_cast<int>(staging.size()) <= slot) staging.resize(slot + 1);
    torch::Tensor &pinned = staging[slot];
    if (!pinned.defined() || pinned.numel() < bytes)
      pinned = torch::empty({bytes + bytes / 4},
                            torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    if (bytes > 0) std::memcpy(pinned.data_ptr(), data, bytes);
    const auto staged = pinned.narrow(0, 0, bytes).view(type).view(shape);
    return staged.to(where, target, /*non_blocking=*/true);
  }

  torch::Tensor Placement::small(const torch::Tensor &host) const
  { return where.is_cpu() ? host : host.to(where); }

  std::vector<torch::Tensor> Placement::to_host(const std::vector<torch::Tensor> &tensors) const
  {
    std::vector<torch::Tensor> host;
    host.reserve(tensors.size());
    if (where.is_cpu()) {
      for (const auto &t : tensors) host.push_back(t.detach().to(torch::kFloat64).contiguous());
      return host;
    }
    std::vector<torch::Tensor> flat;
    flat.reserve(tensors.size());
    for (const auto &t : tensors) flat.push_back(t.detach().to(where, torch::kFloat64).reshape(-1));
    const auto all = torch::cat(flat).to(torch::kCPU);
    int64_t offset = 0;
    for (const auto &t : tensors) {
      host.push_back(all.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    return host;
  }

  namespace {
    // the names the metadata and torch.dtype use: float64, float32, ...
    std::string dtype_name(torch::Dtype type)
    {
      switch (type) {
        case torch::kFloat64:
          return "float64";
        case torch::kFloat32:
          return "float32";
        case torch::kFloat16:
          return "float16";
        case torch::kBFloat16:
          return "bfloat16";
        default:
          return c10::toString(type);
      }
    }
  }    // namespace

  void Placement::check_output(const std::string &name, const torch::Tensor &output) const
  {
    if (output.device() == where && (!output.is_floating_point() || output.scalar_type() == real))
      return;
    throw std::runtime_error("the model returned '" + name + "' as " +
                             dtype_name(output.scalar_type()) + " on " + output.device().str() +
                             "; its outputs must be " + dtype_name(real) +
                             " (the metadata's dtype) on " + where.str() +
                             " (where pair_style nvalchemi placed its inputs)");
  }

  namespace {
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

  ContractInputs contract_inputs(const Graph &graph, const Cell &cell, Placement &placement,
                                 bool differentiate)
  {
    const int64_t nrows = graph.tensor_rows();
    const int64_t nedges = graph.tensor_edges();
    ContractInputs in;
    in.tensors[0] = placement.input(0, graph.positions.data(), {nrows, 3}, torch::kFloat64, true);
    in.tensors[1] = placement.input(1, graph.atomic_numbers.data(), {nrows}, torch::kInt64, false);
    in.tensors[2] = placement.input(2, graph.edges.data(), {nedges, 2}, torch::kInt64, false);
    in.tensors[3] =
        placement.input(3, graph.edge_vectors.data(), {nedges, 3}, torch::kFloat64, true);
    // a model that brings its own forces may still call requires_grad_() on its inputs
    in.tensors[3].requires_grad_(differentiate);
    in.tensors[4] = placement.small(cell_tensor(cell, placement.real));
    in.tensors[5] = placement.small(pbc_tensor(cell));
    in.tensors[6] =
        placement.small(torch::tensor(static_cast<int64_t>(graph.n_owned), torch::kInt64));
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

  SharedValues shared_values(const torch::Tensor &host)
  {
    auto kept = std::make_shared<torch::Tensor>(host);
    const double *values = kept->data_ptr<double>();
    return {std::shared_ptr<const double>(std::move(kept), values), host.numel()};
  }

  void copy_output(const torch::Tensor &host, OutputTensor &out)
  {
    out.shape.assign(host.sizes().begin(), host.sizes().end());
    out.values.assign(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
  }

  ExchangeScope::ExchangeScope(Exchanger *exchanger)
  { set_current_exchanger(exchanger); }
  ExchangeScope::~ExchangeScope()
  { set_current_exchanger(nullptr); }

  void ModelRunner::set_num_threads(int nthreads)
  { at::set_num_threads(nthreads); }

  namespace {
    // LibTorch's "Unknown builtin op: ns::name." as an error a LAMMPS user can act on
    // (TorchScript's compiler reports it as a torch::jit::ErrorReport, not a c10::Error)
    void name_a_missing_operator(const std::string &text)
    {
      const std::string marker = "Unknown builtin op: ";
      const size_t at = text.find(marker);
      if (at == std::string::npos) return;
      std::string op = text.substr(at + marker.size());
      op = op.substr(0, op.find_first_of(".\n "));
      throw std::runtime_error("the model calls the operator " + op +
                               ", which no loaded library registers: load the library that "
                               "provides it before the model, with the pair_style keyword "
                               "'library <file>.so'");
    }

    // namespaces of ATen, TorchScript's own nodes and the package's exchange ops
    bool is_builtin_namespace(const std::string &ns)
    {
      static const std::set<std::string> builtin = {
          "aten",    "prim",       "attr", "onnx",  "scope",    "user",      "_caffe2",
          "dimname", "namespaces", "cuda", "prims", "profiler", "quantized", "nvalchemi"};
      return builtin.count(ns) == 1;
    }

    void collect_operators(torch::jit::Block *block, std::set<std::string> &ops)
    {
      for (torch::jit::Node *node : block->nodes()) {
        const c10::Symbol kind = node->kind();
        if (!is_builtin_namespace(kind.ns().toUnqualString())) ops.insert(kind.toQualString());
        for (torch::jit::Block *inner : node->blocks()) collect_operators(inner, ops);
      }
    }

    // A TorchScript module: forward(Dict[str, Tensor]) -> Dict[str, Tensor]; the package
    // differentiates the energy share with LibTorch's autograd.
    class TorchScriptRunner : public ModelRunner {
     public:
      TorchScriptRunner(const std::string &archive, const Device &device) : placement(device)
      {
        rethrow_torch_errors([&] {
          std::istringstream stream(archive);
          torch::jit::ExtraFilesMap extra{{METADATA_FILE, ""}};
          try {
            module = torch::jit::load(stream, placement.device(), extra);
          } catch (const std::exception &e) {
            name_a_missing_operator(e.what());
            throw;
          }
          module.eval();
          metadata = extra[METADATA_FILE];
        });
      }

      const char *format() const override { return "TorchScript"; }
      const std::string &metadata_text() const override { return metadata; }
      std::vector<std::string> custom_operators() const override
      {
        // every method with the calls it makes inlined, so that functions and submodules count
        std::set<std::string> ops;
        for (const auto &method : module.get_methods()) {
          auto graph = method.graph()->copy();
          torch::jit::Inline(*graph);
          collect_operators(graph->block(), ops);
        }
        return {ops.begin(), ops.end()};
      }
      void set_float64(bool float64) override
      { placement.real = float64 ? torch::kFloat64 : torch::kFloat32; }
      void check_share(const EnergyShare &) const override {}

      void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                    Exchanger *exchanger, ModelOutputs &outputs) override
      {
        ExchangeScope scope(exchanger);
        rethrow_torch_errors([&] {
          auto start = Clock::now();
          ContractInputs in = contract_inputs(graph, cell, placement, share.differentiate);
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
          for (const auto &item : dict)
            placement.check_output(item.key().toStringRef(), item.value().toTensor());

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

          torch::Tensor gradient;
          start = Clock::now();
          if (share.differentiate && total.requires_grad())
            gradient = torch::autograd::grad({total}, {in.edge_vectors()}, {},
                                             /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true)[0];
          outputs.backward_seconds = seconds_since(start);
          check_inputs_unchanged(in);

          // back to the host together: the energy share, the real edges' gradient, the outputs
          start = Clock::now();
          std::vector<torch::Tensor> results{total};
          if (gradient.defined()) results.push_back(gradient.narrow(0, 0, graph.num_edges()));
          for (const auto &item : dict)
            results.push_back(real_rows(item.value().toTensor(), graph));
          const auto host = placement.to_host(results);
          outputs.energy_share = host[0].item<double>();
          outputs.edge_gradients = gradient.defined() ? shared_values(host[1]) : SharedValues{};
          // the same outputs as last step (the usual case) are overwritten in place
          bool same_keys = outputs.tensors.size() == dict.size();
          for (const auto &item : dict)
            same_keys = same_keys && outputs.tensors.count(item.key().toStringRef()) == 1;
          if (!same_keys) outputs.tensors.clear();
          size_t k = gradient.defined() ? 2 : 1;
          for (const auto &item : dict)
            copy_output(host[k++], outputs.tensors[item.key().toStringRef()]);
          outputs.marshal_seconds += seconds_since(start);
        });
      }

     private:
      torch::jit::Module module;
      std::string metadata;
      Placement placement;
    };
  }    // namespace

  bool operator_registered(const std::string &qualified_name)
  {
    const size_t dot = qualified_name.find('.', qualified_name.find("::"));
    const c10::OperatorName name(qualified_name.substr(0, dot),
                                 dot == std::string::npos ? "" : qualified_name.substr(dot + 1));
    return c10::Dispatcher::singleton().findOp(name).has_value();
  }

  bool is_aoti_package(const std::string &file_bytes)
  {
    // a .pt2 is a zip archive whose entries (names stored uncompressed) sit under
    // <name>/data/aotinductor/; a TorchScript archive has none there
    return file_bytes.compare(0, 2, "PK") == 0 &&
        file_bytes.find("/data/aotinductor/") != std::string::npos;
  }

  std::unique_ptr<ModelRunner> load_model(const std::string &file_bytes, const Device &device)
  {
    check_archive(file_bytes);
    register_exchange_ops();    // before deserializing: the model's code may call them
    if (is_aoti_package(file_bytes)) return load_aoti_model(file_bytes, device);
    return std::make_unique<TorchScriptRunner>(file_bytes, device);
  }

  struct TorchHook::Impl {
    torch::jit::Module module;
    Placement placement;    // float64 inputs
  };

  TorchHook::TorchHook(const std::string &archive) : impl(new Impl)
  {
    check_archive(archive);
    register_exchange_ops();
    rethrow_torch_errors([&] {
      std::istringstream stream(archive);
      impl->module = torch::jit::load(stream, torch::kCPU);
      impl->module.eval();
    });
  }

  TorchHook::~TorchHook() = default;

  void TorchHook::place_on(const Device &device)
  {
    rethrow_torch_errors([&] {
      impl->placement = Placement(device);
      impl->module.to(impl->placement.device());
    });
  }

  void TorchHook::call(const HookBatch &batch, HookResult &result)
  {
    rethrow_torch_errors([&] {
      const int64_t n = batch.n;
      Placement &placement = impl->placement;
      int slot = 0;
      const auto input = [&](const auto &values, c10::IntArrayRef shape, torch::Dtype type) {
        return placement.input(slot++, values.data(), shape, type, false);
      };
      c10::Dict<std::string, torch::Tensor> inputs;
      inputs.insert("positions", input(batch.positions, {n, 3}, torch::kFloat64));
      inputs.insert("velocities", input(batch.velocities, {n, 3}, torch::kFloat64));
      inputs.insert("forces", input(batch.forces, {n, 3}, torch::kFloat64));
      inputs.insert("atom_ids", input(batch.atom_ids, {n}, torch::kInt64));
      inputs.insert("atom_types", input(batch.atom_types, {n}, torch::kInt64));
      if (!batch.atomic_numbers.empty())
        inputs.insert("atomic_numbers", input(batch.atomic_numbers, {n}, torch::kInt64));
      inputs.insert("cell", placement.small(cell_tensor(batch.cell, torch::kFloat64)));
      inputs.insert("pbc", placement.small(pbc_tensor(batch.cell)));

      const c10::IValue value = impl->module.forward({inputs});
      if (!value.isGenericDict())
        throw std::runtime_error("the hook's forward() must return a Dict[str, Tensor]");
      const auto dict = value.toGenericDict();
      result.has_forces = dict.contains("forces");
      result.has_energy = dict.contains("energy");
      result.has_virial = dict.contains("virial");
      // what it returned, back to the host together
      std::vector<const char *> keys;
      std::vector<torch::Tensor> returned;
      for (const char *key : {"forces", "energy", "virial"})
        if (dict.contains(key)) {
          keys.push_back(key);
          returned.push_back(dict.at(key).toTensor());
        }
      const auto host = placement.to_host(returned);
      for (size_t k = 0; k < keys.size(); ++k) {
        const std::string key = keys[k];
        const int64_t numel = key == "forces" ? 3 * n : key == "energy" ? 1 : 9;
        if (host[k].numel() != numel)
          throw std::runtime_error("the hook's output '" + key + "' has " +
                                   std::to_string(host[k].numel()) + " values, expected " +
                                   std::to_string(numel));
        const double *values = host[k].data_ptr<double>();
        if (key == "forces") result.forces.assign(values, values + 3 * n);
        if (key == "energy") result.energy = values[0];
        if (key == "virial") std::copy_n(values, 9, result.virial);
      }
    });
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
