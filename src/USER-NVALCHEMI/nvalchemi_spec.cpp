/* ----------------------------------------------------------------------
   USER-NVALCHEMI: MLIPSpec core. Plain C++17 + the JSON library shipped with LAMMPS.
------------------------------------------------------------------------- */

#include "nvalchemi_spec.h"
#include "nvalchemi_spec_tables.h"

#include "json.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

using LAMMPS_NS::json;

namespace LAMMPS_NS {
namespace NVAlchemi {

  // ---- enum names ------------------------------------------------------------------------

  namespace {
    template <typename E> using NameTable = std::vector<std::pair<E, std::string>>;

    const NameTable<OutputKind> OUTPUT_KINDS = {{OutputKind::PER_NODE, "per_node"},
                                                {OutputKind::PER_GRAPH, "per_graph"},
                                                {OutputKind::GLOBAL, "global"},
                                                {OutputKind::UNKNOWN, "unknown"}};
    const NameTable<Reduce> REDUCES = {{Reduce::NONE, "none"},
                                       {Reduce::ALL_REDUCE, "all_reduce"},
                                       {Reduce::OWNED_ONLY, "owned_only"}};

    // the spec's tables (nvalchemi_spec_tables.h), parsed once
    const json &tables()
    {
      static const json parsed = json::parse(SPEC_TABLES_JSON);
      return parsed;
    }
    // the fields of a spec object of the tables (the JSON section below)
    MLIPSpec fields_from(const json &obj);
    const MLIPSpec &defaults();

    // the names of an enumeration from the tables' list `key`, in enumerator order;
    // `field`: the name's key in each entry
    template <typename E>
    NameTable<E> enum_names(const char *key, const char *field, int enumerators)
    {
      const json &entries = tables().at(key);
      if (static_cast<int>(entries.size()) != enumerators)
        throw std::logic_error(std::string("nvalchemi_spec_tables.h: '") + key + "' lists " +
                               std::to_string(entries.size()) + " entries for " +
                               std::to_string(enumerators) + " enumerators");
      NameTable<E> table;
      for (int i = 0; i < enumerators; ++i)
        table.emplace_back(static_cast<E>(i), entries[i].at(field).get_ref<const std::string &>());
      return table;
    }

    const NameTable<HaloMode> &halo_modes()
    {
      static const NameTable<HaloMode> table =
          enum_names<HaloMode>("halo_modes", "name", static_cast<int>(HaloMode::GP) + 1);
      return table;
    }
    constexpr int FORCE_STRATEGY_COUNT =
        static_cast<int>(ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY) + 1;
    const NameTable<ForceStrategy> &force_strategies()
    {
      static const NameTable<ForceStrategy> table =
          enum_names<ForceStrategy>("force_strategies", "name", FORCE_STRATEGY_COUNT);
      return table;
    }
    // the toolkit's ForceStrategy values, read as synonyms
    const NameTable<ForceStrategy> &toolkit_force_strategies()
    {
      static const NameTable<ForceStrategy> table =
          enum_names<ForceStrategy>("force_strategies", "toolkit_name", FORCE_STRATEGY_COUNT);
      return table;
    }

    template <typename E> std::string name_of(const NameTable<E> &table, E value)
    {
      for (const auto &entry : table)
        if (entry.first == value) return entry.second;
      return "?";
    }

    template <typename E>
    E parse_name(const NameTable<E> &table, const std::string &text, const char *what)
    {
      std::string valid;
      for (const auto &entry : table) {
        if (text == entry.second) return entry.first;
        valid += (valid.empty() ? "" : ", ") + entry.second;
      }
      throw std::invalid_argument("unknown " + std::string(what) + " '" + text +
                                  "' (valid: " + valid + ")");
    }
  }    // namespace

