/* ----------------------------------------------------------------------
   USER-NVALCHEMI: per-atom communication through a pair style.
------------------------------------------------------------------------- */

#include "nvalchemi_halo_atom_comm.h"

#include "atom.h"
#include "comm.h"
#include "lammps.h"
#include "pair.h"

#include "nvalchemi_mpi_gather.h"

#include <algorithm>
#include <cstring>

namespace LAMMPS_NS {
namespace NVAlchemi {

  int PairAtomComm::num_atoms() const
  { return lmp->atom->nlocal + lmp->atom->nghost; }

  // ghost atoms take their owners' values
  void PairAtomComm::forward(double *v, int w)
  {
    in_passes(v, w, pair->comm_forward, [&] {
      lmp->comm->forward_comm(pair, columns);
    });
  }

  // ghost atoms' partials are summed into their owners, sent as `as` (float32: two values to a
  // buffer word, half the bytes)
  void PairAtomComm::reverse(double *v, int w, Wire as)
  {
    wire = as;
    in_passes(v, w, pair->comm_reverse, [&] {
      lmp->comm->reverse_comm(pair, columns);
    });
    wire = Wire::FLOAT64;
  }

  void PairAtomComm::in_passes(double *v, int w, int per_pass, const std::function<void()> &pass)
  {
    values = v;
    width = w;
    for (offset = 0; offset < w; offset += per_pass) {
      columns = std::min(per_pass, w - offset);
      pass();
    }
    values = nullptr;
  }

  void PairAtomComm::sum_over_ranks(double *v, int n)
  { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, lmp->world); }

  void PairAtomComm::broadcast(double *v, int n)
  { MPI_Bcast(v, n, MPI_DOUBLE, 0, lmp->world); }

  void PairAtomComm::range_over_ranks(const int64_t *v, int64_t *lowest, int64_t *highest, int n)
  { mpi_range(lmp->world, v, lowest, highest, n); }

  int PairAtomComm::pack_forward(int n, const int *list, double *buf) const
  {
    int m = 0;
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < columns; ++c)
        buf[m++] = values[static_cast<size_t>(list[i]) * width + offset + c];
    return m;
  }

  void PairAtomComm::unpack_forward(int n, int first, const double *buf)
  {
    int m = 0;
    for (int i = first; i < first + n; ++i)
      for (int c = 0; c < columns; ++c)
        values[static_cast<size_t>(i) * width + offset + c] = buf[m++];
  }

  int PairAtomComm::pack_reverse(int n, int first, double *buf) const
  {
    int m = 0;
    if (wire == Wire::FLOAT32) {    // the floats one after another, the last word zero-padded
      auto *bytes = reinterpret_cast<unsigned char *>(buf);
      for (int i = first; i < first + n; ++i)
        for (int c = 0; c < columns; ++c) {
          const float value =
              static_cast<float>(values[static_cast<size_t>(i) * width + offset + c]);
          std::memcpy(bytes + sizeof(float) * m++, &value, sizeof(float));
        }
      if (m % 2) std::memset(bytes + sizeof(float) * m, 0, sizeof(float));
      return (m + 1) / 2;
    }
    for (int i = first; i < first + n; ++i)
      for (int c = 0; c < columns; ++c)
        buf[m++] = values[static_cast<size_t>(i) * width + offset + c];
    return m;
  }

  void PairAtomComm::unpack_reverse(int n, const int *list, const double *buf)
  {
    int m = 0;
    const auto *bytes = reinterpret_cast<const unsigned char *>(buf);
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < columns; ++c) {
        double &sum = values[static_cast<size_t>(list[i]) * width + offset + c];
        if (wire == Wire::FLOAT32) {
          float value;
          std::memcpy(&value, bytes + sizeof(float) * m++, sizeof(float));
          sum += value;
        } else {
          sum += buf[m++];
        }
      }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
