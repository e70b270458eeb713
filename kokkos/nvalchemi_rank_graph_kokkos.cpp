/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the rank graph of pair_style nvalchemi/kk
   (nvalchemi_rank_graph_kokkos.h)
------------------------------------------------------------------------- */

#include "nvalchemi_rank_graph_kokkos.h"

#include "atom_kokkos.h"
#include "atom_masks.h"
#include "neigh_list_kokkos.h"

#include "nvalchemi_halo_row_exchange_kokkos.h"

#include <Kokkos_ScatterView.hpp>

#include <memory>
#include <utility>
#include <vector>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::NVAlchemi;

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
    Kokkos::deep_copy(
        Kokkos::subview(values, std::make_pair(size_t(0), n)),
        Kokkos::View<const T *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host,
                                                                                            n));
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

// values in DeviceType's memory that LibTorch owns (the edge gradients)
template <class DeviceType>
using DeviceValues = Kokkos::View<const double *, typename DeviceType::memory_space,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
}    // namespace

template <class DeviceType> struct KokkosRankGraph<DeviceType>::Arrays {
  DeviceArray<DeviceType, int> row_atom;
  DeviceArray<DeviceType, double> positions, edge_vectors;
  DeviceArray<DeviceType, int64_t> atomic_numbers, edges;
  // edge gradients the model left on the host (a graph of the halo mode's own), for the force
  // kernels
  DeviceArray<DeviceType, double> host_gradients;
  // the resident edge gradients copied to the host for host code, kept from step to step
  std::shared_ptr<std::vector<double>> host_copy;
  // the build's scratch: the row of each atom (-1 if none); per list atom its first slot among
  // all neighbor candidates, its kept edges and its first edge; the edges as found, each list
  // atom's at its candidate slots (sender, receiver; vector)
  typename AT::t_int_1d atom_row, kept;
  Kokkos::View<int64_t *, DeviceType> first_candidate, first_edge, candidate_edges;
  Kokkos::View<double *, DeviceType> candidate_vectors;

  // where the model reads the arrays
  Graph::Resident resident() const
  {
    return {true,
            torch_device_of<DeviceType>(),
            positions.data(),
            edge_vectors.data(),
            atomic_numbers.data(),
            edges.data()};
  }
};

template <class DeviceType>
KokkosRankGraph<DeviceType>::KokkosRankGraph(AtomKokkos *atom) :
    arrays(std::make_unique<Arrays>()), atomKK(atom)
{
}

template <class DeviceType> KokkosRankGraph<DeviceType>::~KokkosRankGraph() = default;

template <class DeviceType>
void KokkosRankGraph<DeviceType>::take(NeighList *neighbor_list, bool with_ghost_lists,
                                       const typename AT::t_int_1d &atomic_number_of_type)
{
  list = neighbor_list;
  ghost_lists = with_ghost_lists;
  z_of_type = atomic_number_of_type;
}

/* ----------------------------------------------------------------------
   the plain style's graph (build_graph), built in parallel: rows are the
   atoms of handled types in index order (a scan), edges run from each
   neighbor to the list atom, list atoms in list order
------------------------------------------------------------------------- */

template <class DeviceType>
void KokkosRankGraph<DeviceType>::build(const AtomsView &atoms, const NeighborView &neighbor_list,
                                        double cutoff, bool /*list_is_new*/, Graph &graph,
                                        std::vector<int> & /*atom_row*/)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  Arrays &dg = *arrays;
  const int nlocal = atoms.nlocal, nall = atoms.nall;
  graph_on_host = false;
  const auto x = atomKK->k_x.template view<DeviceType>();
  const auto type = atomKK->k_type.template view<DeviceType>();
  const auto z_of_type = this->z_of_type;

  if (static_cast<int>(dg.atom_row.extent(0)) < nall)
    dg.atom_row = typename AT::t_int_1d("nvalchemi:atom_row", nall);
  const auto atom_row = dg.atom_row;
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
  const int nlist = neighbor_list.inum + neighbor_list.gnum;
  const double cutsq = cutoff * cutoff;
  if (static_cast<int>(dg.kept.extent(0)) < nlist) {
    dg.kept = typename AT::t_int_1d("nvalchemi:kept", nlist);
    dg.first_candidate = Kokkos::View<int64_t *, DeviceType>("nvalchemi:first_candidate", nlist);
    dg.first_edge = Kokkos::View<int64_t *, DeviceType>("nvalchemi:first_edge", nlist);
  }
  const auto kept = dg.kept;
  const auto first_candidate = dg.first_candidate;
  const auto first_edge = dg.first_edge;
  int64_t ncandidates = 0;
  Kokkos::parallel_scan(
      "nvalchemi::candidate_offsets", Policy(0, nlist),
      KOKKOS_LAMBDA(int ii, int64_t &first, bool final) {
        if (final) first_candidate(ii) = first;
        first += numneigh(ilist(ii));
      },
      ncandidates);
  if (static_cast<int64_t>(dg.candidate_vectors.extent(0)) < 3 * ncandidates) {
    const int64_t grown = ncandidates + ncandidates / 4;
    dg.candidate_edges =
        Kokkos::View<int64_t *, DeviceType>("nvalchemi:candidate_edges", 2 * grown);
    dg.candidate_vectors =
        Kokkos::View<double *, DeviceType>("nvalchemi:candidate_vectors", 3 * grown);
  }
  const auto candidate_edges = dg.candidate_edges;
  const auto candidate_vectors = dg.candidate_vectors;
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

  size_resident_buffers(graph, nedges, nrows, nedges);
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
   and edges of pad_graph)
