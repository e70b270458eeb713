/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what the exchange ops (torch.ops.nvalchemi.*) need from
   the domain decomposition. The pair style implements it with LAMMPS'
   forward/reverse communication; tests can implement it with a double.
   Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_HALO_EXCHANGE_H
#define LMP_NVALCHEMI_HALO_EXCHANGE_H

#include "nvalchemi_step_device.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // What a rank does at one point of a model evaluation, as the ranks agree on it: an exchange
  // op (forward or backward) that communicates, or return from the model.
  enum class ExchangeCall : int64_t {
    RETURNED = 0,
    REFRESH_NEIGHBORS,
    REFRESH_NEIGHBORS_BACKWARD,
    SCATTER_TO_OWNERS,
    SCATTER_TO_OWNERS_BACKWARD,
    SYSTEM_SUM,
    SYSTEM_SUM_BACKWARD,
    RANK_SUM,
    RANK_SUM_BACKWARD
  };
  // "refresh_neighbors", ..., "return from the model"
  const char *to_string(ExchangeCall call);

  // Where one rank stood when the ranks' exchange calls were compared.
  struct CallPoint {
    int64_t calls = 0;    // exchange calls this rank had made in the evaluation before
    ExchangeCall call = ExchangeCall::RETURNED;
    int64_t size = 0;    // values per row (row ops) or values summed (sums)
    // "exchange call 3 (refresh_neighbors, 16 values per row)" or "returned after 2 calls"
    std::string str() const;
    // as the integers the ranks compare and gather: calls, call, size
    static constexpr int WORDS = 3;
    void to_words(int64_t words[WORDS]) const;
    static CallPoint from_words(const int64_t words[WORDS]);
  };

  // Where the ranks stood, `points` [nprocs] in rank order, ranks grouped by point in the
  // order of their first rank: "; rank 0: exchange call 1 (...); ranks 1 2 3: returned ...",
  // at most 8 ranks named per group.
  std::string where_ranks_stood(const std::vector<CallPoint> &points);

  // range_over_ranks where every rank holds `values` (one process, or a test's ranks in step)
  inline void same_on_every_rank(const int64_t *values, int64_t *lowest, int64_t *highest, int n)
  {
    std::copy_n(values, n, lowest);
    std::copy_n(values, n, highest);
  }

  // Thrown on every rank at once when the ranks' exchange calls differ.
  class ExchangeMismatch : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // What the partials of a sum of rows travel as between ranks: float64, or float32 for a
  // float32 tensor's rows, whose values it holds exactly; where they arrive they are added in
  // float64 (only a partial that crosses more than one swap is rounded to float32 on its way).
  enum class Wire { FLOAT64, FLOAT32 };

  // Rows are the model's atom rows: owned rows [0, num_owned()), then ghost rows up to
  // num_rows(). All data is row-major with `width` 8-byte words per row in the memory of
  // rows_device(): double values where rows are summed, and for refresh, which only copies
  // (and must never compute with them), the bytes of a row of any dtype packed into words.
  // Every call is collective: all ranks make the same calls in the same order, which agree()
  // checks before each one, so that a model whose calls depend on a rank's data stops with an
  // error on every rank instead of leaving some waiting for a call that never comes.
  class Exchanger {
   public:
    virtual ~Exchanger() = default;
    virtual int64_t num_rows() const = 0;
    virtual int64_t num_owned() const = 0;
    // Where the rows given to refresh and sum_into_owners live: the host's memory, or a GPU's
    // for an exchanger whose communication packs rows there (pair_style nvalchemi/kk)
    virtual Device rows_device() const { return {}; }
    // ghost rows take the values of their owners' rows (owned rows unchanged)
    virtual void refresh(double *rows, int width) = 0;
    // ghost rows' values are added into their owners' rows (ghost rows unchanged), sent as
    // `wire` where the exchanger communicates row by row
    virtual void sum_into_owners(double *rows, int width, Wire wire) = 0;
    // element-wise sum over all ranks, in place
    virtual void sum_over_ranks(double *values, int n) = 0;
    // element-wise minimum and maximum over all ranks of `values` [n]
    virtual void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest,
                                  int n) = 0;
    // Whether every edge touching an owned row is on this rank (halo mode deep, where ghost
    // receivers have edges too): then a quantity summed over edges is already complete on the
    // owned rows, and scatter_to_owners only refreshes the ghost rows (the toolkit's
    // refresh-only fold). Otherwise ghost rows hold partials owed to their owners.
    virtual bool owned_rows_complete() const { return false; }

    // The agreement of the ranks' calls, one evaluation (forward and backward) at a time.
    // start_evaluation() before the model runs; agree() before every exchange that
    // communicates and once with RETURNED after the model returned, on every rank. Collective:
    // one all-reduce of three integers. When the ranks are not all at the same call of the
    // same size it throws ExchangeMismatch on every rank, leaving mismatched() true; point() is
    // where this rank stood at its last agreement.
    void start_evaluation();
    void agree(ExchangeCall call, int64_t size);
    bool mismatched() const { return disagreed; }
    const CallPoint &point() const { return here; }

   private:
    CallPoint here;
    int64_t made = 0;
    bool disagreed = false;
  };

  // An exchanger that measures itself for the pair style's step summary; the pair style resets
  // the counters before each model call.
  class MeasuredExchanger : public Exchanger {
   public:
    double seconds = 0.0;    // wall time spent in the exchange calls, accumulated
    int widest = 0;          // most 8-byte words per row moved by one call, accumulated
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
    void sum_into_owners(double *, int, Wire) override {}
    void sum_over_ranks(double *, int) override {}
    void range_over_ranks(const int64_t *values, int64_t *lowest, int64_t *highest, int n) override
    { same_on_every_rank(values, lowest, highest, n); }

   private:
    int64_t rows;
  };

  // Sets the exchanger the ops use while a model runs (nullptr: none, outside a model call).
  // ModelRunner::evaluate installs it for the duration of one forward and backward pass.
  void set_current_exchanger(Exchanger *exchanger);

  // system_sum scopes: OWNED sums over all ranks (replicated result), LOCAL this rank's part
  static constexpr int64_t SCOPE_LOCAL = 0;
  static constexpr int64_t SCOPE_OWNED = 1;

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
