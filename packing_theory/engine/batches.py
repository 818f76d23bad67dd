"""Columnar event batches: the event stream as numpy arrays, one array per field, per event type.

The single-event stream of :mod:`packing_theory.engine.events` is the
reference semantics. An :class:`EventBatch` holds a contiguous stretch of that
stream in columns, so that a compiled engine can emit it and a consumer can
account it with numpy instead of one Python object per event.

Layout
------
* ``kinds`` — one ``uint8`` code per event, in stream order (:data:`KIND_CODES`:
  ``Arrival`` 0, ``BosAdded`` 1, ``Placement`` 2, ``Discard`` 3, ``Filtered`` 4,
  ``Padding`` 5, ``Repeat`` 6, ``Exhausted`` 7, ``Horizon`` 8).
* one column group per event type (:class:`ArrivalColumns`,
  :class:`PlacementColumns`, ...): a :class:`~typing.NamedTuple` whose field
  names are the event's own, each a 1-D array (``int64``, or ``bool`` for
  ``bos_inserted`` and ``crop``). Row ``j`` of a group is the ``j``-th event of
  that type in the batch.
* ``Filtered.reason`` is categorical: an ``int64`` code column indexing the
  batch's ``reasons`` tuple.
* ``horizon`` — the :class:`~packing_theory.engine.events.Horizon` itself, or
  ``None``; at most one per stream, always the batch's last event (its buffered
  spans stay a tuple: at most ``B`` plus one refill batch of them).

Cross-type order is preserved exactly by ``kinds``: the ``k``-th event of the
batch is row ``#{i < k : kinds[i] == kinds[k]}`` of its type's group, so
:meth:`EventBatch.events` rebuilds the single-event stream event for event
(``tests/engine/test_batches.py`` asserts the round trip). Consumers whose result
depends only on the order *within* each type — the ledger's aggregates, the
replay summary — account column by column; consumers that need the
interleaving (the invariant monitor, token rows, the buffer tracker) walk
``kinds``. Batch boundaries carry no meaning: any split of a stream into
batches is the same stream.

Memory: one byte plus the fields of each event (64 bytes for a placement);
:func:`batched` holds one batch at a time.

>>> from packing_theory import Packer
>>> events = list(Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain").events([5, 3, 9, 4]))
>>> batch = EventBatch.from_events(events)
>>> batch.counts()["Placement"], batch.placement.length.tolist()
(4, [5, 3, 4, 4])
>>> list(batch.events()) == events
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError
from .events import (
    Arrival,
    BosAdded,
    Discard,
    Event,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
)

__all__ = [
    "ARRIVAL",
    "BOS_ADDED",
    "DEFAULT_BATCH_EVENTS",
    "DISCARD",
    "EXHAUSTED",
    "FILTERED",
    "HORIZON",
    "KIND_CODES",
    "PADDING",
    "PLACEMENT",
    "REPEAT",
    "ArrivalColumns",
    "BosAddedColumns",
    "DiscardColumns",
    "EventBatch",
    "EventItem",
    "ExhaustedColumns",
    "FilteredColumns",
    "LengthChunks",
    "PaddingColumns",
    "PlacementColumns",
    "RepeatColumns",
    "batched",
    "iter_batches",
    "split_batches",
    "unbatched",
]

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

ARRIVAL, BOS_ADDED, PLACEMENT, DISCARD, FILTERED, PADDING, REPEAT, EXHAUSTED, HORIZON = range(9)
KIND_CODES: dict[type, int] = {
    Arrival: ARRIVAL, BosAdded: BOS_ADDED, Placement: PLACEMENT, Discard: DISCARD, Filtered: FILTERED,
    Padding: PADDING, Repeat: REPEAT, Exhausted: EXHAUSTED, Horizon: HORIZON,
}
"""Event type -> its code in :attr:`EventBatch.kinds`."""

DEFAULT_BATCH_EVENTS = 65_536
"""Default number of events per batch."""


class ArrivalColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Arrival` events."""

    occurrence: Int64Array
    source: Int64Array
    pass_index: Int64Array
    length: Int64Array


class BosAddedColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.BosAdded` events."""

    occurrence: Int64Array
    source: Int64Array
    markers: Int64Array


class PlacementColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Placement` events."""

    row: Int64Array
    offset: Int64Array
    occurrence: Int64Array
    source: Int64Array
    start: Int64Array
    length: Int64Array
    bos_inserted: BoolArray
    crop: BoolArray


class DiscardColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Discard` events."""

    occurrence: Int64Array
    source: Int64Array
    start: Int64Array
    length: Int64Array


class FilteredColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Filtered` events.

    ``reason`` holds codes into :attr:`EventBatch.reasons`.
    """

    occurrence: Int64Array
    source: Int64Array
    length: Int64Array
    reason: Int64Array


class PaddingColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Padding` events."""

    row: Int64Array
    offset: Int64Array
    length: Int64Array


class RepeatColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Repeat` events."""

    row: Int64Array
    offset: Int64Array
    occurrence: Int64Array
    source: Int64Array
    start: Int64Array
    length: Int64Array


class ExhaustedColumns(NamedTuple):
    """Columns of the batch's :class:`~packing_theory.engine.events.Exhausted` events."""

    row: Int64Array
    offset: Int64Array
    buffered: Int64Array


# (attribute, event type, column type, names of bool fields)
_GROUPS: tuple[tuple[str, type, type, tuple[str, ...]], ...] = (
    ("arrival", Arrival, ArrivalColumns, ()),
    ("bos_added", BosAdded, BosAddedColumns, ()),
    ("placement", Placement, PlacementColumns, ("bos_inserted", "crop")),
    ("discard", Discard, DiscardColumns, ()),
    ("filtered", Filtered, FilteredColumns, ()),
    ("padding", Padding, PaddingColumns, ()),
    ("repeat", Repeat, RepeatColumns, ()),
    ("exhausted", Exhausted, ExhaustedColumns, ()),
)


