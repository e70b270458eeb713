/* ----------------------------------------------------------------------
   USER-NVALCHEMI: fuzz targets (see fuzz_targets.h).
------------------------------------------------------------------------- */

#include "fuzz_targets.h"

#include "nvalchemi_step_device.h"
#include "nvalchemi_model_archive.h"
#include "nvalchemi_model_metadata.h"
#include "nvalchemi_spec.h"

#include <exception>
#include <sstream>
#include <typeinfo>

namespace LAMMPS_NS {
namespace NVAlchemi {
  namespace fuzz {

    namespace {
      // runs `parse`; an exception other than Allowed breaks the parser's contract
      template <typename Allowed, typename F> bool accepts(const char *what, F &&parse)
      {
        try {
          parse();
          return true;
        } catch (Allowed &) {
          return false;
        } catch (std::exception &e) {
          throw ContractViolation(std::string(what) + " threw " + typeid(e).name() + ": " +
                                  e.what());
        }
      }

      void round_trip(const MLIPSpec &s, const char *what)
      {
        const std::string text = s.to_json();
        MLIPSpec again;
        if (!accepts<std::invalid_argument>(what, [&] {
              again = MLIPSpec::from_json(text);
            }))
          throw ContractViolation(std::string(what) +
                                  ": from_json refused what to_json wrote: " + text);
        if (!(again == s))
          throw ContractViolation(std::string(what) + ": the JSON round trip changed the spec: " +
                                  text + " -> " + again.to_json());
      }
    }    // namespace

    void spec(const std::string &text)
    {
      MLIPSpec s;
      if (!accepts<std::invalid_argument>("MLIPSpec::from_json", [&] {
            s = MLIPSpec::from_json(text);
          }))
        return;
      round_trip(s, "MLIPSpec::from_json");
      MLIPSpec r;
      if (accepts<std::invalid_argument>("MLIPSpec::resolved", [&] {
            r = s.resolved();
          }))
        round_trip(r, "MLIPSpec::resolved");
    }

    void metadata(const std::string &text)
    {
      ModelMetadata m;
      if (accepts<std::invalid_argument>("parse_metadata", [&] {
            m = parse_metadata(text);
          }))
        round_trip(m.spec, "parse_metadata");
    }

    void archive(const std::string &bytes)
    {
      accepts<std::runtime_error>("check_archive", [&] {
        check_archive(bytes);
      });
      // what a file LibTorch cannot load is, read from its bytes: never throws, never reads
      // outside them
      (void) describe_non_model(bytes);
    }

    void words(const std::string &text)
    {
      std::istringstream in(text);
      std::string word;
      while (in >> word) {
        accepts<std::invalid_argument>("preset", [&] {
          preset(word);
        });
        accepts<std::invalid_argument>("parse_halo_mode", [&] {
          parse_halo_mode(word);
        });
        accepts<std::invalid_argument>("parse_force_strategy", [&] {
          parse_force_strategy(word);
        });
        accepts<std::invalid_argument>("parse_output_kind", [&] {
          parse_output_kind(word);
        });
        accepts<std::invalid_argument>("parse_reduce", [&] {
          parse_reduce(word);
        });
        Device d;
        if (accepts<std::invalid_argument>("parse_device",
                                           [&] {
                                             d = parse_device(word);
                                           }) &&
            parse_device(d.str()).str() != d.str())
          throw ContractViolation("parse_device: '" + word + "' gives " + d.str() +
                                  ", which does not read back as itself");
      }
    }

  }    // namespace fuzz
}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
