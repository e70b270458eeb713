/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the AOTInductor model runner (.pt2 packages written by
   nvalchemi_lammps.export.save_aoti_model). The compiled program takes the
   contract's seven inputs positionally and returns (atomic energies, the
   gradient of the owned rows' energy sum with respect to edge_vectors): an
   exported program cannot be differentiated from C++, so it holds its backward
   pass, exchange ops included (they run through the dispatcher by name). A
   package that reads the owned count as a size takes n_owned as a tensor of
   n_owned rows (the owned atoms' atomic numbers) instead of the scalar.
   Also nequip-compile's packages for pair_style allegro (--target
   pair_allegro), which return their own forces: run as that style runs them.
------------------------------------------------------------------------- */

#include "nvalchemi_runner.h"
#include "nvalchemi_runner_cuda_graph.h"
#include "nvalchemi_runner_torch.h"

#include "nvalchemi_model_metadata.h"
#include "nvalchemi_runner_foreign.h"

#include <ATen/cpu/Utils.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/utsname.h>
#include <unistd.h>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
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
            ": export it again on this machine, or with --cpu-isa avx2 (or default) for code "
            "that older CPUs run");
    }

  }    // namespace

  AotiPackage load_aoti_package(const std::string &bytes, const Device &device, bool capturable)
  {
    AotiPackage package;
    TemporaryPackage file(bytes);
    package.meta =
        torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(file.path, "model");
    check_target(package.meta, device);
    const auto load = [&](bool single_threaded) {
      try {
        package.loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
            file.path, "model", single_threaded, /*num_runners=*/1,
            static_cast<c10::DeviceIndex>(device.loader_index()));
        package.single_threaded = single_threaded;
      } catch (const c10::Error &e) {
        // the program's calls of operators beyond ATen's are resolved when it loads
        name_a_missing_operator(e.what_without_backtrace(), "Could not find schema for ");
        // a package of a torch before 2.7 has no single-threaded run: the default one, then
        if (!single_threaded ||
            std::string(e.what()).find("RunSingleThreaded") == std::string::npos)
          throw;
      }
    };
    load(capturable);
    if (!package.loader) load(false);
    return package;
  }

  namespace {
    // What the runners of compiled programs share: the program, where its tensors live, and
    // the settings that do not apply to a compiled program.
    class CompiledRunner : public ModelRunner {
     public:
      CompiledRunner(AotiPackage &package, const Device &device) :
          loader(std::move(package.loader)), placement(device)
      {
        if (!package.single_threaded)
          capture.refuse("the package was compiled by a torch before 2.7, whose programs have no "
                         "single-threaded run, which a CUDA graph could capture: export it again");
      }
      std::string_view format() const override { return AOTI_FORMAT; }
      // a compiled program's calls are not listed in the package (an operator no loaded library
      // registers fails the load, naming it; the exporter lists them in the spec's custom_ops)
      std::vector<std::string> custom_operators() const override { return {}; }
      void set_synchronized_phases(bool on) override { placement.synchronized_phases = on; }
      // the program's run, forward and backward, captured whole
      CudaGraphCapture &cuda_graphs() override { return capture; }

     protected:
      // The program run on `inputs` (replayed from its CUDA graph where capture is on), timed
      // into `outputs` (marshal_seconds: since `start`).
      std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs, Clock::time_point start,
                                  ModelOutputs &outputs)
      {
        placement.phase_end();
        outputs.marshal_seconds = seconds_since(start);
        start = Clock::now();
        auto replayed = capture.run(inputs, [&](const std::vector<at::Tensor> &given) {
          return loader->run(given);
        });
        std::vector<at::Tensor> result = replayed ? std::move(*replayed) : loader->run(inputs);
        placement.phase_end();
        outputs.forward_seconds = seconds_since(start);
        outputs.backward_seconds = 0.0;    // compiled into the program's run
        return result;
      }

      // the precision; a compiled program has no graph to optimize
      void apply(const RunOptions &options) override
      { placement.real = options.float64 ? torch::kFloat64 : torch::kFloat32; }

      std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
      Placement placement;
      CallCapture capture;
    };

    // A package of the package's exporter: the model contract's program. It returns the
    // model's outputs (AOTI_OUTPUTS, in order) and then the gradient, compiled in, of the energy
    // sum its spec's force strategy differentiates (AOTI_GRADIENT); the energy share is summed
    // here from the outputs, as the TorchScript runner sums it.
    class ContractProgram : public CompiledRunner {
     public:
      ContractProgram(AotiPackage &&package, const Device &device) :
          CompiledRunner(package, device), metadata(package.meta[std::string(METADATA_FILE)]),
          energy_output(package.meta[std::string(AOTI_ENERGY_OUTPUT)]),
          owned_rows_as_size(package.meta[std::string(AOTI_OWNED_ROWS)] == AOTI_OWNED_ROWS_AS_SIZE)
      {
        const auto listed = package.meta.find(std::string(AOTI_OUTPUTS));
        if (listed == package.meta.end()) {    // written before: (energies, their gradient)
          output_keys = {energy_output};
          gradient_of = AOTI_GRADIENT_OF_OWNED_ROWS;
          return;
        }
        output_keys = words(listed->second);
        if (output_keys.empty())
          throw std::runtime_error("the package's " + std::string(AOTI_OUTPUTS) +
                                   " entry names no output");
        gradient_of = package.meta[std::string(AOTI_GRADIENT)];
        if (gradient_of != AOTI_GRADIENT_OF_OWNED_ROWS &&
            gradient_of != AOTI_GRADIENT_OF_ALL_ROWS && gradient_of != AOTI_NO_GRADIENT)
          throw std::runtime_error("the package's " + std::string(AOTI_GRADIENT) + " entry '" +
                                   gradient_of + "' is none of this build's");
      }

      const std::string &metadata_text() const override { return metadata; }

      // The gradient is compiled into the program: the run's spec must differentiate the same
      // energy sum (its weight over ranks is applied here).
      void check_share(const EnergyShare &share) const override
      {
        const bool differentiates = gradient_of != AOTI_NO_GRADIENT;
        const bool owned = gradient_of == AOTI_GRADIENT_OF_OWNED_ROWS;
        if (std::find(output_keys.begin(), output_keys.end(), share.key) == output_keys.end() ||
            (differentiates && share.key != energy_output) ||
            share.differentiate != differentiates || (differentiates && share.owned_rows != owned))
          throw std::invalid_argument(
              "the package was compiled to " + describe(differentiates, owned, energy_output) +
              " and the spec this run uses asks to " +
              describe(share.differentiate, share.owned_rows, share.key) +
              "; a package's forces are compiled in: export it again with the spec of this run "
              "(the exporter's spec), or leave out the pair_style keywords that change its force "
              "strategy or energy output");
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
          std::vector<at::Tensor> result = run(inputs, start, outputs);
          check_inputs_unchanged(in);
          const int64_t nedges = graph.tensor_edges();
          if (result.size() != output_keys.size() + 1)
            throw std::runtime_error(
                "the AOTInductor program returned " + std::to_string(result.size()) +
                " tensors; its package lists " + std::to_string(output_keys.size()) +
                " outputs and then the edge gradients");
          at::Tensor gradient = result.back();
          result.pop_back();
          for (size_t k = 0; k < result.size(); ++k)
            placement.check_output(output_keys[k], result[k]);
          if (gradient_of == AOTI_NO_GRADIENT) {
            gradient = at::Tensor();
          } else {
            if (gradient.numel() != 3 * nedges)
              throw std::runtime_error("the AOTInductor program must return edge gradients [" +
                                       std::to_string(nedges) + ", 3]");
            placement.check_output("edge gradients", gradient);
            gradient = scaled(gradient.view({nedges, 3}), share.weight);
          }
          const size_t at =
              std::find(output_keys.begin(), output_keys.end(), share.key) - output_keys.begin();
          hand_back(graph, share_total(result[at], graph, share), gradient, output_keys, result,
                    placement, units, outputs);
        });
      }

     private:
      static std::string describe(bool differentiates, bool owned, const std::string &key)
      {
        if (!differentiates) return "take its forces from the model's outputs";
        return "differentiate the sum of " + std::string(owned ? "the owned rows of '" : "'") +
            key + "'";
      }

      std::string metadata, energy_output;
      bool owned_rows_as_size = false;
      std::vector<std::string> output_keys;    // what the program returns before the gradient
      std::string gradient_of;                 // one of AOTI_GRADIENT's values
    };

    // nequip's metadata entries naming a package's inputs and outputs (nequip.utils.aoti_metadata)
    constexpr const char *NEQUIP_INPUTS = "nequip_aoti_inputs";
    constexpr const char *NEQUIP_OUTPUTS = "nequip_aoti_outputs";
    // what `nequip-compile --target pair_allegro` compiles: positions of the rank's atoms and
    // ghosts, edges centre-first from its own atoms, types in; per-atom energies, forces of every
    // row and the virial out
    const char *const ALLEGRO_INPUTS = "pos edge_index atom_types";
    const std::vector<std::string> ALLEGRO_OUTPUTS = {"atomic_energy", "forces", "virial"};

    // nequip-compile's package for pair_style allegro, run as that style runs it: the rank's
    // graph (halo local: edges only into owned atoms, which Allegro sums at their centre), the
    // program's forces on every row (ghost rows' go to their owners) and its virial; the energy
    // is the owned atoms' (a ghost, centre of no edge, has only its constant shift).
    class NequipAllegroProgram : public CompiledRunner {
     public:
      NequipAllegroProgram(AotiPackage &&package, const Device &device) :
          CompiledRunner(package, device)
      {
        auto &meta = package.meta;
        if (!meta["per_edge_type_cutoff"].empty())
          throw std::runtime_error("the nequip package has per-edge-type cutoffs, which the "
                                   "package does not apply: export the model with "
                                   "nvalchemi-nequip-export");
        const auto outputs = words(meta[NEQUIP_OUTPUTS]);
        for (const auto &name : ALLEGRO_OUTPUTS) {
          const auto found = std::find(outputs.begin(), outputs.end(), name);
          if (found == outputs.end())
            throw std::runtime_error("the nequip package returns '" + meta[NEQUIP_OUTPUTS] +
                                     "', without '" + name +
                                     "': compile it with nequip-compile "
                                     "--target pair_allegro");
          position[name] = found - outputs.begin();
        }
        const auto species =
            species_of(words(meta["type_names"]), name, "export it with nvalchemi-nequip-export");
        table = type_index_table(species);
        const std::string spec =
            R"({"version": 1, "halo": "local", "compile": {"force_strategy": "model"}, "outputs": {)"
            R"("atomic_energies": {"kind": "per_node", "reduce": "owned_only"}, )"
            R"("energy": {"kind": "per_graph", "reduce": "all_reduce"}, )"
            R"("forces": {"kind": "per_node", "reduce": "all_reduce"}, )"
            R"("virial": {"kind": "per_graph", "reduce": "all_reduce"}}})";
        if (meta["r_max"].empty())
          throw std::runtime_error("the nequip package records no cutoff (r_max): compile it "
                                   "again with nequip-compile --target pair_allegro");
        metadata = foreign_metadata(std::stod(meta["r_max"]), species, NEQUIP_IO_DTYPE, spec);
      }
      // A package nequip-compile wrote for pair_style allegro; false for one it did not write.
      // Throws for its other targets, saying why they cannot run on a rank's graph.
      static bool recognises(std::unordered_map<std::string, std::string> &meta)
      {
        if (meta.count(NEQUIP_INPUTS) == 0) {
          if (meta.count("type_names") == 0 || meta.count("r_max") == 0) return false;
          throw std::runtime_error("the nequip package does not name its inputs and outputs "
                                   "(nequip_aoti_inputs: written by an older nequip): compile "
                                   "it again with nequip-compile --target pair_allegro");
        }
        if (meta[NEQUIP_INPUTS] == ALLEGRO_INPUTS) return true;
        if (meta[NEQUIP_INPUTS] == "pos edge_index atom_types cell edge_cell_shift")
          throw std::runtime_error(
              "the nequip package takes '" + meta[NEQUIP_INPUTS] +
              "' (nequip-compile --target pair_nequip or ase): its program returns the forces "
              "of the whole graph it is given, its ghost atoms' energies included, which cannot "
              "be limited to a rank's own atoms (pair_style nequip runs it on one rank, the "
              "whole system its own); export the model with nvalchemi-nequip-export (halo "
              "layerwise, AOTInductor or TorchScript), or compile an Allegro model with "
              "--target pair_allegro");
        throw std::runtime_error("the nequip package takes '" + meta[NEQUIP_INPUTS] +
                                 "', not pair_style allegro's '" + ALLEGRO_INPUTS +
                                 "': compile it with nequip-compile --target pair_allegro, or "
                                 "export the model with nvalchemi-nequip-export");
      }

      static constexpr const char *name = "nequip (nequip-compile --target pair_allegro)";
      std::string foreign_format() const override { return name; }
      const std::string &metadata_text() const override { return metadata; }

      void check_share(const EnergyShare &share) const override
      {
        if (share.differentiate || !share.owned_rows || share.key != "atomic_energies")
          throw std::invalid_argument("a pair_allegro package returns its own forces: its "
                                      "force strategy is model, its energy the owned atoms'");
      }

      void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share, Exchanger *,
                    ModelOutputs &outputs) override
      {
        rethrow_torch_errors([&] {
          torch::NoGradGuard no_grad;    // the program holds its own backward pass
          auto start = Clock::now();
          ContractInputs in = contract_inputs(graph, cell, placement, false, units.length);
          const auto &atomic_numbers = in.tensors[1], &neighbor_list = in.tensors[2];
          // edges centre (the contract's receiver) first
          const std::vector<at::Tensor> inputs{in.tensors[0],
                                               neighbor_list.t().flip(0).contiguous(),
                                               type_indices(table, atomic_numbers)};
          const std::vector<at::Tensor> result = run(inputs, start, outputs);
          check_inputs_unchanged(in);
          const int64_t nrows = graph.tensor_rows();
          const auto &energies = result.at(position.at("atomic_energy"));
          const auto &forces = result.at(position.at("forces"));
          const auto &virial = result.at(position.at("virial"));
          if (energies.numel() != nrows || forces.numel() != 3 * nrows || virial.numel() != 9)
            throw std::runtime_error("the nequip package must return atomic_energy [" +
                                     std::to_string(nrows) + ", 1], forces [" +
                                     std::to_string(nrows) + ", 3] and virial [1, 3, 3]");
          for (const auto &output : ALLEGRO_OUTPUTS)
            placement.check_output(output, result.at(position.at(output)));
          start = Clock::now();
          const auto rows = energies.reshape({-1});
          const auto host = placement.to_host(
              {scaled(rows.narrow(0, 0, graph.n_owned).sum(), units.energy),
               scaled(real_rows(rows, graph), units.output(share.key)),
               scaled(real_rows(forces.reshape({-1, 3}), graph), units.output("forces")),
               scaled(virial.reshape({3, 3}), units.output("virial"))});
          outputs.energy_share = host[0].item<double>();
          outputs.edge_gradients = SharedValues{};
          outputs.tensors.clear();
          copy_output(host[1], outputs.tensors[share.key]);
          copy_output(host[2], outputs.tensors["forces"]);
          copy_output(host[3], outputs.tensors["virial"]);
          outputs.marshal_seconds += seconds_since(start);
        });
      }

     private:
      torch::Tensor table;
      std::map<std::string, size_t> position;    // of each output in the program's results
      std::string metadata;
    };
  }    // namespace

  std::unique_ptr<ModelRunner> load_aoti_model(const std::string &package_bytes,
                                               const Device &device)
  {
    std::unique_ptr<ModelRunner> runner;
    rethrow_torch_errors([&] {
      AotiPackage package = load_aoti_package(package_bytes, device, /*capturable=*/true);
      if (package.meta[std::string(METADATA_FILE)].empty() &&
          NequipAllegroProgram::recognises(package.meta))
        runner = std::make_unique<NequipAllegroProgram>(std::move(package), device);
      else
        runner = std::make_unique<ContractProgram>(std::move(package), device);
    });
    return runner;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
