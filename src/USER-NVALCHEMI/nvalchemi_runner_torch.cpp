/* ----------------------------------------------------------------------
   USER-NVALCHEMI: what the runners and the hook share (LibTorch): where tensors live, the
   contract's input tensors, outputs brought back to the host, LibTorch's view of the GPUs.
------------------------------------------------------------------------- */

#include "nvalchemi_runner_torch.h"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>

namespace LAMMPS_NS {
namespace NVAlchemi {

  std::string libtorch_version()
  { return TORCH_VERSION; }

  CudaRuntime cuda_runtime()
  { return {at::hasCUDA(), static_cast<int>(torch::cuda::device_count())}; }

  torch::Device torch_device(const Device &device)
  {
    switch (device.kind) {
      case Device::Kind::CPU:
        break;
      case Device::Kind::CUDA:
        return {torch::kCUDA, static_cast<c10::DeviceIndex>(std::max(0, device.index))};
    }
    return torch::kCPU;
  }

  Placement::Placement(const Device &device) : where(torch_device(device))
  {
    // float32 on a GPU stays IEEE float32: no TF32 in matrix products or cuDNN (the toolkit's
    // pin_fp32)
    if (device.kind == Device::Kind::CUDA) {
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

  torch::Tensor Placement::resident_input(const void *data, c10::IntArrayRef shape,
                                          torch::Dtype type, bool real_valued,
                                          const Device &on) const
  {
    const auto view = torch::from_blob(const_cast<void *>(data), shape,
                                       torch::TensorOptions().dtype(type).device(torch_device(on)));
    return view.to(where, real_valued ? real : type);    // the view itself where it fits
  }

  void Placement::phase_end() const
  {
    if (synchronized_phases && where.is_cuda()) torch::cuda::synchronize(where.index());
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

  void name_a_missing_operator(const std::string &text, const std::string &marker)
  {
    const size_t at = text.find(marker);
    if (at == std::string::npos) return;
    std::string op = text.substr(at + marker.size());
    op = op.substr(0, op.find_first_of(".\n "));
    // LibTorch's and the package's own operators come from no library
    if (is_builtin_namespace(op.substr(0, op.find("::")))) return;
    throw std::runtime_error("the model calls the operator " + op +
                             ", which no loaded library registers: load the library that "
                             "provides it before the model, with the pair_style keyword "
                             "'library <file>.so'");
  }

  torch::Tensor pbc_tensor(const Cell &cell)
  { return torch::tensor({cell.pbc[0], cell.pbc[1], cell.pbc[2]}, torch::kBool).view({1, 3}); }

  torch::Tensor cell_tensor(const Cell &cell, torch::Dtype real)
  {
    auto view =
        torch::from_blob(const_cast<double *>(&cell.lattice[0][0]), {1, 3, 3}, torch::kFloat64);
    return view.to(real, /*non_blocking=*/false, /*copy=*/true);
  }

  torch::Tensor scaled(const torch::Tensor &tensor, double factor)
  { return factor == 1.0 || !tensor.defined() ? tensor : tensor * factor; }

  ContractInputs contract_inputs(const Graph &graph, const Cell &cell, Placement &placement,
                                 bool differentiate, double length)
  {
    const int64_t nrows = graph.tensor_rows();
    const int64_t nedges = graph.tensor_edges();
    const Graph::Resident &resident = graph.resident;
    const auto input = [&](int slot, const void *buffer, const void *kept, c10::IntArrayRef shape,
                           torch::Dtype type, bool real_valued) {
      return resident.set
          ? placement.resident_input(kept, shape, type, real_valued, resident.device)
          : placement.input(slot, buffer, shape, type, real_valued);
    };
    ContractInputs in;
    in.tensors[0] = scaled(
        input(0, graph.positions.data(), resident.positions, {nrows, 3}, torch::kFloat64, true),
        length);
    in.tensors[1] = input(1, graph.atomic_numbers.data(), resident.atomic_numbers, {nrows},
                          torch::kInt64, false);
    in.tensors[2] = input(2, graph.edges.data(), resident.edges, {nedges, 2}, torch::kInt64, false);
    in.tensors[3] = scaled(input(3, graph.edge_vectors.data(), resident.edge_vectors, {nedges, 3},
                                 torch::kFloat64, true),
                           length);
    // a model that brings its own forces may still call requires_grad_() on its inputs
    in.tensors[3].requires_grad_(differentiate);
    in.tensors[4] = scaled(placement.small(cell_tensor(cell, placement.real)), length);
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
                                 std::string(ContractInputs::NAMES[k]) +
                                 "' in place; inputs are the package's buffers, read-only to the "
                                 "model: compute on a copy (.clone()) or out of place");
  }

  torch::Tensor real_rows(const torch::Tensor &tensor, const Graph &graph)
  {
    if (graph.padding_rows == 0 || tensor.dim() == 0 || tensor.size(0) != graph.tensor_rows())
      return tensor;
    return tensor.narrow(0, 0, graph.num_rows());
  }

  SharedValues shared_values(const torch::Tensor &values)
  {
    auto kept = std::make_shared<torch::Tensor>(values);
    const double *data = kept->data_ptr<double>();
    return {std::shared_ptr<const double>(std::move(kept), data), values.numel()};
  }

  bool keep_resident_gradients(const Graph &graph, const torch::Tensor &gradient,
                               ModelOutputs &outputs)
  {
    outputs.resident_edge_gradients = {};
    if (!graph.resident.set || !gradient.defined()) return false;
    const auto device = torch_device(graph.resident.device);
    outputs.resident_edge_gradients =
        shared_values(gradient.detach().to(device, torch::kFloat64).contiguous());
    return true;
  }

  void copy_output(const torch::Tensor &host, OutputTensor &out)
  {
    out.shape.assign(host.sizes().begin(), host.sizes().end());
    out.values.assign(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
  }

  torch::Tensor share_total(torch::Tensor energy, const Graph &graph, const EnergyShare &share,
                            const torch::Tensor &n_owned)
  {
    const bool masked = n_owned.defined();
    if (!masked) energy = real_rows(energy, graph);
    if (share.owned_rows) {
      const int64_t rows = masked ? graph.tensor_rows() : graph.num_rows();
      if (energy.dim() == 0 || energy.size(0) != rows)
        throw std::runtime_error("'" + share.key + "' must have one row per atom (" +
                                 std::to_string(graph.tensor_rows()) + ")");
      if (masked) {
        const auto owned = torch::arange(rows, n_owned.options()) < n_owned;
        energy = energy.reshape({rows, -1}) * owned.to(energy.dtype()).unsqueeze(1);
      } else {
        energy = energy.narrow(0, 0, graph.n_owned);
      }
    }
    return scaled(energy.sum(), share.weight);
  }

  void hand_back(const Graph &graph, const torch::Tensor &total, const torch::Tensor &gradient,
                 const std::vector<std::string> &keys, const std::vector<torch::Tensor> &values,
                 Placement &placement, const UnitConversion &units, ModelOutputs &outputs)
  {
    const auto start = Clock::now();
    std::vector<torch::Tensor> results{scaled(total, units.energy)};
    const auto real_edges = gradient.defined()
        ? scaled(gradient.narrow(0, 0, graph.num_edges()), units.force())
        : gradient;
    // (asked every call: it also clears the gradients a resident graph kept from the last)
    const bool host_gradient =
        !keep_resident_gradients(graph, real_edges, outputs) && gradient.defined();
    if (host_gradient) results.push_back(real_edges);
    for (size_t k = 0; k < values.size(); ++k)
      results.push_back(scaled(real_rows(values[k], graph), units.output(keys[k])));
    const auto host = placement.to_host(results);
    outputs.energy_share = host[0].item<double>();
    outputs.edge_gradients = host_gradient ? shared_values(host[1]) : SharedValues{};
    bool same_keys = outputs.tensors.size() == keys.size();
    for (const auto &key : keys) same_keys = same_keys && outputs.tensors.count(key) == 1;
    if (!same_keys) outputs.tensors.clear();
    size_t k = host_gradient ? 2 : 1;
    for (const auto &key : keys) copy_output(host[k++], outputs.tensors[key]);
    outputs.marshal_seconds += seconds_since(start);
  }

  ExchangeScope::ExchangeScope(Exchanger *exchanger)
  { set_current_exchanger(exchanger); }
  ExchangeScope::~ExchangeScope()
  { set_current_exchanger(nullptr); }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
