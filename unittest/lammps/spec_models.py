"""Test models for the MLIPSpec and exchange-op tests (written by the build, not committed).

    python unittest/lammps/spec_models.py <output dir>

exchange_probe.pt: an energy built to use every exchange op, so that their backward passes
decide the forces (halo mode layerwise):

  c   = scatter_to_owners(edge partials w/2 on both rows)    full coordination, ghosts refreshed
  h   = refresh_neighbors(tanh(c))                           a second hop through ghost rows
  S   = system_sum(c, OWNED), N = system_sum(1, OWNED)       replicated totals
  e_i = sum over edges into i of w * h_sender + 0.3 c_i^2 + 0.05 S^2 / N   (owned rows)

lj_probe.pt: Lennard-Jones (models/lennard_jones.py) plus extra outputs, one for each
kind x reduce combination, each with a value that is easy to reason about:

  coordination        per_node  all_reduce  [N]     each edge adds w/2 to both of its rows, so
                                                    ghost rows hold partials of their owners
  coordination_owned  per_node  owned_only  [N]     each edge adds w to its (owned) receiver
  coordination_none   per_node  none        [N]     the same values as coordination_owned
  descriptor          per_node  all_reduce  [N,20]  like coordination at 20 length scales (wider
                                                    than one reverse-communication pass)
  energy              per_graph all_reduce  [1,1]   this rank's share of the energy
  dipole              per_graph all_reduce  [3]     sum over owned rows of coordination x position
  volume              per_graph none        [1]     det(cell), the same on every rank
  volume_owned        per_graph owned_only  [1]     det(cell)
  cell_diagonal       global    none        [3]     diagonal of the cell, passed through

with w = exp(-r^2) for an edge of length r. Consolidated, coordination, coordination_owned and
coordination_none are equal, and every output is independent of the number of ranks.

lj_stress.pt: Lennard-Jones with its own forces that returns the toolkit's 'stress' (-W/V)
instead of 'virial', with its spec in the toolkit's own layout (MLIPSpec.to_dict(), version 2):
pair_style nvalchemi must read the spec and turn the stress back into the virial of lj/cut.

rank_dependent.pt: exchange_probe.pt, except that a rank owning no atoms returns zero energies
without calling the exchange ops, a fault (the MACE export once had it) that would leave its
neighbours waiting in an exchange forever: pair_style nvalchemi must stop the run on every rank
with an error, nvalchemi-check must fail it, and save_model refuses to write it (so it is written
with torch.jit.save here, as a user could).

nan_probe.pt: Lennard-Jones with its own forces (run it with `forces model`), species Ar and
Ne, except that the force and atomic energy of every Ne atom a rank owns are NaN (its ghost
copies elsewhere stay finite): pair_style nvalchemi must stop the run from the rank that owns it.
"""

import json
import os
import sys
from typing import Dict

import torch

from lennard_jones import MODEL_FORCES_OUTPUTS, LennardJones
import nvalchemi_lammps.ops  # noqa: F401  (torch.ops.nvalchemi for scripting)
from nvalchemi_lammps.export import METADATA_FILE, make_metadata, save_model, save_scripted_model

PROBE_OUTPUTS = {
    "coordination": ("per_node", "all_reduce"),
    "coordination_owned": ("per_node", "owned_only"),
    "coordination_none": ("per_node", "none"),
    "descriptor": ("per_node", "all_reduce"),
    "dipole": ("per_graph", "all_reduce"),
    "volume": ("per_graph", "none"),
    "volume_owned": ("per_graph", "owned_only"),
    "cell_diagonal": ("global", "none"),
}


