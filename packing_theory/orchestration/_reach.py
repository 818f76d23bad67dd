"""The common horizon's first pass: the tokens a packer places in complete rows to its natural end.

:func:`placed_tokens` reads single events one at a time and an
:class:`~packing_theory.engine.batches.EventBatch` with numpy, with the same
answer (``tests/orchestration/test_reach.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np

from ..engine.batches import PADDING, PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.events import Padding, Placement, Repeat

__all__ = ["placed_tokens"]


def placed_tokens(events: Iterable[EventItem], capacity: int) -> int:
    """Tokens placed in the complete rows of a whole stream (the most a token horizon can ask of it).

    A batch is accounted with numpy: its row-filling events' lengths in stream
    order, their running sum, and the placed tokens up to the last event that
    completes a row.
    """
    filled = placed = done = 0
    for ev in events:
        t = type(ev)
        if t is EventBatch:
            filled, placed, done = _placed_in_batch(cast(EventBatch, ev), capacity, filled, placed, done)
            continue
        if t is Placement or t is Padding or t is Repeat:
            n = cast("Placement | Padding | Repeat", ev).length
            filled += n
            if t is Placement:
                placed += n
            if filled == capacity:
                done, filled, placed = done + placed, 0, 0
    return done


def _placed_in_batch(b: EventBatch, capacity: int, filled: int, placed: int, done: int
                     ) -> tuple[int, int, int]:
    """:func:`placed_tokens`' state ``(filled, placed, done)`` after batch ``b``."""
    fill = np.zeros(len(b), np.int64)
    fill[b.kinds == PLACEMENT] = b.placement.length
    fill[b.kinds == PADDING] = b.padding.length
    fill[b.kinds == REPEAT] = b.repeat.length
    take = np.zeros(len(b), np.int64)
    take[b.kinds == PLACEMENT] = b.placement.length
    mask = (b.kinds == PLACEMENT) | (b.kinds == PADDING) | (b.kinds == REPEAT)
    cf = filled + np.cumsum(fill[mask])
    cp = placed + np.cumsum(take[mask])
    if not cf.size:
        return filled, placed, done
    ends = np.flatnonzero(cf % capacity == 0)
    if ends.size:
        last = int(ends[-1])
        done += int(cp[last])
        filled, placed = int(cf[-1] - cf[last]), int(cp[-1] - cp[last])
    else:
        filled, placed = int(cf[-1]), int(cp[-1])
    return filled, placed, done
