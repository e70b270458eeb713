"""A two-stage DFT-D3-style dispersion model (preset SPEC_DFTD3_HALO), float64, for H and O in
metal units, with a small made-up parameter table of D3's form (not Grimme's fitted values):
the reference for a dispersion correction added to an MLIP with pair_style hybrid/overlay.

  stage 1  CN_i = sum over edges j -> i of t(r) / (1 + exp(-16 (4/3 (Rcov_i + Rcov_j) / r - 1)))
           coordination numbers, complete on owned rows; refresh_neighbors gives ghosts theirs
  stage 2  C6_ij = sum_ab C6ref_ij[a,b] L_ab / sum_ab L_ab,
           L_ab = exp(-4 ((CN_i - CNref_i[a])^2 + (CN_j - CNref_j[b])^2))
           C8_ij = 3 C6_ij sqrt(Q_i Q_j),  R0 = sqrt(C8/C6),  f = a1 R0 + a2   (Becke-Johnson)
           e_i = -1/2 sum over edges j -> i of t(r) (s6 C6/(r^6 + f^6) + s8 C8/(r^8 + f^8))

with t(r) a smooth taper from 1 at CUTOFF - 1 A to 0 at CUTOFF (value and slope), so that the
energy is continuous at the cutoff. The dispersion cutoff (8 A) is longer than the MLIP's it
is paired with (mace_ho_tiny, 3 A): each pair_style instance has its own ghost cutoff, neighbor
list and exchange context. Forces: the framework differentiates the owned node energies.

    python models/dftd3.py -o potentials/dftd3_ho.pt
"""

import argparse
from typing import Dict

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import save_model

SPECIES = [1, 8]  # H, O
CUTOFF = 8.0
SPEC = {"preset": "SPEC_DFTD3_HALO"}
# per species (in SPECIES order): covalent radius (A), sqrt(Q) for C8, reference CNs
RCOV = [0.32, 0.63]
SQRT_Q = [2.00, 2.55]
CN_REF = [[0.0, 1.0], [0.0, 2.0]]
# C6 references (eV A^6) for species pairs [s_i][s_j][a][b]; symmetric
C6_REF = [[[[2.6, 1.8], [1.8, 1.3]], [[8.3, 6.0], [5.9, 4.4]]],
          [[[8.3, 5.9], [6.0, 4.4]], [[29.0, 22.0], [22.0, 16.5]]]]
S6, S8, A1, A2 = 1.0, 0.8, 0.4, 4.8 * 0.529177  # a2 in A


class DFTD3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        index = torch.full((119,), -1, dtype=torch.int64)
        for i, z in enumerate(SPECIES):
            index[z] = i
        self.species_index = index
        self.rcov = torch.tensor(RCOV, dtype=torch.float64)
        self.sqrt_q = torch.tensor(SQRT_Q, dtype=torch.float64)
        self.cn_ref = torch.tensor(CN_REF, dtype=torch.float64)
        self.c6_ref = torch.tensor(C6_REF, dtype=torch.float64)
        self.cutoff = CUTOFF
        self.s6, self.s8, self.a1, self.a2 = S6, S8, A1, A2

    def taper(self, r: torch.Tensor) -> torch.Tensor:
        s = torch.clamp(r - (self.cutoff - 1.0), 0.0, 1.0)
        return 1.0 - s * s * (3.0 - 2.0 * s)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        s = self.species_index[inputs["atomic_numbers"]].clamp(min=0)  # padding rows: any species
        si, sj = s[receivers], s[senders]
        r = torch.sqrt((edge_vectors * edge_vectors).sum(dim=1))
        t = self.taper(r)

        # stage 1: coordination numbers, owned rows complete, ghosts refreshed from their owners
        count = t / (1.0 + torch.exp(-16.0 * (4.0 / 3.0 * (self.rcov[si] + self.rcov[sj]) / r - 1.0)))
        cn = torch.zeros(s.shape[0], dtype=r.dtype, device=r.device).index_add(0, receivers, count)
        cn = torch.ops.nvalchemi.refresh_neighbors(cn)

        # stage 2: coordination-dependent C6 and the damped dispersion energy
        di = cn[receivers].unsqueeze(1) - self.cn_ref[si]  # [E, 2]
        dj = cn[senders].unsqueeze(1) - self.cn_ref[sj]
        weights = torch.exp(-4.0 * (di.unsqueeze(2) ** 2 + dj.unsqueeze(1) ** 2))  # [E, 2, 2]
        c6 = (self.c6_ref[si, sj] * weights).sum(dim=(1, 2)) / weights.sum(dim=(1, 2))
        c8 = 3.0 * c6 * self.sqrt_q[si] * self.sqrt_q[sj]
        f = self.a1 * torch.sqrt(c8 / c6) + self.a2
        r2 = r * r
        r6 = r2 * r2 * r2
        pair = self.s6 * c6 / (r6 + f ** 6) + self.s8 * c8 / (r6 * r2 + f ** 8)
        energies = torch.zeros_like(cn).index_add(0, receivers, -0.5 * t * pair)
        return {"atomic_energies": energies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True, help="path of the .pt file to write")
    args = parser.parse_args()
    save_model(DFTD3(), args.output, cutoff=CUTOFF, species=SPECIES, units="metal", spec=SPEC)


if __name__ == "__main__":
    main()
