"""The horizon cut of :mod:`packing_theory.engine.horizon` for a stream of event batches, kept in batches.

:func:`cut_batches_at_horizon` gives the events of
:func:`~packing_theory.engine.horizon.cut_at_horizon` — the same cut, the same
Horizon with the same buffered spans — but passes every
:class:`~packing_theory.engine.batches.EventBatch` through as a batch (the one
holding the cut is sliced, :meth:`~packing_theory.engine.batches.EventBatch.head`)
and emits the Horizon as a single event after it, so that batch-aware
consumers account the stream with numpy. ``tests/engine/test_horizon_batches.py``
compares the two cuts event for event.

How: per batch, the row-filling events' lengths in stream order, their running
sum from the row fill carried in, the events that complete a row (the sum
reaches a multiple of ``R``) and the placed tokens there find the first
completed row that reaches the budget; the cut is the next event that
:func:`~packing_theory.engine.horizon.cut_at_horizon` stops at (an arrival, a
row-filling event, an ``Exhausted`` or the stream's own ``Horizon``). What each
arrived occurrence still holds is kept in columns indexed by occurrence
(occurrence ids ``0, 1, 2, ...`` in arrival order, as every packer numbers
them) and updated per batch with ``numpy.ufunc.at``.

Complexity: O(events) numpy work per batch, O(1) Python work per batch;
memory 4 bytes per arrived occurrence while its source is its occurrence id
and no BOS marker is held (an offline peer's one pass), up to 16 (twice that
once a document index or a length passes ``int32``: :data:`NARROW_MAX`),
and 12 per placement or discard while few occurrences have one
(:class:`_HeldColumns`). The Horizon's spans are ``int32`` columns while the
values fit: 8 bytes per held occurrence for an offline peer (occurrence and
length; its sources are its occurrence ids, its starts and BOS flags one
value each), up to 17.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .._arrays import INT32
from .._checks import check_int
from ..errors import InputError
from .batches import (
    ARRIVAL,
    EXHAUSTED,
    HORIZON,
    PADDING,
    PLACEMENT,
    REPEAT,
    EventBatch,
    EventItem,
)
from .events import BufferedSpans, Horizon, IntColumn
from .horizon import Budget, cut_at_horizon

__all__ = ["NARROW_MAX", "cut_batches_at_horizon", "row_fill"]

_STOP = np.zeros(9, np.bool_)
_STOP[[ARRIVAL, PLACEMENT, PADDING, REPEAT, EXHAUSTED, HORIZON]] = True


NARROW_MAX = int(INT32.max)
"""The largest value the held columns keep in ``int32``: past it (a document index or a document's length
plus the BOS markers added to it) they are widened to ``int64``."""

_INT_COLUMNS = ("source", "amount", "markers", "start")

_CHUNK = 1 << 16
"""Entries handled at a time while the held columns are turned into spans (bounds the temporaries)."""


def _constant(col: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``col``, or where every entry has one value a read-only broadcast of it (no memory per entry)."""
    if col.size and col.min() == col.max():  # two reductions: no temporary per entry
        return np.broadcast_to(col[:1].copy(), col.shape)
    return col


