"""The fast span buffer behind :class:`packing_theory.engine.packer.Packer`.

Selection needs two queries over the buffered spans, each with ties broken
by buffer order: the *largest span of length <= remaining* and the *shortest
span*. A linear scan costs O(n) per selection; this buffer answers both in
O(log n) without scanning:

* spans of length ``<= R`` (the only ones that can ever fit) live in one
  heap of buffer sequence numbers per length, and a Python ``int`` bitmask
  records which lengths are non-empty. "Largest non-empty length <= r" is
  ``(mask & low[r]).bit_length() - 1`` and "shortest" is the lowest set bit:
  word-parallel operations on an ``R``-bit integer, done in C.
* spans longer than ``R`` (selectable only by the shortest fallback, when the
  mask is empty) live in one heap keyed by ``(length, sequence)``.

Buffer order is a sequence number assigned on append; a ``continue`` suffix
keeps its span's number (it stays in place), a ``requeue-bos`` remainder gets
a new one (it goes to the end). Memory is O(number of buffered spans + R).

:meth:`FastBuffer.remove` takes out one given span (the ``bounded-wait``
forced start). A span of length ``<= R`` leaves its bucket at once; a long
span's heap entry is left behind as a *stale* entry (its sequence number is no
longer buffered, or buffered with a different length — a span's length only
ever shrinks, so a stale entry can never become valid again) and is skipped
when it reaches the top; the heap is rebuilt when stale entries outnumber
valid ones, so memory stays O(number of buffered spans + R).
"""

from __future__ import annotations

import heapq

from .._checks import check_int
from .events import BufferedSpan

__all__ = ["FastBuffer"]

# A buffered span record: (occurrence, source, start, length, bos_inserted).
Record = tuple[int, int, int, int, bool]


