"""What the trainer should have consumed: the replay's rows, dealt to optimizer steps and ranks.

A packer's replay (:func:`packing_theory.registry.build_packer`) gives rows;
a trainer draws them in some order and deals them to ranks. A
:class:`Schedule` states that order:

* ``rows_per_step``: rows one rank consumes per optimizer step (micro-batch
  size x gradient-accumulation steps);
* ``deal="blocks"``: global batch after global batch, rank ``r`` taking the
  ``r``-th block of ``rows_per_step`` rows — Megatron's pretraining sampler,
  and accelerate's default batch sharding (what the Hugging Face ``Trainer``
  does on several processes); sampler position ``(s * W + r) * b + i``;
* ``deal="interleaved"``: ``torch.utils.data.DistributedSampler`` — rank
  ``r`` takes sampler positions ``r, r + W, r + 2W, ...``, ``b`` of them per
  step; sampler position ``(s * b + i) * W + r``;
* ``permutation``: the sampler's order over the replay's rows (sampler
  position ``j`` is row ``permutation[j]``), e.g. the indices of a shuffling
  sampler; without it rows are drawn in replay order.

:class:`ExpectedRows` holds the replay's rows as document spans
``(doc, start, length, targets, flags)`` — ``targets`` by the packer's
trainer rule (:class:`~packing_theory.peers.TrainerRule`: the first position
of every row, or of every packed sequence, is input only) — merged as the
ledger merges them (consecutive pieces of one document at consecutive
offsets are one span).

>>> Schedule(world_size=2, rows_per_step=2).rows(step=1, rank=0)
[4, 5]
>>> Schedule(world_size=2, rows_per_step=2, deal="interleaved").rows(step=1, rank=0)
[4, 6]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.events import Padding, Placement, Repeat
from ..engine.rows import group_rows
from ..errors import InputError
from .format import FLAG_BOS_INSERTED

__all__ = ["DEALS", "Deal", "ExpectedRows", "Schedule", "SpanTuple", "target_unit"]

Deal = Literal["blocks", "interleaved"]
DEALS: tuple[Deal, ...] = ("blocks", "interleaved")
SpanTuple = tuple[int, int, int, int, int]
"""``(doc, start, length, targets, flags)``."""


@dataclass(frozen=True)
class Schedule:
    """How replay rows reach ``(step, rank)`` (see the module doc)."""

    world_size: int = 1
    rows_per_step: int = 1
    deal: Deal = "blocks"
    permutation: Sequence[int] | npt.NDArray[np.integer[Any]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_int("world_size", self.world_size, 1)
        check_int("rows_per_step", self.rows_per_step, 1)
        if self.deal not in DEALS:
            raise InputError(f"deal must be one of {', '.join(DEALS)}, got {self.deal!r}")
        if self.permutation is not None:
            perm = np.asarray(self.permutation)
            if perm.ndim != 1 or (perm.size and not np.issubdtype(perm.dtype, np.integer)) or (
                    perm.size and perm.min() < 0):
                raise InputError("permutation must be a 1-D array of row indices >= 0")
            object.__setattr__(self, "_perm", perm.astype(np.int64))
        else:
            object.__setattr__(self, "_perm", None)

    def positions(self, step: int, rank: int) -> list[int]:
        """Sampler positions of ``(step, rank)``, in consumption order."""
        W, b = self.world_size, self.rows_per_step
        if self.deal == "blocks":
            return [(step * W + rank) * b + i for i in range(b)]
        return [(step * b + i) * W + rank for i in range(b)]

    def rows(self, step: int, rank: int, total: int | None = None) -> list[int]:
        """Replay rows of ``(step, rank)`` (those below ``total`` when given)."""
        pos = self.positions(step, rank)
        perm: npt.NDArray[np.int64] | None = getattr(self, "_perm", None)
        if perm is not None:
            pos = [int(perm[p]) for p in pos if p < perm.size]
        return [p for p in pos if total is None or p < total]

    def max_row(self, last_step: int) -> int:
        """An upper bound on the rows steps ``0 .. last_step`` of every rank draw (exclusive)."""
        n = (last_step + 1) * self.world_size * self.rows_per_step
        perm: npt.NDArray[np.int64] | None = getattr(self, "_perm", None)
        if perm is not None:
            head = perm[: min(n, perm.size)]
            return int(head.max()) + 1 if head.size else 0
        return n

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the permutation as its length)."""
        return {"world_size": self.world_size, "rows_per_step": self.rows_per_step, "deal": self.deal,
                "permutation": None if self.permutation is None else len(self.permutation)}


