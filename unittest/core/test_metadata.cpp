// Unit tests: model metadata parsing and the element table.

#include "nvalchemi_model_metadata.h"
#include "nvalchemi_model_units.h"

#include "json.h"

#include "gtest/gtest.h"

#include <fstream>
#include <stdexcept>
#include <string>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
const std::string VALID = R"({"contract_version": 1, "cutoff": 5.0, "species": [1, 8],
  "units": "metal", "dtype": "float32",
  "spec": {"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3}})";

std::string replaced(const std::string &key_value, const std::string &with)
{
  std::string text = VALID;
  const auto pos = text.find(key_value);
  text.replace(pos, key_value.size(), with);
  return text;
}

void expect_error(const std::string &text, const std::string &fragment)
{
  try {
    parse_metadata(text);
    FAIL() << "no error for: " << text;
  } catch (std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}
}    // namespace

TEST(Metadata, ParsesEveryField)
{
  const ModelMetadata meta = parse_metadata(VALID);
  EXPECT_EQ(meta.contract_version, CONTRACT_VERSION);
  EXPECT_DOUBLE_EQ(meta.cutoff, 5.0);
  EXPECT_EQ(meta.species, (std::vector<int>{1, 8}));
  EXPECT_EQ(meta.units, "metal");
  EXPECT_EQ(meta.dtype, "float32");
  EXPECT_EQ(meta.spec.halo, HaloMode::LAYERWISE);
  EXPECT_EQ(meta.spec.num_message_passing_layers, 3);
  EXPECT_EQ(meta.spec.outputs.at("atomic_energies").kind, OutputKind::PER_NODE);
}

TEST(Metadata, ReadsThePyTorchThatWroteTheModelWhereRecorded)
{
  EXPECT_EQ(parse_metadata(VALID).torch_version, "");
  const ModelMetadata meta = parse_metadata(replaced(R"("units": "metal",)",
                                                     R"("units": "metal", "torch_version": )"
                                                     R"("2.11.0+cu130", "cuda_version": "13.0",)"));
  EXPECT_EQ(meta.torch_version, "2.11.0+cu130");
  EXPECT_EQ(meta.cuda_version, "13.0");
  expect_error(replaced(R"("units": "metal",)", R"("units": "metal", "torch_version": 2.11,)"),
               "'torch_version' must be a string");
}

TEST(Metadata, RejectsMissingKey)
{
  expect_error(replaced(R"("units": "metal",)", ""), "missing key 'units'");
  expect_error(replaced(R"({"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3})", "{}"),
               "spec needs a 'version' key");
  expect_error(replaced(R"("spec": {)", R"("spex": {)"), "unknown key 'spex'");
}

TEST(Metadata, RejectsWrongTypesAndValues)
{
  expect_error(replaced(R"("cutoff": 5.0)", R"("cutoff": "5")"), "'cutoff' must be a number");
  expect_error(replaced(R"("cutoff": 5.0)", R"("cutoff": -1)"), "'cutoff' must be positive");
  expect_error(replaced("[1, 8]", "[]"), "'species' must be a non-empty list");
  expect_error(replaced("[1, 8]", "[1, 200]"), "(1..118)");
  expect_error(replaced(R"("float32")", R"("float16")"), "'dtype' must be");
  expect_error(replaced(R"("contract_version": 1)", R"("contract_version": 2)"),
               "contract_version is 2 but this build");
  expect_error(
      replaced(R"("num_message_passing_layers": 3)", R"("num_message_passing_layers": 1.5)"),
      "'num_message_passing_layers' must be an integer");
  expect_error(replaced(R"({"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 3})", "[]"),
               "'spec' must be a JSON object");
}

TEST(Metadata, RejectsUnknownKeyAndBadJson)
{
  expect_error(replaced(R"("units": "metal",)", R"("units": "metal", "unit": "real",)"),
               "unknown key 'unit'");
  expect_error("{\"cutoff\": ", "not valid JSON");
  expect_error("[1, 2]", "top level must be a JSON object");
}

TEST(Elements, SymbolsAndNumbersRoundTrip)
{
  EXPECT_EQ(atomic_number("H"), 1);
  EXPECT_EQ(atomic_number("Ar"), 18);
  EXPECT_EQ(atomic_number("Og"), 118);
  EXPECT_EQ(atomic_number("Xx"), 0);
  EXPECT_EQ(atomic_number("ar"), 0);
  for (int z = 1; z <= 118; ++z) EXPECT_EQ(atomic_number(element_symbol(z)), z);
  EXPECT_EQ(element_symbol(0), "?");
}

// The cases nvalchemi-check judges too (unittest/lammps/contract_tables.py): both readers of the
// contract's table accept and refuse the same metadata, with the same words
TEST(Metadata, SharedCasesAsTheCheckerJudgesThem)
{
  std::ifstream in(NVALCHEMI_METADATA_CASES);
  const LAMMPS_NS::json corpus = LAMMPS_NS::json::parse(in);
  for (const auto &c : corpus.at("cases")) {
    std::string text;
    if (c.contains("text")) {
      text = c.at("text").get<std::string>();
    } else {
      LAMMPS_NS::json meta = corpus.at("base");
      if (c.contains("set"))
        for (const auto &item : c.at("set").items()) meta[item.key()] = item.value();
      if (c.contains("drop"))
        for (const auto &key : c.at("drop")) meta.erase(key.get<std::string>());
      text = meta.dump();
    }
    std::string refused;
    try {
      const ModelMetadata meta = parse_metadata(text);
      unit_conversion(meta.units, meta.units, meta.spec);    // where units are checked
    } catch (std::invalid_argument &e) {
      refused = e.what();
    }
    const std::string name = c.at("name").get<std::string>();
    if (c.at("accepted").get<bool>()) {
      EXPECT_EQ(refused, "") << name;
    } else {
      const std::string fragment = c.at("fragment").get<std::string>();
      EXPECT_NE(refused.find(fragment), std::string::npos)
          << name << ": '" << refused << "' lacks '" << fragment << "'";
    }
  }
}

// The specs a foreign file's reader and the Python exporters give a message-passing model, from
// the same table (unittest/lammps/contract_tables.py checks the Python side on the same cases)
TEST(Metadata, ExporterSpecsAsThePythonExportersWriteThem)
{
  std::ifstream in(NVALCHEMI_METADATA_CASES);
  const LAMMPS_NS::json corpus = LAMMPS_NS::json::parse(in);
  for (const auto &c : corpus.at("exporter_specs")) {
    const std::string written = exporter_spec_json(c.at("layers").get<int>(),
                                                   parse_halo_mode(c.at("halo").get<std::string>()),
                                                   c.at("width").get<int>());
    EXPECT_EQ(LAMMPS_NS::json::parse(written), c.at("spec")) << c.dump();
  }
}
