"""Lennard-Jones as an nvalchemi model: the same functional form and shift convention as
LAMMPS' `pair_style lj/cut` (one epsilon, sigma and cutoff for every species).

    python potentials/lennard_jones.py -o potentials/lj_ar.pt   # the committed reference model
"""

import argparse
from typing import Dict

import torch

from nvalchemi_export import save_model


class LennardJones(torch.nn.Module):
    """E = sum over pairs of 4 eps [(sigma/r)^12 - (sigma/r)^6] - offset, for r < cutoff.

    offset is the energy at the cutoff when `shift` is set (lj/cut with `pair_modify shift yes`),
    else zero (the lj/cut default). Each edge carries half of its pair's energy to its receiver,
    so the atomic energies equal lj/cut's per-atom energies.
    """

    def __init__(self, epsilon: float, sigma: float, cutoff: float, shift: bool):
        super().__init__()
        self.epsilon = epsilon
        self.sigma = sigma
        sr6 = (sigma / cutoff) ** 6
        self.offset = 4.0 * epsilon * (sr6 * sr6 - sr6) if shift else 0.0

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        receivers = inputs["neighbor_list"][:, 1]
        num_atoms = inputs["positions"].shape[0]
        r2 = (edge_vectors * edge_vectors).sum(dim=1)
        sr6 = (self.sigma * self.sigma / r2) ** 3
        pair_energy = 4.0 * self.epsilon * (sr6 * sr6 - sr6) - self.offset
        atomic_energies = torch.zeros(num_atoms, dtype=edge_vectors.dtype)
        atomic_energies = atomic_energies.index_add(0, receivers, 0.5 * pair_energy)
        return {"atomic_energies": atomic_energies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True, help="path of the .pt file to write")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--cutoff", type=float, default=2.5)
    parser.add_argument("--shift", action="store_true", help="shift the energy to zero at the cutoff")
    parser.add_argument("--units", default="lj", help="LAMMPS unit style of epsilon and sigma")
    parser.add_argument("--species", type=int, nargs="+", default=[18], help="atomic numbers (default: 18, Ar)")
    parser.add_argument("--float32", action="store_true", help="compute in float32 instead of float64")
    args = parser.parse_args()
    model = LennardJones(args.epsilon, args.sigma, args.cutoff, args.shift)
    save_model(
        model,
        args.output,
        cutoff=args.cutoff,
        species=args.species,
        units=args.units,
        dtype=torch.float32 if args.float32 else torch.float64,
    )


if __name__ == "__main__":
    main()
