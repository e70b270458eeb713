// Unit tests: the rules that turn one rank's model outputs into its share of the result (which
// energy each rank differentiates, which rows carry consolidated values, output checks,
// framework-provided outputs) and the row exchange of the exchange ops, with a test double for
// LAMMPS' communication.

#include "nvalchemi_outputs_consolidate.h"
#include "nvalchemi_halo_row_exchange.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// owned rows 0, 1 and ghost row 2 (atom 3; atom 2 is of a NULL type, not a row)
Graph two_owned_one_ghost()
{
  Graph g;
  g.n_owned = 2;
  g.row_atom = {0, 1, 3};
  g.positions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  g.atomic_numbers = {18, 18, 18};
  g.edges = {1, 0, 2, 0, 0, 1};
  g.edge_vectors = {-1, 0, 0, 0, -1, 0, 1, 0, 0};
  return g;
}

ModelOutputs outputs_with(std::initializer_list<std::pair<const std::string, OutputTensor>> list)
{
  ModelOutputs out;
  out.tensors = list;
  return out;
}

// the gradients of the three edges of two_owned_one_ghost, as a runner leaves them on the host
ModelOutputs with_edge_gradients()
{
  ModelOutputs out;
  const auto gradients =
      std::make_shared<std::vector<double>>(std::vector<double>{0.5, 0, 0, 0, 0.25, 0, -0.5, 0, 0});
  out.edge_gradients = {std::shared_ptr<const double>(gradients, gradients->data()), 9};
  return out;
}
}    // namespace

TEST(EnergyShare, NodeEnergiesOwnedOrAllRowsByTheirReduce)
{
  MLIPSpec spec = preset("SPEC_LJ_HALO").resolved();
  EnergyShare share = energy_share(spec, 4);
  EXPECT_EQ(share.key, "atomic_energies");
  EXPECT_TRUE(share.owned_rows);
  EXPECT_EQ(share.weight, 1.0);
  EXPECT_TRUE(share.differentiate);

  spec.outputs["atomic_energies"].reduce = Reduce::ALL_REDUCE;    // ghost rows hold partials
  EXPECT_FALSE(energy_share(spec, 4).owned_rows);
}

TEST(EnergyShare, ReplicatedGlobalEnergyCountsOncePerRankSum)
{
  const MLIPSpec ewald = preset("SPEC_EWALD_HALO").resolved();
  const EnergyShare share = energy_share(ewald, 4);
  EXPECT_EQ(share.key, "energy");
  EXPECT_FALSE(share.owned_rows);
  EXPECT_DOUBLE_EQ(share.weight, 0.25);
  // a per-rank partial energy counts as it is
  MLIPSpec partial = ewald;
  partial.outputs["energy"].reduce = Reduce::ALL_REDUCE;
  EXPECT_DOUBLE_EQ(energy_share(partial, 4).weight, 1.0);
}

TEST(EnergyShare, ModelForcesAndMissingDeclarationsAreChecked)
{
  const MLIPSpec uma = preset("SPEC_UMA_HALO").resolved();
  EXPECT_FALSE(energy_share(uma, 2).differentiate);

  MLIPSpec no_forces = uma;
  no_forces.outputs.erase("forces");
  EXPECT_THROW(energy_share(no_forces, 2), std::invalid_argument);

  MLIPSpec no_energy = preset("SPEC_LJ_HALO").resolved();
  no_energy.outputs.clear();
  EXPECT_THROW(energy_share(no_energy, 2), std::invalid_argument);
}

TEST(Consolidation, RowsAndWeightsFollowTheReduce)
{
  const Graph g = two_owned_one_ghost();
  EXPECT_EQ(consolidated_rows({OutputKind::PER_NODE, Reduce::ALL_REDUCE}, g), 3);
  EXPECT_EQ(consolidated_rows({OutputKind::PER_NODE, Reduce::OWNED_ONLY}, g), 2);
  EXPECT_EQ(consolidated_rows({OutputKind::PER_NODE, Reduce::NONE}, g), 2);
  EXPECT_DOUBLE_EQ(rank_sum_weight({OutputKind::PER_GRAPH, Reduce::NONE}, 8), 0.125);
  EXPECT_DOUBLE_EQ(rank_sum_weight({OutputKind::PER_GRAPH, Reduce::ALL_REDUCE}, 8), 1.0);
  EXPECT_FALSE(sums_over_ranks({OutputKind::PER_GRAPH, Reduce::NONE}));
  EXPECT_TRUE(sums_over_ranks({OutputKind::PER_GRAPH, Reduce::ALL_REDUCE}));
}

