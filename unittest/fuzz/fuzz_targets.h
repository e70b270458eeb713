/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the parsers of user text and files under fuzzing (tools/fuzz.sh, libFuzzer)
   and the replay of their corpora in the unit tests. Each target feeds one input to a parser
   and checks its contract: it either accepts the input or throws the exception type its header
   documents; an accepted spec survives a JSON round trip. A broken contract throws
   ContractViolation, which the fuzzer reports as a crash.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_FUZZ_TARGETS_H
#define LMP_NVALCHEMI_FUZZ_TARGETS_H

#include <stdexcept>
#include <string>

namespace LAMMPS_NS {
namespace NVAlchemi {
  namespace fuzz {

    class ContractViolation : public std::logic_error {
     public:
      using std::logic_error::logic_error;
    };

    // MLIPSpec::from_json (the metadata's spec, the toolkit's layout), then resolved()
    void spec(const std::string &text);
    // parse_metadata: the archive's nvalchemi_metadata.json
    void metadata(const std::string &text);
    // check_archive: a model or hook file's bytes
    void archive(const std::string &bytes);
    // every whitespace-separated word through the pair_style keyword values' parsers: preset,
    // parse_halo_mode, parse_force_strategy, parse_output_kind, parse_reduce, parse_device
    void words(const std::string &text);

  }    // namespace fuzz
}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
