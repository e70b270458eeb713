// Unit tests: the TorchScript and AOTInductor runners on the Lennard-Jones reference model,
// against the analytic energy and edge gradients and against each other; the process's LibTorch
// against the build's.

#include "nvalchemi_dd_reference.h"
#include "nvalchemi_model_archive.h"
#include "nvalchemi_model_metadata.h"
#include "nvalchemi_runner.h"

#include <torch/script.h>

#include "gtest/gtest.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
std::string read_file(const char *path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

double lj(double r)
{ return 4.0 * (std::pow(r, -12) - std::pow(r, -6)); }
double lj_derivative(double r)
{ return 4.0 * (-12.0 * std::pow(r, -13) + 6.0 * std::pow(r, -7)); }

// owned rows 0, 1 and ghost row 2; edges to the owned receivers only
Graph three_atoms()
{
  Graph g;
  g.n_owned = 2;
  g.row_atom = {0, 1, 2};
  g.positions = {0.0, 0.0, 0.0, 1.1, 0.1, 0.0, 0.3, 1.2, -0.2};
  g.atomic_numbers = {18, 18, 18};
  const int pairs[4][2] = {{1, 0}, {2, 0}, {0, 1}, {2, 1}};
  for (const auto &p : pairs) {
    g.edges.push_back(p[0]);
    g.edges.push_back(p[1]);
    for (int d = 0; d < 3; ++d)
      g.edge_vectors.push_back(g.positions[3 * p[1] + d] - g.positions[3 * p[0] + d]);
  }
  return g;
}

const Cell CUBE = {{{10, 0, 0}, {0, 10, 0}, {0, 0, 10}}, {true, true, true}};
const EnergyShare NODE_ENERGIES{"atomic_energies", true, 1.0, true};
}    // namespace

TEST(TorchScriptRunner, LoadsMetadataFromTheArchive)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  const ModelMetadata meta = parse_metadata(model.metadata_text());
  EXPECT_EQ(meta.units, "lj");
  EXPECT_DOUBLE_EQ(meta.cutoff, 2.5);
  EXPECT_EQ(meta.species, std::vector<int>{18});
  EXPECT_EQ(meta.spec, preset("SPEC_LJ_HALO"));
}

TEST(TorchScriptRunner, RejectsBytesThatAreNotAnArchive)
{ EXPECT_THROW(load_model("not a model"), std::runtime_error); }

