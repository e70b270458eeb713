// Unit tests: building the model's graph from LAMMPS-style arrays.

#include "nvalchemi_rank_graph_build.h"
#include "nvalchemi_rank_graph_torch.h"

#include "gtest/gtest.h"

#include <cmath>
#include <memory>
#include <set>
#include <vector>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// 3 owned atoms and 2 ghosts on a line; type 2 is NULL (not handled by the model).
struct Fixture {
  double coords[5][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {-1, 0, 0}};
  double *x[5] = {coords[0], coords[1], coords[2], coords[3], coords[4]};
  int type[5] = {1, 2, 1, 1, 1};
  int z_of_type[3] = {0, 18, 0};
  int ilist[3] = {0, 1, 2};
  // full lists; index 3 carries a special-bond bit that the mask must strip
  int n0[3] = {1, 4, 2}, n1[2] = {0, 2}, n2[3] = {1, 0, 3 | (1 << 30)};
  int *firstneigh[3] = {n0, n1, n2};
  int numneigh[3] = {3, 2, 3};
  Graph graph;
  std::vector<int> atom_row;

  // `graph` from all five atoms and the full lists
  void build(double cutoff)
  {
    const AtomsView atoms{x, type, z_of_type, 3, 5};
    const NeighborView list{3, 0, ilist, numneigh, firstneigh, 0x1FFFFFFF};
    build_graph(atoms, list, cutoff, graph, atom_row);
  }
};
}    // namespace

TEST(Graph, OwnedRowsFirstNullTypesOutEdgesWithinCutoff)
{
  Fixture fx;
  fx.build(1.5);
  const Graph &graph = fx.graph;

  // rows: owned atoms 0, 2 then ghosts 3, 4; atom 1 has a NULL type
  EXPECT_EQ(graph.n_owned, 2);
  EXPECT_EQ(graph.row_atom, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(graph.atomic_numbers, (Buffer<int64_t>{18, 18, 18, 18}));
  EXPECT_EQ(graph.positions[3 * 2], 3.0);

  // edges (sender row, receiver row): 4 -> 0 (distance 1); 0 -> 2 is 2.0 >= cutoff; 3 -> 2
  EXPECT_EQ(graph.edges, (Buffer<int64_t>{3, 0, 2, 1}));
  EXPECT_EQ(graph.edge_vectors, (Buffer<double>{1, 0, 0, -1, 0, 0}));
  EXPECT_EQ(graph.num_edges(), 2);
}

TEST(Graph, RebuildReusesBuffersAndEmptyRankWorks)
{
  Fixture fx;
  const Graph &graph = fx.graph;
  fx.build(2.5);
  EXPECT_EQ(graph.num_edges(), 4);
  const double *storage = graph.edge_vectors.data();
  fx.build(2.5);
  EXPECT_EQ(graph.num_edges(), 4);
  EXPECT_EQ(graph.edge_vectors.data(), storage);

  AtomsView empty{fx.x, fx.type, fx.z_of_type, 0, 0};
  NeighborView none{0, 0, fx.ilist, fx.numneigh, fx.firstneigh, 0x1FFFFFFF};
  build_graph(empty, none, 2.5, fx.graph, fx.atom_row);
  EXPECT_EQ(graph.num_rows(), 0);
  EXPECT_EQ(graph.num_edges(), 0);
}

namespace {
// every (sender, receiver, edge vector) within the cutoff, by brute force over a wide range of
// lattice images: the oracle for the binned single-process builder
std::multiset<std::vector<double>> brute_force_edges(const std::vector<double> &x,
                                                     const std::vector<int64_t> &z,
                                                     const Cell &cell, double cutoff, int reach)
{
  std::multiset<std::vector<double>> edges;
  const int n = static_cast<int>(z.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int a = -reach; a <= reach; ++a)
        for (int b = -reach; b <= reach; ++b)
          for (int c = -reach; c <= reach; ++c) {
            if (z[i] <= 0 || z[j] <= 0) continue;
            const int shift[3] = {cell.pbc[0] ? a : 0, cell.pbc[1] ? b : 0, cell.pbc[2] ? c : 0};
            if ((!cell.pbc[0] && a) || (!cell.pbc[1] && b) || (!cell.pbc[2] && c)) continue;
            if (i == j && !shift[0] && !shift[1] && !shift[2]) continue;
            std::vector<double> r(3);
            for (int d = 0; d < 3; ++d)
              r[d] = x[3 * i + d] - x[3 * j + d] -
                  (shift[0] * cell.lattice[0][d] + shift[1] * cell.lattice[1][d] +
                   shift[2] * cell.lattice[2][d]);
            if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= cutoff * cutoff) continue;
            // rounded, so that folding positions into the cell does not change the key
            edges.insert({double(j), double(i), std::round(r[0] * 1e9), std::round(r[1] * 1e9),
                          std::round(r[2] * 1e9)});
          }
  return edges;
}

std::multiset<std::vector<double>> graph_edges(const Graph &g)
{
  std::multiset<std::vector<double>> edges;
  for (int64_t e = 0; e < g.num_edges(); ++e)
    edges.insert({double(g.row_atom[g.edges[2 * e]]), double(g.row_atom[g.edges[2 * e + 1]]),
                  std::round(g.edge_vectors[3 * e] * 1e9),
                  std::round(g.edge_vectors[3 * e + 1] * 1e9),
                  std::round(g.edge_vectors[3 * e + 2] * 1e9)});
  return edges;
}
}    // namespace

