/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the model's input graph. Plain C++17; no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#include "nvalchemi_rank_graph_build.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace LAMMPS_NS {
namespace NVAlchemi {

  double cell_volume(const Cell &cell)
  {
    const double (*h)[3] = cell.lattice;
    return std::fabs(h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) -
                     h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                     h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]));
  }

  void build_rows(const AtomsView &atoms, Graph &graph, std::vector<int> &atom_row)
  {
    if (atom_row.size() < static_cast<std::size_t>(atoms.nall)) atom_row.resize(atoms.nall);
    graph.padding_rows = graph.padding_edges = 0;
    graph.resident = {};

    // rows: owned atoms of handled types, then ghosts
    graph.row_atom.clear();
    const auto add_rows = [&](int first, int last) {
      for (int i = first; i < last; ++i) {
        const bool handled = atoms.atomic_number_of_type[atoms.type[i]] > 0;
        atom_row[i] = handled ? static_cast<int>(graph.row_atom.size()) : -1;
        if (handled) graph.row_atom.push_back(i);
      }
    };
    add_rows(0, atoms.nlocal);
    graph.n_owned = static_cast<int>(graph.row_atom.size());
    add_rows(atoms.nlocal, atoms.nall);
    const std::size_t nrows = graph.row_atom.size();
    graph.atomic_numbers.resize(nrows);
    for (std::size_t r = 0; r < nrows; ++r)
      graph.atomic_numbers[r] = atoms.atomic_number_of_type[atoms.type[graph.row_atom[r]]];
  }

  void candidate_edges(const NeighborView &list, const std::vector<int> &atom_row, int n_owned,
                       Buffer<int64_t> &candidates)
  {
    candidates.clear();
    for (int ii = 0; ii < list.inum + list.gnum; ++ii) {
      const int i = list.ilist[ii];
      const int receiver = atom_row[i];
      if (receiver < 0) continue;
      const int *neighbors = list.firstneigh[i];
      for (int jj = 0, n = list.numneigh[i]; jj < n; ++jj) {
        const int sender = atom_row[neighbors[jj] & list.neighmask];
        if (sender < 0) continue;
        candidates.push_back(sender);
        candidates.push_back(receiver);
        if (list.half && sender < n_owned) {    // the reverse edge, when its receiver is owned
          candidates.push_back(receiver);
          candidates.push_back(sender);
        }
      }
    }
  }

  void build_graph(const AtomsView &atoms, const NeighborView &list, double cutoff, Graph &graph,
                   std::vector<int> &atom_row)
  {
    build_rows(atoms, graph, atom_row);
    const std::size_t nrows = graph.row_atom.size();
    graph.positions.resize(3 * nrows);
    for (std::size_t r = 0; r < nrows; ++r)
      for (int d = 0; d < 3; ++d) graph.positions[3 * r + d] = atoms.x[graph.row_atom[r]][d];

    // edges: every candidate pair is written, and kept (the count advanced) when both atoms
    // are rows and the pair is within the cutoff, without a branch on the distance
    std::size_t candidates = 0;
    for (int ii = 0; ii < list.inum + list.gnum; ++ii) candidates += list.numneigh[list.ilist[ii]];
    if (list.half) candidates *= 2;
    graph.edges.resize(2 * candidates);
    graph.edge_vectors.resize(3 * candidates);
    int64_t *edge = graph.edges.data();
    double *vector = graph.edge_vectors.data();
    const double cutsq = cutoff * cutoff;
    const int n_owned = graph.n_owned;
    std::size_t kept = 0;
    const auto write = [&](int sender, int receiver, double dx, double dy, double dz) {
      edge[2 * kept] = sender;
      edge[2 * kept + 1] = receiver;
      vector[3 * kept] = dx;
      vector[3 * kept + 1] = dy;
      vector[3 * kept + 2] = dz;
    };
    for (int ii = 0; ii < list.inum + list.gnum; ++ii) {
      const int i = list.ilist[ii];
      const int receiver = atom_row[i];
      if (receiver < 0) continue;
      const double xi[3] = {atoms.x[i][0], atoms.x[i][1], atoms.x[i][2]};
      const int *neighbors = list.firstneigh[i];
      for (int jj = 0, n = list.numneigh[i]; jj < n; ++jj) {
        const int j = neighbors[jj] & list.neighmask;
        const double *xj = atoms.x[j];
        const double dx = xi[0] - xj[0], dy = xi[1] - xj[1], dz = xi[2] - xj[2];
        const int sender = atom_row[j];
        const bool keep = (sender >= 0) & (dx * dx + dy * dy + dz * dz < cutsq);
        write(sender, receiver, dx, dy, dz);
        kept += static_cast<std::size_t>(keep);
        if (list.half) {    // the reverse edge, when its receiver is owned too
          write(receiver, sender, -dx, -dy, -dz);
          kept += static_cast<std::size_t>(keep & (sender < n_owned));
        }
      }
    }
    graph.edges.resize(2 * kept);
    graph.edge_vectors.resize(3 * kept);
  }

  void pad_graph(Graph &graph, int64_t row_capacity, int64_t edge_capacity, double cutoff)
  {
    const int64_t rows = graph.num_rows(), edges = graph.num_edges();
    graph.resident = {};
    graph.padding_rows = row_capacity - rows;
    graph.padding_edges = edge_capacity - edges;
    graph.positions.resize(3 * row_capacity);
    graph.atomic_numbers.resize(row_capacity);
    std::fill(graph.positions.begin() + 3 * rows, graph.positions.end(), 0.0);
    std::fill(graph.atomic_numbers.begin() + rows, graph.atomic_numbers.end(), 0);
    graph.edges.resize(2 * edge_capacity);
    graph.edge_vectors.resize(3 * edge_capacity);
    std::fill(graph.edges.begin() + 2 * edges, graph.edges.end(), row_capacity - 1);
    for (int64_t e = edges; e < edge_capacity; ++e) {
      graph.edge_vectors[3 * e] = cutoff;
      graph.edge_vectors[3 * e + 1] = graph.edge_vectors[3 * e + 2] = 0.0;
    }
  }

  void size_resident_buffers(Graph &graph, int64_t real_edges, int64_t rows, int64_t edges)
  {
    graph.padding_rows = rows - graph.num_rows();
    graph.padding_edges = edges - real_edges;
    graph.positions.resize(3 * rows);
    graph.atomic_numbers.resize(rows);
    graph.edges.resize(2 * edges);
    graph.edge_vectors.resize(3 * edges);
  }

  int64_t grown_capacity(int64_t capacity, int64_t need, double growth, bool strict)
  {
    if (strict ? need < capacity : need <= capacity) return capacity;
    constexpr int64_t STRIDE = 16;
    const int64_t grown = static_cast<int64_t>(static_cast<double>(need) * growth) + 1;
    return (grown + STRIDE - 1) / STRIDE * STRIDE;
  }

  void sample_graph(const Graph &graph, int64_t max_edges, Graph &sample)
  {
    const int64_t edges = std::min(max_edges, graph.num_edges());
    std::vector<int64_t> row_of(graph.num_rows(), -1);
    sample = Graph{};
    sample.edges.resize(2 * edges);
    sample.edge_vectors.assign(graph.edge_vectors.begin(), graph.edge_vectors.begin() + 3 * edges);
    for (int64_t e = 0; e < 2 * edges; ++e) {
      const int64_t r = graph.edges[e];
      if (row_of[r] < 0) {
        row_of[r] = sample.num_rows();
        sample.row_atom.push_back(graph.row_atom[r]);
        sample.positions.insert(sample.positions.end(), &graph.positions[3 * r],
                                &graph.positions[3 * r] + 3);
        sample.atomic_numbers.push_back(graph.atomic_numbers[r]);
      }
      sample.edges[e] = row_of[r];
    }
    sample.n_owned = static_cast<int>(sample.num_rows());
  }

  void build_periodic_graph(const std::vector<double> &positions,
                            const std::vector<int64_t> &atomic_numbers, const Cell &cell,
                            double cutoff, Graph &graph)
  {
    const double (*h)[3] = cell.lattice;
    const double cross[3][3] = {
        {h[1][1] * h[2][2] - h[1][2] * h[2][1], h[1][2] * h[2][0] - h[1][0] * h[2][2],
         h[1][0] * h[2][1] - h[1][1] * h[2][0]},
        {h[2][1] * h[0][2] - h[2][2] * h[0][1], h[2][2] * h[0][0] - h[2][0] * h[0][2],
         h[2][0] * h[0][1] - h[2][1] * h[0][0]},
        {h[0][1] * h[1][2] - h[0][2] * h[1][1], h[0][2] * h[1][0] - h[0][0] * h[1][2],
         h[0][0] * h[1][1] - h[0][1] * h[1][0]}};
    // cross[d] / volume is row d of the inverse lattice: s_d = x . cross[d] / volume
    const double volume = h[0][0] * cross[0][0] + h[0][1] * cross[0][1] + h[0][2] * cross[0][2];

    graph.row_atom.clear();
    graph.positions.clear();
    graph.atomic_numbers.clear();
    graph.edges.clear();
    graph.edge_vectors.clear();
    graph.padding_rows = graph.padding_edges = 0;
    graph.resident = {};
    const int natoms = static_cast<int>(atomic_numbers.size());
    for (int i = 0; i < natoms; ++i) {
      if (atomic_numbers[i] <= 0) continue;
      // fold periodic directions into the cell, so that a fixed set of images covers the cutoff
      double s[3];
      for (int d = 0; d < 3; ++d) {
        s[d] = (positions[3 * i] * cross[d][0] + positions[3 * i + 1] * cross[d][1] +
                positions[3 * i + 2] * cross[d][2]) /
            volume;
        if (cell.pbc[d]) s[d] -= std::floor(s[d]);
      }
      graph.row_atom.push_back(i);
      graph.atomic_numbers.push_back(atomic_numbers[i]);
      for (int c = 0; c < 3; ++c)
        graph.positions.push_back(s[0] * h[0][c] + s[1] * h[1][c] + s[2] * h[2][c]);
    }
    const int nrows = static_cast<int>(graph.row_atom.size());
    graph.n_owned = nrows;
    if (nrows == 0) return;

    // images (row, lattice shift) whose fractional coordinates lie within cutoff/height of
    // the cell: every neighbor of a folded atom is one of them
    int reach[3];
    double margin[3];
    for (int d = 0; d < 3; ++d) {
      const double height = std::fabs(volume) /
          std::sqrt(cross[d][0] * cross[d][0] + cross[d][1] * cross[d][1] +
                    cross[d][2] * cross[d][2]);
      margin[d] = cutoff / height;
      reach[d] = cell.pbc[d] ? static_cast<int>(std::ceil(margin[d])) + 1 : 0;
    }
    struct Image {
      int row;
      double shift[3];
      double x[3];
    };
    std::vector<Image> images;
    for (int r = 0; r < nrows; ++r) {
      const double *x = &graph.positions[3 * r];
      double s[3];
      for (int d = 0; d < 3; ++d)
        s[d] = (x[0] * cross[d][0] + x[1] * cross[d][1] + x[2] * cross[d][2]) / volume;
      for (int n0 = -reach[0]; n0 <= reach[0]; ++n0)
        for (int n1 = -reach[1]; n1 <= reach[1]; ++n1)
          for (int n2 = -reach[2]; n2 <= reach[2]; ++n2) {
            const int n[3] = {n0, n1, n2};
            bool inside = true;
            for (int d = 0; d < 3; ++d)
              if (cell.pbc[d] && (s[d] + n[d] < -margin[d] || s[d] + n[d] > 1.0 + margin[d]))
                inside = false;
            if (!inside) continue;
            Image image{r, {}, {}};
            for (int c = 0; c < 3; ++c) {
              image.shift[c] = n0 * h[0][c] + n1 * h[1][c] + n2 * h[2][c];
              image.x[c] = x[c] + image.shift[c];
            }
            images.push_back(image);
          }
    }

    // bins at least one cutoff wide: the neighbors of a point lie in its bin and the 26 around
    double lo[3], hi[3];
    int nbins[3];
    for (int c = 0; c < 3; ++c) {
      lo[c] = hi[c] = images[0].x[c];
      for (const Image &image : images) {
        lo[c] = std::min(lo[c], image.x[c]);
        hi[c] = std::max(hi[c], image.x[c]);
      }
      nbins[c] = std::max(1, std::min(1024, static_cast<int>((hi[c] - lo[c]) / cutoff)));
    }
    const auto bin_of = [&](const double *x, int c) {
      const int b = static_cast<int>((x[c] - lo[c]) / (hi[c] - lo[c] + 1e-300) * nbins[c]);
      return std::max(0, std::min(nbins[c] - 1, b));
    };
    const auto bin_index = [&](int b0, int b1, int b2) {
      return (b0 * nbins[1] + b1) * nbins[2] + b2;
    };
    std::vector<int> bin_start(static_cast<std::size_t>(nbins[0]) * nbins[1] * nbins[2] + 1, 0);
    std::vector<int> binned(images.size());
    for (const Image &image : images)
      ++bin_start[bin_index(bin_of(image.x, 0), bin_of(image.x, 1), bin_of(image.x, 2)) + 1];
    for (std::size_t b = 1; b < bin_start.size(); ++b) bin_start[b] += bin_start[b - 1];
    {
      std::vector<int> fill(bin_start.begin(), bin_start.end() - 1);
      for (std::size_t k = 0; k < images.size(); ++k) {
        const double *x = images[k].x;
        binned[fill[bin_index(bin_of(x, 0), bin_of(x, 1), bin_of(x, 2))]++] = static_cast<int>(k);
      }
    }

    const double cutsq = cutoff * cutoff;
    for (int receiver = 0; receiver < nrows; ++receiver) {
      const double *xi = &graph.positions[3 * receiver];
      int b[3];
      for (int c = 0; c < 3; ++c) b[c] = bin_of(xi, c);
      for (int b0 = std::max(0, b[0] - 1); b0 <= std::min(nbins[0] - 1, b[0] + 1); ++b0)
        for (int b1 = std::max(0, b[1] - 1); b1 <= std::min(nbins[1] - 1, b[1] + 1); ++b1)
          for (int b2 = std::max(0, b[2] - 1); b2 <= std::min(nbins[2] - 1, b[2] + 1); ++b2) {
            const int bin = bin_index(b0, b1, b2);
            for (int k = bin_start[bin]; k < bin_start[bin + 1]; ++k) {
              const Image &image = images[binned[k]];
              const double r[3] = {xi[0] - image.x[0], xi[1] - image.x[1], xi[2] - image.x[2]};
              const double rsq = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
              if (rsq >= cutsq || (image.row == receiver && rsq == 0.0)) continue;
              graph.edges.push_back(image.row);
              graph.edges.push_back(receiver);
              for (double v : r) graph.edge_vectors.push_back(v);
            }
          }
    }
  }

  void rows_to_atoms(const Graph &graph, const double *rows, int64_t nrows, int width,
                     std::size_t natoms, std::vector<double> &atoms)
  {
    atoms.assign(natoms * width, 0.0);
    for (int64_t r = 0; r < nrows; ++r)
      std::copy_n(rows + r * width, width,
                  &atoms[static_cast<std::size_t>(graph.row_atom[r]) * width]);
  }

  namespace {
    // each edge's gradient g: -g onto its receiver's force, +g onto its sender's, where
    // force_of(row) is the force of a row
    template <typename ForceOf>
    void scatter_edge_forces(const Graph &graph, const double *edge_gradients, ForceOf &&force_of)
    {
      const int64_t *edges = graph.edges.data();
      for (int64_t e = 0, n = graph.num_edges(); e < n; ++e) {
        const double *g = edge_gradients + 3 * e;
        double *receiver = force_of(edges[2 * e + 1]), *sender = force_of(edges[2 * e]);
        for (int d = 0; d < 3; ++d) {
          receiver[d] -= g[d];
          sender[d] += g[d];
        }
      }
    }
  }    // namespace

  void edge_forces(const Graph &graph, const double *edge_gradients,
                   std::vector<double> &row_forces)
  {
    row_forces.assign(static_cast<std::size_t>(3 * graph.num_rows()), 0.0);
    if (!edge_gradients) return;
    scatter_edge_forces(graph, edge_gradients, [&](int64_t row) {
      return &row_forces[3 * row];
    });
  }

  void add_edge_forces(const Graph &graph, const double *edge_gradients, double *const *f)
  {
    if (!edge_gradients) return;
    const int *row_atom = graph.row_atom.data();
    scatter_edge_forces(graph, edge_gradients, [&](int64_t row) {
      return f[row_atom[row]];
    });
  }

  void add_edge_virial(const Graph &graph, const double *edge_gradients, double virial[6])
  {
    if (!edge_gradients) return;
    const double *r = graph.edge_vectors.data();
    for (int64_t e = 0; e < graph.num_edges(); ++e)
      for (int v = 0; v < 6; ++v)
        virial[v] -= r[3 * e + VIRIAL_VOIGT[v][0]] * edge_gradients[3 * e + VIRIAL_VOIGT[v][1]];
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
