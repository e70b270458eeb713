/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: LAMMPS' data for the package's LAMMPS-free units, shared by its styles:
   the box as a Cell, a file read on rank 0 and broadcast.
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

  // Rank 0 reads `file` (relative paths are also searched in $LAMMPS_POTENTIALS) and every rank
  // receives the same bytes, so a bad file fails identically on all ranks. Collective.
  // Returns false on every rank when rank 0 cannot read the file.
  bool read_and_broadcast(LAMMPS *lmp, const std::string &file, std::string &bytes);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