  std::string to_string(OutputKind v)
  { return name_of(OUTPUT_KINDS, v); }
  std::string to_string(Reduce v)
  { return name_of(REDUCES, v); }
  std::string to_string(HaloMode v)
  { return name_of(halo_modes(), v); }
  std::string to_string(ForceStrategy v)
  { return name_of(force_strategies(), v); }
  OutputKind parse_output_kind(const std::string &s)
  { return parse_name(OUTPUT_KINDS, s, "output kind"); }
  Reduce parse_reduce(const std::string &s)
  { return parse_name(REDUCES, s, "reduce"); }
  HaloMode parse_halo_mode(const std::string &s)
  { return parse_name(halo_modes(), s, "halo mode"); }
  ForceStrategy parse_force_strategy(const std::string &s)
  {
    for (const auto &entry : toolkit_force_strategies())
      if (s == entry.second) return entry.first;
    return parse_name(force_strategies(), s, "force strategy");
  }

  // ---- composition and defaults ----------------------------------------------------------

  namespace {
    template <typename T> void take_if_set(std::optional<T> &target, const std::optional<T> &v)
    {
      if (v) target = v;
    }

  }    // namespace

  bool CompilePolicy::operator==(const CompilePolicy &o) const
  {
    return static_shapes == o.static_shapes && atom_capacity_growth == o.atom_capacity_growth &&
        edge_capacity_growth == o.edge_capacity_growth && force_strategy == o.force_strategy;
  }

  bool MLIPSpec::operator==(const MLIPSpec &o) const
  {
    return outputs == o.outputs && node_energy_key == o.node_energy_key &&
        node_virial_key == o.node_virial_key && halo == o.halo &&
        num_message_passing_layers == o.num_message_passing_layers &&
        exchange_feature_width == o.exchange_feature_width && custom_ops == o.custom_ops &&
        compile == o.compile;
  }

  MLIPSpec MLIPSpec::operator|(const MLIPSpec &right) const
  {
    MLIPSpec merged = *this;
    for (const auto &entry : right.outputs) merged.outputs[entry.first] = entry.second;
    take_if_set(merged.node_energy_key, right.node_energy_key);
    take_if_set(merged.node_virial_key, right.node_virial_key);
    take_if_set(merged.halo, right.halo);
    take_if_set(merged.num_message_passing_layers, right.num_message_passing_layers);
    take_if_set(merged.exchange_feature_width, right.exchange_feature_width);
    take_if_set(merged.custom_ops, right.custom_ops);
    take_if_set(merged.compile.static_shapes, right.compile.static_shapes);
    take_if_set(merged.compile.atom_capacity_growth, right.compile.atom_capacity_growth);
    take_if_set(merged.compile.edge_capacity_growth, right.compile.edge_capacity_growth);
    take_if_set(merged.compile.force_strategy, right.compile.force_strategy);
    return merged;
  }

  MLIPSpec MLIPSpec::resolved() const
  {
    for (const auto &entry : outputs)
      if (entry.second.kind == OutputKind::UNKNOWN)
        throw std::invalid_argument(
            "output '" + entry.first +
            "' has kind 'unknown': declare it per_node (one value per atom row), per_graph (one "
            "per system) or global (passed through); pair_style nvalchemi does not guess a kind "
            "from the number of rows");
    return defaults() | *this;
  }

  const HaloRules &halo_rules(HaloMode mode)
  {
    static const std::vector<HaloRules> rules = [] {
      std::vector<HaloRules> r;
      for (const json &entry : tables().at("halo_modes"))
        r.push_back({entry.at("ghost_receivers").get<bool>(),
                     entry.at("ghost_shell").get<std::string>() == "layers",
                     entry.at("model_rows").get<std::string>() == "system"});
      return r;
    }();
    halo_modes();    // the tables list one entry per enumerator
    return rules.at(static_cast<size_t>(mode));
  }

  StrategyKind MLIPSpec::strategy() const
  { return halo == HaloMode::GP ? StrategyKind::GRAPH_PARTITION : StrategyKind::HALO; }

