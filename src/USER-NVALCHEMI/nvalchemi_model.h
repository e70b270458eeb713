/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a TorchScript model behind a LibTorch-free interface.
   Only nvalchemi_model.cpp includes LibTorch headers.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_H
#define LMP_NVALCHEMI_MODEL_H

#include "nvalchemi_exchange.h"
#include "nvalchemi_graph.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct Cell {
    double lattice[3][3];    // rows are the lattice vectors a, b, c
    bool pbc[3];
  };

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

  struct ModelOutputs {
    std::map<std::string, OutputTensor> tensors;    // every output the model returned
    std::vector<double> edge_gradients;             // [edges][3]: dL_r / d edge_vectors
    double energy_share = 0.0;                      // L_r
  };

  class TorchModel {
   public:
    // Deserializes a TorchScript archive held in memory (the bytes of a .pt file).
    // Throws std::runtime_error with LibTorch's message if the archive cannot be loaded.
    explicit TorchModel(const std::string &archive);
    ~TorchModel();
    TorchModel(const TorchModel &) = delete;
    TorchModel &operator=(const TorchModel &) = delete;

    // Text of the archive's metadata file (METADATA_FILE); empty if the archive has none.
    const std::string &metadata_text() const;

    // Precision the model computes in; inputs are converted to it, outputs back to double.
    void set_float64(bool float64);

    // One model call on `graph`: all outputs, and the gradient of this rank's energy share
    // with respect to the edge vectors. `exchanger` serves the model's torch.ops.nvalchemi
    // calls (nullptr: the model may not call them). Throws std::runtime_error on failure.
    void evaluate(const Graph &graph, const Cell &cell, const EnergyShare &share,
                  Exchanger *exchanger, ModelOutputs &outputs);

    // Number of threads LibTorch uses in this process for intra-op parallelism.
    static void set_num_threads(int nthreads);

   private:
    struct Impl;
    std::unique_ptr<Impl> impl;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