def _empty(cols: type) -> Any:
    bools = {"bos_inserted", "crop"}
    return cols(*(np.zeros(0, dtype=np.bool_ if f in bools else np.int64) for f in cols._fields))  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class EventBatch:
    """A contiguous stretch of the event stream in columns (see the module doc).

    Build one with :meth:`from_events` or :meth:`from_columns` (engines);
    unspecified groups are empty. Equality (``==``) compares every column.
    """

    kinds: npt.NDArray[np.uint8]
    arrival: ArrivalColumns = field(default_factory=lambda: _empty(ArrivalColumns))
    bos_added: BosAddedColumns = field(default_factory=lambda: _empty(BosAddedColumns))
    placement: PlacementColumns = field(default_factory=lambda: _empty(PlacementColumns))
    discard: DiscardColumns = field(default_factory=lambda: _empty(DiscardColumns))
    filtered: FilteredColumns = field(default_factory=lambda: _empty(FilteredColumns))
    padding: PaddingColumns = field(default_factory=lambda: _empty(PaddingColumns))
    repeat: RepeatColumns = field(default_factory=lambda: _empty(RepeatColumns))
    exhausted: ExhaustedColumns = field(default_factory=lambda: _empty(ExhaustedColumns))
    horizon: Horizon | None = None
    reasons: tuple[str, ...] = ()

    def __len__(self) -> int:
        """Number of events. O(1)."""
        return int(self.kinds.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EventBatch):
            return NotImplemented
        if not np.array_equal(self.kinds, other.kinds) or self.horizon != other.horizon:
            return False
        for name, *_ in _GROUPS:
            if name == "filtered":
                continue
            if not all(np.array_equal(a, b) for a, b in zip(getattr(self, name), getattr(other, name),
                                                             strict=True)):
                return False
        mine = [self.reasons[c] for c in self.filtered.reason.tolist()]
        theirs = [other.reasons[c] for c in other.filtered.reason.tolist()]
        return mine == theirs and all(np.array_equal(a, b) for a, b in
                                      zip(self.filtered[:3], other.filtered[:3], strict=True))

    __hash__ = None  # type: ignore[assignment]

    def counts(self) -> dict[str, int]:
        """Events per type name, e.g. ``{"Arrival": 4, "Placement": 4, ...}``. O(n)."""
        c = np.bincount(self.kinds, minlength=9)
        return {t.__name__: int(c[code]) for t, code in KIND_CODES.items()}

    @classmethod
    def from_columns(cls, kinds: npt.ArrayLike, horizon: Horizon | None = None,
                     reasons: Sequence[str] = (), **groups: Any) -> EventBatch:
        """A batch from a kinds array and column groups (tuples of arrays, converted and validated).

        Raises:
            ValueError: a column group's length disagrees with ``kinds``, or
                the Horizon is not the last event.
        """
        parts: dict[str, Any] = {}
        for name, _, cols, bools in _GROUPS:
            if name in groups:
                raw = groups.pop(name)
                parts[name] = cols(*(np.ascontiguousarray(a, dtype=np.bool_ if f in bools else np.int64)
                                     for f, a in zip(cols._fields, raw, strict=True)))  # type: ignore[attr-defined]
        if groups:
            raise InputTypeError(f"unknown column groups: {sorted(groups)}")
        batch = cls(np.ascontiguousarray(kinds, dtype=np.uint8), horizon=horizon, reasons=tuple(reasons),
                    **parts)
        batch._validate()
        return batch

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> EventBatch:
        """Pack single events into one batch. O(n).

        Raises:
            TypeError: an item is not an event of :mod:`packing_theory.engine.events`.
        """
        kinds: list[int] = []
        rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name, *_ in _GROUPS}
        names = {t: name for name, t, *_ in _GROUPS}
        reasons: dict[str, int] = {}
        horizon: Horizon | None = None
        for ev in events:
            t = type(ev)
            code = KIND_CODES.get(t)
            if code is None:
                raise InputTypeError(f"events must be packing_theory events, got {t.__name__} {ev!r}")
            kinds.append(code)
            if t is Horizon:
                horizon = ev  # type: ignore[assignment]
            elif t is Filtered:
                f: Filtered = ev  # type: ignore[assignment]
                rows["filtered"].append((f.occurrence, f.source, f.length, reasons.setdefault(f.reason,
                                                                                              len(reasons))))
            else:
                rows[names[t]].append(ev)
        groups: dict[str, Any] = {}
        for name, _, cols, _bools in _GROUPS:
            if rows[name]:
                groups[name] = list(zip(*rows[name], strict=True))
            else:
                groups[name] = [np.zeros(0, np.int64)] * len(cols._fields)  # type: ignore[attr-defined]
        return cls.from_columns(np.asarray(kinds, dtype=np.uint8), horizon, tuple(reasons), **groups)

    def events(self) -> Iterator[Event]:
        """The batch's events, one at a time, in stream order (the reference semantics). O(n)."""
        its: list[Iterator[Event] | None] = [None] * 9
        for name, t, _cols, _bools in _GROUPS:
            cols = getattr(self, name)
            if not cols[0].size:
                continue
            lists = [c.tolist() for c in cols]
            if t is Filtered:
                lists[3] = [self.reasons[c] for c in lists[3]]
            its[KIND_CODES[t]] = _rebuild(t, lists)
        for code in self.kinds.tolist():
            if code == HORIZON:
                assert self.horizon is not None
                yield self.horizon
            else:
                yield next(its[code])

    def head(self, n: int) -> EventBatch:
        """The batch's first ``n`` events (a prefix of its stretch of the stream). O(groups).

        >>> from packing_theory import Packer
        >>> b = EventBatch.from_events(Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4]))
        >>> list(b.head(3).events()) == list(b.events())[:3]
        True
        """
        n = max(0, min(int(n), len(self)))
        if n == len(self):
            return self
        counts = np.bincount(self.kinds[:n], minlength=9)
        parts = {name: cols(*(c[: int(counts[KIND_CODES[t]])] for c in getattr(self, name)))
                 for name, t, cols, _ in _GROUPS}
        return EventBatch(self.kinds[:n], horizon=self.horizon if counts[HORIZON] else None,
                          reasons=self.reasons, **parts)

    def piece(self, a: int, b: int) -> EventBatch:
        """Events ``a`` to ``b - 1`` of the batch (a stretch of its stream), as views of its columns.
        O(a + b) to count the events of each type before ``a`` and ``b``.

        >>> from packing_theory import Packer
        >>> b = EventBatch.from_events(Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4]))
        >>> list(b.piece(2, 5).events()) == list(b.events())[2:5]
        True
        """
        a, b = max(0, min(int(a), len(self))), max(0, min(int(b), len(self)))
        return self._piece(a, max(a, b), np.bincount(self.kinds[:a], minlength=9))[0]

    def _piece(self, a: int, b: int, before: Int64Array) -> tuple[EventBatch, Int64Array]:
        """Events ``a`` to ``b - 1`` given ``before``, the events of each kind code before ``a``; and the
        counts before ``b``. O(b - a)."""
        hi = before + np.bincount(self.kinds[a:b], minlength=9)
        parts = {name: cols(*(c[int(before[KIND_CODES[t]]): int(hi[KIND_CODES[t]])]
                              for c in getattr(self, name)))
                 for name, t, cols, _ in _GROUPS}
        piece = EventBatch(self.kinds[a:b], horizon=self.horizon if hi[HORIZON] > before[HORIZON] else None,
                           reasons=self.reasons, **parts)
        return piece, hi

    def _validate(self) -> None:
        counts = np.bincount(self.kinds, minlength=9) if self.kinds.size else np.zeros(9, np.int64)
        if self.kinds.size and int(self.kinds.max()) > HORIZON:
            raise InputError(f"kinds holds an unknown code {int(self.kinds.max())}")
        for name, t, _cols, _ in _GROUPS:
            cols = getattr(self, name)
            for f, col in zip(cols._fields, cols, strict=True):
                if col.ndim != 1 or col.size != counts[KIND_CODES[t]]:
                    raise InputError(f"{name}.{f} has {col.size} values for {int(counts[KIND_CODES[t]])} "
                                     f"{t.__name__} events")
        if counts[HORIZON] > 1 or (counts[HORIZON] == 1) != (self.horizon is not None):
            raise InputError("a batch holds the Horizon event iff horizon is set, at most once")
        if self.horizon is not None and int(self.kinds[-1]) != HORIZON:
            raise InputError("the Horizon must be the batch's last event")
        if self.filtered.reason.size and not (
                int(self.filtered.reason.min()) >= 0 and int(self.filtered.reason.max()) < len(self.reasons)):
            raise InputError("filtered.reason codes must index reasons")

    def _check(self) -> None:
        """Assert the internal invariants (tests call it on every batch they build)."""
        self._validate()
        for name, _t, _cols, bools in _GROUPS:
            for f, col in zip(getattr(self, name)._fields, getattr(self, name), strict=True):
                assert col.dtype == (np.bool_ if f in bools else np.int64), (name, f, col.dtype)
        assert self.kinds.dtype == np.uint8


