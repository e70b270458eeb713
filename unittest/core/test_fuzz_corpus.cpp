// Unit tests: every input of the fuzzers' corpora (unittest/fuzz/corpus/<target>/: the seeds and
// every input a fuzzer found to break a parser) through the fuzz targets: each parser keeps its
// contract (accepts, or throws the exception type its header documents; accepted specs survive
// a JSON round trip). The spec target also gets the spec fixtures, the archive target the
// committed models.

#include "fuzz_targets.h"

#include "gtest/gtest.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

using namespace LAMMPS_NS::NVAlchemi;
namespace fs = std::filesystem;

namespace {
std::string bytes_of(const fs::path &path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int replay(const fs::path &folder, const std::function<void(const std::string &)> &target,
           const std::string &extension = "")
{
  int inputs = 0;
  for (const auto &entry : fs::directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    if (!extension.empty() && entry.path().extension() != extension) continue;
    EXPECT_NO_THROW(target(bytes_of(entry.path()))) << entry.path();
    ++inputs;
  }
  return inputs;
}
}    // namespace

TEST(FuzzCorpus, EveryInputKeepsItsParsersContract)
{
  const fs::path corpus = NVALCHEMI_FUZZ_CORPUS;
  EXPECT_GT(replay(corpus / "spec", fuzz::spec) +
                replay(NVALCHEMI_TOOLKIT_SPECS, fuzz::spec, ".json"),
            10);
  EXPECT_GT(replay(corpus / "metadata", fuzz::metadata), 0);
  EXPECT_GT(replay(corpus / "words", fuzz::words), 0);
  EXPECT_GT(replay(corpus / "archive", fuzz::archive), 0);
  EXPECT_GT(replay(NVALCHEMI_COMMITTED_MODELS, fuzz::archive, ".pt"), 3);
}

TEST(FuzzCorpus, BrokenContractsAreReported)
{
  // what the fuzzer counts as a finding: a round trip that fails, an exception of another type
  EXPECT_NO_THROW(fuzz::spec("{\"preset\": \"SPEC_LJ_HALO\"}"));
  EXPECT_NO_THROW(fuzz::spec("not json"));
  EXPECT_NO_THROW(fuzz::words("cuda:0 layerwise bogus"));
  EXPECT_NO_THROW(fuzz::archive("PK\x03\x04 cut short"));
}
