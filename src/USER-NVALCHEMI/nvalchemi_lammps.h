/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: helpers shared by the package's LAMMPS styles.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_LAMMPS_H
#define LMP_NVALCHEMI_LAMMPS_H

#include "nvalchemi_device.h"
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

  // The device this rank runs pair_style nvalchemi's model on (choose_device, with the rank's
  // place among the ranks of its node), said in rank 0's log; an impossible request is an
  // error on every rank. Collective.
  Device rank_device(LAMMPS *lmp, const Device *requested);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
