"""A layerwise export updates owned rows only (nvalchemi_lammps.owned_rows): evaluated as one rank
sees a small periodic cell (nvalchemi-check's split: owned atoms, then ghost rows), its readout
runs on the owned rows alone, so every ghost row's energy is exactly zero (a model that updates
every row gives them their own energies). The energies are right: nvalchemi-check's split and
the parity tests check them. Used by the export fixtures (mace_models.py, nequip_models.py).
"""

import torch

import nvalchemi_lammps.ops
from nvalchemi_lammps import check
from nvalchemi_lammps.model_file import LoadedModel


def require_owned_rows_only(path: str, atoms: int = 8) -> None:
    model = LoadedModel(path)
    meta = model.metadata()
    cutoff = float(meta["cutoff"])
    dtype = torch.float64 if meta["dtype"] == "float64" else torch.float32
    positions, numbers, cell = check.random_cell(meta["species"], cutoff, atoms, seed=1, dtype=torch.float64)
    rows, row_atom, senders, receivers = check.rank_graph(positions, cell, cutoff, "layerwise", 1)
    inputs = {"positions": rows.to(dtype), "atomic_numbers": numbers[row_atom],
              "neighbor_list": torch.stack([senders, receivers], dim=1),
              "edge_vectors": (rows[receivers] - rows[senders]).to(dtype), "cell": cell.view(1, 3, 3).to(dtype),
              "pbc": torch.ones(1, 3, dtype=torch.bool), "n_owned": torch.tensor(atoms, dtype=torch.int64)}
    with nvalchemi_lammps.ops.owners(row_atom, atoms):
        energies, _ = model(inputs)
    ghosts = energies[atoms:]
    if ghosts.numel() == 0 or bool((ghosts != 0).any()) or bool((energies[:atoms] == 0).any()):
        raise SystemExit(f"FAIL: {path} does not update owned rows only: energies of its {atoms} owned rows "
                         f"{energies[:atoms].tolist()}, of its {ghosts.numel()} ghost rows {ghosts.tolist()[:8]}...")
    print(f"ok   {path}: {atoms} owned rows updated, {ghosts.numel()} ghost rows left to the refresh")
