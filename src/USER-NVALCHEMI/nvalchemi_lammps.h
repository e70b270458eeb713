/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: helpers shared by the package's LAMMPS styles.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_LAMMPS_H
#define LMP_NVALCHEMI_LAMMPS_H

#include "nvalchemi_device.h"
#include "nvalchemi_graph.h"

#include <string>
#include <vector>

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

  // Loads each operator library (load_op_library) on every rank, in order, and says so in rank
  // 0's log; a file that cannot be loaded is an error on every rank. Collective.
  void load_op_libraries(LAMMPS *lmp, const std::vector<std::string> &files);

  // The toolkit's adapter status: the operators model `file` calls beyond ATen and the exchange
  // ops (`called`, found in the model) and those its spec lists (`listed`, custom_ops), each
  // registered or not, as a table in rank 0's log; one that is not is an error naming it.
  // The same on every rank (collective error).
  void check_operators(LAMMPS *lmp, const std::string &file, const std::vector<std::string> &called,
                       const std::vector<std::string> &listed);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
