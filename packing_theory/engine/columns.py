"""Events written straight into columns: how the fast engine emits :class:`~.batches.EventBatch` es.

:class:`ColumnBuilder` receives a stretch of the event stream in stream order —
one event-type code per event in :attr:`ColumnBuilder.kinds`, and the event's
fields packed as native ``int64`` values onto its type's buffer
(:attr:`ColumnBuilder.flat`) — and cuts it into batches of exactly ``size``
events (the last one shorter),
the grouping :func:`~.batches.batched` gives the same events. No event object
is built: an engine appends plain values, and a consumer that accounts batches
with numpy (the replay summary, the ledger) never sees one Python object per
event. ``tests/engine/test_columns.py`` checks the builder against
:meth:`~.batches.EventBatch.from_events`, and ``tests/engine/test_engines.py``
the fast engine's batches against its events.

Memory: 8 bytes per field plus one byte per pending event; :meth:`ready`
hands full batches out as soon as the caller asks, so an engine that asks at
every row boundary holds at most one batch, one row's events and one refill
batch.

>>> from packing_theory.engine.events import Arrival, Placement
>>> cols = ColumnBuilder(size=2)
>>> cols.add(Arrival(0, 0, 0, 5))
>>> cols.add(Placement(0, 0, 0, 0, 0, 5, False, False))
>>> cols.add(Arrival(1, 1, 0, 3))
>>> [b.counts()["Arrival"] for b in cols.ready()], len(cols)
([1], 1)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError
from .batches import (
    ARRIVAL,
    BOS_ADDED,
    DISCARD,
    EXHAUSTED,
    HORIZON,
    KIND_CODES,
    PADDING,
    PLACEMENT,
    EventBatch,
)
from .events import Event, Horizon

__all__ = ["COLUMN_GROUPS", "ColumnBuilder"]

_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY.flags.writeable = False
_ARRIVAL_CODE = bytes([ARRIVAL])

COLUMN_GROUPS: dict[int, tuple[str, int]] = {
    ARRIVAL: ("arrival", 4), BOS_ADDED: ("bos_added", 3), PLACEMENT: ("placement", 8),
    DISCARD: ("discard", 4), PADDING: ("padding", 3), EXHAUSTED: ("exhausted", 3),
}
"""Kind code -> (the :class:`~.batches.EventBatch` group, fields per event): the event types a
streaming engine emits. (``Filtered`` carries a text reason and ``Repeat`` is a peer's; neither is
built here.)"""


class ColumnBuilder:
    """Pending events in columns, cut into :class:`~.batches.EventBatch` es of ``size`` events.

    Append an event with :meth:`add`, or — the engine's hot path — its code to
    :attr:`kinds` and ``pack[code].pack(*fields)`` to ``flat[code]`` (both in stream order).
    :meth:`ready` yields every full batch pending; :meth:`finish` the rest
    and the Horizon.

    Args:
        size: events per batch (at least 1).
    """

    __slots__ = ("_by_type", "flat", "kinds", "pack", "size")

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int):
            raise InputTypeError(f"size must be a positive int, got {type(size).__name__} {size!r}")
        if size < 1:
            raise InputError(f"size must be a positive int, got {size}")
        self.size = size
        self.kinds = bytearray()
        """One :data:`~.batches.KIND_CODES` code per pending event, in stream order."""
        self.flat: dict[int, bytearray] = {code: bytearray() for code in COLUMN_GROUPS}
        """Kind code -> the fields of its pending events, event after event, as native ``int64`` values."""
        self.pack: dict[int, struct.Struct] = {code: struct.Struct(f"={width}q")
                                               for code, (_, width) in COLUMN_GROUPS.items()}
        """Kind code -> the packing of one event's fields (``pack[code].pack(*fields)``)."""
        self._by_type = {t: (code, self.flat[code], self.pack[code].pack)
                         for t, code in KIND_CODES.items() if code in COLUMN_GROUPS}

    def __len__(self) -> int:
        """Pending events. O(1)."""
        return len(self.kinds)

    def add(self, ev: Event) -> None:
        """Append one event (any type of :data:`COLUMN_GROUPS`). O(fields).

        Raises:
            TypeError: an event type the builder does not hold (``Filtered``,
                ``Repeat``, ``Horizon``: give the Horizon to :meth:`finish`).
        """
        found = self._by_type.get(type(ev))
        if found is None:
            raise _refused(ev)
        code, flat, pack = found
        self.kinds.append(code)
        flat += pack(*ev)

    def extend(self, events: Iterable[Event]) -> None:
        """:meth:`add` each event, in order."""
        kinds, by_type = self.kinds, self._by_type
        for ev in events:
            found = by_type.get(type(ev))
            if found is None:
                raise _refused(ev)
            code, flat, pack = found
            kinds.append(code)
            flat += pack(*ev)

    def arrivals(self, occurrence: int, source: int, pass_index: int, lengths: Sequence[int]) -> None:
        """Append the arrivals of a refill batch: occurrences ``occurrence, occurrence + 1, ...`` of
        sources ``source, source + 1, ...`` in pass ``pass_index``, with their ``lengths``. O(batch),
        in numpy.

        >>> cols = ColumnBuilder(size=8)
        >>> cols.arrivals(7, 3, 0, [5, 9])
        >>> [tuple(map(int, a)) for a in next(cols.finish(None)).arrival]
        [(7, 8), (3, 4), (0, 0), (5, 9)]
        """
        k = len(lengths)
        fields = np.empty((k, 4), dtype=np.int64)
        fields[:, 0] = np.arange(occurrence, occurrence + k)
        fields[:, 1] = np.arange(source, source + k)
        fields[:, 2] = pass_index
        fields[:, 3] = lengths
        self.kinds += _ARRIVAL_CODE * k
        self.flat[ARRIVAL] += fields.tobytes()

    def ready(self) -> Iterator[EventBatch]:
        """Every full batch of ``size`` events pending, in order (nothing when fewer are pending)."""
        full = len(self.kinds) - len(self.kinds) % self.size
        if full:
            yield from self._cut(full, None)

    def finish(self, horizon: Horizon | None) -> Iterator[EventBatch]:
        """The pending events and then ``horizon`` (the stream's last event), in batches of ``size``."""
        if horizon is not None:
            self.kinds.append(HORIZON)
        if self.kinds:
            yield from self._cut(len(self.kinds), horizon)

    def _check(self) -> None:
        """Assert the internal invariants (tests call it after every append)."""
        codes = np.frombuffer(bytes(self.kinds), dtype=np.uint8)
        assert set(np.unique(codes).tolist()) <= set(COLUMN_GROUPS), "a pending event of no column group"
        for code, (name, width) in COLUMN_GROUPS.items():
            events = int(np.count_nonzero(codes == code))
            assert len(self.flat[code]) == 8 * width * events, f"{name}: fields of {events} events expected"
        assert self.size >= 1

    def _cut(self, n: int, horizon: Horizon | None) -> Iterator[EventBatch]:
        """The first ``n`` pending events in batches of ``size`` (the last shorter), taken out."""
        kinds = np.frombuffer(bytes(self.kinds[:n]), dtype=np.uint8)
        del self.kinds[:n]
        columns: dict[int, Any] = {}
        for code, (_, width) in COLUMN_GROUPS.items():
            count = int(np.count_nonzero(kinds == code))
            if not count:
                columns[code] = [_EMPTY] * width
                continue
            flat = self.flat[code]
            values = np.frombuffer(flat, dtype=np.int64, count=count * width).reshape(count, width)
            columns[code] = [values[:, k].copy() for k in range(width)]
            del values  # the buffer export ends here: the bytearray can shrink
            del flat[: count * width * 8]
        taken = np.zeros(max(COLUMN_GROUPS) + 1, dtype=np.int64)
        for lo in range(0, n, self.size):
            part = kinds[lo: lo + self.size]
            counts = np.bincount(part, minlength=HORIZON + 1)
            groups = {}
            for code, (name, _) in COLUMN_GROUPS.items():
                a, b = int(taken[code]), int(taken[code] + counts[code])
                groups[name] = [c[a:b] for c in columns[code]]
                taken[code] = b
            last = horizon if counts[HORIZON] else None
            yield EventBatch.from_columns(part, last, **groups)


def _refused(ev: object) -> InputTypeError:
    return InputTypeError(f"ColumnBuilder holds the streaming engines' events, got {type(ev).__name__}")
