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

Mass identity (checked by tests for every policy and every peer)::

    sum(Arrival.length) + sum(BosAdded.markers)
        == sum(Placement.length) + sum(Discard.length) + sum(Filtered.length)
           + sum(Horizon buffered lengths)

Row identity: every complete row is filled exactly by its placements, its
padding and its repeated tokens::

    Horizon.rows * R + Horizon.partial_row_tokens
        == sum(Placement.length) + sum(Padding.length) + sum(Repeat.length)

Padding and repeated tokens are never counted as emitted source tokens.

What offline packers add
------------------------
The streaming family only ever emits :class:`Placement`, :class:`Discard`
and :class:`BosAdded`. Offline and concatenating packers (the peers of
:mod:`packing_theory.peers`) also need

* :class:`Filtered` — an arrived document removed before packing (too long,
  empty, over a cap); its tokens never reach a row;
* :class:`Padding` — row positions that hold no source token (a bin that is
  not full, right padding to the sequence length);
* :class:`Repeat` — row positions that show source tokens a placement has
  already emitted (Megatron-style samples of ``L + 1`` tokens overlapping by
  one token).

Rows may be emitted in any order (bin order, a shuffled sample index); a
row is complete when its placements, padding and repeats fill ``R``
positions. Consumers never assume that row indices increase.

All types are :class:`typing.NamedTuple`: immutable, hashable, comparable
field by field, and cheap enough to create per selection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol, overload, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "STOP_REASONS",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "Discard",
    "Event",
    "EventSource",
    "Exhausted",
    "Filtered",
    "Horizon",
    "Padding",
    "Placement",
    "Repeat",
    "fill_length",
    "first_target",
]


Int64Array = npt.NDArray[np.int64]


@overload
def first_target(row: int, offset: int, capacity: int) -> int: ...
@overload
def first_target(row: Int64Array, offset: Int64Array, capacity: int) -> Int64Array: ...
def first_target(row: Any, offset: Any, capacity: int) -> Any:
    """Target index of row position ``offset`` of ``row``: ``row * (R - 1) + max(offset - 1, 0)``.

    Position 0 of a row is input only, position ``p >= 1`` holds target
    ``row * (R - 1) + p - 1``; a token at position 0 is credited with the
    row's first target. Works on ints and, elementwise, on numpy arrays.

    >>> first_target(2, 0, 5), first_target(2, 3, 5)
    (8, 10)
    >>> first_target(np.array([2, 2]), np.array([0, 3]), 5).tolist()
    [8, 10]
    """
    if isinstance(offset, np.ndarray):
        return row * (capacity - 1) + np.maximum(offset - 1, 0)
    return row * (capacity - 1) + max(offset - 1, 0)


class Arrival(NamedTuple):
    """An original source occurrence entered the buffer (after any arrival transform).

    Attributes:
        occurrence: unique 0-based arrival index of this occurrence.
        source: original source id (index in the corpus); equal across passes.
        pass_index: 0-based corpus pass in which the occurrence arrived.
        length: BOS-inclusive original length ``L >= 1`` (``L = 0`` only for an
            empty document that a peer packer then reports as :class:`Filtered`).
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
        """Target index of the first placed token (:func:`first_target`)."""
        return first_target(self.row, self.offset, capacity)


class Discard(NamedTuple):
    """Source tokens ``[start, start + length)`` of ``occurrence`` were dropped."""

    occurrence: int
    source: int
    start: int
    length: int


class Filtered(NamedTuple):
    """An arrived occurrence was removed before packing; none of its ``length`` tokens reach a row.

    Follows the occurrence's :class:`Arrival`. ``reason`` is a short
    machine-readable tag (``"over-capacity"``, ``"empty"``, ``"max-packs"``, ...).
    """

    occurrence: int
    source: int
    length: int
    reason: str


class Padding(NamedTuple):
    """Row positions ``[offset, offset + length)`` of ``row`` hold no source token.

    Right padding to the sequence length, or the unused end of a bin that a
    packer emits short. Padding is never emitted source mass.
    """

    row: int
    offset: int
    length: int


class Repeat(NamedTuple):
    """Row positions that show source tokens a :class:`Placement` has already emitted.

    Positions ``[offset, offset + length)`` of ``row`` hold source offsets
    ``[start, start + length)`` of ``occurrence`` again (Megatron's samples of
    ``L + 1`` tokens overlap by one). The tokens are counted once, by their
    placement; a repeat changes neither the mass identity nor exposure.
    """

    row: int
    offset: int
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


Event = Arrival | BosAdded | Placement | Discard | Filtered | Padding | Repeat | Exhausted | Horizon
"""Any event of the placement stream."""


def fill_length(ev: object) -> int:
    """Row positions an event fills: the length of a Placement, Padding or Repeat, else 0.

    >>> fill_length(Padding(0, 5, 3)), fill_length(Discard(0, 0, 1, 4))
    (3, 0)
    """
    t = type(ev)
    if t is Placement or t is Padding or t is Repeat:
        return ev.length  # type: ignore[attr-defined, no-any-return]
    return 0


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
