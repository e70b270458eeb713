/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the package's own MPI collectives: rows of per-atom values from every rank,
   sorted by atom ID (the gathers of fix nvalchemi/dd's features and of its hook's GLOBAL and
   RANK_ZERO scopes, nvalchemi's DomainParallel.gather), and the range over ranks that the
   exchange agreement compares.
   MPI only: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MPI_GATHER_H
#define LMP_NVALCHEMI_MPI_GATHER_H

#include <cstdint>
#include <mpi.h>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Rows of `width` doubles from every rank, in rank order, and their order by atom ID (the
  // first column of each row). Held on every rank, or on rank 0 only.
  struct Gathered {
    std::vector<double> rows;
    std::vector<int> counts, displs;    // rows of each rank, and where they start (every rank)
    std::vector<int> by_id;             // row indices sorted by atom ID (where rows are held)
  };

  // Collective. `mine` holds this rank's rows; `everywhere` false gathers on rank 0 only.
  void gather_rows(const std::vector<double> &mine, int width, bool everywhere, MPI_Comm world,
                   Gathered &gathered);

  // Collective. Every rank's rows of `width` doubles (`mine`, atom ID first), on rank 0 in the
  // order of their atom IDs; empty on the other ranks.
  std::vector<double> gather_by_id(const std::vector<double> &mine, int width, MPI_Comm world);

  // Collective over `comm`: element-wise minimum and maximum of `values` [n], n at most
  // MAX_RANGE_VALUES (one all-reduce): what an exchanger's range_over_ranks does with MPI.
  static constexpr int MAX_RANGE_VALUES = 4;
  void mpi_range(MPI_Comm comm, const int64_t *values, int64_t *lowest, int64_t *highest, int n);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
