"""Which source tokens an offline packer has not yet placed: the :class:`RemainderTracker`.

Used by :class:`~packing_theory.adapters.stream.PackedStream` to close a
ledger at a row boundary when the packer is a peer (it has no buffer the
loader can ask for).
"""

from __future__ import annotations

from ..engine.batches import EventBatch, EventItem
from ..engine.events import Arrival, BufferedSpan, Discard, Filtered, Placement

__all__ = ["RemainderTracker"]


class RemainderTracker:
    """Which source tokens an offline packer has not yet placed, discarded or filtered.

    A peer has no buffer the loader can ask for; to close a ledger at a row
    boundary the remaining tokens of every arrived occurrence are rebuilt
    from the events as :class:`~packing_theory.engine.events.BufferedSpan` s
    (:meth:`result`). A consumer of the event stream
    (:class:`~packing_theory.engine.consumers.Consumer`).
    Memory O(occurrences + pieces).

    >>> t = RemainderTracker()
    >>> for ev in (Arrival(0, 7, 0, 5), Placement(0, 0, 0, 7, 1, 2, False, False)):
    ...     t.feed(ev)
    >>> [(s.occurrence, s.start, s.length) for s in t.result()]
    [(0, 0, 1), (0, 3, 2)]
    """

    def __init__(self) -> None:
        self._arrived: dict[int, tuple[int, int]] = {}
        self._used: dict[int, list[tuple[int, int]]] = {}

    def feed(self, ev: EventItem) -> None:
        """Account one event, or each event of a batch. O(1) per event."""
        if type(ev) is Arrival:
            self._arrived[ev.occurrence] = (ev.source, ev.length)
        elif type(ev) is Placement:
            n = ev.length - (1 if ev.bos_inserted else 0)
            if n:
                self._used.setdefault(ev.occurrence, []).append((ev.start, n))
        elif type(ev) is Discard:
            self._used.setdefault(ev.occurrence, []).append((ev.start, ev.length))
        elif type(ev) is Filtered:
            self._used.setdefault(ev.occurrence, []).append((0, ev.length))
        elif type(ev) is EventBatch:
            feed = self.feed
            for e in ev.events():
                feed(e)

    def result(self) -> tuple[BufferedSpan, ...]:
        """The unplaced source intervals of every arrived occurrence, by occurrence then offset."""
        out: list[BufferedSpan] = []
        for occ, (source, length) in sorted(self._arrived.items()):
            pos = 0
            for start, n in sorted(self._used.get(occ, ())):
                if start > pos:
                    out.append(BufferedSpan(occ, source, pos, start - pos, False))
                pos = max(pos, start + n)
            if pos < length:
                out.append(BufferedSpan(occ, source, pos, length - pos, False))
        return tuple(out)

    def _check(self) -> None:
        """Assert the internal invariants: pieces only of arrived occurrences, within their lengths."""
        assert set(self._used) <= set(self._arrived), "a piece of an occurrence that never arrived"
        for occ, pieces in self._used.items():
            length = self._arrived[occ][1]
            assert all(start >= 0 and n >= 0 and start + n <= length for start, n in pieces), occ
