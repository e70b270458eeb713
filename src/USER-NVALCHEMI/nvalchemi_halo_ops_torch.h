/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: registration of the exchange ops (namespace nvalchemi)
   with LibTorch's dispatcher. No LibTorch types in this header.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_OPS_TORCH_H
#define LMP_NVALCHEMI_HALO_OPS_TORCH_H

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Registers torch.ops.nvalchemi.* once per process (before any model is deserialized, so that
  // TorchScript code calling them resolves). Safe to call repeatedly.
  void register_exchange_ops();

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
