/* ----------------------------------------------------------------------
   USER-NVALCHEMI: energy share, consolidation rules and output checks.
------------------------------------------------------------------------- */

#include "nvalchemi_consolidate.h"

#include <algorithm>
#include <cmath>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    const OutputTensor *find(const ModelOutputs &outputs, const std::string &key)
    {
      auto it = outputs.tensors.find(key);
      return it == outputs.tensors.end() ? nullptr : &it->second;
    }

    std::string shape_text(const std::vector<int64_t> &shape)
    {
      std::string text;
      for (int64_t n : shape) text += (text.empty() ? "" : ",") + std::to_string(n);
      return "[" + text + "]";
    }

    int64_t values_per_row(const OutputTensor &t)
    {
      int64_t width = 1;
      for (size_t d = 1; d < t.shape.size(); ++d) width *= t.shape[d];
      return width;
    }

    bool declared_as(const MLIPSpec &spec, const std::string &name, OutputKind kind)
    {
      auto it = spec.outputs.find(name);
      return it != spec.outputs.end() && it->second.kind == kind;
    }
  }    // namespace

  bool sums_ghost_rows(const OutputSpec &spec)
  { return spec.reduce == Reduce::ALL_REDUCE || (spec.reduce == Reduce::NONE && spec.autograd); }

  double row_weight(const OutputSpec &spec, int nprocs)
  { return spec.autograd && spec.reduce != Reduce::OWNED_ONLY ? 1.0 / nprocs : 1.0; }

  bool sums_over_ranks(const OutputSpec &spec)
  { return spec.reduce == Reduce::ALL_REDUCE || spec.autograd; }

  double rank_share_weight(const OutputSpec &spec, int nprocs)
  { return spec.reduce == Reduce::ALL_REDUCE && !spec.autograd ? 1.0 : 1.0 / nprocs; }

  int64_t consolidated_rows(const OutputSpec &spec, const Graph &graph)
  { return sums_ghost_rows(spec) ? graph.num_rows() : graph.n_owned; }

  EnergyShare energy_share(const MLIPSpec &spec, int nprocs)
  {
    const ForceStrategy strategy = *spec.compile.force_strategy;
    const std::string &node_energy = *spec.node_energy_key;
    EnergyShare share;
    share.differentiate = strategy != ForceStrategy::MODEL_INTERNAL;
    if (strategy != ForceStrategy::FRAMEWORK_FROM_GLOBAL_ENERGY &&
        declared_as(spec, node_energy, OutputKind::PER_NODE)) {
      share.key = node_energy;
      share.owned_rows = !sums_ghost_rows(spec.outputs.at(node_energy));
      share.weight = 1.0;
    } else if (strategy != ForceStrategy::FRAMEWORK_FROM_NODE_ENERGY &&
               declared_as(spec, "energy", OutputKind::PER_GRAPH)) {
      share.key = "energy";
      share.owned_rows = false;
      share.weight = rank_share_weight(spec.outputs.at("energy"), nprocs);
    } else {
      throw std::invalid_argument("force strategy '" + to_string(strategy) +
                                  "' needs the spec to declare the energy it uses: '" +
                                  node_energy +
                                  "' as per_node (node energies) or 'energy' as per_graph; add "
                                  "it with 'output <name> <kind> <reduce>'");
    }
    if (!share.differentiate && !declared_as(spec, "forces", OutputKind::PER_NODE))
      throw std::invalid_argument("force strategy 'model' needs the spec to declare output "
                                  "'forces' as per_node (e.g. 'output forces per_node "
                                  "all_reduce')");
    return share;
  }

  std::string describe_outputs(const ModelOutputs &outputs)
  {
    std::string text;
    for (const auto &entry : outputs.tensors)
      text += (text.empty() ? "" : ", ") + entry.first + " " + shape_text(entry.second.shape);
    return text.empty() ? "nothing" : text;
  }

  const OutputTensor &row_output(const ModelOutputs &outputs, const std::string &key,
                                 const Graph &graph, int64_t width, const std::string &purpose)
  {
    const OutputTensor *t = find(outputs, key);
    if (t && !t->shape.empty() && t->shape[0] == graph.num_rows() && values_per_row(*t) == width)
      return *t;
    throw OutputError(purpose + " needs model output '" + key + "' with " + std::to_string(width) +
                      " value" + (width == 1 ? "" : "s") + " on each of the " +
                      std::to_string(graph.num_rows()) +
                      " atom rows; the model returned: " + describe_outputs(outputs));
  }

  const OutputTensor &sized_output(const ModelOutputs &outputs, const std::string &key,
                                   int64_t size, const std::string &purpose)
  {
    const OutputTensor *t = find(outputs, key);
    if (t && static_cast<int64_t>(t->values.size()) == size) return *t;
    throw OutputError(purpose + " needs model output '" + key + "' with " + std::to_string(size) +
                      " value" + (size == 1 ? "" : "s") +
                      "; the model returned: " + describe_outputs(outputs));
  }

  void provide_framework_outputs(const MLIPSpec &spec, const EnergyShare &share,
                                 ModelOutputs &outputs)
  {
    auto declared = spec.outputs.find("energy");
    if (share.key == "energy" || declared == spec.outputs.end() ||
        declared->second.kind != OutputKind::PER_GRAPH ||
        declared->second.reduce != Reduce::ALL_REDUCE || find(outputs, "energy"))
      return;
    outputs.tensors["energy"] = {{1, 1}, {outputs.energy_share}};
  }

  bool declares_model_virial(const MLIPSpec &spec)
  {
    return declared_as(spec, "virial", OutputKind::PER_GRAPH) ||
        declared_as(spec, "stress", OutputKind::PER_GRAPH);
  }

  bool add_model_virial(const MLIPSpec &spec, const Graph &graph, const ModelOutputs &outputs,
                        double volume, int nprocs, const std::string &purpose, double virial[6])
  {
    for (const char *key : {"virial", "stress"}) {
      if (!declared_as(spec, key, OutputKind::PER_GRAPH)) continue;
      const auto &w = sized_output(outputs, key, 9, purpose).values;
      const double weight =
          rank_share_weight(spec.outputs.at(key), nprocs) * (key[0] == 'v' ? 1.0 : -volume);
      for (int v = 0; v < 6; ++v)
        virial[v] += weight * w[3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
      return true;
    }
    const std::string &node_key = *spec.node_virial_key;
    if (!declared_as(spec, node_key, OutputKind::PER_NODE)) return false;
    const OutputSpec &declared = spec.outputs.at(node_key);
    const auto &w = row_output(outputs, node_key, graph, 9, purpose).values;
    const double weight = row_weight(declared, nprocs);
    for (int64_t r = 0, n = consolidated_rows(declared, graph); r < n; ++r)
      for (int v = 0; v < 6; ++v)
        virial[v] += weight * w[9 * r + 3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
    return true;
  }

  namespace {
    // values[k] for k < count that are not finite: how many, and the first
    struct NonFinite {
      int64_t count = 0, first = -1;
    };
    NonFinite non_finite(const double *values, int64_t count)
    {
      NonFinite found;
      for (int64_t k = 0; k < count; ++k)
        if (!std::isfinite(values[k]) && found.count++ == 0) found.first = k;
      return found;
    }
  }    // namespace

  void check_finite(const MLIPSpec &spec, const EnergyShare &share, const Graph &graph,
                    const ModelOutputs &outputs, const std::function<int64_t(int64_t)> &atom_id)
  {
    using std::to_string;
    if (!std::isfinite(outputs.energy_share))
      throw OutputError("the model returned a non-finite energy (" +
                        to_string(outputs.energy_share) + ") for this rank's atoms");
    if (share.differentiate) {
      const double *g = outputs.edge_gradients.get();
      if (!g) return;
      const NonFinite bad = non_finite(g, 3 * graph.num_edges());
      if (!bad.count) return;
      const int64_t e = bad.first / 3;
      throw OutputError("non-finite forces: the energy's gradient is " + to_string(g[bad.first]) +
                        " on the edge from atom " + to_string(atom_id(graph.edges[2 * e])) +
                        " to atom " + to_string(atom_id(graph.edges[2 * e + 1])) + " (" +
                        to_string(bad.count) + " of the " + to_string(3 * graph.num_edges()) +
                        " edge-gradient values on this rank are not finite)");
    }
    const OutputTensor &f = row_output(outputs, "forces", graph, 3, "Force strategy 'model'");
    const int64_t rows = consolidated_rows(spec.outputs.at("forces"), graph);
    const NonFinite bad = non_finite(f.values.data(), 3 * rows);
    if (bad.count)
      throw OutputError("non-finite model forces: " + to_string(f.values[bad.first]) + " on atom " +
                        to_string(atom_id(bad.first / 3)) + " (" + to_string(bad.count) +
                        " of the " + to_string(3 * rows) +
                        " force values on this rank are not finite)");
  }

  void rank_share(const MLIPSpec &spec, const EnergyShare &share, const Graph &graph,
                  const ModelOutputs &outputs, double volume, int nprocs, Contribution &c,
                  std::vector<double> &row_forces)
  {
    c.energy = outputs.energy_share;
    if (share.differentiate) {
      const double *g = outputs.edge_gradients.get();
      edge_forces(graph, g, row_forces);
      c.has_virial = true;
      if (!g) return;
      for (int64_t k = 0; k < 3 * graph.num_edges(); ++k)
        c.force_scale = std::max(c.force_scale, std::fabs(g[k]));
      for (int64_t e = 0; e < graph.num_edges(); ++e)
        for (int v = 0; v < 6; ++v)
          c.virial[v] -=
              graph.edge_vectors[3 * e + VIRIAL_VOIGT[v][0]] * g[3 * e + VIRIAL_VOIGT[v][1]];
      return;
    }
    const OutputSpec &declared = spec.outputs.at("forces");
    const OutputTensor &f = row_output(outputs, "forces", graph, 3, "Force strategy 'model'");
    const double weight = row_weight(declared, nprocs);
    row_forces.assign(f.values.size(), 0.0);
    for (int64_t k = 0, n = 3 * consolidated_rows(declared, graph); k < n; ++k)
      row_forces[k] = weight * f.values[k];
    for (double component : row_forces)
      c.force_scale = std::max(c.force_scale, std::fabs(component));
    c.has_virial =
        add_model_virial(spec, graph, outputs, volume, nprocs, "The model's virial", c.virial);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
