/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the choice of runner by a model file's contents, and what LibTorch says of
   the process (threads, registered operators).
------------------------------------------------------------------------- */

#include "nvalchemi_runner.h"
#include "nvalchemi_runner_torch.h"

#include "nvalchemi_halo_ops.h"
#include "nvalchemi_model_archive.h"

#include <ATen/Parallel.h>

#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  void ModelRunner::set_num_threads(int nthreads)
  { at::set_num_threads(nthreads); }

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
    const bool aoti = is_aoti_package(file_bytes);
    try {
      check_archive(file_bytes);
      register_exchange_ops();    // before deserializing: the model's code may call them
      if (aoti) return load_aoti_model(file_bytes, device);
      return load_torchscript_model(file_bytes, device);
    } catch (std::exception &e) {
      throw std::runtime_error(std::string(aoti ? "as an AOTInductor" : "as a TorchScript") +
                               " model: " + e.what());
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
