"""One horizon for every packer: a budget in rows, targets or tokens, and the cut of any event stream.

A *horizon* is where a run is cut. The user gives it in one of three units,
with one meaning for every packer, streaming or peer:

===========  ================================================================
unit         the run stops at the end of the first row (in the order the
             packer emits rows) at which ...
===========  ================================================================
``rows``     ``value`` complete rows have been emitted
``targets``  ``ceil(value / (R - 1))`` complete rows have been emitted (row
             ``r``, position ``p >= 1`` holds target ``r (R - 1) + p - 1``)
``tokens``   the document tokens placed in complete rows (every
             :class:`~packing_theory.engine.events.Placement`, an inserted
             BOS included; padding and repeats excluded) reach ``value``
===========  ================================================================

Without a budget a packer runs to its natural end (the stream exhausted, the
buffer drained, every bin emitted), and the report says so.

:func:`cut_at_horizon` applies a budget to *any* event stream generically: it
stops consuming the packer's events at the row boundary where the budget is
reached and emits the :class:`~packing_theory.engine.events.Horizon` itself,
so that what the packer still holds counts as buffered (a
:class:`~packing_theory.engine.events.BufferedSpan` per arrived occurrence
still holding tokens) and what never arrived counts as never reached. The
streaming engines honour ``rows`` / ``targets`` natively (their rows are full,
so a ``tokens`` budget is ``ceil(value / R)`` rows for them,
:meth:`Budget.streaming_rows`); the cut gives the same events (tested).

>>> from packing_theory.engine.events import Arrival, Placement, Padding, Horizon
>>> stream = [Arrival(0, 0, 0, 3), Arrival(1, 1, 0, 5),
...           Placement(0, 0, 0, 0, 0, 3, False, False), Padding(0, 3, 1),
...           Placement(1, 0, 1, 1, 0, 4, False, True), Horizon(2, 0, "drained", ())]
>>> cut = list(cut_at_horizon(stream, Budget("rows", 1), capacity=4))
>>> cut[-1].rows, cut[-1].stop_reason, cut[-1].buffered
(1, 'rows', (BufferedSpan(occurrence=1, source=1, start=0, length=5, bos_inserted=False),))
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, cast

from .._checks import check_int
from ..errors import InputError
from .batches import EventBatch, EventItem
from .events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Event,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
)

__all__ = ["HORIZON_UNITS", "Budget", "HorizonUnit", "cut_at_horizon"]

HorizonUnit = Literal["rows", "targets", "tokens"]
HORIZON_UNITS: tuple[HorizonUnit, ...] = ("rows", "targets", "tokens")
"""The units a horizon is given in (see the module doc)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A horizon asked by the user: ``value`` in ``unit`` (``rows``, ``targets`` or ``tokens``).

    >>> Budget("targets", 10).row_limit(capacity=5), Budget("tokens", 9).streaming_rows(capacity=4)
    (3, 3)
    >>> Budget("bytes", 3)
    Traceback (most recent call last):
    packing_theory.InputError: horizon unit must be one of rows, targets, tokens; got 'bytes'
    """

    unit: HorizonUnit
    value: int

    def __post_init__(self) -> None:
        if self.unit not in HORIZON_UNITS:
            raise InputError(f"horizon unit must be one of {', '.join(HORIZON_UNITS)}; got {self.unit!r}")
        object.__setattr__(self, "value", check_int(self.unit, self.value, 0))

    def row_limit(self, capacity: int) -> int | None:
        """Complete rows that reach the budget (``None`` for ``tokens``, which depends on the rows' fill)."""
        if self.unit == "rows":
            return self.value
        if self.unit == "targets":
            return -(-self.value // (capacity - 1))
        return None

    def streaming_rows(self, capacity: int) -> int:
        """The row budget of a streaming packer, whose complete rows hold exactly ``R`` placed tokens."""
        limit = self.row_limit(capacity)
        return -(-self.value // capacity) if limit is None else limit

    def describe(self) -> str:
        """``"1,000 tokens"``."""
        return f"{self.value:,} {self.unit}"

    def to_dict(self) -> dict[str, object]:
        """``{"unit": ..., "value": ...}``."""
        return {"unit": self.unit, "value": self.value}


class _Held:
    """What one arrived occurrence still holds: tokens (its BOS markers included), markers, next offset."""

    __slots__ = ("amount", "markers", "source", "start")

    def __init__(self, source: int, length: int) -> None:
        self.source = source
        self.amount = length
        self.markers = 0
        self.start = 0

    def spans(self, occurrence: int) -> list[BufferedSpan]:
        """What is held, as buffered spans (:func:`held_spans`)."""
        return held_spans(occurrence, self.source, self.start, self.amount, self.markers)


def held_spans(occurrence: int, source: int, start: int, amount: int, markers: int) -> list[BufferedSpan]:
    """An occurrence's held tokens as buffered spans: one per held BOS marker beyond the first, then the rest.

    ``amount`` counts its held tokens, ``markers`` (of them) its held BOS markers,
    ``start`` its first offset not yet placed or discarded.
    """
    if amount <= 0:
        return []
    extra = max(markers - 1, 0)  # a span carries at most one marker (segment-first chunks)
    head = BufferedSpan(occurrence, source, start, amount - extra, markers > 0)
    return [head, *[BufferedSpan(occurrence, source, start, 1, True)] * extra]


def cut_at_horizon(items: Iterable[EventItem], budget: Budget | None, *, capacity: int) -> Iterator[Event]:
    """The events of ``items`` up to the horizon ``budget``, ending with a :class:`Horizon`.

    ``budget=None`` passes the stream through (batches expanded to events). The
    cut happens after the last complete row that reaches the budget (rows
    counted in the order the packer emits them; a row is complete when its
    placements, padding and repeats fill ``capacity`` positions); the events
    that still belong to that row (a crop's :class:`Discard`, a requeue's
    :class:`BosAdded`) are passed too, and the packer is not asked for more.
    The emitted ``Horizon`` has ``stop_reason="rows"`` (budget reached) and
    lists, per arrived occurrence, the stretches neither placed, discarded nor
    filtered (its tokens, held BOS markers included, from the first offset not yet
    placed or discarded). A stream that ends before the budget keeps its own
    ``Horizon``.

    Complexity: O(1) per event; memory O(arrived occurrences) (only while a
    budget is given).

    Raises:
        InputError: a stream that ends without a ``Horizon``.
    """
    capacity = check_int("capacity", capacity, 1)
    if budget is None:
        yield from _events(items)
        return
    limit = budget.row_limit(capacity)
    held: dict[int, _Held] = {}  # arrived occurrences still holding tokens
    rows = filled = placed = 0
    reached = limit == 0
    for ev in _events(items):
        t = type(ev)
        if reached and t in (Arrival, Placement, Padding, Repeat, Exhausted, Horizon):
            yield Horizon(rows, 0, "rows", tuple(s for occ, h in held.items() for s in h.spans(occ)))
            return
        if t is Horizon:
            yield ev
            return
        yield ev
        if t is Arrival:
            a = cast(Arrival, ev)
            held[a.occurrence] = _Held(a.source, a.length)
        elif t is BosAdded:
            b = cast(BosAdded, ev)
            h = held[b.occurrence]
            h.markers += b.markers
            h.amount += b.markers
        elif t is Placement:
            p = cast(Placement, ev)
            h = held[p.occurrence]
            h.markers -= p.bos_inserted
            h.amount -= p.length
            h.start = max(h.start, p.source_stop)
            placed += p.length
        elif t is Discard:
            d = cast(Discard, ev)
            h = held[d.occurrence]
            h.amount -= d.length
            h.start = max(h.start, d.start + d.length)
        elif t is Filtered:
            held.pop(cast(Filtered, ev).occurrence, None)
        if t is Placement or t is Padding or t is Repeat:
            filled += cast("Placement | Padding | Repeat", ev).length
            if filled == capacity:
                rows, filled = rows + 1, 0
                reached = rows >= limit if limit is not None else placed >= budget.value
    raise InputError("the event stream ended without a Horizon event")


def _events(items: Iterable[EventItem]) -> Iterator[Event]:
    for item in items:
        if isinstance(item, EventBatch):
            yield from item.events()
        else:
            yield item
