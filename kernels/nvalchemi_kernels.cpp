/* ----------------------------------------------------------------------
   nvalchemi_kernels: a LibTorch operator library of fused kernels for
   USER-NVALCHEMI models (pair_style nvalchemi ... library
   nvalchemi_kernels.so). Registers

     nvalchemi_kernels::lj_edge_energy(Tensor edge_vectors, Tensor edge_types,
         Tensor epsilon, Tensor sigma, Tensor offset) -> Tensor

   the Lennard-Jones energy of each edge, 4 eps [(s/r)^12 - (s/r)^6] - offset,
   with eps, s and offset looked up per edge type, in one pass over the edges,
   and its backward (the gradient with respect to the edge vectors) as an
   autograd function of its own, lj_edge_energy_backward. The same schema in
   plain PyTorch is models/nvalchemi_kernels.py, for scripting models. Built
   with CUDA (cmake -DNVALCHEMI_CUDA_KERNELS=on), the CUDA kernels of
   nvalchemi_kernels_cuda.cu serve tensors on a GPU.
------------------------------------------------------------------------- */

#include "nvalchemi_kernels.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace nvalchemi_kernels {

LJArgs lj_args(const torch::Tensor &edge_vectors, const torch::Tensor &edge_types,
               const torch::Tensor &epsilon, const torch::Tensor &sigma)
{
  TORCH_CHECK(edge_vectors.dim() == 2 && edge_vectors.size(1) == 3,
              "lj_edge_energy: edge_vectors must be [edges, 3]");
  TORCH_CHECK(edge_types.dim() == 1 && edge_types.size(0) == edge_vectors.size(0) &&
                  edge_types.scalar_type() == torch::kInt64,
              "lj_edge_energy: edge_types must be int64 [edges]");
  TORCH_CHECK(epsilon.dim() == 1 && sigma.sizes() == epsilon.sizes(),
              "lj_edge_energy: epsilon and sigma must be tables [types] of the same size");
  TORCH_CHECK(edge_types.device() == edge_vectors.device() &&
                  epsilon.device() == edge_vectors.device() &&
                  sigma.device() == edge_vectors.device(),
              "lj_edge_energy: edge_types, epsilon and sigma must be on the edge vectors' device");
  const auto dtype = edge_vectors.scalar_type();
  return {edge_vectors.contiguous(), edge_types.contiguous(), epsilon.to(dtype).contiguous(),
          sigma.to(dtype).contiguous()};
}

}    // namespace nvalchemi_kernels

namespace {

using namespace nvalchemi_kernels;
using torch::Tensor;

// for each edge e: r2, (s/r)^6 and the parameters of its type, handed to `body`
template <typename scalar_t, typename F> void for_each_edge(const LJArgs &args, F &&body)
{
  const scalar_t *r = args.edge_vectors.data_ptr<scalar_t>();
  const auto type = args.edge_types.accessor<int64_t, 1>();
  const auto eps = args.epsilon.accessor<scalar_t, 1>();
  const auto sig = args.sigma.accessor<scalar_t, 1>();
  const int64_t ntypes = args.epsilon.size(0);
  at::parallel_for(0, args.edge_vectors.size(0), 1024, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      const int64_t t = type[e];
      TORCH_CHECK(t >= 0 && t < ntypes, "lj_edge_energy: edge type ", t, " outside the table");
      const scalar_t r2 = squared_length(r + 3 * e);
      body(e, t, r2, lj_sr6(r2, sig[t]), eps[t]);
    }
  });
}

Tensor lj_edge_energy_cpu(const Tensor &edge_vectors, const Tensor &edge_types,
                          const Tensor &epsilon, const Tensor &sigma, const Tensor &offset_in)
{
  const LJArgs args = lj_args(edge_vectors, edge_types, epsilon, sigma);
  const Tensor offset = offset_in.to(edge_vectors.scalar_type()).contiguous();
  TORCH_CHECK(offset.sizes() == epsilon.sizes(), "lj_edge_energy: offset must be a table [types]");
  Tensor energy = torch::empty({edge_vectors.size(0)}, edge_vectors.options());
  AT_DISPATCH_FLOATING_TYPES(edge_vectors.scalar_type(), "lj_edge_energy", [&] {
    scalar_t *out = energy.data_ptr<scalar_t>();
    const scalar_t *shift = offset.data_ptr<scalar_t>();
    for_each_edge<scalar_t>(args, [&](int64_t e, int64_t t, scalar_t, scalar_t sr6, scalar_t eps) {
      out[e] = lj_energy(sr6, eps, shift[t]);
    });
  });
  return energy;
}

