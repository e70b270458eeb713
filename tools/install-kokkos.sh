#!/usr/bin/env bash
# Installs Kokkos 5.2 (OpenMP backend, C++20) into <build-dir>/kokkos for LAMMPS' KOKKOS package
# (-DEXTERNAL_KOKKOS=on), from Debian unstable's binary packages libkokkos-dev and libkokkos5.2,
# pinned by version and checksum. A workaround for the test machines (Debian 12 has no Kokkos
# >= 5.1): users pass their own Kokkos (Kokkos_DIR) or LAMMPS' bundled copy instead.
#
# The packages are fetched through a private apt configuration under <build-dir>/downloads that
# names only unstable's binary index; the system's apt sources are not changed. Repairs, each
# applied only where it is needed (detected, not assumed):
#  - the CMake targets name libkokkosalgorithms.a and libkokkossimd.a, which are not shipped
#    (empty archives stand in), and hard-code /usr/include/kokkos (made relative);
#  - libkokkoscore was built with GCC 16 against glibc 2.42 and asks Debian 12's runtime for three
#    symbols it lacks (compat_symbols below): a small compatibility library (tools/kokkos/compat.cpp,
#    libnvalchemi_kokkos_compat.so) defines them, patchelf (installed when a repair is needed)
#    clears the symbols' versions and makes the libraries load it (DT_NEEDED, runpath $ORIGIN),
#    and tools/kokkos/drop_version_needs.py removes the three version needs (a weak need would
#    still be reported each time lmp starts). A missing symbol this script does not know stops
#    it, naming the symbol. On Debian 13 and newer this repair does not apply.
# The result is checked by loading the libraries.
# Idempotent: a second run finds its stamp and returns.
#
# usage: tools/install-kokkos.sh <build-dir>    (prints nothing on success but what it did)
set -euo pipefail

build_dir=${1:?usage: install-kokkos.sh <build-dir>}
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
tools_dir=$(cd "$(dirname "$0")" && pwd)

version=5.2.2-2
declare -A sha256=(
  [libkokkos-dev]=4a8f580267c100400c53cad45b5b7962cf0343df0fe7b1ab00ffcbd0f929d1a7
  [libkokkos5.2]=ce9e61d3492985948dd29dfee58315fa629ac6b93fd66c77c6b22ce3ead06d11
)
# the symbols of a newer runtime that compat.cpp defines, by the version that brings them
declare -A compat_symbols=(
  [GLIBC_2.38]=__isoc23_strtol
  [GLIBCXX_3.4.31]=_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE15_M_replace_coldEPcmPKcmm
  [GLIBCXX_3.4.32]=_ZSt21ios_base_library_initv
)
prefix="$build_dir/kokkos"
stamp="$prefix/.installed-$version"
[ -f "$stamp" ] && exit 0

fail() { echo "install-kokkos: ERROR: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
[ "$(dpkg --print-architecture)" = amd64 ] ||
  fail "the pinned Kokkos packages are amd64; on $(dpkg --print-architecture) use a Kokkos >= 5.1 of your own:" \
       "make KOKKOS_DIR=<the directory of its KokkosConfig.cmake>"

# --- download, verified by checksum ------------------------------------------------------------
dl_dir="$build_dir/downloads/kokkos"
apt_dir="$dl_dir/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
debs_ok() {
  for p in "${!sha256[@]}"; do
    echo "${sha256[$p]}  $dl_dir/${p}_${version}_amd64.deb" | sha256sum -c --status 2>/dev/null || return 1
  done
}
if ! debs_ok; then
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main" \
    > "$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
            -o APT::Architecture=amd64 -o Acquire::Languages=none -o APT::Sandbox::User=root)
  echo "install-kokkos: downloading libkokkos-dev and libkokkos5.2 $version from Debian unstable"
  apt-get -qq "${apt_opts[@]}" update
  pinned=()
  for p in "${!sha256[@]}"; do pinned+=("$p=$version"); done
  (cd "$dl_dir" && apt-get -qq "${apt_opts[@]}" download "${pinned[@]}") ||
    fail "Debian unstable no longer serves libkokkos-dev $version: use a Kokkos >= 5.1 of your own:" \
         "make KOKKOS_DIR=<the directory of its KokkosConfig.cmake>"
  debs_ok || fail "the Kokkos packages in $dl_dir fail their sha256 check (pinned: $version)"
