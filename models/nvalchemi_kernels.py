"""The operators of the package's kernel library (kernels/nvalchemi_kernels.cpp) in plain
PyTorch, under the same names and schemas: importing this module lets a model that calls
torch.ops.nvalchemi_kernels.* be scripted, and run in Python. In LAMMPS the C++ library serves
them, loaded with `pair_style nvalchemi model.pt library <build>/nvalchemi_kernels.so`
(doc/pair_nvalchemi.rst). Where the C++ library is loaded already, or NVALCHEMI_KERNELS_LIBRARY
names it (this module then loads it), only the ops' shapes are defined here, for tracing: an
AOTInductor export then keeps the calls in its program, which the library serves at run time.
"""

import os

import torch

SCHEMAS = {
    "lj_edge_energy": "lj_edge_energy(Tensor edge_vectors, Tensor edge_types, Tensor epsilon, Tensor sigma, "
                      "Tensor offset) -> Tensor",
    "lj_edge_energy_backward": "lj_edge_energy_backward(Tensor grad, Tensor edge_vectors, Tensor edge_types, "
                               "Tensor epsilon, Tensor sigma) -> Tensor",
}


def lj_edge_energy(edge_vectors, edge_types, epsilon, sigma, offset):
    """4 eps [(s/r)^12 - (s/r)^6] - offset of each edge, the parameters looked up by edge type."""
    dtype = edge_vectors.dtype
    eps, s = epsilon.to(dtype)[edge_types], sigma.to(dtype)[edge_types]
    sr6 = (s * s / (edge_vectors * edge_vectors).sum(dim=1)) ** 3
    return 4.0 * eps * (sr6 * sr6 - sr6) - offset.to(dtype)[edge_types]


def lj_edge_energy_backward(grad, edge_vectors, edge_types, epsilon, sigma):
    """grad times d(edge energy)/d(edge vector), [edges, 3]."""
    dtype = edge_vectors.dtype
    eps, s = epsilon.to(dtype)[edge_types], sigma.to(dtype)[edge_types]
    r2 = (edge_vectors * edge_vectors).sum(dim=1)
    sr6 = (s * s / r2) ** 3
    return (grad.to(dtype) * 4.0 * eps * (-12.0 * sr6 * sr6 + 6.0 * sr6) / r2).unsqueeze(1) * edge_vectors


def _registered() -> bool:
    try:
        torch.ops.nvalchemi_kernels.lj_edge_energy
        return True
    except (AttributeError, RuntimeError):
        return False


if not _registered() and os.environ.get("NVALCHEMI_KERNELS_LIBRARY"):
    torch.ops.load_library(os.environ["NVALCHEMI_KERNELS_LIBRARY"])
if _registered():
    @torch.library.register_fake("nvalchemi_kernels::lj_edge_energy")
    def _lj_edge_energy_shape(edge_vectors, edge_types, epsilon, sigma, offset):
        return edge_vectors.new_empty(edge_vectors.shape[0])

    @torch.library.register_fake("nvalchemi_kernels::lj_edge_energy_backward")
    def _lj_edge_energy_backward_shape(grad, edge_vectors, edge_types, epsilon, sigma):
        return edge_vectors.new_empty(edge_vectors.shape)  # contiguous, as the kernel's
else:
    _LIBRARY = torch.library.Library("nvalchemi_kernels", "DEF")
    for _name, _schema in SCHEMAS.items():
        _LIBRARY.define(_schema)
    # composite: autograd differentiates the plain-PyTorch forward
    _LIBRARY.impl("lj_edge_energy", lj_edge_energy, "CompositeImplicitAutograd")
    _LIBRARY.impl("lj_edge_energy_backward", lj_edge_energy_backward, "CompositeImplicitAutograd")
