/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what the model runners and the hook share (LibTorch; included only by the
   translation units with LibTorch headers): where tensors live (Placement: device and dtype,
   decided in one place), the contract's input tensors, outputs brought back to the host,
   errors.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RUNNER_TORCH_H
#define LMP_NVALCHEMI_RUNNER_TORCH_H

#include "nvalchemi_contract_tables.h"
#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_model_units.h"
#include "nvalchemi_outputs.h"
#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_step_device.h"

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // LibTorch's name for a device of the package.
  torch::Device torch_device(const Device &device);

  // An AOTInductor package loaded for `device`: its metadata and its program. Throws
  // std::runtime_error where the package was compiled for another device, machine type or CPU
  // instruction set (the model runners and fix nvalchemi/dd's hook load packages through it).
  // `capturable`: run by AOTInductor's single-threaded runner where the package has one (torch
  // 2.7 on), whose run has none of the default runner's locks and events, which a CUDA-graph
  // capture refuses; `single_threaded` says whether it is.
  struct AotiPackage {
    std::unordered_map<std::string, std::string> meta;
    std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
    bool single_threaded = false;
  };
  AotiPackage load_aoti_package(const std::string &bytes, const Device &device,
                                bool capturable = false);

  // Where the tensors the package hands a model (or a hook) live and in what precision: every
  // such tensor is made here, and every output comes back to the host through here. On the CPU
  // an input is a view of the package's buffer when its dtype is the model's (no copy). On a GPU
  // it is copied to the device through a pinned host buffer kept from step to step (one per
  // input slot), and the outputs of a call come back in one device-to-host copy.
  class Placement {
   public:
    explicit Placement(const Device &device = {});
    const torch::Device &device() const { return where; }
    torch::Dtype real = torch::kFloat64;    // the dtype real-valued inputs are given in
    // phase_end() waits for the device (ModelRunner::set_synchronized_phases)
    bool synchronized_phases = false;
    // The end of a timed phase: with synchronized_phases, the device's work queued so far done.
    void phase_end() const;

    // `shape` values of `type` at `data` (real-valued ones converted to `real`). `slot` names
    // the pinned buffer that stages it on a GPU: one per input made in the same call.
    torch::Tensor input(int slot, const void *data, c10::IntArrayRef shape, torch::Dtype type,
                        bool real_valued);
    // The same for values that live on `on` (a resident graph's arrays): a view of them where
    // they are on the model's device in the dtype it takes (no copy), else one copy there.
    torch::Tensor resident_input(const void *data, c10::IntArrayRef shape, torch::Dtype type,
                                 bool real_valued, const Device &on) const;
    // A small tensor made on the host (a cell, a flag) where the model's tensors live.
    torch::Tensor small(const torch::Tensor &host) const;
    // `tensors` (all defined) on the host as contiguous double precision: on the CPU without a
    // copy where they are such already; from a GPU in one copy for all of them.
    std::vector<torch::Tensor> to_host(const std::vector<torch::Tensor> &tensors) const;
    // Throws std::runtime_error when the model's output `name` is a floating-point tensor of
    // another dtype than `real` (the metadata's) or lives on another device than the inputs.
    void check_output(const std::string &name, const torch::Tensor &output) const;

   private:
    torch::Device where;
    std::vector<torch::Tensor> staging;    // pinned host bytes, by slot (GPU only)
  };

  // The contract's seven inputs (doc/Howto_nvalchemi_contract.rst), in its positional order.
  struct ContractInputs {
    static constexpr int COUNT = 7;
    // the contract's input names in this order (nvalchemi_contract_tables.h)
    static constexpr std::string_view NAMES[COUNT] = {
        contract_list_item("contract_inputs", 0), contract_list_item("contract_inputs", 1),
        contract_list_item("contract_inputs", 2), contract_list_item("contract_inputs", 3),
        contract_list_item("contract_inputs", 4), contract_list_item("contract_inputs", 5),
        contract_list_item("contract_inputs", 6)};
    torch::Tensor tensors[COUNT];    // positions ... n_owned
    int64_t versions[COUNT];         // their version counters when made (in-place writes bump)
    torch::Tensor &edge_vectors() { return tensors[3]; }
  };

  // The graph's arrays (padding included) as tensors placed by `placement`; edge_vectors
  // requires grad when `differentiate`. On the CPU in double precision they are views of the
  // graph's buffers, not copies: check_inputs_unchanged() then stops a model that wrote into one.
  // A resident graph's arrays (Graph::resident) are read where they live: views of them on
  // their device when it is the model's. Positions, edge vectors and cell are multiplied by
  // `length` (UnitConversion::length; copies where it is not 1), so that the gradient with
  // respect to edge_vectors is in the model's units.
  ContractInputs contract_inputs(const Graph &graph, const Cell &cell, Placement &placement,
                                 bool differentiate, double length = 1.0);

  // `tensor` times `factor` (a UnitConversion's), `tensor` itself where the factor is 1.
  torch::Tensor scaled(const torch::Tensor &tensor, double factor);
  // Throws std::runtime_error naming an input the model changed in place.
  void check_inputs_unchanged(const ContractInputs &in);

  // The cell's periodic flags [1, 3] (bool) and lattice [1, 3, 3] (rows a, b, c, a copy in
  // `real`), on the host.
  torch::Tensor pbc_tensor(const Cell &cell);
  torch::Tensor cell_tensor(const Cell &cell, torch::Dtype real);

  // A per-row tensor ([tensor rows, ...]) without its padding rows; other tensors unchanged.
  torch::Tensor real_rows(const torch::Tensor &tensor, const Graph &graph);

  // Values of a contiguous double tensor shared with LibTorch, without a copy, in the tensor's
  // memory (the host's, or a GPU's for resident values).
  SharedValues shared_values(const torch::Tensor &values);

  // The real edges' gradient `gradient` (undefined: none) of a call on `graph`: for a resident
  // graph it stays on the graph's device, in double precision (outputs.resident_edge_gradients;
  // no copy where the model computed it there in double), and this returns true; else it returns
  // false and the runner brings it to the host with the other outputs.
  bool keep_resident_gradients(const Graph &graph, const torch::Tensor &gradient,
                               ModelOutputs &outputs);

  // A host tensor (contiguous double) into `out`: its shape and values.
  void copy_output(const torch::Tensor &host, OutputTensor &out);

  // The energy share of a call on `graph`: the `share.key` output `energy` summed (its owned rows
  // where share.owned_rows) times share.weight. With `n_owned` (a CUDA graph's input) the owned
  // rows are those below it, masked over the padded rows, so that one capture holds any count;
  // without it, the graph's own counts. Throws where owned rows are asked of a tensor without
  // one row per atom.
  torch::Tensor share_total(torch::Tensor energy, const Graph &graph, const EnergyShare &share,
                            const torch::Tensor &n_owned = {});

  // What a model's call on `graph` returned, back on the host together, in the run's units:
  // the energy share `total`, the real edges' `gradient` with respect to edge_vectors (undefined:
  // none; kept on the device for a resident graph) and the outputs `values`, named `keys`, into
  // `outputs` (the same keys as last call, the usual case, are overwritten in place).
  void hand_back(const Graph &graph, const torch::Tensor &total, const torch::Tensor &gradient,
                 const std::vector<std::string> &keys, const std::vector<torch::Tensor> &values,
                 Placement &placement, const UnitConversion &units, ModelOutputs &outputs);

  // The exchanger the ops see, for the duration of one forward and backward pass.
  struct ExchangeScope {
    explicit ExchangeScope(Exchanger *exchanger);
    ~ExchangeScope();
  };

  // Throws std::runtime_error naming the operator and the keyword that loads a library for it
  // where a loader's message `text` says, after `marker`, that an operator ("ns::name") outside
  // the builtin namespaces is unknown; returns otherwise.
  void name_a_missing_operator(const std::string &text, const std::string &marker);

  // LibTorch's errors as std::runtime_error with their message (no backtrace).
  template <typename F> void rethrow_torch_errors(F &&body)
  {
    try {
      body();
    } catch (const c10::Error &e) {
      throw std::runtime_error(e.what_without_backtrace());
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