// grad [edges] times d(energy)/d(edge vector)
Tensor lj_edge_energy_backward_cpu(const Tensor &grad_in, const Tensor &edge_vectors,
                                   const Tensor &edge_types, const Tensor &epsilon,
                                   const Tensor &sigma)
{
  const LJArgs args = lj_args(edge_vectors, edge_types, epsilon, sigma);
  const Tensor grad = grad_in.to(edge_vectors.scalar_type()).contiguous();
  Tensor result = torch::empty_like(args.edge_vectors);
  AT_DISPATCH_FLOATING_TYPES(edge_vectors.scalar_type(), "lj_edge_energy_backward", [&] {
    const scalar_t *g = grad.data_ptr<scalar_t>();
    const scalar_t *r = args.edge_vectors.data_ptr<scalar_t>();
    scalar_t *out = result.data_ptr<scalar_t>();
    for_each_edge<scalar_t>(args, [&](int64_t e, int64_t, scalar_t r2, scalar_t sr6, scalar_t eps) {
      const scalar_t scale = g[e] * lj_gradient_scale(r2, sr6, eps);
      for (int d = 0; d < 3; ++d) out[3 * e + d] = scale * r[3 * e + d];
    });
  });
  return result;
}

// an operator of this library as the dispatcher serves it (below autograd); both take five
// tensors and return one
using FiveTensorOp = Tensor(const Tensor &, const Tensor &, const Tensor &, const Tensor &,
                            const Tensor &);
c10::TypedOperatorHandle<FiveTensorOp> dispatched(const char *name)
{ return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<FiveTensorOp>(); }

Tensor call_forward(const Tensor &edge_vectors, const Tensor &edge_types, const Tensor &epsilon,
                    const Tensor &sigma, const Tensor &offset)
{
  static const auto op = dispatched("nvalchemi_kernels::lj_edge_energy");
  return op.call(edge_vectors, edge_types, epsilon, sigma, offset);
}

Tensor call_backward(const Tensor &grad, const Tensor &edge_vectors, const Tensor &edge_types,
                     const Tensor &epsilon, const Tensor &sigma)
{
  static const auto op = dispatched("nvalchemi_kernels::lj_edge_energy_backward");
  return op.call(grad, edge_vectors, edge_types, epsilon, sigma);
}

// forward and backward as one autograd node: edge gradients only (the tables are constants)
struct LJEdgeEnergy : torch::autograd::Function<LJEdgeEnergy> {
  static Tensor forward(torch::autograd::AutogradContext *ctx, const Tensor &edge_vectors,
                        const Tensor &edge_types, const Tensor &epsilon, const Tensor &sigma,
                        const Tensor &offset)
  {
    ctx->save_for_backward({edge_vectors, edge_types, epsilon, sigma});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(edge_vectors, edge_types, epsilon, sigma, offset);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grad)
  {
    const auto saved = ctx->get_saved_variables();
    return {call_backward(grad[0], saved[0], saved[1], saved[2], saved[3]), Tensor(), Tensor(),
            Tensor(), Tensor()};
  }
};

Tensor lj_edge_energy_autograd(const Tensor &edge_vectors, const Tensor &edge_types,
                               const Tensor &epsilon, const Tensor &sigma, const Tensor &offset)
{ return LJEdgeEnergy::apply(edge_vectors, edge_types, epsilon, sigma, offset); }

}    // namespace

TORCH_LIBRARY(nvalchemi_kernels, m)
{
  m.def("lj_edge_energy(Tensor edge_vectors, Tensor edge_types, Tensor epsilon, Tensor sigma, "
        "Tensor offset) -> Tensor");
  m.def("lj_edge_energy_backward(Tensor grad, Tensor edge_vectors, Tensor edge_types, "
        "Tensor epsilon, Tensor sigma) -> Tensor");
}

TORCH_LIBRARY_IMPL(nvalchemi_kernels, CPU, m)
{
  m.impl("lj_edge_energy", lj_edge_energy_cpu);
  m.impl("lj_edge_energy_backward", lj_edge_energy_backward_cpu);
}

TORCH_LIBRARY_IMPL(nvalchemi_kernels, Autograd, m)
{ m.impl("lj_edge_energy", lj_edge_energy_autograd); }
