/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: LAMMPS' data for the package's LAMMPS-free units, shared by its styles:
   the box as a Cell, the atoms and a neighbor list as the graph builders read them, a file read
   on rank 0 and broadcast, a problem found on some ranks.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_LAMMPS_DATA_H
#define LMP_NVALCHEMI_LAMMPS_DATA_H

#include "nvalchemi_rank_graph_build.h"

#include <string>

namespace LAMMPS_NS {
class Atom;
class Domain;
class LAMMPS;
class NeighList;
namespace NVAlchemi {

  // the simulation box as lattice vectors (rows) and periodic flags
  Cell box_cell(const Domain *domain);

  // this rank's atoms, owned then ghosts (`atomic_number_of_type`: [ntypes+1], 0 for a type the
  // model skips)
  AtomsView atoms_view(const Atom *atom, const int *atomic_number_of_type);

  // `list`, with the ghost atoms' lists when `ghost_lists` (a full list); else a half list
  // without newton
  NeighborView neighbor_view(const NeighList *list, bool ghost_lists);

  // Rank 0 reads `file` (or its base name in $LAMMPS_POTENTIALS: utils::get_potential_file_path)
  // and every rank receives the same bytes, so a bad file fails identically on all ranks.
  // Collective.
  // Returns false on every rank when rank 0 cannot read the file.
  bool read_and_broadcast(LAMMPS *lmp, const std::string &file, std::string &bytes);

  // Stops the run when `problem` (empty: none), said after "pair_style nvalchemi", is not empty
  // on some rank: one message when every rank has it, else each failing rank's own. Collective.
  void stop_on_any_rank(LAMMPS *lmp, const std::string &problem);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
