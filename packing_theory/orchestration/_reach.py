"""The common horizon's first pass: the tokens a packer places in complete rows to its natural end.

:class:`PlacedCounter` reads single events one at a time and an
:class:`~packing_theory.engine.batches.EventBatch` with numpy, with the same
answer (``tests/orchestration/test_reach.py``); :func:`placed_tokens` runs it
over a whole stream.

The common horizon needs only the *smallest* reach and which packers have it,
so a packer's pass can stop as soon as its count passes a reach already known:
:func:`bounded_reach` replays several packers' streams in turn, a slice of
each at a time, and stops every stream whose count has passed the smallest
reach found so far (by these streams or, through a :class:`ReachBound` file,
by other processes of the same measurement). A stopped packer's figure is a
lower bound above the horizon, so the horizon and the packers that set it are
those of full passes (``tests/orchestration/test_reach.py``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import numpy as np

from ..distributed.parts import atomic_write
from ..engine.batches import PADDING, PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.events import Padding, Placement, Repeat
from ..engine.horizon_batches import row_fill

__all__ = ["PlacedCounter", "ReachBound", "Reaching", "bounded_reach", "placed_tokens"]


class PlacedCounter:
    """Tokens placed in the complete rows of the events :meth:`add` has seen, in stream order.

    A batch is accounted with numpy: its row-filling events' lengths in stream
    order, their running sum, and the placed tokens up to the last event that
    completes a row.

    >>> c = PlacedCounter(4)
    >>> for ev in [Placement(0, 0, 0, 0, 0, 3, False, False), Padding(0, 3, 1)]:
    ...     c.add(ev)
    >>> c.done
    3
    """

    __slots__ = ("capacity", "done", "filled", "placed")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.done = 0
        """Placed tokens of the complete rows so far."""
        self.filled = 0
        """Positions of the row being filled."""
        self.placed = 0
        """Placed tokens of the row being filled."""

    def _check(self) -> None:
        """Assert the counter's invariants."""
        assert self.capacity >= 1 and self.done >= 0
        assert 0 <= self.placed <= self.filled, (self.placed, self.filled)

    def add(self, ev: EventItem) -> None:
        """Account one event or batch."""
        t = type(ev)
        if t is EventBatch:
            self._batch(cast(EventBatch, ev))
            return
        if t is Placement or t is Padding or t is Repeat:
            n = cast("Placement | Padding | Repeat", ev).length
            self.filled += n
            if t is Placement:
                self.placed += n
            if self.filled == self.capacity:
                self.done, self.filled, self.placed = self.done + self.placed, 0, 0

    def _batch(self, b: EventBatch) -> None:
        fill, placed = row_fill(b)
        mask = (b.kinds == PLACEMENT) | (b.kinds == PADDING) | (b.kinds == REPEAT)
        cf = self.filled + np.cumsum(fill[mask])
        cp = self.placed + np.cumsum(placed[mask])
        if not cf.size:
            return
        ends = np.flatnonzero(cf % self.capacity == 0)
        if ends.size:
            last = int(ends[-1])
            self.done += int(cp[last])
            self.filled, self.placed = int(cf[-1] - cf[last]), int(cp[-1] - cp[last])
        else:
            self.filled, self.placed = int(cf[-1]), int(cp[-1])


def placed_tokens(events: Iterable[EventItem], capacity: int) -> int:
    """Tokens placed in the complete rows of a whole stream (the most a token horizon can ask of it)."""
    c = PlacedCounter(capacity)
    for ev in events:
        c.add(ev)
    return c.done