TEST(Consolidation, AutogradOutputsFollowTheToolkitsRule)
{
  // the toolkit's output_consolidation: an autograd per-node output is halo-reversed (ghost
  // rows summed into owners) and divided by the world size unless it is owned_only; an autograd
  // per-graph output is divided by the world size (and here summed over ranks)
  const Graph g = two_owned_one_ghost();
  const OutputSpec none{OutputKind::PER_NODE, Reduce::NONE, true};
  const OutputSpec all{OutputKind::PER_NODE, Reduce::ALL_REDUCE, true};
  const OutputSpec owned{OutputKind::PER_NODE, Reduce::OWNED_ONLY, true};
  EXPECT_TRUE(sums_ghost_rows(none));
  EXPECT_EQ(consolidated_rows(none, g), 3);
  EXPECT_EQ(consolidated_rows(all, g), 3);
  EXPECT_EQ(consolidated_rows(owned, g), 2);
  EXPECT_DOUBLE_EQ(row_weight(none, 4), 0.25);
  EXPECT_DOUBLE_EQ(row_weight(all, 4), 0.25);
  EXPECT_DOUBLE_EQ(row_weight(owned, 4), 1.0);
  EXPECT_DOUBLE_EQ(row_weight({OutputKind::PER_NODE, Reduce::NONE}, 4), 1.0);
  for (Reduce reduce : {Reduce::NONE, Reduce::ALL_REDUCE, Reduce::OWNED_ONLY}) {
    const OutputSpec graph_output{OutputKind::PER_GRAPH, reduce, true};
    EXPECT_TRUE(sums_over_ranks(graph_output));
    EXPECT_DOUBLE_EQ(rank_sum_weight(graph_output, 4), 0.25);
  }
}

TEST(Consolidation, RankShareOfAutogradModelForcesDividesByTheRankCount)
{
  // a model that differentiated an energy replicated by system_sum: every value is nprocs
  // times this rank's part
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();
  spec.outputs["forces"] = {OutputKind::PER_NODE, Reduce::NONE, true};
  spec.outputs["virial"] = {OutputKind::PER_GRAPH, Reduce::ALL_REDUCE, true};
  const Graph g = two_owned_one_ghost();
  ModelOutputs out = outputs_with({{"forces", {{3, 3}, {4, 8, 12, 4, 4, 4, 8, 0, 0}}},
                                   {"virial", {{1, 3, 3}, {8, 0, 0, 0, 4, 0, 0, 0, 12}}}});
  Contribution c;
  std::vector<double> rows;
  rank_contribution(spec, energy_share(spec, 4), g, out, 1.0, 4, c, rows);
  EXPECT_EQ(rows, (std::vector<double>{1, 2, 3, 1, 1, 1, 2, 0, 0}));    // ghost row kept
  EXPECT_DOUBLE_EQ(c.virial[0], 2.0);
  EXPECT_DOUBLE_EQ(c.virial[2], 3.0);
}

TEST(Consolidation, ModelVirialFromTheToolkitsStress)
{
  // stress = -W / V: a model that returns the toolkit's 'stress' instead of 'virial'
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();
  spec.outputs.erase("virial");
  spec.outputs["stress"] = {OutputKind::PER_GRAPH, Reduce::NONE};    // replicated
  const ModelOutputs out =
      outputs_with({{"stress", {{1, 3, 3}, {-1, 0.5, 0.25, 0.5, -2, 0.125, 0.25, 0.125, -3}}}});
  double virial[6] = {0, 0, 0, 0, 0, 0};
  ASSERT_TRUE(add_model_virial(spec, Graph(), out, 8.0, 2, "test", virial));
  // W = -V stress, counted 1/2 on each of 2 ranks
  EXPECT_DOUBLE_EQ(virial[0], 4.0);
  EXPECT_DOUBLE_EQ(virial[1], 8.0);
  EXPECT_DOUBLE_EQ(virial[2], 12.0);
  EXPECT_DOUBLE_EQ(virial[3], -2.0);    // xy
  EXPECT_DOUBLE_EQ(virial[4], -1.0);    // xz
  EXPECT_DOUBLE_EQ(virial[5], -0.5);    // yz
  // 'virial' wins when both are declared
  spec.outputs["virial"] = {OutputKind::PER_GRAPH, Reduce::ALL_REDUCE};
  EXPECT_THROW(add_model_virial(spec, Graph(), out, 8.0, 2, "test", virial), OutputError);
}

