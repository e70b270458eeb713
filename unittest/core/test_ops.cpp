// Unit tests: the exchange ops torch.ops.nvalchemi.* through LibTorch's dispatcher, on a test
// double of the domain decomposition, in both kinds of halo: ghost rows that hold partials owed
// to their owners (halo modes local and layerwise) and owned rows that are complete (deep).
// Every op is linear, so its backward must be its adjoint: <f(x), v> = <x, f^T v>.

#include "nvalchemi_contract_tables.h"
#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_halo_ops_torch.h"

#include "gtest/gtest.h"

#include <torch/torch.h>

#include <vector>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// Rows 0 and 1 owned, row 2 a ghost copy of row 0, row 3 a ghost copy of row 1: one process
// standing in for two ranks that see each other's atoms.
class FoldedExchange : public Exchanger {
 public:
  explicit FoldedExchange(bool complete) : complete(complete) {}
  int64_t num_rows() const override { return 4; }
  int64_t num_owned() const override { return 2; }
  void refresh(double *rows, int width) override
  {
    refresh_widths.push_back(width);
    for (int c = 0; c < width; ++c) {
      rows[2 * width + c] = rows[c];
      rows[3 * width + c] = rows[width + c];
    }
  }
  void sum_into_owners(double *rows, int width, Wire wire) override
  {
    sum_wires.push_back(wire);
    for (int c = 0; c < width; ++c) {
      rows[c] += rows[2 * width + c];
      rows[width + c] += rows[3 * width + c];
    }
  }
  void sum_over_ranks(double *values, int n) override
  {
    for (int k = 0; k < n; ++k) values[k] *= 3.0;    // three ranks holding the same value
  }
  void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                        int n) override
  { same_on_every_rank(values, lowest, highest, n); }
  bool owned_rows_complete() const override { return complete; }
  bool complete;
  std::vector<int> refresh_widths;    // the width of each refresh, in 8-byte words
  std::vector<Wire> sum_wires;        // what each sum's partials were sent as
};

// torch.ops.nvalchemi.<op>, registered as a model load would
c10::OperatorHandle exchange_op(const char *op)
{
  register_exchange_ops();
  return c10::Dispatcher::singleton().findSchemaOrThrow((std::string("nvalchemi::") + op).c_str(),
                                                        "");
}

torch::Tensor call(const char *op, const torch::Tensor &x)
{ return exchange_op(op).typed<at::Tensor(const at::Tensor &)>().call(x); }

// f(x) and f^T(v) through autograd
std::pair<torch::Tensor, torch::Tensor> forward_and_adjoint(const char *op, const torch::Tensor &x,
                                                            const torch::Tensor &v)
{
  auto leaf = x.clone().requires_grad_(true);
  auto y = call(op, leaf);
  (y * v).sum().backward();
  return {y.detach(), leaf.grad()};
}

struct ExchangeScope {
  explicit ExchangeScope(Exchanger *ex) { set_current_exchanger(ex); }
  ~ExchangeScope() { set_current_exchanger(nullptr); }
};

const torch::Tensor X =
    torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {10.0, 20.0}, {30.0, 40.0}}, torch::kFloat64);
const torch::Tensor V =
    torch::tensor({{0.5, -1.0}, {2.0, 0.25}, {-3.0, 1.5}, {4.0, -0.5}}, torch::kFloat64);
}    // namespace

// LibTorch holds exactly the contract table's schemas, which nvalchemi_lammps.ops registers in
// Python too (unittest/lammps/contract_tables.py checks that side)
TEST(ExchangeOps, RegisteredWithTheContractTablesSchemas)
{
  register_exchange_ops();
  int checked = 0;
  for (int k = 0;; ++k) {
    const std::string schema(contract_list_item("exchange_ops", k));
    if (schema.empty()) break;
    const std::string name = schema.substr(0, schema.find('('));
    const auto op = c10::Dispatcher::singleton().findSchema({"nvalchemi::" + name, ""});
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_EQ(c10::toString(op->schema()), "nvalchemi::" + schema);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST(ExchangeOps, RefreshCopiesOwnersAndGivesGhostGradientsToThem)
{
  for (bool complete : {false, true}) {
    FoldedExchange ex(complete);
    ExchangeScope scope(&ex);
    auto [y, adjoint] = forward_and_adjoint("refresh_neighbors", X, V);
    EXPECT_TRUE(torch::equal(
        y, torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {1.0, 2.0}, {3.0, 4.0}}, torch::kFloat64)));
    EXPECT_TRUE(torch::equal(
        adjoint,
        torch::tensor({{-2.5, 0.5}, {6.0, -0.25}, {0.0, 0.0}, {0.0, 0.0}}, torch::kFloat64)));
    EXPECT_DOUBLE_EQ((y * V).sum().item<double>(), (X * adjoint).sum().item<double>());
  }
}

