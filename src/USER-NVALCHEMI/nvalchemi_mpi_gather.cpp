/* ----------------------------------------------------------------------
   USER-NVALCHEMI: gathers of per-atom rows sorted by atom ID, ranges over ranks.
------------------------------------------------------------------------- */

#include "nvalchemi_mpi_gather.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  void gather_rows(const std::vector<double> &mine, int width, bool everywhere, MPI_Comm world,
                   Gathered &g)
  {
    int me, nprocs;
    MPI_Comm_rank(world, &me);
    MPI_Comm_size(world, &nprocs);
    const int n = static_cast<int>(mine.size()) / width;
    g.counts.resize(nprocs);
    MPI_Allgather(&n, 1, MPI_INT, g.counts.data(), 1, MPI_INT, world);
    g.displs.assign(nprocs, 0);
    for (int p = 1; p < nprocs; ++p) g.displs[p] = g.displs[p - 1] + g.counts[p - 1];
    const int total = g.displs.back() + g.counts.back();
    std::vector<int> value_counts(nprocs), value_displs(nprocs);
    for (int p = 0; p < nprocs; ++p) {
      value_counts[p] = g.counts[p] * width;
      value_displs[p] = g.displs[p] * width;
    }
    g.rows.assign(everywhere || me == 0 ? static_cast<size_t>(total) * width : 0, 0.0);
    if (everywhere)
      MPI_Allgatherv(mine.data(), n * width, MPI_DOUBLE, g.rows.data(), value_counts.data(),
                     value_displs.data(), MPI_DOUBLE, world);
    else
      MPI_Gatherv(mine.data(), n * width, MPI_DOUBLE, g.rows.data(), value_counts.data(),
                  value_displs.data(), MPI_DOUBLE, 0, world);
    g.by_id.clear();
    if (g.rows.empty()) return;
    g.by_id.resize(total);
    std::iota(g.by_id.begin(), g.by_id.end(), 0);
    std::sort(g.by_id.begin(), g.by_id.end(), [&](int a, int b) {
      return g.rows[a * width] < g.rows[b * width];
    });
  }

  std::vector<double> gather_by_id(const std::vector<double> &mine, int width, MPI_Comm world)
  {
    Gathered g;
    gather_rows(mine, width, false, world, g);
    std::vector<double> sorted;
    sorted.reserve(g.rows.size());
    for (int row : g.by_id)
      sorted.insert(sorted.end(), g.rows.begin() + static_cast<size_t>(row) * width,
                    g.rows.begin() + static_cast<size_t>(row + 1) * width);
    return sorted;
  }

  void mpi_range(MPI_Comm comm, const int64_t *values, int64_t *lowest, int64_t *highest, int n)
  {
    // the maximum as the minimum of the negated values, in one all-reduce without allocation
    if (n > MAX_RANGE_VALUES)
      throw std::invalid_argument("mpi_range: at most " + std::to_string(MAX_RANGE_VALUES) +
                                  " values");
    int64_t both[2 * MAX_RANGE_VALUES];
    for (int k = 0; k < n; ++k) {
      both[k] = values[k];
      both[n + k] = -values[k];
    }
    MPI_Allreduce(MPI_IN_PLACE, both, 2 * n, MPI_INT64_T, MPI_MIN, comm);
    for (int k = 0; k < n; ++k) {
      lowest[k] = both[k];
      highest[k] = -both[n + k];
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
