/* ----------------------------------------------------------------------
   USER-NVALCHEMI: a rank's device for pair_style nvalchemi.
------------------------------------------------------------------------- */

#include "nvalchemi_pair_device.h"

#include "comm.h"
#include "error.h"
#include "utils.h"

#include "nvalchemi_lammps_data.h"

#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
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

    int crowded = device.is_gpu() && node_size > runtime.device_count ? node_size : 0;
    MPI_Allreduce(MPI_IN_PLACE, &crowded, 1, MPI_INT, MPI_MAX, lmp->world);
    if (lmp->comm->me != 0) return device;
    if (!device.is_gpu())
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

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