TEST(PeriodicGraph, TriclinicCellSmallerThanCutoffMatchesBruteForce)
{
  // 5 atoms, one outside the cell and one of a species the model lacks; the cutoff exceeds the
  // cell heights, so atoms see several images of each other and of themselves
  const Cell cell = {{{2.0, 0.0, 0.0}, {0.7, 2.2, 0.0}, {-0.4, 0.5, 2.5}}, {true, true, true}};
  const std::vector<double> x = {0.1, 0.2,  0.3, 1.5, 1.0, 0.2, 0.9, 2.0,
                                 2.2, -0.8, 3.1, 1.0, 1.0, 1.0, 1.0};
  const std::vector<int64_t> z = {18, 18, 18, 18, 0};
  Graph graph;
  build_periodic_graph(x, z, cell, 3.1, graph);
  EXPECT_EQ(graph.n_owned, 4);
  EXPECT_EQ(graph.num_rows(), 4);
  EXPECT_EQ(graph.row_atom, (std::vector<int>{0, 1, 2, 3}));
  const auto expected = brute_force_edges(x, z, cell, 3.1, 6);
  EXPECT_GT(expected.size(), 100u);
  EXPECT_EQ(graph_edges(graph), expected);
}

TEST(PeriodicGraph, NonPeriodicDirectionsHaveNoImages)
{
  const Cell cell = {{{3.0, 0.0, 0.0}, {0.0, 3.0, 0.0}, {0.0, 0.0, 3.0}}, {true, false, true}};
  // atom 3 is next to atom 0 only through the non-periodic y faces
  const std::vector<double> x = {0.2, 0.1, 0.2, 2.9, 0.3, 0.1, 1.5, 5.0, 1.5, 0.2, 2.95, 0.2};
  const std::vector<int64_t> z = {1, 1, 1, 1};
  Graph graph;
  build_periodic_graph(x, z, cell, 1.0, graph);
  EXPECT_EQ(graph_edges(graph), brute_force_edges(x, z, cell, 1.0, 3));
  EXPECT_EQ(graph.num_edges(), 2);    // atoms 0 and 1, through the periodic x face
}

