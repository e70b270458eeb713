"""The single-process reference graph of a whole periodic cell: every atom a row, periodic
images entering as edge vectors that carry the lattice shift (doc/Howto_nvalchemi_contract.rst).
The plain-PyTorch oracles of the tests evaluate a model on these inputs."""

import itertools
import math
from typing import Dict, List

import torch

from nvalchemi_lammps.model_file import DEFAULT_ENERGY_KEY


def heights(cell: torch.Tensor):
    """Distances between opposite faces of the cell (rows = lattice vectors)."""
    volume = torch.linalg.det(cell).abs()
    a, b, c = cell
    return [float(volume / torch.linalg.cross(b, c).norm()), float(volume / torch.linalg.cross(c, a).norm()),
            float(volume / torch.linalg.cross(a, b).norm())]


def lattice_shifts(cell: torch.Tensor, reach: float) -> List[torch.Tensor]:
    """Every lattice vector i a + j b + k c with |i|, |j|, |k| up to what `reach` needs along
    each axis (cell rows = lattice vectors), the zero shift included."""
    counts = [int(math.ceil(reach / h)) for h in heights(cell)]
    return [torch.tensor(image, dtype=cell.dtype) @ cell
            for image in itertools.product(*(range(-k, k + 1) for k in counts))]


def periodic_edges(positions: torch.Tensor, cell: torch.Tensor, cutoff: float):
    """Every atom a row, an edge to every periodic image within `cutoff` (any cell size):
    (senders, receivers, shifts), the edge vector being x[receiver] - (x[sender] + shift)."""
    positions, cell = positions.detach(), cell.detach()
    senders, receivers, shifts = [], [], []
    for shift in lattice_shifts(cell, cutoff):
        d = positions.unsqueeze(1) - (positions.unsqueeze(0) + shift)  # [recv, send]
        close = (d * d).sum(-1) < cutoff * cutoff
        if not shift.any():
            close.fill_diagonal_(False)
        recv, send = close.nonzero(as_tuple=True)
        receivers.append(recv)
        senders.append(send)
        shifts.append(shift.expand(recv.shape[0], 3))
    return torch.cat(senders), torch.cat(receivers), torch.cat(shifts)


def periodic_inputs(positions: torch.Tensor, atomic_numbers: torch.Tensor, cell: torch.Tensor,
                    cutoff: float) -> Dict[str, torch.Tensor]:
    """The contract's inputs for the whole cell (periodic_edges). `positions` and the returned
    `edge_vectors` keep their autograd links."""
    senders, receivers, shifts = periodic_edges(positions, cell, cutoff)
    return {"positions": positions, "atomic_numbers": atomic_numbers,
            "neighbor_list": torch.stack([senders, receivers], dim=1),
            "edge_vectors": positions[receivers] - (positions[senders] + shifts),
            "cell": cell.view(1, 3, 3), "pbc": torch.ones(1, 3, dtype=torch.bool), "n_owned": torch.tensor(positions.shape[0])}


def node_energy_reference(model: torch.nn.Module, positions: torch.Tensor, atomic_numbers: torch.Tensor,
                          cell: torch.Tensor, cutoff: float):
    """Energy, forces, virial (LAMMPS order xx yy zz xy xz yz, W = sum r (x) f) and per-atom
    energies of a model that returns node energies ('atomic_energies'), on the whole cell in one
    process: forces and virial by autograd of the summed energy."""
    positions = positions.clone().requires_grad_(True)
    inputs = periodic_inputs(positions, atomic_numbers, cell, cutoff)
    edge_vectors = inputs["edge_vectors"]
    energies = model(inputs)[DEFAULT_ENERGY_KEY]
    energy = energies.sum()
    edge_grad, pos_grad = torch.autograd.grad(energy, [edge_vectors, positions])
    w = -(edge_vectors.detach().unsqueeze(2) * edge_grad.unsqueeze(1)).sum(0)
    virial = torch.stack([w[0, 0], w[1, 1], w[2, 2], w[0, 1], w[0, 2], w[1, 2]])
    return energy.detach(), -pos_grad, virial, energies.detach()
