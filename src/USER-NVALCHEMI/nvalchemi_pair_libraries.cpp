/* ----------------------------------------------------------------------
   USER-NVALCHEMI: pair_style nvalchemi's LibTorch, its operator libraries and the model's
   operators.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_libraries.h"

#include "comm.h"
#include "error.h"
#include "utils.h"

#include "nvalchemi_lammps_data.h"
#include "nvalchemi_model_libraries.h"
#include "nvalchemi_runner.h"

#include <map>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  void check_libtorch(LAMMPS *lmp)
  {
    const LibTorchFiles files = libtorch_files();
    const std::string problem = libtorch_mismatch(files);
    stop_on_any_rank(lmp, problem.empty() ? "" : "cannot run: " + problem);
    if (lmp->comm->me == 0 && files.loaded_file != files.built_file)
      utils::logmesg(lmp,
                     "pair_style nvalchemi: LibTorch {} from {} (loaded before LAMMPS), the "
                     "version the package was built against ({})\n",
                     files.loaded_version, files.loaded_file, files.built_file);
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

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
