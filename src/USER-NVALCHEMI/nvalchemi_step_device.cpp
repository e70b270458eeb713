/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the device keyword and the choice of a rank's device.
------------------------------------------------------------------------- */

#include "nvalchemi_step_device.h"

#include <cctype>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  std::string Device::package_key() const
  {
    switch (kind) {
      case Kind::CPU:
        return "cpu";
      case Kind::CUDA:
        return "cuda";
    }
    return "cpu";
  }

  std::string Device::str() const
  {
    if (!is_gpu() || index < 0) return package_key();
    return package_key() + ":" + std::to_string(index);
  }

  Device parse_device(const std::string &text)
  {
    if (text == "cpu") return {};
    if (text == "cuda") return Device::gpu(-1);
    const std::string prefix = "cuda:";
    const std::string number =
        text.substr(text.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : text.size());
    bool digits = !number.empty() && number.size() < 6;
    for (char c : number) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits)
      throw std::invalid_argument("the device must be cpu, cuda or cuda:N (N a GPU number), not '" +
                                  text + "'");
    return Device::gpu(std::stoi(number));
  }

  Device choose_device(const Device *requested, const CudaRuntime &runtime, int node_rank)
  {
    if (!requested)    // the default: a GPU when there is one
      return runtime.device_count > 0 ? Device::gpu(node_rank % runtime.device_count) : Device{};
    if (!requested->is_gpu()) return *requested;
    const std::string asked = "device " + requested->str();
    if (!runtime.built_with_cuda)
      throw std::invalid_argument(
          asked +
          " needs a LibTorch built with CUDA, and this one is a CPU-only build: build the "
          "package against a CUDA LibTorch (Build_nvalchemi in the package's "
          "documentation), or use device cpu");
    if (runtime.device_count == 0)
      throw std::invalid_argument(asked +
                                  ": LibTorch sees no GPU on this node (check the driver and "
                                  "CUDA_VISIBLE_DEVICES), or use device cpu");
    if (requested->index >= runtime.device_count)
      throw std::invalid_argument(
          asked + ": this node has " + std::to_string(runtime.device_count) +
          " visible GPU(s), cuda:0 to cuda:" + std::to_string(runtime.device_count - 1) +
          " (a bare 'device cuda' spreads the ranks of a node over them)");
    if (requested->index >= 0) return *requested;
    return Device::gpu(node_rank % runtime.device_count);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
