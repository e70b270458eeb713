/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: operator libraries (pair_style nvalchemi ... library
   file.so): shared objects that register LibTorch operators a model calls,
   loaded into the process before the model. Plain C++17 (dlopen).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_LIBRARIES_H
#define LMP_NVALCHEMI_MODEL_LIBRARIES_H

#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Loads the shared object `path` into this process (RTLD_NOW | RTLD_GLOBAL) so that the
  // operators it registers resolve when a model is loaded; the same file (by its real path)
  // is loaded once per process however often it is named. Returns false when it was loaded
  // already. Throws std::runtime_error naming the file and what the loader said.
  bool load_op_library(const std::string &path);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
