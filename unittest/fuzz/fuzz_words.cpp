// libFuzzer entry point of the 'words' target (fuzz_targets.h); built by tools/fuzz.sh
#include "fuzz_targets.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  LAMMPS_NS::NVAlchemi::fuzz::words(std::string(reinterpret_cast<const char *>(data), size));
  return 0;
}
