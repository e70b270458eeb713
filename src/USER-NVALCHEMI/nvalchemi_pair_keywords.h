/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the pair_style nvalchemi keywords, parsed: what they override in the model's
   spec and what they ask of the run (device, operator libraries, threads, dynamics).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_KEYWORDS_H
#define LMP_NVALCHEMI_PAIR_KEYWORDS_H

#include "nvalchemi_spec.h"
#include "nvalchemi_step_device.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  struct PairKeywords {
    MLIPSpec overrides;                    // keyword preset | keywords
    std::unique_ptr<Device> device;        // null: none requested
    std::vector<std::string> libraries;    // operator libraries, in the order given
    int threads = 0;       // LibTorch intra-op threads per rank (0: LAMMPS' OpenMP thread count)
    bool drives = true;    // false: drive no
    bool jit_optimize = false;    // TorchScript's graph executor optimizes the model's graph
    // where the graph is built: on the model's device (true) or the host; null: not asked
    // (the device on a GPU, the host on the CPU)
    std::unique_ptr<bool> graph_on_device;
    bool cuda_graph = false;    // the model's calls captured as CUDA graphs and replayed
  };

  // pair_style nvalchemi <model> [spec <preset>] [halo <mode>] [forces model|node_energy|
  // global_energy] [static_shapes yes|no] [threads N] [jit_optimize yes|no] [drive yes|no]
  // [device cpu|cuda|cuda:N] [graph host|device]
  // [cuda_graph yes|no] [library <file.so>] [output <name> <kind> <reduce>] ...: the
  // keywords after the model file; an unknown or invalid one is an error pointing at it.
  PairKeywords parse_pair_keywords(LAMMPS *lmp, int narg, char **arg);

  // pair_coeff * * <element or NULL per atom type>: its form checked for `ntypes` atom types (a
  // model file there, as inputs written for pair_style mace, e3gnn or allegro give it, named).
  void check_pair_coeff_args(LAMMPS *lmp, int narg, char **arg, int ntypes);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
