/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the LibTorch half of fix nvalchemi/dd's hook: the user's module called on
   a batch of atoms.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_hook_torch.h"

#include "nvalchemi_halo_ops_torch.h"
#include "nvalchemi_model_archive.h"
#include "nvalchemi_runner.h"
#include "nvalchemi_runner_torch.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // the space-separated names of a package's metadata entry
    std::vector<std::string> words(const std::string &text)
    {
      std::istringstream in(text);
      std::vector<std::string> found;
      for (std::string word; in >> word;) found.push_back(word);
      return found;
    }

    // the names of contract list `key` (hook_inputs, hook_outputs), in the table's order
    std::vector<std::string> contract_names(std::string_view key)
    {
      std::vector<std::string> names;
      for (int k = 0; !contract_list_item(key, k).empty(); ++k)
        names.emplace_back(contract_list_item(key, k));
      return names;
    }
  }    // namespace

  // call() fills the batch in the table's order, by position
  static_assert(contract_list_item("hook_inputs", 0) == "positions" &&
                    contract_list_item("hook_inputs", 5) == "atomic_numbers" &&
                    contract_list_item("hook_inputs", 7) == "pbc" &&
                    contract_list_item("hook_outputs", 0) == "forces" &&
                    contract_list_item("hook_outputs", 2) == "virial",
                "nvalchemi_contract_tables.h: hook_inputs or hook_outputs reordered");

  struct HookModule::Impl {
    torch::jit::Module module;    // a TorchScript hook
    std::string package_bytes;    // an AOTInductor hook: loaded for its device by place_on
    AotiPackage package;
    std::string package_device;    // the device the package is loaded for
    std::vector<std::string> package_inputs, package_outputs;    // in the program's order
    Placement placement;                                         // float64 inputs
  };

  HookModule::HookModule(const std::string &archive) : impl(new Impl)
  {
    const bool package = is_aoti_package(archive);
    try {
      check_archive(archive);
      register_exchange_ops();
      if (package) {    // loaded by place_on, for the device it was compiled for
        impl->package_bytes = archive;
        return;
      }
      rethrow_torch_errors([&] {
        std::istringstream stream(archive);
        impl->module = torch::jit::load(stream, torch::kCPU);
        impl->module.eval();
      });
    } catch (const std::exception &e) {
      throw std::runtime_error(
          std::string(package ? "as an AOTInductor package: " : "as a TorchScript module: ") +
          e.what());
    }
  }

  HookModule::~HookModule() = default;

  void HookModule::place_on(const Device &device)
  {
    rethrow_torch_errors([&] {
      impl->placement = Placement(device);
      if (impl->package_bytes.empty()) {
        impl->module.to(impl->placement.device());
        return;
      }
      if (impl->package.loader && impl->package_device == device.str()) return;
      try {
        impl->package = load_aoti_package(impl->package_bytes, device);
      } catch (const std::exception &e) {
        throw std::runtime_error(std::string("as an AOTInductor package: ") + e.what());
      }
      impl->package_device = device.str();
      impl->package_inputs = words(impl->package.meta[std::string(AOTI_HOOK_INPUTS)]);
      impl->package_outputs = words(impl->package.meta[std::string(AOTI_HOOK_OUTPUTS)]);
      if (impl->package_inputs.empty())
        throw std::runtime_error("the AOTInductor package records no " +
                                 std::string(AOTI_HOOK_INPUTS) +
                                 ", so it is not a hook (a model file?); write a hook package with "
                                 "nvalchemi_lammps.export.save_hook");
    });
  }

  void HookModule::call(const HookInputs &batch, HookOutputs &result)
  {
    rethrow_torch_errors([&] {
      const int64_t n = batch.n;
      Placement &placement = impl->placement;
      int slot = 0;
      const auto input = [&](const auto &values, c10::IntArrayRef shape, torch::Dtype type) {
        return placement.input(slot++, values.data(), shape, type, false);
      };
      // the batch by hook input name, in the order of hook_inputs of the contract's table
      static const std::vector<std::string> names = contract_names("hook_inputs");
      std::vector<std::pair<std::string, torch::Tensor>> given;
      given.emplace_back(names[0], input(batch.positions, {n, 3}, torch::kFloat64));
      given.emplace_back(names[1], input(batch.velocities, {n, 3}, torch::kFloat64));
      given.emplace_back(names[2], input(batch.forces, {n, 3}, torch::kFloat64));
      given.emplace_back(names[3], input(batch.atom_ids, {n}, torch::kInt64));
      given.emplace_back(names[4], input(batch.atom_types, {n}, torch::kInt64));
      if (!batch.atomic_numbers.empty())
        given.emplace_back(names[5], input(batch.atomic_numbers, {n}, torch::kInt64));
      given.emplace_back(names[6], placement.small(cell_tensor(batch.cell, torch::kFloat64)));
      given.emplace_back(names[7], placement.small(pbc_tensor(batch.cell)));

      // what it returned of the hook outputs (forces, energy, virial)
      static const std::vector<std::string> kinds = contract_names("hook_outputs");
      std::map<std::string, torch::Tensor> returned;
      if (impl->package_bytes.empty()) {
        c10::Dict<std::string, torch::Tensor> inputs;
        for (const auto &entry : given) inputs.insert(entry.first, entry.second);
        const c10::IValue value = impl->module.forward({inputs});
        if (!value.isGenericDict())
          throw std::runtime_error("the hook's forward() must return a Dict[str, Tensor]");
        const auto dict = value.toGenericDict();
        for (const std::string &key : kinds)
          if (dict.contains(key)) returned[key] = dict.at(key).toTensor();
      } else {
        if (!impl->package.loader) place_on(Device());    // never placed: the CPU
        std::vector<torch::Tensor> inputs;
        for (const std::string &name : impl->package_inputs) {
          const auto found = std::find_if(given.begin(), given.end(), [&](const auto &entry) {
            return entry.first == name;
          });
          if (found == given.end())
            throw std::runtime_error("the hook package takes '" + name +
                                     "', which this run does not give" +
                                     (name == names[5] ? " (no pair_style nvalchemi names the "
                                                         "species)"
                                                       : ""));
          inputs.push_back(found->second);
        }
        const std::vector<torch::Tensor> outputs = impl->package.loader->run(inputs);
        if (outputs.size() != impl->package_outputs.size())
          throw std::runtime_error("the hook package returned " + std::to_string(outputs.size()) +
                                   " tensors and records " +
                                   std::to_string(impl->package_outputs.size()) + " outputs");
        for (size_t k = 0; k < outputs.size(); ++k) returned[impl->package_outputs[k]] = outputs[k];
      }

      // back to the host together
      std::vector<std::string> keys;
      std::vector<torch::Tensor> tensors;
      for (const std::string &key : kinds)
        if (returned.count(key)) {
          keys.push_back(key);
          tensors.push_back(returned.at(key).to(torch::kFloat64));
        }
      result.has_forces = returned.count(kinds[0]) > 0;
      result.has_energy = returned.count(kinds[1]) > 0;
      result.has_virial = returned.count(kinds[2]) > 0;
      const auto host = placement.to_host(tensors);
      for (size_t k = 0; k < keys.size(); ++k) {
        const std::string &key = keys[k];
        const int64_t numel = key == kinds[0] ? 3 * n : key == kinds[1] ? 1 : 9;
        if (host[k].numel() != numel)
          throw std::runtime_error("the hook's output '" + key + "' has " +
                                   std::to_string(host[k].numel()) + " values, expected " +
                                   std::to_string(numel));
        const double *values = host[k].data_ptr<double>();
        if (key == kinds[0]) result.forces.assign(values, values + 3 * n);
        if (key == kinds[1]) result.energy = values[0];
        if (key == kinds[2]) std::copy_n(values, 9, result.virial);
      }
    });
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
