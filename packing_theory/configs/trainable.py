"""Trained *trainable* tokens per document: a consumer of the event stream for prompt-masked training.

Supervised fine-tuning trains only part of each example (the completion, the
assistant turns): TRL's ``completion_only_loss`` / ``assistant_only_loss``,
LLM Foundry's decoder-only format, nanochat's conversation mask. Given each
document's *first trainable offset* (the prompt length; the document length
when nothing is trainable), :class:`TrainableTokens` counts, per occurrence,
the trainable source tokens that complete rows hold. A document that was
started but keeps no trainable token trains nothing: a packer that truncates
it at the row width cut away its completion (TRL PR #6025, #6320).

Events accounted: :class:`~packing_theory.engine.events.Placement` (the
overlap of its source offsets with ``[first trainable, L)``); a placement in
a row the :class:`~packing_theory.engine.events.Horizon` leaves incomplete is
not trained. ``Repeat``, ``Padding``, ``Discard``, ``Filtered``, ``BosAdded``
and ``Arrival`` move no trainable token into a trained row and are ignored.

>>> from packing_theory import build_packer, feed_all
>>> packer = build_packer("trl-bfd", capacity=4)
>>> (t,) = feed_all(packer.events([6, 3]), TrainableTokens(capacity=4, first_trainable=[5, 1]))
>>> t.trained.tolist(), t.started.tolist()
([0, 2], [True, True])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import EventBatch, EventItem
from ..engine.events import Horizon, Placement
from ..errors import InputError

__all__ = ["TrainableResult", "TrainableTokens"]


class TrainableResult:
    """Per source document: trainable tokens trained, and whether any token of it was trained."""

    def __init__(self, trained: npt.NDArray[np.int64], started: npt.NDArray[np.bool_]) -> None:
        self.trained = trained
        self.started = started

    def empty_documents(self) -> npt.NDArray[np.int64]:
        """The documents started whose rows hold none of their trainable tokens."""
        return np.flatnonzero(self.started & (self.trained == 0))


class TrainableTokens:
    """Count each source document's trained trainable tokens (see the module doc).

    Args:
        capacity: the row width ``R`` (required, as for every consumer).
        first_trainable: per source document, the offset of its first trainable token.

    Complexity: O(1) per placement; memory O(documents) plus the placements of the
    rows not yet known to be complete (the last row of a streaming packer).
    """

    def __init__(self, capacity: int, first_trainable: Any) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        first = np.asarray(first_trainable)
        if first.ndim != 1 or (first.size and not np.issubdtype(first.dtype, np.integer)):
            raise InputError(f"first_trainable must be a 1-D array of ints, got shape {first.shape} and "
                             f"dtype {first.dtype}")
        if first.size and int(first.min()) < 0:
            raise InputError(f"first_trainable[{int(np.argmin(first))}] = {int(first.min())} must be >= 0")
        self.first = first.astype(np.int64)
        self.trained = np.zeros(first.size, np.int64)
        self.started = np.zeros(first.size, np.bool_)
        self._rows: dict[int, list[tuple[int, int]]] = {}  # row -> its placements' (source, trainable)
        self._done = False

    def feed(self, item: EventItem) -> None:
        """Account one event or one batch (see the module doc for what is ignored)."""
        if isinstance(item, EventBatch):
            for ev in item.events():
                self.feed(ev)
            return
        t = type(item)
        if t is Placement:
            p: Placement = item  # type: ignore[assignment]
            if not 0 <= p.source < self.first.size:
                raise InputError(f"a placement names document {p.source}, but first_trainable covers "
                                 f"{self.first.size}")
            lo = max(p.start, int(self.first[p.source]))
            n = max(0, p.source_stop - lo)
            self._rows.setdefault(p.row, []).append((p.source, n))
        elif t is Horizon:
            h: Horizon = item  # type: ignore[assignment]
            for row, pieces in self._rows.items():
                if row < h.rows:  # rows 0 .. rows-1 are complete; a higher index is the partial row
                    for src, n in pieces:
                        self.trained[src] += n
                        self.started[src] = True
            self._rows.clear()
            self._done = True

    def result(self) -> TrainableResult:
        """The counts; requires the Horizon."""
        if not self._done:
            raise InputError("TrainableTokens.result() needs the Horizon event (feed the whole stream)")
        return TrainableResult(self.trained, self.started)

    def _check(self) -> None:
        assert (self.trained >= 0).all()
        assert not (self.trained > 0)[~self.started].any()
