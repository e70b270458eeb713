"""Forces and virial, inside a model, from autograd of an energy that every rank holds whole
(a system_sum of partials plus terms of the whole system, as in a long-range model). Each rank
differentiates the same replicated energy and system_sum's backward all-reduces the gradient,
so every rank's result is the rank count times its part: the spec declares these outputs with
"autograd": true and the package divides by the number of ranks (doc/Howto_nvalchemi_spec.rst).

Geometry enters through the rows' positions (structure factors), the edge vectors and the cell.
Under a homogeneous strain e all three scale by (1 + e), so the virial is
W_ab = -(sum_rows x_a dE/dx_b + sum_edges r_a dE/dr_b + sum_lattice_rows c_a dE/dc_b).
"""

from typing import List, Optional, Tuple

import torch


def requiring_grad(t: torch.Tensor) -> torch.Tensor:
    """`t` as a leaf that requires grad (in LAMMPS the inputs do not; in a plain-PyTorch
    oracle they may already)."""
    return t if t.requires_grad else t.requires_grad_(True)


def forces_and_virial(energy: torch.Tensor, positions: torch.Tensor, edge_vectors: torch.Tensor,
                      cell: torch.Tensor, senders: torch.Tensor,
                      receivers: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Forces [N,3] on the rows (an edge r = x_receiver - x_sender pulls -dE/dr on its receiver
    and +dE/dr on its sender) and the virial [1,3,3] of `energy`, from the gradients with
    respect to positions, edge vectors and cell [1,3,3] (each requiring grad)."""
    grads: List[Optional[torch.Tensor]] = torch.autograd.grad(
        [energy], [positions, edge_vectors, cell], retain_graph=True, allow_unused=True)
    forces = torch.zeros_like(positions)
    virial = torch.zeros(3, 3, dtype=positions.dtype, device=positions.device)
    position_gradient = grads[0]
    if position_gradient is not None:
        forces = forces - position_gradient
        virial = virial - positions.detach().transpose(0, 1) @ position_gradient
    edge_gradient = grads[1]
    if edge_gradient is not None:
        forces = forces.index_add(0, receivers, -edge_gradient).index_add(0, senders, edge_gradient)
        virial = virial - edge_vectors.detach().transpose(0, 1) @ edge_gradient
    cell_gradient = grads[2]
    if cell_gradient is not None:
        virial = virial - cell.detach()[0].transpose(0, 1) @ cell_gradient[0]
    return forces, virial.view(1, 3, 3)
