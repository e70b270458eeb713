// The three symbols that Debian unstable's libkokkoscore (built with GCC 16 against glibc 2.42)
// asks of a newer C and C++ runtime than Debian 12 has. Loaded through DT_NEEDED, which
// tools/install-kokkos.sh adds to the Kokkos libraries after clearing the symbols' versions.
// Not needed, and not built, where the system's runtime provides them (Debian 13 and newer).
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ios>
#include <string>

// glibc 2.38's C23 strtol: the same conversion, plus a 0b prefix for base 0 or 2, which the
// Kokkos runtime does not read (it parses environment variables and arguments in base 10)
extern "C" long nvalchemi_isoc23_strtol(const char *text, char **end, int base) __asm__("__isoc23_strtol");
extern "C" long nvalchemi_isoc23_strtol(const char *text, char **end, int base)
{
  return std::strtol(text, end, base);
}

// GCC 13's out-of-line helper of std::string::replace for a source that lies inside the string
// (libstdc++ basic_string.tcc, _M_replace_cold): the string already has room for the result; move
// the tail and the source so that [p, p + len2) holds the new characters and the tail follows.
extern "C" void nvalchemi_replace_cold(std::string *self, char *p, std::size_t len1, const char *s,
                                       std::size_t len2, std::size_t how_much)
    __asm__("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE15_M_replace_coldEPcmPKcmm");
extern "C" void nvalchemi_replace_cold(std::string *, char *p, std::size_t len1, const char *s,
                                       std::size_t len2, std::size_t how_much)
{
  if (len2 && len2 <= len1) std::memmove(p, s, len2);
  if (how_much && len1 != len2) std::memmove(p + len2, p + len1, how_much);
  if (len2 > len1) {
    if (s + len2 <= p + len1) {    // source wholly before the moved tail
      std::memmove(p, s, len2);
    } else if (s >= p + len1) {    // source wholly inside the moved tail: it moved by len2 - len1
      std::memcpy(p, s + (len2 - len1), len2);
    } else {    // source straddles the old end of the replaced range
      const std::size_t left = (p + len1) - s;
      std::memmove(p, s, left);
      std::memcpy(p + left, p + len2, len2 - left);
    }
  }
}

// GCC 13's <iostream> references this so that the library, not each translation unit,
// constructs the standard streams; with GCC 12's runtime the streams need an ios_base::Init.
namespace {
const std::ios_base::Init standard_streams;
}
extern "C" void nvalchemi_ios_base_library_init() __asm__("_ZSt21ios_base_library_initv");
extern "C" void nvalchemi_ios_base_library_init() {}
