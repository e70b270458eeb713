/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a TorchScript model behind a LibTorch-free interface.
   Only nvalchemi_model.cpp includes LibTorch headers.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_H
#define LMP_NVALCHEMI_MODEL_H

#include "nvalchemi_graph.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct Cell {
    double lattice[3][3];    // rows are the lattice vectors a, b, c
    bool pbc[3];
  };

  struct ModelOutputs {
    std::vector<double> atomic_energies;    // [rows]
    std::vector<double> edge_gradients;     // [edges][3]: d(sum of owned energies)/d edge_vectors
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

    // One model call on `graph` and, from this rank's share of the energy (its owned rows),
    // the gradients with respect to the edge vectors. Throws std::runtime_error on failure.
    void evaluate(const Graph &graph, const Cell &cell, ModelOutputs &outputs);

    // Number of threads LibTorch uses in this process for intra-op parallelism.
    static void set_num_threads(int nthreads);

   private:
    struct Impl;
    std::unique_ptr<Impl> impl;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
