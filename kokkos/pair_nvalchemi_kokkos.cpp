/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   pair_style nvalchemi/kk: pair_style nvalchemi under the KOKKOS package
   (USER-NVALCHEMI package)
------------------------------------------------------------------------- */

#include "pair_nvalchemi_kokkos.h"

#include "atom_kokkos.h"
#include "atom_masks.h"
#include "error.h"
#include "kokkos.h"
#include "neigh_list_kokkos.h"
#include "neigh_request.h"
#include "neighbor.h"

#include "nvalchemi_halo_row_exchange_kokkos.h"
#include "nvalchemi_step_engine.h"

#include <memory>
#include <type_traits>

using namespace LAMMPS_NS;

/* ---------------------------------------------------------------------- */

template <class DeviceType>
PairNVAlchemiKokkos<DeviceType>::PairNVAlchemiKokkos(LAMMPS *lmp) :
    PairNVAlchemi(lmp), rank_graph(nullptr)
{
  kokkosable = 1;
  atomKK = (AtomKokkos *) atom;
  execution_space = ExecutionSpaceFromDevice<DeviceType>::space;
  // compute() syncs and marks what it reads and writes itself
  datamask_read = EMPTY_MASK;
  datamask_modify = EMPTY_MASK;
}

/* ---------------------------------------------------------------------- */

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::init_style()
{
  // the exchange ops pack and unpack host buffers (pack_forward_comm): LAMMPS' device path of
  // pair communication would call Kokkos packing this style does not have
  if (execution_space == Device &&
      (!lmp->kokkos->forward_pair_comm_legacy || !lmp->kokkos->reverse_pair_comm_legacy))
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi/kk on a device execution space exchanges its per-atom data "
               "through LAMMPS' host communication: add 'comm/pair/forward host comm/pair/reverse "
               "host' to the package kokkos settings (-pk kokkos ... or the package command)");
  constexpr bool reads_host = Kokkos::SpaceAccessibility<typename DeviceType::execution_space,
                                                         Kokkos::HostSpace>::accessible;
  if (!reads_host && !NVAlchemi::torch_device_of<DeviceType>().is_gpu())
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi/kk runs on Kokkos' host backends and CUDA; this Kokkos "
               "device ({}) has no LibTorch device: use pair_style nvalchemi/kk/host",
               typename DeviceType::execution_space().name());
  PairNVAlchemi::init_style();
  const std::vector<int> &z = engine().atomic_number_of_type;
  k_atomic_number_of_type = DAT::tdual_int_1d("nvalchemi:atomic_number_of_type", z.size());
  for (size_t t = 0; t < z.size(); ++t) k_atomic_number_of_type.view_host()(t) = z[t];
  k_atomic_number_of_type.modify_host();
  k_atomic_number_of_type.template sync<DeviceType>();
}

/* ----------------------------------------------------------------------
   a Kokkos full list in every halo mode (with ghost atoms' lists in deep):
   each owned atom's list gives the edges into it, which is the edge set of
   the plain style's half list
------------------------------------------------------------------------- */

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::request_neighbor_list()
{
  auto request = neighbor->add_request(
      this, ghostneigh ? NeighConst::REQ_FULL | NeighConst::REQ_GHOST : NeighConst::REQ_FULL);
  request->set_kokkos_host(std::is_same_v<DeviceType, LMPHostType> &&
                           !std::is_same_v<DeviceType, LMPDeviceType>);
  request->set_kokkos_device(std::is_same_v<DeviceType, LMPDeviceType>);
}

/* ----------------------------------------------------------------------
   the graph and force kernels read and write DeviceType's views; the host
   reads atom IDs (halo mode gp, messages naming atoms) and, with forces of
   the model's own, tallies the forces (and F dot r the virial) there
------------------------------------------------------------------------- */

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::compute(int eflag, int vflag)
{
  PairNVAlchemi::compute(eflag, vflag);
  if (engine().drives && !engine().share.differentiate) atomKK->modified(Host, F_MASK);
}

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::begin_evaluation()
{
  const bool host_forces = !engine().share.differentiate;
  atomKK->sync(execution_space, X_MASK | F_MASK | TYPE_MASK);
  atomKK->sync(Host, TAG_MASK | (host_forces ? X_MASK | F_MASK : 0));
  rank_graph->take(list, ghostneigh != 0, k_atomic_number_of_type.template view<DeviceType>());
}

template <class DeviceType>
std::unique_ptr<NVAlchemi::RankGraph> PairNVAlchemiKokkos<DeviceType>::make_rank_graph()
{
  auto made = std::make_unique<NVAlchemi::KokkosRankGraph<DeviceType>>(atomKK);
  rank_graph = made.get();
  return made;
}

namespace LAMMPS_NS {
template class PairNVAlchemiKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairNVAlchemiKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