TEST(Consolidation, ModelVirialFromPerAtomVirialsWhenNoGlobalOneIsDeclared)
{
  // the toolkit's node_virial_key: per-atom virials summed into the system's virial
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();    // atomic_virials per_node all_reduce
  spec.outputs.erase("virial");
  const Graph g = two_owned_one_ghost();
  std::vector<double> node(27, 0.0);
  for (int r = 0; r < 3; ++r) node[9 * r] = node[9 * r + 5] = r + 1.0;    // xx and yz
  const ModelOutputs out = outputs_with({{"atomic_virials", {{3, 3, 3}, node}}});
  double virial[6] = {0, 0, 0, 0, 0, 0};
  ASSERT_TRUE(add_model_virial(spec, g, out, 1.0, 2, "test", virial));
  EXPECT_DOUBLE_EQ(virial[0], 6.0);    // all rows: ghost partials belong to this rank's sum
  EXPECT_DOUBLE_EQ(virial[5], 6.0);
  spec.outputs["atomic_virials"].reduce = Reduce::OWNED_ONLY;
  std::fill_n(virial, 6, 0.0);
  ASSERT_TRUE(add_model_virial(spec, g, out, 1.0, 2, "test", virial));
  EXPECT_DOUBLE_EQ(virial[0], 3.0);    // owned rows only
  spec.outputs.erase("atomic_virials");
  EXPECT_FALSE(add_model_virial(spec, g, out, 1.0, 2, "test", virial));
}

TEST(Consolidation, OutputChecksNameWhatTheModelReturned)
{
  const Graph g = two_owned_one_ghost();
  const ModelOutputs out = outputs_with(
      {{"atomic_energies", {{3}, {1, 2, 3}}}, {"forces", {{2, 3}, {0, 0, 0, 0, 0, 0}}}});
  EXPECT_EQ(row_output(out, "atomic_energies", g, 1, "x").values.size(), 3u);
  try {
    row_output(out, "forces", g, 3, "Force strategy 'model'");
    FAIL() << "a forces output with 2 rows for 3 atom rows was accepted";
  } catch (OutputError &e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("Force strategy 'model' needs model output 'forces' with 3 values on each "
                        "of the 3 atom rows"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("the model returned: atomic_energies [3], forces [2,3]"), std::string::npos)
        << text;
  }
  EXPECT_THROW(sized_output(out, "energy", 1, "compute nvalchemi/global"), OutputError);
  EXPECT_EQ(describe_outputs(ModelOutputs()), "nothing");
}

TEST(Consolidation, FrameworkProvidesTheEnergyOfANodeEnergyModel)
{
  const MLIPSpec spec = preset("SPEC_LJ_HALO").resolved();    // declares energy all_reduce
  ModelOutputs out = outputs_with({{"atomic_energies", {{3}, {1, 2, 3}}}});
  out.energy_share = 3.0;
  provide_framework_outputs(spec, energy_share(spec, 2), out);
  ASSERT_TRUE(out.tensors.count("energy"));
  EXPECT_EQ(out.tensors.at("energy").values, std::vector<double>{3.0});

  // a model's own energy is kept; a replicated energy is never made up from a rank's share
  ModelOutputs own = outputs_with({{"energy", {{1}, {7.0}}}});
  provide_framework_outputs(spec, energy_share(spec, 2), own);
  EXPECT_EQ(own.tensors.at("energy").values, std::vector<double>{7.0});
  MLIPSpec replicated = spec;
  replicated.outputs["energy"].reduce = Reduce::NONE;
  ModelOutputs none = outputs_with({{"atomic_energies", {{3}, {1, 2, 3}}}});
  provide_framework_outputs(replicated, energy_share(replicated, 2), none);
  EXPECT_FALSE(none.tensors.count("energy"));
}

