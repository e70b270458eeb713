/* ----------------------------------------------------------------------
   USER-NVALCHEMI: host memory limits and the process' peak resident memory.
------------------------------------------------------------------------- */

#include "nvalchemi_memory.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/resource.h>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    // the value in kB of `key` ("VmRSS:", "MemAvailable:") in a /proc file, in bytes, or -1
    double proc_kilobytes(const char *file, const char *key)
    {
      std::ifstream in(file);
      std::string line;
      const size_t n = std::strlen(key);
      while (std::getline(in, line))
        if (line.compare(0, n, key) == 0) return 1024.0 * std::stod(line.substr(n));
      return -1.0;
    }

    // a number in a cgroup file, or -1 ("max", missing)
    double cgroup_number(const std::string &path)
    {
      std::ifstream in(path);
      std::string word;
      if (!(in >> word) || word == "max") return -1.0;
      try {
        return std::stod(word);
      } catch (...) {
        return -1.0;
      }
    }

    // the directory of this process' cgroup v2 (from "0::/path" in /proc/self/cgroup), or ""
    std::string cgroup_directory()
    {
      std::ifstream in("/proc/self/cgroup");
      std::string line;
      while (std::getline(in, line))
        if (line.compare(0, 3, "0::") == 0) return "/sys/fs/cgroup" + line.substr(3);
      return "";
    }
  }    // namespace

  HostMemory host_memory()
  {
    HostMemory m;
    m.node_available = proc_kilobytes("/proc/meminfo", "MemAvailable:");
    const std::string dir = cgroup_directory();
    if (!dir.empty()) {
      const double limit = cgroup_number(dir + "/memory.max");
      const double used = cgroup_number(dir + "/memory.current");
      if (limit > 0.0 && used >= 0.0) m.cgroup_available = limit - used;
    }
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
      const double size = proc_kilobytes("/proc/self/status", "VmSize:");
      if (size >= 0.0) m.address_space_left = static_cast<double>(as.rlim_cur) - size;
    }
    return m;
  }

  double shared_available(const HostMemory &memory, std::string *which)
  {
    double best = memory.node_available;
    if (which) *which = "the node's available memory (MemAvailable)";
    if (memory.cgroup_available >= 0.0 && (best < 0.0 || memory.cgroup_available < best)) {
      best = memory.cgroup_available;
      if (which) *which = "the control group's memory.max";
    }
    return best;
  }

  double resident_bytes()
  { return proc_kilobytes("/proc/self/status", "VmRSS:"); }

  double peak_resident_bytes()
  { return proc_kilobytes("/proc/self/status", "VmHWM:"); }

  bool reset_peak_resident()
  {
    // "5" resets the peak resident set size (Linux >= 4.0, proc(5))
    std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool written = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && written;
  }

  std::string format_bytes(double bytes)
  {
    char text[32];
    if (bytes >= 1024.0 * 1024.0 * 1024.0)
      std::snprintf(text, sizeof(text), "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    else
      std::snprintf(text, sizeof(text), "%.0f MiB", bytes / (1024.0 * 1024.0));
    return text;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
