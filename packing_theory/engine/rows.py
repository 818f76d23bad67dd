"""From events to rows: the audit's view (placements per row) and the trainer's view (token ids).

Both engines, and every peer packer, share these: a row is complete when
the events that fill positions (:class:`~packing_theory.engine.events.Placement`,
:class:`~packing_theory.engine.events.Padding`,
:class:`~packing_theory.engine.events.Repeat`) fill ``capacity`` positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from .events import (
    BosAdded,
    Discard,
    Event,
    Filtered,
    Padding,
    Placement,
    Repeat,
    fill_length,
)

__all__ = ["RowEvent", "group_rows", "token_rows"]

RowEvent = Placement | Padding | Repeat
"""The events that fill row positions."""


def group_rows(events: Iterable[Event], capacity: int) -> Iterator[list[Placement]]:
    """Group the row-filling events into complete rows.

    The events of one row must be contiguous in the stream (every packer
    completes a row before it starts the next, whatever the row's index).
    Rows of the streaming family hold only placements; peers' rows may also
    hold :class:`~packing_theory.engine.events.Padding` and
    :class:`~packing_theory.engine.events.Repeat` events.
    """
    current: list[Any] = []
    filled = 0
    for ev in events:
        n = fill_length(ev)
        if n:
            current.append(ev)
            filled += n
            if filled == capacity:
                yield current
                current = []
                filled = 0


def token_rows(
    packer: Any, documents: Iterable[Sequence[int]], pad_id: int = 0
) -> Iterator[list[int]]:
    """Rows of token ids from any event source (``packer.events`` and ``packer.capacity``).

    Documents are held while they still have unemitted tokens; a packer that
    emits :class:`~packing_theory.engine.events.Repeat` events (``repeats_tokens =
    True``) has its documents held to the end. Padding positions get ``pad_id``.

    Raises:
        TypeError: a document that is not a sequence of token ids or a 1-D
            array (a ``str`` or ``bytes`` is text, not tokens; a mapping or a
            set has no token order).
    """
    keep_all = bool(getattr(packer, "repeats_tokens", False))
    held: dict[int, Sequence[int]] = {}
    left: dict[int, int] = {}
    docs_iter = iter(documents)

    def lengths() -> Iterator[int]:
        for occurrence, doc in enumerate(docs_iter):
            _check_document(occurrence, doc)
            held[occurrence] = doc
            left[occurrence] = len(doc)
            yield len(doc)

    row: list[int] = []
    capacity: int = packer.capacity
    release = (lambda *_: None) if keep_all else _release
    for ev in packer.events(lengths()):
        t = type(ev)
        if t is Placement:
            doc = held[ev.occurrence]
            if ev.bos_inserted:
                row.append(doc[0])
                row.extend(doc[ev.start : ev.start + ev.length - 1])
            else:
                row.extend(doc[ev.start : ev.start + ev.length])
            release(held, left, ev.occurrence, ev.length)
        elif t is Discard:
            release(held, left, ev.occurrence, ev.length)
        elif t is BosAdded:
            left[ev.occurrence] += ev.markers
        elif t is Padding:
            row.extend([pad_id] * ev.length)
        elif t is Repeat:
            row.extend(held[ev.occurrence][ev.start : ev.start + ev.length])
        elif t is Filtered:
            release(held, left, ev.occurrence, ev.length)
        else:
            continue
        if len(row) == capacity:
            yield row
            row = []


def _check_document(index: int, doc: object) -> None:
    if isinstance(doc, np.ndarray):
        if doc.ndim != 1:
            raise TypeError(f"documents[{index}] must be a 1-D array of token ids, got shape {doc.shape}")
        return
    if isinstance(doc, (str, bytes, bytearray, Mapping, AbstractSet)) or not isinstance(doc, Sequence):
        raise TypeError(f"documents[{index}] must be a sequence of token ids, got {type(doc).__name__}"
                        + (" (text, not tokens: tokenize it first)" if isinstance(doc, (str, bytes)) else ""))


def _release(held: dict[int, Sequence[int]], left: dict[int, int], occurrence: int, n: int) -> None:
    rest = left[occurrence] - n
    if rest:
        left[occurrence] = rest
    else:
        del left[occurrence]
        del held[occurrence]
