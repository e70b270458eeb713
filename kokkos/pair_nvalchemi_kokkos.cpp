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
#include "nvalchemi_halo_row_exchange_kokkos.h"
#include "nvalchemi_runner_outputs.h"

#include <Kokkos_ScatterView.hpp>

#include <algorithm>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

using namespace LAMMPS_NS;

namespace {
using HostValues =
    Kokkos::View<double *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// One array of the rank graph in DeviceType's memory, grown as needed (never shrunk), and its
// copies to and from host memory of the same layout
template <class DeviceType, class T> class DeviceArray {
 public:
  using View = Kokkos::View<T *, typename DeviceType::memory_space>;
  using HostView = Kokkos::View<T *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  // room for n values, as the view the kernels write them through
  View fill(size_t n)
  {
    if (values.extent(0) < n)
      values = View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "nvalchemi:graph"), n + n / 4);
    size = n;
    return values;
  }
  // room for n values, the first ones kept, as the view the kernels write the rest through
  View extend(size_t n)
  {
    if (values.extent(0) < n) Kokkos::resize(values, n + n / 4);
    size = n;
    return values;
  }
  const T *data() const { return values.data(); }
  const View &view() const { return values; }
  // `buffer` takes the values
  template <class Buffer> void to_host(Buffer &buffer) const
  {
    buffer.resize(size);
    Kokkos::deep_copy(HostView(buffer.data(), size),
                      Kokkos::subview(values, std::make_pair(size_t(0), size)));
  }
  // the n values at `host` copied in
  void from_host(const T *host, size_t n)
  {
    fill(n);
    Kokkos::deep_copy(Kokkos::subview(values, std::make_pair(size_t(0), n)),
                      Kokkos::View<const T *, Kokkos::HostSpace,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host, n));
  }

 private:
  View values;
  size_t size = 0;
};

// a virial (xx yy zz xy xz yz) as Kokkos reduces it
struct Virial {
  double w[6];
  KOKKOS_INLINE_FUNCTION Virial()
  {
    for (int v = 0; v < 6; ++v) w[v] = 0.0;
  }
  KOKKOS_INLINE_FUNCTION Virial &operator+=(const Virial &other)
  {
    for (int v = 0; v < 6; ++v) w[v] += other.w[v];
    return *this;
  }
};
}    // namespace

template <class DeviceType> struct PairNVAlchemiKokkos<DeviceType>::DeviceGraph {
  DeviceArray<DeviceType, int> row_atom;
  DeviceArray<DeviceType, double> positions, edge_vectors;
  DeviceArray<DeviceType, int64_t> atomic_numbers, edges;
  // edge gradients the model left on the host (a graph of the halo mode's own), for the force
  // kernels
  DeviceArray<DeviceType, double> host_gradients;
  // the resident edge gradients copied to the host for host code, kept from step to step
  std::shared_ptr<std::vector<double>> host_copy;

  // where the model reads the arrays
  NVAlchemi::Graph::Resident resident() const
  {
    return {true, NVAlchemi::torch_device_of<DeviceType>(), positions.data(), edge_vectors.data(),
            atomic_numbers.data(), edges.data()};
  }
};

/* ---------------------------------------------------------------------- */

template <class DeviceType>
PairNVAlchemiKokkos<DeviceType>::PairNVAlchemiKokkos(LAMMPS *lmp) :
    PairNVAlchemi(lmp), device_graph(new DeviceGraph), graph_on_host(false)
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
  delete device_graph;
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
  constexpr bool reads_host =
      Kokkos::SpaceAccessibility<typename DeviceType::execution_space, Kokkos::HostSpace>::accessible;
  if (!reads_host && !NVAlchemi::torch_device_of<DeviceType>().is_gpu())
    error->all(FLERR, Error::NOLASTLINE,
               "Pair style nvalchemi/kk runs on Kokkos' host backends and CUDA; this Kokkos "
               "device ({}) has no LibTorch device: use pair_style nvalchemi/kk/host",
               typename DeviceType::execution_space().name());
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
   the graph and force kernels read and write DeviceType's views; the host
   reads atom IDs (halo mode gp, messages naming atoms) and, with forces of
   the model's own, tallies the forces (and F dot r the virial) there
------------------------------------------------------------------------- */

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::compute(int eflag, int vflag)
{
  PairNVAlchemi::compute(eflag, vflag);
  if (drives_dynamics() && !differentiates_energy()) atomKK->modified(Host, F_MASK);
}

template <class DeviceType> void PairNVAlchemiKokkos<DeviceType>::begin_evaluation()
{
  const bool host_forces = !differentiates_energy();
  atomKK->sync(execution_space, X_MASK | F_MASK | TYPE_MASK);
  atomKK->sync(Host, TAG_MASK | (host_forces ? X_MASK | F_MASK : 0));
  graph_on_host = false;
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
  DeviceGraph &dg = *device_graph;
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

  // the host buffers take the sizes (their values come with graph_to_host)
  graph.n_owned = n_owned;
  graph.row_atom.resize(nrows);
  const auto row_atom = dg.row_atom.fill(nrows);
  const auto positions = dg.positions.fill(3 * size_t(nrows));
  const auto atomic_numbers = dg.atomic_numbers.fill(nrows);
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

  NVAlchemi::size_resident_buffers(graph, nedges, nrows, nedges);
  const auto edges = dg.edges.fill(2 * size_t(nedges));
  const auto edge_vectors = dg.edge_vectors.fill(3 * size_t(nedges));
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
  graph.resident = dg.resident();
}

