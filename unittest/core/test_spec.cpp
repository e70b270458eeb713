// Unit tests: MLIPSpec presets, composition, JSON round trip and malformed input.

#include "nvalchemi_spec.h"

#include "gtest/gtest.h"

#include <stdexcept>
#include <string>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
void expect_error(const std::string &text, const std::string &fragment)
{
  try {
    MLIPSpec::from_json(text);
    FAIL() << "no error for: " << text;
  } catch (std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

// every field set, none at its default
MLIPSpec everything_set()
{
  MLIPSpec s;
  s.outputs["charges"] = {OutputKind::PER_NODE, Reduce::ALL_REDUCE};
  s.outputs["dipole"] = {OutputKind::PER_GRAPH, Reduce::NONE};
  s.outputs["flag"] = {OutputKind::GLOBAL, Reduce::OWNED_ONLY};
  s.node_energy_key = "node_energy";
  s.node_virial_key = "node_virial";
  s.halo = HaloMode::DEEP;
  s.num_message_passing_layers = 4;
  s.exchange_feature_width = 128;
  s.compile.static_shapes = true;
  s.compile.atom_capacity_growth = 1.0 / 3.0 + 1.0;
  s.compile.edge_capacity_growth = 2.5;
  s.compile.force_strategy = ForceStrategy::MODEL_INTERNAL;
  return s;
}
}    // namespace

TEST(Spec, PresetsMeanWhatTheDocSays)
{
  struct Row {
    const char *name;
    HaloMode halo;
    ForceStrategy forces;
    bool exchange;
  };
  const Row table[] = {
      {"SPEC_LJ_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY, false},
      {"SPEC_MPNN_HALO", HaloMode::LAYERWISE, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY, true},
      {"SPEC_UMA_HALO", HaloMode::LAYERWISE, ForceStrategy::MODEL_INTERNAL, true},
      {"SPEC_EWALD_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY, false},
      {"SPEC_PME_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY, false},
      {"SPEC_DFTD3_HALO", HaloMode::LAYERWISE, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY, true},
      {"SPEC_MPNN_GP", HaloMode::GP, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY, true},
  };
  ASSERT_EQ(preset_names().size(), sizeof(table) / sizeof(table[0]));
  for (const Row &row : table) {
    const MLIPSpec spec = preset(row.name).resolved();
    EXPECT_EQ(spec.halo, row.halo) << row.name;
    EXPECT_EQ(spec.compile.force_strategy, row.forces) << row.name;
    EXPECT_EQ(spec.needs_exchange(), row.exchange) << row.name;
    EXPECT_EQ(spec.outputs.at("atomic_energies"),
              (OutputSpec{OutputKind::PER_NODE, Reduce::OWNED_ONLY}))
        << row.name;
  }
  EXPECT_EQ(preset("SPEC_MPNN_GP").strategy(), StrategyKind::GRAPH_PARTITION);
  EXPECT_EQ(preset("SPEC_MPNN_HALO").strategy(), StrategyKind::HALO);
  EXPECT_EQ(preset("SPEC_EWALD_HALO").outputs.at("energy").reduce, Reduce::NONE);
  EXPECT_EQ(preset("SPEC_LJ_HALO").outputs.at("energy").reduce, Reduce::ALL_REDUCE);
  EXPECT_EQ(preset("SPEC_UMA_HALO").outputs.at("forces").reduce, Reduce::ALL_REDUCE);
  EXPECT_THROW(preset("SPEC_NOPE"), std::invalid_argument);
}

TEST(Spec, CompositionRightSideWinsFieldByField)
{
  MLIPSpec left = preset("SPEC_MPNN_HALO");
  left.num_message_passing_layers = 3;
  MLIPSpec right;
  right.compile.force_strategy = ForceStrategy::MODEL_INTERNAL;
  right.outputs["charges"] = {OutputKind::PER_NODE, Reduce::ALL_REDUCE};
  right.outputs["energy"] = {OutputKind::PER_GRAPH, Reduce::NONE};

  const MLIPSpec merged = left | right;
  EXPECT_EQ(merged.halo, HaloMode::LAYERWISE);                                // only left sets it
  EXPECT_EQ(merged.num_message_passing_layers, 3);                            // only left sets it
  EXPECT_EQ(merged.compile.force_strategy, ForceStrategy::MODEL_INTERNAL);    // right wins
  EXPECT_EQ(merged.outputs.size(), 3u);                                       // tables merge by key
  EXPECT_EQ(merged.outputs.at("energy").reduce, Reduce::NONE);
  EXPECT_EQ(merged.outputs.at("atomic_energies").kind, OutputKind::PER_NODE);
  EXPECT_EQ(left | MLIPSpec(), left);
  EXPECT_EQ(MLIPSpec() | left, left);
}

TEST(Spec, JsonRoundTripKeepsEveryField)
{
  const MLIPSpec full = everything_set();
  EXPECT_EQ(MLIPSpec::from_json(full.to_json()), full);
  EXPECT_EQ(MLIPSpec::from_json(full.to_json(2)), full);
  // the compile policy, force strategy included, survives: nvalchemi once lost it on reload
  const MLIPSpec back = MLIPSpec::from_json(full.to_json());
  EXPECT_EQ(back.compile.force_strategy, ForceStrategy::MODEL_INTERNAL);
  EXPECT_EQ(back.compile.atom_capacity_growth, full.compile.atom_capacity_growth);
  for (const auto &name : preset_names()) {
    EXPECT_EQ(MLIPSpec::from_json(preset(name).to_json()), preset(name)) << name;
    EXPECT_EQ(MLIPSpec::from_json(preset(name).resolved().to_json()), preset(name).resolved())
        << name;
  }
  EXPECT_EQ(MLIPSpec::from_json(MLIPSpec().to_json()), MLIPSpec());
}

TEST(Spec, PresetPlusOverrides)
{
  const MLIPSpec spec = MLIPSpec::from_json(
      R"({"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3,
          "outputs": {"charges": {"kind": "per_node", "reduce": "all_reduce"}},
          "compile": {"force_strategy": "global_energy"}})");
  EXPECT_EQ(spec.halo, HaloMode::LAYERWISE);
  EXPECT_EQ(spec.num_message_passing_layers, 3);
  EXPECT_EQ(spec.outputs.size(), 3u);
  EXPECT_EQ(spec.compile.force_strategy, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY);
}

TEST(Spec, MalformedInputIsRefusedWithItsKey)
{
  expect_error(R"({"version": 1, "halo": "local", "haloo": "deep"})", "unknown spec key 'haloo'");
  expect_error(R"({"version": 1, "compile": {"force": "model"}})",
               "unknown spec key 'compile.force'");
  expect_error(
      R"({"version": 1, "outputs": {"q": {"kind": "per_node", "reduce": "none", "x": 1}}})",
      "unknown spec key 'outputs.q.x'");
  expect_error(R"({"version": 2, "halo": "local"})", "spec version 2 is newer");
  expect_error(R"({"halo": "local"})", "needs a 'version' key");
  expect_error(R"({"version": 1, "halo": 3})", "'halo' must be a string");
  expect_error(R"({"version": 1, "halo": "wide"})",
               "unknown halo mode 'wide' (valid: local, layerwise, deep, gp)");
  expect_error(R"({"version": 1, "num_message_passing_layers": -1})", "must be an integer >= 0");
  expect_error(R"({"version": 1, "compile": {"edge_capacity_growth": 0.5}})",
               "must be a number >= 1");
  expect_error(R"({"version": 1, "compile": {"static_shapes": 1}})", "must be true or false");
  expect_error(R"({"version": 1, "compile": {"force_strategy": "magic"}})",
               "unknown force strategy 'magic'");
  expect_error(R"({"version": 1, "outputs": {"q": {"kind": "per_atom", "reduce": "none"}}})",
               "unknown output kind 'per_atom'");
  expect_error(R"({"version": 1, "outputs": {"q": {"kind": "per_node"}}})",
               "'outputs.q' must be an object");
  expect_error(R"({"preset": "SPEC_X"})", "unknown spec preset 'SPEC_X'");
  expect_error("[1]", "must be a JSON object");
  expect_error("{", "not valid JSON");
}

TEST(Spec, EnumNamesRoundTrip)
{
  for (auto k :
       {OutputKind::PER_NODE, OutputKind::PER_GRAPH, OutputKind::GLOBAL, OutputKind::UNKNOWN})
    EXPECT_EQ(parse_output_kind(to_string(k)), k);
  for (auto r : {Reduce::NONE, Reduce::ALL_REDUCE, Reduce::OWNED_ONLY})
    EXPECT_EQ(parse_reduce(to_string(r)), r);
  for (auto h : {HaloMode::LOCAL, HaloMode::LAYERWISE, HaloMode::DEEP, HaloMode::GP})
    EXPECT_EQ(parse_halo_mode(to_string(h)), h);
  for (auto f : {ForceStrategy::MODEL_INTERNAL, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY,
                 ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY})
    EXPECT_EQ(parse_force_strategy(to_string(f)), f);
}
