/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the copy kernels of pair_style nvalchemi/kk's exchange ops.
------------------------------------------------------------------------- */

#include "nvalchemi_halo_row_exchange_kokkos.h"

#include <utility>

namespace LAMMPS_NS {
namespace NVAlchemi {

  template <class DeviceType>
  double *RowExchangeKokkos<DeviceType>::rows_to_atoms(const double *rows, int64_t nrows, int width)
  {
    using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
    const size_t n = used = static_cast<size_t>(comm.num_atoms()) * width;
    if (atom_values.extent(0) < n) {
      atom_values = Values(Kokkos::view_alloc(Kokkos::WithoutInitializing, "nvalchemi:atom_values"),
                           n + n / 4);
      host_values = Kokkos::create_mirror_view(atom_values);
    }
    const auto values = atom_values;
    const auto atom = row_atom;
    const auto part = std::make_pair(size_t(0), n);
    Kokkos::deep_copy(Kokkos::subview(values, part), 0.0);
    Kokkos::parallel_for(
        "nvalchemi::rows_to_atoms", Policy(0, nrows), KOKKOS_LAMBDA(int64_t r) {
          const double *row = rows + r * width;
          const size_t first = static_cast<size_t>(atom(r)) * width;
          for (int c = 0; c < width; ++c) values(first + c) = row[c];
        });
    Kokkos::fence();
    // no copy where the mirror is the view itself
    Kokkos::deep_copy(Kokkos::subview(host_values, part), Kokkos::subview(values, part));
    return host_values.data();
  }

  template <class DeviceType>
  void RowExchangeKokkos<DeviceType>::atoms_to_rows(double *rows, int64_t first, int64_t last,
                                                    int width)
  {
    using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
    const auto part = std::make_pair(size_t(0), used);
    Kokkos::deep_copy(Kokkos::subview(atom_values, part), Kokkos::subview(host_values, part));
    const auto values = atom_values;
    const auto atom = row_atom;
    Kokkos::parallel_for(
        "nvalchemi::atoms_to_rows", Policy(first, last), KOKKOS_LAMBDA(int64_t r) {
          double *row = rows + r * width;
          const size_t from = static_cast<size_t>(atom(r)) * width;
          for (int c = 0; c < width; ++c) row[c] = values(from + c);
        });
    Kokkos::fence();
  }

  template class RowExchangeKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
  template class RowExchangeKokkos<LMPHostType>;
#endif

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