// A refresh moves rows in the tensor's own dtype, as whole 8-byte words of its bytes: a float32
// row of 3 values in 2 words, an int64 beyond double's 2^53 exactly; the backward pass sums
// ghost-row gradients into owners, in float64, and hands them back in the tensor's dtype.
TEST(ExchangeOps, RefreshMovesRowsInTheirOwnDtype)
{
  FoldedExchange ex(false);
  ExchangeScope scope(&ex);
  const auto third = torch::tensor({{1.0f / 3, 2.0f, -7.5f}, {1e-30f, 3.0f, 4.0f},
                                    {0.0f, 0.0f, 0.0f}, {9.0f, 9.0f, 9.0f}});
  auto [y, adjoint] = forward_and_adjoint("refresh_neighbors", third, torch::ones_like(third));
  EXPECT_EQ(y.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(y.narrow(0, 2, 2), third.narrow(0, 0, 2)));
  EXPECT_TRUE(torch::equal(y.narrow(0, 0, 2), third.narrow(0, 0, 2)));
  EXPECT_EQ(adjoint.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(adjoint, torch::tensor({{2.0f, 2.0f, 2.0f}, {2.0f, 2.0f, 2.0f},
                                                   {0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}})));

  const int64_t big = (int64_t(1) << 53) + 1;    // not a double
  const int64_t none = 0;
  const auto ids = torch::tensor({big, -big, none, none}, torch::kInt64);
  EXPECT_TRUE(torch::equal(call("refresh_neighbors", ids),
                           torch::tensor({big, -big, big, -big}, torch::kInt64)));

  EXPECT_TRUE(torch::equal(call("refresh_neighbors", X),
                           torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {1.0, 2.0}, {3.0, 4.0}},
                                         torch::kFloat64)));
  EXPECT_EQ(ex.refresh_widths, (std::vector<int>{2, 1, 2}));
  // what sums rows sends a float32 tensor's partials as float32, a float64 tensor's as float64
  EXPECT_EQ(ex.sum_wires, (std::vector<Wire>{Wire::FLOAT32}));
  call("scatter_to_owners", X);
  EXPECT_EQ(ex.sum_wires, (std::vector<Wire>{Wire::FLOAT32, Wire::FLOAT64}));
}

TEST(ExchangeOps, ScatterSumsGhostPartialsUnlessOwnedRowsAreComplete)
{
  {
    FoldedExchange partials(false);    // halo modes local and layerwise
    ExchangeScope scope(&partials);
    auto [y, adjoint] = forward_and_adjoint("scatter_to_owners", X, V);
    EXPECT_TRUE(torch::equal(
        y,
        torch::tensor({{11.0, 22.0}, {33.0, 44.0}, {11.0, 22.0}, {33.0, 44.0}}, torch::kFloat64)));
    EXPECT_DOUBLE_EQ((y * V).sum().item<double>(), (X * adjoint).sum().item<double>());
  }
  {
    FoldedExchange complete(true);    // halo mode deep: ghost rows only refreshed
    ExchangeScope scope(&complete);
    auto [y, adjoint] = forward_and_adjoint("scatter_to_owners", X, V);
    EXPECT_TRUE(torch::equal(
        y, torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {1.0, 2.0}, {3.0, 4.0}}, torch::kFloat64)));
    EXPECT_DOUBLE_EQ((y * V).sum().item<double>(), (X * adjoint).sum().item<double>());
  }
}

