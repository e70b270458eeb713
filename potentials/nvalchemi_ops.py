"""The exchange ops torch.ops.nvalchemi.{refresh_neighbors, scatter_to_owners, system_sum} with
single-process semantics, so that a model calling them can be scripted, saved and run in plain
PyTorch without the LAMMPS package. Import this module before scripting such a model.

In plain PyTorch every row is owned and there are no ghost rows: refresh_neighbors and
scatter_to_owners are identities and system_sum sums all rows. Inside LAMMPS the package
registers the same names with the real, communicating implementations (in every halo mode;
see doc/Howto_nvalchemi_contract.rst), and a saved model calls those.
"""

import torch

SCOPE_LOCAL = 0  # system_sum: this rank's owned rows
SCOPE_OWNED = 1  # system_sum: all ranks' owned rows, the same total on every rank


def _define():
    try:
        torch.ops.nvalchemi.refresh_neighbors  # already registered (by an earlier import or the package)
        return None
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library("nvalchemi", "DEF")
    lib.define("refresh_neighbors(Tensor x) -> Tensor")
    lib.define("scatter_to_owners(Tensor x) -> Tensor")
    lib.define("system_sum(Tensor values, int scope) -> Tensor")
    # composite implementations: autograd differentiates through them
    lib.impl("refresh_neighbors", lambda x: x.clone(), "CompositeImplicitAutograd")
    lib.impl("scatter_to_owners", lambda x: x.clone(), "CompositeImplicitAutograd")
    lib.impl("system_sum", lambda values, scope: values.sum(0), "CompositeImplicitAutograd")
    return lib


_LIBRARY = _define()  # keep the registration alive for the life of the process
