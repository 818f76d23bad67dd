"""The :class:`~packing_theory.audit.ledger.Ledger`'s compact per-occurrence table, in or out of core.

One fixed-width column per quantity, indexed by occurrence id and held in an
:class:`~packing_theory.audit.window.OccurrenceWindow`: without a store every
occurrence stays in memory (zero-filled memory that the operating system
commits only when written, grown by doubling); with one
(``SourceTable(store=ColumnStore(path))``) only the recent occurrences and the
still-buffered older ones do, and the settled records go to the store in
id order — O(window + buffer) memory at any corpus size:

==============  =========  ====================================================
column          bytes      meaning
==============  =========  ====================================================
``flags``       1          ``ARRIVED | STARTED | FILTERED | ADDED`` bits
``length``      4 (or 8)   original length; ``int32`` until a length needs 64 bits
``emitted``     4 (or 8)   source tokens emitted (added BOS markers excluded)
``discarded``   4 (or 8)   source tokens dropped
``first_inv``   8, kept    ``FIRST_ORIGIN - first target`` (0: none yet), so that
                           ``np.maximum.at`` keeps the first target; only when the
                           per-occurrence first target is asked for
                           (``SourceTable(keep_first_targets=True)``, the default)
``source``      8, lazy    only once some source id differs from its occurrence id
``pass_index``  4, lazy    only once some pass index is not 0
``added``       4, lazy    BOS markers per occurrence, only once one was added
==============  =========  ====================================================

That is :data:`BYTES_PER_OCCURRENCE` = 13 bytes per occurrence for a one-pass
stream of the ``discard``, ``continue`` or ``random-span`` policy without the
first targets, 21 with them — in memory without a store, on disk with one.
``filtered`` is the whole length when the ``FILTERED`` bit is set; the
stratum is recomputed from the length. An occurrence is *settled* (its record
final in a valid stream, so it may leave memory) once it arrived and no
source token of it is left: every one emitted, discarded or filtered.

:func:`table_aggregates` reduces the table in one pass over blocks of
:data:`BLOCK` occurrences (memory O(block + strata)) — per-stratum sums,
counts and the length histogram, and each stratum's coverage values fed in
occurrence order to a :class:`~packing_theory.audit.coverage.CoverageSummary`
(numpy's mean and median, bit for bit, with another pass only when a
stratum's median is not settled by the first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from .._arrays import INT32
from ..engine.events import IntColumn
from .coverage import CoverageSummary
from .store import ColumnStore
from .strata import stratum_index
from .window import WINDOW, OccurrenceWindow

__all__ = ["ADDED", "ARRIVED", "BLOCK", "BYTES_PER_OCCURRENCE", "FILTERED", "FIRST_ORIGIN", "STARTED",
           "SourceTable", "TableAggregates", "summarise_coverage", "table_aggregates"]

Int64Array = npt.NDArray[np.int64]

ARRIVED, STARTED, FILTERED, ADDED = 1, 2, 4, 8
FIRST_ORIGIN = 1 << 62
"""``first_inv = FIRST_ORIGIN - first_target``; targets are below ``2**62``."""

BLOCK = 1 << 20
"""Occurrences reduced per block by :func:`table_aggregates`."""

BYTES_PER_OCCURRENCE = 13
"""Bytes per occurrence of a one-pass table without first targets: ``flags`` (1) and the ``int32``
``length``, ``emitted`` and ``discarded`` (4 each); ``first_inv`` adds 8 when kept."""

_NARROW = np.int32
_LAZY_FILL: dict[str, tuple[Any, int | None]] = {"source": (np.int64, None), "pass_index": (np.int32, 0),
                                                 "added": (np.int32, 0)}


def settling(columns: dict[str, npt.NDArray[Any]]) -> npt.NDArray[np.bool_]:
    """Which records of ``columns`` (flags, length, emitted, discarded) may still change: arrived, not
    filtered, with source tokens left. O(len)."""
    fl = columns["flags"]
    left = columns["length"] - columns["emitted"] - columns["discarded"]
    return np.asarray(((fl & ARRIVED) != 0) & ((fl & FILTERED) == 0) & (left > 0), np.bool_)


class SourceTable:
    """Per-occurrence columns (see the module doc). Not thread-safe; owned by one ledger.

    Args:
        keep_first_targets: hold the ``first_inv`` column (8 bytes per occurrence).
        store: a :class:`~packing_theory.audit.store.ColumnStore` for the settled
            records (``None``: all in memory).
        window: occurrence ids per chunk written to the store.
        reserve: ids to make room for at once (in memory; with a store, the ids expected:
            :class:`~packing_theory.audit.window.OccurrenceWindow`).

    The column attributes (``flags``, ``length``, ...) are arrays indexed by
    *slot* (:meth:`slots`); without a store, slot = occurrence id.
    """

    _FIXED = ("flags", "length", "emitted", "discarded", "first_inv")
    _LAZY = ("source", "pass_index", "added")

    def __init__(self, keep_first_targets: bool = True, *, store: ColumnStore | None = None,
                 window: int = WINDOW, reserve: int = 0) -> None:
        columns: dict[str, Any] = {"flags": np.uint8, "length": _NARROW, "emitted": _NARROW,
                                   "discarded": _NARROW}
        if keep_first_targets:
            columns["first_inv"] = np.int64
        self.w = OccurrenceWindow(columns, store=store, window=window, reserve=reserve)
        self.w.fixed = frozenset({"length", "source", "pass_index"})  # set at arrival, never after

    # ------------------------------------------------------------------ shape and columns

    @property
    def n(self) -> int:
        """One past the largest occurrence id covered."""
        return self.w.n

    @property
    def cap(self) -> int:
        """Slots allocated."""
        return self.w.cap

    @property
    def flags(self) -> npt.NDArray[np.uint8]:
        return self.w.cols["flags"]

    @property
    def length(self) -> npt.NDArray[Any]:
        return self.w.cols["length"]

    @property
    def emitted(self) -> npt.NDArray[Any]:
        return self.w.cols["emitted"]

    @property
    def discarded(self) -> npt.NDArray[Any]:
        return self.w.cols["discarded"]

    @property
    def first_inv(self) -> Int64Array | None:
        return self.w.cols.get("first_inv")

    @property
    def source(self) -> Int64Array | None:
        return self.w.cols.get("source")

    @property
    def pass_index(self) -> npt.NDArray[np.int32] | None:
        return self.w.cols.get("pass_index")

    @property
    def added(self) -> npt.NDArray[np.int32] | None:
        return self.w.cols.get("added")

    @property
    def keeps_first_targets(self) -> bool:
        """Whether the ``first_inv`` column is held."""
        return "first_inv" in self.w.cols

    def grow(self, top: int) -> None:
        """Cover occurrence ids ``< top``. Amortised O(1) per occurrence."""
        self.w.grow(top)

    def slots(self, occ: Int64Array) -> Int64Array:
        """The slot of each occurrence id (-1: not covered); an evicted record is loaded back."""
        return self.w.slots(occ)

    def widen(self, top: int) -> None:
        """Switch the length-valued columns to ``int64`` when ``top`` does not fit ``int32``."""
        if top > INT32.max and self.length.dtype != np.int64:
            for name in ("length", "emitted", "discarded"):
                self.w.widen(name, np.int64)

    def _lazy(self, name: str) -> npt.NDArray[Any]:
        if name not in self.w.cols:
            dtype, fill = _LAZY_FILL[name]
            self.w.add_column(name, dtype, fill)
        return self.w.cols[name]

    def set_sources(self, slots: Int64Array, occ: Int64Array, src: Int64Array) -> None:
        """Record source ids (materialises the column on the first id that differs from its occurrence)."""
        if self.source is None and np.array_equal(occ, src):
            return
        self._lazy("source")[slots] = src

    def set_passes(self, slots: Int64Array, pas: Int64Array) -> None:
        """Record pass indices (materialises the column on the first non-zero one)."""
        if self.pass_index is None and not pas.any():
            return
        self._lazy("pass_index")[slots] = pas

    def add_markers(self, slots: Int64Array, markers: Int64Array) -> None:
        """Count added BOS markers per occurrence."""
        np.add.at(self._lazy("added"), slots, markers.astype(np.int32))
        self.flags[slots] |= ADDED

    def column(self, names: Sequence[str], a: int, b: int) -> dict[str, npt.NDArray[Any]]:
        """Columns ``names`` of occurrences ``[a, b)``; a lazy column not materialised is filled (``source``:
        the ids; ``pass_index`` and ``added``: 0). O(b - a)."""
        have = [n for n in names if n in self.w.cols]
        out = self.w.column(have, a, b)
        for name in names:
            if name not in out:
                dtype, fill = _LAZY_FILL[name]
                out[name] = np.arange(a, b, dtype=dtype) if fill is None else np.zeros(b - a, dtype)
        return out

    def get(self, name: str, occ: Int64Array) -> npt.NDArray[Any]:
        """Column ``name`` of occurrences ``occ`` (any order), from memory or the store."""
        if name not in self.w.cols:
            dtype, fill = _LAZY_FILL[name]
            return occ.astype(dtype) if fill is None else np.zeros(occ.size, dtype)
        return self.w.get(name, occ)

    def evict(self) -> None:
        """Move the settled records of the window's oldest chunk to the store (no-op without one)."""
        self.w.evict(settling)

    def finish(self) -> None:
        """Write every record to the store (no-op without one)."""
        self.w.finish()

    def nbytes(self) -> int:
        """Bytes of the columns in memory (capacity, not only the committed part)."""
        return self.w.nbytes()

    def _check(self) -> None:
        self.w._check()
        names = set(self.w.cols)
        assert {"flags", "length", "emitted", "discarded"} <= names <= set(self._FIXED + self._LAZY)