def _rebuild(t: type, lists: list[list[Any]]) -> Iterator[Event]:
    new = tuple.__new__
    for v in zip(*lists, strict=True):
        yield new(t, v)


EventItem = Event | EventBatch
"""What a batch-aware consumer accepts: a single event or an :class:`EventBatch`."""


def batched(events: Iterable[Event], size: int = DEFAULT_BATCH_EVENTS) -> Iterator[EventBatch]:
    """Group a single-event stream into batches of at most ``size`` events (the last may be shorter).

    >>> from packing_theory import Packer
    >>> [len(b) for b in batched(Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4]), 4)]
    [4, 4]

    Raises:
        ValueError: ``size < 1``.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise InputError(f"size must be a positive int, got {size!r}")
    chunk: list[Event] = []
    for ev in events:
        chunk.append(ev)
        if len(chunk) == size:
            yield EventBatch.from_events(chunk)
            chunk = []
    if chunk:
        yield EventBatch.from_events(chunk)


def split_batches(items: Iterable[EventItem], size: int = DEFAULT_BATCH_EVENTS) -> Iterator[EventItem]:
    """The same stream with every batch of more than ``size`` events split into consecutive pieces of
    ``size`` (:meth:`EventBatch.piece`; single events and smaller batches pass as they are).

    Batch boundaries carry no meaning (the module doc), so every consumer's result is the same; what a
    consumer builds per batch (its numpy temporaries) is then O(``size``) instead of O(the batch): an
    offline framework's packer emits every arrival of the corpus in one batch. The pieces are views: the
    batch they come from is held until its last piece is passed on, then released.

    >>> from packing_theory import Packer
    >>> (b,) = Packer(capacity=8, min_buffer=2, refill=2).batches([5, 3, 9, 4], size=64)
    >>> [len(p) for p in split_batches([b], 5)], list(unbatched(split_batches([b], 5))) == list(b.events())
    ([5, 3], True)

    Raises:
        InputError: ``size < 1``.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise InputError(f"size must be a positive int, got {size!r}")
    for item in items:
        if type(item) is not EventBatch or len(item) <= size:
            yield item
            continue
        box = [item]
        del item  # only box holds the batch: released once its last piece is passed on
        n = len(box[0])
        before = np.zeros(9, np.int64)
        for a in range(0, n, size):
            piece, before = box[0]._piece(a, min(a + size, n), before)
            if a + size >= n:
                box.clear()
            yield piece
            del piece


def unbatched(items: Iterable[EventItem]) -> Iterator[Event]:
    """Single events from a stream of events and/or batches, in order (the reference view)."""
    for item in items:
        if type(item) is EventBatch:
            yield from item.events()
        else:
            yield item  # type: ignore[misc]


def iter_batches(packer: Any, lengths: Any, size: int = DEFAULT_BATCH_EVENTS) -> Iterator[EventBatch]:
    """The event stream of any packer as batches: its own ``batches`` method, else :func:`batched` events."""
    native = getattr(packer, "batches", None)
    if native is not None:
        return native(lengths, size=size)  # type: ignore[no-any-return]
    return batched(packer.events(lengths), size)


class LengthChunks:
    """A one-shot length stream given as 1-D integer arrays (never the whole corpus at once).

    Iterating yields the lengths one by one as Python ints (what the pure
    Python engines read); :meth:`chunks` yields the arrays (what the compiled
    engine reads). Like any one-shot iterator it allows one pass.

    >>> list(LengthChunks([np.array([3, 4]), np.array([5])]))
    [3, 4, 5]
    """

    def __init__(self, chunks: Iterable[npt.ArrayLike]) -> None:
        self._chunks = iter(chunks)
        self._used = False

    def chunks(self) -> Iterator[npt.NDArray[Any]]:
        """The arrays, in order (one-shot)."""
        if self._used:
            raise InputError("LengthChunks is a one-shot stream and was already consumed")
        self._used = True
        for c in self._chunks:
            yield np.asarray(c)

    def __iter__(self) -> Iterator[Any]:
        for c in self.chunks():
            yield from c.tolist()
