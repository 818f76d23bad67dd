"""Value types of the placement stream.

Every packer in this library — the streaming family, and later offline or
concatenating peers — turns an arrival stream into the same sequence of
*events*. Consumers (the audit ledger, the invariant monitor, the evaluation
tools, the trainer adapter) read events and never a packer's internals.

Coordinates
-----------
A source occurrence of BOS-inclusive length ``L`` has *source offsets*
``0 .. L-1``; offset 0 is its own BOS token. A :class:`Placement` puts
``length`` consecutive row positions, starting at ``offset`` in row ``row``:

* ``bos_inserted=False``: the positions hold source offsets
  ``[start, start + length)``;
* ``bos_inserted=True``: the first position holds a BOS marker that is not
  source offset ``start`` and the others hold ``[start, start + length - 1)``.
  The marker is an *added* BOS (``requeue-bos`` remainders, ``segment-first``
  chunks after the first; each announced by a :class:`BosAdded` event) or,
  for ``random-span`` crops, the source's own BOS moved in front of a text
  span that does not start at offset 1.

Mass identity (checked by tests for every policy)::

    sum(Arrival.length) + sum(BosAdded.markers)
        == sum(Placement.length) + sum(Discard.length) + sum(Horizon buffered lengths)

All types are :class:`typing.NamedTuple`: immutable, hashable, comparable
field by field, and cheap enough to create per selection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "STOP_REASONS",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "Discard",
    "Event",
    "EventSource",
    "Exhausted",
    "Horizon",
    "Placement",
]


class Arrival(NamedTuple):
    """An original source occurrence entered the buffer (after any arrival transform).

    Attributes:
        occurrence: unique 0-based arrival index of this occurrence.
        source: original source id (index in the corpus); equal across passes.
        pass_index: 0-based corpus pass in which the occurrence arrived.
        length: BOS-inclusive original length ``L >= 1``.
    """

    occurrence: int
    source: int
    pass_index: int
    length: int


class BosAdded(NamedTuple):
    """``markers`` BOS markers were created for ``occurrence`` and entered the buffer."""

    occurrence: int
    source: int
    markers: int


class Placement(NamedTuple):
    """One selection: a span placed into a row.

    Attributes:
        row: 0-based row index.
        offset: row position of the first placed token.
        occurrence: source occurrence id (see :class:`Arrival`).
        source: original source id.
        start: source offset of the first *source* token placed (see module doc).
        length: number of row positions occupied, including an inserted BOS.
        bos_inserted: the first position is a BOS marker not taken from ``start``.
        crop: ``False`` for a whole selection (the span fitted), ``True`` for a
            crop selection (nothing fitted; the span was cut to fill the row).
    """

    row: int
    offset: int
    occurrence: int
    source: int
    start: int
    length: int
    bos_inserted: bool
    crop: bool

    @property
    def source_stop(self) -> int:
        """One past the last source offset placed (``start + length - bos_inserted``)."""
        return self.start + self.length - (1 if self.bos_inserted else 0)

    def first_target(self, capacity: int) -> int:
        """Target index ``row*(R-1) + max(offset-1, 0)`` of the first placed token."""
        return self.row * (capacity - 1) + max(self.offset - 1, 0)


class Discard(NamedTuple):
    """Source tokens ``[start, start + length)`` of ``occurrence`` were dropped."""

    occurrence: int
    source: int
    start: int
    length: int


class BufferedSpan(NamedTuple):
    """A span still buffered at the horizon, in buffer order.

    It holds the same tokens a :class:`Placement` with these fields would.
    """

    occurrence: int
    source: int
    start: int
    length: int
    bos_inserted: bool


class Exhausted(NamedTuple):
    """The stream could not refill the buffer to ``B`` before the selection at (row, offset).

    In ``exhausted="drain"`` mode the selections after this event run with
    fewer than ``B`` buffered spans, outside the proposition's hypotheses.
    """

    row: int
    offset: int
    buffered: int


STOP_REASONS = ("rows", "exhausted", "drained")


class Horizon(NamedTuple):
    """The last event of every replay.

    Attributes:
        rows: number of complete rows emitted.
        partial_row_tokens: tokens placed in an incomplete last row (0 if none).
        stop_reason: ``"rows"`` (budget reached), ``"exhausted"`` (could not
            refill to ``B``; stopped) or ``"drained"`` (drain mode emptied the buffer).
        buffered: the spans still buffered, in buffer order.
    """

    rows: int
    partial_row_tokens: int
    stop_reason: str
    buffered: tuple[BufferedSpan, ...]


Event = Arrival | BosAdded | Placement | Discard | Exhausted | Horizon
"""Any event of the placement stream."""


@runtime_checkable
class EventSource(Protocol):
    """What every packer provides, streaming or offline, so consumers plug in unchanged.

    A peer packer (offline best-fit-decreasing, concatenate-and-chunk, ...)
    implements ``capacity`` and ``events``; the audit ledger, the invariant
    monitor and the trainer adapter need nothing else.
    """

    @property
    def capacity(self) -> int:
        """Row capacity ``R``."""
        ...

    def events(self, lengths: Any) -> Iterator[Event]:
        """Replay BOS-inclusive ``lengths`` and yield events ending with a :class:`Horizon`."""
        ...
