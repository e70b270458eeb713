// Unit tests: a model written in one LAMMPS unit style run in another (nvalchemi_model_units): the
// factors between the styles, the refusal of lj units against physical ones, and the runners'
// conversion of inputs and outputs (TorchScript and AOTInductor on the Lennard-Jones model, a
// scripted probe for every output whose dimension the package knows).

#include "nvalchemi_model_metadata.h"
#include "nvalchemi_runner.h"
#include "nvalchemi_spec.h"
#include "nvalchemi_model_units.h"

#include <torch/script.h>

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// the factors as LAMMPS and CODATA 2006 state them, independently of the package's table
constexpr double KCAL_PER_EV = 23.060549;    // LAMMPS utils::get_conversion_factor METAL2REAL
constexpr double JOULE_PER_EV = 1.6021765e-19;
constexpr double BOHR = 0.52917720859;     // Angstrom
constexpr double HARTREE = 27.21138386;    // eV

const MLIPSpec &lj_spec()
{
  static const MLIPSpec spec = preset("SPEC_LJ_HALO").resolved();
  return spec;
}

void expect_relative(double value, double expected, double tol = 1e-15)
{
  EXPECT_LE(std::fabs(value - expected), tol * std::fabs(expected)) << value << " vs " << expected;
}

std::string unit_error(const std::string &model, const std::string &run)
{
  try {
    unit_conversion(model, run, lj_spec());
  } catch (std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

std::string read_file(const char *path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// owned rows 0, 1 and ghost row 2 (model units), every length divided by `shrink`
Graph three_atoms(double shrink)
{
  Graph g;
  g.n_owned = 2;
  g.row_atom = {0, 1, 2};
  g.positions = {0.0, 0.0, 0.0, 1.1, 0.1, 0.0, 0.3, 1.2, -0.2};
  for (double &x : g.positions) x /= shrink;
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

Cell cell(double shrink)
{
  Cell c = {{{10, 0.5, 0}, {0, 9, 0.25}, {1, 0, 11}}, {true, true, true}};
  for (auto &row : c.lattice)
    for (double &x : row) x /= shrink;
  return c;
}

const EnergyShare NODE_ENERGIES{"atomic_energies", true, 1.0, true};

// The runner with `units` on the graph in run units equals the runner without on the graph in
// model units, each value times its factor: the energy share and node energies by the energy
// factor, the gradient by the force factor, the outputs as `units` names them.
void expect_converted(ModelRunner &model, const UnitConversion &units)
{
  ModelOutputs in_model_units, in_run_units;
  model.configure({{}, NODE_ENERGIES, true, false});
  model.evaluate(three_atoms(1.0), cell(1.0), NODE_ENERGIES, nullptr, in_model_units);
  model.configure({units, NODE_ENERGIES, true, false});
  model.evaluate(three_atoms(units.length), cell(units.length), NODE_ENERGIES, nullptr,
                 in_run_units);
  model.configure({{}, NODE_ENERGIES, true, false});
  expect_relative(in_run_units.energy_share, units.energy * in_model_units.energy_share, 1e-14);
  ASSERT_EQ(in_run_units.edge_gradients.size(), in_model_units.edge_gradients.size());
  ASSERT_GT(in_run_units.edge_gradients.size(), 0);
  for (int64_t i = 0; i < in_run_units.edge_gradients.size(); ++i)
    expect_relative(in_run_units.edge_gradients[i],
                    units.force() * in_model_units.edge_gradients[i], 1e-14);
  ASSERT_EQ(in_run_units.tensors.size(), in_model_units.tensors.size());
  for (const auto &entry : in_model_units.tensors) {
    const OutputTensor &run = in_run_units.tensors.at(entry.first);
    ASSERT_EQ(run.shape, entry.second.shape) << entry.first;
    for (size_t i = 0; i < run.values.size(); ++i)
      EXPECT_NEAR(run.values[i], units.output(entry.first) * entry.second.values[i],
                  1e-14 * std::fabs(units.output(entry.first) * entry.second.values[i]))
          << entry.first << "[" << i << "]";
  }
}
}    // namespace

TEST(Units, MetalAndRealDifferByLammpsOwnFactor)
{
  const UnitConversion to_real = unit_conversion("metal", "real", lj_spec());
  EXPECT_EQ(to_real.length, 1.0);
  EXPECT_EQ(to_real.energy, KCAL_PER_EV);    // exactly LAMMPS' factor
  EXPECT_EQ(to_real.force(), KCAL_PER_EV);
  const UnitConversion to_metal = unit_conversion("real", "metal", lj_spec());
  expect_relative(to_metal.energy, 1.0 / KCAL_PER_EV);
  EXPECT_TRUE(to_real.converts());
}

TEST(Units, PhysicalStylesAgainstSI)
{
  // a metal model (Angstrom, eV) in a run of each physical style
  const struct {
    const char *style;
    double length_in_angstrom, energy_in_ev;
  } styles[] = {{"si", 1e10, 1.0 / JOULE_PER_EV},
                {"cgs", 1e8, 1e-7 / JOULE_PER_EV},
                {"electron", BOHR, HARTREE},
                {"micro", 1e4, 1e-15 / JOULE_PER_EV},
                {"nano", 10.0, 1e-21 / JOULE_PER_EV},
                {"real", 1.0, 1.0 / KCAL_PER_EV},
                {"metal", 1.0, 1.0}};
  for (const auto &s : styles) {
    SCOPED_TRACE(s.style);
    const UnitConversion c = unit_conversion("metal", s.style, lj_spec());
    expect_relative(c.length, s.length_in_angstrom);    // Angstrom per run length unit
    expect_relative(c.energy, 1.0 / s.energy_in_ev);    // run energy units per eV
    expect_relative(c.run_length(3.0), 3.0 / s.length_in_angstrom);
  }
  // composed through metal: electron -> si equals electron -> metal -> si
  const UnitConversion e_si = unit_conversion("electron", "si", lj_spec());
  const UnitConversion e_m = unit_conversion("electron", "metal", lj_spec());
  const UnitConversion m_si = unit_conversion("metal", "si", lj_spec());
  expect_relative(e_si.length, e_m.length * m_si.length);
  expect_relative(e_si.energy, e_m.energy * m_si.energy);
}

TEST(Units, SameStyleConvertsNothing)
{
  for (const char *style : {"lj", "metal", "real", "si", "electron"}) {
    const UnitConversion c = unit_conversion(style, style, lj_spec());
    EXPECT_FALSE(c.converts()) << style;
    EXPECT_TRUE(c.outputs.empty()) << style;
  }
}

TEST(Units, LjOnOneSideOnlyIsRefused)
{
  for (const auto &pair :
       {std::make_pair("lj", "metal"), std::make_pair("metal", "lj"), std::make_pair("lj", "si")}) {
    const std::string message = unit_error(pair.first, pair.second);
    EXPECT_NE(message.find("lj units are reduced units"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("use 'units ") + pair.first + "'"), std::string::npos)
        << message;
  }
  for (const char *run : {"metal", "lj", "atomic"})
    EXPECT_NE(unit_error("atomic", run).find("not a LAMMPS unit style"), std::string::npos) << run;
  EXPECT_NE(unit_error("metal", "furlongs").find("cannot be converted"), std::string::npos);
}

TEST(Units, OutputsOfKnownDimension)
{
  MLIPSpec spec = preset("SPEC_LJ_HALO");
  spec.node_energy_key = "node_energy";
  spec.node_virial_key = "node_virial";
  const UnitConversion c = unit_conversion("metal", "electron", spec.resolved());
  const double e = 1.0 / HARTREE, a = BOHR;
  for (const char *energy : {"energy", "node_energy", "virial", "node_virial"})
    expect_relative(c.output(energy), e);
  expect_relative(c.output("forces"), e * a);
  expect_relative(c.output("stress"), e * a * a * a);
  EXPECT_EQ(c.output("charges"), 1.0);    // dimension unknown to the package: model units
}

TEST(Units, TorchScriptRunnerConvertsInputsAndOutputs)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_MODEL));
  for (const char *run : {"real", "si", "electron", "nano"}) {
    SCOPED_TRACE(run);
    expect_converted(*runner, unit_conversion("metal", run, lj_spec()));
  }
}

