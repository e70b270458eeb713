/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the TorchScript model runner (.pt), beside the AOTInductor one
   (nvalchemi_runner_aoti.cpp). Implements the model contract of doc/Howto_nvalchemi_contract.rst.
------------------------------------------------------------------------- */

#include "nvalchemi_runner.h"
#include "nvalchemi_runner_cuda_graph.h"
#include "nvalchemi_runner_foreign.h"
#include "nvalchemi_runner_torch.h"

#include "nvalchemi_model_metadata.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
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
          torch::jit::ExtraFilesMap extra{{std::string(METADATA_FILE), ""}};
          for (const auto &name : foreign_extra_files()) extra[name] = "";
          try {
            module = torch::jit::load(stream, placement.device(), extra);
          } catch (const std::exception &e) {
            // (TorchScript's compiler reports it as a torch::jit::ErrorReport, not a c10::Error)
            name_a_missing_operator(e.what(), "Unknown builtin op: ");
            throw;
          }
          module.eval();
          metadata = extra[std::string(METADATA_FILE)];
          // a file of another framework's LAMMPS style, without the package's metadata
          if (metadata.empty()) foreign = foreign_model(module, extra);
          if (foreign) metadata = foreign->metadata_text();
        });
      }

      std::string_view format() const override { return TORCHSCRIPT_FORMAT; }
      std::string foreign_format() const override { return foreign ? foreign->name() : ""; }
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
      void set_synchronized_phases(bool on) override { placement.synchronized_phases = on; }
      CudaGraphCapture &cuda_graphs() override { return capture; }

      void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                    Exchanger *exchanger, ModelOutputs &outputs) override
      {
        ExchangeScope scope(exchanger);
        rethrow_torch_errors([&] {
          auto start = Clock::now();
          ContractInputs in =
              contract_inputs(graph, cell, placement, share.differentiate, units.length);
          placement.phase_end();
          outputs.marshal_seconds = seconds_since(start);

          // the graph's shapes change from step to step (rows, edges), which the optimizing
          // executor answers by profiling and specializing again; off, the model runs op by
          // op as written (the setting is LibTorch's; restored after this call)
          torch::jit::GraphOptimizerEnabledGuard optimizer(graph_optimization);
          const std::vector<torch::Tensor> inputs(in.tensors, in.tensors + ContractInputs::COUNT);
          start = Clock::now();
          std::vector<torch::Tensor> result;
          if (auto replayed = capture.run(inputs, [&](const std::vector<torch::Tensor> &given) {
                return call(given, graph, share, true, nullptr);
              })) {
            result = std::move(*replayed);
            placement.phase_end();
            outputs.forward_seconds = seconds_since(start);    // forward and backward
            outputs.backward_seconds = 0.0;
          } else {
            result = call(inputs, graph, share, false, &outputs);
          }
          check_inputs_unchanged(in);

          hand_back(graph, result[0], result[1], output_keys, {result.begin() + 2, result.end()},
                    placement, units, outputs);
        });
      }

     private:
      // The model's forward on the contract's inputs, then the energy share it returns and its
      // gradient with respect to the edge vectors: [share, gradient (undefined: none), the
      // outputs in output_keys' order]. `masked`: the share of the owned rows is summed by a
      // mask of the rows below the n_owned input, over the padded rows, so that a CUDA graph
      // captured once holds it for any n_owned; else by the graph's counts. `timed`: phase times
      // go there.
      std::vector<torch::Tensor> call(const std::vector<torch::Tensor> &in, const Graph &graph,
                                      const EnergyShare &share, bool masked, ModelOutputs *timed)
      {
        c10::Dict<std::string, torch::Tensor> inputs;
        for (int k = 0; k < ContractInputs::COUNT; ++k)
          inputs.insert(std::string(ContractInputs::NAMES[k]), in[k]);
        auto start = Clock::now();
        const c10::IValue result = foreign ? c10::IValue(foreign->forward(in))
                                           : module.forward({inputs});
        if (timed) {
          placement.phase_end();
          timed->forward_seconds = seconds_since(start);
        }
        if (!result.isGenericDict())
          throw std::runtime_error("the model's forward() must return a Dict[str, Tensor]");
        const auto dict = result.toGenericDict();
        for (const auto &item : dict)
          placement.check_output(item.key().toStringRef(), item.value().toTensor());

        if (!dict.contains(share.key))
          throw std::runtime_error("the model's output has no '" + share.key +
                                   "' entry, the energy its spec names");
        const auto total = share_total(dict.at(share.key).toTensor(), graph, share,
                                       masked ? in[6] : torch::Tensor());

        torch::Tensor gradient;
        start = Clock::now();
        if (share.differentiate && total.requires_grad())
          gradient = torch::autograd::grad({total}, {in[3]}, {},
                                           /*retain_graph=*/false, /*create_graph=*/false,
                                           /*allow_unused=*/true)[0];
        if (timed) {
          placement.phase_end();
          timed->backward_seconds = seconds_since(start);
        }
        std::vector<torch::Tensor> out{total, gradient};
        output_keys.clear();
        for (const auto &item : dict) {
          output_keys.push_back(item.key().toStringRef());
          out.push_back(item.value().toTensor());
        }
        return out;
      }

      torch::jit::Module module;
      std::unique_ptr<ForeignModel> foreign;    // a foreign format's call, else none
      std::string metadata;
      Placement placement;
      bool graph_optimization = false;
      std::vector<std::string> output_keys;    // the model's outputs, in the order of call()'s
      CallCapture capture;

      // any energy share: the module's outputs are summed and differentiated here
      void check_share(const EnergyShare &) const override {}
      void apply(const RunOptions &options) override
      {
        placement.real = options.float64 ? torch::kFloat64 : torch::kFloat32;
        graph_optimization = options.graph_optimization;
      }
    };
  }    // namespace

  std::unique_ptr<ModelRunner> load_torchscript_model(const std::string &archive_bytes,
                                                      const Device &device)
  { return std::make_unique<TorchScriptRunner>(archive_bytes, device); }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
