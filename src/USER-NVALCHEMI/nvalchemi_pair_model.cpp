/* ----------------------------------------------------------------------
   USER-NVALCHEMI: a pair style's model, set up for the run.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_model.h"

#include "comm.h"
#include "error.h"
#include "update.h"
#include "utils.h"

#include "nvalchemi_consolidate.h"
#include "nvalchemi_lammps.h"

#include <exception>
#include <memory>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  void setup_pair_model(LAMMPS *lmp, int narg, char **arg, PairModel &m)
  {
    if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", lmp->error);

    MLIPSpec preset_keyword, overrides;
    std::unique_ptr<Device> requested_device;
    std::vector<std::string> libraries;
    m.threads = 0;
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
          overrides.halo = parse_halo_mode(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "forces") {
          need(1);
          overrides.compile.force_strategy = parse_force_strategy(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "static_shapes") {
          need(1);
          overrides.compile.static_shapes = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "threads") {
          need(1);
          m.threads = utils::inumeric(FLERR, arg[iarg + 1], false, lmp);
          if (m.threads < 1)
            lmp->error->all(FLERR, iarg + 2,
                       "pair_style nvalchemi threads must be at least 1 (LibTorch threads per rank)");
          iarg += 2;
        } else if (keyword == "device") {
          need(1);
          requested_device =
              std::make_unique<Device>(parse_device(arg[iarg + 1]));
          iarg += 2;
        } else if (keyword == "library") {
          need(1);
          libraries.emplace_back(arg[iarg + 1]);
          iarg += 2;
        } else if (keyword == "output") {
          need(3);
          overrides.outputs[arg[iarg + 1]] = {parse_output_kind(arg[iarg + 2]),
                                              parse_reduce(arg[iarg + 3])};
          iarg += 4;
        } else {
          lmp->error->all(FLERR, iarg + 1, "Unknown pair_style nvalchemi keyword: {}", keyword);
        }
      }
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, iarg + 2, "pair_style nvalchemi {}: {}", arg[iarg], e.what());
    }
    m.overrides = preset_keyword | overrides;
    m.device = rank_device(lmp, requested_device.get());
    load_op_libraries(lmp, libraries);    // before the model: it may call their ops
    load_pair_model(lmp, arg[0], m);
  }

  void load_pair_model(LAMMPS *lmp, const char *file, PairModel &m)
  {
    std::string archive;
    if (!read_and_broadcast(lmp, file, archive))
      lmp->error->all(FLERR, 1,
                 "Cannot open pair_style nvalchemi model file {}: check the path (relative paths "
                 "are also searched in $LAMMPS_POTENTIALS)",
                 file);

    PairModel &s = m;    // the names of the pair style's state
    s.model_file = file;
    const char *format = is_aoti_package(archive) ? "an AOTInductor" : "a TorchScript";
    try {
      s.model = load_model(archive, s.device);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Cannot load {} as {} model: {}", file, format, e.what());
    }

    const std::string &text = s.model->metadata_text();
    if (text.empty())
      lmp->error->all(FLERR, 1,
                 "Model {} has no USER-NVALCHEMI metadata ({} inside the archive): write the model "
                 "with the package's Python helper nvalchemi_export.save_model (the model contract "
                 "of the USER-NVALCHEMI documentation)",
                 file, METADATA_FILE);
    try {
      s.metadata = parse_metadata(text);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Model {} has invalid metadata: {}", file, e.what());
    }
    const ModelMetadata &meta = s.metadata;

    if (meta.units != lmp->update->unit_style)
      lmp->error->all(FLERR, 1,
                 "Model {} works in '{}' units but this run uses 'units {}': use 'units {}' before "
                 "the box is defined, or export the model for '{}' units",
                 file, meta.units, lmp->update->unit_style, meta.units, lmp->update->unit_style);

    try {
      s.spec = (meta.spec | s.overrides).resolved();
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
    }
    const MLIPSpec &spec = s.spec;
    check_operators(lmp, file, s.model->custom_operators(), *spec.custom_ops);
    // errors about the effective spec name where its fields came from
    s.halo_origin = s.overrides.halo ? "the pair_style keywords set"
                                     : fmt::format("the spec of model {} sets", file);
    try {
      s.share = energy_share(spec, lmp->comm->nprocs);
      s.model->check_share(s.share);
    } catch (std::invalid_argument &e) {
      lmp->error->all(FLERR, 1, "Model {} with the pair_style keywords given: {}", file, e.what());
    }
    s.model->set_float64(meta.dtype == "float64");
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
