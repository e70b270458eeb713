/* ----------------------------------------------------------------------
   USER-NVALCHEMI: operator libraries, loaded once per process.
------------------------------------------------------------------------- */

#include "nvalchemi_model_libraries.h"

#include <climits>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <set>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  bool load_op_library(const std::string &path)
  {
    static std::mutex guard;
    static std::set<std::string> loaded;    // real paths
    char real[PATH_MAX];
    if (!realpath(path.c_str(), real))
      throw std::runtime_error("cannot find the operator library " + path + ": check the path");
    std::lock_guard<std::mutex> lock(guard);
    if (loaded.count(real)) return false;
    if (!dlopen(real, RTLD_NOW | RTLD_GLOBAL)) {
      const char *why = dlerror();
      throw std::runtime_error("cannot load the operator library " + path + ": " +
                               (why ? why : "unknown loader error") +
                               " (an operator library is a shared object built against the same "
                               "LibTorch as the package)");
    }
    loaded.insert(real);
    return true;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
