/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model of a pair_style nvalchemi, set up for this LAMMPS run from its
   keywords (nvalchemi_pair_keywords), on the rank's device (nvalchemi_pair_device), after its
   operator libraries (nvalchemi_pair_libraries): the file read on rank 0 and deserialized on
   every rank, its metadata checked against the run, its effective spec (model | pair_style
   keywords) and the energy each rank differentiates.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_MODEL_H
#define LMP_NVALCHEMI_PAIR_MODEL_H

#include "nvalchemi_model_metadata.h"
#include "nvalchemi_model_units.h"
#include "nvalchemi_runner.h"
#include "nvalchemi_spec.h"
#include "nvalchemi_step_device.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class LAMMPS;
class Pair;
namespace NVAlchemi {

  struct PairModel {
    std::string model_file;
    Device device;                   // where this rank runs the model
    bool graph_on_device = false;    // the graph built there (TorchRankGraph), else on the host
    bool cuda_graph = false;         // the model's calls captured as CUDA graphs (cuda_graph yes)
    bool graph_optimization = false;    // TorchScript's graph executor optimizes (jit_optimize)
    std::unique_ptr<ModelRunner> model;
    ModelMetadata metadata;
    MLIPSpec overrides;    // from pair_style keywords
    MLIPSpec spec;         // effective: model | keyword preset | keywords, resolved
    EnergyShare share;
    UnitConversion units;       // the model's unit style against the run's (set in the runner too)
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

  // At the pair style's init: what the model cannot follow of LAMMPS' settings (newton pair off,
  // pair_modify `shift` or `tail` yes, drive no on a pair style of its own) is an error on every
  // rank.
  void check_pair_settings(LAMMPS *lmp, const PairModel &m, const Pair *pair, bool shift,
                           bool tail);

  // pair_coeff: the atomic number of each atom type [ntypes+1] (0: NULL, map[t] < 0) from the
  // `elements` the types `map` to; an element that is no element symbol or that the model has
  // no parameters for is an error on every rank.
  std::vector<int> atomic_numbers_of_types(LAMMPS *lmp, const PairModel &m, int nelements,
                                           char **elements, const int *map, int ntypes);

  // cuda_graph yes, after a model call: a capture made since `captures_before` in rank 0's log;
  // a capture that failed (the calls then run uncaptured) in a warning of the rank, once
  // (`problem_reported`).
  void report_cuda_graph(LAMMPS *lmp, const PairModel &m, int captures_before,
                         const Graph &model_graph, bool &problem_reported);

  // Rank 0's log of the loaded model: file, format, contract, units, species, effective spec,
  // unit conversion, where the graph is built; `route`: how the package was built into LAMMPS.
  void log_pair_model(LAMMPS *lmp, const PairModel &m, const char *route, double cutoff);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
