/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the features fix nvalchemi/dd composes, each with its settings (an
   interval of 0 turns it off), its state and its LAMMPS half: the force guard, the energy
   drift, the validation against the single-process reference, the snapshots. Their plain-C++
   halves are in nvalchemi_dd_monitor and nvalchemi_dd_reference; the hook is nvalchemi_dd_hook.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_DD_FEATURES_H
#define LMP_NVALCHEMI_DD_FEATURES_H

#include "pointers.h"

#include "nvalchemi_dd_monitor.h"

#include <cstdio>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class Compute;
class PairNVAlchemi;
namespace NVAlchemi {

  // Non-finite total forces on the group's atoms stop the run naming the atoms and ranks;
  // forces above max_force stop it or are clamped. Collective.
  class ForceGuard : protected Pointers {
   public:
    explicit ForceGuard(LAMMPS *lmp) : Pointers(lmp) {}
    // `reported_as`: where the clamp count is reported ("f_ID[13]")
    void check(int groupbit, const std::string &reported_as);

    int every = 0;
    double max_force = 0.0;    // 0: no threshold
    bool clamp = false;        // above max_force: clamp (true) or stop (false)
    bigint clamped = 0;        // forces clamped so far (kept in restart files)

   private:
    bool warned = false;
  };

  // The slope of the total energy per atom over the last `window` samples, by least squares;
  // above the tolerance a warning, or an error. Collective.
  class EnergyDrift : protected Pointers {
   public:
    explicit EnergyDrift(LAMMPS *lmp) : Pointers(lmp) {}
    // `pe`: the potential energy, tallied on this step
    void sample(Compute *pe);

    int every = 0, window = 0;
    double tolerance = 0.0;
    bool stops = false;
    DriftFit fit;    // kept in restart files

   private:
    bool warned = false;
  };

  // The decomposed result of the model against the same model on the gathered system in one
  // process (rank 0), per output; above the tolerance an error. Collective.
  class Validator : protected Pointers {
   public:
    explicit Validator(LAMMPS *lmp) : Pointers(lmp) {}
    void check(PairNVAlchemi *model);

    int every = 0;
    double tolerance = 0.0;
    int validations = 0;        // kept in restart files
    double difference = 0.0;    // largest relative difference of the last validation
  };

  // The group gathered on rank 0, sorted by atom ID, appended as one extended-XYZ frame
  // (positions relative to the box origin), when the condition (an equal-style variable, if
  // given) is not zero. Collective.
  class Snapshots : protected Pointers {
   public:
    explicit Snapshots(LAMMPS *lmp) : Pointers(lmp) {}
    ~Snapshots() override;
    void open(const std::string &path);    // rank 0 opens (truncates) the file
    void find_condition();                 // at init: the variable must exist, equal-style
    void write(int groupbit, Compute *pe, const std::vector<int> &atomic_number_of_type);

    int every = 0;
    std::string file;
    std::string condition;    // name of the variable that selects the frames written; empty: all

   private:
    FILE *fp = nullptr;    // rank 0
    int variable = -1;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
