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

#include "nvalchemi_graph.h"

#include <Kokkos_ScatterView.hpp>

#include <type_traits>
#include <utility>

using namespace LAMMPS_NS;

namespace {
// One of the graph's buffers (the model's input tensors view them) as a view the kernels of
// DeviceType fill: the buffer's own memory where DeviceType's execution space reads host
// memory, so that the tensors view what the kernels wrote; else scratch in DeviceType's memory,
// copied into the buffer by finish().
template <class DeviceType, class T> class GraphBuffer {
 public:
  static constexpr bool IN_PLACE =
      Kokkos::SpaceAccessibility<typename DeviceType::execution_space, Kokkos::HostSpace>::accessible;
  using HostView = Kokkos::View<T *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using View = std::conditional_t<IN_PLACE, HostView, Kokkos::View<T *, typename DeviceType::memory_space>>;

  // `buffer` resized to n values, and the view through which the kernels write them
  template <class Container> View fill(Container &buffer, size_t n)
  {
    buffer.resize(n);
    target = HostView(buffer.data(), n);
    if constexpr (IN_PLACE) {
      return target;
    } else {
      if (scratch.extent(0) < n) scratch = View("nvalchemi:graph_buffer", n + n / 4);
      return scratch;
    }
  }

  // the buffer holds what the kernels wrote
  void finish()
  {
    if constexpr (!IN_PLACE)
      Kokkos::deep_copy(target, Kokkos::subview(scratch, std::make_pair(size_t(0), target.extent(0))));
  }

  // values already in the buffer (n of them, host memory) as DeviceType's kernels read them
  View read(const T *values, size_t n)
  {
    target = HostView(const_cast<T *>(values), n);
    if constexpr (IN_PLACE) {
      return target;
    } else {
      if (scratch.extent(0) < n) scratch = View("nvalchemi:graph_buffer", n + n / 4);
      Kokkos::deep_copy(Kokkos::subview(scratch, std::make_pair(size_t(0), n)), target);
      return scratch;
    }
  }

 private:
  HostView target;
  View scratch;
};

}    // namespace

template <class DeviceType> struct PairNVAlchemiKokkos<DeviceType>::GraphBuffers {
  GraphBuffer<DeviceType, int> row_atom;
  GraphBuffer<DeviceType, double> positions, edge_vectors, edge_gradients;
  GraphBuffer<DeviceType, int64_t> atomic_numbers, edges;
};

/* ---------------------------------------------------------------------- */

template <class DeviceType>
PairNVAlchemiKokkos<DeviceType>::PairNVAlchemiKokkos(LAMMPS *lmp) :
    PairNVAlchemi(lmp), buffers(new GraphBuffers), forces_on_device(false)
{
  kokkosable = 1;
  atomKK = (AtomKokkos *) atom;
  execution_space = ExecutionSpaceFromDevice<DeviceType>::space;
  // compute() syncs and marks what it reads and writes itself
  datamask_read = EMPTY_MASK;
  datamask_modify = EMPTY_MASK;
}

template <class DeviceType> PairNVAlchemiKokkos<DeviceType>::~PairNVAlchemiKokkos()
{
  delete buffers;
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
  PairNVAlchemi::init_style();
  const std::vector<int> &z = atomic_number_of_type();
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
  auto request =
      neighbor->add_request(this, ghostneigh ? NeighConst::REQ_FULL | NeighConst::REQ_GHOST
                                             : NeighConst::REQ_FULL);
  request->set_kokkos_host(std::is_same_v<DeviceType, LMPHostType> &&
                           !std::is_same_v<DeviceType, LMPDeviceType>);
  request->set_kokkos_device(std::is_same_v<DeviceType, LMPDeviceType>);
}

/* ----------------------------------------------------------------------
   the graph kernels read DeviceType's views, the plain style's host code
   (consolidation, per-atom tallies, F dot r, atom IDs) the host arrays
------------------------------------------------------------------------- */

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::compute(int eflag, int vflag)
{
  atomKK->sync(execution_space, X_MASK | F_MASK | TYPE_MASK);
  atomKK->sync(Host, X_MASK | F_MASK | TYPE_MASK | TAG_MASK);
  forces_on_device = false;
  PairNVAlchemi::compute(eflag, vflag);
  if (!forces_on_device) atomKK->modified(Host, F_MASK);
}

