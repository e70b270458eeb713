"""Ewald summation as a contract model (preset SPEC_EWALD_HALO), float64, no trained weights:
the reference for long-range electrostatics under domain decomposition, with LAMMPS'
`pair_style coul/long` + `kspace_style ewald` as its oracle.

  E = sum_i e_i + E_k + E_self + E_neutral                                (LAMMPS' ewald)
  e_i    = 1/2 sum over edges j -> i of C q_i q_j erfc(g r) / r          real space, on the halo
  S(k)   = rank_sum(sum over owned atoms of q_i exp(i k.x_i))              structure factors
  E_k    = C 2 pi / V sum_k exp(-k^2 / 4 g^2) / k^2 |S(k)|^2             the same on every rank
  E_self = -C g / sqrt(pi) sum_i q_i^2,  E_neutral = -C pi Q^2 / (2 g^2 V)

with C the units' Coulomb constant (qqrd2e), g the splitting parameter and k = 2 pi m B
(B: reciprocal lattice, rows) for integer m != 0 with |m_d| <= kmax_d and
|k|^2 <= max_d (kmax_d |b_d|)^2, LAMMPS' rule for `kspace_modify kmax/ewald` (the same vectors
in an orthogonal box). Forces and virial: autograd of the replicated E inside the model
(replicated_forces.py), declared "autograd".

Charges, two variants:
  fixed      q per species (the table given);
  predicted  q_i = q0(Z_i) + chi tanh(c_i - c0), c_i a smooth coordination number over the
             halo edges (complete on owned rows), refreshed to ghosts (refresh_neighbors), then
             made neutral by subtracting the mean over the whole system (system_sum): a charge
             model of the kind a long-range MLIP carries. The model declares 2 message-passing
             layers (one refresh).

Outputs: energy (replicated), atomic_energies (real space + self + each atom's share
q_i Re(conj S(k) e^{i k.x_i}) of the reciprocal term), forces, virial, charges (per atom, for
compute nvalchemi/atom) and kspace_energy = E_k + E_self + E_neutral (what LAMMPS reports as
elong).

    python models/ewald.py -o potentials/ewald_nacl.pt [--predicted]
"""

import argparse
import math
from typing import Dict, List

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.owned_rows import owned_count
from nvalchemi_lammps.replicated_forces import forces_and_virial, requiring_grad

# NaCl in metal units: the parameters the oracle (tests, examples/ewald) gives LAMMPS
SPECIES = [11, 17]
CHARGES = [1.0, -1.0]
CUTOFF = 6.0      # real-space cutoff (A), pair_style coul/long 6.0
G_EWALD = 0.45    # kspace_modify gewald 0.45 (1/A)
KMAX = (7, 7, 7)  # kspace_modify kmax/ewald 7 7 7
QQRD2E = 14.399645  # LAMMPS' qqr2e for units metal (eV A / e^2)

REPLICATED = {"kind": "per_graph", "reduce": "none", "autograd": True}
SPEC = {"preset": "SPEC_EWALD_HALO", "compile": {"force_strategy": "model_internal"},
        "outputs": {"forces": {"kind": "per_node", "reduce": "none", "autograd": True},
                    "virial": REPLICATED,
                    "charges": {"kind": "per_node", "reduce": "owned_only"},
                    "kspace_energy": {"kind": "per_graph", "reduce": "none"}}}
PREDICTED_SPEC = dict(SPEC, num_message_passing_layers=2, exchange_feature_width=1)


