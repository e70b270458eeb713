/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the pair_style nvalchemi keywords, and pair_coeff's form.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_keywords.h"

#include "error.h"
#include "utils.h"

#include "nvalchemi_model_metadata.h"

#include <cstring>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  PairKeywords parse_pair_keywords(LAMMPS *lmp, int narg, char **arg)
  {
    if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", lmp->error);

    PairKeywords k;
    MLIPSpec preset_keyword;
    int iarg = 1;
    try {
      while (iarg < narg) {
        const std::string keyword = arg[iarg];
        const auto need = [&](int n) {
          if (iarg + n >= narg)
            utils::missing_cmd_args(FLERR, "pair_style nvalchemi " + keyword, lmp->error);
        };
        if (keyword == "spec") {
          need(1);
          preset_keyword = preset(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "halo") {
          need(1);
          k.overrides.halo = parse_halo_mode(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "forces") {
          need(1);
          k.overrides.compile.force_strategy = parse_force_strategy(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "static_shapes") {
          need(1);
          k.overrides.compile.static_shapes = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "threads") {
          need(1);
          k.threads = utils::inumeric(FLERR, arg[iarg + 1], false, lmp);
          if (k.threads < 1)
            lmp->error->all(FLERR, iarg + 2,
                            "pair_style nvalchemi threads must be at least 1 (LibTorch threads "
                            "per rank)");
          iarg += 2;
        } else if (keyword == "jit_optimize") {
          need(1);
          k.jit_optimize = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "drive") {
          need(1);
          k.drives = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "device") {
          need(1);
          k.device = std::make_unique<Device>(parse_device(arg[iarg + 1]));
          iarg += 2;
        } else if (keyword == "graph") {
          need(1);
          const std::string where = arg[iarg + 1];
          if (where != "host" && where != "device")
            lmp->error->all(FLERR, iarg + 2,
                            "pair_style nvalchemi graph must be host (built on the CPU, copied to "
                            "the model's device) or device (built on the model's device), not {}",
                            where);
          k.graph_on_device = std::make_unique<bool>(where == "device");
          iarg += 2;
        } else if (keyword == "cuda_graph") {
          need(1);
          k.cuda_graph = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "library") {
          need(1);
          k.libraries.emplace_back(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "output") {
          need(3);
          k.overrides.outputs[arg[iarg + 1]] = {parse_output_kind(arg[iarg + 2]),
                                                parse_reduce(arg[iarg + 3])};
          iarg += 4;
        } else {
          lmp->error->all(FLERR, iarg + 1, "Unknown pair_style nvalchemi keyword: {}", keyword);
        }
      }
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, iarg + 2, "pair_style nvalchemi {}: {}", arg[iarg], e.what());
    }
    k.overrides = preset_keyword | k.overrides;
    return k;
  }

  void check_pair_coeff_args(LAMMPS *lmp, int narg, char **arg, int ntypes)
  {
    // inputs written for pair_style mace, e3gnn or allegro name the model file here
    for (int i = 2; i < narg; ++i)
      if (strcmp(arg[i], "NULL") != 0 && NVAlchemi::atomic_number(arg[i]) == 0 &&
          (strchr(arg[i], '.') || strchr(arg[i], '/')))
        lmp->error->all(
            FLERR, i,
            "pair_coeff nvalchemi takes an element symbol or NULL for each atom type, and "
            "'{}' looks like a model file: pair_style nvalchemi names the model ('pair_style "
            "nvalchemi <model file>'); drop the file from pair_coeff",
            arg[i]);
    if (narg != 2 + ntypes)
      lmp->error->all(
          FLERR,
          "Incorrect number of args for pair_coeff nvalchemi: expected '* *' followed by "
          "{} element symbols or NULL (one per atom type), got {} args",
          ntypes, narg);
    if (strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
      lmp->error->all(FLERR, "pair_coeff for pair_style nvalchemi must start with '* *'");
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
