"""A long-range reference model that computes its own forces (force strategy model), float64, no
trained weights: a smooth pair term on the halo plus a reciprocal-space term from structure
factors summed over all ranks, with charges that depend on each atom's coordination. It shows
the pattern of a long-range model under domain decomposition (SPEC_EWALD_HALO):

  c   = sum over edges into i of w                           coordination (owned rows complete)
  q   = refresh_neighbors(1 + 0.2 tanh(c - 4))               charges, ghost rows from owners
  e_i = sum over edges into i of 0.5 w q_i q_sender          real space, on the halo
  S_k = system_sum(q_i exp(i k.x_i), OWNED)                  structure factors over all ranks
  E   = system_sum(e, OWNED) + A/V sum_k exp(-k^2/4a^2)/k^2 |S_k|^2     replicated on every rank
  forces, virial = autograd of E inside the model (replicated_forces.py)

with w = exp(-r^2) (1 - r^2/rc^2)^2 for an edge of length r and k the 26 shortest reciprocal
lattice vectors (the structure factors do not change when an atom moves by a lattice vector, so
wrapped and unwrapped positions give the same energy). The spec declares forces and virial
"autograd": the package divides them by the number of ranks (replicated_forces.py says why).
It refreshes ghost rows once, so it declares 2 message-passing layers; it gives the same numbers
in halo modes local, layerwise and deep.

    python models/long_range.py -o potentials/long_range_ar.pt
"""

import argparse
from typing import Dict

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.replicated_forces import forces_and_virial, requiring_grad

CUTOFF = 2.5
SPEC = {"preset": "SPEC_EWALD_HALO", "num_message_passing_layers": 2, "exchange_feature_width": 1,
        "compile": {"force_strategy": "model_internal"},
        "outputs": {"forces": {"kind": "per_node", "reduce": "none", "autograd": True},
                    "virial": {"kind": "per_graph", "reduce": "none", "autograd": True}}}


class LongRange(torch.nn.Module):
    def __init__(self):
        super().__init__()
        images = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1) if (a, b, c) != (0, 0, 0)]
        self.images = torch.tensor(images, dtype=torch.float64)
        self.cutoff = CUTOFF
        self.amplitude = 0.4
        self.alpha = 0.8

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        positions = requiring_grad(inputs["positions"])
        edge_vectors = requiring_grad(inputs["edge_vectors"])
        cell = requiring_grad(inputs["cell"])
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        n = positions.shape[0]
        dtype = positions.dtype
        device = positions.device
        r2 = (edge_vectors * edge_vectors).sum(dim=1)
        w = torch.exp(-r2) * (1.0 - r2 / (self.cutoff * self.cutoff)) ** 2  # smooth at the cutoff
        zeros = torch.zeros(n, dtype=dtype, device=device)
        coordination = zeros.index_add(0, receivers, w)
        q = torch.ops.nvalchemi.refresh_neighbors(1.0 + 0.2 * torch.tanh(coordination - 4.0))
        e_real = zeros.index_add(0, receivers, 0.5 * w * q[receivers] * q[senders])

        lattice = cell[0]
        k = self.images.to(device, dtype) @ (2.0 * torch.pi * torch.linalg.inv(lattice).transpose(0, 1))
        phase = positions @ k.transpose(0, 1)  # [N, K]
        partial = torch.cat([q.unsqueeze(1) * torch.cos(phase), q.unsqueeze(1) * torch.sin(phase)], dim=1)
        structure = torch.ops.nvalchemi.system_sum(partial, 1)  # [2K], the same on every rank
        kk = (k * k).sum(dim=1)
        s2 = structure[: k.shape[0]] ** 2 + structure[k.shape[0]:] ** 2
        volume = torch.linalg.det(lattice).abs()
        e_recip = self.amplitude / volume * (torch.exp(-kk / (4.0 * self.alpha ** 2)) / kk * s2).sum()
        energy = torch.ops.nvalchemi.system_sum(e_real, 1) + e_recip
        count = torch.ops.nvalchemi.system_sum(torch.ones(n, dtype=dtype, device=device), 1)
        owned = (torch.arange(n, device=device) < inputs["n_owned"]).to(dtype)
        forces, virial = forces_and_virial(energy, positions, edge_vectors, cell, senders, receivers)
        return {"energy": energy.view(1, 1), "atomic_energies": (e_real + e_recip / count) * owned,
                "forces": forces, "virial": virial}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True, help="path of the .pt file to write")
    args = parser.parse_args()
    save_model(LongRange(), args.output, cutoff=CUTOFF, species=[18], units="lj", spec=SPEC)


if __name__ == "__main__":
    main()
