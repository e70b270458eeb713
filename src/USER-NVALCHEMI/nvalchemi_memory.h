/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what a process may still allocate on the host, and its peak resident memory,
   read from Linux (/proc, the control group, the address-space limit). The pair style checks a
   run's estimated need against it before the model allocates, so that a run too large stops
   with a LAMMPS error instead of the kernel's kill. No LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MEMORY_H
#define LMP_NVALCHEMI_MEMORY_H

#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Bytes left under each limit that applies; negative where a limit is unknown or unset.
  struct HostMemory {
    double node_available = -1.0;      // MemAvailable of /proc/meminfo, shared by the node's ranks
    double cgroup_available = -1.0;    // the control group's memory.max - memory.current, shared
    double address_space_left = -1.0;    // RLIMIT_AS - VmSize: this process alone
  };

  HostMemory host_memory();

  // The tightest of the shared limits (node, control group), negative if neither is known; and
  // its name for messages.
  double shared_available(const HostMemory &memory, std::string *which = nullptr);

  // This process' resident memory (VmRSS) and its peak since the last reset (VmHWM), in bytes;
  // negative where /proc cannot be read.
  double resident_bytes();
  double peak_resident_bytes();
  // Resets the peak to the resident memory now (/proc/self/clear_refs); false where the kernel
  // refuses.
  bool reset_peak_resident();

  // "1.25 GiB", "312 MiB"
  std::string format_bytes(double bytes);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
