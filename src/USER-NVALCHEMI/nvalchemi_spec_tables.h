/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: the spec's tables, defined once for the C++ core and the Python tools.
   The halo modes with what each asks of a rank's graph, the force strategies, the defaults of
   an unset field and the presets are JSON (the spec's own layout, version 1, without
   "version"), held here as one string: nvalchemi_spec.cpp parses it, and the Python package
   (nvalchemi_lammps.spec, which ships this file) reads the text between the R"json( and )json"
   markers. Edit the JSON only; the order of "halo_modes" and "force_strategies" is the order
   of the HaloMode and ForceStrategy enumerators in nvalchemi_spec.h.

   halo_modes, per mode:
     ghost_receivers      ghost atoms receive edges of their own (a full neighbor list with
                          the ghosts' lists), so owned rows see every edge without an exchange
     ghost_shell          "cutoff": ghosts within one cutoff (LAMMPS' default); "layers": within
                          max(1, num_message_passing_layers) cutoffs
     model_rows           "rank": the model sees this rank's owned and ghost rows; "system": every
                          atom of the system, other ranks' owned rows standing in for ghosts
   default_spec: the spec of a model whose writer gave none. exporter_presets: the presets the
   framework exporters and the readers of other frameworks' files give a strictly local model
   (at most one layer) and a message-passing one (exporter_spec_json in nvalchemi_spec.h).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_SPEC_TABLES_H
#define LMP_NVALCHEMI_SPEC_TABLES_H

namespace LAMMPS_NS {
namespace NVAlchemi {

  static constexpr const char *SPEC_TABLES_JSON = R"json(
{
  "halo_modes": [
    {"name": "local", "ghost_receivers": false, "ghost_shell": "cutoff", "model_rows": "rank"},
    {"name": "layerwise", "ghost_receivers": false, "ghost_shell": "cutoff", "model_rows": "rank"},
    {"name": "deep", "ghost_receivers": true, "ghost_shell": "layers", "model_rows": "rank"},
    {"name": "gp", "ghost_receivers": false, "ghost_shell": "cutoff", "model_rows": "system"}
  ],
  "force_strategies": [
    {"name": "model", "toolkit_name": "model_internal"},
    {"name": "node_energy", "toolkit_name": "framework_from_node_energy"},
    {"name": "global_energy", "toolkit_name": "framework_from_global_energy"}
  ],
  "defaults": {
    "node_energy_key": "atomic_energies",
    "node_virial_key": "atomic_virials",
    "halo": "local",
    "num_message_passing_layers": 0,
    "exchange_feature_width": 0,
    "custom_ops": [],
    "compile": {"static_shapes": false, "atom_capacity_growth": 1.2,
                "edge_capacity_growth": 1.2, "force_strategy": "node_energy"}
  },
  "default_spec": {"preset": "SPEC_LJ_HALO"},
  "exporter_presets": {"strictly_local": "SPEC_LJ_HALO", "message_passing": "SPEC_MPNN_HALO"},
  "presets": [
    {"name": "SPEC_LJ_HALO",
     "about": "strictly local pair-like models: one cutoff, no exchange",
     "spec": {"halo": "local", "compile": {"force_strategy": "node_energy"},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "all_reduce"}}}},
    {"name": "SPEC_MPNN_HALO",
     "about": "message passing: ghost rows refreshed from their owners between layers",
     "spec": {"halo": "layerwise", "compile": {"force_strategy": "node_energy"},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "all_reduce"}}}},
    {"name": "SPEC_UMA_HALO",
     "about": "message passing with the model's own forces; ghost-row force partials scattered home",
     "spec": {"halo": "layerwise", "compile": {"force_strategy": "model"},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "all_reduce"},
                          "forces": {"kind": "per_node", "reduce": "all_reduce"},
                          "virial": {"kind": "per_graph", "reduce": "all_reduce"},
                          "atomic_virials": {"kind": "per_node", "reduce": "all_reduce"}}}},
    {"name": "SPEC_EWALD_HALO",
     "about": "local real space plus reciprocal sums through system_sum: the energy is replicated on every rank, forces come from each rank's E / nprocs share",
     "spec": {"halo": "local", "compile": {"force_strategy": "global_energy"},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "none"}}}},
    {"name": "SPEC_PME_HALO",
     "about": "as SPEC_EWALD_HALO, on a fixed mesh",
     "spec": {"halo": "local", "compile": {"force_strategy": "global_energy", "static_shapes": true},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "none"}}}},
    {"name": "SPEC_DFTD3_HALO",
     "about": "two stages: coordination numbers refreshed to ghosts, then the energy",
     "spec": {"halo": "layerwise", "num_message_passing_layers": 2, "exchange_feature_width": 1,
              "compile": {"force_strategy": "node_energy"},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "all_reduce"}}}},
    {"name": "SPEC_MPNN_GP",
     "about": "graph partition: no ghost compute, padded shapes",
     "spec": {"halo": "gp", "compile": {"force_strategy": "node_energy", "static_shapes": true},
              "outputs": {"atomic_energies": {"kind": "per_node", "reduce": "owned_only"},
                          "energy": {"kind": "per_graph", "reduce": "all_reduce"}}}}
  ]
}
)json";

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