TEST(Archive, DamagedOrTruncatedModelFilesAreRefusedBeforeLoading)
{
  for (const char *path : {NVALCHEMI_LJ_MODEL, NVALCHEMI_LJ_AOTI_MODEL}) {
    const std::string bytes = read_file(path);
    EXPECT_NO_THROW(check_archive(bytes)) << path;
    // one byte changed in the middle of the file (inside an entry's data): PyTorch may load it
    std::string damaged = bytes;
    damaged[damaged.size() / 2] ^= 0x20;
    try {
      check_archive(damaged);
      FAIL() << path << ": a damaged entry was accepted";
    } catch (std::runtime_error &e) {
      EXPECT_NE(std::string(e.what()).find("fails its CRC-32 check: the file is damaged"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(load_model(damaged), std::runtime_error) << path;
    for (const size_t keep : {bytes.size() / 2, bytes.size() - 10}) {
      try {
        check_archive(bytes.substr(0, keep));
        FAIL() << path << ": a file truncated to " << keep << " bytes was accepted";
      } catch (std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("the zip archive is truncated or damaged"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_NO_THROW(check_archive("not an archive: left to the loader"));
}

TEST(Archive, FilesThatAreNoModelAreNamed)
{
  // a zip archive of one stored entry <name>/data.pkl, whose pickle starts with `pickle`, then
  // `more` (other entries' names, as bytes a framework's pickle holds)
  const auto zip = [](const std::string &name, const std::string &pickle, const std::string &more) {
    std::string header = "PK\x03\x04" + std::string(22, '\0');
    header += static_cast<char>(name.size());
    header += std::string(3, '\0');
    return header + name + pickle + more;
  };
  const auto said = [](const std::string &bytes) {
    return describe_non_model(bytes);
  };
  const std::string proto = "\x80\x02";
  const std::string mace = zip("tiny/data.pkl", proto + "cmace.modules.models\nScaleShiftMACE\n",
                               " tiny/code/__torch__/e3nn.py tiny/constants.pkl");
  EXPECT_NE(said(mace).find("checkpoint of MACE"), std::string::npos);
  EXPECT_NE(said(mace).find("nvalchemi-mace-export"), std::string::npos);
  EXPECT_NE(said(zip("checkpoint_best/data.pkl", proto + "}q\x00", "num_convolution_layer"))
                .find("nvalchemi-sevenn-export"),
            std::string::npos);
  EXPECT_NE(
      said(zip("best/data.pkl", proto + "}q\x00", "nequip.model")).find("nvalchemi-nequip-export"),
      std::string::npos);
  EXPECT_NE(said(zip("x/data.pkl", proto + "ccollections\nOrderedDict\n", ""))
                .find("written by torch.save"),
            std::string::npos);
  EXPECT_NE(said("\x80\x02}q\x00").find("Python pickle"), std::string::npos);
  EXPECT_NE(said("# a LAMMPS input, not a model\n").find("not a model file"), std::string::npos);
  EXPECT_NE(
      said(zip("readme.txt", "text", "")).find("neither a TorchScript file nor an AOTInductor"),
      std::string::npos);
  // the formats LibTorch reads: nothing to add to its own message
  EXPECT_EQ(said(zip("m/data.pkl", proto + "c__torch__\nModel\n", " m/code/ m/constants.pkl")), "");
  EXPECT_EQ(said(zip("m/data/aotinductor/model/m.wrapper.so",
                     "\x7f"
                     "ELF",
                     "")),
            "");
  for (const char *path : {NVALCHEMI_LJ_MODEL, NVALCHEMI_LJ_AOTI_MODEL})
    EXPECT_EQ(said(read_file(path)), "") << path;
  try {
    load_model("# a LAMMPS input, not a model\n");
    FAIL() << "a text file loaded";
  } catch (std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("as a model: it is not a model file"), std::string::npos)
        << e.what();
  }
}

TEST(TorchScriptRunner, EnergiesAndEdgeGradientsMatchAnalyticLennardJones)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  const Graph g = three_atoms();
  ModelOutputs out;
  model.evaluate(g, CUBE, NODE_ENERGIES, nullptr, out);
  const std::vector<double> &atomic_energies = out.tensors.at("atomic_energies").values;
  ASSERT_EQ(atomic_energies.size(), 3u);
  ASSERT_EQ(out.edge_gradients.size(), 12);

  std::vector<double> expected_energy(3, 0.0);
  for (int e = 0; e < g.num_edges(); ++e) {
    const double *v = &g.edge_vectors[3 * e];
    const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    expected_energy[g.edges[2 * e + 1]] += 0.5 * lj(r);
    // every edge's receiver is owned, so each edge enters the owned energy with weight 1/2
    for (int d = 0; d < 3; ++d)
      EXPECT_NEAR(out.edge_gradients[3 * e + d], 0.5 * lj_derivative(r) * v[d] / r,
                  1e-12 * std::fabs(lj_derivative(r)));
  }
  for (int r = 0; r < 3; ++r)
    EXPECT_NEAR(atomic_energies[r], expected_energy[r], 1e-12 * std::fabs(expected_energy[0]));
  EXPECT_EQ(atomic_energies[2], 0.0);    // the ghost is nobody's receiver
  EXPECT_NEAR(out.energy_share, expected_energy[0] + expected_energy[1],
              1e-12 * std::fabs(expected_energy[0]));
}

TEST(TorchScriptRunner, ReplicatedEnergyShareIsWeighted)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  const Graph g = three_atoms();
  ModelOutputs full, quarter;
  model.evaluate(g, CUBE, NODE_ENERGIES, nullptr, full);
  // a sum over all rows scaled by 1/4, as for an energy replicated on 4 ranks
  model.evaluate(g, CUBE, EnergyShare{"atomic_energies", false, 0.25, true}, nullptr, quarter);
  EXPECT_NEAR(quarter.energy_share, 0.25 * full.energy_share, 1e-14);
  for (size_t i = 0; i < full.edge_gradients.size(); ++i)
    EXPECT_NEAR(quarter.edge_gradients[i], 0.25 * full.edge_gradients[i], 1e-14);
  // a model that brings its own forces: no gradient is taken
  ModelOutputs none;
  model.evaluate(g, CUBE, EnergyShare{"atomic_energies", true, 1.0, false}, nullptr, none);
  EXPECT_TRUE(none.edge_gradients.empty());
  EXPECT_EQ(none.energy_share, full.energy_share);
}

TEST(TorchScriptRunner, MissingEnergyOutputIsAnError)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  ModelOutputs out;
  EXPECT_THROW(
      model.evaluate(three_atoms(), CUBE, EnergyShare{"energy", false, 1.0, true}, nullptr, out),
      std::runtime_error);
}

TEST(TorchScriptRunner, Float32ModeAgreesToSinglePrecision)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  const Graph g = three_atoms();
  ModelOutputs exact, single;
  model.evaluate(g, CUBE, NODE_ENERGIES, nullptr, exact);
  model.configure({{}, NODE_ENERGIES, false, false});
  model.evaluate(g, CUBE, NODE_ENERGIES, nullptr, single);
  for (size_t i = 0; i < exact.edge_gradients.size(); ++i)
    EXPECT_NEAR(single.edge_gradients[i], exact.edge_gradients[i],
                1e-5 * std::fabs(exact.edge_gradients[i]) + 1e-6);
}

TEST(TorchScriptRunner, EmptyGraphGivesEmptyOutputs)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  Graph g;
  ModelOutputs out;
  model.evaluate(g, CUBE, NODE_ENERGIES, nullptr, out);
  EXPECT_TRUE(out.tensors.at("atomic_energies").values.empty());
  EXPECT_TRUE(out.edge_gradients.empty());
  EXPECT_EQ(out.energy_share, 0.0);
}

TEST(AotiRunner, RecognisedByItsContentsWithTheSameMetadata)
{
  const std::string bytes = read_file(NVALCHEMI_LJ_AOTI_MODEL);
  EXPECT_TRUE(is_aoti_package(bytes));
  EXPECT_FALSE(is_aoti_package(read_file(NVALCHEMI_LJ_MODEL)));
  auto aoti = load_model(bytes);
  auto script = load_model(read_file(NVALCHEMI_LJ_MODEL));
  EXPECT_EQ(aoti->format(), "AOTInductor");
  EXPECT_EQ(script->format(), "TorchScript");
  EXPECT_EQ(parse_metadata(aoti->metadata_text()).spec,
            parse_metadata(script->metadata_text()).spec);
}

TEST(AotiRunner, SameEnergiesAndEdgeGradientsAsTorchScript)
{
  auto aoti = load_model(read_file(NVALCHEMI_LJ_AOTI_MODEL));
  auto script = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelOutputs a, b;
  for (const Graph &g : {three_atoms(), Graph()}) {    // the empty graph of a rank with no atoms
    aoti->evaluate(g, CUBE, NODE_ENERGIES, nullptr, a);
    script->evaluate(g, CUBE, NODE_ENERGIES, nullptr, b);
    ASSERT_EQ(a.edge_gradients.size(), b.edge_gradients.size());
    for (size_t i = 0; i < a.edge_gradients.size(); ++i)
      EXPECT_NEAR(a.edge_gradients[i], b.edge_gradients[i], 1e-14);
    const auto &ea = a.tensors.at("atomic_energies"), &eb = b.tensors.at("atomic_energies");
    EXPECT_EQ(ea.shape, eb.shape);
    for (size_t i = 0; i < ea.values.size(); ++i) EXPECT_NEAR(ea.values[i], eb.values[i], 1e-14);
    EXPECT_NEAR(a.energy_share, b.energy_share, 1e-14);
  }
}

TEST(AotiRunner, RefusesEnergySharesItCannotGive)
{
  auto aoti = load_model(read_file(NVALCHEMI_LJ_AOTI_MODEL));
  const auto share = [](const EnergyShare &s) {
    return RunOptions{{}, s, true, false};
  };
  EXPECT_NO_THROW(aoti->configure(share(NODE_ENERGIES)));
  EXPECT_THROW(aoti->configure(share(EnergyShare{"atomic_energies", false, 0.25, true})),
               std::invalid_argument);
  EXPECT_THROW(aoti->configure(share(EnergyShare{"atomic_energies", true, 1.0, false})),
               std::invalid_argument);
  EXPECT_THROW(aoti->configure(share(EnergyShare{"energies", true, 1.0, true})),
               std::invalid_argument);
}

TEST(Reference, WholeSystemInOneProcessMatchesAnalyticLennardJones)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelRunner &model = *runner;
  const MLIPSpec spec = parse_metadata(model.metadata_text()).spec.resolved();
  // two atoms 1.2 apart across the periodic boundary of a 10-wide cube: one image pair
  const std::vector<double> x = {0.4, 5.0, 5.0, 9.2, 5.0, 5.0};
  const Contribution c =
      reference_contribution(model, spec, energy_share(spec, 4), x, {18, 18}, CUBE, 2.5);
  const double r = 1.2;
  EXPECT_NEAR(c.energy, lj(r), 1e-12 * std::fabs(lj(r)));    // weight 1: one process
  // atom 0 sits at +x of its neighbour's image: its force is -dE/dr along +x
  EXPECT_NEAR(c.forces[0], -lj_derivative(r), 1e-12 * std::fabs(lj_derivative(r)));
  EXPECT_NEAR(c.forces[3], lj_derivative(r), 1e-12 * std::fabs(lj_derivative(r)));
  ASSERT_TRUE(c.has_virial);
  EXPECT_NEAR(c.virial[0], -r * lj_derivative(r), 1e-12 * std::fabs(r * lj_derivative(r)));

  Contribution shifted = c;
  shifted.forces[0] *= 1.0 + 1e-6;
  const Validation same = validate(c, c), off = validate(shifted, c);
  EXPECT_EQ(same.worst, 0.0);
  EXPECT_NEAR(off.worst, 1e-6, 1e-9);
  EXPECT_NE(off.report.find("forces"), std::string::npos);
}

