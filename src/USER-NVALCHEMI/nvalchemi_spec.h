/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: MLIPSpec, how a model is run under domain decomposition
   (nvalchemi.distributed's MLIPSpec / OutputSpec / CompilePolicy).
   Plain C++17: no LAMMPS classes, no LibTorch. See doc/Howto_nvalchemi_spec.rst.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_SPEC_H
#define LMP_NVALCHEMI_SPEC_H

#include "nvalchemi_contract_tables.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // SPEC_VERSION (the JSON form to_json() writes and from_json() takes) and
  // TOOLKIT_SPEC_VERSION (the toolkit's MLIPSpec.to_dict() layout, which from_json() also reads)
  // are the contract table's.

  // Shape of a model output: one value per atom row, one per system, or a passthrough.
  enum class OutputKind { PER_NODE, PER_GRAPH, GLOBAL, UNKNOWN };

  // How each rank's value of an output is combined (see doc/Howto_nvalchemi_spec.rst):
  //   PER_NODE  + ALL_REDUCE: rows are partial contributions; ghost rows are summed into owners
  //   PER_NODE  + NONE/OWNED_ONLY: owned rows are final; ghost rows are ignored
  //   PER_GRAPH + ALL_REDUCE: each rank holds a partial; the value is the sum over ranks
  //   PER_GRAPH + NONE/OWNED_ONLY: the value is already global and replicated on every rank
  enum class Reduce { NONE, ALL_REDUCE, OWNED_ONLY };

  enum class StrategyKind { HALO, GRAPH_PARTITION };

  // Where forces come from: the model's own `forces` output, or autograd of this rank's share
  // of the energy (owned node energies, or the `energy` output) with respect to edge vectors.
  enum class ForceStrategy {
    MODEL_INTERNAL,
    FRAMEWORK_FROM_NODE_ENERGY,
    FRAMEWORK_FROM_GLOBAL_ENERGY
  };

  enum class HaloMode { LOCAL, LAYERWISE, DEEP, GP };

  // `autograd`: the model derives this output itself by autograd of an energy it replicated with
  // system_sum, whose backward all-reduces the gradient, so each rank's value is nprocs times
  // its part (the toolkit's ModelConfig.autograd_outputs; see nvalchemi_outputs_consolidate.h).
  struct OutputSpec {
    OutputKind kind = OutputKind::UNKNOWN;
    Reduce reduce = Reduce::NONE;
    bool autograd = false;
    bool operator==(const OutputSpec &o) const
    { return kind == o.kind && reduce == o.reduce && autograd == o.autograd; }
  };

  // Unset (nullopt) fields take the other operand's value in composition and their default
  // when the spec is resolved.
  struct CompilePolicy {
    std::optional<bool> static_shapes;
    std::optional<double> atom_capacity_growth;
    std::optional<double> edge_capacity_growth;
    std::optional<ForceStrategy> force_strategy;
    bool operator==(const CompilePolicy &o) const;
  };

  struct MLIPSpec {
    std::map<std::string, OutputSpec> outputs;
    std::optional<std::string> node_energy_key;
    std::optional<std::string> node_virial_key;
    std::optional<HaloMode> halo;
    std::optional<int> num_message_passing_layers;
    std::optional<int> exchange_feature_width;
    // operators from operator libraries the model needs ("namespace::name"; the toolkit's
    // custom_ops), checked to be registered before the first step
    std::optional<std::vector<std::string>> custom_ops;
    CompilePolicy compile;

    // Composition: fields set on the right win; output tables merge key by key.
    MLIPSpec operator|(const MLIPSpec &right) const;
    bool operator==(const MLIPSpec &o) const;

    // The spec with every unset field at its default ("defaults" in nvalchemi_spec_tables.h).
    // Throws std::invalid_argument for an output of kind 'unknown': this package does not guess
    // a kind from row counts, as the toolkit does.
    MLIPSpec resolved() const;
    StrategyKind strategy() const;

    // JSON text with a "version" key; from_json accepts what to_json writes, a preset name plus
    // overrides ({"preset": "SPEC_LJ_HALO", ...}) and the toolkit's MLIPSpec.to_dict() (version
    // 2, read by from_toolkit). Both throw std::invalid_argument naming the offending key on
    // unknown keys, wrong types or an unknown version.
    std::string to_json(int indent = -1) const;
    static MLIPSpec from_json(const std::string &text);
  };

  // What a halo mode asks of a rank's graph (nvalchemi_spec_tables.h, read by the Python tools
  // too): ghost atoms receive edges of their own; ghosts lie within max(1, layers) cutoffs
  // instead of one; the model's rows are the whole system's atoms instead of the rank's.
  struct HaloRules {
    bool ghost_receivers = false;
    bool shell_per_layer = false;
    bool system_rows = false;
  };
  const HaloRules &halo_rules(HaloMode mode);

  // The presets by name ("SPEC_LJ_HALO", ...); throws std::invalid_argument for an unknown one.
  const MLIPSpec &preset(const std::string &name);
  const std::vector<std::string> &preset_names();

  // The spec JSON the framework exporters write, and the readers of other frameworks' files
  // give, for a model of `layers` message-passing layers (at most 1: strictly local) in halo
  // mode `halo` (layerwise or deep); exchange_feature_width: the widest row a layerwise model
  // refreshes (0: unknown). "exporter_presets" of nvalchemi_spec_tables.h.
  std::string exporter_spec_json(int layers, HaloMode halo, int exchange_feature_width = 0);

  // Names used in JSON and in pair_style keywords ("per_node", "all_reduce", "layerwise",
  // "node_energy", ...). The parsers throw std::invalid_argument listing the valid names;
  // parse_force_strategy also takes the toolkit's names ("model_internal",
  // "framework_from_node_energy", "framework_from_global_energy").
  std::string to_string(OutputKind);
  std::string to_string(Reduce);
  std::string to_string(HaloMode);
  std::string to_string(ForceStrategy);
  OutputKind parse_output_kind(const std::string &);
  Reduce parse_reduce(const std::string &);
  HaloMode parse_halo_mode(const std::string &);
  ForceStrategy parse_force_strategy(const std::string &);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
