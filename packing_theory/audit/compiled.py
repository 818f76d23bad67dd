"""The compiled ledger: the chunk accounting and the table reduction as numba loops (the ``fast`` extra).

``Ledger(..., compiled=True)`` (and :func:`~packing_theory.audit.ledger.audit_lengths`
with ``engine="compiled"``) accounts arrivals and placements and reduces the
per-occurrence table with the kernels of ``audit/_ledger_kernel.py`` instead of
whole-array numpy operations. The numpy path of
:mod:`packing_theory.audit.accounting` and :mod:`packing_theory.audit.table`
stays the oracle: the results are identical (a differential test over every
policy and peer compares them), because both use the same integer arithmetic
and the coverage mean and median are taken by numpy on the same values in the
same order.

What changes is the cost: one pass per chunk instead of a dozen numpy
temporaries (no sort for the duplicate-arrival check, no ``np.unique`` for the
crop and whole-document histograms, which are dense arrays of ``R + 1``
counts: a crop and a whole document are at most ``R`` tokens), and one pass
over the table instead of one per block plus one per stratum. Memory: the two
histograms (16 (R + 1) bytes), a length histogram of ``8 (max length + 1)``
bytes at the end (the numpy reduction is used instead when the longest
document exceeds :data:`MAX_HISTOGRAM_LENGTH`), and one stratum's coverage
values at a time, as in the numpy path (the stratum of an occurrence is
recomputed from its length, not held).

An inconsistent chunk is handed back to the numpy path, which raises its own
message; the kernels change nothing before they are sure a chunk is valid.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine.compiled import load_numba_module
from ..errors import InputError
from .table import SUM_KEYS, Reduction, SourceTable

__all__ = ["MAX_HISTOGRAM_LENGTH", "LedgerKernels", "StreamKernels", "load_ledger_kernels"]

MAX_HISTOGRAM_LENGTH = 1 << 24
"""The longest document for which the compiled reduction counts lengths in a dense histogram."""

Int64Array = npt.NDArray[np.int64]


def load_ledger_kernels() -> ModuleType:
    """Import the numba kernels of the compiled ledger
    (:func:`~packing_theory.engine.compiled.load_numba_module`).

    Raises:
        MissingDependency: numba is not installed (``pip install "packing-theory[fast]"``).
    """
    return load_numba_module("packing_theory.audit._ledger_kernel", "the compiled ledger")


class LedgerKernels:
    """The compiled accounting of one ledger: its dense crop and whole-document histograms.

    Args:
        capacity: row capacity ``R`` (the histograms hold lengths ``0..R``).
        boundaries: the length-stratum boundaries.
        bins: exposure bins.
    """

    def __init__(self, capacity: int, boundaries: tuple[int, ...], bins: int) -> None:
        if len(boundaries) > 254:  # the coverage kernel keeps each occurrence's stratum in a byte
            raise InputError(f"boundaries: the compiled ledger takes at most 254 stratum boundaries, got "
                             f"{len(boundaries)}")
        self.k = load_ledger_kernels()
        self.capacity = int(capacity)
        self.bounds = np.asarray(boundaries, dtype=np.int64)
        self.bins = int(bins)
        self.crop_hist = np.zeros(self.capacity + 1, dtype=np.int64)
        self.whole_hist = np.zeros(self.capacity + 1, dtype=np.int64)
        # emitted, emitted added BOS, emitted of long documents, max FIRST_ORIGIN - first long target
        self.sums = np.zeros(4, dtype=np.int64)
        self._no_first = np.zeros(0, dtype=np.int64)
        self._stats = np.zeros(5, dtype=np.int64)
        self.strata = np.zeros(self.bounds.size + 1, dtype=np.int64)  # arrivals per stratum of a chunk

    def arrivals(self, t: SourceTable, slots: Int64Array, length: Int64Array) -> int:
        """Mark the occurrences at ``slots`` arrived with ``length`` (columns grown and widened by the
        caller).

        Returns -1, or the position in ``slots`` of an occurrence that arrived
        twice (nothing is changed then). O(len(slots)).
        """
        return int(self.k.arrivals(slots, length, t.flags, t.length))

    def arrival_stats(self, occ: Int64Array, length: Int64Array) -> tuple[int, int, int, int, int]:
        """(min occurrence, min length, max occurrence, max length, sum of lengths) of a non-empty chunk in
        one pass, and :attr:`strata` its arrivals per length stratum; the sum is exact only when ``max
        length x len(chunk) < 2**63``. O(len(occ))."""
        out = self._stats
        self.k.arrival_stats(occ, length, self.bounds, out, self.strata)
        a, b, c, d, e = (int(v) for v in out.tolist())
        return a, b, c, d, e

    def discards(self, t: SourceTable, slots: Int64Array, ln: Int64Array) -> int | None:
        """Add a chunk of discards (of the occurrences at ``slots``) to the table; their tokens, or ``None``
        (nothing changed) when one is inconsistent. O(len(slots))."""
        out = self._stats
        if int(self.k.discards(slots, ln, t.w.slots_used, t.flags, t.discarded, out)):
            return None
        return int(out[0])

    def placements(self, t: SourceTable, row: Int64Array, off: Int64Array, slots: Int64Array,
                   start: Int64Array, ln: Int64Array, bos: npt.NDArray[np.bool_], crop: npt.NDArray[np.bool_],
                   targets: Int64Array, expo: Int64Array) -> bool:
        """Account a chunk of placements (of the occurrences at ``slots``); ``False`` (nothing changed) when
        one is inconsistent. O(chunk x bins)."""
        keep = t.first_inv is not None
        first_inv = t.first_inv if t.first_inv is not None else self._no_first
        status = self.k.placements(row, off, slots, start, ln, bos.view(np.uint8), crop.view(np.uint8),
                                   t.w.slots_used,
                                   t.flags, t.length, t.emitted, first_inv, keep, self.capacity, self.bounds,
                                   self.bins, targets, expo, self.crop_hist, self.whole_hist, self.sums)
        return int(status) == 0

    def take_counts(self, crops: dict[int, int], wholes: dict[int, int]) -> None:
        """Fold the dense histograms into the sparse ``length -> count`` dicts, and empty them. O(R)."""
        for hist, counts in ((self.crop_hist, crops), (self.whole_hist, wholes)):
            for k in np.flatnonzero(hist).tolist():
                counts[k] = counts.get(k, 0) + int(hist[k])
            hist[:] = 0

    def take_sums(self) -> tuple[int, int, int, int]:
        """(emitted, emitted added BOS, emitted of long documents, the largest ``FIRST_ORIGIN - first
        target`` of a long document or 0) since the last call, and reset."""
        out = tuple(int(v) for v in self.sums.tolist())
        self.sums[:] = 0
        return out[0], out[1], out[2], out[3]

    def reduce_block(self, c: dict[str, npt.NDArray[Any]], buffered: Int64Array, red: Reduction
                     ) -> list[npt.NDArray[np.float64]] | None:
        """Reduce one block of the table (columns ``flags, length, emitted, discarded``) into ``red`` in one
        compiled pass, and return each stratum's coverage values in id order; ``None`` (nothing done) when a
        length exceeds :data:`MAX_HISTOGRAM_LENGTH` (the numpy reduction then does the block).
        O(block + strata)."""
        fl, L = c["flags"], c["length"]
        n = int(fl.size)
        top = int(L.max(initial=0))
        if top > MAX_HISTOGRAM_LENGTH:
            return None
        S = self.bounds.size + 1
        table = np.zeros((len(SUM_KEYS), S), dtype=np.int64)
        scalars = np.zeros(5, dtype=np.int64)
        self.k.reduce_block(fl, L, c["emitted"], c["discarded"], buffered, n, self.bounds, table, scalars)
        for key, row in zip(SUM_KEYS, table.tolist(), strict=True):
            red.add(key, row)
        red.arrived += int(scalars[0])
        red.started += int(scalars[1])
        red.full += int(scalars[2])
        red.violations += int(scalars[3])
        inv = c.get("first_inv")
        if inv is not None:
            long_first = inv[((fl & 1) != 0) & (inv > 0) & (self.capacity < L)]
            if long_first.size:
                red.first_long = max(red.first_long, int(long_first.max()))
        if red.hist.size <= top:
            grown = np.zeros(top + 1, np.int64)
            grown[: red.hist.size] = red.hist
            red.hist = grown
        self.k.length_histogram(fl, L, n, red.hist)
        return self.coverage_block(c)

    def coverage_block(self, c: dict[str, npt.NDArray[Any]]) -> list[npt.NDArray[np.float64]]:
        """Each stratum's coverage values (emitted / length) of one block, in id order. O(block)."""
        fl = c["flags"]
        S = self.bounds.size + 1
        starts = np.zeros(S + 1, np.int64)
        out = np.empty(fl.size, np.float64)
        self.k.coverage_split(fl, c["length"], c["emitted"], int(fl.size), self.bounds, starts, out)
        return [out[int(starts[s]) : int(starts[s + 1])] for s in range(S)]