class TableAggregates(NamedTuple):
    """What :func:`table_aggregates` reduces from the table (per-stratum lists are Python ints)."""

    arrived: int
    started: int
    full: int
    distinct_started: int
    conservation_violations: int
    first_long: int | None
    counts: list[int]
    started_by: list[int]
    full_by: list[int]
    arrived_tokens: list[int]
    emitted_tokens: list[int]
    discarded_tokens: list[int]
    buffered_tokens: list[int]
    filtered_sources: list[int]
    filtered_tokens: list[int]
    lengths: Int64Array
    length_counts: Int64Array
    coverage: list[tuple[int, float | None, float | None, int, int]]


SUM_KEYS = ("counts", "started_by", "full_by", "arrived_tokens", "emitted_tokens", "discarded_tokens",
            "buffered_tokens", "filtered_sources", "filtered_tokens")
"""The per-stratum sums of :class:`TableAggregates`, in order (the compiled reduction's table rows)."""


class BlockReducer(Protocol):
    """A compiled block reduction (:class:`~packing_theory.audit.compiled.LedgerKernels`)."""

    def reduce_block(self, c: dict[str, npt.NDArray[Any]], buffered: Int64Array, red: Reduction
                     ) -> list[npt.NDArray[np.float64]] | None: ...

    def coverage_block(self, c: dict[str, npt.NDArray[Any]]) -> list[npt.NDArray[np.float64]]: ...


