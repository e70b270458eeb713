/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a user TorchScript hook of fix nvalchemi/dd run at its scope (nvalchemi's
   HookScope LOCAL, GLOBAL, RANK_ZERO): the atoms it sees, where its forces go, how its energy
   and virial are counted.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DD_HOOK_H
#define LMP_NVALCHEMI_DD_HOOK_H

#include "pointers.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {
  struct Device;
  class HookModule;

  enum class HookScope { LOCAL, GLOBAL, RANK_ZERO };
  // where in a step the hook runs: initial_integrate, pre_force, post_force, end_of_step
  enum class HookStage { BEFORE_STEP, BEFORE_COMPUTE, AFTER_COMPUTE, AFTER_STEP };
  static constexpr const char *HOOK_STAGE_NAMES[] = {"before_step", "before_compute",
                                                     "after_compute", "after_step"};
  static constexpr const char *HOOK_SCOPE_NAMES[] = {"local", "global", "rank_zero"};

  // stages at which added forces act on this step's integration
  bool stage_adds_forces(HookStage stage);

  class HookRunner : protected Pointers {
   public:
    // Reads and loads the module on every rank (collective); errors name `file`.
    HookRunner(LAMMPS *lmp, const std::string &file, HookScope scope, HookStage stage);
    ~HookRunner() override;

    // What one call gave: its energy (the same on every rank, counted once) and this rank's
    // share of its virial (xx yy zz xy xz yz; the shares sum to the module's virial).
    struct Result {
      double energy = 0.0;
      bool has_virial = false;
      double virial[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    };

    // Calls the module on the group's atoms at its scope and adds the forces it returns to them.
    // `atomic_number_of_type` may be empty (no model names the species); `needs_virial` makes a
    // module without 'virial' an error. Collective.
    Result run(int groupbit, const std::vector<int> &atomic_number_of_type, bool needs_virial);

    // Runs the module on `device` from now on (loaded: cpu).
    void place_on(const Device &device);

    const std::string &file() const { return module_file; }
    HookStage stage() const { return when; }

   private:
    std::string module_file;
    HookScope scope;
    HookStage when;
    std::unique_ptr<HookModule> module;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
