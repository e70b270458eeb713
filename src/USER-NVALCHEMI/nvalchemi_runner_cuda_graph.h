/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a model call captured as a CUDA graph and replayed (pair_style nvalchemi ...
   cuda_graph yes). LibTorch; included only by the runners. The capture itself is compiled where
   LibTorch has CUDA (NVALCHEMI_TORCH_CUDA).
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_RUNNER_CUDA_GRAPH_H
#define LMP_NVALCHEMI_RUNNER_CUDA_GRAPH_H

#include <torch/script.h>

#include "nvalchemi_runner.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  // The work of one model call (forward, energy share, gradient), as a function of its input
  // tensors, captured once per set of input shapes into a CUDA graph and replayed on later calls
  // with the same shapes: the inputs are copied into the captured call's own (static) input
  // tensors, the graph replays every kernel of the call without the host launching them, and the
  // outputs are the captured call's own (static) output tensors, which the next call overwrites.
  // New shapes (static shapes grown) capture again. What a replay does not do is what the host
  // did during the capture: the work must make no exchange calls (the pair style allows capture
  // only after an evaluation that made none on any rank) and no host synchronization (a capture
  // that meets one fails, and the caller runs the work directly from then on).
  class CapturedCall {
   public:
    using Work = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor> &)>;
    CapturedCall();
    ~CapturedCall();
    CapturedCall(const CapturedCall &) = delete;
    CapturedCall &operator=(const CapturedCall &) = delete;

    // Whether this build can capture (a LibTorch with CUDA).
    static bool available();
    // `work` on `inputs` (on one GPU; the input that requires grad is the one the work
    // differentiates by): replayed when the last capture had these shapes, else captured first.
    // Throws std::runtime_error, naming why, when the capture fails; the graph is then dropped.
    std::vector<torch::Tensor> run(const std::vector<torch::Tensor> &inputs, const Work &work);
    // captures made so far (one per set of shapes)
    int captures() const { return captured; }

   private:
    struct Graph;    // the CUDA graph with its static inputs and outputs
    std::unique_ptr<Graph> graph;
    int captured = 0;
  };

  // A runner's CUDA-graph capture (ModelRunner::cuda_graphs()), whatever its format: while
  // enabled, a call goes through a CapturedCall; the first capture that fails turns capture off
  // for good, and problem() says why.
  class CallCapture : public CudaGraphCapture {
   public:
    void enable(bool on) override { capturing = on && why_not.empty(); }
    int captures() const override { return call.captures(); }
    const std::string &problem() const override { return why_not; }
    // Capture off for good, for `reason` (what problem() then says).
    void refuse(const std::string &reason)
    {
      why_not = reason;
      capturing = false;
    }
    // `work` on `inputs`, captured or replayed (CapturedCall::run); nothing while capture is
    // off, or when this capture failed: the caller then runs the work itself.
    std::optional<std::vector<torch::Tensor>> run(const std::vector<torch::Tensor> &inputs,
                                                  const CapturedCall::Work &work)
    {
      if (!capturing) return std::nullopt;
      try {
        return call.run(inputs, work);
      } catch (const std::runtime_error &e) {
        why_not = e.what();
        capturing = false;
        return std::nullopt;
      }
    }

   private:
    CapturedCall call;
    bool capturing = false;
    std::string why_not;
  };

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
