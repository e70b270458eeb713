/* ----------------------------------------------------------------------
   USER-NVALCHEMI: energy share, consolidation rules and output checks.
------------------------------------------------------------------------- */

#include "nvalchemi_outputs_consolidate.h"

#include "nvalchemi_halo_row_exchange.h"

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

    // The model's per-atom virials (node_virial_key [N,3,3] per_node) on their consolidated
    // rows, with their row weight: add(row, v, value) for each of LAMMPS' components v (xx yy
    // zz xy xz yz). False when the spec does not declare them; throws OutputError, naming
    // `purpose`, when the model did not return them so.
    template <class Add>
    bool node_virials(const MLIPSpec &spec, const Graph &graph, const ModelOutputs &outputs,
                      int nprocs, const std::string &purpose, Add &&add)
    {
      const std::string &key = *spec.node_virial_key;
      if (!declared_as(spec, key, OutputKind::PER_NODE)) return false;
      const OutputSpec &declared = spec.outputs.at(key);
      const auto &w = row_output(outputs, key, graph, 9, purpose).values;
      const double weight = row_weight(declared, nprocs);
      for (int64_t r = 0, n = consolidated_rows(declared, graph); r < n; ++r)
        for (int v = 0; v < 6; ++v)
          add(r, v, weight * w[9 * r + 3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]]);
      return true;
    }
  }    // namespace

  bool sums_ghost_rows(const OutputSpec &spec)
  { return spec.reduce == Reduce::ALL_REDUCE || (spec.reduce == Reduce::NONE && spec.autograd); }

  double row_weight(const OutputSpec &spec, int nprocs)
  { return spec.autograd && spec.reduce != Reduce::OWNED_ONLY ? 1.0 / nprocs : 1.0; }

  bool sums_over_ranks(const OutputSpec &spec)
  { return spec.reduce == Reduce::ALL_REDUCE || spec.autograd; }

  double rank_sum_weight(const OutputSpec &spec, int nprocs)
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
      share.weight = rank_sum_weight(spec.outputs.at("energy"), nprocs);
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
          rank_sum_weight(spec.outputs.at(key), nprocs) * (key[0] == 'v' ? 1.0 : -volume);
      for (int v = 0; v < 6; ++v)
        virial[v] += weight * w[3 * VIRIAL_VOIGT[v][0] + VIRIAL_VOIGT[v][1]];
      return true;
    }
    return node_virials(spec, graph, outputs, nprocs, purpose, [virial](int64_t, int v, double w) {
      virial[v] += w;
    });
  }

  bool add_atom_energies(const RankResult &result, double *eatom)
  {
    const Graph &graph = result.graph;
    const std::string &key = *result.spec.node_energy_key;
    if (!declared_as(result.spec, key, OutputKind::PER_NODE)) return false;
    const auto &energies = row_output(result.outputs, key, graph, 1, "Per-atom energy").values;
    const int64_t rows = consolidated_rows(result.spec.outputs.at(key), graph);
    for (int64_t r = 0; r < rows; ++r) eatom[graph.row_atom[r]] += energies[r];
    return true;
  }

  bool add_atom_virials(const RankResult &result, double *const *vatom)
  {
    const Graph &graph = result.graph;
    if (!result.share.differentiate)
      return node_virials(result.spec, graph, result.outputs, result.nprocs, "Per-atom virials",
                          [&](int64_t r, int v, double w) {
                            vatom[graph.row_atom[r]][v] += w;
                          });
    const double *g = result.outputs.host_edge_gradients();
    if (!g) return true;
    const int64_t *edges = graph.edges.data();
    const double *rij = graph.edge_vectors.data();
    for (int64_t e = 0; e < graph.num_edges(); ++e) {
      const int i = graph.row_atom[edges[2 * e + 1]], j = graph.row_atom[edges[2 * e]];
      const double *r = rij + 3 * e, *ge = g + 3 * e;
      for (int v = 0; v < 6; ++v) {
        const double half = 0.5 * (r[VIRIAL_VOIGT[v][0]] * -ge[VIRIAL_VOIGT[v][1]]);
        vatom[i][v] += half;
        vatom[j][v] += half;
      }
    }
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
      // gradients left on the device only are finite: whoever keeps them there copies them to
      // the host when one is not (PairNVAlchemi::step_to_host)
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

  bool consolidate_forces(const RankResult &result, ForceConsumer &consumer)
  {
    const MLIPSpec &spec = result.spec;
    const Graph &graph = result.graph;
    const ModelOutputs &outputs = result.outputs;
    const int nprocs = result.nprocs;
    if (result.share.differentiate) {
      double w[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
      const bool virial = consumer.wants_virial();
      consumer.edge_forces(graph, outputs, virial ? w : nullptr);
      if (virial) consumer.virial(w);
      return true;
    }
    const OutputSpec &declared = spec.outputs.at("forces");
    const OutputTensor &f = row_output(outputs, "forces", graph, 3, "Force strategy 'model'");
    consumer.row_forces(graph, f.values.data(), consolidated_rows(declared, graph),
                        row_weight(declared, nprocs));
    if (!consumer.wants_virial()) return true;
    double w[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (!add_model_virial(spec, graph, outputs, result.volume, nprocs, "The global virial", w))
      return false;
    consumer.virial(w);
    return true;
  }

  namespace {
    // a rank's share as forces on the graph's rows and a virial, with the largest force term
    class ContributionConsumer : public ForceConsumer {
     public:
      ContributionConsumer(Contribution &c, std::vector<double> &rows) : c(c), rows(rows) {}
      void edge_forces(const Graph &graph, const ModelOutputs &outputs, double *virial) override
      {
        const double *g = outputs.host_edge_gradients();
        NVAlchemi::edge_forces(graph, g, rows);
        if (virial) add_edge_virial(graph, g, virial);
        for (int64_t k = 0; g && k < 3 * graph.num_edges(); ++k)
          c.force_scale = std::max(c.force_scale, std::fabs(g[k]));
      }
      void row_forces(const Graph &graph, const double *forces, int64_t n, double weight) override
      {
        rows.assign(3 * static_cast<size_t>(graph.num_rows()), 0.0);
        for (int64_t k = 0; k < 3 * n; ++k) {
          rows[k] = weight * forces[k];
          c.force_scale = std::max(c.force_scale, std::fabs(rows[k]));
        }
      }
      bool wants_virial() const override { return true; }
      void virial(const double w[6]) override
      {
        c.has_virial = true;
        for (int v = 0; v < 6; ++v) c.virial[v] += w[v];
      }

     private:
      Contribution &c;
      std::vector<double> &rows;
    };
  }    // namespace

  void rank_contribution(const MLIPSpec &spec, const EnergyShare &share, const Graph &graph,
                         const ModelOutputs &outputs, double volume, int nprocs, Contribution &c,
                         std::vector<double> &row_forces)
  {
    c.energy = outputs.energy_share;
    ContributionConsumer consumer(c, row_forces);
    consolidate_forces({spec, share, graph, outputs, volume, nprocs}, consumer);
  }

  void consolidated_per_atom(const RankResult &result, const std::string &name, int width,
                             AtomComm &atoms, std::vector<double> &values)
  {
    const OutputSpec &declared = result.spec.outputs.at(name);
    const OutputTensor &t =
        row_output(result.outputs, name, result.graph, width, "compute nvalchemi/atom");
    rows_to_atoms(result.graph, t.values.data(), consolidated_rows(declared, result.graph), width,
                  atoms.num_atoms(), values);
    if (sums_ghost_rows(declared)) atoms.reverse(values.data(), width, Wire::FLOAT64);
    const double weight = row_weight(declared, result.nprocs);
    if (weight != 1.0)
      for (double &value : values) value *= weight;
  }

  void consolidated_global(const RankResult &result, const std::string &name, int size,
                           AtomComm &atoms, std::vector<double> &values)
  {
    const OutputSpec &declared = result.spec.outputs.at(name);
    values = sized_output(result.outputs, name, size, "compute nvalchemi/global").values;
    if (declared.kind != OutputKind::PER_GRAPH) return;    // global: each rank's own value
    if (sums_over_ranks(declared)) {
      const double weight = rank_sum_weight(declared, result.nprocs);
      for (double &value : values) value *= weight;
      atoms.sum_over_ranks(values.data(), size);
    } else {    // already global and replicated: every rank reports rank 0's copy, counted once
      atoms.broadcast(values.data(), size);
    }
  }

  void decomposed_contribution(const RankResult &result, int nlocal, AtomComm &atoms,
                               Contribution &c, std::vector<double> &row_forces)
  {
    c = Contribution();
    rank_contribution(result.spec, result.share, result.graph, result.outputs, result.volume,
                      result.nprocs, c, row_forces);
    std::vector<double> atom_forces;
    rows_to_atoms(result.graph, row_forces.data(), result.graph.num_rows(), 3, atoms.num_atoms(),
                  atom_forces);
    atoms.reverse(atom_forces.data(), 3, Wire::FLOAT64);
    c.forces.assign(atom_forces.begin(), atom_forces.begin() + 3 * nlocal);
    double sums[7] = {c.energy,    c.virial[0], c.virial[1], c.virial[2],
                      c.virial[3], c.virial[4], c.virial[5]};
    atoms.sum_over_ranks(sums, 7);
    c.energy = sums[0];
    std::copy_n(sums + 1, 6, c.virial);
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