class Probe(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lj = LennardJones(1.0, 1.0, 2.5, False)
        self.scales = torch.linspace(0.5, 3.0, 20, dtype=torch.float64)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        outputs = self.lj(inputs)
        edge_vectors = inputs["edge_vectors"].detach()
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        positions = inputs["positions"]
        n = positions.shape[0]
        n_owned = int(inputs["n_owned"])
        r2 = (edge_vectors * edge_vectors).sum(dim=1)
        w = torch.exp(-r2)
        zeros = torch.zeros(n, dtype=positions.dtype)
        half = 0.5 * w
        outputs["coordination"] = zeros.index_add(0, receivers, half).index_add(0, senders, half)
        owned = zeros.index_add(0, receivers, w)
        outputs["coordination_owned"] = owned
        outputs["coordination_none"] = owned.clone()
        wide = torch.exp(-r2.unsqueeze(1) / self.scales.to(positions.dtype).unsqueeze(0))
        outputs["descriptor"] = (torch.zeros(n, 20, dtype=positions.dtype)
                                 .index_add(0, receivers, 0.5 * wide).index_add(0, senders, 0.5 * wide))
        outputs["energy"] = outputs["atomic_energies"][:n_owned].sum().view(1, 1)
        outputs["dipole"] = (owned[:n_owned].unsqueeze(1) * positions[:n_owned]).sum(dim=0)
        volume = torch.linalg.det(inputs["cell"][0]).view(1)
        outputs["volume"] = volume
        outputs["volume_owned"] = volume.clone()
        outputs["cell_diagonal"] = torch.diagonal(inputs["cell"][0])
        return outputs


class ExchangeProbe(torch.nn.Module):
    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        edge_vectors = inputs["edge_vectors"]
        senders = inputs["neighbor_list"][:, 0]
        receivers = inputs["neighbor_list"][:, 1]
        n = inputs["positions"].shape[0]
        n_owned = int(inputs["n_owned"])
        r2 = (edge_vectors * edge_vectors).sum(dim=1)
        w = torch.exp(-r2) * (1.0 - r2 / 6.25) ** 2  # smooth at the 2.5 cutoff
        zeros = torch.zeros(n, dtype=edge_vectors.dtype)
        c = torch.ops.nvalchemi.scatter_to_owners(zeros.index_add(0, receivers, 0.5 * w).index_add(0, senders, 0.5 * w))
        h = torch.ops.nvalchemi.refresh_neighbors(torch.tanh(c))
        total = torch.ops.nvalchemi.system_sum(c, 1)
        count = torch.ops.nvalchemi.system_sum(torch.ones(n, dtype=edge_vectors.dtype), 1)
        e = zeros.index_add(0, receivers, w * h[senders]) + 0.3 * c * c + 0.05 * total * total / count
        owned = (torch.arange(n) < n_owned).to(e.dtype)
        return {"atomic_energies": e * owned}


class RankDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.probe = ExchangeProbe()

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        if int(inputs["n_owned"]) == 0:
            return {"atomic_energies": torch.zeros(inputs["positions"].shape[0], dtype=inputs["positions"].dtype)}
        return self.probe(inputs)


EXCHANGE_PROBE_SPEC = {"preset": "SPEC_MPNN_HALO", "num_message_passing_layers": 2}


class StressLJ(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lj = LennardJones(1.0, 1.0, 2.5, False, True)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        outputs = self.lj(inputs)
        volume = torch.linalg.det(inputs["cell"][0]).abs()
        outputs["stress"] = -outputs.pop("virial") / volume
        return outputs


# what the toolkit's MLIPSpec.to_dict() writes for a strictly local model with its own forces
# whose per-rank forces, stress and per-atom virials are partials
STRESS_LJ_TOOLKIT_SPEC = {
    "version": 2,
    "core": {"policy": {"kind": "halo", "scatter_mode": "local", "gather_mode": "local"},
             "custom_ops": [], "third_party_helpers": []},
    "system_reductions": True, "node_energy_key": None, "node_virial_key": "atomic_virials",
    "gp_replicate_geometry": False, "owned_only_outputs": ["atomic_energies"],
    "all_reduce_outputs": ["atomic_virials", "energy", "forces", "stress"],
    "output_kinds": [["atomic_energies", "per_node"], ["atomic_virials", "per_node"], ["energy", "per_graph"],
                     ["forces", "per_node"], ["stress", "per_graph"]],
    "compile": {"static_shapes": False, "force_strategy": "model_internal", "stress_via_strain": False},
}


class NaNProbe(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lj = LennardJones(1.0, 1.0, 2.5, False, True)

    def forward(self, inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        outputs = self.lj(inputs)
        rows = torch.arange(inputs["atomic_numbers"].shape[0], device=inputs["atomic_numbers"].device)
        neon = (inputs["atomic_numbers"] == 10) & (rows < inputs["n_owned"])
        outputs["forces"] = torch.where(neon.unsqueeze(1), torch.full_like(outputs["forces"], float("nan")),
                                        outputs["forces"])
        energies = outputs["atomic_energies"]
        outputs["atomic_energies"] = torch.where(neon, torch.full_like(energies, float("nan")), energies)
        return outputs


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    spec = {"preset": "SPEC_LJ_HALO",
            "outputs": {name: {"kind": kind, "reduce": reduce} for name, (kind, reduce) in PROBE_OUTPUTS.items()}}
    save_model(Probe(), os.path.join(outdir, "lj_probe.pt"), cutoff=2.5, species=[18], units="lj", spec=spec)
    save_model(ExchangeProbe(), os.path.join(outdir, "exchange_probe.pt"), cutoff=2.5, species=[18], units="lj",
               spec=EXCHANGE_PROBE_SPEC)
    metadata = make_metadata(cutoff=2.5, species=[18], units="lj", spec=EXCHANGE_PROBE_SPEC)
    torch.jit.save(torch.jit.script(RankDependent()), os.path.join(outdir, "rank_dependent.pt"),
                   _extra_files={METADATA_FILE: json.dumps(metadata)})
    save_model(StressLJ(), os.path.join(outdir, "lj_stress.pt"), cutoff=2.5, species=[18], units="lj",
               spec=STRESS_LJ_TOOLKIT_SPEC)
    # written past save_model, which refuses a model that is not finite on its example
    save_scripted_model(torch.jit.script(NaNProbe()), os.path.join(outdir, "nan_probe.pt"), cutoff=2.5,
                        species=[18, 10], units="lj", spec={"preset": "SPEC_LJ_HALO", "outputs": MODEL_FORCES_OUTPUTS})


if __name__ == "__main__":
    main()
