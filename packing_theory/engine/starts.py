"""When each occurrence arrived and when it started: the one start-delay record of the library.

:class:`StartTracker` records, per occurrence, the row it arrived in and the
row of its first placement, and keeps the histogram of start delays (first
start row minus arrival row) and the oldest occurrence not yet started. The
cost accounting (:class:`~packing_theory.audit.costs.CostAccumulator`) and the
bounded-wait monitor (:class:`~packing_theory.invariant.wait_bound.StartDelayMonitor`)
both keep their start delays here; each passes the rows it counts (the rows
the stream has completed at the event, and for the monitor a placement's own
row), so the tracker knows nothing about row layout.

>>> t = StartTracker()
>>> t.arrive(0, row=0); t.arrive(1, row=0); t.arrive(2, row=1)
>>> t.start(1, row=0), t.start(1, row=2), t.start(0, row=3)
(0, None, 3)
>>> t.max_delay, t.oldest_unstarted(), t.unstarted_wait(rows=4), t.start_row(0), t.start_row(2)
(3, 2, 3, 3, None)
"""

from __future__ import annotations

import bisect
import collections
import itertools
from array import array

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, widened
from .._unique import distinct_counts
from ..errors import InputError, InputTypeError

__all__ = ["StartTracker"]

_UNSTARTED = -(1 << 63)  # the start row of an occurrence without a placement (never a real row), int64 ...
# ... and in int32 rows INT32.min is that sentinel and INT32.max a scratch mark