/* ----------------------------------------------------------------------
   the plain style's graph (NVAlchemi::build_graph), built in parallel:
   rows are the atoms of handled types in index order (a scan), edges run
   from each neighbor to the list atom, list atoms in list order
------------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::build_rank_graph(NVAlchemi::Graph &graph)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  GraphBuffers &buffers = *this->buffers;
  const int nlocal = atom->nlocal, nall = nlocal + atom->nghost;
  const auto x = atomKK->k_x.template view<DeviceType>();
  const auto type = atomKK->k_type.template view<DeviceType>();
  const auto z_of_type = k_atomic_number_of_type.template view<DeviceType>();

  if (static_cast<int>(d_atom_row.extent(0)) < nall)
    d_atom_row = typename AT::t_int_1d("nvalchemi:atom_row", nall);
  const auto atom_row = d_atom_row;
  int nrows = 0, n_owned = 0;
  Kokkos::parallel_scan(
      "nvalchemi::rows", Policy(0, nall),
      KOKKOS_LAMBDA(int i, int &row, bool final) {
        const bool handled = z_of_type(type(i)) > 0;
        if (final) atom_row(i) = handled ? row : -1;
        row += handled ? 1 : 0;
      },
      nrows);
  Kokkos::parallel_reduce(
      "nvalchemi::owned_rows", Policy(0, nlocal),
      KOKKOS_LAMBDA(int i, int &n) { n += z_of_type(type(i)) > 0 ? 1 : 0; }, n_owned);

  graph.n_owned = n_owned;
  graph.padding_rows = graph.padding_edges = 0;
  const auto row_atom = buffers.row_atom.fill(graph.row_atom, nrows);
  const auto positions = buffers.positions.fill(graph.positions, 3 * size_t(nrows));
  const auto atomic_numbers = buffers.atomic_numbers.fill(graph.atomic_numbers, nrows);
  Kokkos::parallel_for(
      "nvalchemi::row_values", Policy(0, nall), KOKKOS_LAMBDA(int i) {
        const int r = atom_row(i);
        if (r < 0) return;
        row_atom(r) = i;
        for (int d = 0; d < 3; ++d) positions(3 * r + d) = x(i, d);
        atomic_numbers(r) = z_of_type(type(i));
      });

  // edges in two passes that read each neighbor once: every list atom writes its kept edges at
  // its slots among all candidates (a scan of the list's counts), then each atom's edges move
  // to their place in the graph (a scan of the kept counts)
  auto *k_list = static_cast<NeighListKokkos<DeviceType> *>(list);
  const auto ilist = k_list->d_ilist;
  const auto numneigh = k_list->d_numneigh;
  const auto neighbors = k_list->d_neighbors;
  const int nlist = list->inum + (ghostneigh ? list->gnum : 0);
  const double cutsq = cutoff * cutoff;
  if (static_cast<int>(d_kept.extent(0)) < nlist) {
    d_kept = typename AT::t_int_1d("nvalchemi:kept", nlist);
    d_first_candidate = Kokkos::View<int64_t *, DeviceType>("nvalchemi:first_candidate", nlist);
    d_first_edge = Kokkos::View<int64_t *, DeviceType>("nvalchemi:first_edge", nlist);
  }
  const auto kept = d_kept;
  const auto first_candidate = d_first_candidate;
  const auto first_edge = d_first_edge;
  int64_t ncandidates = 0;
  Kokkos::parallel_scan(
      "nvalchemi::candidate_offsets", Policy(0, nlist),
      KOKKOS_LAMBDA(int ii, int64_t &first, bool final) {
        if (final) first_candidate(ii) = first;
        first += numneigh(ilist(ii));
      },
      ncandidates);
  if (static_cast<int64_t>(d_candidate_vectors.extent(0)) < 3 * ncandidates) {
    const int64_t grown = ncandidates + ncandidates / 4;
    d_candidate_edges = Kokkos::View<int64_t *, DeviceType>("nvalchemi:candidate_edges", 2 * grown);
    d_candidate_vectors = Kokkos::View<double *, DeviceType>("nvalchemi:candidate_vectors", 3 * grown);
  }
  const auto candidate_edges = d_candidate_edges;
  const auto candidate_vectors = d_candidate_vectors;
  Kokkos::parallel_for(
      "nvalchemi::find_edges", Policy(0, nlist), KOKKOS_LAMBDA(int ii) {
        const int i = ilist(ii);
        const int receiver = atom_row(i);
        int count = 0;
        if (receiver >= 0) {
          int64_t e = first_candidate(ii);
          for (int jj = 0, n = numneigh(i); jj < n; ++jj) {
            const int j = neighbors(i, jj) & NEIGHMASK;
            const int sender = atom_row(j);
            if (sender < 0) continue;
            const double r[3] = {x(i, 0) - x(j, 0), x(i, 1) - x(j, 1), x(i, 2) - x(j, 2)};
            if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= cutsq) continue;
            candidate_edges(2 * e) = sender;
            candidate_edges(2 * e + 1) = receiver;
            for (int d = 0; d < 3; ++d) candidate_vectors(3 * e + d) = r[d];
            ++e;
            ++count;
          }
        }
        kept(ii) = count;
      });
  int64_t nedges = 0;
  Kokkos::parallel_scan(
      "nvalchemi::edge_offsets", Policy(0, nlist),
      KOKKOS_LAMBDA(int ii, int64_t &first, bool final) {
        if (final) first_edge(ii) = first;
        first += kept(ii);
      },
      nedges);

  const auto edges = buffers.edges.fill(graph.edges, 2 * size_t(nedges));
  const auto edge_vectors = buffers.edge_vectors.fill(graph.edge_vectors, 3 * size_t(nedges));
  Kokkos::parallel_for(
      "nvalchemi::place_edges", Policy(0, nlist), KOKKOS_LAMBDA(int ii) {
        const int64_t from = first_candidate(ii), to = first_edge(ii);
        for (int64_t k = 0; k < kept(ii); ++k) {
          for (int c = 0; c < 2; ++c) edges(2 * (to + k) + c) = candidate_edges(2 * (from + k) + c);
          for (int d = 0; d < 3; ++d)
            edge_vectors(3 * (to + k) + d) = candidate_vectors(3 * (from + k) + d);
        }
      });
  Kokkos::fence();
  buffers.row_atom.finish();
  buffers.positions.finish();
  buffers.atomic_numbers.finish();
  buffers.edges.finish();
  buffers.edge_vectors.finish();
}

/* ----------------------------------------------------------------------
   an edge r = x_receiver - x_sender with gradient g pulls -g on its
   receiver and +g on its sender: scattered into the Kokkos force view
   (ghost forces go home by reverse comm)
------------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::add_edge_forces(const NVAlchemi::Graph &graph,
                                                      const double *edge_gradients)
{
  if (!edge_gradients) return;
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  GraphBuffers &buffers = *this->buffers;
  const int64_t nedges = graph.num_edges();
  const auto gradient = buffers.edge_gradients.read(edge_gradients, 3 * size_t(nedges));
  const auto edges = buffers.edges.read(graph.edges.data(), 2 * size_t(nedges));
  const auto row_atom = buffers.row_atom.read(graph.row_atom.data(), graph.row_atom.size());

  const auto f = atomKK->k_f.template view<DeviceType>();
  const auto scatter = [&](auto scattered) {
    Kokkos::parallel_for(
        "nvalchemi::edge_forces", Policy(0, nedges), KOKKOS_LAMBDA(int64_t e) {
          auto force = scattered.access();
          const int sender = row_atom(edges(2 * e)), receiver = row_atom(edges(2 * e + 1));
          for (int d = 0; d < 3; ++d) {
            force(receiver, d) += -gradient(3 * e + d);
            force(sender, d) += gradient(3 * e + d);
          }
        });
    Kokkos::Experimental::contribute(f, scattered);
  };
  // one thread writes the force view itself; several use the execution space's default
  // (per-thread copies on OpenMP, atomics on a GPU)
  using namespace Kokkos::Experimental;
  if (typename DeviceType::execution_space().concurrency() == 1)
    scatter(create_scatter_view<ScatterSum, ScatterNonDuplicated, ScatterNonAtomic>(f));
  else
    scatter(create_scatter_view(f));
  atomKK->modified(execution_space, F_MASK);
  // the plain style's host code (F dot r) reads them next
  atomKK->sync(Host, F_MASK);
  forces_on_device = true;
}

namespace LAMMPS_NS {
template class PairNVAlchemiKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairNVAlchemiKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
