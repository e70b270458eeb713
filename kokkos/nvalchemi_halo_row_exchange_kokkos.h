/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the exchange ops' rows of pair_style nvalchemi/kk in DeviceType's memory,
   and the device LibTorch names for that memory.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_ROW_EXCHANGE_KOKKOS_H
#define LMP_NVALCHEMI_HALO_ROW_EXCHANGE_KOKKOS_H

#include "kokkos_type.h"

#include "nvalchemi_halo_row_exchange.h"

#include <type_traits>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // the device LibTorch names for memory of DeviceType's execution space
  template <class DeviceType> Device torch_device_of()
  {
    Device device;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<typename DeviceType::execution_space, Kokkos::Cuda>)
      device = Device::gpu(typename DeviceType::execution_space().cuda_device());
#endif
    return device;
  }

  // RowExchange's protocol with the rows in DeviceType's memory (the model's tensors where the
  // graph is): kernels move rows to and from per-atom values through the rank graph's row_atom
  // there; LAMMPS' pair communication moves a host mirror of the per-atom values (the same
  // memory on host backends, one staging copy each way on a GPU).
  template <class DeviceType> class RowExchangeKokkos : public RowExchange {
   public:
    using RowAtom = Kokkos::View<int *, typename DeviceType::memory_space>;
    // `row_atom`: the rank graph's, kept by the pair style (a view that grows with the graph)
    RowExchangeKokkos(const Graph &graph, const RowAtom &row_atom, AtomComm &comm,
                      bool owned_rows_complete) :
        RowExchange(graph, comm, owned_rows_complete), row_atom(row_atom)
    {
    }
    Device rows_device() const override { return torch_device_of<DeviceType>(); }

   protected:
    double *rows_to_atoms(const double *rows, int64_t nrows, int width) override;
    void atoms_to_rows(double *rows, int64_t first, int64_t last, int width) override;

   private:
    using Values = Kokkos::View<double *, typename DeviceType::memory_space>;
    const RowAtom &row_atom;
    Values atom_values;                               // [atoms][width], scratch
    typename Values::host_mirror_type host_values;    // the same where DeviceType reads the host
    size_t used = 0;                                  // values of this call
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