class StartTracker:
    """Arrival row and first-start row of every occurrence; the start delays (see the module doc).

    Occurrence ids must arrive as ``0, 1, 2, ...`` (every packer of the library
    numbers them so).

    Args:
        rows: keep each occurrence's start row (:meth:`start_row`); ``False`` keeps only whether it
            started (the delays, :meth:`oldest_unstarted` and :meth:`unstarted_wait` are the same).

    Attributes:
        started: occurrences with a recorded start.
        max_delay: the largest start delay, ``None`` before the first start.

    Complexity: O(1) per arrival and per start (:meth:`arrive_all` and
    :meth:`start_all` take a batch's columns in bulk); :meth:`oldest_unstarted`
    O(1) amortised (a cursor over the dense ids: every id below it has started).
    Memory 4 bytes per occurrence (its start row, ``int32``; 8 once a row passes ``int32``: the rows are
    widened to ``int64`` before such a row is written; 1, whether it started, with ``rows=False``), 8
    per *run* of arrival rows (the first occurrence of each stretch that arrived in one row, and that
    row: an offline packer, which arrives its corpus before its first row, has one run; a streaming one
    at most one per row) plus the delay histogram: a dense count per delay ``0, 1, ...`` up to
    ``4 * occurrences + 65,536`` delays at most (:attr:`delay_histogram`), a ``Counter`` for any other
    (negative or farther: a broken stream's row, or rows much longer than documents).
    """

    __slots__ = ("_cursor", "_hist", "_other", "_run_at", "_run_row", "_srow", "_unset", "keeps_rows",
                 "max_delay", "started")

    def __init__(self, rows: bool = True) -> None:
        if not isinstance(rows, bool):
            raise InputTypeError(f"rows must be a bool, got {type(rows).__name__} {rows!r}")
        self.keeps_rows = rows  # False: one byte per occurrence (whether it started) instead of its row
        self._run_at = array("i")  # the first occurrence of each run of arrivals in one row ("q" past int32)
        self._run_row = array("i")  # and that row
        self._srow = array("i" if rows else "b")  # the start row (the type of _run_row), or 1 once started
        self._unset = int(INT32.min) if rows else 0  # the value of an unstarted occurrence in _srow
        self._cursor = 0  # every occurrence below it has started
        self._hist = array("q")  # _hist[d]: started occurrences whose start delay is d ...
        self._other: collections.Counter[int] = collections.Counter()  # ... and every delay past it
        self.started = 0
        self.max_delay: int | None = None

    @property
    def delays(self) -> collections.Counter[int]:
        """Histogram ``{start delay: occurrences}`` of the started (a new Counter). O(dense span)."""
        h = np.frombuffer(self._hist, dtype=np.int64) if self._hist else np.zeros(0, np.int64)
        at = np.flatnonzero(h)
        out = collections.Counter(dict(zip(at.tolist(), h[at].tolist(), strict=True)))
        out.update(self._other)
        return out

    @property
    def delay_histogram(self) -> npt.NDArray[np.int64] | None:
        """The started occurrences per start delay ``0, 1, ...`` (a copy, as long as the largest
        delay), or ``None`` when a delay lies outside the dense span (then :attr:`delays` only).
        O(max delay)."""
        if self._other:
            return None
        return np.frombuffer(self._hist, dtype=np.int64).copy() if self._hist else np.zeros(0, np.int64)

    @property
    def row_dtype(self) -> type[np.int32] | type[np.int64]:
        """The type the rows are kept in: ``int32`` while every row fits, else ``int64``."""
        return np.int32 if self._run_row.typecode == "i" else np.int64

    def _sdtype(self) -> type[np.int8] | type[np.int32] | type[np.int64]:
        return self.row_dtype if self.keeps_rows else np.int8

    def _fit(self, lo: int, hi: int) -> None:
        """Widen the rows to ``int64`` (once) if a row in ``[lo, hi]`` does not fit ``int32`` (whose
        smallest and largest values are the sentinel and a scratch mark)."""
        if self._run_row.typecode == "q" or (INT32.min < lo and hi < INT32.max):
            return
        if not self.keeps_rows:
            self._run_row = widened(self._run_row)
            return
        run_row, srow = widened(self._run_row), array("q")
        wide = np.frombuffer(self._srow, np.int32).astype(np.int64)
        wide[wide == self._unset] = _UNSTARTED
        srow.frombytes(wide.tobytes())
        del wide
        self._run_row, self._srow, self._unset = run_row, srow, _UNSTARTED

    def _add_runs(self, first: int, rows: npt.NDArray[np.int64]) -> None:
        """The arrival rows of occurrences ``first, first + 1, ...``: a run starts where the row changes."""
        change = np.flatnonzero(rows[1:] != rows[:-1]) + 1
        if not self._run_row or rows[0] != self._run_row[-1]:
            change = np.concatenate(([0], change))
        if not change.size:
            return
        top = first + int(change[-1])
        if self._run_at.typecode == "i" and top > INT32.max:
            self._run_at = widened(self._run_at)
        self._run_at.frombytes((first + change).astype(np.dtype(self._run_at.typecode)).tobytes())
        self._run_row.frombytes(rows[change].astype(self.row_dtype).tobytes())

    def arrival_rows(self, occurrences: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The row each of ``occurrences`` (arrived ids) arrived in. O(k log runs)."""
        at = np.frombuffer(self._run_at, np.dtype(self._run_at.typecode))
        rows = np.frombuffer(self._run_row, self.row_dtype)
        out: npt.NDArray[np.int64] = rows[np.searchsorted(at, occurrences, side="right") - 1].astype(np.int64)
        return out

    def _dense_limit(self) -> int:
        """Delays below this are counted in the dense histogram (it grows with the occurrences)."""
        return 4 * len(self._srow) + (1 << 16)

    def _widen(self, top: int) -> None:
        """Make room in the dense histogram for delay ``top``, moving in the counts it now covers."""
        n = len(self._hist)
        if top < n:
            return
        self._hist.frombytes(bytes(8 * (top + 1 - n)))
        for d in [d for d in self._other if n <= d <= top]:
            self._hist[d] += self._other.pop(d)

    def _count(self, delay: int) -> None:
        """One start with ``delay``."""
        if 0 <= delay < self._dense_limit():
            self._widen(delay)
            self._hist[delay] += 1
        else:
            self._other[delay] += 1

    @property
    def arrivals(self) -> int:
        """Occurrences arrived so far."""
        return len(self._srow)

    @property
    def runs(self) -> int:
        """Runs of arrival rows kept (stretches of occurrences that arrived in one row)."""
        return len(self._run_at)

    def arrive(self, occurrence: int, row: int) -> None:
        """Occurrence ``occurrence`` arrived in ``row``. O(1).

        Raises:
            InputError: ``occurrence`` is not the next id (ids must be dense).
        """
        if occurrence != len(self._srow):
            raise InputError(f"arrival of occurrence {occurrence}, expected {len(self._srow)} "
                             "(ids must be dense)")
        self._fit(row, row)
        if not self._run_row or self._run_row[-1] != row:
            self._add_runs(occurrence, np.asarray([row], np.int64))
        self._srow.append(self._unset)

    def start(self, occurrence: int, row: int) -> int | None:
        """A placement of ``occurrence`` in ``row``: its start delay if it is the first, else ``None``. O(1).

        Raises:
            InputError: ``occurrence`` has not arrived.
        """
        if not 0 <= occurrence < len(self._srow):
            raise InputError(f"placement of occurrence {occurrence}, which has not arrived")
        if self._srow[occurrence] != self._unset:
            return None
        self._fit(row, row)
        delay = row - self.arrival_row(occurrence)
        self._srow[occurrence] = row if self.keeps_rows else 1
        self._count(delay)
        self.started += 1
        if self.max_delay is None or delay > self.max_delay:
            self.max_delay = delay
        return delay

    def arrive_all(self, occurrences: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> None:
        """:meth:`arrive` for each ``(occurrence, row)`` in order, in bulk. O(k).

        Raises:
            InputError: the first occurrence that is not the next id (nothing is recorded).
        """
        k = int(occurrences.size)
        if k == 0:
            return
        lo = len(self._srow)
        expected = np.arange(lo, lo + k, dtype=np.int64)
        bad = np.flatnonzero(occurrences != expected)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"arrival of occurrence {int(occurrences[i])}, expected {lo + i} "
                             "(ids must be dense)")
        self._fit(int(rows.min()), int(rows.max()))
        self._add_runs(lo, np.asarray(rows, np.int64))
        self._srow.frombytes(np.full(k, self._unset, dtype=self._sdtype()).tobytes())

    def start_all(self, occurrences: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> None:
        """:meth:`start` for each ``(occurrence, row)`` in order, in bulk: the first placement of an
        unstarted occurrence is its start. O(k).

        Raises:
            InputError: an occurrence that has not arrived, or ``rows`` not one per occurrence
                (nothing is recorded).
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.shape != occurrences.shape:
            raise InputError(f"rows must give one row per occurrence: {rows.size} rows for "
                             f"{occurrences.size} occurrences")
        if occurrences.size == 0:
            return
        n = len(self._srow)
        bad = np.flatnonzero((occurrences < 0) | (occurrences >= n))
        if bad.size:
            raise InputError(f"placement of occurrence {int(occurrences[bad[0]])}, which has not arrived")
        self._fit(int(rows.min()), int(rows.max()))
        if self.keeps_rows:
            occ, at = self._first_starts(occurrences, rows)
        else:  # each unstarted occurrence's first placement in this batch: O(k log k)
            flags = np.frombuffer(self._srow, dtype=np.int8)  # a view: released before any append
            fresh = np.flatnonzero(flags[occurrences] == 0)
            _, at_first = np.unique(occurrences[fresh], return_index=True)
            first = fresh[at_first]
            occ, at = occurrences[first], rows[first]
            flags[occ] = 1
            del flags
        delays = at - self.arrival_rows(occ)
        if delays.size == 0:
            return
        values, counts = distinct_counts(delays)  # sorted; a batch's delays are near each other
        dense = (values >= 0) & (values < self._dense_limit())
        for d, c in zip(values[~dense].tolist(), counts[~dense].tolist(), strict=True):
            self._other[d] += c  # a broken stream's rows, or rows far longer than documents
        if dense.any():
            self._widen(int(values[dense][-1]))
            hist = np.frombuffer(self._hist, dtype=np.int64)
            hist[values[dense]] += counts[dense]
            del hist
        self.started += int(delays.size)
        top = int(values[-1])
        if self.max_delay is None or top > self.max_delay:
            self.max_delay = top

    def _first_starts(self, occurrences: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
                      ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Record the first placement of each unstarted occurrence among ``occurrences`` (start rows
        kept); returns those occurrences and their start rows."""
        dt = self.row_dtype
        if dt == np.int32 and occurrences.size >= INT32.max:  # a scratch position would not fit
            self._fit(INT32.max, INT32.max)
            dt = self.row_dtype
        srow = np.frombuffer(self._srow, dtype=dt)  # a view: released before any append
        fresh = np.flatnonzero(srow[occurrences] == self._unset)  # placements of unstarted occurrences
        occ = occurrences[fresh]
        # each one's first placement in this batch, in O(k): the smallest position lands in its
        # start-row slot (free until the start is recorded), and only that placement matches it
        srow[occ] = np.iinfo(dt).max
        np.minimum.at(srow, occ, fresh.astype(dt))
        first = fresh[srow[occ] == fresh]
        occ, at = occurrences[first], rows[first]
        srow[occ] = at
        del srow
        return occ, at

    def is_started(self, occurrence: int) -> bool:
        """Whether ``occurrence`` has a recorded start. O(1)."""
        return self._srow[occurrence] != self._unset

    def started_mask(self) -> npt.NDArray[np.bool_]:
        """Per occurrence, whether it has a recorded start (a new array). O(occurrences)."""
        if not self._srow:
            return np.zeros(0, np.bool_)
        out: npt.NDArray[np.bool_] = np.frombuffer(self._srow, dtype=self._sdtype()) != self._unset
        return out

    def arrival_row(self, occurrence: int) -> int:
        """The row ``occurrence`` arrived in. O(log runs)."""
        return self._run_row[bisect.bisect_right(self._run_at, occurrence) - 1]

    def start_row(self, occurrence: int) -> int | None:
        """The row of the first placement of ``occurrence``, ``None`` if it has not started. O(1)."""
        if not self.keeps_rows:
            raise InputError("start_row() needs the start rows: this tracker was made with rows=False")
        row = self._srow[occurrence]
        return None if row == self._unset else row

    def oldest_unstarted(self) -> int | None:
        """The earliest-arrived occurrence without a start, or ``None``. O(1) amortised.

        The cursor moves over started occurrences in blocks of numpy work (a
        block of up to 65,536 ids per step), so a bulk run pays no Python loop
        per occurrence.
        """
        srow = self._srow
        n = len(srow)
        cur = self._cursor
        if cur < n and srow[cur] == self._unset:
            return cur
        view = np.frombuffer(srow, dtype=self._sdtype())  # released before any append
        block = 64
        while cur < n:
            hit = np.flatnonzero(view[cur : cur + block] == self._unset)
            if hit.size:
                cur += int(hit[0])
                break
            cur = min(n, cur + block)
            block = min(block * 4, 1 << 16)
        del view
        self._cursor = cur
        return cur if cur < n else None

    def unstarted_wait(self, rows: int) -> int | None:
        """``rows`` minus the oldest unstarted occurrence's arrival row (a censored delay), or ``None``."""
        oldest = self.oldest_unstarted()
        return None if oldest is None else rows - self.arrival_row(oldest)

    def _check(self) -> None:
        """Assert the internal invariants (used by tests)."""
        n = len(self._srow)
        assert len(self._run_at) == len(self._run_row) and self._run_row.typecode in ("i", "q")
        assert self._srow.typecode == (self._run_row.typecode if self.keeps_rows else "b")
        assert (n == 0) == (not self._run_at) and (n == 0 or self._run_at[0] == 0)
        assert all(a < b < n for a, b in itertools.pairwise(self._run_at)), "runs not in occurrence order"
        assert all(a != b for a, b in itertools.pairwise(self._run_row)), "two runs of one row side by side"
        if self.keeps_rows:
            assert self._unset == (_UNSTARTED if self._srow.typecode == "q" else INT32.min)
        else:
            assert self._unset == 0 and set(self._srow) <= {0, 1}
        started = [i for i in range(n) if self._srow[i] != self._unset]
        assert self.started == len(started) == sum(self.delays.values()) == sum(self._hist) + sum(
            self._other.values())
        assert not any(0 <= d < len(self._hist) for d in self._other), "a delay counted in both parts"
        assert not self._hist or self._hist[-1] > 0
        if self.keeps_rows:
            assert collections.Counter(self._srow[i] - self.arrival_row(i) for i in started) == self.delays
        assert self.max_delay == (max(self.delays) if self.delays else None)
        assert all(x <= y for x, y in itertools.pairwise(self._run_row)), "arrival rows decrease"
        assert 0 <= self._cursor <= n
        assert all(self._srow[i] != self._unset for i in range(self._cursor)), "unstarted below the cursor"
        oldest = self.oldest_unstarted()
        if oldest is not None:
            assert all(self._srow[i] != self._unset for i in range(oldest))
        else:
            assert len(started) == n
