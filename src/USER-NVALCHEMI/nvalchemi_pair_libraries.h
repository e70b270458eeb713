/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the LibTorch of the process checked against the build's, the operator
   libraries of pair_style nvalchemi (its library keyword), loaded on every rank before the model
   (nvalchemi_model_libraries), and the check that every operator a model names is registered.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_PAIR_LIBRARIES_H
#define LMP_NVALCHEMI_PAIR_LIBRARIES_H

#include <string>
#include <vector>

namespace LAMMPS_NS {
class LAMMPS;
namespace NVAlchemi {

  // Stops the run, on every rank, when the LibTorch this process has loaded is neither the file
  // the package was built against nor an installation of the same version (libtorch_mismatch);
  // says in rank 0's log when it is another installation of that version. Before anything of
  // LibTorch is used. Collective.
  void check_libtorch(LAMMPS *lmp);

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
