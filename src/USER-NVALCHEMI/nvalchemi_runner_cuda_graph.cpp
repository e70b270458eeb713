/* ----------------------------------------------------------------------
   USER-NVALCHEMI: a model call captured as a CUDA graph and replayed (LibTorch's CUDAGraph).
------------------------------------------------------------------------- */

#include "nvalchemi_runner_cuda_graph.h"

#include <stdexcept>

#ifdef NVALCHEMI_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct CapturedCall::Graph {
#ifdef NVALCHEMI_TORCH_CUDA
    at::cuda::CUDAGraph graph;
#endif
    std::vector<torch::Tensor> inputs, outputs;

    // whether `given` can be copied into this graph's inputs
    bool fits(const std::vector<torch::Tensor> &given) const
    {
      if (given.size() != inputs.size()) return false;
      for (size_t k = 0; k < given.size(); ++k)
        if (given[k].sizes() != inputs[k].sizes() || given[k].dtype() != inputs[k].dtype() ||
            given[k].device() != inputs[k].device() ||
            given[k].requires_grad() != inputs[k].requires_grad())
          return false;
      return true;
    }
  };

  CapturedCall::CapturedCall() = default;
  CapturedCall::~CapturedCall() = default;

#ifdef NVALCHEMI_TORCH_CUDA

  bool CapturedCall::available()
  { return true; }

  std::vector<torch::Tensor> CapturedCall::run(const std::vector<torch::Tensor> &inputs,
                                               const Work &work)
  {
    if (!graph || !graph->fits(inputs)) {
      graph.reset();
      auto made = std::make_unique<Graph>();
      {
        torch::NoGradGuard no_grad;
        for (const torch::Tensor &given : inputs)
          made->inputs.push_back(torch::empty_like(given).copy_(given));
      }
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k].requires_grad()) made->inputs[k].requires_grad_(true);
      const c10::DeviceIndex device = inputs.front().device().index();
      // a side stream, as PyTorch captures: one call there first (handles and workspaces that
      // LibTorch makes lazily must exist before the capture), then the capture
      const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device);
      c10::cuda::device_synchronize();
      {
        c10::cuda::CUDAStreamGuard on_side_stream(stream);
        work(made->inputs);
        c10::cuda::device_synchronize();
        try {
          made->graph.capture_begin();
          made->outputs = work(made->inputs);
          made->graph.capture_end();
        } catch (const std::exception &e) {
          // end the stream's capture and the allocator's routing into the graph's pool, so that
          // the call runs uncaptured from here on
          cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
          if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess &&
              status != cudaStreamCaptureStatusNone) {
            cudaGraph_t broken = nullptr;
            cudaStreamEndCapture(stream.stream(), &broken);
            if (broken) cudaGraphDestroy(broken);
            c10::cuda::CUDACachingAllocator::endAllocateToPool(device, made->graph.pool());
          }
          (void) cudaGetLastError();
          throw std::runtime_error(std::string("the model call could not be captured as a CUDA "
                                               "graph: ") +
                                   e.what());
        }
      }
      c10::cuda::device_synchronize();
      graph = std::move(made);
      ++captured;
    }
    {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < inputs.size(); ++k) graph->inputs[k].copy_(inputs[k]);
    }
    graph->graph.replay();
    return graph->outputs;
  }

#else

  bool CapturedCall::available()
  { return false; }

  std::vector<torch::Tensor> CapturedCall::run(const std::vector<torch::Tensor> &, const Work &)
  {
    throw std::runtime_error("this LibTorch has no CUDA: a model call cannot be captured as a "
                             "CUDA graph");
  }

#endif

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
