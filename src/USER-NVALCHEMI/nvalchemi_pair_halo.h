/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the halo mode on LAMMPS' side: what it needs of LAMMPS at init (atom IDs,
   the ghost cutoff), and the checks of the exchange calls a model made in one call, on every
   rank (LAMMPS' errors and warnings around the agreement of nvalchemi_halo_exchange).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_HALO_H
#define LMP_NVALCHEMI_PAIR_HALO_H

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  class Halo;
  struct PairModel;

  // Collective, at the pair style's init: stops every rank when `halo` maps atoms by ID and
  // LAMMPS keeps none; sets LAMMPS' ghost cutoff to what the mode needs for the model's layers
  // (comm_modify cutoff raised, the user's value kept in `saved_cutghostuser`, < 0 while
  // untouched, and given back when a mode needs no more than LAMMPS' default); logs on rank 0.
  void init_halo(LAMMPS *lmp, const PairModel &model, const Halo &halo, double cutoff,
                 double &saved_cutghostuser);

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
