"""Source-order controls of a finite packed stream: sequence shuffle and whole-batch shuffle (seed 000 §5.8).

Job: reorder the rows a :class:`~packing_theory.adapters.stream.PackedStream`
yields, inside blocks of ``k`` optimizer updates, so that every row of the
finite identity stream is yielded exactly once; resume exactly, also inside
a block; and audit both claims against the identity stream
(:func:`~packing_theory.adapters.order_audit.order_audit`). Imports: numpy,
this package's records and state modules (the stream hands its own row
reader and state capture in, so nothing here reaches into the stream's internals).

The orders
----------
An *update* is ``update_rows`` consecutive rows (seed 000: 256 rows, a
microbatch of 64 times 4 accumulation steps); a *block* is ``block``
updates (16), read whole from the identity stream before any of its rows is
yielded. Within each block:

* ``identity`` — the packer's order (the default; no block is read ahead);
* ``sequence-shuffle`` — the block's rows in a uniformly random order, so
  row membership of each update changes;
* ``batch-shuffle`` — the block's complete updates in a uniformly random
  order, each update keeping its rows and their order (a trailing partial
  update stays last).

The permutation of block ``b`` is drawn from ``numpy.random.default_rng([seed, b])``:
it depends only on the seed and the block, never on where a run was
resumed. The finite stream's last block is the partial one at the budget
(``rows=``) or at the packer's end, and is permuted within itself, so the
ordered stream yields exactly the identity stream's rows; at every block
boundary it has yielded the same *set* of rows as the identity stream, and
between boundaries the two sets differ only inside the current block — the
*budget edge*: a budget cut inside a block changes which rows are included
only among that block's rows.

The embedded ledger and monitor see the packer's events in identity order,
one block ahead of the trainer; a ledger therefore closes only at a block
boundary (:func:`check_closable`), which the end of the finite
stream always is.

>>> block_permutation("batch-shuffle", 6, update_rows=2, seed=0, block_index=0).tolist()
[4, 5, 0, 1, 2, 3]
>>> sorted(block_permutation("sequence-shuffle", 6, update_rows=2, seed=0, block_index=0).tolist())
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int, is_int
from .._unique import distinct
from ..errors import InputError, InputTypeError
from .records import PackedBatch
from .state import LoaderState

__all__ = [
    "ORDERS",
    "ORDER_BLOCK",
    "OrderSpec",
    "RowOrder",
    "as_order",
    "block_permutation",
    "check_closable",
    "concat_batches",
    "resume_state",
    "row_keys",
    "take_rows",
]

Int64Array = npt.NDArray[np.int64]

ORDERS: tuple[str, ...] = ("identity", "sequence-shuffle", "batch-shuffle")
"""The row orders."""

ORDER_BLOCK = 16
"""Optimizer updates per block (seed 000 §5.8: blocks of 16 original optimizer updates)."""


@dataclass(frozen=True, slots=True)
class OrderSpec:
    """A row order: its name, the block size in optimizer updates, rows per update, the seed.

    Args:
        order: one of :data:`ORDERS`.
        block: optimizer updates per block (16).
        update_rows: rows per optimizer update (``None``: the stream's ``batch_rows``).
        seed: the permutation seed.

    >>> OrderSpec("batch-shuffle", block=16, update_rows=256).block_rows
    4096
    """

    order: str = "identity"
    block: int = ORDER_BLOCK
    update_rows: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise InputError(f"order must be one of {', '.join(ORDERS)}; got {self.order!r}")
        check_int("block", self.block, 1)
        if self.update_rows is not None:
            check_int("update_rows", self.update_rows, 1)
        check_int("seed", self.seed, 0)

    @property
    def block_rows(self) -> int:
        """Rows per block, ``block × update_rows``."""
        if self.update_rows is None:
            raise InputError("update_rows is not resolved: use OrderSpec.resolve(batch_rows)")
        return self.block * self.update_rows

    def resolve(self, batch_rows: int) -> OrderSpec:
        """This spec with ``update_rows`` defaulting to ``batch_rows``."""
        if self.update_rows is not None:
            return self
        return dataclasses.replace(self, update_rows=check_int("batch_rows", batch_rows, 1))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"order": self.order, "block": self.block, "update_rows": self.update_rows, "seed": self.seed}


def as_order(order: str | OrderSpec | None, batch_rows: int) -> OrderSpec | None:
    """The resolved spec of ``order`` (a name or an :class:`OrderSpec`), ``None`` for the identity order."""
    if order is None:
        return None
    if isinstance(order, str):
        order = OrderSpec(order)
    if not isinstance(order, OrderSpec):
        raise InputTypeError(f"order must be an order name or an OrderSpec, got {type(order).__name__}")
    return None if order.order == "identity" else order.resolve(batch_rows)


def block_permutation(order: str, n_rows: int, *, update_rows: int, seed: int,
                      block_index: int) -> Int64Array:
    """Identity-row index (within the block) of each row the ordered block yields. O(n_rows).

    ``n_rows`` may be short of a full block (the finite stream's last one).
    """
    n = check_int("n_rows", n_rows, 0)
    u = check_int("update_rows", update_rows, 1)
    if order == "identity":
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng([check_int("seed", seed, 0), check_int("block_index", block_index, 0)])
    if order == "sequence-shuffle":
        return rng.permutation(n).astype(np.int64)
    if order != "batch-shuffle":
        raise InputError(f"order must be one of {', '.join(ORDERS)}; got {order!r}")
    full = n // u
    updates = rng.permutation(full).astype(np.int64)
    head = (updates[:, None] * u + np.arange(u, dtype=np.int64)[None, :]).ravel()
    return np.concatenate([head, np.arange(full * u, n, dtype=np.int64)])


def take_rows(batch: PackedBatch, rows: npt.ArrayLike) -> PackedBatch:
    """The batch's rows ``rows`` (in that order) as a new batch: the same records, renumbered. O(pieces).

    >>> from packing_theory.adapters.records import pieces_from_rows
    >>> from packing_theory.engine.events import Placement
    >>> from packing_theory.corpus.documents import TokenDocuments
    >>> docs = TokenDocuments.from_lists([[0, 1, 2], [0, 5, 6]])
    >>> rows = [[Placement(0, 0, 0, 0, 0, 3, False, False)], [Placement(1, 0, 1, 1, 0, 3, False, False)]]
    >>> b = PackedBatch.build(pieces_from_rows(rows), 2, docs, 3)
    >>> take_rows(b, [1, 0]).input_ids.tolist()
    [[0, 5, 6], [0, 1, 2]]
    """
    idx = np.asarray(rows, dtype=np.int64)
    if idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= batch.n_rows)):
        raise InputError(f"rows must be row indices of the {batch.n_rows}-row batch, got {idx.tolist()[:8]}")
    if distinct(idx).size != idx.size:
        raise InputError("rows must not repeat")
    p = batch.pieces
    new_of_old = np.full(batch.n_rows, -1, dtype=np.int64)
    new_of_old[idx] = np.arange(idx.size, dtype=np.int64)
    keep = new_of_old[p[:, 0]] >= 0
    sel = p[keep]
    new_row = new_of_old[sel[:, 0]]
    order = np.lexsort((sel[:, 1], new_row))
    out = sel[order].copy()
    out[:, 0] = new_row[order]
    return PackedBatch(out, batch.input_ids[idx], batch.capacity, batch.options)


def _slice_rows(batch: PackedBatch, a: int, b: int) -> PackedBatch:
    """Rows ``a .. b - 1`` of a batch (its pieces are in row order). O(log pieces + rows)."""
    p = batch.pieces
    lo, hi = np.searchsorted(p[:, 0], [a, b])
    out = p[lo:hi].copy()
    out[:, 0] -= a
    return PackedBatch(out, batch.input_ids[a:b], batch.capacity, batch.options)


def concat_batches(batches: list[PackedBatch]) -> PackedBatch:
    """Batches of one stream (same capacity and options) as one batch, rows in order. O(pieces)."""
    if not batches:
        raise InputError("concat_batches needs at least one batch")
    if len(batches) == 1:
        return batches[0]
    offset = 0
    pieces = []
    for b in batches:
        p = b.pieces.copy()
        p[:, 0] += offset
        offset += b.n_rows
        pieces.append(p)
    first = batches[0]
    return PackedBatch(np.concatenate(pieces), np.concatenate([b.input_ids for b in batches]), first.capacity,
                       first.options)


def row_keys(batch: PackedBatch) -> list[bytes]:
    """One digest per row of what the row holds (its pieces: occurrence, source, start, length, ...).

    Two rows have equal keys when they place the same spans at the same offsets.
    """
    p = batch.pieces
    cuts = np.searchsorted(p[:, 0], np.arange(1, batch.n_rows))
    return [hashlib.sha256(part[:, 1:].astype("<i8").tobytes()).digest() for part in np.split(p, cuts)]


ReadRows = Callable[[int], "PackedBatch | None"]
Capture = Callable[[bool], LoaderState]


class RowOrder:
    """The block buffer of an ordered stream: reads identity blocks, yields their rows permuted.

    Built by :class:`~packing_theory.adapters.stream.PackedStream` with its
    own identity row reader (``read(n)``: the next ``n`` rows in packer order,
    fewer at the end, ``None`` when none is left) and state capture
    (``capture(light)``: the identity stream's state at the current row
    boundary). Memory: one block of records.
    """

    @classmethod
    def attach(cls, spec: OrderSpec | None, saved: Mapping[str, Any] | None, read: ReadRows,
               capture: Capture) -> RowOrder | None:
        """A stream's row order (``None`` for the identity order), at its start or where ``saved`` says."""
        if spec is None:
            return None
        order = cls(spec, read, capture)
        order.restore(saved or {"block_index": 0, "offset": 0, "yielded": 0})
        return order

    def __init__(self, spec: OrderSpec, read: ReadRows, capture: Capture) -> None:
        if spec.order == "identity" or spec.update_rows is None:
            raise InputError("RowOrder needs a resolved, non-identity OrderSpec")
        self.spec = spec
        self._read = read
        self._capture = capture
        self.block_index = -1  # the block in hand (-1: none read yet)
        self._block: PackedBatch | None = None
        self._perm: Int64Array = np.zeros(0, dtype=np.int64)
        self._pos = 0
        self._start: dict[bool, LoaderState] = {}
        self._done = False  # the identity stream has no row left
        self.yielded = 0

    # ------------------------------------------------------------------ reading

    @property
    def remaining(self) -> int:
        """Rows of the block in hand not yet yielded."""
        return 0 if self._block is None else self._block.n_rows - self._pos

    def _next_block(self) -> bool:
        if self._done:
            return False
        self._start = {False: self._capture(False), True: self._capture(True)}
        batch = self._read(self.spec.block_rows)
        if batch is None:
            self._block, self._perm, self._pos, self._done = None, np.zeros(0, dtype=np.int64), 0, True
            return False
        self.block_index += 1
        assert self.spec.update_rows is not None
        self._perm = block_permutation(self.spec.order, batch.n_rows, update_rows=self.spec.update_rows,
                                       seed=self.spec.seed, block_index=self.block_index)
        self._block = take_rows(batch, self._perm)
        self._pos = 0
        return True

    def _take(self, n: int) -> list[PackedBatch]:
        parts: list[PackedBatch] = []
        want = n
        while want > 0:
            if self.remaining == 0 and not self._next_block():
                break
            assert self._block is not None
            k = min(want, self.remaining)
            parts.append(_slice_rows(self._block, self._pos, self._pos + k))
            self._pos += k
            want -= k
        self.yielded += sum(p.n_rows for p in parts)
        return parts

    def next_batch(self, n: int, drop_last: bool) -> PackedBatch | None:
        """The next ``n`` ordered rows (fewer at the end unless ``drop_last``), ``None`` when none is left."""
        parts = self._take(n)
        got = sum(p.n_rows for p in parts)
        if got == 0 or (got < n and drop_last):
            return None
        return concat_batches(parts)

    def skip(self, n: int) -> int:
        """Consume ``n`` ordered rows without returning them; the number consumed."""
        return sum(p.n_rows for p in self._take(n))

    # ------------------------------------------------------------------ state

    def state(self, light: bool, batches: int) -> LoaderState:
        """The identity state at the current block's start, with the block and the rows yielded from it."""
        if self.remaining:
            base, block, offset = self._start[light], self.block_index, self._pos
        else:
            base, block, offset = self._capture(light), self.block_index + 1, 0
        extra = {**base.extra, "order": {"spec": self.spec.to_dict(), "block_index": block, "offset": offset,
                                         "yielded": self.yielded}}
        return dataclasses.replace(base, batches=batches, extra=extra)

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Continue from :meth:`state`'s ``extra["order"]``: the identity stream stands at the block start."""
        self.block_index = int(saved["block_index"]) - 1
        self.yielded = int(saved["yielded"]) - int(saved["offset"])
        if int(saved["offset"]):
            self.skip(int(saved["offset"]))

    def check_closable(self) -> None:
        """Raise unless the ledger can close here (no row of the block in hand is still to be yielded)."""
        if self.remaining:
            raise InputError(f"the {self.spec.order} stream has read block {self.block_index} ahead and "
                             f"{self.remaining} of its rows are not yielded yet: the ledger closes only at a "
                             f"block boundary (give the budget rows= so that the last block ends there)")

    def audit(self) -> dict[str, Any]:
        """A JSON-ready summary: the spec, the rows yielded, the block in hand."""
        return {**self.spec.to_dict(), "rows_yielded": self.yielded, "block": self.block_index,
                "block_rows_remaining": self.remaining}

    def _check(self) -> None:
        """Assert the internal invariants."""
        if self._block is None:
            assert self._pos == 0 and self._perm.size == 0
        else:
            assert 0 <= self._pos <= self._block.n_rows == self._perm.size
            assert np.array_equal(np.sort(self._perm), np.arange(self._perm.size))
            assert self._block.n_rows <= self.spec.block_rows
        assert self.yielded >= 0


def resume_state(order: str | OrderSpec | None, batch_rows: int, resume: LoaderState | None
                 ) -> tuple[OrderSpec | None, LoaderState | None, dict[str, Any] | None]:
    """The resolved order, the identity stream's part of a saved state, and the order's place in it.

    A state saved with another order (or with none) is refused.
    """
    spec = as_order(order, batch_rows)
    if resume is None:
        return spec, None, None
    if not isinstance(resume, LoaderState):
        raise InputTypeError(f"resume must be a LoaderState, got {type(resume).__name__}")
    saved = resume.extra.get("order")
    if saved is None:
        if spec is not None:
            raise InputError(f"cannot resume: the state was saved by an identity-order stream, this stream "
                             f"has order {spec.order!r}")
        return spec, resume, None
    mine = None if spec is None else spec.to_dict()
    theirs = saved.get("spec") if isinstance(saved, dict) else None
    if mine is None or mine != theirs:
        raise InputError(f"cannot resume: the state was saved with order {theirs}, this stream has "
                         f"{mine or 'the identity order'}")
    for k in ("block_index", "offset", "yielded"):
        if not is_int(saved.get(k)) or saved[k] < 0:
            raise InputError(f"malformed order state: {k}={saved.get(k)!r}")
    extra = {k: v for k, v in resume.extra.items() if k != "order"}
    return spec, dataclasses.replace(resume, extra=extra), dict(saved)


def check_closable(order: RowOrder | None, finished: bool) -> None:
    """Raise unless a ledger can close now: always for the identity order, at a block boundary otherwise."""
    if order is not None and not finished:
        order.check_closable()
