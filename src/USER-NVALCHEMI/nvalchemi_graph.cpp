/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the model's input graph. Plain C++17; no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#include "nvalchemi_graph.h"

#include <cstddef>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    void add_row(const AtomsView &atoms, int i, Graph &graph, std::vector<int> &atom_row)
    {
      atom_row[i] = static_cast<int>(graph.row_atom.size());
      graph.row_atom.push_back(i);
      for (int d = 0; d < 3; ++d) graph.positions.push_back(atoms.x[i][d]);
      graph.atomic_numbers.push_back(atoms.atomic_number_of_type[atoms.type[i]]);
    }
  }    // namespace

  void build_graph(const AtomsView &atoms, const NeighborView &list, double cutoff, Graph &graph,
                   std::vector<int> &atom_row)
  {
    graph.row_atom.clear();
    graph.positions.clear();
    graph.atomic_numbers.clear();
    graph.edges.clear();
    graph.edge_vectors.clear();
    if (atom_row.size() < static_cast<std::size_t>(atoms.nall)) atom_row.resize(atoms.nall);

    const auto handled = [&](int i) {
      return atoms.atomic_number_of_type[atoms.type[i]] > 0;
    };
    for (int i = 0; i < atoms.nall; ++i) atom_row[i] = -1;
    for (int i = 0; i < atoms.nlocal; ++i)
      if (handled(i)) add_row(atoms, i, graph, atom_row);
    graph.n_owned = static_cast<int>(graph.row_atom.size());
    for (int i = atoms.nlocal; i < atoms.nall; ++i)
      if (handled(i)) add_row(atoms, i, graph, atom_row);

    const double cutsq = cutoff * cutoff;
    for (int ii = 0; ii < list.inum + list.gnum; ++ii) {
      const int i = list.ilist[ii];
      const int receiver = atom_row[i];
      if (receiver < 0) continue;
      const double *xi = atoms.x[i];
      const int *neighbors = list.firstneigh[i];
      for (int jj = 0; jj < list.numneigh[i]; ++jj) {
        const int j = neighbors[jj] & list.neighmask;
        const int sender = atom_row[j];
        if (sender < 0) continue;
        const double *xj = atoms.x[j];
        const double dx = xi[0] - xj[0], dy = xi[1] - xj[1], dz = xi[2] - xj[2];
        if (dx * dx + dy * dy + dz * dz >= cutsq) continue;
        graph.edges.push_back(sender);
        graph.edges.push_back(receiver);
        graph.edge_vectors.push_back(dx);
        graph.edge_vectors.push_back(dy);
        graph.edge_vectors.push_back(dz);
      }
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
