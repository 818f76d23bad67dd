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
and :class:`BosAdded` (and ``bestfit-pad`` its :class:`Padding`). Offline and
concatenating packers (the peers of :mod:`packing_theory.peers`) also need

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

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, overload, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..errors import InputError

__all__ = [
    "STOP_REASONS",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "BufferedSpans",
    "Discard",
    "Event",
    "EventSource",
    "Exhausted",
    "Filtered",
    "Horizon",
    "Padding",
    "Placement",
    "Repeat",
    "buffered_length",
    "end_reason",
    "fill_length",
    "first_target",
    "span_columns",
]


Int64Array = npt.NDArray[np.int64]
IntColumn = npt.NDArray[np.int32] | npt.NDArray[np.int64]
"""An integer column of :class:`BufferedSpans`: ``int32`` where its producer knew every value fits, else
``int64``."""


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


class BufferedSpans(Sequence[BufferedSpan]):
    """The buffered spans of a Horizon as numpy columns: a read-only sequence of :class:`BufferedSpan`.

    A stream cut at a horizon with millions of documents still held gives its
    Horizon one of these instead of a tuple of millions of objects; it is
    equal to the tuple of the same spans (and hashes as it), and consumers
    that account spans with numpy read :meth:`columns` (:func:`span_columns`).

    An integer column given as ``int32`` stays ``int32`` (4 bytes a span: a producer
    gives ``int32`` only when every value fits, as the horizon cut does); any other is
    kept as ``int64``. Columns are read-only views: two may share one array (a source
    equal to its occurrence id) and a constant one may be a broadcast scalar (taking no
    memory). A consumer that does arithmetic on a column that may be ``int32`` does it
    in ``int64`` (:meth:`total_length` does).

    >>> spans = BufferedSpans([4, 7], [4, 7], [0, 3], [5, 2], [False, True])
    >>> spans == (BufferedSpan(4, 4, 0, 5, False), BufferedSpan(7, 7, 3, 2, True)), len(spans)
    (True, 2)
    >>> spans[1], spans.total_length()
    (BufferedSpan(occurrence=7, source=7, start=3, length=2, bos_inserted=True), 7)
    >>> narrow = BufferedSpans(*(np.array(c, np.int32) for c in ([4, 7], [4, 7], [0, 3], [5, 2])), [0, 1])
    >>> narrow == spans, hash(narrow) == hash(spans), narrow.columns()[0].dtype.name
    (True, True, 'int32')

    Complexity: O(1) to build from ``int32`` or ``int64`` columns, O(n) to iterate or compare.
    """

    __slots__ = ("_cols",)

    def __init__(self, occurrence: Any, source: Any, start: Any, length: Any, bos_inserted: Any) -> None:
        cols = tuple(_int_column(c) for c in (occurrence, source, start, length))
        bos = np.asarray(bos_inserted, dtype=np.bool_)
        n = cols[0].size
        if any(c.ndim != 1 or c.size != n for c in (*cols, bos)):
            raise InputError("BufferedSpans columns must be 1-D of one length, got shapes "
                             f"{[np.shape(c) for c in (*cols, bos)]}")
        views = tuple(c.view() for c in (*cols, bos))  # the caller's arrays stay writable
        for c in views:
            c.setflags(write=False)  # read-only: the spans are a value (their hash is the tuple's)
        self._cols: tuple[npt.NDArray[Any], ...] = views

    @classmethod
    def of(cls, spans: Iterable[BufferedSpan]) -> BufferedSpans:
        """The columns of ``spans`` (a tuple of :class:`BufferedSpan`, or columns already)."""
        if isinstance(spans, BufferedSpans):
            return spans
        rows = list(spans)
        if not rows:
            return cls([], [], [], [], [])
        occ, src, start, length, bos = zip(*rows, strict=True)
        return cls(occ, src, start, length, bos)

    def columns(self) -> tuple[IntColumn, IntColumn, IntColumn, IntColumn, npt.NDArray[np.bool_]]:
        """``(occurrence, source, start, length, bos_inserted)``, in buffer order (not copies; read-only;
        the integer columns ``int32`` or ``int64``, see the class doc)."""
        occ, src, start, length, bos = self._cols
        return occ, src, start, length, bos

    def total_length(self) -> int:
        """The tokens held (exact)."""
        return int(self._cols[3].sum(dtype=np.int64)) if len(self) else 0

    def __len__(self) -> int:
        return int(self._cols[0].size)

    @overload
    def __getitem__(self, i: int) -> BufferedSpan: ...
    @overload
    def __getitem__(self, i: slice) -> BufferedSpans: ...
    def __getitem__(self, i: int | slice) -> BufferedSpan | BufferedSpans:
        if isinstance(i, slice):
            return BufferedSpans(*(c[i] for c in self._cols))
        occ, src, start, length, bos = (c[i] for c in self._cols)  # an IndexError past the end
        return BufferedSpan(int(occ), int(src), int(start), int(length), bool(bos))

    def __iter__(self) -> Iterator[BufferedSpan]:
        occ, src, start, length, bos = (c.tolist() for c in self._cols)
        return map(BufferedSpan, occ, src, start, length, bos)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BufferedSpans):
            return len(self) == len(other) and all(
                np.array_equal(a, b) for a, b in zip(self._cols, other._cols, strict=True))
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"BufferedSpans({len(self)} spans, {self.total_length():,} tokens)"