  // ---- presets -----------------------------------------------------------------------------

  namespace {
    const std::vector<std::pair<std::string, MLIPSpec>> &presets()
    {
      static const std::vector<std::pair<std::string, MLIPSpec>> table = [] {
        std::vector<std::pair<std::string, MLIPSpec>> t;
        for (const json &entry : tables().at("presets"))
          t.emplace_back(entry.at("name").get<std::string>(), fields_from(entry.at("spec")));
        return t;
      }();
      return table;
    }
  }    // namespace

  const MLIPSpec &preset(const std::string &name)
  {
    for (const auto &entry : presets())
      if (entry.first == name) return entry.second;
    std::string valid;
    for (const auto &n : preset_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown spec preset '" + name + "' (valid: " + valid + ")");
  }

  const std::vector<std::string> &preset_names()
  {
    static const std::vector<std::string> names = [] {
      std::vector<std::string> n;
      for (const auto &entry : presets()) n.push_back(entry.first);
      return n;
    }();
    return names;
  }

  std::string exporter_spec_json(int layers, HaloMode halo, int exchange_feature_width)
  {
    const json &presets = tables().at("exporter_presets");
    json spec;
    if (layers <= 1) {
      spec["preset"] = presets.at("strictly_local");
      return spec.dump();
    }
    spec["preset"] = presets.at("message_passing");
    spec["num_message_passing_layers"] = layers;
    if (halo == HaloMode::DEEP)
      spec["halo"] = to_string(halo);
    else if (exchange_feature_width > 0)
      spec["exchange_feature_width"] = exchange_feature_width;
    return spec.dump();
  }

  // ---- JSON --------------------------------------------------------------------------------

  namespace {
    [[noreturn]] void bad(const std::string &key, const std::string &what)
    { throw std::invalid_argument("spec key '" + key + "' " + what); }

    void check_keys(const json &obj, const std::set<std::string> &known, const std::string &where)
    {
      for (const auto &item : obj.items())
        if (!known.count(item.key()))
          throw std::invalid_argument("unknown spec key '" + where + item.key() + "'");
    }

    std::string get_string(const json &obj, const std::string &key)
    {
      if (!obj.at(key).is_string()) bad(key, "must be a string");
      return obj.at(key).get<std::string>();
    }

    int get_int(const json &obj, const std::string &key, int minimum)
    {
      const json &v = obj.at(key);
      if (!v.is_number_integer() || v.get<long long>() < minimum)
        bad(key, "must be an integer >= " + std::to_string(minimum));
      return v.get<int>();
    }

    // the boolean at `key`, if there is one; `where` is the path to `obj` in error messages
    std::optional<bool> optional_bool(const json &obj, const std::string &key,
                                      const std::string &where)
    {
      if (!obj.contains(key)) return std::nullopt;
      if (!obj.at(key).is_boolean()) bad(where + key, "must be true or false");
      return obj.at(key).get<bool>();
    }

    double get_growth(const json &obj, const std::string &key)
    {
      const json &v = obj.at(key);
      if (!v.is_number() || v.get<double>() < 1.0) bad(key, "must be a number >= 1");
      return v.get<double>();
    }

    // a list of operator names "namespace::name"
    std::vector<std::string> get_operator_names(const json &list, const std::string &key)
    {
      if (!list.is_array()) bad(key, "must be a list of operator names \"namespace::name\"");
      std::vector<std::string> names;
      for (const json &name : list) {
        if (!name.is_string() || name.get<std::string>().find("::") == std::string::npos)
          bad(key,
              "must list operators by name, \"namespace::name\" (as torch.ops.namespace.name)");
        names.push_back(name.get<std::string>());
      }
      return names;
    }

    // every key of `obj` except "preset" and "version", applied over `spec`
    void read_fields(const json &obj, MLIPSpec &spec)
    {
      check_keys(obj,
                 {"version", "preset", "outputs", "node_energy_key", "node_virial_key", "halo",
                  "num_message_passing_layers", "exchange_feature_width", "custom_ops", "compile"},
                 "");
      if (obj.contains("outputs")) {
        const json &outputs = obj.at("outputs");
        if (!outputs.is_object()) bad("outputs", "must be an object of {name: {kind, reduce}}");
        for (const auto &item : outputs.items()) {
          const std::string where = "outputs." + item.key();
          const json &o = item.value();
          if (!o.is_object() || !o.contains("kind") || !o.contains("reduce"))
            bad(where, "must be an object with 'kind' and 'reduce'");
          check_keys(o, {"kind", "reduce", "autograd"}, where + ".");
          if (!o.at("kind").is_string() || !o.at("reduce").is_string())
            bad(where, "kind and reduce must be strings");
          spec.outputs[item.key()] = {parse_output_kind(o.at("kind").get<std::string>()),
                                      parse_reduce(o.at("reduce").get<std::string>()),
                                      optional_bool(o, "autograd", where + ".").value_or(false)};
        }
      }
      if (obj.contains("node_energy_key"))
        spec.node_energy_key = get_string(obj, "node_energy_key");
      if (obj.contains("node_virial_key"))
        spec.node_virial_key = get_string(obj, "node_virial_key");
      if (obj.contains("halo")) spec.halo = parse_halo_mode(get_string(obj, "halo"));
      if (obj.contains("num_message_passing_layers"))
        spec.num_message_passing_layers = get_int(obj, "num_message_passing_layers", 0);
      if (obj.contains("exchange_feature_width"))
        spec.exchange_feature_width = get_int(obj, "exchange_feature_width", 0);
      if (obj.contains("custom_ops"))
        spec.custom_ops = get_operator_names(obj.at("custom_ops"), "custom_ops");
      if (obj.contains("compile")) {
        const json &c = obj.at("compile");
        if (!c.is_object()) bad("compile", "must be an object");
        check_keys(
            c, {"static_shapes", "atom_capacity_growth", "edge_capacity_growth", "force_strategy"},
            "compile.");
        take_if_set(spec.compile.static_shapes, optional_bool(c, "static_shapes", "compile."));
        if (c.contains("atom_capacity_growth"))
          spec.compile.atom_capacity_growth = get_growth(c, "atom_capacity_growth");
        if (c.contains("edge_capacity_growth"))
          spec.compile.edge_capacity_growth = get_growth(c, "edge_capacity_growth");
        if (c.contains("force_strategy"))
          spec.compile.force_strategy = parse_force_strategy(get_string(c, "force_strategy"));
      }
    }

    MLIPSpec fields_from(const json &obj)
    {
      MLIPSpec spec;
      read_fields(obj, spec);
      return spec;
    }

    const MLIPSpec &defaults()
    {
      static const MLIPSpec resolved_defaults = fields_from(tables().at("defaults"));
      return resolved_defaults;
    }
  }    // namespace

  // ---- the toolkit's layout: MLIPSpec.to_dict(), version 2 ---------------------------------

  namespace {
    std::string string_or(const json &obj, const std::string &key, const std::string &fallback)
    { return obj.contains(key) ? get_string(obj, key) : fallback; }

    // the storage policy's record {"kind": ...} as a halo mode (doc/Howto_nvalchemi_spec.rst)
    HaloMode halo_of_policy(const json &policy)
    {
      if (!policy.is_object() || !policy.contains("kind"))
        bad("core.policy", "must be an object with a 'kind'");
      const std::string kind = get_string(policy, "kind");
      if (kind == "local") return HaloMode::LOCAL;
      if (kind == "graph_parallel") return HaloMode::GP;
      if (kind == "halo" || kind == "refresh_halo") {
        check_keys(policy, {"kind", "scatter_mode", "gather_mode"}, "core.policy.");
        // ghost rows neither folded into their owners nor refreshed: a strictly local model
        const bool exchanges = string_or(policy, "scatter_mode", "halo_correction") != "local" ||
            string_or(policy, "gather_mode", "halo_read") != "local";
        return exchanges ? HaloMode::LAYERWISE : HaloMode::LOCAL;
      }
      if (kind == "shard")
        bad("core.policy",
            "kind 'shard' (owned rows only, cross-rank reads by global atom id) has "
            "no counterpart in LAMMPS' spatial decomposition: use a halo policy");
      bad("core.policy",
          "has an unknown kind '" + kind + "' (known: local, halo, refresh_halo, graph_parallel)");
    }

    std::vector<std::string> string_list(const json &obj, const std::string &key)
    {
      std::vector<std::string> names;
      if (!obj.contains(key) || obj.at(key).is_null()) return names;
      if (!obj.at(key).is_array()) bad(key, "must be a list of output names");
      for (const json &name : obj.at(key)) {
        if (!name.is_string()) bad(key, "must be a list of output names");
        names.push_back(name.get<std::string>());
      }
      return names;
    }

    std::optional<std::string> optional_string(const json &obj, const std::string &key)
    {
      if (!obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
      return get_string(obj, key);
    }

    MLIPSpec from_toolkit(const json &j)
    {
      check_keys(j,
                 {"version", "core", "system_reductions", "node_energy_key", "node_virial_key",
                  "gp_replicate_geometry", "owned_only_outputs", "all_reduce_outputs",
                  "output_kinds", "compile"},
                 "");
      MLIPSpec spec;
      if (!j.contains("core") || !j.at("core").is_object())
        bad("core", "must be an object with the storage policy (version 2 layout)");
      const json &core = j.at("core");
      check_keys(core, {"policy", "custom_ops", "third_party_helpers", "shard_fields"}, "core.");
      if (!core.contains("policy")) bad("core.policy", "is missing");
      spec.halo = halo_of_policy(core.at("policy"));
      // operators by name are what the model calls from operator libraries; adapters and
      // helpers (objects) wrap Python callables for the toolkit's dispatch
      for (const char *hatch : {"custom_ops", "third_party_helpers"}) {
        if (!core.contains(hatch) || core.at(hatch).is_null() || core.at(hatch).empty()) continue;
        const json &entries = core.at(hatch);
        bool named = std::string(hatch) == "custom_ops" && entries.is_array();
        for (const json &entry : entries)
          named = named && entry.is_string() &&
              entry.get<std::string>().find("::") != std::string::npos;
        if (!named)
          bad(std::string("core.") + hatch,
              "names Python or Triton callables for the toolkit's dispatch, which a LAMMPS run "
              "cannot call: build what they do into the TorchScript model, or list the "
              "operators it calls from an operator library by name (\"namespace::name\")");
        spec.custom_ops = get_operator_names(entries, "core.custom_ops");
      }
      // read, and not needed here (doc/Howto_nvalchemi_spec.rst)
      optional_bool(j, "system_reductions", "");
      optional_bool(j, "gp_replicate_geometry", "");
      spec.node_energy_key = optional_string(j, "node_energy_key");
      spec.node_virial_key = optional_string(j, "node_virial_key");

      // per-output kinds: a sorted list of [name, kind] pairs, or an object {name: kind}
      if (j.contains("output_kinds") && !j.at("output_kinds").is_null()) {
        const json &kinds = j.at("output_kinds");
        const auto add = [&](const json &name, const json &kind) {
          if (!name.is_string() || !kind.is_string())
            bad("output_kinds", "must pair output names with kind names");
          spec.outputs[name.get<std::string>()].kind = parse_output_kind(kind.get<std::string>());
        };
        if (kinds.is_object()) {
          for (const auto &item : kinds.items()) add(json(item.key()), item.value());
        } else if (kinds.is_array()) {
          for (const json &pair : kinds) {
            if (!pair.is_array() || pair.size() != 2)
              bad("output_kinds", "must be a list of [name, kind] pairs");
            add(pair[0], pair[1]);
          }
        } else {
          bad("output_kinds", "must be a list of [name, kind] pairs");
        }
      }
      const auto owned_only = string_list(j, "owned_only_outputs");
      for (const auto &name : owned_only) spec.outputs[name].reduce = Reduce::OWNED_ONLY;
      for (const auto &name : string_list(j, "all_reduce_outputs")) {
        if (std::find(owned_only.begin(), owned_only.end(), name) != owned_only.end())
          bad("all_reduce_outputs", "and owned_only_outputs both name '" + name + "'");
        spec.outputs[name].reduce = Reduce::ALL_REDUCE;
      }

      if (j.contains("compile") && !j.at("compile").is_null()) {
        const json &c = j.at("compile");
        if (!c.is_object()) bad("compile", "must be an object or null");
        check_keys(c, {"static_shapes", "force_strategy", "stress_via_strain"}, "compile.");
        spec.compile.static_shapes = optional_bool(c, "static_shapes", "compile.");
        // the virial always comes from the edge vectors here, exact for any model whose geometry
        // comes from them: stress_via_strain has nothing to switch
        optional_bool(c, "stress_via_strain", "compile.");
        if (c.contains("force_strategy"))
          spec.compile.force_strategy = parse_force_strategy(get_string(c, "force_strategy"));
      }
      return spec;
    }
  }    // namespace

  std::string MLIPSpec::to_json(int indent) const
  {
    json j;
    j["version"] = SPEC_VERSION;
    json outs = json::object();
    for (const auto &entry : outputs) {
      outs[entry.first] = {{"kind", to_string(entry.second.kind)},
                           {"reduce", to_string(entry.second.reduce)}};
      if (entry.second.autograd) outs[entry.first]["autograd"] = true;
    }
    j["outputs"] = outs;
    if (node_energy_key) j["node_energy_key"] = *node_energy_key;
    if (node_virial_key) j["node_virial_key"] = *node_virial_key;
    if (halo) j["halo"] = to_string(*halo);
    if (num_message_passing_layers) j["num_message_passing_layers"] = *num_message_passing_layers;
    if (exchange_feature_width) j["exchange_feature_width"] = *exchange_feature_width;
    if (custom_ops) j["custom_ops"] = *custom_ops;
    json c = json::object();
    if (compile.static_shapes) c["static_shapes"] = *compile.static_shapes;
    if (compile.atom_capacity_growth) c["atom_capacity_growth"] = *compile.atom_capacity_growth;
    if (compile.edge_capacity_growth) c["edge_capacity_growth"] = *compile.edge_capacity_growth;
    if (compile.force_strategy) c["force_strategy"] = to_string(*compile.force_strategy);
    j["compile"] = c;
    return j.dump(indent);
  }

  MLIPSpec MLIPSpec::from_json(const std::string &text)
  {
    json j;
    try {
      j = json::parse(text);
    } catch (json::exception &e) {
      throw std::invalid_argument(std::string("spec is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw std::invalid_argument("spec must be a JSON object");
    if (j.contains("version")) {
      const int version = get_int(j, "version", 1);
      if (version == TOOLKIT_SPEC_VERSION) return from_toolkit(j);
      if (version > SPEC_VERSION)
        throw std::invalid_argument(
            "spec version " + std::to_string(version) + " is unknown to this build (it reads " +
            std::to_string(SPEC_VERSION) + ", its own, and " +
            std::to_string(TOOLKIT_SPEC_VERSION) + ", the toolkit's MLIPSpec.to_dict())");
    } else if (!j.contains("preset")) {
      throw std::invalid_argument("spec needs a 'version' key (a full spec) or a 'preset' key");
    }
    MLIPSpec spec;
    if (j.contains("preset")) spec = preset(get_string(j, "preset"));
    MLIPSpec overrides;
    read_fields(j, overrides);
    return spec | overrides;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