class _HeldColumns:
    """What each arrived occurrence still holds, in columns indexed by occurrence id.

    ``amount`` (tokens held, its BOS markers included; 0 once filtered) is kept for every occurrence.
    ``start`` (the first offset not yet placed or discarded) is kept as the stops of the placements and
    discards so far, (occurrence, stop) pairs (12 bytes each), while they are few (a horizon early in an
    offline peer's run), and as a column once their buffer would outweigh it. ``source`` is kept only
    once a source differs from its occurrence id (``None`` before: one pass over a corpus, as an offline
    peer's), and ``markers`` (the BOS markers held) only once a marker is (``None`` before: no framework
    packer adds one). The integer columns are ``int32`` (4 to 16 bytes per occurrence) while every value
    provably fits: a source is a document index, and in a packer's stream an occurrence's held amount,
    held markers and next start lie in ``[0, length + markers added]``, so the bound is the largest
    source and the largest arrival length plus every BOS marker added so far. Once the bound passes
    :data:`NARROW_MAX` the columns are widened to ``int64`` (8 to 32 bytes per occurrence), before any
    value that would not fit is written.
    """

    def __init__(self) -> None:
        self.arrived = 0
        self.bound = 0
        """The largest value any integer column can hold (see the class doc)."""
        self.amount: npt.NDArray[Any] = np.zeros(1024, np.int32)
        self.start: npt.NDArray[Any] | None = None
        """``None`` while the stops are kept as pairs (:attr:`stop_occ`, :attr:`stop_at`)."""
        self.stop_occ = np.zeros(64, np.int64)
        self.stop_at: npt.NDArray[Any] = np.zeros(64, np.int32)
        self.stops = 0
        """Pairs in use: ``stop_occ[:stops]`` (occurrences) and ``stop_at[:stops]`` (their stops)."""
        self.source: npt.NDArray[Any] | None = None
        """``None`` while every source is its occurrence id."""
        self.markers: npt.NDArray[Any] | None = None
        """``None`` while no BOS marker has been held."""

    @property
    def dtype(self) -> np.dtype[Any]:
        """The integer columns' type: ``int32``, or ``int64`` once widened."""
        return self.amount.dtype

    def _present(self) -> list[str]:
        """The integer columns kept (``source`` and ``markers`` only once needed)."""
        return [name for name in _INT_COLUMNS if getattr(self, name) is not None]

    def _grow(self, n: int) -> None:
        size = self.amount.size
        if n <= size:
            return
        size = max(n, 2 * size)  # amortised doubling; a batch of many arrivals (an offline peer's) exactly
        for name in self._present():
            old = getattr(self, name)
            new = np.zeros(size, old.dtype)
            new[: old.size] = old
            setattr(self, name, new)

    def _widen(self, bound: int) -> None:
        """Record ``bound``; past :data:`NARROW_MAX` the integer columns become ``int64`` (once)."""
        self.bound = max(self.bound, bound)
        if self.bound > NARROW_MAX and self.dtype != np.int64:
            for name in (*self._present(), "stop_at"):
                setattr(self, name, getattr(self, name).astype(np.int64))

    def _sources(self, before: int) -> npt.NDArray[Any]:
        """The ``source`` column, made (the first ``before`` arrivals' occurrence ids) if not kept yet."""
        if self.source is None:
            self.source = np.zeros(self.amount.size, self.dtype)
            self.source[:before] = np.arange(before, dtype=self.dtype)  # < arrived - 1 <= bound: fits
        return self.source

    def _markers(self) -> npt.NDArray[Any]:
        """The ``markers`` column, made (all 0) if not kept yet."""
        if self.markers is None:
            self.markers = np.zeros(self.amount.size, self.dtype)
        return self.markers

    def account(self, b: EventBatch) -> None:
        """Account the batch: its arrivals first (the events of an occurrence follow its arrival)."""
        a = b.arrival
        ba = b.bos_added
        if a.occurrence.size:
            want = self.arrived + np.arange(a.occurrence.size, dtype=np.int64)
            if not np.array_equal(a.occurrence, want):
                raise InputError("cutting batches at a horizon needs occurrence ids 0, 1, 2, ... in arrival "
                                 f"order; got {a.occurrence[:5].tolist()} after {self.arrived} arrivals")
            del want
            self._widen(max(-int(a.source.min()), int(a.source.max()), -int(a.length.min()),
                            int(a.length.max())))
        if ba.markers.size:
            self._widen(self.bound + int(np.abs(ba.markers).sum(dtype=np.int64)))
        t = self.dtype
        p = b.placement
        if a.occurrence.size:
            before = self.arrived
            self.arrived += a.occurrence.size
            self._grow(self.arrived)
            occ = slice(before, self.arrived)
            if self.source is not None or not np.array_equal(a.source, a.occurrence):
                self._sources(before)[occ] = a.source
            self.amount[occ] = a.length
            for col in (self.start, self.markers):
                if col is not None:
                    col[occ] = 0
        if ba.occurrence.size or p.bos_inserted.any():
            markers = self._markers()
            np.add.at(markers, ba.occurrence, ba.markers.astype(t))
            np.subtract.at(markers, p.occurrence, p.bos_inserted.astype(t))
        np.add.at(self.amount, ba.occurrence, ba.markers.astype(t))
        np.subtract.at(self.amount, p.occurrence, p.length.astype(t))
        self._stop(p.occurrence, (p.start + p.length - p.bos_inserted).astype(t))
        d = b.discard
        np.subtract.at(self.amount, d.occurrence, d.length.astype(t))
        self._stop(d.occurrence, (d.start + d.length).astype(t))
        self.amount[b.filtered.occurrence] = 0  # holds nothing (no event of it follows its Filtered)

    def _stop(self, occ: npt.NDArray[np.int64], stop: npt.NDArray[Any]) -> None:
        """Record that ``occ`` were placed or discarded up to ``stop`` (their starts become at least that)."""
        if self.start is not None:
            np.maximum.at(self.start, occ, stop)
            return
        k = self.stops + occ.size
        if k > self.stop_occ.size:
            size = max(k, 2 * self.stop_occ.size)
            if 12 * size > 4 * self.amount.size:  # the pairs would outweigh a column: make it
                self.start = np.zeros(self.amount.size, self.dtype)
                np.maximum.at(self.start, self.stop_occ[: self.stops], self.stop_at[: self.stops])
                np.maximum.at(self.start, occ, stop)
                self.stop_occ, self.stop_at, self.stops = np.zeros(0, np.int64), np.zeros(0, self.dtype), 0
                return
            for name in ("stop_occ", "stop_at"):
                old = getattr(self, name)
                new = np.zeros(size, old.dtype)
                new[: self.stops] = old[: self.stops]
                setattr(self, name, new)
        self.stop_occ[self.stops : k], self.stop_at[self.stops : k] = occ, stop
        self.stops = k

    def _starts(self, live: IntColumn) -> npt.NDArray[Any]:
        """The start of each of ``live`` (ascending); the column or the pairs are released. O(n) with the
        column, O(pairs log m) with the pairs."""
        if self.start is not None:
            return self._release("start", live)
        start = np.zeros(live.size, self.dtype)
        occ, stop = self.stop_occ[: self.stops], self.stop_at[: self.stops]
        at = np.searchsorted(live, occ)
        hit = at < live.size
        hit[hit] = live[at[hit]] == occ[hit]
        np.maximum.at(start, at[hit], stop[hit])
        self.stop_occ, self.stop_at, self.stops = np.zeros(0, np.int64), np.zeros(0, self.dtype), 0
        return start

    def spans(self) -> BufferedSpans:
        """The buffered spans of every arrived occurrence still holding tokens, in arrival order; the
        columns are emptied on the way (each is released once read: the cut's last use of them).

        :func:`~packing_theory.engine.horizon.held_spans` in columns: per
        occurrence its head span, then one single-token span per held BOS
        marker beyond the first.

        The spans' columns keep the held columns' type (``int32`` while every value fits), and the
        occurrence index is ``int32`` while the arrivals are at most :data:`NARROW_MAX`. Sources that
        are the occurrence ids are that same array, and a start column or BOS flags with one value
        for every span are a broadcast scalar. Memory: the columns, plus one column gathered and a
        chunk in flight: an offline peer's ``int32`` cut of ``n`` arrivals holding ``m`` peaks at
        ``4 n + 8 m`` bytes (and the stops' pairs) and ends at ``8 m`` (``12 m`` where the starts
        differ). O(n) time.
        """
        n = self.arrived
        live = self._live(n)
        src = live if self.source is None else self._release("source", live, same_as=live)
        amount = self._release("amount", live)
        markers = None if self.markers is None else self._release("markers", live)
        start = _constant(self._starts(live))
        self.source = self.markers = self.start = None
        if markers is None or int(markers.max(initial=0)) <= 0:  # no BOS marker held (the usual case)
            return BufferedSpans(live, src, start, amount, np.broadcast_to(np.False_, live.shape))
        if int(markers.max(initial=0)) <= 1:  # one span per occurrence
            return BufferedSpans(live, src, start, amount, markers > 0)
        extra = np.maximum(markers - 1, 0)
        per = (1 + extra).astype(np.int64)
        first = np.cumsum(per) - per  # each occurrence's head span
        total = int(per.sum())
        occ_of = np.repeat(live, per)
        length = np.ones(total, amount.dtype)
        length[first] = amount - extra
        bos = np.ones(total, np.bool_)
        bos[first] = markers > 0
        return BufferedSpans(occ_of, occ_of if src is live else np.repeat(src, per), np.repeat(start, per),
                             length, bos)

    def _live(self, n: int) -> IntColumn:
        """The arrived occurrences holding tokens, ascending: ``int32`` while ``n`` is at most
        :data:`NARROW_MAX`. O(n) time in two passes over ``amount`` (count, then fill): ``4 m`` bytes
        (``8 m`` past the bound) and one chunk besides."""
        amount = self.amount[:n]
        m = sum(int(np.count_nonzero(amount[a : a + _CHUNK] > 0)) for a in range(0, n, _CHUNK))
        live: IntColumn = np.empty(m, np.int32) if n <= NARROW_MAX else np.empty(m, np.int64)
        k = 0
        for a in range(0, n, _CHUNK):
            got = np.flatnonzero(amount[a : a + _CHUNK] > 0)
            got += a
            live[k : k + got.size] = got
            k += got.size
        return live

    def _release(self, name: str, live: npt.NDArray[Any], same_as: npt.NDArray[Any] | None = None
                 ) -> npt.NDArray[Any]:
        """Column ``name`` at ``live`` (in the column's type), gathered a chunk at a time; the column itself
        is released. ``same_as``: an array returned instead where the values equal it (no copy kept)."""
        col = getattr(self, name)
        if same_as is not None and all(np.array_equal(col[live[a : a + _CHUNK]], same_as[a : a + _CHUNK])
                                       for a in range(0, live.size, _CHUNK)):
            got = same_as
        else:
            got = np.empty(live.size, col.dtype)
            for a in range(0, live.size, _CHUNK):
                got[a : a + _CHUNK] = col[live[a : a + _CHUNK]]
        del col
        setattr(self, name, np.zeros(0, self.dtype))
        return got

    def _check(self) -> None:
        """Assert the invariants: the columns kept of one size and one integer type, ``int32`` only within
        the bound, at least the arrived occurrences."""
        kept = self._present()
        assert "amount" in kept, kept
        assert self.stop_occ.size == self.stop_at.size >= self.stops and self.stop_at.dtype == self.dtype
        assert self.start is None or self.stops == 0, "pairs kept beside the start column"
        assert self.stop_occ.dtype == np.int64 and bool((self.stop_occ[: self.stops] < self.arrived).all())
        sizes = {getattr(self, name).size for name in kept}
        assert len(sizes) == 1 and sizes.pop() >= self.arrived, sizes
        assert {getattr(self, name).dtype for name in kept} == {self.dtype}
        assert self.dtype in (np.int32, np.int64)
        assert self.dtype == np.int64 or self.bound <= NARROW_MAX, (self.dtype, self.bound)


