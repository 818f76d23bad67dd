"""From events to rows: the audit's view (placements per row) and the trainer's view (token ids).

Both engines, and every peer packer, share these: a row is complete when
the events that fill positions (:class:`~packing_theory.engine.events.Placement`,
:class:`~packing_theory.engine.events.Padding`,
:class:`~packing_theory.engine.events.Repeat`) fill ``capacity`` positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .batches import EventItem, unbatched
from .events import (
    BosAdded,
    Discard,
    Filtered,
    Padding,
    Placement,
    Repeat,
    fill_length,
)

__all__ = ["RowEvent", "group_rows", "token_rows"]

RowEvent = Placement | Padding | Repeat
"""The events that fill row positions."""


def group_rows(events: Iterable[EventItem], capacity: int) -> Iterator[list[Placement]]:
    """Group the row-filling events into complete rows.

    The events of one row must be contiguous in the stream (every packer
    completes a row before it starts the next, whatever the row's index).
    Rows of the streaming family hold only placements; peers' rows may also
    hold :class:`~packing_theory.engine.events.Padding` and
    :class:`~packing_theory.engine.events.Repeat` events. Batches are read
    event by event (:func:`~packing_theory.engine.batches.unbatched`).
    """
    current: list[Any] = []
    filled = 0
    for ev in unbatched(events):
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
    """
    keep_all = bool(getattr(packer, "repeats_tokens", False))
    held: dict[int, Sequence[int]] = {}
    left: dict[int, int] = {}
    docs_iter = iter(documents)

    def lengths() -> Iterator[int]:
        for occurrence, doc in enumerate(docs_iter):
            held[occurrence] = doc
            left[occurrence] = len(doc)
            yield len(doc)

    row: list[int] = []
    capacity: int = packer.capacity
    release = (lambda *_: None) if keep_all else _release
    stream: Iterator[Any] = unbatched(packer.events(lengths()))
    for ev in stream:
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


def _release(held: dict[int, Sequence[int]], left: dict[int, int], occurrence: int, n: int) -> None:
    rest = left[occurrence] - n
    if rest:
        left[occurrence] = rest
    else:
        del left[occurrence]
        del held[occurrence]