TEST(Units, AotiRunnerConvertsInputsAndOutputs)
{
  auto runner = load_model(read_file(NVALCHEMI_LJ_AOTI_MODEL));
  for (const char *run : {"real", "electron"}) {
    SCOPED_TRACE(run);
    expect_converted(*runner, unit_conversion("metal", run, lj_spec()));
  }
}

TEST(Units, EveryOutputOfKnownDimensionAndNoOther)
{
  // outputs made of the inputs: positions (length), cell (length) and edge vectors
  torch::jit::Module module("Probe");
  module.define(R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    r = inputs["edge_vectors"]
    x = inputs["positions"]
    n = x.shape[0]
    e = torch.zeros(n, dtype=r.dtype).index_add(0, inputs["neighbor_list"][:, 1], (r * r).sum(1))
    return {"atomic_energies": e, "forces": x * 2.0, "virial": inputs["cell"] * 3.0,
            "stress": inputs["cell"] + 1.0, "charges": x[:, 0] + 0.5}
)");
  auto lj = load_model(read_file(NVALCHEMI_LJ_MODEL));
  std::ostringstream bytes;
  module.save(bytes, {{std::string(METADATA_FILE), lj->metadata_text()}});
  auto runner = load_model(bytes.str());
  for (const char *run : {"real", "electron", "cgs"}) {
    SCOPED_TRACE(run);
    expect_converted(*runner, unit_conversion("metal", run, lj_spec()));
  }
}
