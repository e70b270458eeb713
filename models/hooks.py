"""Hook modules for `fix nvalchemi/dd ... hook <file> <scope> <N>`: TorchScript (-o NAME.pt), or
an AOTInductor package compiled for this CPU (-o NAME.pt2, nvalchemi_lammps.export.save_hook).

A hook module maps a Dict[str, Tensor] batch to a Dict[str, Tensor] (doc/fix_nvalchemi_dd.rst):
inputs positions [n,3] (unwrapped), velocities [n,3], forces [n,3], atom_ids [n], atom_types [n],
atomic_numbers [n] (when a pair_style nvalchemi names the species), cell [1,3,3], pbc [1,3];
optional outputs forces [n,3] (added), energy (one value), virial [3,3].

    python models/hooks.py restraint --reference x0.dump --k 2.0 -o restraint.pt
    python models/hooks.py umbrella --k 5.0 --target 8.4 8.4 8.4 -o umbrella.pt

restraint: E = k/2 sum_i |x_i - x0_i|^2 with x0 looked up by atom ID, the same as LAMMPS'
  `fix spring/self k`; it acts on the atoms it is given, so it works in every scope. Virial:
  sum_i (x_i - x0_i) (x) f_i. The reference is a LAMMPS dump with columns `id xu yu zu`.
umbrella: E = k/2 |c - target|^2 on the centre c of the atoms (unwrapped mean position); with
  equal masses the same as `fix spring tether k x y z 0`. It needs all atoms of the group at
  once: run it in scope global or rank_zero.
"""

import argparse
from typing import Dict

import numpy as np
import torch


class HarmonicRestraint(torch.nn.Module):
    def __init__(self, k: float, reference: torch.Tensor):
        super().__init__()
        self.k = k
        self.register_buffer("reference", reference)  # [max ID + 1, 3]

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        dx = batch["positions"] - self.reference[batch["atom_ids"]]
        forces = -self.k * dx
        virial = (dx.unsqueeze(2) * forces.unsqueeze(1)).sum(dim=0)
        return {"forces": forces, "energy": 0.5 * self.k * (dx * dx).sum(), "virial": virial}


class CenterUmbrella(torch.nn.Module):
    def __init__(self, k: float, target: torch.Tensor):
        super().__init__()
        self.k = k
        self.register_buffer("target", target)  # [3]

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        positions = batch["positions"]
        n = positions.shape[0]
        d = positions.mean(dim=0) - self.target
        forces = (-self.k / max(n, 1)) * d.unsqueeze(0).expand(n, 3)
        return {"forces": forces.contiguous(), "energy": 0.5 * self.k * (d * d).sum()}


def read_reference(path: str) -> torch.Tensor:
    """x0 by atom ID from a LAMMPS dump (or plain table) with columns id xu yu zu."""
    with open(path) as f:
        lines = f.readlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("ITEM: ATOMS")), 0)
    rows = np.loadtxt(lines[start:], ndmin=2)
    ids = rows[:, 0].astype(np.int64)
    reference = np.zeros((ids.max() + 1, 3))
    reference[ids] = rows[:, 1:4]
    return torch.from_numpy(reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("kind", choices=["restraint", "umbrella"])
    parser.add_argument("-o", "--output", required=True, help="the file to write: .pt (TorchScript) or .pt2")
    parser.add_argument("--k", type=float, required=True, help="spring constant (energy/distance^2)")
    parser.add_argument("--reference", help="restraint: dump with columns id xu yu zu")
    parser.add_argument("--target", type=float, nargs=3, help="umbrella: target centre x y z")
    args = parser.parse_args()
    if args.kind == "restraint":
        if not args.reference:
            parser.error("restraint needs --reference")
        module = HarmonicRestraint(args.k, read_reference(args.reference))
    else:
        if not args.target:
            parser.error("umbrella needs --target")
        module = CenterUmbrella(args.k, torch.tensor(args.target, dtype=torch.float64))
    if args.output.endswith(".pt2"):
        from nvalchemi_lammps.export import save_hook
        save_hook(module, args.output)
    else:
        torch.jit.script(module.double().eval()).save(args.output)


if __name__ == "__main__":
    main()
