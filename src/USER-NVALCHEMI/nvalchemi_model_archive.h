/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the integrity of a model archive before it is deserialized. TorchScript and
   AOTInductor files are zip archives that PyTorch reads without checking their entries' CRC-32:
   a damaged file can load and give plausible wrong numbers. Plain C++17 and zlib.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_ARCHIVE_H
#define LMP_NVALCHEMI_MODEL_ARCHIVE_H

#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Checks a zip archive (bytes starting "PK"; anything else is left to the loader): its central
  // directory is there, every entry lies inside the file, and every entry, stored or deflated,
  // has the CRC-32 the directory records. Throws std::runtime_error naming the first entry that
  // fails, or saying the archive is truncated.
  void check_archive(const std::string &bytes);

  // What a file that PyTorch could not load as a model is, said for the user with what to do
  // ("" where nothing more can be said than the loader's message): a checkpoint written by
  // torch.save (a framework's training output, named where its pickle names the framework), a
  // legacy pickle, a zip archive of neither format, a file that is no archive.
  std::string describe_non_model(const std::string &bytes);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