class StreamKernels:
    """The compiled placement accounting of one :class:`~packing_theory.audit.stream.StreamLedger`.

    Args:
        capacity: row capacity ``R`` (the crop histogram holds lengths ``0..R``).
        strata: the number of length strata.
    """

    def __init__(self, capacity: int, strata: int) -> None:
        self.k = load_ledger_kernels()
        self.capacity = int(capacity)
        self.crop_hist = np.zeros(self.capacity + 1, dtype=np.int64)
        self.by = np.zeros((3, strata), dtype=np.int64)  # started, emitted, targets per stratum
        self.sums = np.zeros(5, dtype=np.int64)

    def placements(self, i: Int64Array, ln: Int64Array, off: Int64Array, bos: npt.NDArray[np.bool_],
                   crop: npt.NDArray[np.bool_], flags: npt.NDArray[np.uint8], left: Int64Array,
                   emit: Int64Array, strat: npt.NDArray[np.intp]) -> bool:
        """Account a batch of placements of the live occurrences at positions ``i``; ``False`` (nothing
        changed) when a length is outside ``0..R``. O(len(i))."""
        status = self.k.stream_placements(i, ln, off, bos.view(np.uint8), crop.view(np.uint8), self.capacity,
                                          flags, left, emit, strat, self.by[0], self.by[1], self.by[2],
                                          self.crop_hist, self.sums)
        return int(status) == 0

    def take(self) -> tuple[list[int], Int64Array]:
        """(started, emitted, crops, BOS-only crops, first long position or -1) and the per-stratum
        (started, emitted, targets) since the last call; reset. The crop histogram keeps accumulating
        (:meth:`take_crops`)."""
        sums = [int(v) for v in self.sums.tolist()]
        by = self.by.copy()
        self.sums[:] = 0
        self.by[:] = 0
        return sums, by

    def take_crops(self, counts: dict[int, int]) -> None:
        """Fold the crop histogram into the sparse ``length -> crops`` dict, and empty it. O(R)."""
        for k in np.flatnonzero(self.crop_hist).tolist():
            counts[k] = counts.get(k, 0) + int(self.crop_hist[k])
        self.crop_hist[:] = 0
