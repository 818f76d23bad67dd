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
from typing import Any

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, search_sorted, widened
from .._unique import group_min
from ..errors import InputError, InputTypeError
from .compiled import load_starts_kernels
from .delays import DelayCounts

__all__ = ["PRUNE_RUNS", "StartTracker"]

PRUNE_RUNS = 1 << 16
"""A tracker without rows drops its started runs once it keeps this many runs (or twice those it kept)."""

_UNSTARTED = -(1 << 63)  # the start row of an occurrence without a placement (never a real row), int64 ...
# ... and in int32 rows INT32.min is that sentinel and INT32.max a scratch mark


def _array_of(typecode: str, values: npt.NDArray[Any]) -> array[int]:
    """``values`` as a new ``array(typecode)``."""
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values, dtype=np.dtype(typecode)).tobytes())
    return out


class StartTracker:
    """Arrival row and first-start row of every occurrence; the start delays (see the module doc).

    Occurrence ids must arrive as ``0, 1, 2, ...`` (every packer of the library
    numbers them so).

    Args:
        rows: keep each occurrence's start row (:meth:`start_row`); ``False`` keeps only whether it
            started (the delays, :meth:`oldest_unstarted` and :meth:`unstarted_wait` are the same).
        compiled: with ``rows=False``, find a batch's first starts (:meth:`start_all`) in one numba loop
            (the ``fast`` extra) instead of numpy's gathers and grouping; the same starts.

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
    at most one per row), the rows of the last :meth:`arrive_all` batch (8 bytes each: a copy that
    answers most of the next batch's starts) and the delay histogram (:class:`DelayCounts`:
    proportional to the distinct delays, at most about twice a table up to the largest).

    With ``rows=False`` the tracker keeps only what the starts still to come need: a run whose
    occurrences have all started is dropped (checked in bulk once the runs have doubled, at least
    :data:`PRUNE_RUNS` of them; a run kept by such a check also keeps its end, 16 bytes a run), so the
    runs are those of the recent rows and of the rows where an unstarted occurrence arrived (a streaming
    packer's never-started documents), not one per row of the stream; :meth:`arrival_row` and
    :meth:`arrival_rows` then answer for unstarted occurrences only.
    """

    __slots__ = ("_cursor", "_hist", "_last_at", "_last_rows", "_old_end", "_prune_at", "_prune_min",
                 "_run_at", "_run_row", "_srow", "_unset", "compiled", "keeps_rows", "max_delay", "started")

    def __init__(self, rows: bool = True, *, compiled: bool = False) -> None:
        if not isinstance(rows, bool):
            raise InputTypeError(f"rows must be a bool, got {type(rows).__name__} {rows!r}")
        if not isinstance(compiled, bool):
            raise InputTypeError(f"compiled must be a bool, got {type(compiled).__name__} {compiled!r}")
        # rows=False: a batch's first starts in one numba loop (engine/_starts_kernel.py), the same ones
        self.compiled = compiled and not rows
        if self.compiled:
            load_starts_kernels()  # numba missing: refused here, not at the first batch
        self.keeps_rows = rows  # False: one byte per occurrence (whether it started) instead of its row
        self._run_at = array("i")  # the first occurrence of each run of arrivals in one row ("q" past int32)
        self._run_row = array("i")  # and that row
        self._srow = array("i" if rows else "b")  # the start row (the type of _run_row), or 1 once started
        self._unset = int(INT32.min) if rows else 0  # the value of an unstarted occurrence in _srow
        self._cursor = 0  # every occurrence below it has started
        self._hist = DelayCounts()  # the started occurrences per start delay
        # rows=False: the first len(_old_end) runs are those kept by a pruning, each ending at its
        # _old_end (the runs dropped between them had started); the runs after them are contiguous
        self._old_end = array("q")
        self._prune_min = PRUNE_RUNS
        self._prune_at = PRUNE_RUNS  # prune once this many runs are kept
        self._last_at, self._last_rows = 0, np.zeros(0, np.int64)  # the last arrive_all's first id and rows
        self.started = 0
        self.max_delay: int | None = None

    @property
    def delays(self) -> collections.Counter[int]:
        """Histogram ``{start delay: occurrences}`` of the started (a new Counter). O(distinct delays)."""
        values, counts = self._hist.counts()
        return collections.Counter(dict(zip(values.tolist(), counts.tolist(), strict=True)))

    @property
    def delay_counts(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(distinct start delays, occurrences with each)``, sorted (new arrays). O(distinct delays);
        :func:`~packing_theory.audit.histograms.nearest_rank` takes the pair."""
        return self._hist.counts()

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
        """The row each of ``occurrences`` (arrived ids) arrived in. O(k log runs).

        Raises:
            InputError: with ``rows=False``, one of ``occurrences`` has started (its row is not kept).
        """
        occurrences = np.asarray(occurrences)
        if occurrences.dtype.kind not in "iu":
            raise InputTypeError(f"occurrences must be integer ids, got dtype {occurrences.dtype}")
        occurrences = occurrences.astype(np.int64, copy=False)
        bad = np.flatnonzero((occurrences < 0) | (occurrences >= len(self._srow)))
        if bad.size:
            raise InputError(f"arrival_rows(): occurrence {int(occurrences[bad[0]])} has not arrived")
        if not self.keeps_rows and occurrences.size:
            started = np.flatnonzero(np.frombuffer(self._srow, np.int8)[occurrences] != self._unset)
            if started.size:
                first = int(occurrences[started[0]])
                raise InputError(f"arrival_rows(): occurrence {first} has started, and a tracker made with "
                                 "rows=False keeps the arrival rows of unstarted occurrences only")
        return self._arrival_rows(occurrences)

    def _arrival_rows(self, occurrences: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """:meth:`arrival_rows` unchecked (a batch's first starts, just marked started): those of the last
        :meth:`arrive_all` batch from its rows (most of a batch's starts), the others from the runs."""
        first, last = self._last_at, self._last_at + self._last_rows.size
        recent = (occurrences >= first) & (occurrences < last)
        if recent.all():
            return self._last_rows[occurrences - first]
        out = np.empty(occurrences.size, np.int64)
        out[recent] = self._last_rows[occurrences[recent] - first]
        older = ~recent
        out[older] = self._run_rows(occurrences[older])
        return out

    def _run_rows(self, occurrences: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The arrival rows of ``occurrences`` looked up in the runs. O(k log runs)."""
        at = np.frombuffer(self._run_at, np.dtype(self._run_at.typecode))
        rows = np.frombuffer(self._run_row, self.row_dtype)
        out: npt.NDArray[np.int64] = rows[search_sorted(at, occurrences, side="right") - 1].astype(np.int64)
        return out

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
        if len(self._run_at) >= self._prune_at and not self.keeps_rows:
            self._prune()

    def _prune(self) -> None:
        """``rows=False``: drop the runs whose occurrences have all started (never the last: it may
        grow). Each occurrence of the runs added since the last pruning is read once; the runs kept
        before are read again (each over its own occurrences). O(occurrences read + runs)."""
        m, kept_before = len(self._run_at), len(self._old_end)
        at = np.frombuffer(self._run_at, dtype=np.dtype(self._run_at.typecode)).astype(np.int64)
        flags = np.frombuffer(self._srow, dtype=np.int8)  # a view: released before any append
        keep = np.zeros(m, np.bool_)
        keep[m - 1] = True
        if kept_before:  # the runs kept before, each over [its first occurrence, its end)
            ends = np.frombuffer(self._old_end, dtype=np.int64)
            sizes = ends - at[:kept_before]
            offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            ids = np.repeat(at[:kept_before] - offsets, sizes) + np.arange(int(sizes.sum()))
            keep[:kept_before] = np.logical_or.reduceat(flags[ids] == 0, offsets)
        lo, hi = int(at[kept_before]), int(at[m - 1])  # the contiguous runs since: [lo, hi)
        unstarted = np.flatnonzero(flags[lo:hi] == 0) + lo
        del flags
        keep[np.searchsorted(at, unstarted, side="right") - 1] = True
        ends = np.empty(m, np.int64)
        ends[:kept_before] = np.frombuffer(self._old_end, dtype=np.int64)
        ends[kept_before:m - 1] = at[kept_before + 1:]
        kept = np.flatnonzero(keep)
        rows = np.frombuffer(self._run_row, dtype=self.row_dtype)
        self._run_at = _array_of(self._run_at.typecode, at[kept])
        self._run_row = _array_of(self._run_row.typecode, rows[kept])
        self._old_end = _array_of("q", ends[kept[:-1]])
        self._prune_at = max(self._prune_min, 2 * int(kept.size))

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
        delay = row - self._row_of(occurrence)  # checked above: arrived, not started
        self._srow[occurrence] = row if self.keeps_rows else 1
        self._hist.one(delay)
        self._started(1, delay)
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
        unset = bytes(k) if self._unset == 0 else np.full(k, self._unset, self._sdtype()).tobytes()
        self._srow.frombytes(unset)
        self._last_at, self._last_rows = lo, np.array(rows, dtype=np.int64)  # its own copy
        if len(self._run_at) >= self._prune_at and not self.keeps_rows:
            self._prune()

    def start_all(self, occurrences: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> None:
        """:meth:`start` for each ``(occurrence, row)`` in order, in bulk: the first placement of an
        unstarted occurrence is its start. O(k) to find the starts (with ``rows=False`` and numpy,
        :func:`~packing_theory._unique.group_min`: O(k + span), or a sort when long waiters spread the
        ids), plus grouping their delays (O(k + span) or O(k log k)) and looking up the arrival rows of
        occurrences from before the last batch (O(log runs) each).

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
            self._count_delays(at - self._arrival_rows(occ))
            return
        flags = np.frombuffer(self._srow, dtype=np.int8)  # a view: released before any append
        if not self.compiled:  # each unstarted occurrence's first placement in this batch
            fresh = np.flatnonzero(flags[occurrences] == 0)
            first = fresh[group_min(occurrences[fresh], np.arange(fresh.size, dtype=np.int64))[1]]
            occ, at = occurrences[first], rows[first]
            flags[occ] = 1
            del flags
            self._count_delays(at - self._arrival_rows(occ))
            return
        # one loop, with the arrival rows of the last batch's occurrences: their delays inside the
        # histogram's table are counted there; the others (and those of older arrivals) come back
        k = occurrences.size
        occ, delays, known = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.bool_)
        table = self._hist.table()
        starts, rest, counted, top = load_starts_kernels().first_starts(
            occurrences, rows, flags, self._last_at, self._last_rows, table, occ, delays, known)
        del flags, table  # views: released before any append
        assert starts == counted + rest
        self._hist.counted_in_table(int(counted))
        self._started(int(counted), int(top))
        occ, delays, known = occ[:rest], delays[:rest], known[:rest]
        if not known.all():
            delays[~known] -= self._run_rows(occ[~known])
        self._count_delays(delays)

    def _count_delays(self, delays: npt.NDArray[np.int64]) -> None:
        """The start delays of a batch's first starts."""
        if delays.size == 0:
            return
        self._hist.add_each(delays)
        self._started(int(delays.size), int(delays.max()))

    def _started(self, n: int, top: int) -> None:
        """``n`` more starts (none when 0), the largest delay among them ``top``."""
        if n:
            self.started += n
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
        """The row ``occurrence`` arrived in. O(log runs).

        Raises:
            InputError: with ``rows=False``, ``occurrence`` has started (its row is not kept).
        """
        if not 0 <= occurrence < len(self._srow):
            raise InputError(f"arrival_row({occurrence}): occurrence {occurrence} has not arrived")
        if not self.keeps_rows and self._srow[occurrence] != self._unset:
            raise InputError(f"arrival_row({occurrence}): a tracker made with rows=False keeps the arrival "
                             "rows of unstarted occurrences only")
        return self._row_of(occurrence)

    def _row_of(self, occurrence: int) -> int:
        """:meth:`arrival_row` unchecked."""
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
        assert (n == 0) == (not self._run_at) and (n == 0 or self._run_at[0] == 0 or not self.keeps_rows)
        assert all(a < b < n for a, b in itertools.pairwise(self._run_at)), "runs not in occurrence order"
        assert all(a != b for a, b in itertools.pairwise(self._run_row)), "two runs of one row side by side"
        if self.keeps_rows:
            assert self._unset == (_UNSTARTED if self._srow.typecode == "q" else INT32.min)
        else:
            assert self._unset == 0 and set(self._srow) <= {0, 1}
        started = [i for i in range(n) if self._srow[i] != self._unset]
        self._hist._check()
        assert self.started == len(started) == sum(self.delays.values()) == self._hist.total
        kept_before = len(self._old_end)
        assert not self.keeps_rows or not kept_before, "a tracker with rows prunes nothing"
        assert kept_before < len(self._run_at) or n == 0
        for i in range(kept_before):  # a run kept by a pruning ends before the next run
            assert self._run_at[i] < self._old_end[i] <= self._run_at[i + 1]
        covered = [range(a, b) for a, b in zip(self._run_at, self._old_end, strict=False)]
        covered.append(range(self._run_at[kept_before], n) if n else range(0))
        unstarted = [i for i in range(n) if self._srow[i] == self._unset]
        assert self._last_at + self._last_rows.size <= n, "the last batch's rows past the arrivals"
        span = range(self._last_at, self._last_at + self._last_rows.size)  # rows=False: runs of the unstarted
        last = np.array([i for i in span if self.keeps_rows or self._srow[i] == self._unset], np.int64)
        assert (self._last_rows[last - self._last_at] == self._run_rows(last)).all(), "last rows unlike runs"
        assert all(any(i in r for r in covered) for i in unstarted), "an unstarted occurrence lost its run"
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
