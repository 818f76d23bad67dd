"""The fast span buffer behind :class:`packing_theory.engine.packer.Packer`.

Selection needs two queries over the buffered spans, each with ties broken
by buffer order: the *largest span of length <= remaining* and the *shortest
span*. A linear scan costs O(n) per selection; this buffer answers both in
O(log n) without scanning, in memory proportional to what is buffered —
never to the row capacity ``R``:

* spans of length ``<= R`` (the only ones that can ever fit) live in one heap
  of buffer sequence numbers per distinct length (a dict; a length held by one
  span alone, the common case, maps to its sequence number itself, with no
  list to allocate, push or pop), and the distinct
  lengths present are kept sorted. "Largest length <= r" is a binary search
  (``bisect``, in C) and "shortest" is the first entry. While few distinct
  lengths are buffered (at most :data:`SMALL_DISTINCT`, the common case:
  ``B = 1000`` spans hold at most 1,000 lengths) they are a plain sorted list
  whose inserts and deletes are one short ``memmove``; beyond that they move
  to a ``sortedcontainers.SortedList`` (O(log n) inserts and deletes).
* spans longer than ``R`` (selectable only by the shortest fallback, when no
  span of length ``<= R`` is buffered) live in one heap keyed by
  ``(length, sequence)``.

Buffer order is a sequence number assigned on append; a ``continue`` suffix
keeps its span's number (it stays in place), a ``requeue-bos`` remainder gets
a new one (it goes to the end). Memory is O(number of buffered spans),
whatever ``R``: a replay with ``R = 10**8`` costs what one with ``R = 2049`` does.

:meth:`FastBuffer.remove` takes out one given span (the ``bounded-wait``
forced start). A span of length ``<= R`` leaves its bucket at once; a long
span's heap entry is left behind as a *stale* entry (its sequence number is no
longer buffered, or buffered with a different length — a span's length only
ever shrinks, so a stale entry can never become valid again) and is skipped
when it reaches the top; the heap is rebuilt when stale entries outnumber
valid ones, so memory stays O(number of buffered spans).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right, insort
from heapq import heappop
from typing import Any

from .._checks import check_int
from .events import BufferedSpan

__all__ = ["SMALL_DISTINCT", "FastBuffer"]

# A buffered span record: (occurrence, source, start, length, bos_inserted).
Record = tuple[int, int, int, int, bool]

SMALL_DISTINCT = 4096
"""Distinct buffered lengths (``<= R``) held in a plain sorted list; beyond, a ``SortedList``."""


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

    Memory: O(n) for ``n`` buffered spans, independent of ``capacity``.
    """

    __slots__ = ("_R", "_big", "_buckets", "_lens", "_long", "_next", "_spans", "_stale")

    def __init__(self, capacity: int) -> None:
        self._R = check_int("capacity", capacity, 2)
        self._lens: Any = []  # sorted distinct lengths <= R with a non-empty bucket
        self._big = False  # _lens is a SortedList
        self._buckets: dict[int, int | list[int]] = {}  # length -> seq, or a heap of >= 2 seqs
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
        buckets = self._buckets
        get = buckets.get
        long = self._long
        R = self._R
        first = self._next
        fresh = []  # lengths that got a bucket: added to the sorted index at once, below
        for seq, record in enumerate(records, first):
            length = record[3]
            if length <= R:
                bucket = get(length)
                if bucket is None:
                    buckets[length] = seq
                    fresh.append(length)
                elif bucket.__class__ is int:  # seq is the largest number issued: [bucket, seq] is a heap
                    buckets[length] = [bucket, seq]
                else:  # appending the largest number keeps the heap a heap
                    bucket.append(seq)  # type: ignore[union-attr]
            else:
                heapq.heappush(long, (length, seq))
        seq = first + len(records)
        self._spans.update(zip(range(first, seq), records, strict=True))
        self._next = seq
        if fresh:
            if self._big:
                self._lens.update(fresh)
            elif len(self._lens) + len(fresh) > SMALL_DISTINCT:
                self._lens = _sorted_list([*self._lens, *fresh])
                self._big = True
            else:  # one sort of a sorted run and a short tail: O(n) merge in C
                self._lens += fresh
                self._lens.sort()

    def _new_length(self, length: int) -> None:
        lens = self._lens
        if self._big:
            lens.add(length)
            return
        insort(lens, length)
        if len(lens) > SMALL_DISTINCT:
            self._lens = _sorted_list(lens)
            self._big = True

    def _insert(self, seq: int, record: Record) -> None:
        self._spans[seq] = record
        length = record[3]
        if length <= self._R:
            bucket = self._buckets.get(length)
            if bucket is None:
                self._buckets[length] = seq
                self._new_length(length)
            elif isinstance(bucket, int):
                self._buckets[length] = [bucket, seq] if bucket < seq else [seq, bucket]
            else:
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
        lens = self._lens
        if lens:
            i = (lens.bisect_right(remaining) if self._big else bisect_right(lens, remaining)) - 1
            if i >= 0:
                crop = False
            else:
                i = 0
                crop = True
            length = lens[i]
            buckets = self._buckets
            bucket = buckets[length]
            if bucket.__class__ is int:  # the length's only span
                seq: int = bucket
                del buckets[length]
                del lens[i]
            else:
                seq = heappop(bucket)  # type: ignore[arg-type]
                if len(bucket) == 1:  # type: ignore[arg-type]
                    buckets[length] = bucket[0]  # type: ignore[index]
            return seq, self._spans.pop(seq), crop
        long = self._long
        spans = self._spans
        while long:
            length, seq = heapq.heappop(long)
            record = spans.get(seq)
            if record is not None and record[3] == length:
                return seq, spans.pop(seq), True
            self._stale -= 1  # a stale entry left by remove()
        raise IndexError("take from an empty buffer")

    def fits(self, remaining: int) -> bool:
        """Whether some buffered span has length ``<= remaining`` (``bestfit-pad`` pads otherwise). O(1)."""
        return bool(self._lens) and self._lens[0] <= remaining

    def remove(self, seq: int) -> Record:
        """Remove and return the span with sequence number ``seq`` (the ``bounded-wait`` forced start).

        O(k) for a span of length ``<= R`` in a bucket of ``k`` spans of that
        length; amortised O(log n) for a longer span (lazy deletion).

        Raises:
            KeyError: ``seq`` is not buffered.
        """
        record = self._spans.pop(seq)
        length = record[3]
        if length <= self._R:
            bucket = self._buckets[length]
            if isinstance(bucket, int):  # the length's only span
                del self._buckets[length]
                self._lens.remove(length)
            else:
                if bucket[0] == seq:
                    heapq.heappop(bucket)
                else:
                    bucket.remove(seq)
                    heapq.heapify(bucket)
                if len(bucket) == 1:
                    self._buckets[length] = bucket[0]
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
        lens = list(self._lens)
        assert lens == sorted(set(lens)), "distinct lengths not sorted or repeated"
        assert set(lens) == set(self._buckets), "lengths and buckets disagree"
        from sortedcontainers import SortedList  # type: ignore[import-untyped]

        assert self._big == isinstance(self._lens, SortedList)
        assert self._big or len(lens) <= SMALL_DISTINCT
        for length, held in self._buckets.items():
            assert 1 <= length <= self._R, f"bucket length {length} outside 1..R"
            if isinstance(held, int):
                bucket = [held]
            else:
                assert len(held) >= 2, f"bucket {length} is {held}: a lone span is held as its seq"
                assert _is_heap(held), f"bucket {length} not a heap"
                bucket = held
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
        assert all(0 <= s < self._next for s in seen)
        for rec in self._spans.values():
            assert rec[3] >= 1, f"empty span {rec}"


def _sorted_list(values: list[int]) -> Any:
    """``values`` as a ``sortedcontainers.SortedList`` (imported here: most replays never need one)."""
    from sortedcontainers import SortedList

    return SortedList(values)


def _is_heap(h: list[int] | list[tuple[int, int]]) -> bool:
    return all(not h[(i - 1) // 2] > h[i] for i in range(1, len(h)))  # type: ignore[operator]
