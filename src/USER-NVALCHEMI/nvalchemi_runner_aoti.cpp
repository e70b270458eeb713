/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the AOTInductor model runner (.pt2 packages written by
   nvalchemi_lammps.export.save_aoti_model). The compiled program takes the
   contract's seven inputs positionally and returns (atomic energies, the
   gradient of the owned rows' energy sum with respect to edge_vectors): an
   exported program cannot be differentiated from C++, so it holds its backward
   pass, exchange ops included (they run through the dispatcher by name). A
   package that reads the owned count as a size takes n_owned as a tensor of
   n_owned rows (the owned atoms' atomic numbers) instead of the scalar.
------------------------------------------------------------------------- */

#include "nvalchemi_runner.h"
#include "nvalchemi_runner_torch.h"

#include "nvalchemi_model_metadata.h"

#include <ATen/cpu/Utils.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/utsname.h>
#include <unistd.h>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // the package's metadata entry naming the energy output (nvalchemi_lammps.export.AOTI_ENERGY_OUTPUT)
    constexpr const char *ENERGY_OUTPUT = "nvalchemi_energy_output";
    // the entry saying how the program takes n_owned (nvalchemi_lammps.contract.AOTI_OWNED_ROWS):
    // OWNED_ROWS_AS_SIZE, or absent for the scalar
    constexpr const char *OWNED_ROWS = "nvalchemi_owned_rows";
    constexpr const char *OWNED_ROWS_AS_SIZE = "size";

    // The package's bytes in a file of its own for the loader, removed when done with.
    class TemporaryPackage {
     public:
      explicit TemporaryPackage(const std::string &bytes)
      {
        const char *dir = std::getenv("TMPDIR");
        path = std::string(dir && *dir ? dir : "/tmp") + "/nvalchemi-XXXXXX.pt2";
        const int fd = mkstemps(&path[0], 4);
        if (fd < 0)
          throw std::runtime_error("cannot create a temporary file " + path +
                                   " to unpack the AOTInductor package (set TMPDIR to a "
                                   "writable directory)");
        close(fd);
        std::ofstream out(path, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) throw std::runtime_error("cannot write the AOTInductor package to " + path);
      }
      ~TemporaryPackage() { std::remove(path.c_str()); }
      std::string path;
    };

    // The instruction sets AOTInductor names in AOTI_CPU_ISA, each with the cpuinfo flags
    // its code needs; a word not listed is not checked.
    bool cpu_has(const std::unordered_map<std::string, c10::IValue> &caps, const std::string &isa)
    {
      static const std::map<std::string, std::vector<std::string>> needs = {
          {"AVX2", {"avx2", "fma3"}},
          {"AVX512", {"avx512_f", "avx512_bw", "avx512_vl", "avx512_dq"}},
          {"AVX512_VNNI", {"avx512_vnni"}},
          {"AVX512_BF16", {"avx512_bf16"}},
          {"AMX_TILE", {"amx_tile"}}};
      const auto found = needs.find(isa);
      if (found == needs.end()) return true;
      for (const auto &flag : found->second) {
        const auto cap = caps.find(flag);
        if (cap == caps.end() || !cap->second.isBool() || !cap->second.toBool()) return false;
      }
      return true;
    }

    // The package must have been compiled for the device it runs on, on a machine like this one.
    void check_target(std::unordered_map<std::string, std::string> &meta, const Device &device)
    {
      const std::string compiled_for = meta["AOTI_DEVICE_KEY"].empty() ? "cpu"
                                                                       : meta["AOTI_DEVICE_KEY"];
      const std::string runs_on = device.package_key();
      if (compiled_for != runs_on)
        throw std::runtime_error("the package was compiled for device '" + compiled_for +
                                 "' and this pair style runs its model on device '" + device.str() +
                                 "': use the pair_style keyword device " +
                                 (compiled_for == "cpu" ? std::string("cpu") : compiled_for) +
                                 ", or export the package again with its inputs on " + runs_on);
      utsname host{};
      uname(&host);
      const std::string machine = meta["AOTI_MACHINE"];
      if (!machine.empty() && machine != host.machine)
        throw std::runtime_error("the package was compiled for " + machine + " and this is " +
                                 host.machine + ": export it again on a machine of this kind");
      if (device.is_gpu()) return;    // the instruction sets below are those of CPU kernels
      const auto caps = at::cpu::get_cpu_capabilities();
      std::istringstream words(meta["AOTI_CPU_ISA"]);
      std::string isa, missing;
      while (words >> isa)
        if (!cpu_has(caps, isa)) missing += (missing.empty() ? "" : " ") + isa;
      if (!missing.empty())
        throw std::runtime_error(
            "the package was compiled for the CPU instruction set '" + meta["AOTI_CPU_ISA"] +
            "' and this CPU lacks " + missing +
            ": export it again on this machine, or with ATEN_CPU_CAPABILITY=avx2 (or default) "
            "set at export time for code that older CPUs run");
    }

    class AotiRunner : public ModelRunner {
     public:
      AotiRunner(const std::string &bytes, const Device &device) : placement(device)
      {
        rethrow_torch_errors([&] {
          TemporaryPackage package(bytes);
          auto meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(
              package.path, "model");
          check_target(meta, device);
          loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
              package.path, "model", /*run_single_threaded=*/false, /*num_runners=*/1,
              static_cast<c10::DeviceIndex>(device.loader_index()));
          metadata = meta[METADATA_FILE];
          energy_output = meta[ENERGY_OUTPUT];
          owned_rows_as_size = meta[OWNED_ROWS] == OWNED_ROWS_AS_SIZE;
        });
      }

      const char *format() const override { return "AOTInductor"; }
      const std::string &metadata_text() const override { return metadata; }
      // a compiled program's calls are not listed in the package (an operator missing at run
      // time fails the call, naming it)
      std::vector<std::string> custom_operators() const override { return {}; }
      void set_float64(bool float64) override
      { placement.real = float64 ? torch::kFloat64 : torch::kFloat32; }
      void set_graph_optimization(bool) override {}    // a compiled program: nothing to optimize
      void set_synchronized_phases(bool on) override { placement.synchronized_phases = on; }
      // a compiled program is not captured (pair_style nvalchemi refuses cuda_graph for it)
      void set_cuda_graph(bool) override {}
      int cuda_graph_captures() const override { return 0; }
      const std::string &cuda_graph_problem() const override { return no_problem; }

      void check_share(const EnergyShare &share) const override
      {
        if (!share.owned_rows || !share.differentiate || share.weight != 1.0)
          throw std::invalid_argument(
              "an AOTInductor model returns per-atom energies and their gradient only, so its "
              "spec's force strategy must be node_energy (framework forces from owned node "
              "energies); export the model as TorchScript for the other force strategies");
        if (share.key != energy_output)
          throw std::invalid_argument("the spec's node energy output is '" + share.key +
                                      "' but the package was compiled to return '" + energy_output +
                                      "'");
      }

      void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                    Exchanger *exchanger, ModelOutputs &outputs) override
      {
        ExchangeScope scope(exchanger);
        rethrow_torch_errors([&] {
          torch::NoGradGuard no_grad;    // the program holds its own backward pass
          auto start = Clock::now();
          ContractInputs in = contract_inputs(graph, cell, placement, false, units.length);
          std::vector<at::Tensor> inputs(in.tensors, in.tensors + ContractInputs::COUNT);
          // the owned count as the size of a view (no copy) of the owned rows' atomic numbers
          if (owned_rows_as_size) inputs.back() = inputs[1].narrow(0, 0, graph.n_owned);
          placement.phase_end();
          outputs.marshal_seconds = seconds_since(start);
          start = Clock::now();
          const std::vector<at::Tensor> result = loader->run(inputs);
          placement.phase_end();
          outputs.forward_seconds = seconds_since(start);
          outputs.backward_seconds = 0.0;    // compiled into the program's run
          check_inputs_unchanged(in);
          const int64_t nrows = graph.tensor_rows(), nedges = graph.tensor_edges();
          if (result.size() != 2 || result[0].numel() != nrows || result[1].numel() != 3 * nedges)
            throw std::runtime_error("the AOTInductor program must return (atomic energies [" +
                                     std::to_string(nrows) + "], edge gradients [" +
                                     std::to_string(nedges) + ", 3])");
          placement.check_output("atomic energies", result[0]);
          placement.check_output("edge gradients", result[1]);
          // back to the host together, in the run's units: the energy share, the real edges'
          // gradient (unless it stays on the device), the energies
          start = Clock::now();
          const auto real_edges =
              scaled(result[1].view({nedges, 3}).narrow(0, 0, graph.num_edges()), units.force());
          const bool host_gradient = !keep_resident_gradients(graph, real_edges, outputs);
          std::vector<torch::Tensor> results{
              scaled(result[0].narrow(0, 0, graph.n_owned).sum() * share.weight, units.energy),
              scaled(real_rows(result[0], graph), units.output(share.key))};
          if (host_gradient) results.push_back(real_edges);
          const auto host = placement.to_host(results);
          outputs.energy_share = host[0].item<double>();
          outputs.edge_gradients = host_gradient ? shared_values(host[2]) : SharedValues{};
          if (outputs.tensors.size() != 1 || outputs.tensors.count(share.key) == 0)
            outputs.tensors.clear();
          copy_output(host[1], outputs.tensors[share.key]);
          outputs.marshal_seconds += seconds_since(start);
        });
      }

     private:
      const std::string no_problem;
      std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
      std::string metadata, energy_output;
      bool owned_rows_as_size = false;
      Placement placement;
    };
  }    // namespace

  std::unique_ptr<ModelRunner> load_aoti_model(const std::string &package_bytes,
                                               const Device &device)
  { return std::make_unique<AotiRunner>(package_bytes, device); }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