TEST(PeriodicGraph, EdgeForcesPullReceiverAndPushSender)
{
  Graph graph;
  graph.row_atom = {0, 1, 2};
  graph.edges = {0, 1, 2, 1};    // 0 -> 1, 2 -> 1
  std::vector<double> forces;
  const double gradients[6] = {1.0, 2.0, 3.0, 0.5, 0.0, -1.0};
  edge_forces(graph, gradients, forces);
  EXPECT_EQ(forces, (std::vector<double>{1.0, 2.0, 3.0, -1.5, -2.0, -2.0, 0.5, 0.0, -1.0}));
}

TEST(Graph, SampleKeepsTheFirstEdgesAndTheRowsTheyJoinAllOwned)
{
  Graph g;
  g.n_owned = 2;
  g.row_atom = {10, 11, 12, 13};
  g.positions = {0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0};
  g.atomic_numbers = {1, 8, 1, 8};
  g.edges = {3, 1, 2, 1, 0, 1, 1, 0};
  g.edge_vectors = {-2, 0, 0, -1, 0, 0, 1, 0, 0, -1, 0, 0};
  Graph sample;
  sample_graph(g, 2, sample);
  EXPECT_EQ(sample.num_edges(), 2);
  EXPECT_EQ(sample.row_atom, (std::vector<int>{13, 11, 12}));
  EXPECT_EQ(sample.n_owned, 3);
  EXPECT_EQ(std::vector<int64_t>(sample.edges.begin(), sample.edges.end()),
            (std::vector<int64_t>{0, 1, 2, 1}));
  EXPECT_EQ(std::vector<int64_t>(sample.atomic_numbers.begin(), sample.atomic_numbers.end()),
            (std::vector<int64_t>{8, 8, 1}));
  EXPECT_DOUBLE_EQ(sample.positions[0], 3.0);
  EXPECT_DOUBLE_EQ(sample.edge_vectors[3], -1.0);
  sample_graph(g, 100, sample);    // more than it has: all of them
  EXPECT_EQ(sample.num_edges(), 4);
  EXPECT_EQ(sample.num_rows(), 4);
}

TEST(StaticShapes, CapacitiesOnlyGrowInStridesOf16)
{
  EXPECT_EQ(grown_capacity(0, 100, 1.2, false), 128);      // 100 * 1.2 + 1 = 121, up to 128
  EXPECT_EQ(grown_capacity(128, 128, 1.2, false), 128);    // fits
  EXPECT_EQ(grown_capacity(128, 128, 1.2, true), 160);     // rows need one more: 154.6 + 1
  EXPECT_EQ(grown_capacity(160, 3, 1.2, true), 160);       // never shrinks
  EXPECT_EQ(grown_capacity(0, 0, 1.2, true), 16);          // an empty rank still has a dead row
}

TEST(StaticShapes, PaddingIsDeadRowsAndSelfLoopsOfTheLastRow)
{
  Fixture fx;
  Graph &graph = fx.graph;
  fx.build(1.5);
  pad_graph(graph, 8, 5, 1.5);
  EXPECT_EQ(graph.num_rows(), 4);
  EXPECT_EQ(graph.num_edges(), 2);
  EXPECT_EQ(graph.tensor_rows(), 8);
  EXPECT_EQ(graph.tensor_edges(), 5);
  EXPECT_EQ(graph.atomic_numbers, (Buffer<int64_t>{18, 18, 18, 18, 0, 0, 0, 0}));
  EXPECT_EQ(graph.positions.size(), 24u);
  EXPECT_EQ(graph.positions[3 * 5], 0.0);
  EXPECT_EQ(graph.edges, (Buffer<int64_t>{3, 0, 2, 1, 7, 7, 7, 7, 7, 7}));
  EXPECT_EQ(graph.edge_vectors,
            (Buffer<double>{1, 0, 0, -1, 0, 0, 1.5, 0, 0, 1.5, 0, 0, 1.5, 0, 0}));
  // the next build starts without padding
  fx.build(1.5);
  EXPECT_EQ(graph.tensor_rows(), 4);
  EXPECT_EQ(graph.tensor_edges(), 2);
}

