/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the pair style's checks of the exchange calls a model made in one call, on
   every rank: LAMMPS' errors and warnings around the agreement of nvalchemi_halo_exchange.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_EXCHANGE_CHECKS_H
#define LMP_NVALCHEMI_HALO_EXCHANGE_CHECKS_H

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  class Halo;
  struct PairModel;

  // Collective, after every model call, on what `halo`'s exchanger counted in it: stops every
  // rank when the ranks' exchange calls differed (naming where each rank stood), or when a
  // multi-layer model made no refresh where ghost rows need one (it would give plausible wrong
  // numbers); warns once (rank 0, `narrow_reported`) when the model exchanges rows wider than
  // `comm_width`, the values per atom one communication pass moves.
  void check_exchange_calls(LAMMPS *lmp, const PairModel &model, Halo &halo, int comm_width,
                            bool &narrow_reported);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
