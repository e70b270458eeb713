// Unit tests: MLIPSpec presets, composition, JSON round trip and malformed input.

#include "nvalchemi_spec.h"

#include "gtest/gtest.h"

#include <fstream>
#include <map>
#include <sstream>
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
  s.outputs["forces"] = {OutputKind::PER_NODE, Reduce::NONE, true};
  s.outputs["flag"] = {OutputKind::GLOBAL, Reduce::OWNED_ONLY};
  s.node_energy_key = "node_energy";
  s.node_virial_key = "node_virial";
  s.halo = HaloMode::DEEP;
  s.num_message_passing_layers = 4;
  s.exchange_feature_width = 128;
  s.custom_ops = std::vector<std::string>{"nvalchemi_kernels::lj_edge_energy", "mylib::tp.out"};
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
  };
  const Row table[] = {
      {"SPEC_LJ_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY},
      {"SPEC_MPNN_HALO", HaloMode::LAYERWISE, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY},
      {"SPEC_UMA_HALO", HaloMode::LAYERWISE, ForceStrategy::MODEL_INTERNAL},
      {"SPEC_EWALD_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY},
      {"SPEC_PME_HALO", HaloMode::LOCAL, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY},
      {"SPEC_DFTD3_HALO", HaloMode::LAYERWISE, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY},
      {"SPEC_MPNN_GP", HaloMode::GP, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY},
  };
  ASSERT_EQ(preset_names().size(), sizeof(table) / sizeof(table[0]));
  for (const Row &row : table) {
    const MLIPSpec spec = preset(row.name).resolved();
    EXPECT_EQ(spec.halo, row.halo) << row.name;
    EXPECT_EQ(spec.compile.force_strategy, row.forces) << row.name;
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

// what each halo mode asks of a rank's graph, as doc/Howto_nvalchemi_spec.rst says (the tables of
// nvalchemi_spec_tables.h, which the Python tools read too)
TEST(Spec, HaloRulesMeanWhatTheDocSays)
{
  for (HaloMode mode : {HaloMode::LOCAL, HaloMode::LAYERWISE}) {
    EXPECT_FALSE(halo_rules(mode).ghost_receivers) << to_string(mode);
    EXPECT_FALSE(halo_rules(mode).shell_per_layer) << to_string(mode);
    EXPECT_FALSE(halo_rules(mode).system_rows) << to_string(mode);
  }
  EXPECT_TRUE(halo_rules(HaloMode::DEEP).ghost_receivers);
  EXPECT_TRUE(halo_rules(HaloMode::DEEP).shell_per_layer);
  EXPECT_FALSE(halo_rules(HaloMode::DEEP).system_rows);
  EXPECT_FALSE(halo_rules(HaloMode::GP).ghost_receivers);
  EXPECT_FALSE(halo_rules(HaloMode::GP).shell_per_layer);
  EXPECT_TRUE(halo_rules(HaloMode::GP).system_rows);
  EXPECT_EQ(to_string(HaloMode::GP), "gp");
  EXPECT_EQ(parse_halo_mode("deep"), HaloMode::DEEP);
  EXPECT_EQ(to_string(ForceStrategy::MODEL_INTERNAL), "model");
  EXPECT_EQ(parse_force_strategy("framework_from_global_energy"),
            ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY);
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

TEST(Spec, CustomOpsAreOperatorNames)
{
  const MLIPSpec s = MLIPSpec::from_json(R"({"preset": "SPEC_LJ_HALO", "custom_ops": ["a::b"]})");
  EXPECT_EQ(*s.custom_ops, std::vector<std::string>{"a::b"});
  EXPECT_TRUE(preset("SPEC_LJ_HALO").resolved().custom_ops->empty());
  expect_error(R"({"preset": "SPEC_LJ_HALO", "custom_ops": "a::b"})",
               "'custom_ops' must be a list of operator names");
  expect_error(R"({"preset": "SPEC_LJ_HALO", "custom_ops": ["kernel"]})",
               "'custom_ops' must list operators by name, \"namespace::name\"");
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
  expect_error(R"({"version": 3, "halo": "local"})",
               "spec version 3 is unknown to this build (it reads 1, its own, and 2");
  expect_error(R"({"version": 1, "outputs": {"f": {"kind": "per_node", "reduce": "none",
               "autograd": 1}}})",
               "'outputs.f.autograd' must be true or false");
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
  // the toolkit's ForceStrategy values are synonyms
  EXPECT_EQ(parse_force_strategy("model_internal"), ForceStrategy::MODEL_INTERNAL);
  EXPECT_EQ(parse_force_strategy("framework_from_node_energy"),
            ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY);
  EXPECT_EQ(parse_force_strategy("framework_from_global_energy"),
            ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY);
}