TEST(Graph, HalfListGivesBothEdgesOfOwnedPairsAndOneOfGhostPairs)
{
  // the fixture's pairs once each (i < j), as a half list without newton stores them
  Fixture fx;
  int n0[2] = {1, 2}, n1[1] = {2}, n2[1] = {3};
  int *firstneigh[3] = {n0, n1, n2};
  int numneigh[3] = {2, 1, 1};
  for (int &t : fx.type) t = 1;
  AtomsView atoms{fx.x, fx.type, fx.z_of_type, 3, 5};
  NeighborView half{3, 0, fx.ilist, numneigh, firstneigh, 0x1FFFFFFF, true};
  Graph graph;
  std::vector<int> atom_row;
  build_graph(atoms, half, 1.5, graph, atom_row);
  // 0-1 and 1-2 are owned pairs (both edges), 2-3 has the ghost 3 (only the edge into 2)
  EXPECT_EQ(graph.edges, (Buffer<int64_t>{1, 0, 0, 1, 2, 1, 1, 2, 3, 2}));
  EXPECT_EQ(graph.edge_vectors, (Buffer<double>{-1, 0, 0, 1, 0, 0, -1, 0, 0, 1, 0, 0, -1, 0, 0}));
}

namespace {
// A rank's atoms (owned first, then ghosts; type 2 NULL) and a neighbor list of every pair within
// cutoff + skin, full (owned and ghost list atoms) or half (owned atoms, each owned pair once).
struct ListedAtoms {
  static constexpr int NLOCAL = 24, NALL = 40;
  double coords[NALL][3];
  double *x[NALL];
  int type[NALL];
  int z_of_type[3] = {0, 14, 0};
  std::vector<int> ilist;
  std::vector<std::vector<int>> neighbors;
  std::vector<int> numneigh;
  std::vector<int *> firstneigh;

  ListedAtoms(double reach, bool half, bool ghost_lists)
  {
    unsigned state = 12345;
    const auto uniform = [&] {
      state = state * 1103515245u + 12345u;
      return static_cast<double>((state >> 8) & 0xFFFF) / 65536.0;
    };
    for (int i = 0; i < NALL; ++i) {
      x[i] = coords[i];
      for (double &c : coords[i]) c = 6.0 * uniform();
      type[i] = i % 7 == 3 ? 2 : 1;
    }
    const int nlist = ghost_lists ? NALL : NLOCAL;
    neighbors.resize(nlist);
    for (int i = 0; i < nlist; ++i) {
      ilist.push_back(i);
      for (int j = half ? i + 1 : 0; j < NALL; ++j) {
        double rsq = 0.0;
        for (int d = 0; d < 3; ++d) rsq += (coords[i][d] - coords[j][d]) * (coords[i][d] - coords[j][d]);
        if (j != i && rsq < reach * reach) neighbors[i].push_back(j);
      }
    }
    for (auto &n : neighbors) {
      numneigh.push_back(static_cast<int>(n.size()));
      firstneigh.push_back(n.data());
    }
  }
  AtomsView atoms() const { return {x, type, z_of_type, NLOCAL, NALL}; }
  NeighborView list(bool half) const
  {
    return {static_cast<int>(NLOCAL), static_cast<int>(ilist.size()) - NLOCAL, ilist.data(),
            numneigh.data(), const_cast<int *const *>(firstneigh.data()), 0x1FFFFFFF, half};
  }
};

void expect_same_graph(const Graph &device, const Graph &host)
{
  EXPECT_EQ(device.n_owned, host.n_owned);
  EXPECT_EQ(device.row_atom, host.row_atom);
  EXPECT_EQ(device.positions, host.positions);
  EXPECT_EQ(device.atomic_numbers, host.atomic_numbers);
  EXPECT_EQ(device.edges, host.edges);
  EXPECT_EQ(device.edge_vectors, host.edge_vectors);
  EXPECT_EQ(device.padding_rows, host.padding_rows);
  EXPECT_EQ(device.padding_edges, host.padding_edges);
}
}    // namespace

