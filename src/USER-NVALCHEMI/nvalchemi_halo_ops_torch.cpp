/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the exchange ops torch.ops.nvalchemi.{refresh_neighbors,
   scatter_to_owners, system_sum, rank_sum}, their autograd and their
   backward ops (<op>_backward), on top of the current Exchanger, which
   agrees each communicating call with the other ranks first (LibTorch
   translation unit; no LAMMPS). The schemas are the contract table's (nvalchemi_contract_tables.h).
------------------------------------------------------------------------- */

#include "nvalchemi_halo_ops_torch.h"
#include "nvalchemi_contract_tables.h"
#include "nvalchemi_halo_exchange.h"
#include "nvalchemi_runner_torch.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/script.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    Exchanger *active = nullptr;

    using torch::autograd::AutogradContext;
    using torch::autograd::variable_list;

    Exchanger &exchanger(const char *op)
    {
      if (!active)
        throw std::runtime_error(std::string("torch.ops.nvalchemi.") + op +
                                 " was called outside a pair_style nvalchemi model evaluation, "
                                 "where there is no domain decomposition to exchange over");
      return *active;
    }

    // `x` as a contiguous double buffer of its own on `where` (a copy on x's device when that
    // is where): what the communication reads and writes when it sums rows. Rows go where the
    // exchanger packs them, sums over ranks (a few values) through the host.
    torch::Tensor exchange_buffer(const torch::Tensor &x, const Device &where)
    {
      return x.detach()
          .to(torch_device(where), torch::kFloat64, /*non_blocking=*/false, /*copy=*/true)
          .contiguous();
    }
    // the buffer back where x lives, in x's dtype (no copy where it is there already)
    torch::Tensor like(const torch::Tensor &buffer, const torch::Tensor &x)
    { return buffer.to(x.device(), x.scalar_type()); }

    // The exchanger every rank has come to with `call` for `x` [rows, ...]: one row per atom
    // row, and the ranks agreed; `width` is set to x's values per row.
    Exchanger &rows_exchanger(const torch::Tensor &x, ExchangeCall call, int64_t &width)
    {
      Exchanger &ex = exchanger(to_string(call));
      if (x.dim() < 1 || x.size(0) != ex.num_rows())
        throw std::runtime_error(std::string("torch.ops.nvalchemi.") + to_string(call) +
                                 " expects one row per atom (" + std::to_string(ex.num_rows()) +
                                 "), got a tensor of " + std::to_string(x.dim() ? x.size(0) : 0) +
                                 " rows");
      width = 1;
      for (int64_t d = 1; d < x.dim(); ++d) width *= x.size(d);
      ex.agree(call, width);
      return ex;
    }

    // What x's partials travel as between ranks: float32 for a tensor of float32 or narrower,
    // whose values that holds exactly (half the bytes of float64), else float64
    Wire wire_for(const torch::Tensor &x)
    { return x.is_floating_point() && x.element_size() <= 4 ? Wire::FLOAT32 : Wire::FLOAT64; }

    // `x` [rows, ...] as a double buffer of `width` values per row (`rows` [rows, width] on the
    // exchanger's device), transformed by `fn(ex, rows, wire)` once every rank has come to the
    // same call, back where x lives in x's dtype: what sums rows adds in float64 whatever x's
    // dtype, the partials sent as wire_for(x)
    template <typename F> torch::Tensor on_rows(const torch::Tensor &x, ExchangeCall call, F &&fn)
    {
      int64_t width = 0;
      Exchanger &ex = rows_exchanger(x, call, width);
      auto rows = exchange_buffer(x, ex.rows_device()).view({x.size(0), width});
      fn(ex, rows, wire_for(x));
      return like(rows.view(x.sizes()), x);
    }

    double *row_values(torch::Tensor &rows)
    { return rows.data_ptr<double>(); }
    int row_width(const torch::Tensor &rows)
    { return static_cast<int>(rows.size(1)); }

    // the adjoint of a refresh: the gradient of a ghost copy belongs to its owner
    void owners_take_ghost_gradients(Exchanger &ex, torch::Tensor &rows, Wire wire)
    {
      ex.sum_into_owners(row_values(rows), row_width(rows), wire);
      rows.narrow(0, ex.num_owned(), ex.num_rows() - ex.num_owned()).zero_();
    }

    // A refresh only copies rows, so they move as their bytes in x's own dtype: each row's
    // elements, zero-padded to whole 8-byte words, in a buffer of its own on `where` viewed as
    // doubles [rows, words] (a float32 row of 16 features moves as 8 words, an int64 value
    // exactly). The exchangers' refresh copies words and never computes with them.
    torch::Tensor as_words(const torch::Tensor &x, int64_t width, const Device &where)
    {
      auto values = x.detach().reshape({x.size(0), width});
      const int64_t per_word = std::max<int64_t>(1, 8 / values.element_size());
      const int64_t padded = (width + per_word - 1) / per_word * per_word;
      auto words = torch::empty({x.size(0), padded}, values.options().device(torch_device(where)));
      words.narrow(1, 0, width).copy_(values);
      if (padded > width) words.narrow(1, width, padded - width).zero_();
      return words.view(torch::kFloat64);
    }
    // the words back as x: its dtype, shape and device
    torch::Tensor from_words(const torch::Tensor &words, const torch::Tensor &x, int64_t width)
    { return words.view(x.scalar_type()).narrow(1, 0, width).reshape(x.sizes()).to(x.device()); }

    // y = x on owned rows, owners' values on ghost rows. The gradient of a ghost copy belongs
    // to its owner: ghost-row gradients are summed into the owners (in float64, sent in the
    // gradient's precision), ghost rows get none.
    torch::Tensor refresh_rows(const torch::Tensor &x)
    {
      int64_t width = 0;
      Exchanger &ex = rows_exchanger(x, ExchangeCall::REFRESH_NEIGHBORS, width);
      auto words = as_words(x, width, ex.rows_device());
      ex.refresh(row_values(words), row_width(words));
      return from_words(words, x, width);
    }
    torch::Tensor refresh_rows_adjoint(const torch::Tensor &grad)
    { return on_rows(grad, ExchangeCall::REFRESH_NEIGHBORS_BACKWARD, owners_take_ghost_gradients); }

    // Every row gets the complete sum: ghost-row partials summed into their owners, then every
    // ghost row refreshed, an operation that is its own adjoint. Where the owned rows are
    // complete already (halo mode deep) it is a refresh, whose adjoint is that of a refresh.
    void scatter_then_refresh(Exchanger &ex, torch::Tensor &rows, Wire wire)
    {
      if (!ex.owned_rows_complete()) ex.sum_into_owners(row_values(rows), row_width(rows), wire);
      ex.refresh(row_values(rows), row_width(rows));
    }

    void scatter_adjoint(Exchanger &ex, torch::Tensor &rows, Wire wire)
    {
      if (ex.owned_rows_complete())
        owners_take_ghost_gradients(ex, rows, wire);
      else
        scatter_then_refresh(ex, rows, wire);
    }

    torch::Tensor scatter_rows(const torch::Tensor &x)
    { return on_rows(x, ExchangeCall::SCATTER_TO_OWNERS, scatter_then_refresh); }
    torch::Tensor scatter_rows_adjoint(const torch::Tensor &grad)
    { return on_rows(grad, ExchangeCall::SCATTER_TO_OWNERS_BACKWARD, scatter_adjoint); }

    torch::Tensor sum_over_ranks(const torch::Tensor &x, ExchangeCall call)
    {
      Exchanger &ex = exchanger(to_string(call));
      ex.agree(call, x.numel());
      auto buffer = exchange_buffer(x, Device{});
      ex.sum_over_ranks(buffer.data_ptr<double>(), static_cast<int>(buffer.numel()));
      return like(buffer, x);
    }

    // the exchanger, once `values` and `scope` are what system_sum takes
    Exchanger &check_system_sum(const torch::Tensor &values, int64_t scope)
    {
      Exchanger &ex = exchanger(to_string(ExchangeCall::SYSTEM_SUM));
      if (values.dim() < 1 || values.size(0) != ex.num_rows())
        throw std::runtime_error("torch.ops.nvalchemi.system_sum expects one row per atom (" +
                                 std::to_string(ex.num_rows()) + ")");
      if (scope != SCOPE_LOCAL && scope != SCOPE_OWNED)
        throw std::runtime_error(
            "torch.ops.nvalchemi.system_sum: scope must be 0 (LOCAL) or 1 (OWNED)");
      return ex;
    }

    // sum over owned rows; scope OWNED also over ranks (every rank gets the total)
    torch::Tensor sum_owned_rows(const torch::Tensor &values, int64_t scope)
    {
      const int64_t owned = check_system_sum(values, scope).num_owned();
      auto local = values.detach().narrow(0, 0, owned).sum(0);
      return scope == SCOPE_OWNED ? sum_over_ranks(local, ExchangeCall::SYSTEM_SUM) : local;
    }

    // each owned row of `values` receives the gradient of the sum, all-reduced for OWNED because
    // every rank's share of the loss depends on the replicated total; ghost rows get none
    torch::Tensor sum_owned_rows_adjoint(const torch::Tensor &grad, const torch::Tensor &values,
                                         int64_t scope)
    {
      const int64_t owned = check_system_sum(values, scope).num_owned();
      auto g = scope == SCOPE_OWNED ? sum_over_ranks(grad, ExchangeCall::SYSTEM_SUM_BACKWARD)
                                    : grad;
      auto result = torch::zeros(values.sizes(), g.options());
      result.narrow(0, 0, owned).copy_(g.unsqueeze(0).expand_as(result.narrow(0, 0, owned)));
      return result;
    }

    // a tensor summed over ranks; its adjoint is the same all-reduce (every rank's share of the
    // energy depends on the replicated sum)
    torch::Tensor sum_tensor_over_ranks(const torch::Tensor &x)
    { return sum_over_ranks(x, ExchangeCall::RANK_SUM); }
    torch::Tensor sum_tensor_over_ranks_adjoint(const torch::Tensor &grad)
    { return sum_over_ranks(grad, ExchangeCall::RANK_SUM_BACKWARD); }

    // Each op's backward is the kernel of its `<op>_backward` op, which is registered too: an
    // AOTInductor program holds the backward pass and calls those ops by name.
    struct RefreshNeighbors : torch::autograd::Function<RefreshNeighbors> {
      static torch::Tensor forward(AutogradContext *, torch::Tensor x) { return refresh_rows(x); }
      static variable_list backward(AutogradContext *, variable_list grad)
      { return {refresh_rows_adjoint(grad[0])}; }
    };

    struct ScatterToOwners : torch::autograd::Function<ScatterToOwners> {
      static torch::Tensor forward(AutogradContext *, torch::Tensor x) { return scatter_rows(x); }
      static variable_list backward(AutogradContext *, variable_list grad)
      { return {scatter_rows_adjoint(grad[0])}; }
    };

    struct SystemSum : torch::autograd::Function<SystemSum> {
      static torch::Tensor forward(AutogradContext *ctx, torch::Tensor values, int64_t scope)
      {
        ctx->saved_data["scope"] = scope;
        ctx->saved_data["values"] = values.detach();
        return sum_owned_rows(values, scope);
      }
      static variable_list backward(AutogradContext *ctx, variable_list grad)
      {
        return {sum_owned_rows_adjoint(grad[0], ctx->saved_data["values"].toTensor(),
                                       ctx->saved_data["scope"].toInt()),
                torch::Tensor()};
      }
    };

    struct RankSum : torch::autograd::Function<RankSum> {
      static torch::Tensor forward(AutogradContext *, torch::Tensor x)
      { return sum_tensor_over_ranks(x); }
      static variable_list backward(AutogradContext *, variable_list grad)
      { return {sum_tensor_over_ranks_adjoint(grad[0])}; }
    };

    torch::Tensor refresh_neighbors(const torch::Tensor &x)
    { return RefreshNeighbors::apply(x); }
    torch::Tensor scatter_to_owners(const torch::Tensor &x)
    { return ScatterToOwners::apply(x); }
    torch::Tensor system_sum(const torch::Tensor &values, int64_t scope)
    { return SystemSum::apply(values, scope); }
    torch::Tensor rank_sum(const torch::Tensor &x)
    { return RankSum::apply(x); }
  }    // namespace

  void set_current_exchanger(Exchanger *exchanger)
  { active = exchanger; }

  void register_exchange_ops()
  {
    static std::once_flag once;
    std::call_once(once, [] {
      // another copy of the package in this process (built-in and plugin) may have done it
      if (c10::Dispatcher::singleton().findSchema({"nvalchemi::refresh_neighbors", ""})) return;
      static torch::Library library(torch::Library::DEF, "nvalchemi", std::nullopt, __FILE__,
                                    __LINE__);
      // Communicating ops have effects beyond their values: TorchScript's optimizer must keep
      // every call, in the order the model makes them, on every rank. As pure functions
      // (FROM_SCHEMA) it may move a call past an independent one in the graph it optimizes after
      // the first evaluation, and ranks would then call them in different orders.
      const auto def = [](std::string_view schema, auto fn) {
        library.def(
            torch::schema(std::string(schema).c_str(), c10::AliasAnalysisKind::CONSERVATIVE), fn);
      };
      static constexpr std::string_view REFRESH = exchange_op_schema("refresh_neighbors"),
                                        REFRESH_BACK =
                                            exchange_op_schema("refresh_neighbors_backward"),
                                        SCATTER = exchange_op_schema("scatter_to_owners"),
                                        SCATTER_BACK =
                                            exchange_op_schema("scatter_to_owners_backward"),
                                        SUM = exchange_op_schema("system_sum"),
                                        SUM_BACK = exchange_op_schema("system_sum_backward"),
                                        RANK = exchange_op_schema("rank_sum"),
                                        RANK_BACK = exchange_op_schema("rank_sum_backward");
      static_assert(!REFRESH.empty() && !REFRESH_BACK.empty() && !SCATTER.empty() &&
                        !SCATTER_BACK.empty() && !SUM.empty() && !SUM_BACK.empty() &&
                        !RANK.empty() && !RANK_BACK.empty(),
                    "nvalchemi_contract_tables.h: an exchange op's schema is missing");
      def(REFRESH, refresh_neighbors);
      def(REFRESH_BACK, refresh_rows_adjoint);
      def(SCATTER, scatter_to_owners);
      def(SCATTER_BACK, scatter_rows_adjoint);
      def(SUM, system_sum);
      def(SUM_BACK, sum_owned_rows_adjoint);
      def(RANK, rank_sum);
      def(RANK_BACK, sum_tensor_over_ranks_adjoint);
    });
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
