"""A SchNet-style message-passing reference model (continuous-filter convolutions with a smooth
cutoff), float64, with fixed pseudo-random weights, built twice from the same weights:

  layerwise  refreshes ghost rows from their owners between layers
             (torch.ops.nvalchemi.refresh_neighbors): halo mode layerwise
  deep       never calls the exchange ops: halo mode deep (ghost shell of L cutoffs)

Both compute all geometry from edge_vectors, so `reference()` below evaluates either on a whole
periodic cell in one process, with explicit periodic images: the plain-PyTorch oracle.

    python models/schnet.py <output dir> [.pt2 [cpu|cuda [layerwise|deep]]]
        writes schnet_layerwise.pt and schnet_deep.pt (or their AOTInductor .pt2 builds, compiled
        for this machine's CPU or its GPU), or the one named
"""

import math
import os
import sys
from typing import Dict

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.owned_rows import owned_count, owned_rows, per_row, with_ghost_rows
from nvalchemi_lammps.periodic import node_energy_reference

CUTOFF = 2.5
LAYERS = 3
FEATURES = 16
BASIS = 12
SPECIES = [18]  # Ar


class SchNet(torch.nn.Module):
    def __init__(self, layerwise: bool, seed: int = 20261129, layers: int = LAYERS):
        super().__init__()
        self.layerwise = layerwise
        self.cutoff = CUTOFF
        self.layers = layers
        g = torch.Generator().manual_seed(seed)

        def weight(*shape, fan_in, scale=1.0):
            return torch.nn.Parameter(scale * torch.randn(*shape, generator=g, dtype=torch.float64)
                                      / math.sqrt(fan_in))

        self.embedding = weight(119, FEATURES, fan_in=1)
        # a buffer, so that it moves with the module (an AOTInductor build for a GPU)
        self.register_buffer("centers", torch.linspace(0.8, CUTOFF, BASIS, dtype=torch.float64))
        self.filter1 = weight(layers, BASIS, FEATURES, fan_in=BASIS)
        self.filter2 = weight(layers, FEATURES, FEATURES, fan_in=FEATURES)
        self.update = weight(layers, FEATURES, FEATURES, fan_in=FEATURES)
        self.readout = weight(FEATURES, 1, fan_in=FEATURES, scale=0.1)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        r = torch.sqrt((edge_vectors * edge_vectors).sum(dim=1))
        # smooth cutoff: value and slope vanish at the cutoff
        envelope = 0.5 * (torch.cos(math.pi * r / self.cutoff) + 1.0)
        envelope = envelope * envelope
        basis = torch.exp(-4.0 * (r.unsqueeze(1) - self.centers.unsqueeze(0)) ** 2) * envelope.unsqueeze(1)
        h = self.embedding[inputs["atomic_numbers"]]
        rows = h.shape[0]
        # layerwise: layers update owned rows only, ghost rows take their owners' features from
        # the refresh before they are read (nvalchemi_lammps.owned_rows); deep: every row
        updated = owned_count(inputs["n_owned"], rows) if self.layerwise else rows
        for layer in range(self.layers):
            if self.layerwise and layer > 0:
                h = with_ghost_rows(h, rows)
            w = torch.tanh(basis @ self.filter1[layer]) @ self.filter2[layer]
            messages = torch.zeros_like(h).index_add(0, receivers, h[senders] * w)
            h = owned_rows(h, updated) + torch.tanh(owned_rows(messages, updated) @ self.update[layer])
        atomic_energies = per_row((h @ self.readout).squeeze(1), rows)
        return {"atomic_energies": atomic_energies}


def build(outdir: str, extension: str = ".pt", device: str = "cpu", only: str = "") -> None:
    os.makedirs(outdir, exist_ok=True)
    for name, layerwise, spec in (
            ("schnet_layerwise", True, {"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": LAYERS,
                                           "exchange_feature_width": FEATURES}),
            ("schnet_deep", False, {"preset": "SPEC_MPNN_HALO", "halo": "deep",
                                       "num_message_passing_layers": LAYERS})):
        if only and name != "schnet_" + only:
            continue
        save_model(SchNet(layerwise), os.path.join(outdir, name + extension), cutoff=CUTOFF, species=SPECIES,
                   units="lj", spec=spec, device=device)


def reference(model: torch.nn.Module, positions, atomic_numbers, cell):
    """Energy, forces, virial and per-atom energies of the whole periodic cell in one process
    (periodic.node_energy_reference)."""
    return node_energy_reference(model, positions, atomic_numbers, cell, CUTOFF)


if __name__ == "__main__":
    build(*sys.argv[1:5])
