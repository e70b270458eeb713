/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a model behind a LibTorch-free interface, whatever its format: the runner
   interface and the choice of runner by the file's contents. The runners (TorchScript:
   nvalchemi_runner_torchscript.cpp, AOTInductor: nvalchemi_runner_aoti.cpp) and what they share
   (nvalchemi_runner_torch.h) are the translation units with LibTorch headers.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RUNNER_H
#define LMP_NVALCHEMI_RUNNER_H

#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_model_units.h"
#include "nvalchemi_outputs.h"
#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_step_device.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // How a loaded model runs in this LAMMPS run, given once its metadata is read.
  struct RunOptions {
    UnitConversion units;    // the model's units against the run's (none: the same)
    EnergyShare share;       // the energy each call sums and differentiates
    bool float64 = true;     // the precision the model computes in (inputs and outputs converted)
    // whether TorchScript's graph executor optimizes the model's graph while it runs (profiles
    // the first calls, then specializes to the shapes seen): pair_style keyword jit_optimize; no
    // effect on a format without a graph executor
    bool graph_optimization = false;
  };

  // CUDA-graph capture of a model's calls (ModelRunner::cuda_graphs()): while enabled, each call
  // is captured once per set of input shapes (static shapes on a GPU) and replayed after. A
  // capture that fails is not tried again and the call runs uncaptured; problem() then says why.
  class CudaGraphCapture {
   public:
    virtual ~CudaGraphCapture() = default;
    virtual void enable(bool on) = 0;
    virtual int captures() const = 0;
    virtual const std::string &problem() const = 0;    // "" while capturing works
  };

  // A model file loaded for evaluation, one per pair style instance.
  class ModelRunner {
   public:
    ModelRunner() = default;
    virtual ~ModelRunner() = default;
    ModelRunner(const ModelRunner &) = delete;
    ModelRunner &operator=(const ModelRunner &) = delete;

    // TORCHSCRIPT_FORMAT or AOTI_FORMAT (nvalchemi_contract_tables.h)
    virtual std::string_view format() const = 0;

    // The framework and tool whose deployed file this is ("MACE (mace_create_lammps_model)"),
    // run through nvalchemi_runner_foreign.h; "" for a model written for the package.
    virtual std::string foreign_format() const { return ""; }

    // Text of the model's metadata (METADATA_FILE); empty if the model has none.
    virtual const std::string &metadata_text() const = 0;

    // The operators the model calls beyond ATen's and the package's exchange ops ("ns::name",
    // sorted), which operator libraries registered; empty where the format does not say.
    virtual std::vector<std::string> custom_operators() const = 0;

    // The runner set up for this run from `options`. Throws std::invalid_argument, naming what
    // to change, when this format cannot give the energy share `options.share`.
    void configure(const RunOptions &options)
    {
      check_share(options.share);
      units = options.units;
      apply(options);
    }

    // Whether a call waits for its device at the end of each phase (inputs made, forward,
    // backward), so that ModelOutputs' phase times hold the device's work and not only its
    // launch; off unless asked for (fix nvalchemi/dd reports the phases, at each run's init).
    // No effect on the CPU.
    virtual void set_synchronized_phases(bool on) = 0;

    // CUDA-graph capture of the calls (pair_style keyword cuda_graph; a GPU only).
    virtual CudaGraphCapture &cuda_graphs() = 0;

    // One model call on `graph`: all outputs, and the gradient of this rank's energy share
    // with respect to the edge vectors. `exchanger` serves the model's torch.ops.nvalchemi
    // calls (nullptr: the model may not call them). Throws std::runtime_error on failure.
    virtual void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                          Exchanger *exchanger, ModelOutputs &outputs) = 0;

    // Number of threads LibTorch uses in this process for intra-op parallelism.
    static void set_num_threads(int nthreads);

   protected:
    // Throws std::invalid_argument when this format cannot give the energy share `share`.
    virtual void check_share(const EnergyShare &share) const = 0;
    // The options' precision and graph optimization applied.
    virtual void apply(const RunOptions &options) = 0;

    // The model's units against the run's (NVAlchemi::unit_conversion): evaluate() takes the
    // graph and cell in the run's units and gives the energy share, its gradient and the outputs
    // `units` names in the run's.
    UnitConversion units;
  };

  // The version of the LibTorch this build links ("2.13.0").
  std::string libtorch_version();

  // Whether LibTorch's dispatcher knows the operator "namespace::name[.overload]".
  bool operator_registered(const std::string &qualified_name);

  // The LibTorch this process runs and the one the package was built against. A process has one
  // LibTorch: the dynamic loader gives the package the libtorch_cpu.so already loaded (the soname
  // matches), so a Python process that imported torch before LAMMPS runs the package on that
  // torch's libraries, whichever file the build linked.
  struct LibTorchFiles {
    std::string built_file;        // the libtorch_cpu.so the build linked
    std::string built_version;     // the version its installation records (else its headers')
    std::string loaded_file;       // the file this process takes LibTorch's symbols from
    std::string loaded_version;    // the version its installation records; "" if none does
  };
  LibTorchFiles libtorch_files();

  // The version a LibTorch installation records beside its lib/ folder: pip's torch in
  // version.py (__version__), a LibTorch archive in build-version; "" if neither is readable.
  std::string libtorch_version(const std::string &library_file);

  // "" if the loaded LibTorch is the built file (symbolic links resolved) or an installation of
  // the same version; else what differs and how to make them one.
  std::string libtorch_mismatch(const LibTorchFiles &files);

  // Whether the bytes of a model file are an AOTInductor package (else TorchScript).
  bool is_aoti_package(const std::string &file_bytes);

  // The runner for the bytes of a model file (a TorchScript archive, .pt, or an AOTInductor
  // package, .pt2), the format recognised from the contents, loaded onto `device` (chosen:
  // choose_device). Throws std::runtime_error ("as a TorchScript model: " and the loader's
  // message) if the bytes cannot be loaded in that format or for that device, naming the
  // operator when the model calls one that no loaded library registers.
  std::unique_ptr<ModelRunner> load_model(const std::string &file_bytes, const Device &device = {});

  // The runners load_model chooses between, one unit each (with LibTorch headers): the
  // TorchScript runner (nvalchemi_runner_torchscript.cpp), its module loaded onto `device`.
  std::unique_ptr<ModelRunner> load_torchscript_model(const std::string &archive_bytes,
                                                      const Device &device);

  // The AOTInductor runner (nvalchemi_runner_aoti.cpp), its program loaded for `device`.
  std::unique_ptr<ModelRunner> load_aoti_model(const std::string &package_bytes,
                                               const Device &device);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