class FastBuffer:
    """Spans in buffer order with O(log n) largest-fit and shortest queries.

    >>> buf = FastBuffer(capacity=8)
    >>> for occ, length in enumerate([5, 3, 9, 3]):
    ...     _ = buf.append((occ, occ, 0, length, False))
    >>> buf.take(4)          # largest fit <= 4: the first of the two 3s
    (1, (1, 1, 0, 3, False), False)
    >>> buf.take(2)          # nothing fits: shortest, earliest (the other 3)
    (3, (3, 3, 0, 3, False), True)
    >>> [span.length for span in buf.snapshot()]
    [5, 9]
    """

    __slots__ = ("_R", "_buckets", "_long", "_low", "_mask", "_next", "_spans", "_stale")

    def __init__(self, capacity: int) -> None:
        self._R = capacity = check_int("capacity", capacity, 2)
        self._mask = 0
        self._buckets: list[list[int]] = [[] for _ in range(capacity + 1)]
        self._long: list[tuple[int, int]] = []
        self._spans: dict[int, Record] = {}
        self._next = 0
        self._stale = 0  # entries of _long whose span was removed by remove()

    def __len__(self) -> int:
        """Number of buffered spans. O(1)."""
        return len(self._spans)

    def append(self, record: Record) -> int:
        """Append a span at the end of the buffer; return its sequence number. O(log n)."""
        seq = self._next
        self._next = seq + 1
        self._insert(seq, record)
        return seq

    def extend(self, records: list[Record]) -> None:
        """Append several spans at the end, in order. O(k log n) for k records."""
        spans = self._spans
        buckets = self._buckets
        long = self._long
        R = self._R
        mask = self._mask
        seq = self._next
        for record in records:
            spans[seq] = record
            length = record[3]
            if length <= R:
                bucket = buckets[length]
                if not bucket:
                    mask |= 1 << length
                heapq.heappush(bucket, seq)
            else:
                heapq.heappush(long, (length, seq))
            seq += 1
        self._mask = mask
        self._next = seq

    def _insert(self, seq: int, record: Record) -> None:
        self._spans[seq] = record
        length = record[3]
        if length <= self._R:
            bucket = self._buckets[length]
            if not bucket:
                self._mask |= 1 << length
            heapq.heappush(bucket, seq)
        else:
            heapq.heappush(self._long, (length, seq))

    def replace(self, seq: int, record: Record) -> None:
        """Put ``record`` back at the buffer position of ``seq`` (a kept suffix). O(log n).

        Raises:
            KeyError: ``seq`` is currently buffered.
        """
        if seq in self._spans or not 0 <= seq < self._next:
            raise KeyError(f"seq {seq} is buffered or was never issued")
        self._insert(seq, record)

    def take(self, remaining: int) -> tuple[int, Record, bool]:
        """Remove and return the selected span for ``remaining`` free positions. O(log n).

        Returns ``(seq, record, crop)``: the largest span with length
        ``<= remaining`` (earliest on ties, ``crop=False``), otherwise the
        shortest span (earliest on ties, ``crop=True``).

        Raises:
            IndexError: the buffer is empty.
        """
        mask = self._mask
        if remaining > self._R:
            remaining = self._R
        fit = mask & ((2 << remaining) - 1) if remaining > 0 else 0  # lengths 0..remaining
        if fit:
            length = fit.bit_length() - 1
            crop = False
        elif mask:
            length = (mask & -mask).bit_length() - 1
            crop = True
        else:
            long = self._long
            spans = self._spans
            while long:
                length, seq = heapq.heappop(long)
                record = spans.get(seq)
                if record is not None and record[3] == length:
                    return seq, spans.pop(seq), True
                self._stale -= 1  # a stale entry left by remove()
            raise IndexError("take from an empty buffer")
        bucket = self._buckets[length]
        seq = heapq.heappop(bucket)
        if not bucket:
            self._mask = mask ^ (1 << length)
        return seq, self._spans.pop(seq), crop

    def remove(self, seq: int) -> Record:
        """Remove and return the span with sequence number ``seq`` (the ``bounded-wait`` forced start).

        O(k log k) for a span of length ``<= R`` in a bucket of ``k`` spans of
        that length; amortised O(log n) for a longer span (lazy deletion).

        Raises:
            KeyError: ``seq`` is not buffered.
        """
        record = self._spans.pop(seq)
        length = record[3]
        if length <= self._R:
            bucket = self._buckets[length]
            if bucket[0] == seq:
                heapq.heappop(bucket)
            else:
                bucket.remove(seq)
                heapq.heapify(bucket)
            if not bucket:
                self._mask ^= 1 << length
        else:
            self._stale += 1
            if 2 * self._stale > len(self._long):
                spans = self._spans
                self._long = [e for e in self._long if e[1] in spans and spans[e[1]][3] == e[0]]
                heapq.heapify(self._long)
                self._stale = 0
        return record

    @property
    def issued(self) -> int:
        """Sequence numbers issued so far (the next append gets this one). O(1)."""
        return self._next

    def unstarted(self, seq: int) -> bool:
        """Whether ``seq`` is buffered and starts at source offset 0 (nothing of it emitted). O(1)."""
        record = self._spans.get(seq)
        return record is not None and record[2] == 0

    def ordered(self) -> list[tuple[int, Record]]:
        """``(seq, record)`` of the buffered spans in buffer order. O(n log n)."""
        return sorted(self._spans.items())

    def snapshot(self) -> tuple[BufferedSpan, ...]:
        """The buffered spans in buffer order. O(n log n)."""
        return tuple(BufferedSpan(*rec) for _, rec in self.ordered())

    def _check(self) -> None:
        """Assert the internal invariants (used by tests after every mutation)."""
        seen: set[int] = set()
        for length, bucket in enumerate(self._buckets):
            assert bool(bucket) == bool(self._mask >> length & 1), f"mask bit {length} wrong"
            assert bucket == sorted(bucket) or _is_heap(bucket), f"bucket {length} not a heap"
            for seq in bucket:
                assert seq in self._spans and self._spans[seq][3] == length, (seq, length)
                assert seq not in seen
                seen.add(seq)
        assert _is_heap(self._long), "long heap broken"
        stale = 0
        for length, seq in self._long:
            assert length > self._R, (seq, length)
            if seq not in self._spans or self._spans[seq][3] != length:
                stale += 1  # left behind by remove(); skipped by take()
                continue
            assert seq not in seen
            seen.add(seq)
        assert stale == self._stale, f"stale count {self._stale}, found {stale}"
        assert seen == set(self._spans), "spans and indexes disagree"
        assert self._mask >> (self._R + 1) == 0, "mask has bits above capacity"
        assert all(0 <= s < self._next for s in seen)
        for rec in self._spans.values():
            assert rec[3] >= 1, f"empty span {rec}"


def _is_heap(h: list[int] | list[tuple[int, int]]) -> bool:
    return all(not h[(i - 1) // 2] > h[i] for i in range(1, len(h)))  # type: ignore[operator]