TEST(Consolidation, RankShareOfModelForcesKeepsOwnedRowsOfOwnedOnlyForces)
{
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();
  spec.outputs["forces"].reduce = Reduce::OWNED_ONLY;
  spec.outputs["virial"].reduce = Reduce::NONE;    // replicated: each rank counts 1/nprocs
  const Graph g = two_owned_one_ghost();
  ModelOutputs out = outputs_with({{"forces", {{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}},
                                   {"virial", {{1, 3, 3}, {8, 1, 2, 1, 4, 3, 2, 3, 6}}}});
  Contribution c;
  std::vector<double> rows;
  rank_contribution(spec, energy_share(spec, 2), g, out, 1.0, 2, c, rows);
  EXPECT_EQ(rows, (std::vector<double>{1, 2, 3, 4, 5, 6, 0, 0, 0}));
  ASSERT_TRUE(c.has_virial);
  EXPECT_DOUBLE_EQ(c.virial[0], 4.0);    // xx / 2 ranks
  EXPECT_DOUBLE_EQ(c.virial[5], 1.5);    // yz
  EXPECT_DOUBLE_EQ(c.force_scale, 6.0);
}

TEST(Consolidation, RankShareOfEdgeGradientsGivesForcesAndVirial)
{
  const MLIPSpec spec = preset("SPEC_LJ_HALO").resolved();
  const Graph g = two_owned_one_ghost();
  const ModelOutputs out = with_edge_gradients();
  Contribution c;
  std::vector<double> rows;
  rank_contribution(spec, energy_share(spec, 1), g, out, 1.0, 1, c, rows);
  // edge 1 -> 0 with g (0.5,0,0) pulls -g on row 0 and +g on row 1, and so on
  EXPECT_EQ(rows, (std::vector<double>{-1, -0.25, 0, 1, 0, 0, 0, 0.25, 0}));
  EXPECT_DOUBLE_EQ(c.virial[0], -(-1 * 0.5 + 1 * -0.5));    // -sum r_x g_x
  EXPECT_DOUBLE_EQ(c.virial[1], -(-1 * 0.25));
}

namespace {
// what the pair style's tallies receive from consolidate_forces
struct RecordingConsumer : ForceConsumer {
  explicit RecordingConsumer(bool virial) : virial_wanted(virial) {}
  void edge_forces(const Graph &graph, const ModelOutputs &outputs, double *virial) override
  {
    edge_gradients = outputs.host_edge_gradients();
    if (virial) add_edge_virial(graph, edge_gradients, virial);
  }
  void row_forces(const Graph &, const double *f, int64_t n, double w) override
  {
    forces = f;
    rows = n;
    weight = w;
  }
  bool wants_virial() const override { return virial_wanted; }
  void virial(const double w[6]) override { std::copy_n(w, 6, given); ++virials; }
  bool virial_wanted;
  const double *edge_gradients = nullptr, *forces = nullptr;
  int64_t rows = -1;
  double weight = 0.0, given[6] = {};
  int virials = 0;
};
}    // namespace

TEST(Consolidation, TalliesAndValidationShareOnePath)
{
  // model forces: the consolidated rows with their row weight; a virial only when wanted, and
  // a wanted virial the spec does not declare is reported, not made up
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();
  spec.outputs.erase("virial");
  spec.outputs.erase("stress");
  spec.outputs.erase(*spec.node_virial_key);
  const Graph g = two_owned_one_ghost();
  const EnergyShare share = energy_share(spec, 2);
  ModelOutputs out = outputs_with({{"forces", {{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}});
  RecordingConsumer without(false), with(true);
  EXPECT_TRUE(consolidate_forces({spec, share, g, out, 1.0, 2}, without));
  EXPECT_EQ(without.forces, out.tensors.at("forces").values.data());
  EXPECT_EQ(without.rows, consolidated_rows(spec.outputs.at("forces"), g));
  EXPECT_DOUBLE_EQ(without.weight, row_weight(spec.outputs.at("forces"), 2));
  EXPECT_EQ(without.virials, 0);
  EXPECT_FALSE(consolidate_forces({spec, share, g, out, 1.0, 2}, with));
  EXPECT_EQ(with.virials, 0);

  // framework forces: the edge gradients as they are, the virial -r (x) g summed over edges,
  // the one validate's Contribution holds
  const MLIPSpec lj = preset("SPEC_LJ_HALO").resolved();
  const ModelOutputs edges = with_edge_gradients();
  RecordingConsumer tally(true);
  EXPECT_TRUE(consolidate_forces({lj, energy_share(lj, 1), g, edges, 1.0, 1}, tally));
  EXPECT_EQ(tally.edge_gradients, edges.edge_gradients.get());
  Contribution c;
  std::vector<double> rows;
  rank_contribution(lj, energy_share(lj, 1), g, edges, 1.0, 1, c, rows);
  EXPECT_EQ(tally.virials, 1);
  for (int v = 0; v < 6; ++v) EXPECT_EQ(tally.given[v], c.virial[v]);
}

TEST(Consolidation, PerAtomEnergiesAndVirialsSumToTheGlobalOnes)
{
  // edge gradients: each edge's -r (x) g split between its two atoms (atom 3 is the ghost row's)
  const MLIPSpec lj = preset("SPEC_LJ_HALO").resolved();
  const Graph g = two_owned_one_ghost();
  const ModelOutputs edges = with_edge_gradients();
  std::vector<std::vector<double>> vatom(4, std::vector<double>(6, 0.0));
  std::vector<double *> rows{vatom[0].data(), vatom[1].data(), vatom[2].data(), vatom[3].data()};
  ASSERT_TRUE(add_atom_virials({lj, energy_share(lj, 1), g, edges, 1.0, 1}, rows.data()));
  double global[6] = {0, 0, 0, 0, 0, 0};
  add_edge_virial(g, edges.edge_gradients.get(), global);
  for (int v = 0; v < 6; ++v)
    EXPECT_DOUBLE_EQ(vatom[0][v] + vatom[1][v] + vatom[3][v], global[v]) << v;
  EXPECT_DOUBLE_EQ(vatom[0][0], 0.5 * (-1 * -0.5) + 0.5 * (1 * 0.5));    // edges 1->0 and 0->1
  EXPECT_EQ(vatom[2], std::vector<double>(6, 0.0));    // atom 2 is not a row

  // model forces: the per-atom virials the spec declares, on their consolidated rows and with
  // their row weight; the node energies likewise, without a weight
  MLIPSpec spec = preset("SPEC_UMA_HALO").resolved();    // atomic_virials per_node all_reduce
  std::vector<double> node(27, 0.0);
  for (int r = 0; r < 3; ++r) node[9 * r] = r + 1.0;
  const ModelOutputs out = outputs_with(
      {{"atomic_virials", {{3, 3, 3}, node}}, {*spec.node_energy_key, {{3}, {1, 2, 4}}}});
  for (auto &atom : vatom) std::fill(atom.begin(), atom.end(), 0.0);
  const EnergyShare share = energy_share(spec, 2);
  ASSERT_TRUE(add_atom_virials({spec, share, g, out, 1.0, 2}, rows.data()));
  const double weight = row_weight(spec.outputs.at("atomic_virials"), 2);
  EXPECT_DOUBLE_EQ(vatom[0][0], weight * 1.0);
  EXPECT_DOUBLE_EQ(vatom[3][0], weight * 3.0);    // all_reduce: the ghost row's partial too
  std::vector<double> eatom(4, 0.0);
  spec.outputs[*spec.node_energy_key] = {OutputKind::PER_NODE, Reduce::OWNED_ONLY};
  ASSERT_TRUE(add_atom_energies({spec, share, g, out, 1.0, 2}, eatom.data()));
  EXPECT_EQ(eatom, (std::vector<double>{1, 2, 0, 0}));
  spec.outputs[*spec.node_energy_key].reduce = Reduce::ALL_REDUCE;    // ghost partials too
  ASSERT_TRUE(add_atom_energies({spec, share, g, out, 1.0, 2}, eatom.data()));
  EXPECT_EQ(eatom, (std::vector<double>{2, 4, 0, 4}));

  // what the spec does not declare is reported, not made up
  spec.outputs.erase("atomic_virials");
  spec.outputs.erase(*spec.node_energy_key);
  EXPECT_FALSE(add_atom_virials({spec, share, g, out, 1.0, 2}, rows.data()));
  EXPECT_FALSE(add_atom_energies({spec, share, g, out, 1.0, 2}, eatom.data()));
}

TEST(Consolidation, NonFiniteResultsNameTheFirstAtomAndCountTheRest)
{
  const Graph g = two_owned_one_ghost();
  const auto id = [&](int64_t row) {
    return int64_t{100} + g.row_atom[row];
  };
  const MLIPSpec lj = preset("SPEC_LJ_HALO").resolved();
  const auto message = [](const auto &check) {
    try {
      check();
    } catch (OutputError &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  ModelOutputs out;
  const auto gradients = std::make_shared<std::vector<double>>(
      std::vector<double>{0.5, 0, 0, 0, NAN, NAN, -0.5, 0, 0});
  out.edge_gradients = {std::shared_ptr<const double>(gradients, gradients->data()), 9};
  out.energy_share = 1.0;
  // edge 1 (row 2 -> row 0: atoms 103 -> 100) holds the first of two NaNs
  EXPECT_EQ(message([&] {
              check_finite(lj, energy_share(lj, 1), g, out, id);
            }),
            "non-finite forces: the energy's gradient is nan on the edge from atom 103 to atom "
            "100 (2 of the 9 edge-gradient values on this rank are not finite)");
  out.energy_share = INFINITY;
  EXPECT_EQ(message([&] {
              check_finite(lj, energy_share(lj, 1), g, out, id);
            }),
            "the model returned a non-finite energy (inf) for this rank's atoms");

  // model forces: only the rows the tally reads (owned rows of an owned_only output) count
  MLIPSpec uma = preset("SPEC_UMA_HALO").resolved();
  uma.outputs["forces"].reduce = Reduce::OWNED_ONLY;
  ModelOutputs own = outputs_with({{"forces", {{3, 3}, {1, 2, 3, 4, -INFINITY, 6, NAN, 8, 9}}}});
  EXPECT_EQ(message([&] {
              check_finite(uma, energy_share(uma, 1), g, own, id);
            }),
            "non-finite model forces: -inf on atom 101 (1 of the 6 force values on this rank are "
            "not finite)");
  own.tensors.at("forces").values[4] = 5;
  EXPECT_EQ(message([&] {
              check_finite(uma, energy_share(uma, 1), g, own, id);
            }),
            "(accepted)");
}

namespace {
// Two "ranks" folded into one array: atoms 0-1 owned; atom 2 a NULL-type owned atom; atom 3 the
// ghost image of atom 0; atom 4 a ghost of a NULL type.
class FoldedComm : public AtomComm {
 public:
  int num_atoms() const override { return 5; }
  void forward(double *values, int width) override
  {
    ++calls;
    for (int c = 0; c < width; ++c) values[3 * width + c] = values[0 * width + c];
  }
  void reverse(double *values, int width, Wire as) override
  {
    ++calls;
    wire = as;
    for (int c = 0; c < width; ++c) values[0 * width + c] += values[3 * width + c];
  }
  void sum_over_ranks(double *values, int n) override
  {
    for (int k = 0; k < n; ++k) values[k] *= 2;    // two ranks holding the same value
  }
  void broadcast(double *, int) override {}    // both ranks hold the same values
  void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                        int n) override
  { same_on_every_rank(values, lowest, highest, n); }
  int calls = 0;
  Wire wire = Wire::FLOAT64;    // what the last reverse was to send
};
}    // namespace

TEST(RowExchange, RefreshCopiesOwnersIntoGhostRowsThroughAtoms)
{
  const Graph g = two_owned_one_ghost();
  FoldedComm comm;
  RowExchange exchange(g, comm, false);
  std::vector<double> rows = {1, 2, 3, 4, -1, -1};    // width 2; the ghost row is stale
  exchange.refresh(rows.data(), 2);
  EXPECT_EQ(rows, (std::vector<double>{1, 2, 3, 4, 1, 2}));
  EXPECT_EQ(comm.calls, 1);
  EXPECT_EQ(exchange.widest, 2);
}

TEST(RowExchange, SumIntoOwnersAddsGhostPartialsAndKeepsGhostRows)
{
  const Graph g = two_owned_one_ghost();
  FoldedComm comm;
  RowExchange exchange(g, comm, false);
  std::vector<double> rows = {1, 2, 3, 10, 20, 30, 100, 200, 300};    // width 3
  exchange.sum_into_owners(rows.data(), 3, Wire::FLOAT32);
  EXPECT_EQ(rows, (std::vector<double>{101, 202, 303, 10, 20, 30, 100, 200, 300}));
  EXPECT_EQ(comm.wire, Wire::FLOAT32);
  double total[2] = {1.5, -2.0};
  exchange.sum_over_ranks(total, 2);
  EXPECT_EQ(total[0], 3.0);
  EXPECT_EQ(total[1], -4.0);
  EXPECT_GE(exchange.seconds, 0.0);
}
