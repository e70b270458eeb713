/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the LibTorch half of fix nvalchemi/dd's hook behind a LibTorch-free
   interface: a user TorchScript module called on a batch of atoms (nvalchemi_dd_hook holds the
   LAMMPS half: scope, gathers, forces, energy and virial).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DD_HOOK_TORCH_H
#define LMP_NVALCHEMI_DD_HOOK_TORCH_H

#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_step_device.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // What a hook module of fix nvalchemi/dd sees: n atoms (this rank's, or a gathered system
  // sorted by atom ID), row-major, double precision.
  struct HookInputs {
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
  struct HookOutputs {
    bool has_forces = false, has_energy = false, has_virial = false;
    std::vector<double> forces;    // [n][3], added to the atoms' forces
    double energy = 0.0;
    double virial[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};    // row-major [3,3]
  };

  // A user TorchScript module: forward(Dict[str, Tensor]) -> Dict[str, Tensor], in float64; or
  // an AOTInductor package of one (nvalchemi_lammps.export.save_hook), which takes the hook
  // inputs it records positionally and returns the outputs it records.
  class HookModule {
   public:
    // Throws std::runtime_error with LibTorch's message if the archive cannot be loaded.
    explicit HookModule(const std::string &archive);
    ~HookModule();
    HookModule(const HookModule &) = delete;
    HookModule &operator=(const HookModule &) = delete;

    // Moves the module, and the batches it is given from then on, to `device` (loaded: cpu).
    void place_on(const Device &device);

    // Throws std::runtime_error on a failed call or an output of the wrong shape.
    void call(const HookInputs &batch, HookOutputs &result);

   private:
    struct Impl;
    std::unique_ptr<Impl> impl;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