class Reaching:
    """A stream passed through unchanged while it is counted (:class:`PlacedCounter`), so that one pass
    feeds consumers up to a horizon and, :meth:`finish` draining the rest, also finds the natural end's
    reach.

    >>> r = Reaching(iter([Placement(k, 0, k, 0, 0, 2, False, False) for k in range(2)]), 2)
    >>> _ = next(r)  # a consumer took the first event and stopped
    >>> r.finish(), r.whole
    (4, True)
    """

    def __init__(self, items: Iterable[EventItem], capacity: int, *, stop_above: int | None = None) -> None:
        self._items = iter(items)
        self.counter = PlacedCounter(capacity)
        self.stop_above = stop_above
        """:meth:`finish` stops reading once the count passes this (``None``: it reads to the end)."""
        self.whole = False
        """Whether :meth:`finish` read the stream to its end."""

    def __iter__(self) -> Iterator[EventItem]:
        return self

    def __next__(self) -> EventItem:
        ev = next(self._items)
        self.counter.add(ev)
        return ev

    def finish(self) -> int:
        """Read what the consumers left, and return the stream's reach (placed tokens of complete rows); with
        ``stop_above``, stop once the count passes it (:attr:`whole` says which: the count is then a lower
        bound of the reach, above ``stop_above``)."""
        c, bound = self.counter, self.stop_above
        if bound is not None and c.done > bound:
            return c.done
        for ev in self._items:
            c.add(ev)
            if bound is not None and c.done > bound:
                return c.done
        self.whole = True
        return c.done


class ReachBound:
    """The smallest reach found so far, shared by the processes of one measurement through a small file
    (``None``: within this process only).

    A reader that cannot read the file takes no bound (its pass runs to the end: slower, never wrong); a
    value is only ever a finished packer's reach, written under a lock and replaced atomically, so it
    only decreases.
    """

    def __init__(self, path: str | None = None, *, every_s: float = 0.05) -> None:
        self.path = path
        self.every_s = every_s
        """The file is read at most this often (a read per single event would cost more than the event)."""
        self._value: int | None = None
        self._read_at = -float("inf")

    def _check(self) -> None:
        """Assert the bound's invariants."""
        assert self._value is None or self._value >= 0, self._value
        assert self.every_s >= 0

    def get(self) -> int | None:
        """The smallest finished reach known (this process's, or the file's when smaller)."""
        if self.path is not None and time.monotonic() - self._read_at >= self.every_s:
            self._read_at = time.monotonic()
            with contextlib.suppress(OSError, ValueError):
                shared = int(Path(self.path).read_text() or "x")
                if self._value is None or shared < self._value:
                    self._value = shared
        return self._value

    def offer(self, reach: int) -> None:
        """Record a finished packer's reach."""
        if self._value is None or reach < self._value:
            self._value = reach
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            import fcntl

            with open(self.path + ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    current = int(Path(self.path).read_text() or "x")
                except (OSError, ValueError):
                    current = None
                if current is None or reach < current:
                    atomic_write(self.path, str(reach).encode())


def bounded_reach(streams: dict[str, Iterable[EventItem]], capacity: dict[str, int],
                  bound: ReachBound | None = None) -> dict[str, tuple[int, bool]]:
    """Each stream's reach, ``(tokens, True)`` for a full pass, ``(tokens, False)`` for one stopped as
    soon as its count passed a smaller finished reach (its reach is then more than the smallest one).

    The streams advance in turn, one item (event or batch) each; the bound is read every item, from
    ``bound`` when given.

    >>> ev = [Placement(k, 0, k, 0, 0, 2, False, False) for k in range(3)]
    >>> bounded_reach({"short": iter(ev[:1]), "long": iter(ev)}, {"short": 2, "long": 2})
    {'short': (2, True), 'long': (4, False)}
    """
    bound = bound if bound is not None else ReachBound()
    live = {n: (iter(s), PlacedCounter(capacity[n])) for n, s in streams.items()}
    out: dict[str, tuple[int, bool]] = {}
    while live:
        for name in list(live):
            it, c = live[name]
            ev = next(it, None)
            if ev is None:
                out[name] = (c.done, True)
                del live[name]
                bound.offer(c.done)
                continue
            c.add(ev)
            b = bound.get()
            if b is not None and c.done > b:
                out[name] = (c.done, False)
                del live[name]
    return {n: out[n] for n in streams}
