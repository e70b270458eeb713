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

`with recorded_calls() as calls` lists the calls that communicate in LAMMPS, as the ranks must
agree on them (every rank the same calls in the same order; pair_style nvalchemi stops a run
where they differ): nvalchemi-check compares a rank with atoms and one without.

Each op is opaque (not decomposed by torch.export or make_fx) and its backward is another op of
the library, `<op>_backward`, which the package registers in C++ too: an exported (AOTInductor)
model calls both through the dispatcher by name, so its exchanges run on every rank.
"""

import contextlib
from typing import List, Optional, Tuple

import torch

from nvalchemi_lammps.contract import EXCHANGE_OPS

SCOPE_LOCAL = 0  # system_sum: this rank's owned rows
SCOPE_OWNED = 1  # system_sum: all ranks' owned rows, the same total on every rank

SCHEMAS = EXCHANGE_OPS  # the contract table's, as the C++ core registers them


class _Owners:
    """One emulated rank: which owned row each row copies, how many rows are owned."""

    def __init__(self, row_owner: torch.Tensor, n_owned: int, owned_rows_complete: bool):
        self.row_owner = row_owner.to(torch.int64)
        self.n_owned = int(n_owned)
        self.owned_rows_complete = owned_rows_complete


_owners: Optional[_Owners] = None
_calls: Optional[List[Tuple[str, int]]] = None


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


@contextlib.contextmanager
def recorded_calls():
    """Within the block, every op call that communicates in LAMMPS (forward and backward ops;
    system_sum with scope OWNED) is appended to the list yielded, as (op name, size): values per
    row for the row ops, values summed for the sums, the sizes the ranks agree on in C++."""
    global _calls
    previous, _calls = _calls, []
    try:
        yield _calls
    finally:
        _calls = previous


def _record(name: str, size: int) -> None:
    if _calls is not None:
        _calls.append((name, int(size)))


def _row_width(x: torch.Tensor) -> int:
    width = 1
    for extent in x.shape[1:]:
        width *= extent
    return width


def _sum_into_owners(x: torch.Tensor, o: _Owners) -> torch.Tensor:
    """Owned rows: their own value plus their ghosts'; ghost rows: zero."""
    summed = torch.zeros_like(x).index_add(0, o.row_owner, x)
    summed[o.n_owned:] = 0
    return summed


def _refresh(x):
    _record("refresh_neighbors", _row_width(x))
    return x.clone() if _owners is None else x[_owners.row_owner]


def _refresh_backward(grad):
    _record("refresh_neighbors_backward", _row_width(grad))
    return grad.clone() if _owners is None else _sum_into_owners(grad, _owners)


def _scatter_rows(x):
    if _owners is None:
        return x.clone()
    if _owners.owned_rows_complete:
        return x[_owners.row_owner]
    return _sum_into_owners(x, _owners)[_owners.row_owner]


def _scatter(x):
    _record("scatter_to_owners", _row_width(x))
    return _scatter_rows(x)


def _scatter_backward(grad):
    _record("scatter_to_owners_backward", _row_width(grad))
    if _owners is not None and _owners.owned_rows_complete:
        return _sum_into_owners(grad, _owners)
    return _scatter_rows(grad)  # sum-then-refresh is its own adjoint


def _system_sum(values, scope):
    if scope == SCOPE_OWNED:
        _record("system_sum", _row_width(values))
    owned = values.shape[0] if _owners is None else _owners.n_owned
    return values[:owned].sum(0)


def _system_sum_backward(grad, values, scope):
    if scope == SCOPE_OWNED:
        _record("system_sum_backward", grad.numel())
    owned = values.shape[0] if _owners is None else _owners.n_owned
    result = torch.zeros_like(values)
    result[:owned] = grad
    return result


def _rank_sum(x):
    _record("rank_sum", x.numel())
    return x.clone()  # one process, or one emulated rank: its own part is the sum


def _rank_sum_backward(grad):
    _record("rank_sum_backward", grad.numel())
    return grad.clone()


def _define():
    try:
        torch.ops.nvalchemi.refresh_neighbors_backward  # already registered (by an earlier import)
        return None
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library("nvalchemi", "DEF")
    for schema in SCHEMAS:
        # ops with effects (communication): TorchScript must keep every call in the model's order
        lib.define(schema, alias_analysis="CONSERVATIVE")
    kernels = {"refresh_neighbors": _refresh, "refresh_neighbors_backward": _refresh_backward,
               "scatter_to_owners": _scatter, "scatter_to_owners_backward": _scatter_backward,
               "system_sum": _system_sum, "system_sum_backward": _system_sum_backward,
               "rank_sum": _rank_sum, "rank_sum_backward": _rank_sum_backward}
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
