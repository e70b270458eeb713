/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a model behind a LibTorch-free interface, whatever its
   format (TorchScript or AOTInductor). Only the runner translation units
   (nvalchemi_model.cpp, nvalchemi_aoti.cpp) include LibTorch headers.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_H
#define LMP_NVALCHEMI_MODEL_H

#include "nvalchemi_device.h"
#include "nvalchemi_exchange.h"
#include "nvalchemi_graph.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // One model output in double precision: its shape as returned, values row-major.
  struct OutputTensor {
    std::vector<int64_t> shape;
    std::vector<double> values;
  };

  // The scalar this rank differentiates for framework forces: its share L_r of the total
  // energy, with the shares of all ranks summing to the total (DESIGN.md section 4).
  struct EnergyShare {
    std::string key;              // energy output: node energies or a per-system energy
    bool owned_rows = true;       // sum rows [0, n_owned) only (owned node energies)
    double weight = 1.0;          // 1/nprocs for an energy replicated on every rank
    bool differentiate = true;    // false: the model returns its own forces
  };

  // Read-only values that live in memory LibTorch owns (a tensor), kept alive by the view.
  struct SharedValues {
    std::shared_ptr<const double> data;    // nullptr: no values
    int64_t count = 0;
    const double *get() const { return data.get(); }
    int64_t size() const { return count; }
    bool empty() const { return count == 0; }
    const double &operator[](int64_t k) const { return data.get()[k]; }
  };

  struct ModelOutputs {
    std::map<std::string, OutputTensor> tensors;    // every output the model returned
    // [edges][3]: dL_r / d edge_vectors of the real edges; none when L_r does not depend on them
    SharedValues edge_gradients;
    double energy_share = 0.0;    // L_r
    // wall times of the call: converting inputs to tensors and outputs back; the model's forward
    // and backward (the gradient the package takes; 0 for a program holding its own backward),
    // exchange calls made in them included
    double marshal_seconds = 0.0, forward_seconds = 0.0, backward_seconds = 0.0;
  };

  // A model file loaded for evaluation, one per pair style instance.
  class ModelRunner {
   public:
    ModelRunner() = default;
    virtual ~ModelRunner() = default;
    ModelRunner(const ModelRunner &) = delete;
    ModelRunner &operator=(const ModelRunner &) = delete;

    // "TorchScript" or "AOTInductor"
    virtual const char *format() const = 0;

    // Text of the model's metadata (METADATA_FILE); empty if the model has none.
    virtual const std::string &metadata_text() const = 0;

    // The operators the model calls beyond ATen's and the package's exchange ops ("ns::name",
    // sorted), which operator libraries registered; empty where the format does not say.
    virtual std::vector<std::string> custom_operators() const = 0;

    // Precision the model computes in; inputs are converted to it, outputs back to double.
    virtual void set_float64(bool float64) = 0;

    // Throws std::invalid_argument, naming what to change, when this format cannot give the
    // energy share the spec asks for.
    virtual void check_share(const EnergyShare &share) const = 0;

    // One model call on `graph`: all outputs, and the gradient of this rank's energy share
    // with respect to the edge vectors. `exchanger` serves the model's torch.ops.nvalchemi
    // calls (nullptr: the model may not call them). Throws std::runtime_error on failure.
    virtual void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                          Exchanger *exchanger, ModelOutputs &outputs) = 0;

    // Number of threads LibTorch uses in this process for intra-op parallelism.
    static void set_num_threads(int nthreads);
  };

  // Whether LibTorch's dispatcher knows the operator "namespace::name[.overload]".
  bool operator_registered(const std::string &qualified_name);

  // Whether the bytes of a model file are an AOTInductor package (else TorchScript).
  bool is_aoti_package(const std::string &file_bytes);

  // The runner for the bytes of a model file (a TorchScript archive, .pt, or an AOTInductor
  // package, .pt2), the format recognised from the contents, loaded onto `device` (chosen:
  // choose_device). Throws std::runtime_error with the loader's message if the bytes cannot be
  // loaded in that format or for that device, and naming the operator when the model calls one
  // that no loaded library registers.
  std::unique_ptr<ModelRunner> load_model(const std::string &file_bytes, const Device &device = {});

  // What a hook module of fix nvalchemi/dd sees: n atoms (this rank's, or a gathered system
  // sorted by atom ID), row-major, double precision.
  struct HookBatch {
    int64_t n = 0;
    std::vector<double> positions;          // [n][3], unwrapped
    std::vector<double> velocities;         // [n][3]
    std::vector<double> forces;             // [n][3], the forces so far on this step
    std::vector<int64_t> atom_ids;          // [n]
    std::vector<int64_t> atom_types;        // [n], LAMMPS types
    std::vector<int64_t> atomic_numbers;    // [n], or empty when no model names the species
    Cell cell;
  };

  // What a hook module returned; each part is optional.
  struct HookResult {
    bool has_forces = false, has_energy = false, has_virial = false;
    std::vector<double> forces;    // [n][3], added to the atoms' forces
    double energy = 0.0;
    double virial[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};    // row-major [3,3]
  };

  // A user TorchScript module: forward(Dict[str, Tensor]) -> Dict[str, Tensor], in float64.
  class TorchHook {
   public:
    // Throws std::runtime_error with LibTorch's message if the archive cannot be loaded.
    explicit TorchHook(const std::string &archive);
    ~TorchHook();
    TorchHook(const TorchHook &) = delete;
    TorchHook &operator=(const TorchHook &) = delete;

    // Moves the module, and the batches it is given from then on, to `device` (loaded: cpu).
    void place_on(const Device &device);

    // Throws std::runtime_error on a failed call or an output of the wrong shape.
    void call(const HookBatch &batch, HookResult &result);

   private:
    struct Impl;
    std::unique_ptr<Impl> impl;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