class Reduction:
    """The running state of :func:`table_aggregates` (filled by the numpy or the compiled block reduction)."""

    def __init__(self, strata: int) -> None:
        self.sums = {k: [0] * strata for k in SUM_KEYS}
        self.arrived = self.started = self.full = self.violations = 0
        self.first_long = 0  # the largest FIRST_ORIGIN - first target of an over-capacity occurrence
        self.seen_sources: npt.NDArray[np.bool_] | None = None
        self.sourced = False
        self.uniq_parts: list[Int64Array] = []
        self.cnt_parts: list[Int64Array] = []
        self.hist = np.zeros(0, np.int64)  # a dense length histogram (the compiled blocks)

    def add(self, key: str, per_stratum: Sequence[int]) -> None:
        col = self.sums[key]
        for s, v in enumerate(per_stratum):
            col[s] += int(v)

    def lengths(self) -> tuple[Int64Array, Int64Array]:
        parts = [*self.uniq_parts, np.flatnonzero(self.hist).astype(np.int64)]
        counts = [*self.cnt_parts, self.hist[self.hist > 0]]
        uniq, inv = np.unique(np.concatenate(parts), return_inverse=True)
        weights = np.concatenate(counts).astype(np.float64)
        return uniq.astype(np.int64), np.bincount(inv.ravel(), weights=weights, minlength=uniq.size
                                                  ).round().astype(np.int64)


