/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model of a pair_style nvalchemi, set up for this LAMMPS run from its
   keywords (nvalchemi_pair_keywords), on the rank's device (nvalchemi_pair_device), after its
   operator libraries (nvalchemi_pair_libraries): the file read on rank 0 and deserialized on
   every rank, its metadata checked against the run, its effective spec (model | pair_style
   keywords) and the energy each rank differentiates.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_MODEL_H
#define LMP_NVALCHEMI_PAIR_MODEL_H

#include "nvalchemi_device.h"
#include "nvalchemi_model_metadata.h"
#include "nvalchemi_runner.h"
#include "nvalchemi_spec.h"
#include "nvalchemi_units.h"

#include <memory>
#include <string>

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  struct PairModel {
    std::string model_file;
    Device device;    // where this rank runs the model
    bool graph_on_device = false;    // the graph built there (DeviceGraph), else on the host
    bool cuda_graph = false;    // the model's calls captured as CUDA graphs (cuda_graph yes)
    std::unique_ptr<ModelRunner> model;
    ModelMetadata metadata;
    MLIPSpec overrides;    // from pair_style keywords
    MLIPSpec spec;         // effective: model | keyword preset | keywords, resolved
    EnergyShare share;
    UnitConversion units;    // the model's unit style against the run's (set in the runner too)
    std::string halo_origin;    // "the pair_style keywords set" or "the spec of model X sets"
    int threads = 0;    // LibTorch intra-op threads per rank (0: LAMMPS' OpenMP thread count)
    // false (drive no): a committee member that adds nothing to LAMMPS' energy, forces and
    // virial, evaluated only when compute nvalchemi/deviation asks
    bool drives = true;
  };

  // Collective. pair_style nvalchemi <model> [keywords]: the keywords parsed
  // (parse_pair_keywords), the rank's device chosen (rank_device), the operator libraries
  // loaded (load_op_libraries), then the model (load_pair_model).
  void setup_pair_model(LAMMPS *lmp, int narg, char **arg, PairModel &m);

  // Collective. Loads `file` into `m` for m.device and m.overrides: a file that cannot be read
  // or loaded, metadata that is missing or invalid, units that do not convert to the run's
  // (unit_conversion), a spec that does not resolve, operators that are not registered and energy
  // shares the runner cannot give are errors on every rank (error->all).
  void load_pair_model(LAMMPS *lmp, const char *file, PairModel &m);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
