/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the exchange ops' rows through per-atom communication.
------------------------------------------------------------------------- */

#include "nvalchemi_halo_row_exchange.h"

#include <algorithm>

namespace LAMMPS_NS {
namespace NVAlchemi {

  double *RowExchange::rows_to_atoms(const double *rows, int64_t nrows, int width)
  {
    NVAlchemi::rows_to_atoms(graph, rows, nrows, width, comm.num_atoms(), atom_values);
    return atom_values.data();
  }

  void RowExchange::atoms_to_rows(double *rows, int64_t first, int64_t last, int width)
  {
    for (int64_t r = first; r < last; ++r)
      std::copy_n(&atom_values[static_cast<size_t>(graph.row_atom[r]) * width], width,
                  rows + r * width);
  }

  void RowExchange::refresh(double *rows, int width)
  {
    Timed timed(*this);
    widest = std::max(widest, width);
    ++refreshes;
    comm.forward(rows_to_atoms(rows, graph.n_owned, width), width);
    atoms_to_rows(rows, graph.n_owned, graph.num_rows(), width);
  }

  void RowExchange::sum_into_owners(double *rows, int width, Wire wire)
  {
    Timed timed(*this);
    widest = std::max(widest, width);
    comm.reverse(rows_to_atoms(rows, graph.num_rows(), width), width, wire);
    atoms_to_rows(rows, 0, graph.n_owned, width);
  }

  void RowExchange::sum_over_ranks(double *values, int n)
  {
    Timed timed(*this);
    comm.sum_over_ranks(values, n);
  }

  void RowExchange::range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                                     int n)
  {
    Timed timed(*this);
    comm.range_over_ranks(values, lowest, highest, n);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
