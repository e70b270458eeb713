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
#include "nvalchemi_library.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // Stops the run when `problem` (empty: none) is not empty on some rank: one message when
    // every rank has it, else each failing rank's own. Collective.
    void stop_on_any_rank(LAMMPS *lmp, const std::string &problem)
    {
      int failed = problem.empty() ? 0 : 1, ranks_failed = 0;
      MPI_Allreduce(&failed, &ranks_failed, 1, MPI_INT, MPI_SUM, lmp->world);
      if (ranks_failed == lmp->comm->nprocs)
        lmp->error->all(FLERR, "pair_style nvalchemi {}", problem);
      if (failed)
        lmp->error->one(FLERR, "pair_style nvalchemi {} (on rank {})", problem, lmp->comm->me);
      if (ranks_failed) MPI_Barrier(lmp->world);    // until the failed ranks' error ends the run
    }

    // this rank's place among the ranks that share its node (MPI_COMM_TYPE_SHARED)
    void node_local_rank(LAMMPS *lmp, int &rank, int &size)
    {
      MPI_Comm node;
      MPI_Comm_split_type(lmp->world, MPI_COMM_TYPE_SHARED, lmp->comm->me, MPI_INFO_NULL, &node);
      MPI_Comm_rank(node, &rank);
      MPI_Comm_size(node, &size);
      MPI_Comm_free(&node);
    }
  }    // namespace

  Device rank_device(LAMMPS *lmp, const Device *requested)
  {
    int node_rank = 0, node_size = 1;
    node_local_rank(lmp, node_rank, node_size);
    const CudaRuntime runtime = cuda_runtime();
    Device device;
    std::string problem;
    try {
      device = choose_device(requested, runtime, node_rank);
    } catch (std::invalid_argument &e) {
      problem = e.what();
    }
    stop_on_any_rank(lmp, problem);

    int crowded = device.is_cuda() && node_size > runtime.device_count ? node_size : 0;
    MPI_Allreduce(MPI_IN_PLACE, &crowded, 1, MPI_INT, MPI_MAX, lmp->world);
    if (lmp->comm->me != 0) return device;
    if (!device.is_cuda())
      utils::logmesg(lmp, "pair_style nvalchemi: device cpu ({})\n",
                     requested ? "as requested" : "LibTorch sees no GPU");
    else
      utils::logmesg(lmp, "pair_style nvalchemi: device {} on rank 0; {} GPU(s) visible, {}\n",
                     device.str(), runtime.device_count,
                     requested && requested->index >= 0
                         ? "every rank on the one requested"
                         : "each rank on GPU (its rank on the node) mod that count");
    if (crowded)
      lmp->error->warning(FLERR,
                          "pair_style nvalchemi: {} ranks on a node share {} GPU(s), each holding "
                          "a copy of the model; one rank per GPU is usually fastest",
                          crowded, runtime.device_count);
    return device;
  }

  void load_op_libraries(LAMMPS *lmp, const std::vector<std::string> &files)
  {
    for (const std::string &file : files) {
      std::string problem;
      bool loaded = false;
      try {
        loaded = load_op_library(file);
      } catch (std::runtime_error &e) {
        problem = std::string("library: ") + e.what();
      }
      stop_on_any_rank(lmp, problem);
      if (lmp->comm->me == 0)
        utils::logmesg(lmp, "pair_style nvalchemi: operator library {} {}\n", file,
                       loaded ? "loaded" : "loaded already (once per process)");
    }
  }

  void check_operators(LAMMPS *lmp, const std::string &file, const std::vector<std::string> &called,
                       const std::vector<std::string> &listed)
  {
    std::map<std::string, std::string> origin;    // operator -> where it was named
    for (const std::string &op : called) origin[op] = "called by the model";
    for (const std::string &op : listed)
      origin[op] = origin.count(op) ? "called, and in the spec's custom_ops"
                                    : "in the spec's custom_ops";
    if (origin.empty()) return;
    std::string table, missing;
    for (const auto &entry : origin) {
      const bool registered = operator_registered(entry.first);
      table += fmt::format("  {:<44} {:<12} {}\n", entry.first,
                           registered ? "registered" : "MISSING", entry.second);
      if (!registered) missing += (missing.empty() ? "" : ", ") + entry.first;
    }
    if (lmp->comm->me == 0)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: operators of model {} beyond ATen and nvalchemi::\n{}",
                     file, table);
    if (!missing.empty())
      lmp->error->all(FLERR,
                      "Model {} needs the operator(s) {}, which no loaded library registers: load "
                      "the library that provides them before the model, with the pair_style "
                      "keyword 'library <file>.so'",
                      file, missing);
  }

  void setup_pair_model(LAMMPS *lmp, int narg, char **arg, PairModel &m)
  {
    if (narg < 1) utils::missing_cmd_args(FLERR, "pair_style nvalchemi", lmp->error);

    MLIPSpec preset_keyword, overrides;
    std::unique_ptr<Device> requested_device;
    std::vector<std::string> libraries;
    m.threads = 0;
    m.drives = true;
    bool jit_optimize = false;    // TorchScript's graph executor optimizes the model's graph
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
                            "pair_style nvalchemi threads must be at least 1 (LibTorch threads "
                            "per rank)");
          iarg += 2;
        } else if (keyword == "jit_optimize") {
          need(1);
          jit_optimize = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
          iarg += 2;
        } else if (keyword == "drive") {
          need(1);
          m.drives = utils::logical(FLERR, arg[iarg + 1], false, lmp) == 1;
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
    m.model->set_graph_optimization(jit_optimize);
  }

  void load_pair_model(LAMMPS *lmp, const char *file, PairModel &m)
  {
    std::string archive;
    if (!read_and_broadcast(lmp, file, archive))
      lmp->error->all(FLERR, 1,
                      "Cannot open pair_style nvalchemi model file {}: check the path (relative "
                      "paths are also searched in $LAMMPS_POTENTIALS)",
                      file);

    PairModel &s = m;    // the names of the pair style's state
    s.model_file = file;
    try {
      s.model = load_model(archive, s.device);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Cannot load {} {}", file, e.what());
    }

    const std::string &text = s.model->metadata_text();
    if (text.empty())
      lmp->error->all(FLERR, 1,
                      "Model {} has no USER-NVALCHEMI metadata ({} inside the archive): write "
                      "the model with the package's Python helper "
                      "nvalchemi_lammps.export.save_model (the model contract of the "
                      "USER-NVALCHEMI documentation)",
                      file, METADATA_FILE);
    try {
      s.metadata = parse_metadata(text);
    } catch (std::exception &e) {
      lmp->error->all(FLERR, 1, "Model {} has invalid metadata: {}", file, e.what());
    }
    const ModelMetadata &meta = s.metadata;

    if (meta.units != lmp->update->unit_style)
      lmp->error->all(FLERR, 1,
                      "Model {} works in '{}' units but this run uses 'units {}': use 'units {}' "
                      "before the box is defined, or export the model for '{}' units",
                      file, meta.units, lmp->update->unit_style, meta.units,
                      lmp->update->unit_style);

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