/* ----------------------------------------------------------------------
   static shapes: the resident graph padded where it lives (the dead rows
   and edges of NVAlchemi::pad_graph); a graph on the host (halo mode gp's)
   on the host
------------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::pad_graph(NVAlchemi::Graph &graph, int64_t rows,
                                                int64_t edges)
{
  if (!graph.resident.set) {
    PairNVAlchemi::pad_graph(graph, rows, edges);
    return;
  }
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  DeviceGraph &dg = *device_graph;
  const int64_t nrows = graph.num_rows(), nedges = graph.num_edges();
  NVAlchemi::size_resident_buffers(graph, nedges, rows, edges);
  const auto positions = dg.positions.extend(3 * rows);
  const auto atomic_numbers = dg.atomic_numbers.extend(rows);
  const auto edge_rows = dg.edges.extend(2 * edges);
  const auto edge_vectors = dg.edge_vectors.extend(3 * edges);
  const double length = cutoff;
  Kokkos::parallel_for(
      "nvalchemi::dead_rows", Policy(nrows, rows), KOKKOS_LAMBDA(int64_t r) {
        atomic_numbers(r) = 0;
        for (int d = 0; d < 3; ++d) positions(3 * r + d) = 0.0;
      });
  Kokkos::parallel_for(
      "nvalchemi::dead_edges", Policy(nedges, edges), KOKKOS_LAMBDA(int64_t e) {
        edge_rows(2 * e) = edge_rows(2 * e + 1) = rows - 1;
        edge_vectors(3 * e) = length;
        edge_vectors(3 * e + 1) = edge_vectors(3 * e + 2) = 0.0;
      });
  Kokkos::fence();
  graph.resident = dg.resident();
}

/* ---------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::graph_to_host(NVAlchemi::Graph &graph)
{
  if (graph_on_host) return;
  DeviceGraph &dg = *device_graph;
  dg.row_atom.to_host(graph.row_atom);
  dg.positions.to_host(graph.positions);
  dg.atomic_numbers.to_host(graph.atomic_numbers);
  dg.edges.to_host(graph.edges);
  dg.edge_vectors.to_host(graph.edge_vectors);
  graph_on_host = true;
}

/* ---------------------------------------------------------------------- */

template <class DeviceType>
std::unique_ptr<NVAlchemi::MeasuredExchanger>
PairNVAlchemiKokkos<DeviceType>::make_row_exchange(const NVAlchemi::Graph &rank_graph,
                                                   NVAlchemi::AtomComm &atoms, bool complete)
{
  return std::make_unique<NVAlchemi::RowExchangeKokkos<DeviceType>>(
      rank_graph, device_graph->row_atom.view(), atoms, complete);
}

/* ----------------------------------------------------------------------
   the gradients the model left in DeviceType's memory: checked there,
   copied to the host when host code needs them or one is not finite
------------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::step_to_host(NVAlchemi::Graph &graph,
                                                   NVAlchemi::ModelOutputs &outputs, bool needed)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  const NVAlchemi::SharedValues &resident = outputs.resident_edge_gradients;
  const int64_t n = resident.size();
  const DeviceValues gradient(resident.get(), n);
  if (!needed && n > 0) {
    int64_t not_finite = 0;
    Kokkos::parallel_reduce(
        "nvalchemi::nonfinite_gradients", Policy(0, n),
        KOKKOS_LAMBDA(int64_t k, int64_t &count) {
          count += Kokkos::isfinite(gradient(k)) ? 0 : 1;
        },
        not_finite);
    needed = not_finite > 0;
  }
  if (!needed) return;
  graph_to_host(graph);
  if (n == 0 || !outputs.edge_gradients.empty()) return;
  // the copy of the last step is no one's now (the runner cleared edge_gradients): its memory
  // serves again
  auto &host = device_graph->host_copy;
  if (!host || host.use_count() > 1) host = std::make_shared<std::vector<double>>();
  host->resize(n);
  Kokkos::deep_copy(HostValues(host->data(), n), gradient);
  outputs.edge_gradients = {std::shared_ptr<const double>(host, host->data()), n};
}

/* ----------------------------------------------------------------------
   an edge r = x_receiver - x_sender with gradient g pulls -g on its
   receiver and +g on its sender: scattered into the Kokkos force view
   (ghost forces go home by reverse comm)
------------------------------------------------------------------------- */

template <class DeviceType>
void PairNVAlchemiKokkos<DeviceType>::add_edge_forces(const NVAlchemi::Graph &graph,
                                                      const NVAlchemi::ModelOutputs &outputs,
                                                      double *virial)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  DeviceGraph &dg = *device_graph;
  const int64_t nedges = graph.num_edges();
  DeviceValues gradient(outputs.resident_edge_gradients.get(), 3 * nedges);
  if (outputs.resident_edge_gradients.empty()) {
    const double *g = outputs.host_edge_gradients();
    if (!g) return;
    dg.host_gradients.from_host(g, 3 * nedges);
    gradient = DeviceValues(dg.host_gradients.data(), 3 * nedges);
  }
  const auto edges = dg.edges.view();
  const auto row_atom = dg.row_atom.view();
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
  if (!virial) return;

  // -r (x) g summed over the edges, in LAMMPS' order xx yy zz xy xz yz
  const auto r = dg.edge_vectors.view();
  Virial sum;
  Kokkos::parallel_reduce(
      "nvalchemi::edge_virial", Policy(0, nedges),
      KOKKOS_LAMBDA(int64_t e, Virial &w) {
        constexpr int a[6] = {0, 1, 2, 0, 0, 1}, b[6] = {0, 1, 2, 1, 2, 2};
        for (int v = 0; v < 6; ++v) w.w[v] -= r(3 * e + a[v]) * gradient(3 * e + b[v]);
      },
      sum);
  for (int v = 0; v < 6; ++v) virial[v] += sum.w[v];
}

namespace LAMMPS_NS {
template class PairNVAlchemiKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairNVAlchemiKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
