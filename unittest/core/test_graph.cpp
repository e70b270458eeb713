// Unit tests: building the model's graph from LAMMPS-style arrays.

#include "nvalchemi_graph.h"

#include "gtest/gtest.h"

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
};
}    // namespace

TEST(Graph, OwnedRowsFirstNullTypesOutEdgesWithinCutoff)
{
  Fixture fx;
  AtomsView atoms{fx.x, fx.type, fx.z_of_type, 3, 5};
  NeighborView list{3, 0, fx.ilist, fx.numneigh, fx.firstneigh, 0x1FFFFFFF};
  Graph graph;
  std::vector<int> atom_row;
  build_graph(atoms, list, 1.5, graph, atom_row);

  // rows: owned atoms 0, 2 then ghosts 3, 4; atom 1 has a NULL type
  EXPECT_EQ(graph.n_owned, 2);
  EXPECT_EQ(graph.row_atom, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(graph.atomic_numbers, (std::vector<int64_t>{18, 18, 18, 18}));
  EXPECT_EQ(graph.positions[3 * 2], 3.0);

  // edges (sender row, receiver row): 4 -> 0 (distance 1); 0 -> 2 is 2.0 >= cutoff; 3 -> 2
  EXPECT_EQ(graph.edges, (std::vector<int64_t>{3, 0, 2, 1}));
  EXPECT_EQ(graph.edge_vectors, (std::vector<double>{1, 0, 0, -1, 0, 0}));
  EXPECT_EQ(graph.num_edges(), 2);
}

TEST(Graph, RebuildReusesBuffersAndEmptyRankWorks)
{
  Fixture fx;
  AtomsView atoms{fx.x, fx.type, fx.z_of_type, 3, 5};
  NeighborView list{3, 0, fx.ilist, fx.numneigh, fx.firstneigh, 0x1FFFFFFF};
  Graph graph;
  std::vector<int> atom_row;
  build_graph(atoms, list, 2.5, graph, atom_row);
  EXPECT_EQ(graph.num_edges(), 4);
  const double *storage = graph.edge_vectors.data();
  build_graph(atoms, list, 2.5, graph, atom_row);
  EXPECT_EQ(graph.num_edges(), 4);
  EXPECT_EQ(graph.edge_vectors.data(), storage);

  AtomsView empty{fx.x, fx.type, fx.z_of_type, 0, 0};
  NeighborView none{0, 0, fx.ilist, fx.numneigh, fx.firstneigh, 0x1FFFFFFF};
  build_graph(empty, none, 2.5, graph, atom_row);
  EXPECT_EQ(graph.num_rows(), 0);
  EXPECT_EQ(graph.num_edges(), 0);
}