def target_unit(packer: Any) -> str:
    """``"row"``, ``"sequence"`` or ``"position"``: which positions the packer's trainer predicts.

    A peer declares its rule (``packer.rule()``); the streaming family follows
    seed 000's convention (every position but a row's first).
    """
    rule = getattr(packer, "rule", None)
    return str(rule().unit) if callable(rule) else "row"


class ExpectedRows:
    """The rows ``0 .. limit - 1`` of a replay as merged spans, with targets by the trainer rule.

    Args:
        events: the packer's event stream.
        capacity: its row width.
        unit: the trainer rule's unit (:func:`target_unit`).
        limit: keep rows below it (the others are read and dropped).
        n_docs: the corpus's document count.

    Memory: O(spans of the kept rows) plus a flag per document (:attr:`replayed`: the replay
    places it in some row, kept or not). Rows the packer never emitted are empty.
    """

    def __init__(self, events: Iterable[Any], capacity: int, unit: str, limit: int, n_docs: int) -> None:
        if unit not in ("row", "sequence", "position"):
            raise InputError(f"unit must be row, sequence or position, got {unit!r}")
        self.unit = unit
        self.limit = check_int("limit", limit, 0)
        self._rows: dict[int, list[SpanTuple]] = {}
        self.total_rows = 0
        self.replayed = np.zeros(check_int("n_docs", n_docs, 0), dtype=bool)
        for row in group_rows(events, capacity):
            self.total_rows += 1
            index = int(row[0].row)
            spans = self._spans(row)
            for s in spans:
                self.replayed[s[0]] = True
            if index < self.limit:
                self._rows[index] = spans

    def _spans(self, row: Sequence[Any]) -> list[SpanTuple]:
        out: list[SpanTuple] = []
        prev_end = -1
        for ev in row:
            t = type(ev)
            if t is Padding:
                continue
            if t is not Placement and t is not Repeat:
                raise InputError(f"a row holds {ev!r}")
            bos = bool(getattr(ev, "bos_inserted", False)) and ev.start != 1  # BOS + offset 1: the start
            start = 0 if getattr(ev, "bos_inserted", False) and ev.start == 1 else ev.start
            first = ev.offset == 0 if self.unit == "row" else self.unit == "sequence"
            targets = ev.length - (1 if first else 0)
            last = out[-1] if out else None
            if (last is not None and not bos and last[0] == ev.source and ev.offset == prev_end
                    and last[1] + last[2] - (1 if last[4] & FLAG_BOS_INSERTED else 0) == start):
                extra = targets + (1 if self.unit == "sequence" else 0)  # one sequence, one input-only start
                out[-1] = (ev.source, last[1], last[2] + ev.length, last[3] + extra, last[4])
            else:
                out.append((ev.source, start, ev.length, targets, FLAG_BOS_INSERTED if bos else 0))
            prev_end = ev.offset + ev.length
        return out

    def row(self, index: int) -> list[SpanTuple]:
        """The spans of row ``index`` (empty beyond the replay or the limit)."""
        return self._rows.get(index, [])

    def __contains__(self, index: int) -> bool:
        return index in self._rows

    def per_document(self, n_docs: int, rows: Iterable[int]) -> tuple[npt.NDArray[np.int64],
                                                                    npt.NDArray[np.int64]]:
        """``(positions, targets)`` per document over ``rows``. O(spans)."""
        pos = np.zeros(n_docs, dtype=np.int64)
        tgt = np.zeros(n_docs, dtype=np.int64)
        for r in rows:
            for doc, _, length, targets, _ in self._rows.get(r, []):
                pos[doc] += length
                tgt[doc] += targets
        return pos, tgt

    def _check(self) -> None:
        """Assert: kept rows below the limit, spans of positive length, targets within them, docs replayed."""
        for r, spans in self._rows.items():
            assert 0 <= r < self.limit
            for doc, start, length, targets, _ in spans:
                assert start >= 0 and length >= 1 and 0 <= targets <= length and self.replayed[doc]
