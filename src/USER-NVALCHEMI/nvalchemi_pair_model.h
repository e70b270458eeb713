/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model of a pair_style nvalchemi, set up for this LAMMPS run: the file
   read on rank 0 and deserialized on every rank, its metadata checked against the run, its
   effective spec (model | pair_style keywords) and the energy each rank differentiates.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_MODEL_H
#define LMP_NVALCHEMI_PAIR_MODEL_H

#include "nvalchemi_device.h"
#include "nvalchemi_metadata.h"
#include "nvalchemi_model.h"
#include "nvalchemi_spec.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  struct PairModel {
    std::string model_file;
    Device device;    // where this rank runs the model
    std::unique_ptr<ModelRunner> model;
    ModelMetadata metadata;
    MLIPSpec overrides;    // from pair_style keywords
    MLIPSpec spec;         // effective: model | keyword preset | keywords, resolved
    EnergyShare share;
    std::string halo_origin;    // "the pair_style keywords set" or "the spec of model X sets"
    int threads = 0;    // LibTorch intra-op threads per rank (0: LAMMPS' OpenMP thread count)
    // false (drive no): a committee member that adds nothing to LAMMPS' energy, forces and
    // virial, evaluated only when compute nvalchemi/deviation asks
    bool drives = true;
  };

  // The device this rank runs pair_style nvalchemi's model on (choose_device, with the rank's
  // place among the ranks of its node), said in rank 0's log; an impossible request is an
  // error on every rank. Collective.
  Device rank_device(LAMMPS *lmp, const Device *requested);

  // Loads each operator library (load_op_library) on every rank, in order, and says so in rank
  // 0's log; a file that cannot be loaded is an error on every rank. Collective.
  void load_op_libraries(LAMMPS *lmp, const std::vector<std::string> &files);

  // The toolkit's adapter status: the operators model `file` calls beyond ATen and the exchange
  // ops (`called`, found in the model) and those its spec lists (`listed`, custom_ops), each
  // registered or not, as a table in rank 0's log; one that is not is an error naming it.
  // The same on every rank (collective error).
  void check_operators(LAMMPS *lmp, const std::string &file, const std::vector<std::string> &called,
                       const std::vector<std::string> &listed);

  // Collective. pair_style nvalchemi <model> [spec <preset>] [halo <mode>]
  // [forces model|node_energy|global_energy] [static_shapes yes|no] [threads N] [jit_optimize yes|no]
  // [drive yes|no] [device cpu|cuda|cuda:N] [library <file.so>] [output <name> <kind> <reduce>] ...:
  // the keywords parsed into `m` (errors name the keyword), the rank's device chosen, the
  // operator libraries loaded, then the model (load_pair_model).
  void setup_pair_model(LAMMPS *lmp, int narg, char **arg, PairModel &m);

  // Collective. Loads `file` into `m` for m.device and m.overrides: a file that cannot be read
  // or loaded, metadata that is missing, invalid or in other units than the run's, a spec that
  // does not resolve, operators that are not registered and energy shares the runner cannot
  // give are errors on every rank (error->all).
  void load_pair_model(LAMMPS *lmp, const char *file, PairModel &m);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
