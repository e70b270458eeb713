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

namespace LAMMPS_NS {

// pair_style nvalchemi under the KOKKOS package: this rank's graph is built from Kokkos views and
// the Kokkos neighbor list in parallel on DeviceType's execution space, into the buffers the
// model's input tensors view (no copy where that space's memory is host memory), and the edge
// forces are scattered into the Kokkos force view there. Everything else (model, spec, exchange
// ops, consolidation) is the plain style's.
template <class DeviceType> class PairNVAlchemiKokkos : public PairNVAlchemi {
 public:
  typedef DeviceType device_type;
  typedef ArrayTypes<DeviceType> AT;

  PairNVAlchemiKokkos(class LAMMPS *);
  ~PairNVAlchemiKokkos() override;

  void compute(int, int) override;
  void init_style() override;

 protected:
  void request_neighbor_list() override;
  void build_rank_graph(NVAlchemi::Graph &) override;
  void add_edge_forces(const NVAlchemi::Graph &, const double *edge_gradients) override;

  struct GraphBuffers;    // the graph's buffers as DeviceType's kernels write and read them
  GraphBuffers *buffers;
  DAT::tdual_int_1d k_atomic_number_of_type;    // [ntypes+1], 0: a type the model skips
  typename AT::t_int_1d d_atom_row;             // row of each atom, -1 if none
  // per list atom: its first slot among all neighbor candidates, its kept edges, its first edge
  Kokkos::View<int64_t *, DeviceType> d_first_candidate, d_first_edge;
  typename AT::t_int_1d d_kept;
  // edges as found: each list atom's at its candidate slots (sender, receiver; vector)
  Kokkos::View<int64_t *, DeviceType> d_candidate_edges;
  Kokkos::View<double *, DeviceType> d_candidate_vectors;
  bool forces_on_device;                        // this step wrote forces in DeviceType's space
};

}    // namespace LAMMPS_NS

#endif
#endif