namespace {
// three_atoms() padded as static shapes pad it: dead rows and self-loops of the last one
Graph padded_three_atoms()
{
  Graph g = three_atoms();
  pad_graph(g, 16, 32, 2.5);
  return g;
}

// the same to rounding: vectorized kernels may round the last element of a longer array apart
void expect_same_outputs(const ModelOutputs &a, const ModelOutputs &b)
{
  const auto near = [](double x, double y) {
    return std::fabs(x - y) <= 1e-14 * std::fabs(y);
  };
  EXPECT_PRED2(near, a.energy_share, b.energy_share);
  ASSERT_EQ(a.edge_gradients.size(), b.edge_gradients.size());
  for (int64_t i = 0; i < a.edge_gradients.size(); ++i)
    EXPECT_PRED2(near, a.edge_gradients[i], b.edge_gradients[i]);
  const auto &ea = a.tensors.at("atomic_energies"), &eb = b.tensors.at("atomic_energies");
  EXPECT_EQ(ea.shape, eb.shape);
  for (size_t i = 0; i < ea.values.size(); ++i) EXPECT_PRED2(near, ea.values[i], eb.values[i]);
}

// a TorchScript model with the LJ model's metadata and the given forward()
std::string scripted_model(const std::string &forward)
{
  auto lj = load_model(read_file(NVALCHEMI_LJ_MODEL));
  torch::jit::Module module("Probe");
  module.define(forward);
  std::ostringstream out;
  module.save(out, {{std::string(METADATA_FILE), lj->metadata_text()}});
  return out.str();
}
}    // namespace

