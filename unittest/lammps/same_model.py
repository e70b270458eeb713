"""A committed model is what its script writes today: same metadata (but for the PyTorch that
wrote it) and the same outputs on a random graph (the archives differ in their internal names).

    same_model.py <committed.pt> <regenerated.pt>"""

import sys

import torch

import nvalchemi_lammps.ops  # noqa: F401  (message-passing models call torch.ops.nvalchemi)
from nvalchemi_lammps.export import read_metadata

committed, regenerated = sys.argv[1], sys.argv[2]
# the PyTorch that wrote a model is the writing machine's, not the model's
PROVENANCE = ("torch_version", "cuda_version")


def model_metadata(path):
    return {k: v for k, v in read_metadata(path).items() if k not in PROVENANCE}


if model_metadata(committed) != model_metadata(regenerated):
    sys.exit(f"FAIL: metadata differ:\n{model_metadata(committed)}\n{model_metadata(regenerated)}")
torch.manual_seed(0)
n, e = 20, 60
species = torch.tensor(read_metadata(committed)["species"])
inputs = {"positions": torch.rand(n, 3, dtype=torch.float64) * 5,
          "atomic_numbers": species[torch.randint(0, len(species), (n,))], "neighbor_list": torch.randint(0, n, (e, 2)),
          "edge_vectors": torch.rand(e, 3, dtype=torch.float64) + 0.8,
          "cell": torch.eye(3, dtype=torch.float64).view(1, 3, 3) * 5,
          "pbc": torch.ones(1, 3, dtype=torch.bool), "n_owned": torch.tensor(n)}
a = torch.jit.load(committed)(inputs)
b = torch.jit.load(regenerated)(inputs)
if a.keys() != b.keys() or not all(torch.equal(a[k], b[k]) for k in a):
    sys.exit(f"FAIL: {committed} and {regenerated} give different outputs; regenerate the committed "
             "model with its script (see potentials/README.md)")
print(f"{committed} matches its script")
