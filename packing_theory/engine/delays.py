"""A histogram of start delays whose memory follows the delays it holds: :class:`DelayCounts`.

The one start-delay record of the library (:class:`~packing_theory.engine.starts.StartTracker`) keeps
its delays here; :func:`~packing_theory.audit.histograms.nearest_rank` reads :meth:`DelayCounts.counts`.
"""

from __future__ import annotations

from array import array

import numpy as np
import numpy.typing as npt

from .._unique import distinct_counts
from ..errors import InputError

__all__ = ["DelayCounts"]


class DelayCounts:
    """A histogram of integer delays in memory proportional to the delays it holds, not to the largest.

    Delays ``0 .. dense - 1`` are counted in a dense table; every other one (negative, or past the
    table) is kept sparse, as sorted distinct values with their counts, merged in bulk. A merge moves
    the longest prefix of the sparse values at least half as dense as a table into the table, so the
    memory is at most about twice the smaller of a table up to the largest delay (8 bytes a delay)
    and a sparse list (16 bytes a distinct delay): a stream whose delays are mostly short with a thin
    tail of long waits keeps the tail sparse (a 100 M-document audit: delays up to 27 M rows, a table
    of 219 MB), an offline packer's row positions fill the table.

    Complexity: :meth:`add` O(k) plus the merges: pending values are merged (sorted with the sparse
    list) once they outnumber it, so each distinct delay is sorted O(log) times, amortised
    O(log distinct) each.

    >>> h = DelayCounts()
    >>> h.add(np.array([0, 1, 2, 900]), np.array([5, 1, 1, 1])); h.one(-3)
    >>> [x.tolist() for x in h.counts()], h.total
    ([[-3, 0, 1, 2, 900], [1, 5, 1, 1, 1]], 9)
    """

    __slots__ = ("_pending", "_pending_n", "_sc", "_sv", "dense", "total")

    _MERGE_AT = 1 << 12
    """Pending values merged at least this many at a time."""

    def __init__(self) -> None:
        self.dense = array("q")  # dense[d]: the count of delay d, for 0 <= d < len(dense) ...
        self._sv = np.zeros(0, np.int64)  # ... and the other delays, sorted and distinct ...
        self._sc = np.zeros(0, np.int64)  # ... with their counts
        self._pending: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
        self._pending_n = 0
        self.total = 0

    def add(self, values: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> None:
        """Count ``counts[i]`` delays of ``values[i]``. O(k) plus the merges.

        Raises:
            InputError: ``values`` not strictly increasing, or a count below 1, or not one count per value.
        """
        values = np.asarray(values, np.int64)
        counts = np.asarray(counts, np.int64)
        if values.shape != counts.shape or values.ndim != 1:
            raise InputError(f"counts must give one count per value: {counts.shape} for {values.shape}")
        if (values[1:] <= values[:-1]).any() or (counts < 1).any():  # no diff: it could overflow
            raise InputError("values must be strictly increasing and counts at least 1, got "
                             f"{values[:8].tolist()} / {counts[:8].tolist()}")
        self.total += int(counts.sum())
        inside = (values >= 0) & (values < len(self.dense))
        if inside.any():
            table = self.table()
            table[values[inside]] += counts[inside]
            del table  # a view: released before the table grows
        if not inside.all():
            self._pending.append((values[~inside], counts[~inside]))
            self._pending_n += int((~inside).sum())
            if self._pending_n >= max(self._MERGE_AT, self._sv.size):
                self._merge()

    def add_each(self, delays: npt.NDArray[np.int64]) -> None:
        """Count each of ``delays`` (repeats allowed), grouped first
        (:func:`~packing_theory._unique.distinct_counts`: a table of their span when they lie close, as
        a batch's delays do, else a sort). O(k + span) or O(k log k)."""
        if delays.size:
            self.add(*distinct_counts(delays))

    def table(self) -> npt.NDArray[np.int64]:
        """The table's counts of delays ``0 .. len(dense) - 1``, as a writable view (released by the caller
        before the table grows: a count written there is counted, then :meth:`counted_in_table` says how
        many)."""
        return np.frombuffer(self.dense, np.int64) if self.dense else np.zeros(0, np.int64)

    def counted_in_table(self, n: int) -> None:
        """``n`` delays were added to :meth:`table`'s counts directly (a compiled loop's)."""
        self.total += n

    def one(self, delay: int) -> None:
        """Count one delay. O(1) in the table."""
        if 0 <= delay < len(self.dense):
            self.dense[delay] += 1
            self.total += 1
            return
        self.add(np.array([delay], np.int64), np.ones(1, np.int64))

    def _merge(self) -> None:
        """Merge the pending values into the sparse list, then move its densest prefix into the table."""
        if self._pending:
            v = np.concatenate([self._sv, *(p[0] for p in self._pending)])
            c = np.concatenate([self._sc, *(p[1] for p in self._pending)])
            self._pending, self._pending_n = [], 0
            order = np.argsort(v, kind="stable")
            v, c = v[order], c[order]
            new = np.ones(v.size, np.bool_)
            np.not_equal(v[1:], v[:-1], out=new[1:])
            starts = np.flatnonzero(new)
            self._sv, self._sc = v[starts], np.add.reduceat(c, starts) if v.size else c
        low = len(self.dense)
        ahead = np.flatnonzero(self._sv >= low)
        if not ahead.size:
            return
        first = int(ahead[0])
        gap = self._sv[first:] - low + 1  # the table's growth to take each value in
        worth = np.flatnonzero(2 * np.arange(1, gap.size + 1) >= gap)  # at least half as dense as a table
        if not worth.size:
            return
        last = first + int(worth[-1])
        top = int(self._sv[last])
        self.dense.frombytes(bytes(8 * (top + 1 - low)))
        table = self.table()
        table[self._sv[first:last + 1]] += self._sc[first:last + 1]
        del table
        self._sv = np.concatenate([self._sv[:first], self._sv[last + 1:]])
        self._sc = np.concatenate([self._sc[:first], self._sc[last + 1:]])

    def counts(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(distinct delays, their counts)``, sorted. O(table + distinct)."""
        self._merge()
        table = self.table()
        at = np.flatnonzero(table)
        values = np.concatenate([at.astype(np.int64), self._sv])
        counts = np.concatenate([table[at], self._sc])
        order = np.argsort(values, kind="stable")
        return values[order], counts[order]

    def _check(self) -> None:
        """Assert the internal invariants (used by tests)."""
        low = len(self.dense)
        assert self._sv.shape == self._sc.shape and (self._sc > 0).all()
        assert (np.diff(self._sv) > 0).all(), "sparse delays not sorted and distinct"
        assert not ((self._sv >= 0) & (self._sv < low)).any(), "a delay both in the table and sparse"
        assert all(not ((v >= 0) & (v < low)).any() and (c > 0).all() for v, c in self._pending)
        assert self._pending_n == sum(v.size for v, _ in self._pending)
        pending = sum(int(c.sum()) for _, c in self._pending)
        assert self.total == sum(self.dense) + int(self._sc.sum()) + pending
        used = np.count_nonzero(self.table())
        assert 2 * used >= len(self.dense), "the table under half full"
