/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the model's input graph, built from LAMMPS' per-rank arrays.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RANK_GRAPH_BUILD_H
#define LMP_NVALCHEMI_RANK_GRAPH_BUILD_H

#include "nvalchemi_step_device.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
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
    // a half list without newton (each owned pair once, each owned-ghost pair in the owned
    // atom's list): a pair of owned atoms gives both edges; owned lists only
    bool half = false;
  };

  // An allocator whose value-construction leaves the element uninitialized, so that resize()
  // on a buffer the builders then overwrite costs no fill.
  template <typename T> struct UninitializedAllocator : std::allocator<T> {
    template <typename U> struct rebind {
      using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <typename U> UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
    template <typename U> void construct(U *p) noexcept { ::new (static_cast<void *>(p)) U; }
    template <typename U, typename... Args> void construct(U *p, Args &&...args)
    { ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...); }
  };
  template <typename T> using Buffer = std::vector<T, UninitializedAllocator<T>>;

  // Rows are the atoms the model sees: owned atoms of handled types first (in LAMMPS index
  // order), then ghosts of handled types. Edges run sender -> receiver for every atom of the
  // list (owned receivers; ghost receivers too with a ghost list), and every edge is strictly
  // shorter than the cutoff. Edges come in list order, which is not sorted by receiver.
  //
  // With static shapes (pad_graph), the arrays the model gets hold padding after the real rows
  // and edges: dead rows (atomic number 0, at the origin) and dead edges (self-loops of the
  // last dead row, one cutoff long), which no real row or edge references.
  //
  // A builder may keep the arrays in memory of its own (pair_style nvalchemi/kk: views of its
  // execution space, a GPU's memory on a GPU): `resident` then says where, and the model reads
  // them there. The buffers keep their sizes (num_rows(), num_edges() read them) but hold the
  // values only once the builder has copied them to the host; pad_graph works on the buffers
  // and ends residence.
  struct Graph {
    struct Resident {
      bool set = false;
      Device device;    // where the pointers point
      const double *positions = nullptr, *edge_vectors = nullptr;
      const int64_t *atomic_numbers = nullptr, *edges = nullptr;
    };

    int n_owned = 0;
    std::vector<int> row_atom;         // LAMMPS index of each real row
    Buffer<double> positions;          // [tensor rows][3]
    Buffer<int64_t> atomic_numbers;    // [tensor rows]
    Buffer<int64_t> edges;             // [tensor edges][2]: sender row, receiver row
    Buffer<double> edge_vectors;       // [tensor edges][3]: r[receiver] - r[sender]
    int64_t padding_rows = 0, padding_edges = 0;
    Resident resident;    // unset: the model reads the buffers

    // real rows (atoms) and edges
    int64_t num_rows() const { return static_cast<int64_t>(row_atom.size()); }
    int64_t num_edges() const { return static_cast<int64_t>(edges.size() / 2) - padding_edges; }
    // rows and edges of the model's input tensors, padding included
    int64_t tensor_rows() const { return num_rows() + padding_rows; }
    int64_t tensor_edges() const { return static_cast<int64_t>(edges.size() / 2); }
    // bytes its buffers hold
    double memory_bytes() const
    {
      return static_cast<double>(row_atom.capacity()) * sizeof(int) +
          static_cast<double>(positions.capacity() + edge_vectors.capacity()) * sizeof(double) +
          static_cast<double>(atomic_numbers.capacity() + edges.capacity()) * sizeof(int64_t);
    }
  };

  // LAMMPS order of the 6 virial components (xx yy zz xy xz yz) in a row-major [3,3] tensor
  static constexpr int VIRIAL_VOIGT[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

  struct Cell {
    double lattice[3][3];    // rows are the lattice vectors a, b, c
    bool pbc[3];
  };

  // |det| of the lattice: the volume of the cell
  double cell_volume(const Cell &cell);

  // The rows of build_graph: graph.row_atom, n_owned and atomic_numbers, and `atom_row` (resized
  // to >= nall: the row of each LAMMPS atom, -1 if not a row); no positions, no edges.
  void build_rows(const AtomsView &atoms, Graph &graph, std::vector<int> &atom_row);

  // The edges build_graph would keep if every pair of the list were within the cutoff, in its
  // order: (sender row, receiver row) pairs, [candidates][2], for rows `atom_row` of build_rows.
  void candidate_edges(const NeighborView &list, const std::vector<int> &atom_row, int n_owned,
                       Buffer<int64_t> &candidates);

  // Fills `graph` (keeping its capacity, so steady-state steps do not allocate).
  // `atom_row` is scratch of length >= nall: row of each LAMMPS atom, -1 if not a row.
  void build_graph(const AtomsView &atoms, const NeighborView &list, double cutoff, Graph &graph,
                   std::vector<int> &atom_row);

  // A resident graph's host buffers sized as the arrays its builder keeps, `rows` rows and
  // `edges` edges of which `real_edges` are real (the real rows: row_atom), without their values
  // (the builder copies them when host code asks); padding_rows and padding_edges the rest.
  void size_resident_buffers(Graph &graph, int64_t real_edges, int64_t rows, int64_t edges);

  // Static shapes: pads `graph` to `row_capacity` rows (> num_rows(): the last one is the dead
  // row that dead edges loop on) and `edge_capacity` edges (>= num_edges()).
  void pad_graph(Graph &graph, int64_t row_capacity, int64_t edge_capacity, double cutoff);

  // The toolkit's grow-only capacity (its resolve_cap): `capacity` if `need` fits (strictly
  // below it when `strict`), else need * growth, plus one, rounded up to a multiple of 16.
  int64_t grown_capacity(int64_t capacity, int64_t need, double growth, bool strict);

  // The first `max_edges` real edges of `graph` with the rows they join, renumbered in order of
  // first appearance, as a graph whose rows are all owned: a small input of the same kind, on
  // which to measure what a model allocates per row and edge.
  void sample_graph(const Graph &graph, int64_t max_edges, Graph &sample);

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
  // sender. `row_forces` gets [rows][3] values, overwritten. `edge_gradients` holds
  // [edges][3] values, or none for an energy that does not depend on the edges.
  void edge_forces(const Graph &graph, const double *edge_gradients,
                   std::vector<double> &row_forces);

  // The same forces added straight into LAMMPS' per-atom forces f[atom][3] (ghost atoms too).
  void add_edge_forces(const Graph &graph, const double *edge_gradients, double *const *f);

  // The virial of those forces, -r (x) g summed over the real edges, added to `virial` (LAMMPS
  // order xx yy zz xy xz yz).
  void add_edge_virial(const Graph &graph, const double *edge_gradients, double virial[6]);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