TEST(TorchScriptRunner, PaddingRowsAndEdgesChangeNoResult)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  ModelOutputs plain, padded;
  runner->evaluate(three_atoms(), CUBE, NODE_ENERGIES, nullptr, plain);
  runner->evaluate(padded_three_atoms(), CUBE, NODE_ENERGIES, nullptr, padded);
  EXPECT_EQ(padded.edge_gradients.size(), 12);    // the real edges' only
  expect_same_outputs(plain, padded);
}

TEST(AotiRunner, PaddingRowsAndEdgesChangeNoResult)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_AOTI_MODEL));
  ModelOutputs plain, padded;
  runner->evaluate(three_atoms(), CUBE, NODE_ENERGIES, nullptr, plain);
  runner->evaluate(padded_three_atoms(), CUBE, NODE_ENERGIES, nullptr, padded);
  expect_same_outputs(plain, padded);
}

TEST(TorchScriptRunner, InputsAreViewsTheModelMayNotWriteInto)
{
  auto runner = load_model(scripted_model(R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    positions = inputs["positions"]
    positions.add_(1.0)
    return {"atomic_energies": positions.sum(1)}
)"));
  ModelOutputs out;
  try {
    runner->evaluate(three_atoms(), CUBE, NODE_ENERGIES, nullptr, out);
    FAIL() << "a model writing into its input was not stopped";
  } catch (std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("changed its input 'positions' in place"),
              std::string::npos)
        << e.what();
  }
}

