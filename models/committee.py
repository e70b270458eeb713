"""A committee of three SchNet-style models (models/schnet.py) for active learning: the same
architecture trained on the same Lennard-Jones argon data (lj units: epsilon 1, sigma 1, cutoff
2.5, LAMMPS' lj/cut) from three random initializations (seeds). Near the training data they
agree; away from it (a hotter liquid, close contacts) they disagree, which is what compute
nvalchemi/deviation measures (doc/compute_nvalchemi_deviation.rst, examples/committee).

The training data: rattled fcc crystals (108 atoms, reduced density 0.8442) with the energy and
forces of lj/cut, computed here in plain PyTorch. Energies are learned relative to E0 per atom
(the data's mean), so a member's energy is the LJ energy minus 108 * E0 for this cell; forces,
virials and the deviations do not see that constant.

Members 0 and 1 are exported for halo mode layerwise, member 2 for halo mode deep: a committee
whose members differ in halo mode, as the compute allows.

    python models/committee.py <output dir>    # writes committee_ar_0.pt, _1.pt, _2_deep.pt
    python models/committee.py <output dir> .pt2  # the committed members' weights compiled
                                                  # as AOTInductor packages, beside them

A few hundred optimizer steps on the CPU (about a minute per member). The committed files in
potentials/ were written by this script; training is not bitwise reproducible across machines
(BLAS), so the build does not regenerate them: it compiles their weights into packages.
"""

import math
import os
import sys

import torch

from nvalchemi_lammps.export import save_model
from nvalchemi_lammps.periodic import periodic_inputs
from schnet import CUTOFF, FEATURES, LAYERS, SPECIES, SchNet

SEEDS = (101, 202, 303)
DENSITY = 0.8442
CELLS = 3
FRAMES = 12
STEPS = 600


def fcc(cells: int, density: float):
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = torch.tensor([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]], dtype=torch.float64)
    grid = torch.stack(torch.meshgrid(*[torch.arange(cells, dtype=torch.float64)] * 3, indexing="ij"), -1)
    positions = (grid.reshape(-1, 1, 3) + basis.reshape(1, 4, 3)).reshape(-1, 3) * a
    return positions, torch.eye(3, dtype=torch.float64) * a * cells


def lj_energy(edge_vectors: torch.Tensor) -> torch.Tensor:
    """lj/cut's energy (epsilon = sigma = 1, no shift) of directed edges: half per edge."""
    r2 = (edge_vectors * edge_vectors).sum(1)
    sr6 = 1.0 / r2 ** 3
    return 0.5 * (4.0 * (sr6 * sr6 - sr6)).sum()


def frames(generator: torch.Generator):
    """Rattled fcc frames: (edge structure, reference energy, reference forces)."""
    ideal, cell = fcc(CELLS, DENSITY)
    out = []
    for k in range(FRAMES):
        amplitude = 0.01 + 0.05 * k / (FRAMES - 1)
        positions = ideal + amplitude * torch.randn(ideal.shape, generator=generator, dtype=torch.float64)
        positions = positions.requires_grad_(True)
        inputs = periodic_inputs(positions, torch.full((len(ideal),), SPECIES[0]), cell, CUTOFF)
        energy = lj_energy(inputs["edge_vectors"])
        (gradient,) = torch.autograd.grad(energy, positions)
        shifts = (positions[inputs["neighbor_list"][:, 1]] - positions[inputs["neighbor_list"][:, 0]]
                  - inputs["edge_vectors"]).detach()
        inputs = {key: value.detach() if torch.is_tensor(value) else value for key, value in inputs.items()}
        out.append((positions.detach(), inputs, shifts, energy.detach(), -gradient))
    return out


def predict(model, positions, inputs, shifts):
    """Energy and forces (autograd, kept differentiable for training) of one frame."""
    positions = positions.clone().requires_grad_(True)
    senders, receivers = inputs["neighbor_list"][:, 0], inputs["neighbor_list"][:, 1]
    edge_vectors = positions[receivers] - positions[senders] - shifts
    energy = model(dict(inputs, positions=positions, edge_vectors=edge_vectors))["atomic_energies"].sum()
    (gradient,) = torch.autograd.grad(energy, positions, create_graph=True)
    return energy, -gradient


def train(seed: int, data, e0: float) -> SchNet:
    torch.manual_seed(seed)
    model = SchNet(layerwise=False, seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, STEPS)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = torch.zeros((), dtype=torch.float64)
        for positions, inputs, shifts, energy, forces in data:
            n = positions.shape[0]
            e, f = predict(model, positions, inputs, shifts)
            loss = loss + ((f - forces) ** 2).mean() + ((e - energy) / n - e0) ** 2
        loss = loss / len(data)
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == STEPS - 1:
            print(f"seed {seed} step {step}: loss {loss.item():.4g}", flush=True)
    return model


def member_name(member: int) -> str:
    return f"committee_ar_{member}{'_deep' if member == 2 else ''}"


def member_spec(member: int) -> dict:
    spec = {"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": LAYERS}
    spec.update({"halo": "deep"} if member == 2 else {"exchange_feature_width": FEATURES})
    return spec


def compile_committed(outdir: str) -> None:
    """Each committed member (outdir/<name>.pt) as the package outdir/<name>.pt2: its weights in
    the same module, compiled for this machine."""
    for member, seed in enumerate(SEEDS):
        path = os.path.join(outdir, member_name(member))
        exported = SchNet(layerwise=member != 2, seed=seed)
        exported.load_state_dict(torch.jit.load(path + ".pt").state_dict())
        save_model(exported, path + ".pt2", cutoff=CUTOFF, species=SPECIES, units="lj", spec=member_spec(member))


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    data = frames(torch.Generator().manual_seed(7))
    e0 = sum(float(energy) / positions.shape[0] for positions, _, _, energy, _ in data) / len(data)
    print(f"E0 = {e0:.10g} per atom (energies are learned relative to it)")
    for member, seed in enumerate(SEEDS):
        trained = train(seed, data, e0)
        exported = SchNet(layerwise=member != 2, seed=seed)
        exported.load_state_dict(trained.state_dict())
        name = member_name(member) + ".pt"
        save_model(exported, os.path.join(outdir, name), cutoff=CUTOFF, species=SPECIES, units="lj",
                   spec=member_spec(member))
        print(f"wrote {name}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == ".pt2":
        compile_committed(sys.argv[1])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