TEST(Spec, UnknownOutputKindIsRefusedWhenResolved)
{
  MLIPSpec spec = preset("SPEC_LJ_HALO");
  spec.outputs["charges"] = {OutputKind::UNKNOWN, Reduce::OWNED_ONLY};
  try {
    spec.resolved();
    FAIL() << "an output of kind unknown was resolved";
  } catch (std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("output 'charges' has kind 'unknown': declare it "
                                         "per_node"),
              std::string::npos)
        << e.what();
  }
}

// ---- the toolkit's layout (MLIPSpec.to_dict(), version 2), from its own output ------------

namespace {
std::string fixture(const std::string &name)
{
  std::ifstream file(std::string(NVALCHEMI_TOOLKIT_SPECS) + "/" + name + ".json");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "fixture " << name << " is missing";
  return text.str();
}

const OutputSpec NODE{OutputKind::PER_NODE, Reduce::NONE};
const OutputSpec GRAPH{OutputKind::PER_GRAPH, Reduce::NONE};
const OutputSpec OWNED_NODE{OutputKind::PER_NODE, Reduce::OWNED_ONLY};
}    // namespace

TEST(ToolkitSpec, EveryPresetLoadsAsWhatItMeansHere)
{
  // the toolkit's six halo presets carry the same content: a halo policy that folds ghost
  // partials into owners and refreshes ghost rows (layerwise here), its four standard outputs
  // with the default reduce, and no compile policy (this package's default force strategy)
  const std::map<std::string, OutputSpec> standard = {
      {"atomic_energies", NODE}, {"energy", GRAPH}, {"forces", NODE}, {"stress", GRAPH}};
  for (const char *name : {"SPEC_LJ_HALO", "SPEC_MPNN_HALO", "SPEC_UMA_HALO", "SPEC_EWALD_HALO",
                           "SPEC_PME_HALO", "SPEC_DFTD3_HALO"}) {
    const MLIPSpec spec = MLIPSpec::from_json(fixture(name));
    EXPECT_EQ(spec.halo, HaloMode::LAYERWISE) << name;
    EXPECT_EQ(spec.outputs, standard) << name;
    EXPECT_FALSE(spec.compile.force_strategy) << name;
    EXPECT_FALSE(spec.node_energy_key) << name;
    const MLIPSpec effective = spec.resolved();
    EXPECT_EQ(effective.compile.force_strategy, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY);
    EXPECT_EQ(effective.node_energy_key, "atomic_energies");
    // what the log prints round-trips through this package's own format
    EXPECT_EQ(MLIPSpec::from_json(effective.to_json(2)), effective) << name;
  }
  const MLIPSpec gp = MLIPSpec::from_json(fixture("SPEC_MPNN_GP"));
  EXPECT_EQ(gp.halo, HaloMode::GP);
  EXPECT_EQ(gp.compile.force_strategy, ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY);
  EXPECT_EQ(gp.compile.static_shapes, true);
  EXPECT_EQ(gp.outputs.at("forces"), OWNED_NODE);
  EXPECT_EQ(gp.outputs.at("atomic_energies"), OWNED_NODE);
  EXPECT_EQ(gp.outputs.at("energy"), GRAPH);
  EXPECT_EQ(MLIPSpec::from_json(gp.resolved().to_json()), gp.resolved());
}

