/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: LAMMPS' data for the package's LAMMPS-free units, shared by its styles:
   the box as a Cell, a file read on rank 0 and broadcast, a problem found on some ranks.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_LAMMPS_H
#define LMP_NVALCHEMI_LAMMPS_H

#include "nvalchemi_graph.h"

#include <string>

namespace LAMMPS_NS {
class Domain;
class LAMMPS;
namespace NVAlchemi {

  // the simulation box as lattice vectors (rows) and periodic flags
  Cell box_cell(const Domain *domain);

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