def _numpy_block(c: dict[str, npt.NDArray[Any]], buffered_all: Int64Array, boundaries: tuple[int, ...],
                 capacity: int, red: Reduction) -> list[npt.NDArray[np.float64]]:
    """Reduce one block with numpy; return each stratum's coverage values (in id order)."""
    S = len(boundaries) + 1
    fl = c["flags"]
    arrived = (fl & ARRIVED) != 0
    L_all = c["length"].astype(np.int64)
    L = L_all[arrived]
    strat = stratum_index(L, boundaries)
    em = c["emitted"][arrived].astype(np.int64)
    dc = c["discarded"][arrived].astype(np.int64)
    filtered = np.where((fl & FILTERED) != 0, L_all, 0)[arrived]
    buffered = buffered_all[arrived]
    started = (fl[arrived] & STARTED) != 0
    full = (em == L) & (L > 0)
    red.arrived += int(L.size)
    red.started += int(started.sum())
    red.full += int(full.sum())
    red.violations += int((em + dc + filtered + buffered != L).sum())
    red.add("counts", np.bincount(strat, minlength=S).tolist())

    def by(values: npt.NDArray[Any]) -> list[int]:
        return [int(v) for v in np.bincount(strat, weights=values, minlength=S).round().tolist()]

    red.add("arrived_tokens", by(L))
    red.add("emitted_tokens", by(em))
    red.add("discarded_tokens", by(dc))
    red.add("buffered_tokens", by(buffered))
    red.add("filtered_tokens", by(filtered))
    red.add("started_by", by(started.astype(np.int64)))
    red.add("full_by", by(full.astype(np.int64)))
    red.add("filtered_sources", by((filtered > 0).astype(np.int64)))
    inv = c.get("first_inv")
    if inv is not None:
        long_first = inv[arrived][(inv[arrived] > 0) & np.greater(L, capacity)]
        if long_first.size:
            red.first_long = max(red.first_long, int(long_first.max()))
    if "source" in c:
        red.sourced = True
        src = c["source"][arrived][started]
        if src.size:
            top = int(src.max()) + 1
            seen = red.seen_sources
            if seen is None or seen.size < top:
                grown = np.zeros(max(top, 0 if seen is None else 2 * seen.size), np.bool_)
                if seen is not None:
                    grown[: seen.size] = seen
                red.seen_sources = seen = grown
            seen[src] = True
    u, k = np.unique(L, return_counts=True)
    red.uniq_parts.append(u)
    red.cnt_parts.append(k.astype(np.int64))
    return _coverage_values(L, em, strat, S)


def _coverage_values(L: Int64Array, em: Int64Array, strat: npt.NDArray[np.intp], S: int
                     ) -> list[npt.NDArray[np.float64]]:
    cov = np.divide(em, L, out=np.zeros(L.size), where=L > 0)
    return [cov[strat == s] for s in range(S)]


def _block_buffered(a: int, b: int, buf_occ: IntColumn, buf_amt: IntColumn) -> Int64Array:
    out = np.zeros(b - a, np.int64)
    lo, hi = np.searchsorted(buf_occ, [a, b])
    out[buf_occ[lo:hi].astype(np.int64) - a] = buf_amt[lo:hi]  # int64: an int32 id minus a cannot wrap
    return out


