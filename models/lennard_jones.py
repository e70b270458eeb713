"""Lennard-Jones as an nvalchemi model: the same functional form and shift convention as
LAMMPS' `pair_style lj/cut` (one epsilon, sigma and cutoff for every species).

    python models/lennard_jones.py -o potentials/lj_ar.pt   # the committed reference model

With --model-forces the model also returns its own forces, virial and per-atom virials
(computed analytically) and its energy, so that all three force strategies can run it; its spec
says force strategy model, or --force-strategy's (the keyword 'forces' picks another for a
TorchScript file; a package compiles its spec's in). With
--fused the pair energies come from the fused kernel torch.ops.nvalchemi_kernels.lj_edge_energy
(kernels/nvalchemi_kernels.cpp; LAMMPS loads it with `library nvalchemi_kernels.so`).
"""

import argparse
from typing import Dict

import torch

import nvalchemi_kernels  # noqa: F401  (torch.ops.nvalchemi_kernels for scripting)
from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.owned_rows import owned_count


def pair_terms(edge_vectors: torch.Tensor, epsilon: float, sigma: float, offset: float):
    """Pair energy of each edge and d(energy)/d(edge vector)."""
    r2 = (edge_vectors * edge_vectors).sum(dim=1)
    sr6 = (sigma * sigma / r2) ** 3
    energy = 4.0 * epsilon * (sr6 * sr6 - sr6) - offset
    # d/dr of 4 eps (s^12 r^-12 - s^6 r^-6), times r_vec / r
    gradient = (4.0 * epsilon * (-12.0 * sr6 * sr6 + 6.0 * sr6) / r2).unsqueeze(1) * edge_vectors
    return energy, gradient


class LennardJones(torch.nn.Module):
    """E = sum over pairs of 4 eps [(sigma/r)^12 - (sigma/r)^6] - offset, for r < cutoff.

    offset is the energy at the cutoff when `shift` is set (lj/cut with `pair_modify shift yes`),
    else zero (the lj/cut default). Each edge carries half of its pair's energy to its receiver,
    so the atomic energies equal lj/cut's per-atom energies.
    """

    def __init__(self, epsilon: float, sigma: float, cutoff: float, shift: bool, model_forces: bool = False):
        super().__init__()
        self.model_forces = model_forces
        self.epsilon = epsilon
        self.sigma = sigma
        sr6 = (sigma / cutoff) ** 6
        self.offset = 4.0 * epsilon * (sr6 * sr6 - sr6) if shift else 0.0

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        num_atoms = inputs["positions"].shape[0]
        pair_energy, pair_gradient = pair_terms(edge_vectors, self.epsilon, self.sigma, self.offset)
        atomic_energies = torch.zeros(num_atoms, dtype=edge_vectors.dtype, device=edge_vectors.device)
        atomic_energies = atomic_energies.index_add(0, receivers, 0.5 * pair_energy)
        outputs = {"atomic_energies": atomic_energies}
        if self.model_forces:
            # every edge's receiver is owned, so each edge enters this rank's energy with 1/2
            g = 0.5 * pair_gradient.detach()
            forces = torch.zeros(num_atoms, 3, dtype=edge_vectors.dtype, device=edge_vectors.device)
            forces = forces.index_add(0, receivers, -g).index_add(0, senders, g)
            edge_virials = -edge_vectors.detach().unsqueeze(2) * g.unsqueeze(1)
            atomic_virials = torch.zeros(num_atoms, 3, 3, dtype=edge_vectors.dtype, device=edge_vectors.device)
            atomic_virials = atomic_virials.index_add(0, receivers, 0.5 * edge_virials)
            atomic_virials = atomic_virials.index_add(0, senders, 0.5 * edge_virials)
            n_owned = owned_count(inputs["n_owned"], num_atoms)
            outputs["energy"] = atomic_energies[:n_owned].sum().view(1, 1)
            outputs["forces"] = forces
            outputs["virial"] = edge_virials.sum(dim=0).view(1, 3, 3)
            outputs["atomic_virials"] = atomic_virials
        return outputs


class FusedLennardJones(torch.nn.Module):
    """LennardJones with its pair energies (and their edge gradients) from the fused kernel: one
    pass over the edges each way instead of a chain of PyTorch operators. One species."""

    def __init__(self, epsilon: float, sigma: float, cutoff: float, shift: bool):
        super().__init__()
        sr6 = (sigma / cutoff) ** 6
        self.register_buffer("epsilon", torch.tensor([epsilon], dtype=torch.float64))
        self.register_buffer("sigma", torch.tensor([sigma], dtype=torch.float64))
        self.register_buffer("offset", torch.tensor([4.0 * epsilon * (sr6 * sr6 - sr6) if shift else 0.0],
                                                    dtype=torch.float64))

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        receivers = inputs["neighbor_list"][:, 1]
        edge_types = torch.zeros_like(receivers)
        pair_energy = torch.ops.nvalchemi_kernels.lj_edge_energy(edge_vectors, edge_types, self.epsilon,
                                                                 self.sigma, self.offset)
        atomic_energies = torch.zeros(inputs["positions"].shape[0], dtype=edge_vectors.dtype,
                                      device=edge_vectors.device)
        return {"atomic_energies": atomic_energies.index_add(0, receivers, 0.5 * pair_energy)}


# how the model's own forces, virial and per-atom virials are consolidated (--model-forces)
MODEL_FORCES_OUTPUTS = {"forces": {"kind": "per_node", "reduce": "all_reduce"},
                        "virial": {"kind": "per_graph", "reduce": "all_reduce"},
                        "atomic_virials": {"kind": "per_node", "reduce": "all_reduce"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True,
                        help="path of the model to write: .pt (TorchScript) or .pt2 (AOTInductor)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--cutoff", type=float, default=2.5)
    parser.add_argument("--shift", action="store_true", help="shift the energy to zero at the cutoff")
    parser.add_argument("--units", default="lj", help="LAMMPS unit style of epsilon and sigma")
    parser.add_argument("--species", type=int, nargs="+", default=[18], help="atomic numbers (default: 18, Ar)")
    parser.add_argument("--float32", action="store_true", help="compute in float32 instead of float64")
    parser.add_argument("--model-forces", action="store_true",
                        help="also return energy, forces, virial and atomic_virials (all force strategies)")
    parser.add_argument("--force-strategy", choices=["model", "node_energy", "global_energy"], default="model",
                        help="with --model-forces: the force strategy of its spec (a package compiles it in)")
    parser.add_argument("--fused", action="store_true",
                        help="pair energies from the fused kernel library (one species; not with --model-forces)")
    args = parser.parse_args()
    if args.fused and (args.model_forces or len(args.species) != 1):
        parser.error("--fused takes one species and no --model-forces")
    model = (FusedLennardJones(args.epsilon, args.sigma, args.cutoff, args.shift) if args.fused
             else LennardJones(args.epsilon, args.sigma, args.cutoff, args.shift, args.model_forces))
    spec = {"preset": "SPEC_LJ_HALO"}
    if args.model_forces:  # for a TorchScript file, the keyword 'forces' picks another strategy
        spec.update(outputs=MODEL_FORCES_OUTPUTS, compile={"force_strategy": args.force_strategy})
    save_model(
        model,
        args.output,
        cutoff=args.cutoff,
        species=args.species,
        units=args.units,
        dtype=torch.float32 if args.float32 else torch.float64,
        spec=spec,
    )


if __name__ == "__main__":
    main()
