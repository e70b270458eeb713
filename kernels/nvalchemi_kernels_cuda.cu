/* ----------------------------------------------------------------------
   nvalchemi_kernels on a GPU: the CUDA kernels of lj_edge_energy and
   lj_edge_energy_backward (one thread per edge), registered for tensors on
   a CUDA device. The same terms as the CPU kernels (nvalchemi_kernels.h).
------------------------------------------------------------------------- */

#include "nvalchemi_kernels.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

namespace {

using namespace nvalchemi_kernels;
using torch::Tensor;

constexpr int THREADS = 256;

int blocks(int64_t edges) { return static_cast<int>((edges + THREADS - 1) / THREADS); }

// every edge type inside the tables (one reduction, two integers back to the host)
void check_types(const LJArgs &args)
{
  if (args.edge_types.numel() == 0) return;
  const auto [lowest, highest] = torch::aminmax(args.edge_types);
  const int64_t low = lowest.item<int64_t>(), high = highest.item<int64_t>();
  TORCH_CHECK(low >= 0 && high < args.epsilon.size(0), "lj_edge_energy: edge type ",
              low < 0 ? low : high, " outside the table");
}

// the edge of this thread
__device__ int64_t thread_edge()
{ return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }

template <typename T>
__global__ void edge_energy(int64_t edges, const T *r, const int64_t *type, const T *eps,
                            const T *sigma, const T *shift, T *out)
{
  const int64_t e = thread_edge();
  if (e >= edges) return;
  const int64_t t = type[e];
  out[e] = lj_energy(lj_sr6(squared_length(r + 3 * e), sigma[t]), eps[t], shift[t]);
}

template <typename T>
__global__ void edge_energy_gradient(int64_t edges, const T *grad, const T *r, const int64_t *type,
                                     const T *eps, const T *sigma, T *out)
{
  const int64_t e = thread_edge();
  if (e >= edges) return;
  const int64_t t = type[e];
  const T r2 = squared_length(r + 3 * e);
  const T scale = grad[e] * lj_gradient_scale(r2, lj_sr6(r2, sigma[t]), eps[t]);
  for (int d = 0; d < 3; ++d) out[3 * e + d] = scale * r[3 * e + d];
}

Tensor lj_edge_energy_cuda(const Tensor &edge_vectors, const Tensor &edge_types,
                           const Tensor &epsilon, const Tensor &sigma, const Tensor &offset_in)
{
  const c10::cuda::CUDAGuard guard(edge_vectors.device());
  const LJArgs args = lj_args(edge_vectors, edge_types, epsilon, sigma);
  const Tensor offset = offset_in.to(edge_vectors.scalar_type()).contiguous();
  TORCH_CHECK(offset.sizes() == epsilon.sizes() && offset.device() == edge_vectors.device(),
              "lj_edge_energy: offset must be a table [types] on the edge vectors' device");
  check_types(args);
  const int64_t edges = edge_vectors.size(0);
  Tensor energy = torch::empty({edges}, edge_vectors.options());
  if (edges == 0) return energy;
  AT_DISPATCH_FLOATING_TYPES(edge_vectors.scalar_type(), "lj_edge_energy", [&] {
    edge_energy<scalar_t><<<blocks(edges), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        edges, args.edge_vectors.data_ptr<scalar_t>(), args.edge_types.data_ptr<int64_t>(),
        args.epsilon.data_ptr<scalar_t>(), args.sigma.data_ptr<scalar_t>(),
        offset.data_ptr<scalar_t>(), energy.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return energy;
}

Tensor lj_edge_energy_backward_cuda(const Tensor &grad_in, const Tensor &edge_vectors,
                                    const Tensor &edge_types, const Tensor &epsilon,
                                    const Tensor &sigma)
{
  const c10::cuda::CUDAGuard guard(edge_vectors.device());
  const LJArgs args = lj_args(edge_vectors, edge_types, epsilon, sigma);
  const Tensor grad = grad_in.to(edge_vectors.scalar_type()).contiguous();
  TORCH_CHECK(grad.device() == edge_vectors.device(),
              "lj_edge_energy_backward: grad must be on the edge vectors' device");
  check_types(args);
  const int64_t edges = edge_vectors.size(0);
  Tensor result = torch::empty_like(args.edge_vectors);
  if (edges == 0) return result;
  AT_DISPATCH_FLOATING_TYPES(edge_vectors.scalar_type(), "lj_edge_energy_backward", [&] {
    edge_energy_gradient<scalar_t><<<blocks(edges), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        edges, grad.data_ptr<scalar_t>(), args.edge_vectors.data_ptr<scalar_t>(),
        args.edge_types.data_ptr<int64_t>(), args.epsilon.data_ptr<scalar_t>(),
        args.sigma.data_ptr<scalar_t>(), result.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return result;
}

}    // namespace

TORCH_LIBRARY_IMPL(nvalchemi_kernels, CUDA, m)
{
  m.impl("lj_edge_energy", lj_edge_energy_cuda);
  m.impl("lj_edge_energy_backward", lj_edge_energy_backward_cuda);
}
