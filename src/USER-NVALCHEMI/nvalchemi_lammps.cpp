/* ----------------------------------------------------------------------
   USER-NVALCHEMI: helpers shared by the package's LAMMPS styles.
------------------------------------------------------------------------- */

#include "nvalchemi_lammps.h"

#include "comm.h"
#include "domain.h"
#include "error.h"
#include "utils.h"

#include "nvalchemi_library.h"
#include "nvalchemi_model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  Cell box_cell(const Domain *domain)
  {
    return {{{domain->xprd, 0.0, 0.0},
             {domain->xy, domain->yprd, 0.0},
             {domain->xz, domain->yz, domain->zprd}},
            {domain->xperiodic != 0, domain->yperiodic != 0, domain->zperiodic != 0}};
  }

  bool read_and_broadcast(LAMMPS *lmp, const std::string &file, std::string &bytes)
  {
    static constexpr int CHUNK = 1 << 30;    // MPI counts are ints
    bytes.clear();
    bigint size = -1;
    if (lmp->comm->me == 0) {
      const std::string path = utils::get_potential_file_path(file);
      FILE *fp = path.empty() ? nullptr : fopen(path.c_str(), "rb");
      if (fp) {
        char buffer[1 << 16];
        size_t n;
        while ((n = fread(buffer, 1, sizeof(buffer), fp)) > 0) bytes.append(buffer, n);
        if (!ferror(fp)) size = static_cast<bigint>(bytes.size());
        fclose(fp);
      }
    }
    MPI_Bcast(&size, 1, MPI_LMP_BIGINT, 0, lmp->world);
    if (size < 0) return false;
    bytes.resize(size);
    for (bigint offset = 0; offset < size; offset += CHUNK)
      MPI_Bcast(&bytes[offset], static_cast<int>(std::min<bigint>(CHUNK, size - offset)), MPI_CHAR,
                0, lmp->world);
    return true;
  }

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

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