TEST(TorchRankGraph, OnTheCpuDeviceItIsTheHostBuildersGraphAlongATrajectory)
{
  constexpr double cutoff = 2.0, skin = 0.6;
  for (const bool half : {false, true}) {
    ListedAtoms fx(cutoff + skin, half, !half);
    TorchRankGraph builder{Device{}};
    Graph device, host;
    std::vector<int> device_rows, host_rows;
    // the list is new at step 0; then atoms move within the skin, the list stays
    for (int step = 0; step < 3; ++step) {
      if (step > 0)
        for (auto &c : fx.coords) c[step % 3] += 0.1 * (step % 2 ? 1 : -1);
      builder.build(fx.atoms(), fx.list(half), cutoff, step == 0, device, device_rows);
      build_graph(fx.atoms(), fx.list(half), cutoff, host, host_rows);
      ASSERT_TRUE(device.resident.set);
      EXPECT_EQ(device.num_rows(), host.num_rows());
      EXPECT_EQ(device.num_edges(), host.num_edges());
      builder.to_host(device);
      expect_same_graph(device, host);
    }
    EXPECT_GT(host.num_edges(), 20);

    // padded as pad_graph pads
    builder.pad(device, host.num_rows() + 5, host.num_edges() + 7, cutoff);
    pad_graph(host, host.num_rows() + 5, host.num_edges() + 7, cutoff);
    builder.to_host(device);
    expect_same_graph(device, host);

    // gradients of the real edges: the row forces and virial of the host's edge_forces
    std::vector<double> g(3 * host.num_edges());
    for (size_t k = 0; k < g.size(); ++k) g[k] = std::sin(0.7 * k) - 0.2;
    builder.reduce_gradients(device, {std::shared_ptr<const double>(g.data(), [](const double *) {}),
                                      static_cast<int64_t>(g.size())});
    std::vector<double> forces;
    edge_forces(host, g.data(), forces);
    double virial[6] = {0, 0, 0, 0, 0, 0};
    add_edge_virial(host, g.data(), virial);
    for (int64_t k = 0; k < 3 * host.num_rows(); ++k)
      EXPECT_NEAR(builder.row_forces()[k], forces[k], 1e-13) << k;
    for (int v = 0; v < 6; ++v) EXPECT_NEAR(builder.virial()[v], virial[v], 1e-12) << v;
    EXPECT_EQ(builder.non_finite_gradients(), 0);
  }
}

TEST(TorchRankGraph, CountsNonFiniteGradientsAndWorksOnAnEmptyRank)
{
  ListedAtoms fx(2.6, false, true);
  TorchRankGraph builder{Device{}};
  Graph graph;
  std::vector<int> rows;
  builder.build(fx.atoms(), fx.list(false), 2.0, true, graph, rows);
  std::vector<double> g(3 * graph.num_edges(), 1.0);
  g[4] = std::nan("");
  g[7] = INFINITY;
  builder.reduce_gradients(graph, {std::shared_ptr<const double>(g.data(), [](const double *) {}),
                                   static_cast<int64_t>(g.size())});
  EXPECT_EQ(builder.non_finite_gradients(), 2);

  AtomsView empty{fx.x, fx.type, fx.z_of_type, 0, 0};
  NeighborView none{0, 0, fx.ilist.data(), fx.numneigh.data(), fx.firstneigh.data(), 0x1FFFFFFF};
  builder.build(empty, none, 2.0, true, graph, rows);
  EXPECT_EQ(graph.num_rows(), 0);
  EXPECT_EQ(graph.num_edges(), 0);
  builder.reduce_gradients(graph, {});
  EXPECT_EQ(builder.non_finite_gradients(), 0);
  builder.pad(graph, 16, 16, 2.0);
  builder.to_host(graph);
  EXPECT_EQ(graph.atomic_numbers, Buffer<int64_t>(16, 0));
}
