/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model's input graph, built from LAMMPS' per-rank arrays.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_GRAPH_H
#define LMP_NVALCHEMI_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // What the graph is built from: this rank's atoms (owned [0, nlocal), then ghosts up to nall)
  // and a full neighbor list of the owned atoms. Plain arrays, so the builder needs no LAMMPS.
  struct AtomsView {
    const double *const *x;              // positions [nall][3]; ghosts already image-shifted
    const int *type;                     // LAMMPS atom types [nall]
    const int *atomic_number_of_type;    // [ntypes+1]; 0 marks a type the model does not handle
    int nlocal;
    int nall;
  };

  struct NeighborView {
    int inum;    // owned atoms with neighbor lists
    int gnum;    // ghost atoms with neighbor lists after them (deep halo), else 0
    const int *ilist;
    const int *numneigh;
    int *const *firstneigh;
    int neighmask;    // LAMMPS' NEIGHMASK: strips special-bond bits off neighbor indices
  };

  // Rows are the atoms the model sees: owned atoms of handled types first (in LAMMPS index
  // order), then ghosts of handled types. Edges run sender -> receiver for every atom of the
  // list (owned receivers; ghost receivers too with a ghost list), and every edge is strictly
  // shorter than the cutoff.
  struct Graph {
    int n_owned = 0;
    std::vector<int> row_atom;              // LAMMPS index of each row
    std::vector<double> positions;          // [rows][3]
    std::vector<int64_t> atomic_numbers;    // [rows]
    std::vector<int64_t> edges;             // [edges][2]: sender row, receiver row
    std::vector<double> edge_vectors;       // [edges][3]: r[receiver] - r[sender]

    int64_t num_rows() const { return static_cast<int64_t>(row_atom.size()); }
    int64_t num_edges() const { return static_cast<int64_t>(edges.size() / 2); }
  };

  // LAMMPS order of the 6 virial components (xx yy zz xy xz yz) in a row-major [3,3] tensor
  static constexpr int VIRIAL_VOIGT[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

  struct Cell {
    double lattice[3][3];    // rows are the lattice vectors a, b, c
    bool pbc[3];
  };

  // |det| of the lattice: the volume of the cell
  double cell_volume(const Cell &cell);

  // Fills `graph` (keeping its capacity, so steady-state steps do not allocate).
  // `atom_row` is scratch of length >= nall: row of each LAMMPS atom, -1 if not a row.
  void build_graph(const AtomsView &atoms, const NeighborView &list, double cutoff, Graph &graph,
                   std::vector<int> &atom_row);

  // The graph of a whole system in one process, without ghost rows: every atom of a handled
  // species (atomic_numbers > 0) is an owned row, in input order, and periodic images enter
  // as edge vectors that carry the lattice shift (the single-process reference of
  // doc/Howto_nvalchemi_contract.rst). Positions may lie outside the cell along periodic
  // directions; any cell size works (several images of one atom may be neighbors).
  void build_periodic_graph(const std::vector<double> &positions,
                            const std::vector<int64_t> &atomic_numbers, const Cell &cell,
                            double cutoff, Graph &graph);

  // The first `nrows` rows of `rows` (`width` values each) placed at their atoms in a per-atom
  // array of `natoms` atoms, row-major; atoms without one of those rows get zeros.
  void rows_to_atoms(const Graph &graph, const double *rows, int64_t nrows, int width,
                     std::size_t natoms, std::vector<double> &atoms);

  // Forces on the rows from the gradient of an energy with respect to the edge vectors: an
  // edge r = x_receiver - x_sender with gradient g pulls -g on its receiver and +g on its
  // sender. `row_forces` gets [rows][3] values, overwritten.
  void edge_forces(const Graph &graph, const std::vector<double> &edge_gradients,
                   std::vector<double> &row_forces);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
