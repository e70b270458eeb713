/* -*- c++ -*- ----------------------------------------------------------
   nvalchemi_kernels: what the library's CPU kernels (nvalchemi_kernels.cpp)
   and CUDA kernels (nvalchemi_kernels_cuda.cu) share: the checked
   arguments of a call and the Lennard-Jones terms of one edge.
------------------------------------------------------------------------- */

#ifndef NVALCHEMI_KERNELS_H
#define NVALCHEMI_KERNELS_H

#include <torch/torch.h>

#ifdef __CUDACC__
#define NVALCHEMI_KERNELS_HOST_DEVICE __host__ __device__
#else
#define NVALCHEMI_KERNELS_HOST_DEVICE
#endif

namespace nvalchemi_kernels {

// A call's tensors, checked, contiguous, the tables in the edge vectors' dtype.
struct LJArgs {
  torch::Tensor edge_vectors, edge_types, epsilon, sigma;
};
// Throws c10::Error naming the argument of the wrong shape or dtype.
LJArgs lj_args(const torch::Tensor &edge_vectors, const torch::Tensor &edge_types,
               const torch::Tensor &epsilon, const torch::Tensor &sigma);

// |r|^2 of the edge vector at r[0..2]
template <typename T> NVALCHEMI_KERNELS_HOST_DEVICE inline T squared_length(const T *r)
{ return r[0] * r[0] + r[1] * r[1] + r[2] * r[2]; }
// (s/r)^6 of an edge with |r|^2 = r2
template <typename T> NVALCHEMI_KERNELS_HOST_DEVICE inline T lj_sr6(T r2, T sigma)
{
  const T s2 = sigma * sigma / r2;
  return s2 * s2 * s2;
}
// its energy, 4 eps [(s/r)^12 - (s/r)^6] - shift
template <typename T> NVALCHEMI_KERNELS_HOST_DEVICE inline T lj_energy(T sr6, T eps, T shift)
{ return 4 * eps * (sr6 * sr6 - sr6) - shift; }
// d(energy)/d(edge vector) = this times the edge vector
template <typename T> NVALCHEMI_KERNELS_HOST_DEVICE inline T lj_gradient_scale(T r2, T sr6, T eps)
{ return 4 * eps * (-12 * sr6 * sr6 + 6 * sr6) / r2; }

}    // namespace nvalchemi_kernels

#endif
