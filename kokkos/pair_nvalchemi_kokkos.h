/* -*- c++ -*- ----------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

#ifdef PAIR_CLASS
// clang-format off
PairStyle(nvalchemi/kk,PairNVAlchemiKokkos<LMPDeviceType>);
PairStyle(nvalchemi/kk/device,PairNVAlchemiKokkos<LMPDeviceType>);
PairStyle(nvalchemi/kk/host,PairNVAlchemiKokkos<LMPHostType>);
// clang-format on
#else

#ifndef LMP_PAIR_NVALCHEMI_KOKKOS_H
#define LMP_PAIR_NVALCHEMI_KOKKOS_H

#include "kokkos_type.h"
#include "pair_kokkos.h"
#include "pair_nvalchemi.h"

#include "nvalchemi_rank_graph_kokkos.h"

namespace LAMMPS_NS {

// pair_style nvalchemi under the KOKKOS package: the step stays in DeviceType's execution space.
// Its rank graph (NVAlchemi::KokkosRankGraph) is built from Kokkos views and the Kokkos neighbor
// list where the model reads it, the exchange ops' rows are mapped to per-atom values there, and
// the forces and the global virial are scattered and reduced there. Everything else (the step
// engine, model, spec, the exchange ops' agreement, consolidation) is the plain style's.
template <class DeviceType> class PairNVAlchemiKokkos : public PairNVAlchemi {
 public:
  typedef DeviceType device_type;
  typedef ArrayTypes<DeviceType> AT;

  PairNVAlchemiKokkos(class LAMMPS *);

  void compute(int, int) override;
  void init_style() override;

 protected:
  void begin_evaluation() override;
  void request_neighbor_list() override;
  std::unique_ptr<NVAlchemi::RankGraph> make_rank_graph() override;

  NVAlchemi::KokkosRankGraph<DeviceType> *rank_graph;    // the engine's
  DAT::tdual_int_1d k_atomic_number_of_type;             // [ntypes+1], 0: a type the model skips
};

}    // namespace LAMMPS_NS

#endif
#endif
