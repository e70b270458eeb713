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

// pair_style nvalchemi under the KOKKOS package: the step stays in DeviceType's execution space.
// This rank's graph is built in parallel from Kokkos views and the Kokkos neighbor list into
// views of that space's memory, which the model reads as tensors there (a resident graph, padded
// there with static shapes); the exchange ops' rows are mapped to per-atom values there; the
// edge gradients stay where the model computed them, and the forces and the global virial are
// scattered and reduced there. The graph and the gradients are copied to the host only for host
// code that reads them (halo mode gp, per-atom energies and virials, force strategy model, extra
// outputs, validate) or for a non-finite gradient. Everything else (model, spec, the exchange
// ops' agreement, consolidation) is the plain style's.
template <class DeviceType> class PairNVAlchemiKokkos : public PairNVAlchemi {
 public:
  typedef DeviceType device_type;
  typedef ArrayTypes<DeviceType> AT;

  PairNVAlchemiKokkos(class LAMMPS *);
  ~PairNVAlchemiKokkos() override;

  void compute(int, int) override;
  void init_style() override;

 protected:
  void begin_evaluation() override;
  void request_neighbor_list() override;
  void build_rank_graph(NVAlchemi::Graph &) override;
  void add_edge_forces(const NVAlchemi::Graph &, const NVAlchemi::ModelOutputs &,
                       double *virial) override;
  // the global virial is the edges' -r (x) g, reduced where the gradients are
  bool virial_from_edges() const override { return true; }
  void graph_to_host(NVAlchemi::Graph &) override;
  void pad_graph(NVAlchemi::Graph &, int64_t rows, int64_t edges) override;
  void step_to_host(NVAlchemi::Graph &, NVAlchemi::ModelOutputs &, bool needed) override;
  std::unique_ptr<NVAlchemi::MeasuredExchanger>
  make_row_exchange(const NVAlchemi::Graph &rank_graph, NVAlchemi::AtomComm &atoms,
                    bool owned_rows_complete) override;

  struct DeviceGraph;    // the rank graph's arrays in DeviceType's memory
  DeviceGraph *device_graph;
  DAT::tdual_int_1d k_atomic_number_of_type;    // [ntypes+1], 0: a type the model skips
  typename AT::t_int_1d d_atom_row;             // row of each atom, -1 if none
  // per list atom: its first slot among all neighbor candidates, its kept edges, its first edge
  Kokkos::View<int64_t *, DeviceType> d_first_candidate, d_first_edge;
  typename AT::t_int_1d d_kept;
  // edges as found: each list atom's at its candidate slots (sender, receiver; vector)
  Kokkos::View<int64_t *, DeviceType> d_candidate_edges;
  Kokkos::View<double *, DeviceType> d_candidate_vectors;
  bool graph_on_host;    // this step's rank graph is in the host buffers too
  // values in DeviceType's memory that LibTorch owns (the edge gradients)
  using DeviceValues = Kokkos::View<const double *, typename DeviceType::memory_space,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};

}    // namespace LAMMPS_NS

#endif
#endif
