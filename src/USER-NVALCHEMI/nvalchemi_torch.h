/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: what the model runners share (LibTorch; included only by
   the runner translation units): the contract's input tensors, built in one
   place with the dtype the model computes in, outputs copied back, errors.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_TORCH_H
#define LMP_NVALCHEMI_TORCH_H

#include "nvalchemi_model.h"

#include <torch/script.h>

#include <chrono>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // The contract's seven inputs (doc/Howto_nvalchemi_contract.rst), in its positional order.
  struct ContractInputs {
    static constexpr int COUNT = 7;
    static const char *const NAMES[COUNT];
    torch::Tensor tensors[COUNT];    // positions ... n_owned
    int64_t versions[COUNT];         // their version counters when made (in-place writes bump)
    torch::Tensor &edge_vectors() { return tensors[3]; }
  };

  // The graph's arrays (padding included) as tensors, real-valued ones in `real`;
  // edge_vectors requires grad when `differentiate`. In double precision they are views of the
  // graph's buffers, not copies: check_inputs_unchanged() then stops a model that wrote into one.
  ContractInputs contract_inputs(const Graph &graph, const Cell &cell, torch::Dtype real,
                                 bool differentiate);
  // Throws std::runtime_error naming an input the model changed in place.
  void check_inputs_unchanged(const ContractInputs &in);

  // A per-row tensor ([tensor rows, ...]) without its padding rows; other tensors unchanged.
  torch::Tensor real_rows(const torch::Tensor &tensor, const Graph &graph);

  // The gradient [tensor edges, 3] of the real edges as double precision values shared with
  // LibTorch (no copy when it already is); an undefined gradient gives no values.
  SharedValues edge_gradient_values(const torch::Tensor &gradient, const Graph &graph);

  // Seconds since `start`, for ModelOutputs::marshal_seconds.
  using Clock = std::chrono::steady_clock;
  inline double seconds_since(Clock::time_point start)
  { return std::chrono::duration<double>(Clock::now() - start).count(); }

  // `tensor` as double precision, row-major, without padding rows, into `out`.
  void copy_output(const torch::Tensor &tensor, const Graph &graph, OutputTensor &out);

  // The exchanger the ops see, for the duration of one forward and backward pass.
  struct ExchangeScope {
    explicit ExchangeScope(Exchanger *exchanger);
    ~ExchangeScope();
  };

  // LibTorch's errors as std::runtime_error with their message (no backtrace).
  template <typename F> void rethrow_torch_errors(F &&body)
  {
    try {
      body();
    } catch (const c10::Error &e) {
      throw std::runtime_error(e.what_without_backtrace());
    }
  }

  // The AOTInductor runner (nvalchemi_aoti.cpp).
  std::unique_ptr<ModelRunner> load_aoti_model(const std::string &package_bytes);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
