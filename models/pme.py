"""Smooth particle-mesh Ewald as a contract model (preset SPEC_PME_HALO), float64: the
real-space and self terms of ewald.py, and the reciprocal term on a mesh (Essmann et al. 1995),
with LAMMPS' `kspace_style pppm` as its oracle.

  s     = x B^T                      fractional coordinates (B = inverse lattice), u = K s
  Q     = sum over owned atoms of q_i prod_d M_p(u_id - k_d)     charges spread on the mesh
  Q     = rank_sum(Q)                 the whole mesh, summed over ranks, on every rank
  E_k   = sum_m W(m) |FFT(Q)(m)|^2 = sum_k Q(k) phi(k),   phi = K1 K2 K3 IFFT(W FFT(Q))
  W(m)  = C 2 pi / V exp(-k^2 / 4 g^2) / k^2 |b(m)|^2  (m != 0),  k = 2 pi m B
  e_i   = q_i sum_k M_p(u_i - k) phi(k)                              each atom's share of E_k

with M_p the cardinal B-spline of order p (4) and |b(m)|^2 its Euler exponential-spline factor.
The mesh is whole on every rank: the all-reduce moves K1 K2 K3 values per step and every rank
runs the same FFT (doc/Howto_nvalchemi_presets.rst measures where that stops paying). Forces and
virial: autograd of the replicated energy inside the model, declared "autograd".

    python models/pme.py -o potentials/pme_nacl.pt [--mesh K]
"""

import argparse
import math
from typing import Dict, List

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi for scripting)
from ewald import CHARGES, CUTOFF, SPEC, SPECIES, PointCharges
from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.owned_rows import owned_count
from nvalchemi_lammps.replicated_forces import requiring_grad

MESH = 24    # kspace_modify mesh 24 24 24
ORDER = 4    # kspace_modify order 4 (cubic B-splines)
PME_SPEC = dict(SPEC, preset="SPEC_PME_HALO")


def bspline4(w: torch.Tensor) -> torch.Tensor:
    """M_4(w + j) for j = 0..3, w in [0, 1): [.., 4]."""
    w2 = w * w
    w3 = w2 * w
    return torch.stack([w3 / 6.0, (-3.0 * w3 + 3.0 * w2 + 3.0 * w + 1.0) / 6.0,
                        (3.0 * w3 - 6.0 * w2 + 4.0) / 6.0, (1.0 - w) ** 3 / 6.0], dim=-1)


def spline_modulus(k: int) -> torch.Tensor:
    """|b(m)|^2 for m = 0..k-1 (order 4): 1 / |sum_j M_4(j + 1) exp(2 pi i m j / k)|^2."""
    values = bspline4(torch.zeros(1, dtype=torch.float64))[0]  # M_4(1), M_4(2), M_4(3) at j = 1..3
    m = torch.arange(k, dtype=torch.float64)
    re = torch.zeros(k, dtype=torch.float64)
    im = torch.zeros(k, dtype=torch.float64)
    for j in range(3):
        re = re + values[j + 1] * torch.cos(2.0 * math.pi * m * j / k)
        im = im + values[j + 1] * torch.sin(2.0 * math.pi * m * j / k)
    return 1.0 / (re * re + im * im)