------------------------------------------------------------------------- */

template <class DeviceType>
void KokkosRankGraph<DeviceType>::pad(Graph &graph, int64_t rows, int64_t edges, double cutoff)
{
  graph_on_host = false;
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  Arrays &dg = *arrays;
  const int64_t nrows = graph.num_rows(), nedges = graph.num_edges();
  size_resident_buffers(graph, nedges, rows, edges);
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

template <class DeviceType> void KokkosRankGraph<DeviceType>::to_host(Graph &graph)
{
  if (graph_on_host) return;
  Arrays &dg = *arrays;
  dg.row_atom.to_host(graph.row_atom);
  dg.positions.to_host(graph.positions);
  dg.atomic_numbers.to_host(graph.atomic_numbers);
  dg.edges.to_host(graph.edges);
  dg.edge_vectors.to_host(graph.edge_vectors);
  graph_on_host = true;
}

/* ---------------------------------------------------------------------- */

template <class DeviceType>
std::unique_ptr<MeasuredExchanger>
KokkosRankGraph<DeviceType>::row_exchange(const Graph &graph, AtomComm &atoms, bool complete)
{
  return std::make_unique<RowExchangeKokkos<DeviceType>>(graph, arrays->row_atom.view(), atoms,
                                                         complete);
}

template <class DeviceType>
void KokkosRankGraph<DeviceType>::outputs_to_host(Graph &graph, ModelOutputs &outputs, bool needed)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  Arrays &dg = *arrays;
  const SharedValues &resident = outputs.resident_edge_gradients;
  const int64_t n = resident.size();
  const DeviceValues<DeviceType> gradient(resident.get(), n);
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
  to_host(graph);
  if (n == 0 || !outputs.edge_gradients.empty()) return;
  // the copy of the last step is no one's now (the runner cleared edge_gradients): its memory
  // serves again
  auto &host = dg.host_copy;
  if (!host || host.use_count() > 1) host = std::make_shared<std::vector<double>>();
  host->resize(n);
  Kokkos::deep_copy(HostValues(host->data(), n), gradient);
  outputs.edge_gradients = {std::shared_ptr<const double>(host, host->data()), n};
}

template <class DeviceType>
void KokkosRankGraph<DeviceType>::add_edge_forces(const Graph &graph, const ModelOutputs &outputs,
                                                  double *const * /*f*/, double *virial)
{
  using Policy = Kokkos::RangePolicy<typename DeviceType::execution_space>;
  Arrays &dg = *arrays;
  const int64_t nedges = graph.num_edges();
  DeviceValues<DeviceType> gradient(outputs.resident_edge_gradients.get(), 3 * nedges);
  if (outputs.resident_edge_gradients.empty()) {
    const double *g = outputs.host_edge_gradients();
    if (!g) return;
    dg.host_gradients.from_host(g, 3 * nedges);
    gradient = DeviceValues<DeviceType>(dg.host_gradients.data(), 3 * nedges);
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
  atomKK->modified(ExecutionSpaceFromDevice<DeviceType>::space, F_MASK);
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
namespace NVAlchemi {
  template class KokkosRankGraph<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
  template class KokkosRankGraph<LMPHostType>;
#endif
}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
