/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the choice of runner by a model file's contents, and what LibTorch says of
   the process (threads, registered operators, which LibTorch it runs).
------------------------------------------------------------------------- */

#include "nvalchemi_runner.h"
#include "nvalchemi_runner_torch.h"

#include "nvalchemi_halo_ops_torch.h"
#include "nvalchemi_model_archive.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // oneMKL 2024.2, which PyTorch's CPU wheels up to 2.14.1 bundle, picks each VML function's
    // kernel on its first call without a lock: when that call runs on several threads at once,
    // one thread's chunk can come from a low-accuracy kernel (up to ~4000 ulp; PyTorch issue
    // 188792). Calling each VML-backed unary function once on one thread, in float32 and
    // float64, picks the kernels before any parallel call (what PyTorch's PR 188791 proposes):
    // 64 values are below ATen's grain for VML, so each call runs on this thread alone (no
    // at::set_num_threads(1) around it, which would pin a native-backend build to one thread).
    void choose_vml_kernels()
    {
      static std::once_flag once;
      std::call_once(once, [] {
        using Unary = at::Tensor (*)(const at::Tensor &);
        static const Unary FUNCTIONS[] = {
            &at::acos,   &at::asin,  &at::atan,  &at::cos,    &at::cosh, &at::erf,   &at::erfc,
            &at::erfinv, &at::exp,   &at::expm1, &at::lgamma, &at::log,  &at::log10, &at::log1p,
            &at::log2,   &at::rsqrt, &at::sin,   &at::sinh,   &at::sqrt, &at::tan,   &at::tanh};
        for (const auto dtype : {at::kFloat, at::kDouble}) {
          const at::Tensor x = at::linspace(0.1, 0.9, 64, at::TensorOptions().dtype(dtype));
          for (const Unary function : FUNCTIONS) (void) function(x);
        }
      });
    }
  }    // namespace

  void ModelRunner::set_num_threads(int nthreads)
  {
    if (nthreads > 1) choose_vml_kernels();
    at::set_num_threads(nthreads);
  }

  bool operator_registered(const std::string &qualified_name)
  {
    const size_t dot = qualified_name.find('.', qualified_name.find("::"));
    const c10::OperatorName name(qualified_name.substr(0, dot),
                                 dot == std::string::npos ? "" : qualified_name.substr(dot + 1));
    return c10::Dispatcher::singleton().findOp(name).has_value();
  }

  std::string libtorch_version(const std::string &library_file)
  {
    if (library_file.empty()) return "";
    const std::filesystem::path prefix =
        std::filesystem::path(library_file).parent_path().parent_path();
    std::ifstream python_version(prefix / "version.py");
    for (std::string line; std::getline(python_version, line);) {
      if (line.rfind("__version__", 0) != 0) continue;
      const size_t open = line.find_first_of("'\""), close = line.find_last_of("'\"");
      if (open != std::string::npos && close > open) return line.substr(open + 1, close - open - 1);
    }
    std::ifstream archive_version(prefix / "build-version");
    std::string version;
    std::getline(archive_version, version);
    return version.substr(0, version.find_last_not_of(" \t\r\n") + 1);
  }

  LibTorchFiles libtorch_files()
  {
    LibTorchFiles files;
    files.built_file = NVALCHEMI_TORCH_LIBRARY;
    files.built_version = libtorch_version(files.built_file);
    if (files.built_version.empty()) files.built_version = TORCH_VERSION;
    // at::set_num_threads is defined in libtorch_cpu.so: the file that defines it here is the
    // LibTorch every torch call of the package goes to
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&at::set_num_threads), &info) && info.dli_fname)
      files.loaded_file = info.dli_fname;
    files.loaded_version = libtorch_version(files.loaded_file);
    return files;
  }

  std::string libtorch_mismatch(const LibTorchFiles &files)
  {
    std::error_code ec;
    const auto built = std::filesystem::weakly_canonical(files.built_file, ec);
    const auto loaded = std::filesystem::weakly_canonical(files.loaded_file, ec);
    if (!ec && built == loaded) return "";
    // a version without a local tag (the headers' TORCH_VERSION) matches any build of it
    const bool tagged = files.built_version.find('+') != std::string::npos;
    const std::string loaded_version = tagged
        ? files.loaded_version
        : files.loaded_version.substr(0, files.loaded_version.find('+'));
    if (!files.loaded_version.empty() && loaded_version == files.built_version) return "";
    return "this process runs LibTorch " +
        (files.loaded_version.empty() ? std::string("of unknown version") : files.loaded_version) +
        " from " + files.loaded_file +
        ", loaded before LAMMPS (by Python's 'import torch' or "
        "another library), but the package was built against LibTorch " +
        files.built_version + " (" + files.built_file +
        "); one process holds one LibTorch, and a package built against "
        "another version would crash in it. Import the torch LAMMPS was built with (run Python "
        "from the environment whose site-packages holds " +
        files.built_file +
        "), or build "
        "LAMMPS against the torch this process imports (-DNVALCHEMI_PYTHON=<its python>)";
  }

  bool is_aoti_package(const std::string &file_bytes)
  {
    // a .pt2 is a zip archive whose entries (names stored uncompressed) sit under
    // <name>/data/aotinductor/; a TorchScript archive has none there
    return file_bytes.compare(0, AOTI_PACKAGE_SIGNATURE.size(), AOTI_PACKAGE_SIGNATURE) == 0 &&
        file_bytes.find(AOTI_PACKAGE_MARKER) != std::string::npos;
  }

  std::unique_ptr<ModelRunner> load_model(const std::string &file_bytes, const Device &device)
  {
    const bool aoti = is_aoti_package(file_bytes);
    const std::string as = "as " + std::string(aoti ? "an " : "a ") +
        std::string(aoti ? AOTI_FORMAT : TORCHSCRIPT_FORMAT) + " model: ";
    try {
      check_archive(file_bytes);
    } catch (std::exception &e) {
      throw std::runtime_error(as + e.what());
    }
    try {
      register_exchange_ops();    // before deserializing: the model's code may call them
      if (aoti) return load_aoti_model(file_bytes, device);
      return load_torchscript_model(file_bytes, device);
    } catch (std::exception &e) {
      // an intact file LibTorch cannot load: say what it is where the bytes tell
      const std::string what = describe_non_model(file_bytes);
      throw std::runtime_error(what.empty() ? as + e.what() : "as a model: " + what);
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