class PME(PointCharges):
    def __init__(self, species: List[int], charges: List[float], mesh: int = MESH):
        super().__init__(species, charges, predicted=False)
        self.mesh = mesh
        self.modulus = spline_modulus(mesh)
        self.frequencies = torch.fft.fftfreq(mesh, d=1.0 / mesh).to(torch.float64)  # 0, 1, .., -1
        offsets = torch.arange(4)
        self.stencil = torch.stack(torch.meshgrid(offsets, offsets, offsets, indexing="ij"), dim=-1).reshape(-1, 3)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        positions = requiring_grad(inputs["positions"])
        edge_vectors = requiring_grad(inputs["edge_vectors"])
        cell = requiring_grad(inputs["cell"])
        q, e_real, e_self = self.short_range(inputs, edge_vectors)
        dtype = positions.dtype
        device = positions.device
        k_mesh = self.mesh
        owned = owned_count(inputs["n_owned"], q.shape[0])

        # spread the owned atoms' charges: point k = floor(u) - j carries M_4(w + j)
        inverse = torch.linalg.inv(cell[0])
        u = k_mesh * (positions[:owned] @ inverse)  # [owned, 3]
        base = torch.floor(u.detach())
        weights = bspline4(u - base)  # [N, 3, 4]
        stencil = self.stencil.to(device)
        points = torch.remainder(base.to(torch.int64).unsqueeze(1) - stencil.unsqueeze(0), k_mesh)  # [N, 64, 3]
        flat = (points[..., 0] * k_mesh + points[..., 1]) * k_mesh + points[..., 2]
        # the stencil's weights as an outer product, in its order (a gather of the weights by the
        # stencil's offsets compiles wrongly with AOTInductor in torch 2.13: doc/Howto_nvalchemi_presets.rst)
        w = (weights[:, 0, :, None, None] * weights[:, 1, None, :, None] * weights[:, 2, None, None, :]).reshape(-1, 64)
        spread = (q[:owned].unsqueeze(1) * w).reshape(-1)
        mesh = torch.zeros(k_mesh * k_mesh * k_mesh, dtype=dtype, device=device).index_add(0, flat.reshape(-1), spread)
        mesh = torch.ops.nvalchemi.rank_sum(mesh).view(k_mesh, k_mesh, k_mesh)

        freq = self.frequencies.to(device, dtype)
        grids = torch.meshgrid(freq, freq, freq, indexing="ij")
        m = torch.stack([grids[0], grids[1], grids[2]], dim=-1).reshape(-1, 3)
        k = m @ (2.0 * math.pi * inverse.transpose(0, 1))
        kk = (k * k).sum(dim=1).view(k_mesh, k_mesh, k_mesh)
        nonzero = kk > 0
        safe = torch.where(nonzero, kk, torch.ones_like(kk))
        g = self.g_ewald
        volume = torch.linalg.det(cell[0]).abs()
        influence = torch.where(nonzero, self.qqrd2e * 2.0 * math.pi / volume * torch.exp(-safe / (4.0 * g * g)) / safe,
                                torch.zeros_like(kk))
        b = self.modulus.to(device, dtype)
        influence = influence * b[:, None, None] * b[None, :, None] * b[None, None, :]
        # The transforms run outside autograd (TorchScript's autograd of complex FFTs fails after
        # the first call in PyTorch 2.13); the energy is written so that its first derivatives are
        # PME's analytic ones: dE/dinfluence = |FFT(Q)|^2, dE/dQ = 2 phi.
        with torch.no_grad():
            structure = torch.fft.fftn(mesh)
            power = structure.real * structure.real + structure.imag * structure.imag
            potential = torch.fft.ifftn(influence * structure).real * float(k_mesh * k_mesh * k_mesh)
        e_k = (influence * power).sum() + 2.0 * ((mesh - mesh.detach()) * potential).sum()
        potential = potential.reshape(-1)
        e_k_atom = torch.cat([q[:owned] * (w * potential[flat]).sum(dim=1), torch.zeros_like(q[owned:])])
        return self.assemble(inputs, positions, edge_vectors, cell, q, e_real, e_self, e_k, e_k_atom)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("-o", "--output", required=True, help="path of the .pt file to write")
    parser.add_argument("--mesh", type=int, default=MESH, help="mesh points per direction")
    args = parser.parse_args()
    save_model(PME(SPECIES, CHARGES, args.mesh), args.output, cutoff=CUTOFF, species=SPECIES, units="metal",
               spec=PME_SPEC)


if __name__ == "__main__":
    main()
