#!/usr/bin/env bash
# The parsers under libFuzzer (`make fuzz`): the spec JSON, the model metadata, the model archive
# check and the pair_style keyword values' parsers (unittest/fuzz/fuzz_targets.h), built with
# clang's -fsanitize=fuzzer,address,undefined in <build>/fuzz and run for <seconds> each from the
# seed corpus of unittest/fuzz/corpus, the unit tests' spec fixtures and the committed models
# (their files, metadata and specs). A
# crash, sanitizer report or broken contract leaves its input in <build>/fuzz/crashes/ and fails
# the run: copy it into unittest/fuzz/corpus/<target>/, whose every file the unit tests replay.
# Installs clang and its fuzzer runtime from Debian (12 or 13) when they are missing.
#
# usage: tools/fuzz.sh <build-dir> [seconds per target, default 60]
set -euo pipefail

build_dir=$(cd "${1:?usage: fuzz.sh <build-dir> [seconds]}" && pwd)
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$build_dir/fuzz
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# clang and libclang_rt.fuzzer (Debian's metapackages name the current version on 12 and 13)
if ! command -v clang++ > /dev/null ||
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
     clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2> /dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang libclang-rt-dev
fi

mkdir -p "$out/crashes"
src=$root/src/USER-NVALCHEMI
sources=("$root/unittest/fuzz/fuzz_targets.cpp" "$src/nvalchemi_spec.cpp"
         "$src/nvalchemi_model_metadata.cpp" "$src/nvalchemi_model_archive.cpp"
         "$src/nvalchemi_step_device.cpp")
flags=(-std=c++17 -g -O1 -fno-sanitize-recover=undefined -I"$src" -I"$build_dir/lammps-src/src"
       -I"$root/unittest/fuzz")
objects=()
mkdir -p "$out/obj"
for source in "${sources[@]}"; do
  objects+=("$out/obj/$(basename "$source" .cpp).o")
  clang++ "${flags[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$source" -o "${objects[-1]}"
done
status=0
for target in spec metadata archive words; do
  binary=$out/fuzz_$target
  clang++ "${flags[@]}" -fsanitize=fuzzer,address,undefined "$root/unittest/fuzz/fuzz_$target.cpp" \
    "${objects[@]}" -lz -o "$binary"
  corpus=$out/corpus/$target
  mkdir -p "$corpus"
  cp "$root/unittest/fuzz/corpus/$target/"* "$corpus/"
  options=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/crashes/$target-")
  case $target in
    archive) cp "$root"/potentials/*.pt "$corpus/"; options+=(-max_len=65536) ;;
    spec|metadata)
      # more seeds: the spec fixtures of the unit tests, the committed models' metadata and specs
      [ $target = spec ] && cp "$root"/unittest/core/toolkit_specs/*.json "$corpus/"
      "$build_dir/venv/bin/python" - "$target" "$corpus" "$root"/potentials/*.pt <<'PY'
import json, os, sys, zipfile
target, corpus = sys.argv[1], sys.argv[2]
for path in sys.argv[3:]:
    for name in zipfile.ZipFile(path).namelist():
        if name.endswith("extra/nvalchemi_metadata.json"):
            text = zipfile.ZipFile(path).read(name).decode()
            if target == "spec":
                text = json.dumps(json.loads(text).get("spec", {}))
            with open(os.path.join(corpus, os.path.basename(path) + ".json"), "w") as f:
                f.write(text)
PY
      options+=(-max_len=4096 -dict="$root/unittest/fuzz/json.dict") ;;
    words) options+=(-max_len=256) ;;
  esac
  echo "== fuzz_$target for $seconds s"
  if ! "$binary" "${options[@]}" "$corpus" > "$out/$target.log" 2>&1; then
    status=1
    grep -E -A20 "ERROR|ContractViolation|runtime error|deadly" "$out/$target.log" | head -40
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|^Done" "$out/$target.log" | tr '\n' ' '
  echo " corpus: $(ls "$corpus" | wc -l) inputs"
done
ls "$out/crashes" | sed 's/^/finding: /'
exit $status
