"""The ledger's time series: buffered and protected mass sampled at the start of rows, thinned as it grows.

A :class:`SeriesSampler` marks a sample point when a placement starts a new
row (every ``stride``-th row), and turns the marks into exact samples when the
pending events around them are accounted: the buffered mass is the mass
accounted so far plus prefix sums of each pending kind up to the mark, the
protected mass the sum of the ``B - 1`` largest long lengths arrived by then.
Past :data:`MAX_SERIES` samples it keeps the rows that are multiples of twice
the stride, so a series stays evenly spaced and bounded whatever the run's
length. A stream fed as single events and the same stream fed as
:class:`~packing_theory.engine.batches.EventBatch` values are sampled at the
same points.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..engine.batches import ARRIVAL, DISCARD, PLACEMENT, EventBatch
from .results import SeriesSample

__all__ = ["MAX_SERIES", "SeriesSampler", "protected_at"]

MAX_SERIES = 1024
"""The most samples a series holds before it is thinned."""

Int64Array = npt.NDArray[np.int64]


def protected_at(kept: Int64Array, lengths: Int64Array, points: Sequence[int], capacity: int,
                 min_buffer: int) -> list[int]:
    """The protected-set mass once the first ``n`` of ``lengths`` have arrived on top of the protected lengths
    ``kept``, for each ``n`` of ``points``: the sum of the ``B - 1`` largest long lengths so far (a sum,
    so ties do not matter). A few points: one ``np.partition`` each, O(B + long arrivals); many: one heap
    walk, O(B + long arrivals x log B)."""
    k = min_buffer - 1
    idx = np.flatnonzero(lengths > capacity)
    longs = lengths[idx]
    counts = np.searchsorted(idx, np.asarray(points, dtype=np.int64)).tolist()
    if k <= 0:
        return [0] * len(counts)
    if len(counts) * 16 < longs.size:
        out = []
        for m in counts:
            vals = np.concatenate([kept, longs[:m]])
            top = vals if vals.size <= k else np.partition(vals, vals.size - k)[vals.size - k:]
            out.append(int(top.sum()))
        return out
    heap = kept.tolist()
    heapq.heapify(heap)
    total = sum(heap)
    sums = [total]
    for n in longs.tolist():
        if len(heap) < k:
            heapq.heappush(heap, n)
            total += n
        elif n > heap[0]:
            total += n - heapq.heapreplace(heap, n)
        sums.append(total)
    return [sums[m] for m in counts]


class SeriesSampler:
    """The sample points and samples of one ledger's series (see the module doc).

    Args:
        capacity: row capacity ``R`` (a sample at row ``j`` is at target ``j (R - 1)``).
        min_buffer: ``B`` (the protected set's size ``B - 1``).
    """

    def __init__(self, capacity: int, min_buffer: int) -> None:
        self.capacity = capacity
        self.min_buffer = min_buffer
        self.samples: list[SeriesSample] = []
        self.stride = 1
        self.row: int | None = None  # the row of the last placement
        self.rows_started = 0  # rows begun so far (the series' clock)
        self.marks: list[tuple[int, int, int, int, int]] = []  # (row j, pending ar, ba, pl, dc) to sample
        self.stale = False  # a sample off the current stride may be kept (marked before the stride grew)

    def new_row(self, row: int, pending: tuple[int, int, int, int]) -> None:
        """A placement starts a new row: mark a sample there (every stride-th row); ``pending`` counts the
        arrivals, markers, placements and discards waiting to be accounted."""
        self.row = row
        j = self.rows_started
        self.rows_started = j + 1
        if j % self.stride == 0:
            self.marks.append((j, *pending))

    def sample_marks(self, base: int, kept: Int64Array, ar: Int64Array, ba: Int64Array, pl: Int64Array,
                     dc: Int64Array) -> None:
        """Turn the marks into samples: ``base`` is the buffered mass accounted, ``kept`` the protected
        lengths, ``ar, ba, pl, dc`` the lengths of the pending events of each kind (exact prefix sums)."""
        def prefix(x: Int64Array) -> Int64Array:
            return np.concatenate([np.zeros(1, np.int64), np.cumsum(x, dtype=np.int64)])

        R = self.capacity
        ca, cb, cp, cd = prefix(ar), prefix(ba), prefix(pl), prefix(dc)
        protected = protected_at(kept, ar, [m[1] for m in self.marks], R, self.min_buffer)
        for (j, na, nb, npl, nd), prot in zip(self.marks, protected, strict=True):
            buffered = base + int(ca[na]) + int(cb[nb]) - int(cp[npl]) - int(cd[nd])  # exact (Python ints)
            self.samples.append(SeriesSample(j * (R - 1), buffered, prot))
            self.stale = self.stale or j % self.stride != 0
        self.marks.clear()
        self.thin()

    def sample_batch(self, b: EventBatch, pos: dict[int, Int64Array], filt: Int64Array, ba_pos: Int64Array,
                     base: int, kept: Int64Array) -> None:
        """The samples at the rows a batch starts (the same points as its events fed one by one)."""
        rows = b.placement.row
        if not rows.size:
            return
        first = np.ones(1, np.bool_) if self.row is None else np.asarray([rows[0] != self.row])
        starts = np.flatnonzero(np.concatenate([first, rows[1:] != rows[:-1]]))
        j = self.rows_started + np.arange(starts.size, dtype=np.int64)
        self.rows_started += int(starts.size)
        self.row = int(rows[-1])
        self.thin(j)
        keep = j % self.stride == 0
        if not keep.any():
            return
        at = pos[PLACEMENT][starts[keep]]  # batch positions of the marked placements
        delta = np.zeros(b.kinds.size + 1, np.int64)
        delta[pos[ARRIVAL] + 1] = b.arrival.length
        delta[ba_pos + 1] = b.bos_added.markers
        delta[pos[PLACEMENT] + 1] = -b.placement.length
        delta[pos[DISCARD] + 1] = -b.discard.length
        delta[filt + 1] = -b.filtered.length
        mass = base + np.cumsum(delta)
        arrived = np.searchsorted(pos[ARRIVAL], at).tolist()
        protected = protected_at(kept, b.arrival.length, arrived, self.capacity, self.min_buffer)
        R = self.capacity
        for jj, p, prot in zip(j[keep].tolist(), at.tolist(), protected, strict=True):
            self.samples.append(SeriesSample(jj * (R - 1), int(mass[p]), prot))

    def end(self, rows: int, buffered: int, protected: int) -> None:
        """The last sample, at the Horizon."""
        self.samples.append(SeriesSample(rows * (self.capacity - 1), buffered, protected))
        self.stale = self.stale or rows % self.stride != 0

    def thin(self, pending: Int64Array | None = None) -> None:
        """Past :data:`MAX_SERIES` samples keep the rows that are multiples of twice the stride, counting
        the ``pending`` rows about to be sampled (so the samples it would drop are never built)."""
        if pending is None and len(self.samples) < MAX_SERIES:
            return
        if (pending is not None and not self.stale
                and len(self.samples) + np.count_nonzero(pending % self.stride == 0) < MAX_SERIES):
            return  # every sample on the stride, and fewer than the bound with the pending: nothing to drop
        step = self.capacity - 1
        rows = np.asarray([s.targets // step for s in self.samples], dtype=np.int64)
        todo = np.zeros(0, np.int64) if pending is None else pending
        while np.count_nonzero(rows % self.stride == 0) + np.count_nonzero(
                todo % self.stride == 0) >= MAX_SERIES:
            self.stride *= 2
        stride = self.stride
        self.samples = [s for s, r in zip(self.samples, rows.tolist(), strict=True) if r % stride == 0]
        self.stale = False

    def _check(self, pending_placements: bool) -> None:
        assert all(m[0] < self.rows_started for m in self.marks), "a mark of a row not yet started"
        assert not self.marks or pending_placements, "marks pending without pending placements"
        assert all(a.targets <= b.targets for a, b in itertools.pairwise(self.samples)), "series out of order"
        assert len(self.samples) <= MAX_SERIES, "series not thinned"
        assert self.stale or all(s.targets // (self.capacity - 1) % self.stride == 0 for s in self.samples), \
            "a sample off the stride while none is marked stale"