class PointCharges(torch.nn.Module):
    """What the Ewald and particle-mesh models share: the charges, the real-space and self terms,
    and the assembly of energy, forces, virial and outputs around a reciprocal term."""

    def __init__(self, species: List[int], charges: List[float], predicted: bool, cutoff: float = CUTOFF,
                 g_ewald: float = G_EWALD, qqrd2e: float = QQRD2E):
        super().__init__()
        table = torch.zeros(119, dtype=torch.float64)
        for z, q in zip(species, charges):
            table[z] = q
        self.charge_of_element = table
        self.predicted = predicted
        self.electronegativity_scale = 0.1  # chi
        self.reference_coordination = 6.0  # c0
        self.cutoff = cutoff
        self.g_ewald = g_ewald
        self.qqrd2e = qqrd2e

    def charges(self, inputs: Dict[str, torch.Tensor], r: torch.Tensor) -> torch.Tensor:
        q = self.charge_of_element[inputs["atomic_numbers"]]
        if not self.predicted:
            return q
        receivers = inputs["neighbor_list"][:, 1]
        # smooth coordination: 1 well inside 3 A, 0 from 4 A on
        s = torch.clamp(r - 3.0, 0.0, 1.0)
        w = 1.0 - s * s * (3.0 - 2.0 * s)
        coordination = torch.zeros_like(q).index_add(0, receivers, w)
        q = q + self.electronegativity_scale * torch.tanh(coordination - self.reference_coordination)
        q = torch.ops.nvalchemi.refresh_neighbors(q)
        n = q.shape[0]
        total = torch.ops.nvalchemi.system_sum(q, 1)
        count = torch.ops.nvalchemi.system_sum(torch.ones(n, dtype=q.dtype, device=q.device), 1)
        return q - total / count

    def short_range(self, inputs: Dict[str, torch.Tensor], edge_vectors: torch.Tensor) -> List[torch.Tensor]:
        """[charges, real-space energy of each row, self energy of each row]"""
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        r = torch.sqrt((edge_vectors * edge_vectors).sum(dim=1))
        q = self.charges(inputs, r)
        c = self.qqrd2e
        pair = 0.5 * c * q[receivers] * q[senders] * torch.erfc(self.g_ewald * r) / r
        e_real = torch.zeros_like(q).index_add(0, receivers, pair)
        e_self = -c * self.g_ewald / math.sqrt(math.pi) * q * q
        return [q, e_real, e_self]

    def assemble(self, inputs: Dict[str, torch.Tensor], positions: torch.Tensor, edge_vectors: torch.Tensor,
                 cell: torch.Tensor, q: torch.Tensor, e_real: torch.Tensor, e_self: torch.Tensor,
                 e_k: torch.Tensor, e_k_atom: torch.Tensor) -> Dict[str, torch.Tensor]:
        """The outputs, from the reciprocal energy e_k (replicated) and each row's share of it."""
        n = positions.shape[0]
        g = self.g_ewald
        volume = torch.linalg.det(cell[0]).abs()
        total_charge = torch.ops.nvalchemi.system_sum(q, 1)
        e_neutral = -self.qqrd2e * math.pi * total_charge * total_charge / (2.0 * g * g * volume)
        kspace_energy = e_k + torch.ops.nvalchemi.system_sum(e_self, 1) + e_neutral
        energy = torch.ops.nvalchemi.system_sum(e_real, 1) + kspace_energy
        forces, virial = forces_and_virial(energy, positions, edge_vectors, cell, inputs["neighbor_list"][:, 0],
                                           inputs["neighbor_list"][:, 1])
        count = torch.ops.nvalchemi.system_sum(torch.ones(n, dtype=q.dtype, device=q.device), 1)
        owned = (torch.arange(n, device=q.device) < inputs["n_owned"]).to(q.dtype)
        atomic_energies = (e_real + e_self + e_k_atom + e_neutral / count) * owned
        return {"energy": energy.detach().view(1, 1), "atomic_energies": atomic_energies.detach(),
                "forces": forces, "virial": virial, "charges": q.detach(),
                "kspace_energy": kspace_energy.detach().view(1)}


class Ewald(PointCharges):
    def __init__(self, species: List[int], charges: List[float], predicted: bool, kmax=KMAX):
        super().__init__(species, charges, predicted)
        self.kmax = torch.tensor(kmax, dtype=torch.float64)
        ranges = [torch.arange(-k, k + 1, dtype=torch.float64) for k in kmax]
        m = torch.cartesian_prod(*ranges)
        self.m = m[(m != 0).any(dim=1)]  # every integer vector of the box but 0

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        positions = requiring_grad(inputs["positions"])
        edge_vectors = requiring_grad(inputs["edge_vectors"])
        cell = requiring_grad(inputs["cell"])
        q, e_real, e_self = self.short_range(inputs, edge_vectors)

        reciprocal = 2.0 * math.pi * torch.linalg.inv(cell[0]).transpose(0, 1)  # rows b_d
        kmax_sq = (self.kmax.to(q.device) ** 2 * (reciprocal * reciprocal).sum(dim=1)).max() * 1.00001
        k_all = self.m.to(q.device, q.dtype) @ reciprocal
        kk_all = (k_all * k_all).sum(dim=1)
        inside = kk_all <= kmax_sq.detach()
        k = k_all[inside]
        kk = kk_all[inside]
        # the owned rows only: ghost rows would repeat other ranks' (or periodic images') terms
        owned = owned_count(inputs["n_owned"], q.shape[0])
        q_owned = q[:owned].unsqueeze(1)
        phase = positions[:owned] @ k.transpose(0, 1)  # [owned, K]
        cos, sin = torch.cos(phase), torch.sin(phase)
        partial = torch.cat([(q_owned * cos).sum(dim=0), (q_owned * sin).sum(dim=0)])
        structure = torch.ops.nvalchemi.rank_sum(partial)  # [2K], the same on every rank
        s_re, s_im = structure[: k.shape[0]], structure[k.shape[0]:]
        g = self.g_ewald
        volume = torch.linalg.det(cell[0]).abs()
        weight = self.qqrd2e * 2.0 * math.pi / volume * torch.exp(-kk / (4.0 * g * g)) / kk
        e_k = (weight * (s_re * s_re + s_im * s_im)).sum()
        # each atom's share of E_k: q_i Re(conj S e^{ik.x_i}), summing to E_k over all atoms
        e_k_owned = q[:owned] * ((cos * s_re + sin * s_im) * weight).sum(dim=1)
        e_k_atom = torch.cat([e_k_owned, torch.zeros_like(q[owned:])])
        return self.assemble(inputs, positions, edge_vectors, cell, q, e_real, e_self, e_k, e_k_atom)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True, help="path of the .pt file to write")
    parser.add_argument("--predicted", action="store_true", help="charges predicted from coordination")
    args = parser.parse_args()
    save_model(Ewald(SPECIES, CHARGES, args.predicted), args.output, cutoff=CUTOFF, species=SPECIES,
               units="metal", spec=PREDICTED_SPEC if args.predicted else SPEC)


if __name__ == "__main__":
    main()
