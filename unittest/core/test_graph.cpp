// Unit tests: building the model's graph from LAMMPS-style arrays.

#include "nvalchemi_graph.h"

#include "gtest/gtest.h"

#include <cmath>
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
