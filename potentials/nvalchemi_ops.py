"""The exchange ops torch.ops.nvalchemi.{refresh_neighbors, scatter_to_owners, system_sum, rank_sum} for
Python, so that a model calling them can be scripted or exported, and run in plain PyTorch
without the LAMMPS package. Import this module before scripting or exporting such a model.

Inside LAMMPS the package registers the same names with the real, communicating
implementations (in every halo mode; see doc/Howto_nvalchemi_contract.rst), and a saved model
calls those. Here the ops have two meanings:

* by default, one process that owns every row: refresh_neighbors, scatter_to_owners and
  rank_sum are identities and system_sum sums all rows;
* inside `with owners(row_owner, n_owned, owned_rows_complete)`, one LAMMPS rank on its own:
  rows [0, n_owned) are owned, every later row is a ghost copy of the owned row `row_owner`
  names, with the package's semantics (nvalchemi-check uses it to run a model as a rank would).

Each op is opaque (not decomposed by torch.export or make_fx) and its backward is another op of
the library, `<op>_backward`, which the package registers in C++ too: an exported (AOTInductor)
model calls both through the dispatcher by name, so its exchanges run on every rank.
"""

import contextlib
from typing import Optional

import torch

SCOPE_LOCAL = 0  # system_sum: this rank's owned rows
SCOPE_OWNED = 1  # system_sum: all ranks' owned rows, the same total on every rank

SCHEMAS = (
    "refresh_neighbors(Tensor x) -> Tensor",
    "refresh_neighbors_backward(Tensor grad) -> Tensor",
    "scatter_to_owners(Tensor x) -> Tensor",
    "scatter_to_owners_backward(Tensor grad) -> Tensor",
    "system_sum(Tensor values, int scope) -> Tensor",
    "system_sum_backward(Tensor grad, Tensor values, int scope) -> Tensor",
    "rank_sum(Tensor x) -> Tensor",
    "rank_sum_backward(Tensor grad) -> Tensor",
)


class _Owners:
    """One emulated rank: which owned row each row copies, how many rows are owned."""

    def __init__(self, row_owner: torch.Tensor, n_owned: int, owned_rows_complete: bool):
        self.row_owner = row_owner.to(torch.int64)
        self.n_owned = int(n_owned)
        self.owned_rows_complete = owned_rows_complete


_owners: Optional[_Owners] = None


@contextlib.contextmanager
def owners(row_owner: torch.Tensor, n_owned: int, owned_rows_complete: bool = False):
    """Within the block the ops act as on one LAMMPS rank whose row i is a copy of owned row
    row_owner[i] (row_owner[i] = i for the n_owned owned rows). owned_rows_complete: the edges
    of every owned row's sums are all present (halo mode deep)."""
    global _owners
    previous, _owners = _owners, _Owners(row_owner, n_owned, owned_rows_complete)
    try:
        yield
    finally:
        _owners = previous


def _sum_into_owners(x: torch.Tensor, o: _Owners) -> torch.Tensor:
    """Owned rows: their own value plus their ghosts'; ghost rows: zero."""
    summed = torch.zeros_like(x).index_add(0, o.row_owner, x)
    summed[o.n_owned:] = 0
    return summed


def _refresh(x):
    return x.clone() if _owners is None else x[_owners.row_owner]


def _refresh_backward(grad):
    return grad.clone() if _owners is None else _sum_into_owners(grad, _owners)


def _scatter(x):
    if _owners is None:
        return x.clone()
    if _owners.owned_rows_complete:
        return x[_owners.row_owner]
    return _sum_into_owners(x, _owners)[_owners.row_owner]


def _scatter_backward(grad):
    if _owners is not None and _owners.owned_rows_complete:
        return _refresh_backward(grad)
    return _scatter(grad)  # sum-then-refresh is its own adjoint


def _system_sum(values, scope):
    owned = values.shape[0] if _owners is None else _owners.n_owned
    return values[:owned].sum(0)


def _system_sum_backward(grad, values, scope):
    owned = values.shape[0] if _owners is None else _owners.n_owned
    result = torch.zeros_like(values)
    result[:owned] = grad
    return result


def _rank_sum(x):
    return x.clone()  # one process, or one emulated rank: its own part is the sum


def _define():
    try:
        torch.ops.nvalchemi.refresh_neighbors_backward  # already registered (by an earlier import)
        return None
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library("nvalchemi", "DEF")
    for schema in SCHEMAS:
        lib.define(schema)
    kernels = {"refresh_neighbors": _refresh, "refresh_neighbors_backward": _refresh_backward,
               "scatter_to_owners": _scatter, "scatter_to_owners_backward": _scatter_backward,
               "system_sum": _system_sum, "system_sum_backward": _system_sum_backward,
               "rank_sum": _rank_sum, "rank_sum_backward": _rank_sum}
    for name, kernel in kernels.items():
        # explicit: tracing keeps the op as one node instead of decomposing it
        lib.impl(name, kernel, "CompositeExplicitAutograd")
    for name in ("refresh_neighbors", "refresh_neighbors_backward", "scatter_to_owners",
                 "scatter_to_owners_backward", "rank_sum", "rank_sum_backward"):
        torch.library.register_fake(f"nvalchemi::{name}", lambda x: torch.empty_like(x), lib=lib)
    torch.library.register_fake("nvalchemi::system_sum",
                                lambda values, scope: values.new_empty(values.shape[1:]), lib=lib)
    torch.library.register_fake("nvalchemi::system_sum_backward",
                                lambda grad, values, scope: torch.empty_like(values), lib=lib)

    def no_context(ctx, inputs, output):
        pass

    # each op's backward is its backward op (whose own backward is the op: they are adjoints)
    for op, adjoint in (("refresh_neighbors", "refresh_neighbors_backward"),
                        ("refresh_neighbors_backward", "refresh_neighbors"),
                        ("scatter_to_owners", "scatter_to_owners_backward"),
                        ("rank_sum", "rank_sum_backward"), ("rank_sum_backward", "rank_sum")):
        torch.library.register_autograd(
            f"nvalchemi::{op}", lambda ctx, grad, adjoint=adjoint: getattr(torch.ops.nvalchemi, adjoint)(grad),
            setup_context=no_context, lib=lib)

    def save_values(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scope = inputs[1]

    torch.library.register_autograd(
        "nvalchemi::system_sum",
        lambda ctx, grad: (torch.ops.nvalchemi.system_sum_backward(grad, ctx.saved_tensors[0], ctx.scope),
                           None),
        setup_context=save_values, lib=lib)
    return lib


_LIBRARY = _define()  # keep the registration alive for the life of the process