TEST(ExchangeOps, SystemSumReducesOverRanksInEveryHalo)
{
  for (bool complete : {false, true}) {
    FoldedExchange ex(complete);
    ExchangeScope scope(&ex);
    auto leaf = X.clone().requires_grad_(true);
    const auto op = exchange_op("system_sum").typed<at::Tensor(const at::Tensor &, int64_t)>();
    auto total = op.call(leaf, SCOPE_OWNED);
    EXPECT_TRUE(torch::equal(total.detach(), torch::tensor({12.0, 18.0}, torch::kFloat64)));
    total.sum().backward();
    // each rank's gradient is all-reduced: three ranks, owned rows only
    EXPECT_TRUE(torch::equal(
        leaf.grad(),
        torch::tensor({{3.0, 3.0}, {3.0, 3.0}, {0.0, 0.0}, {0.0, 0.0}}, torch::kFloat64)));
    EXPECT_TRUE(torch::equal(op.call(X, SCOPE_LOCAL), torch::tensor({4.0, 6.0}, torch::kFloat64)));
  }
}

TEST(ExchangeOps, OutsideAModelEvaluationTheyAreAnError)
{
  try {
    call("refresh_neighbors", X);
    FAIL() << "an exchange op ran without an exchanger";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("was called outside a pair_style nvalchemi model "
                                         "evaluation"),
              std::string::npos)
        << e.what();
  }
}

namespace {
// FoldedExchange whose other "ranks" have made one exchange call more than this one, and which
// counts what it communicates
class BehindExchange : public FoldedExchange {
 public:
  BehindExchange() : FoldedExchange(false) {}
  void refresh(double *rows, int width) override
  {
    ++communications;
    FoldedExchange::refresh(rows, width);
  }
  void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                        int n) override
  {
    FoldedExchange::range_over_ranks(values, lowest, highest, n);
    highest[0] = values[0] + 1;
  }
  int communications = 0;
};
}    // namespace

TEST(ExchangeOps, RanksAgreeOnEveryCallThatCommunicates)
{
  FoldedExchange ex(false);
  ExchangeScope scope(&ex);
  ex.start_evaluation();
  forward_and_adjoint("refresh_neighbors", X, V);
  const auto op = exchange_op("system_sum").typed<at::Tensor(const at::Tensor &, int64_t)>();
  op.call(X, SCOPE_LOCAL);    // no communication, no agreement
  op.call(X, SCOPE_OWNED);
  EXPECT_EQ(ex.point().calls, 2);    // refresh and its backward before the OWNED sum
  EXPECT_EQ(ex.point().str(), "exchange call 3 (system_sum, 2 values)");
  ex.agree(ExchangeCall::RETURNED, 0);
  EXPECT_FALSE(ex.mismatched());
  EXPECT_EQ(ex.point().str(), "returned from the model after 3 exchange call(s)");
  ex.start_evaluation();
  EXPECT_EQ(ex.point().str(), "returned from the model after 0 exchange call(s)");
}

TEST(ExchangeOps, RanksThatDisagreeStopBeforeCommunicating)
{
  BehindExchange ex;
  ExchangeScope scope(&ex);
  ex.start_evaluation();
  EXPECT_THROW(call("refresh_neighbors", X), std::exception);
  EXPECT_TRUE(ex.mismatched());
  EXPECT_EQ(ex.communications, 0);
  EXPECT_EQ(ex.point().str(), "exchange call 1 (refresh_neighbors, 2 values per row)");
  try {
    ex.start_evaluation();
    ex.agree(ExchangeCall::RETURNED, 0);
    FAIL() << "ranks that disagree on returning from the model passed";
  } catch (const ExchangeMismatch &e) {
    EXPECT_EQ(std::string(e.what()), "the ranks made different exchange calls; this rank: returned "
                                     "from the model after 0 exchange call(s)");
  }
}

TEST(ExchangeOps, TheMismatchErrorGroupsRanksByWhereTheyStood)
{
  const CallPoint refresh{0, ExchangeCall::REFRESH_NEIGHBORS, 32};
  const CallPoint returned{0, ExchangeCall::RETURNED, 0};
  EXPECT_EQ(where_ranks_stood({refresh, returned, refresh}),
            "; ranks 0 2: exchange call 1 (refresh_neighbors, 32 values per row); rank 1: "
            "returned from the model after 0 exchange call(s)");
  std::vector<CallPoint> many(11, refresh);
  many[10] = returned;
  EXPECT_EQ(where_ranks_stood(many),
            "; ranks 0 1 2 3 4 5 6 7 and 2 more: exchange call 1 (refresh_neighbors, 32 values "
            "per row); rank 10: returned from the model after 0 exchange call(s)");
}
