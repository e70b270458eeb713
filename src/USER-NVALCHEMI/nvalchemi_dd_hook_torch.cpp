/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the LibTorch half of fix nvalchemi/dd's hook: the user's module called on
   a batch of atoms.
------------------------------------------------------------------------- */

#include "nvalchemi_dd_hook_torch.h"

#include "nvalchemi_halo_ops_torch.h"
#include "nvalchemi_model_archive.h"
#include "nvalchemi_runner_torch.h"

#include <sstream>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct HookModule::Impl {
    torch::jit::Module module;
    Placement placement;    // float64 inputs
  };

  HookModule::HookModule(const std::string &archive) : impl(new Impl)
  {
    check_archive(archive);
    register_exchange_ops();
    rethrow_torch_errors([&] {
      std::istringstream stream(archive);
      impl->module = torch::jit::load(stream, torch::kCPU);
      impl->module.eval();
    });
  }

  HookModule::~HookModule() = default;

  void HookModule::place_on(const Device &device)
  {
    rethrow_torch_errors([&] {
      impl->placement = Placement(device);
      impl->module.to(impl->placement.device());
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