TEST(ToolkitSpec, WrapperDerivedSpecsKeepPolicyReduceAndCompile)
{
  const MLIPSpec uma = MLIPSpec::from_json(fixture("uma_scatter_local_stress_all_reduce"));
  EXPECT_EQ(uma.halo, HaloMode::LAYERWISE);    // scatter local, but ghost rows still refreshed
  EXPECT_EQ(uma.outputs.at("stress"), (OutputSpec{OutputKind::PER_GRAPH, Reduce::ALL_REDUCE}));
  const MLIPSpec mace = MLIPSpec::from_json(fixture("mpnn_compiled_node_energy"));
  EXPECT_EQ(mace.compile.force_strategy, ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY);
  EXPECT_EQ(mace.compile.static_shapes, false);
  const MLIPSpec ewald = MLIPSpec::from_json(fixture("ewald_owned_only_forces"));
  EXPECT_EQ(ewald.outputs.at("charges"), OWNED_NODE);
  EXPECT_EQ(ewald.outputs.at("forces"), OWNED_NODE);
  const MLIPSpec refresh_only = MLIPSpec::from_json(fixture("refresh_only_model_internal"));
  EXPECT_EQ(refresh_only.halo, HaloMode::LAYERWISE);
  EXPECT_EQ(refresh_only.compile.force_strategy, ForceStrategy::MODEL_INTERNAL);
  EXPECT_EQ(refresh_only.outputs.size(), 2u);
  EXPECT_EQ(MLIPSpec::from_json(fixture("lj_local_local")).halo, HaloMode::LOCAL);
  // a preset of the toolkit composed with this package's overrides, as pair_style keywords do
  MLIPSpec keywords;
  keywords.halo = HaloMode::DEEP;
  keywords.num_message_passing_layers = 2;
  const MLIPSpec composed = (MLIPSpec::from_json(fixture("SPEC_MPNN_HALO")) | keywords).resolved();
  EXPECT_EQ(composed.halo, HaloMode::DEEP);
  EXPECT_EQ(composed.num_message_passing_layers, 2);
  EXPECT_EQ(composed.outputs.at("stress"), GRAPH);
}

TEST(ToolkitSpec, MalformedVersion2IsRefusedWithItsKey)
{
  // a version 2 spec with a halo policy and `rest`
  const auto v2 = [](const std::string &rest) {
    return std::string(R"({"version": 2, "core": {"policy": {"kind": "halo"}})") + rest + "}";
  };
  expect_error(R"({"version": 2})", "'core' must be an object");
  expect_error(R"({"version": 2, "core": {}})", "'core.policy' is missing");
  expect_error(R"({"version": 2, "core": {"policy": {"kind": "shard"}}})",
               "kind 'shard' (owned rows only, cross-rank reads by global atom id) has no "
               "counterpart");
  expect_error(R"({"version": 2, "core": {"policy": {"kind": "ring"}}})",
               "unknown kind 'ring' (known: local, halo, refresh_halo, graph_parallel)");
  expect_error(R"({"version": 2, "core": {"policy": {"kind": "halo", "mode": 1}}})",
               "unknown spec key 'core.policy.mode'");
  expect_error(R"({"version": 2, "core": {"policy": {"kind": "halo"},
               "custom_ops": [{"op": "mylib::kernel"}]}})",
               "'core.custom_ops' names Python or Triton callables");
  expect_error(R"({"version": 2, "core": {"policy": {"kind": "halo"},
               "third_party_helpers": ["mylib::kernel"]}})",
               "'core.third_party_helpers' names Python or Triton callables");
  // operators by name are what the model calls from operator libraries
  const MLIPSpec named = MLIPSpec::from_json(R"({"version": 2, "core": {"policy": {"kind": "halo"},
      "custom_ops": ["mylib::kernel"]}})");
  EXPECT_EQ(*named.custom_ops, std::vector<std::string>{"mylib::kernel"});
  expect_error(v2(R"(, "halo": "deep")"), "unknown spec key 'halo'");
  expect_error(v2(R"(, "output_kinds": [["energy"]])"),
               "'output_kinds' must be a list of [name, kind] pairs");
  expect_error(v2(R"(, "output_kinds": [["q", "per_atom"]])"), "unknown output kind 'per_atom'");
  expect_error(v2(R"(, "owned_only_outputs": ["q"], "all_reduce_outputs": ["q"])"),
               "'all_reduce_outputs' and owned_only_outputs both name 'q'");
  expect_error(v2(R"(, "compile": {"force_strategy": "magic"})"), "unknown force strategy 'magic'");
  expect_error(v2(R"(, "compile": {"stress_via_strain": 1})"),
               "'compile.stress_via_strain' must be true or false");
  // an output named in a reduce set without a kind parses, and is refused once resolved
  const MLIPSpec kindless = MLIPSpec::from_json(v2(R"(, "all_reduce_outputs": ["q"])"));
  EXPECT_EQ(kindless.outputs.at("q").kind, OutputKind::UNKNOWN);
  EXPECT_THROW(kindless.resolved(), std::invalid_argument);
}