// The LibTorch of this process: the test links the build's, so it is the built file
TEST(LibTorch, TheTestRunsTheLibTorchItWasBuiltAgainst)
{
  const LibTorchFiles files = libtorch_files();
  EXPECT_NE(files.loaded_file.find("libtorch_cpu"), std::string::npos) << files.loaded_file;
  EXPECT_EQ(libtorch_mismatch(files), "");
  EXPECT_EQ(files.loaded_version, files.built_version);
}

TEST(LibTorch, AnotherFileIsAcceptedOnlyWithTheSameVersion)
{
  LibTorchFiles files{"/a/torch/lib/libtorch_cpu.so", "2.13.0+cpu", "/b/torch/lib/libtorch_cpu.so",
                      "2.13.0+cpu"};
  EXPECT_EQ(libtorch_mismatch(files), "");
  files.loaded_version = "2.13.0+cu130";    // another build of that version
  EXPECT_NE(libtorch_mismatch(files).find("runs LibTorch 2.13.0+cu130 from /b/torch"),
            std::string::npos);
  files.loaded_version = "";    // an installation that records no version
  EXPECT_NE(libtorch_mismatch(files).find("of unknown version"), std::string::npos);
  files.built_version = "2.13.0";    // the headers' version (no local tag): any build of it
  files.loaded_version = "2.13.0+cpu";
  EXPECT_EQ(libtorch_mismatch(files), "");
  files.loaded_version = "2.12.1+cpu";
  EXPECT_NE(libtorch_mismatch(files).find("built against LibTorch 2.13.0 (/a/torch"),
            std::string::npos);
}

TEST(LibTorch, VersionRecordedBesideTheLibraryFolder)
{
  const std::string dir = ::testing::TempDir() + "nvalchemi_libtorch_version";
  std::filesystem::create_directories(dir + "/pip/lib");
  std::filesystem::create_directories(dir + "/archive/lib");
  std::ofstream(dir + "/pip/version.py")
      << "from typing import Optional\n__version__ = '2.13.0+cpu'\n";
  std::ofstream(dir + "/archive/build-version") << "2.13.0+cu130\n";
  EXPECT_EQ(libtorch_version(dir + "/pip/lib/libtorch_cpu.so"), "2.13.0+cpu");
  EXPECT_EQ(libtorch_version(dir + "/archive/lib/libtorch_cpu.so"), "2.13.0+cu130");
  EXPECT_EQ(libtorch_version(dir + "/none/lib/libtorch_cpu.so"), "");
  std::filesystem::remove_all(dir);
}
