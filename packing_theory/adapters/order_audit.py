"""The audit of an order control: the ordered stream against the identity stream (seed 000 §5.8).

Job: run the identity and the ordered :class:`~packing_theory.adapters.stream.PackedStream`
of one configuration to their end and check that the ordered stream yields
every row of the finite identity stream exactly once, each within its own
block — so that a budget changes which rows are included only at its edge —
and that both ledgers close equal. Imports: numpy, this package's order and
stream modules.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from .order import OrderSpec, as_order, row_keys
from .stream import PackedStream

__all__ = ["OrderAudit", "compare_orders", "order_audit"]

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class OrderAudit:
    """What an ordered stream yielded, against the identity stream of the same configuration.

    Attributes:
        order: the order spec.
        rows: rows of the finite identity stream.
        ordered_rows: rows the ordered stream yielded.
        blocks: blocks.
        every_row_once: the ordered rows are exactly the identity rows, each once (as a multiset).
        block_local: every block holds the same rows in both streams.
        moved_rows: rows yielded at another position than in the identity stream.
        max_budget_edge_rows: over every budget of ``r`` rows, the most identity rows among the
            first ``r`` that the ordered stream has not yielded by then (0 at every block boundary;
            below the block size when ``block_local``).
        ledger_equal: both streams' ledgers close with equal aggregates (``None`` without ledgers).
    """

    order: dict[str, Any]
    rows: int
    ordered_rows: int
    blocks: int
    every_row_once: bool
    block_local: bool
    moved_rows: int
    max_budget_edge_rows: int
    ledger_equal: bool | None

    @property
    def ok(self) -> bool:
        """Every row once, block-local, equal ledgers when there are ledgers."""
        return self.every_row_once and self.block_local and self.ledger_equal is not False

    @property
    def statement(self) -> str:
        """The audit in words."""
        if not self.ok:
            return (f"The {self.order['order']} stream does NOT preserve the identity stream's rows: "
                    f"every row once: {self.every_row_once}, within its block: {self.block_local}, equal "
                    f"ledgers: {self.ledger_equal}.")
        return (f"The {self.order['order']} stream yields each of the identity stream's {self.rows:,} rows "
                f"exactly once ({self.moved_rows:,} at another position), each within its own block of "
                f"{self.order['block']} updates of {self.order['update_rows']} rows; so the rows included "
                f"under a budget change only at the budget edge: at most {self.max_budget_edge_rows:,} rows, "
                f"all in the block the budget cuts, and none at a block boundary.")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"order": self.order, "rows": self.rows, "ordered_rows": self.ordered_rows,
                "blocks": self.blocks, "every_row_once": self.every_row_once, "block_local": self.block_local,
                "moved_rows": self.moved_rows, "max_budget_edge_rows": self.max_budget_edge_rows,
                "ledger_equal": self.ledger_equal, "ok": self.ok, "statement": self.statement}


def _budget_edge(sigma: Int64Array) -> int:
    """``max_r #{i < r : sigma[i] >= r}`` for a permutation ``sigma`` of ``0..n-1``. O(n)."""
    n = sigma.size
    if n == 0:
        return 0
    both = np.bincount(np.maximum(np.arange(n), sigma), minlength=n)  # counted in every prefix past max(i, v)
    r = np.arange(1, n + 1)
    return int((r - np.cumsum(both)).max())


def compare_orders(identity: list[bytes], ordered: list[bytes], spec: OrderSpec,
                   ledger_equal: bool | None = None) -> OrderAudit:
    """The :class:`OrderAudit` of two row-key sequences (:func:`row_keys`) of one configuration."""
    K = spec.block_rows
    every = len(identity) == len(ordered) and Counter(identity) == Counter(ordered)
    blocks = -(-len(identity) // K)
    local = every and all(Counter(identity[b * K:(b + 1) * K]) == Counter(ordered[b * K:(b + 1) * K])
                          for b in range(blocks))
    sigma = np.full(len(ordered), -1, dtype=np.int64)
    if local:
        for b in range(blocks):
            where: dict[bytes, list[int]] = {}
            for i in range(b * K, min((b + 1) * K, len(identity))):
                where.setdefault(identity[i], []).append(i)
            for i in range(b * K, min((b + 1) * K, len(ordered))):
                sigma[i] = where[ordered[i]].pop(0)
    moved = int((sigma != np.arange(sigma.size)).sum()) if local else len(ordered)
    edge = _budget_edge(sigma) if local else len(ordered)
    return OrderAudit(spec.to_dict(), len(identity), len(ordered), blocks, every, local, moved, edge,
                      ledger_equal)


def order_audit(documents: Any, *, order: str | OrderSpec, **stream_kwargs: Any) -> OrderAudit:
    """Run the identity and the ordered stream of one configuration to their end and compare their rows.

    ``stream_kwargs`` go to both :class:`~packing_theory.adapters.stream.PackedStream` s
    (the stream must be finite: a ``rows`` budget or finite ``passes``).
    With ``ledger=True`` both ledgers are closed and compared too.
    O(rows) plus two replays.
    """
    kw = dict(stream_kwargs)
    spec = as_order(order, int(kw.get("batch_rows", 1)))
    if spec is None:
        raise InputError("order_audit compares a sequence-shuffle or batch-shuffle stream with the identity "
                         "stream; order='identity' is the identity stream itself")
    identity = PackedStream(documents, **kw)
    ordered = PackedStream(documents, order=spec, **kw)
    keys_i = [k for b in identity for k in row_keys(b)]
    keys_o = [k for b in ordered for k in row_keys(b)]
    equal = None
    if identity.ledger is not None and ordered.ledger is not None:
        equal = identity.finish().to_dict() == ordered.finish().to_dict()
    return compare_orders(keys_i, keys_o, spec, equal)
