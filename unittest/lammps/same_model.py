"""The committed potentials/lj_ar.pt is what potentials/lennard_jones.py writes today: same
metadata and the same outputs on a random graph (the archives differ in their internal names)."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "potentials"))
from nvalchemi_export import read_metadata  # noqa: E402

committed, regenerated = sys.argv[1], sys.argv[2]
if read_metadata(committed) != read_metadata(regenerated):
    sys.exit(f"FAIL: metadata differ:\n{read_metadata(committed)}\n{read_metadata(regenerated)}")
torch.manual_seed(0)
n, e = 20, 60
inputs = {"positions": torch.rand(n, 3, dtype=torch.float64) * 5,
          "atomic_numbers": torch.full((n,), 18), "neighbor_list": torch.randint(0, n, (e, 2)),
          "edge_vectors": torch.rand(e, 3, dtype=torch.float64) + 0.8,
          "cell": torch.eye(3, dtype=torch.float64).view(1, 3, 3) * 5,
          "pbc": torch.ones(1, 3, dtype=torch.bool), "n_owned": torch.tensor(n)}
a = torch.jit.load(committed)(inputs)["atomic_energies"]
b = torch.jit.load(regenerated)(inputs)["atomic_energies"]
if not torch.equal(a, b):
    sys.exit(f"FAIL: outputs differ by {(a - b).abs().max().item()}; regenerate potentials/lj_ar.pt "
             "with potentials/lennard_jones.py -o potentials/lj_ar.pt")
print("committed model matches the script")