fi

# --- unpack into <build-dir>/kokkos --------------------------------------------------------------
rm -rf "$prefix" "$prefix.tmp" && mkdir -p "$prefix.tmp"
for p in "${!sha256[@]}"; do dpkg-deb -x "$dl_dir/${p}_${version}_amd64.deb" "$prefix.tmp"; done
mv "$prefix.tmp/usr" "$prefix" && rm -rf "$prefix.tmp"
libdir="$prefix/lib/x86_64-linux-gnu"
cmake_dir="$libdir/cmake/Kokkos"

# --- CMake package: relative include path, the two unshipped static libraries -----------------
sed -i 's|"/usr/include/kokkos"|"${_IMPORT_PREFIX}/include/kokkos"|' "$cmake_dir/KokkosTargets.cmake"
for a in libkokkosalgorithms.a libkokkossimd.a; do
  [ -f "$libdir/$a" ] || printf '!<arch>\n' > "$libdir/$a"
done

# --- runtime: versions the Kokkos libraries need that the system's libraries do not define ----
system_lib() { ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ && !p { p = $NF } END { print p }'; }
defined_versions() { objdump -p "$1" | awk '/^Version definitions:/ { d = 1; next } /^Version References:/ { d = 0 } d && NF == 4 { print $4 }'; }
missing_versions() {    # "<library needed> <version>" lines
  objdump -p "$1" | awk '/^Version References:/ { r = 1; next } r && /required from/ { f = $3; sub(":", "", f); next } r && NF == 4 { print f, $4 }'
}
repairs=()
for lib in "$libdir"/libkokkos*.so.*.*.*; do
  while read -r needed ver; do
    path=$(system_lib "$needed")
    [ -n "$path" ] || fail "$(basename "$lib") needs $needed, which this system does not have"
    defined_versions "$path" | grep -x "$ver" >/dev/null && continue
    sym=${compat_symbols[$ver]:-}
    unknown=$(objdump -T "$lib" | awk -v v="($ver)" '$0 ~ /\*UND\*/ && $(NF-1) == v { print $NF }' | grep -vx "${sym:-^$}" || true)
    [ -n "$sym" ] && [ -z "$unknown" ] ||
      fail "$(basename "$lib") needs $needed version $ver (symbols: $(objdump -T "$lib" | awk -v v="($ver)" '$(NF-1) == v { print $NF }' | tr '\n' ' ')), which tools/kokkos/compat.cpp does not provide; use a Kokkos built for this system (Kokkos_DIR)"
    repairs+=("$lib $ver $sym")
  done < <(missing_versions "$lib")
done

if [ ${#repairs[@]} -gt 0 ]; then
  command -v patchelf >/dev/null || {
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patchelf
  }
  g++ -O2 -shared -fPIC -o "$libdir/libnvalchemi_kokkos_compat.so" "$tools_dir/kokkos/compat.cpp"
  declare -A patched=()
  for r in "${repairs[@]}"; do
    read -r lib ver sym <<< "$r"
    echo "install-kokkos: $(basename "$lib"): $sym ($ver) from libnvalchemi_kokkos_compat.so"
    patchelf --clear-symbol-version "$sym" "$lib"
    python3 "$tools_dir/kokkos/drop_version_needs.py" "$lib" "$ver" >/dev/null
    patched[$lib]=1
  done
  for lib in "${!patched[@]}"; do
    # two calls: patchelf 0.14 writes the needed name into the runpath when given both at once
    patchelf --set-rpath '$ORIGIN' "$lib"
    patchelf --add-needed libnvalchemi_kokkos_compat.so "$lib"
  done
fi

# --- check: the libraries load --------------------------------------------------------------------
for lib in "$libdir"/libkokkoscore.so "$libdir"/libkokkoscontainers.so; do
  python3 -c "import ctypes, sys; ctypes.CDLL(sys.argv[1])" "$lib" ||
    fail "$lib does not load after the repairs"
done
touch "$stamp"
echo "install-kokkos: Kokkos $version in $prefix (Kokkos_DIR=$cmake_dir)"