def span_columns(spans: Sequence[BufferedSpan]) -> tuple[IntColumn, IntColumn, IntColumn, IntColumn,
                                                         npt.NDArray[np.bool_]]:
    """A Horizon's buffered spans as columns ``(occurrence, source, start, length, bos_inserted)``
    (:meth:`BufferedSpans.columns`: ``int32`` or ``int64``).

    >>> [c.tolist() for c in span_columns((BufferedSpan(2, 2, 1, 3, True),))]
    [[2], [2], [1], [3], [True]]
    """
    return BufferedSpans.of(spans).columns()


def _int_column(c: Any) -> IntColumn:
    """``c`` as an integer column: an ``int32`` array as it is, anything else as ``int64``."""
    if isinstance(c, np.ndarray) and c.dtype == np.int32:
        return c
    return np.asarray(c, dtype=np.int64)


def buffered_length(spans: Sequence[BufferedSpan]) -> int:
    """The tokens a Horizon's buffered spans hold (exact).

    >>> buffered_length((BufferedSpan(2, 2, 1, 3, True), BufferedSpan(5, 5, 0, 4, False)))
    7
    """
    if isinstance(spans, BufferedSpans):
        return spans.total_length()
    return sum(s.length for s in spans)


class Exhausted(NamedTuple):
    """The stream could not refill the buffer to ``B`` before the selection at (row, offset).

    In ``exhausted="drain"`` mode the selections after this event run with
    fewer than ``B`` buffered spans, outside the proposition's hypotheses.
    """

    row: int
    offset: int
    buffered: int


STOP_REASONS = ("rows", "exhausted", "drained", "starved")


def end_reason(stop_reason: str, *, streaming: bool) -> str:
    """``stop_reason`` of a stream's Horizon, with a framework packer's ``"drained"`` (everything it was
    given is packed) said as its ``"natural end"``: ``"drained"`` is the streaming policies' ``--drain``.

    >>> end_reason("drained", streaming=False), end_reason("drained", streaming=True)
    ('natural end', 'drained')
    >>> end_reason("rows", streaming=False)
    'rows'
    """
    return "natural end" if stop_reason == "drained" and not streaming else stop_reason


class Horizon(NamedTuple):
    """The last event of every replay.

    Attributes:
        rows: number of complete rows emitted.
        partial_row_tokens: tokens placed in an incomplete last row (0 if none).
        stop_reason: ``"rows"`` (budget reached), ``"exhausted"`` (could not
            refill to ``B``; stopped), ``"drained"`` (drain mode emptied the buffer)
            or ``"starved"`` (``bestfit-pad``: no buffered span fits an empty
            row, so every further row would be padding; the replay stops at the
            first such row, budget or not).
        buffered: the spans still buffered, in buffer order: a tuple, or
            :class:`BufferedSpans` (columns, equal to the tuple) from a stream
            cut in batches.
    """

    rows: int
    partial_row_tokens: int
    stop_reason: str
    buffered: tuple[BufferedSpan, ...] | BufferedSpans


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
