// Unit test: after its first step, the package's per-step code (graph, padding, force tally,
// row exchange) makes no heap allocation. A counting operator new replaces the global one in
// this test binary; it counts only while a test asks it to.

#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_halo_row_exchange.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}    // namespace

void *operator new(std::size_t size)
{
  if (counting) ++allocations;
  if (void *p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t size)
{ return operator new(size); }
void operator delete(void *p) noexcept
{ std::free(p); }
void operator delete[](void *p) noexcept
{ std::free(p); }
void operator delete(void *p, std::size_t) noexcept
{ std::free(p); }
void operator delete[](void *p, std::size_t) noexcept
{ std::free(p); }

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// a simple cubic crystal of n^3 owned atoms (spacing 1) and a shell of ghosts around it, with
// the half list without newton that the pair style requests (cutoff 1.5 plus skin 0.3)
struct Crystal {
  std::vector<double> coords;
  std::vector<double *> x;
  std::vector<int> type, ilist, numneigh;
  std::vector<std::vector<int>> neighbors;
  std::vector<int *> firstneigh;
  int nlocal = 0;

  explicit Crystal(int n)
  {
    for (int ghost = 0; ghost < 2; ++ghost)
      for (int a = -1; a <= n; ++a)
        for (int b = -1; b <= n; ++b)
          for (int c = -1; c <= n; ++c) {
            const bool inside = a >= 0 && a < n && b >= 0 && b < n && c >= 0 && c < n;
            if (inside == (ghost == 1)) continue;
            coords.insert(coords.end(), {double(a), double(b), double(c)});
          }
    const int nall = static_cast<int>(coords.size() / 3);
    nlocal = n * n * n;
    for (int i = 0; i < nall; ++i) x.push_back(&coords[3 * i]);
    type.assign(nall, 1);
    neighbors.resize(nlocal);
    for (int i = 0; i < nlocal; ++i) {
      ilist.push_back(i);
      for (int j = i + 1; j < nall; ++j) {
        double rsq = 0.0;
        for (int d = 0; d < 3; ++d) rsq += (x[i][d] - x[j][d]) * (x[i][d] - x[j][d]);
        if (rsq < 1.8 * 1.8) neighbors[i].push_back(j);
      }
      numneigh.push_back(static_cast<int>(neighbors[i].size()));
      firstneigh.push_back(neighbors[i].data());
    }
  }
};

// forward and reverse communication that moves nothing (one rank, no periodic images)
struct NoComm : AtomComm {
  explicit NoComm(int natoms) : natoms(natoms) {}
  int num_atoms() const override { return natoms; }
  void forward(double *, int) override {}
  void reverse(double *, int, Wire) override {}
  void sum_over_ranks(double *, int) override {}
  void broadcast(double *, int) override {}
  void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                        int n) override
  { same_on_every_rank(values, lowest, highest, n); }
  int natoms;
};
}    // namespace

TEST(Allocations, NonePerStepAfterTheFirst)
{
  Crystal crystal(6);
  const int nall = static_cast<int>(crystal.x.size());
  const int z_of_type[2] = {0, 18};
  const AtomsView atoms{crystal.x.data(), crystal.type.data(), z_of_type, crystal.nlocal, nall};
  const NeighborView list{
      crystal.nlocal, 0,   crystal.ilist.data(), crystal.numneigh.data(), crystal.firstneigh.data(),
      0x1FFFFFFF,     true};
  Graph graph;
  std::vector<int> atom_row;
  std::vector<double> row_forces, features;
  std::vector<double> f_storage(3 * nall);
  std::vector<double *> f(nall);
  for (int i = 0; i < nall; ++i) f[i] = &f_storage[3 * i];
  NoComm comm(nall);
  RowExchange exchange(graph, comm, false);
  int64_t rows = 0, edges = 0;

  long first_step = 0;
  for (int step = 0; step < 5; ++step) {
    // atoms move a little: some pairs cross the cutoff, so the edge count changes
    for (std::size_t k = 0; k < crystal.coords.size(); ++k)
      crystal.coords[k] += 0.05 * std::sin(0.7 * k + step);
    allocations = 0;
    counting = true;
    build_graph(atoms, list, 1.5, graph, atom_row);
    rows = grown_capacity(rows, graph.num_rows(), 1.2, true);
    edges = grown_capacity(edges, graph.num_edges(), 1.2, false);
    pad_graph(graph, rows, edges, 1.5);
    features.resize(4 * graph.tensor_rows());
    exchange.refresh(features.data(), 4);
    exchange.sum_into_owners(features.data(), 4, Wire::FLOAT64);
    add_edge_forces(graph, graph.edge_vectors.data(), f.data());
    edge_forces(graph, graph.edge_vectors.data(), row_forces);
    counting = false;
    if (step == 0)
      first_step = allocations;
    else
      EXPECT_EQ(allocations, 0) << "heap allocations on step " << step;
  }
  EXPECT_GT(first_step, 0);    // the counter counts: the first step sized the buffers
  EXPECT_GT(graph.num_edges(), 0);
}