def row_fill(b: EventBatch) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per event of ``b``: the row positions it fills (a placement, padding or a repeat), and the tokens it
    places (a placement). O(len(b)).

    >>> from packing_theory import Packer
    >>> (b,) = Packer(capacity=8, min_buffer=2, refill=2).batches([5, 3, 9], size=64)
    >>> fill, placed = row_fill(b)
    >>> int(fill.sum()) % 8, int(placed.sum()) <= int(fill.sum())
    (0, True)
    """
    fill = np.zeros(len(b), np.int64)
    placed = np.zeros(len(b), np.int64)
    fill[b.kinds == PLACEMENT] = b.placement.length
    placed[b.kinds == PLACEMENT] = b.placement.length
    fill[b.kinds == PADDING] = b.padding.length
    fill[b.kinds == REPEAT] = b.repeat.length
    return fill, placed


def cut_batches_at_horizon(items: Iterable[EventItem], budget: Budget | None, *, capacity: int
                           ) -> Iterator[EventItem]:
    """:func:`~packing_theory.engine.horizon.cut_at_horizon`, batches kept as batches (see the module doc).

    A stream that starts with a single event is cut by ``cut_at_horizon``
    itself (event by event, as fast as it goes); a single event later in a
    stream of batches is taken as a batch of one.

    >>> from packing_theory import Packer
    >>> from packing_theory.engine.horizon import cut_at_horizon
    >>> from packing_theory.engine.batches import batched, unbatched
    >>> events = list(Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4, 6, 2]))
    >>> got = list(unbatched(cut_batches_at_horizon(batched(events, 4), Budget("rows", 1), capacity=8)))
    >>> got == list(cut_at_horizon(events, Budget("rows", 1), capacity=8))
    True

    Raises:
        InputError: a stream that ends without a ``Horizon``, or occurrence ids
            not ``0, 1, 2, ...`` in arrival order.
    """
    capacity = check_int("capacity", capacity, 1)
    if budget is None:
        yield from items
        return
    it = iter(items)
    first = next(it, None)
    if first is None:
        raise InputError("the event stream ended without a Horizon event")
    if type(first) is not EventBatch:
        yield from cut_at_horizon(itertools.chain([first], it), budget, capacity=capacity)
        return
    box: list[EventItem] = [first]
    del first  # not held to the end (as a chain's arguments would): an offline peer's holds every arrival
    yield from _cut(_popped_then(box, it), budget, capacity)


def _popped_then(box: list[EventItem], rest: Iterator[EventItem]) -> Iterator[EventItem]:
    """The item in ``box`` (taken out of it), then ``rest``: nothing holds the first once it is passed on."""
    yield box.pop()
    yield from rest


def _cut(items: Iterable[EventItem], budget: Budget, capacity: int) -> Iterator[EventItem]:
    """The batch cut (:func:`cut_batches_at_horizon`) of a stream that starts with a batch."""
    limit = budget.row_limit(capacity)
    held = _HeldColumns()
    rows = filled = placed = 0
    broken = False  # a row overfilled: no row completes any more (as cut_at_horizon counts them)
    reached = limit == 0
    for item in items:
        b = item if type(item) is EventBatch else EventBatch.from_events([item])  # type: ignore[list-item]
        stop_from = 0
        if not reached:  # the per-event temporaries live in _scan: none is held across a yield
            rows, filled, placed, broken, reached, stop_from = _scan(b, budget, capacity, limit, rows, filled,
                                                                     placed, broken)
        if reached:
            stops = np.flatnonzero(_STOP[b.kinds[stop_from:]])
            if stops.size:
                head = b.head(stop_from + int(stops[0]))
                held.account(head)
                del b, item  # the cut batch is not held while its head is consumed
                if len(head):
                    yield head
                spans = held.spans()
                del held, head  # the columns are not held while the Horizon is consumed
                yield Horizon(rows, 0, "rows", spans)
                return
        held.account(b)
        last = b.horizon is not None
        box = [b]
        del b, item  # not held while the stream builds its next item (an offline peer: after every arrival)
        yield box.pop()
        if last:
            return
    raise InputError("the event stream ended without a Horizon event")


def _scan(b: EventBatch, budget: Budget, capacity: int, limit: int | None, rows: int, filled: int,
          placed: int, broken: bool) -> tuple[int, int, int, bool, bool, int]:
    """One batch of :func:`_cut` before the budget is reached: the rows completed, the fill and placed tokens
    carried, whether a row overfilled, whether the budget is reached and the event after the row that
    reaches it. O(len(b))."""
    reached = False
    stop_from = 0
    idx = np.flatnonzero((b.kinds == PLACEMENT) | (b.kinds == PADDING) | (b.kinds == REPEAT))
    if not idx.size:  # no position filled (a batch of arrivals): nothing completes
        return rows, filled, placed, broken, reached, stop_from
    fill, took = row_fill(b)
    f = fill[idx]
    cf = filled + np.cumsum(f)
    cp = placed + np.cumsum(took[idx])
    del fill
    if not broken:
        over = np.flatnonzero((cf - f) % capacity + f > capacity)
        usable = idx.size if not over.size else int(over[0])
    else:
        usable = 0
    done = np.flatnonzero((f[:usable] > 0) & (cf[:usable] % capacity == 0))
    hits = (np.flatnonzero(rows + 1 + np.arange(done.size) >= limit) if limit is not None
            else np.flatnonzero(cp[done] >= budget.value))
    if hits.size:
        k = int(hits[0])
        rows += k + 1
        reached = True
        stop_from = int(idx[done[k]]) + 1
    else:
        rows += int(done.size)
        if usable < idx.size:
            broken = True
        if idx.size:
            last_done = int(done[-1]) if done.size else -1
            filled = int(cf[-1] - cf[last_done]) if last_done >= 0 else int(cf[-1])
            placed = int(cp[-1])
    return rows, filled, placed, broken, reached, stop_from
