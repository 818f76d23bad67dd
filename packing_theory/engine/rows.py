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

from .._checks import check_id_sequence
from ..errors import InputTypeError
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

    ``documents`` are BOS-inclusive token lists (``doc[0]`` is the BOS; an
    added BOS marker repeats it). Two ways to pass them:

    * a sequence (a list, a memory-mapped shard view, anything indexable):
      read by source id, so a packer configured for several passes (the
      loaders' epochs, with the buffer persisting across them) works;
    * a one-shot iterator: streamed, with only the documents that still have
      unemitted tokens held in memory (``passes`` must be 1). A packer that
      emits :class:`~packing_theory.engine.events.Repeat` events
      (``repeats_tokens = True``) has its documents held to the end.

    Padding positions get ``pad_id``.

    Raises:
        TypeError: a document that is not a sequence of token ids or a 1-D
            array (a ``str`` or ``bytes`` is text, not tokens; a mapping or a
            set has no token order).
    """
    if isinstance(documents, Sequence) and not isinstance(documents, (str, bytes)):
        return _rows_by_source(packer, documents, pad_id)
    return _rows_streamed(packer, iter(documents), pad_id)


def _fill(row: list[int], ev: Any, doc: Sequence[int], pad_id: int) -> None:
    """Append the token ids of one row-filling event to ``row``."""
    t = type(ev)
    if t is Placement:
        if ev.bos_inserted:
            row.append(doc[0])
            row.extend(doc[ev.start : ev.start + ev.length - 1])
        else:
            row.extend(doc[ev.start : ev.start + ev.length])
    elif t is Repeat:
        row.extend(doc[ev.start : ev.start + ev.length])
    else:  # Padding
        row.extend([pad_id] * ev.length)


class _DocumentLengths(Sequence[int]):
    """The lengths of an indexable document collection, read lazily."""

    def __init__(self, documents: Sequence[Sequence[int]]) -> None:
        self._docs = documents

    def __len__(self) -> int:
        return len(self._docs)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._docs)))]
        doc = self._docs[i]
        _check_document(i, doc)
        return len(doc)


def _rows_by_source(packer: Any, documents: Sequence[Sequence[int]], pad_id: int) -> Iterator[list[int]]:
    capacity: int = packer.capacity
    row: list[int] = []
    no_doc: Sequence[int] = ()
    stream: Iterator[Any] = unbatched(packer.events(_DocumentLengths(documents)))
    for ev in stream:
        t = type(ev)
        if t is Placement or t is Repeat:
            _fill(row, ev, documents[ev.source], pad_id)
        elif t is Padding:
            _fill(row, ev, no_doc, pad_id)
        else:
            continue
        if len(row) == capacity:
            yield row
            row = []


def _rows_streamed(packer: Any, docs_iter: Iterator[Sequence[int]], pad_id: int) -> Iterator[list[int]]:
    keep_all = bool(getattr(packer, "repeats_tokens", False))
    held: dict[int, Sequence[int]] = {}
    left: dict[int, int] = {}

    def lengths() -> Iterator[int]:
        for occurrence, doc in enumerate(docs_iter):
            _check_document(occurrence, doc)
            held[occurrence] = doc
            left[occurrence] = len(doc)
            yield len(doc)

    row: list[int] = []
    capacity: int = packer.capacity
    release = (lambda *_: None) if keep_all else _release
    no_doc: Sequence[int] = ()
    stream: Iterator[Any] = unbatched(packer.events(lengths()))
    for ev in stream:
        t = type(ev)
        if t is Placement or t is Repeat:
            _fill(row, ev, held[ev.occurrence], pad_id)
            if t is Placement:
                release(held, left, ev.occurrence, ev.length)
        elif t is Padding:
            _fill(row, ev, no_doc, pad_id)
        elif t is Discard or t is Filtered:
            release(held, left, ev.occurrence, ev.length)
            continue
        elif t is BosAdded:
            left[ev.occurrence] += ev.markers
            continue
        else:
            continue
        if len(row) == capacity:
            yield row
            row = []


def _check_document(index: int, doc: object) -> None:
    """A document is a 1-D integer array or a sequence of ints (O(len(doc)) at numpy speed)."""
    if isinstance(doc, np.ndarray):
        if doc.ndim != 1 or doc.dtype.kind not in "iu":
            raise InputTypeError(f"documents[{index}] must be a 1-D integer array of token ids, got a "
                                 f"{doc.dtype} array of shape {doc.shape}")
        return
    if isinstance(doc, (str, bytes, bytearray, Mapping, AbstractSet)) or not isinstance(doc, Sequence):
        raise InputTypeError(f"documents[{index}] must be a sequence of token ids, got {type(doc).__name__}"
                        + (" (text, not tokens: tokenize it first)" if isinstance(doc, (str, bytes)) else ""))
    check_id_sequence(doc, f"documents[{index}]")


def _release(held: dict[int, Sequence[int]], left: dict[int, int], occurrence: int, n: int) -> None:
    rest = left[occurrence] - n
    if rest:
        left[occurrence] = rest
    else:
        del left[occurrence]
        del held[occurrence]
