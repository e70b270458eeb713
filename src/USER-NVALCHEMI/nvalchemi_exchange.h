/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what the exchange ops (torch.ops.nvalchemi.*) need from
   the domain decomposition. The pair style implements it with LAMMPS'
   forward/reverse communication; tests can implement it with a double.
   Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_EXCHANGE_H
#define LMP_NVALCHEMI_EXCHANGE_H

#include <chrono>
#include <cstdint>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // Rows are the model's atom rows: owned rows [0, num_owned()), then ghost rows up to
  // num_rows(). All data is row-major with `width` values per row, in double precision.
  // Every call is collective: all ranks make the same calls in the same order.
  class Exchanger {
   public:
    virtual ~Exchanger() = default;
    virtual int64_t num_rows() const = 0;
    virtual int64_t num_owned() const = 0;
    // ghost rows take the values of their owners' rows (owned rows unchanged)
    virtual void refresh(double *rows, int width) = 0;
    // ghost rows' values are added into their owners' rows (ghost rows unchanged)
    virtual void sum_into_owners(double *rows, int width) = 0;
    // element-wise sum over all ranks, in place
    virtual void sum_over_ranks(double *values, int n) = 0;
    // Whether every edge touching an owned row is on this rank (halo mode deep, where ghost
    // receivers have edges too): then a quantity summed over edges is already complete on the
    // owned rows, and scatter_to_owners only refreshes the ghost rows (the toolkit's
    // refresh-only fold). Otherwise ghost rows hold partials owed to their owners.
    virtual bool owned_rows_complete() const { return false; }
  };

  // An exchanger that measures itself for the pair style's step summary; the pair style resets
  // the counters before each model call.
  class MeasuredExchanger : public Exchanger {
   public:
    double seconds = 0.0;    // wall time spent in the exchange calls, accumulated
    int widest = 0;          // most values per row moved by one call, accumulated
    int refreshes = 0;       // calls of refresh(), accumulated

   protected:
    // adds the wall time of its scope to `seconds`
    struct Timed {
      using Clock = std::chrono::steady_clock;
      explicit Timed(MeasuredExchanger &ex) : ex(ex), start(Clock::now()) {}
      ~Timed() { ex.seconds += std::chrono::duration<double>(Clock::now() - start).count(); }
      MeasuredExchanger &ex;
      Clock::time_point start;
    };
  };

  // One process holding the whole system (the single-process reference): no ghost rows, so
  // there is nothing to refresh, scatter or sum over ranks.
  class SingleProcessExchange : public Exchanger {
   public:
    explicit SingleProcessExchange(int64_t rows) : rows(rows) {}
    int64_t num_rows() const override { return rows; }
    int64_t num_owned() const override { return rows; }
    void refresh(double *, int) override {}
    void sum_into_owners(double *, int) override {}
    void sum_over_ranks(double *, int) override {}

   private:
    int64_t rows;
  };

  // Sets the exchanger the ops use while a model runs (nullptr: none, outside a model call).
  // ModelRunner::evaluate installs it for the duration of one forward and backward pass.
  void set_current_exchanger(Exchanger *exchanger);

  // Names of the exchange ops, as a model calls them: torch.ops.nvalchemi.<name>.
  static constexpr const char *OP_REFRESH_NEIGHBORS = "refresh_neighbors";
  static constexpr const char *OP_SCATTER_TO_OWNERS = "scatter_to_owners";
  static constexpr const char *OP_SYSTEM_SUM = "system_sum";
  static constexpr const char *OP_RANK_SUM = "rank_sum";

  // system_sum scopes: OWNED sums over all ranks (replicated result), LOCAL this rank's part
  static constexpr int64_t SCOPE_LOCAL = 0;
  static constexpr int64_t SCOPE_OWNED = 1;

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
