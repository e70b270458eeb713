"""Work only on owned rows: what a model in halo mode layerwise (or gp) may skip on ghost rows,
in one place for every exporter (mace_export, nequip_export) and the reference models.

In halo modes layerwise and gp the graph has edges into owned rows only. So after a layer's
messages are summed, only the owned rows hold complete sums; whatever a layer then computes
node-wise on a ghost row (linear layers, products, gates, residual updates) is overwritten when
the next layer refreshes the ghost rows from their owners (refresh_neighbors ignores the ghost
rows it is given), and the ghost rows' energies are not counted. A layer may therefore update
owned rows only:

    h = node_features[all rows]                   # layer 0: every row computes its own (embedding)
    for each layer:
        if not the first: h = with_ghost_rows(h, rows)   # ghost rows take their owners' values
        messages = sum over edges into owned rows   # senders may be ghost rows
        h = update(owned_rows(h, n_owned), owned_rows(messages, n_owned))
    energies = per_row(readout(h), rows)            # ghost rows: 0, never counted

This is exact: every value an owned row's energy depends on is computed as before, and a ghost
row is read only after a refresh. nvalchemi-check's split check catches a model that reads a
ghost row before refreshing it. It is not valid in halo mode deep, where ghost rows receive
messages of their own and are not refreshed.
"""

import contextlib
from typing import List

import torch

import nvalchemi_lammps.ops  # noqa: F401  (torch.ops.nvalchemi.refresh_neighbors)


def owned_count(n_owned: torch.Tensor, rows: int) -> int:
    """How many rows a layer updates: the contract's n_owned input. While an AOTInductor export
    traces the model, the size of the program's owned-rows input (traced_owned_count), which the
    program reads on every call; every row for a trace outside an export."""
    if not torch.jit.is_scripting() and _tracing():
        return _traced_owned_count(rows)
    return int(n_owned.item())


_TRACED_OWNED: List[int] = []


@contextlib.contextmanager
def traced_owned_count(count):
    """Within the block, owned_count is `count` (export.save_aoti_model: a symbolic size)."""
    _TRACED_OWNED.append(count)
    try:
        yield
    finally:
        _TRACED_OWNED.pop()


@torch.jit.unused
def _traced_owned_count(rows: int) -> int:
    return _TRACED_OWNED[-1] if _TRACED_OWNED else rows


def at_least_one(count: int) -> int:
    """max(count, 1), also for a traced size (which Python's max would decide for the example's
    value: a program that could not run a rank without atoms)."""
    if torch.jit.is_scripting():
        return max(count, 1)
    return torch.sym_max(count, 1)


@torch.jit.unused
def _tracing() -> bool:
    """Whether make_fx is tracing this call (export.save_aoti_model)."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode
    return get_proxy_mode() is not None or torch.compiler.is_compiling()


def owned_rows(x: torch.Tensor, n_owned: int) -> torch.Tensor:
    """The first n_owned rows of x: this rank's atoms."""
    return x.narrow(0, 0, n_owned)


def per_row(owned: torch.Tensor, rows: int) -> torch.Tensor:
    """The owned rows' values extended to all `rows` rows with zeros (a per-atom output: ghost
    rows' energies are never counted)."""
    shape: List[int] = [rows - owned.shape[0]] + list(owned.shape[1:])
    return torch.cat([owned, torch.zeros(shape, dtype=owned.dtype, device=owned.device)])


def with_ghost_rows(owned: torch.Tensor, rows: int) -> torch.Tensor:
    """`owned` (the owned rows' values) extended to all `rows` rows, the ghost rows holding
    their owners' values (one refresh_neighbors, which ignores the zeros it is given there)."""
    return torch.ops.nvalchemi.refresh_neighbors(per_row(owned, rows))