def table_aggregates(t: SourceTable, buf_occ: IntColumn, buf_amt: IntColumn, boundaries: tuple[int, ...],
                     capacity: int, block: int | None = None, *, counts: Sequence[int] | None = None,
                     kernels: BlockReducer | None = None) -> TableAggregates:
    """Reduce the table (``buf_occ`` sorted, with ``buf_amt`` source tokens buffered at the horizon).

    ``counts`` are the arrived occurrences per stratum when the caller kept
    them (a counting pass otherwise); ``kernels``, the compiled ledger's, reduce
    each block in one compiled pass (the numpy reduction, its oracle, is used
    for a table with a ``source`` column or a block holding a length past
    :data:`~packing_theory.audit.compiled.MAX_HISTOGRAM_LENGTH`). ``first_long``
    (the first target of an over-capacity occurrence) is ``None`` for a table
    without first targets: its ledger keeps it as a running minimum instead.

    Complexity: O(occurrences) work in one pass over blocks (more only for a
    stratum whose median the first pass does not settle); memory O(block + strata).
    """
    block = BLOCK if block is None else block
    S = len(boundaries) + 1
    if counts is None:
        counts = [0] * S
        for _, c in t.w.blocks(block, ("flags", "length")):
            L = c["length"][(c["flags"] & ARRIVED) != 0].astype(np.int64)
            counts = [x + int(y) for x, y in zip(counts, np.bincount(stratum_index(L, boundaries),
                                                                     minlength=S).tolist(), strict=True)]
    summaries = [CoverageSummary(int(k)) for k in counts]
    red = Reduction(S)
    names = [n for n in ("flags", "length", "emitted", "discarded", "first_inv", "source") if n in t.w.cols]
    compiled = kernels is not None and t.source is None
    for a, c in t.w.blocks(block, names):
        buffered = _block_buffered(a, a + c["flags"].size, buf_occ, buf_amt)
        values = kernels.reduce_block(c, buffered, red) if compiled and kernels is not None else None
        if values is None:
            values = _numpy_block(c, buffered, boundaries, capacity, red)
        for s, v in enumerate(values):
            summaries[s].feed(v)
    again = [s for s in range(S) if summaries[s].needs_pass()]
    while again:
        for _, c in t.w.blocks(block, ("flags", "length", "emitted")):
            values = kernels.coverage_block(c) if compiled and kernels is not None else None
            if values is None:
                arrived = (c["flags"] & ARRIVED) != 0
                L = c["length"][arrived].astype(np.int64)
                values = _coverage_values(L, c["emitted"][arrived].astype(np.int64),
                                          stratum_index(L, boundaries), S)
            for s in again:
                summaries[s].feed_pass(values[s])
        for s in again:
            summaries[s].end_pass()
        again = [s for s in again if summaries[s].needs_pass()]
    distinct = red.started
    if red.sourced:
        distinct = 0 if red.seen_sources is None else int(red.seen_sources.sum())
    lengths, length_counts = red.lengths()
    sums = red.sums
    return TableAggregates(
        red.arrived, red.started, red.full, distinct, red.violations,
        FIRST_ORIGIN - red.first_long if red.first_long else None,
        sums["counts"], sums["started_by"], sums["full_by"], sums["arrived_tokens"], sums["emitted_tokens"],
        sums["discarded_tokens"], sums["buffered_tokens"], sums["filtered_sources"], sums["filtered_tokens"],
        lengths, length_counts, [s.result() for s in summaries],
    )


def summarise_coverage(x: npt.NDArray[np.float64]) -> tuple[int, float | None, float | None, int, int]:
    """(sources, mean, median, zero, full) of one stratum's coverage values (``x`` is overwritten). O(n).

    The whole-array definition that :class:`~packing_theory.audit.coverage.CoverageSummary` reproduces
    from values streamed in blocks (the tests hold them equal).
    """
    if not x.size:
        return 0, None, None, 0, 0
    zero, full = int((x == 0).sum()), int((x == 1).sum())
    mean = float(x.mean())
    return int(x.size), mean, float(np.median(x, overwrite_input=True)), zero, full
