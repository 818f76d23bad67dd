"""The :class:`~packing_theory.audit.ledger.Ledger`'s compact per-occurrence table.

One fixed-width numpy column per quantity, indexed by occurrence id and sized
by the occurrences actually arrived (grown by doubling, one column at a time,
into zero-filled memory that the operating system commits only when written):

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
first targets (what ``audit`` keeps unless the per-document table is asked
for), 21 with them (59 before). ``filtered`` is the whole length when the
``FILTERED`` bit is set; the stratum is recomputed from the length.

:func:`table_aggregates` reduces the table in blocks of :data:`BLOCK`
occurrences (memory O(block + strata) besides one stratum's coverage values),
with the same arithmetic and the same per-stratum value order as a whole-array
computation, so the results are bit-identical.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .strata import stratum_index

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
_NARROW_MAX = int(np.iinfo(np.int32).max)


class SourceTable:
    """Per-occurrence columns (see the module doc). Not thread-safe; owned by one ledger.

    Args:
        keep_first_targets: hold the ``first_inv`` column (8 bytes per occurrence).
    """

    _FIXED = ("flags", "length", "emitted", "discarded", "first_inv")
    _LAZY = ("source", "pass_index", "added")

    def __init__(self, keep_first_targets: bool = True) -> None:
        self.n = 0
        self.cap = 0
        self.flags = np.zeros(0, dtype=np.uint8)
        self.length: npt.NDArray[Any] = np.zeros(0, dtype=_NARROW)
        self.emitted: npt.NDArray[Any] = np.zeros(0, dtype=_NARROW)
        self.discarded: npt.NDArray[Any] = np.zeros(0, dtype=_NARROW)
        self.first_inv: Int64Array | None = np.zeros(0, dtype=np.int64) if keep_first_targets else None
        self.source: Int64Array | None = None
        self.pass_index: npt.NDArray[np.int32] | None = None
        self.added: npt.NDArray[np.int32] | None = None

    def grow(self, n: int) -> None:
        """Make room for occurrence ids ``< n``. Amortised O(1) per occurrence."""
        if n <= self.cap:
            return
        cap = max(n, 2 * self.cap, 1024)
        for name in self._FIXED + self._LAZY:
            old = getattr(self, name)
            if old is None:
                continue
            new = np.zeros(cap, dtype=old.dtype)  # zero pages: committed only when written
            new[: old.size] = old
            if name == "source":
                new[old.size :] = np.arange(old.size, cap, dtype=np.int64)
            setattr(self, name, new)
        self.cap = cap

    def widen(self, top: int) -> None:
        """Switch the length-valued columns to ``int64`` when ``top`` does not fit ``int32``."""
        if top > _NARROW_MAX and self.length.dtype != np.int64:
            for name in ("length", "emitted", "discarded"):
                setattr(self, name, getattr(self, name).astype(np.int64))

    def set_sources(self, occ: Int64Array, src: Int64Array) -> None:
        """Record source ids (materialises the column on the first id that differs from its occurrence)."""
        if self.source is None:
            if np.array_equal(occ, src):
                return
            self.source = np.arange(self.cap, dtype=np.int64)
        self.source[occ] = src

    def set_passes(self, occ: Int64Array, pas: Int64Array) -> None:
        """Record pass indices (materialises the column on the first non-zero one)."""
        if self.pass_index is None:
            if not pas.any():
                return
            self.pass_index = np.zeros(self.cap, dtype=np.int32)
        self.pass_index[occ] = pas

    def add_markers(self, occ: Int64Array, markers: Int64Array) -> None:
        """Count added BOS markers per occurrence."""
        if self.added is None:
            self.added = np.zeros(self.cap, dtype=np.int32)
        np.add.at(self.added, occ, markers.astype(np.int32))
        self.flags[occ] |= ADDED

    def sources(self, a: int, b: int) -> Int64Array:
        """Source ids of occurrences ``[a, b)``."""
        if self.source is None:
            return np.arange(a, b, dtype=np.int64)
        return self.source[a:b]

    def nbytes(self) -> int:
        """Bytes of the columns (capacity, not only the committed part)."""
        return sum(getattr(self, n).nbytes for n in self._FIXED + self._LAZY if getattr(self, n) is not None)


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


def _block_columns(t: SourceTable, a: int, b: int, buf_occ: Int64Array, buf_amt: Int64Array,
                   boundaries: tuple[int, ...]) -> dict[str, Any]:
    fl = t.flags[a:b]
    arrived = (fl & ARRIVED) != 0
    L_all = t.length[a:b].astype(np.int64)
    L = L_all[arrived]
    buffered = np.zeros(b - a, dtype=np.int64)
    lo, hi = np.searchsorted(buf_occ, [a, b])
    buffered[buf_occ[lo:hi] - a] = buf_amt[lo:hi]
    return {
        "arrived": arrived, "L": L, "strat": stratum_index(L, boundaries),
        "emitted": t.emitted[a:b][arrived].astype(np.int64),
        "discarded": t.discarded[a:b][arrived].astype(np.int64),
        "filtered": np.where((fl & FILTERED) != 0, L_all, 0)[arrived],
        "buffered": buffered[arrived], "started": (fl[arrived] & STARTED) != 0,
        "first_inv": None if t.first_inv is None else t.first_inv[a:b][arrived],
        "source": t.sources(a, b)[arrived],
    }


def table_aggregates(t: SourceTable, buf_occ: Int64Array, buf_amt: Int64Array, boundaries: tuple[int, ...],
                     capacity: int, block: int | None = None) -> TableAggregates:
    """Reduce the table (``buf_occ`` sorted, with ``buf_amt`` source tokens buffered at the horizon).

    ``first_long`` (the first target of an over-capacity occurrence) is
    ``None`` for a table without first targets: its ledger keeps it as a
    running minimum instead.

    Complexity: O(occurrences) numpy work in ``1 + strata`` passes over blocks;
    memory O(block + strata) plus the coverage values of the largest stratum.
    """
    block = BLOCK if block is None else block
    S = len(boundaries) + 1
    keys = ("counts", "started_by", "full_by", "arrived_tokens", "emitted_tokens", "discarded_tokens",
            "buffered_tokens", "filtered_sources", "filtered_tokens")
    sums = {k: [0] * S for k in keys}
    arrived_n = started_n = full_n = violations = 0
    first_long = 0
    seen_sources: npt.NDArray[np.bool_] | None = None
    uniq_parts: list[Int64Array] = []
    cnt_parts: list[Int64Array] = []

    def add(key: str, values: npt.NDArray[Any], strat: Int64Array) -> None:
        col = sums[key]
        for s, v in enumerate(np.bincount(strat, weights=values, minlength=S).round().tolist()):
            col[s] += int(v)

    single: dict[str, Any] | None = None
    for a in range(0, t.n, block):
        b = min(t.n, a + block)
        c = _block_columns(t, a, b, buf_occ, buf_amt, boundaries)
        if b - a == t.n:
            single = c
        L, strat, em, started = c["L"], c["strat"], c["emitted"], c["started"]
        full = (em == L) & (L > 0)
        arrived_n += int(L.size)
        started_n += int(started.sum())
        full_n += int(full.sum())
        violations += int((em + c["discarded"] + c["filtered"] + c["buffered"] != L).sum())
        for s, v in enumerate(np.bincount(strat, minlength=S).tolist()):
            sums["counts"][s] += int(v)
        add("arrived_tokens", L, strat)
        add("emitted_tokens", em, strat)
        add("discarded_tokens", c["discarded"], strat)
        add("buffered_tokens", c["buffered"], strat)
        add("filtered_tokens", c["filtered"], strat)
        add("started_by", started.astype(np.int64), strat)
        add("full_by", full.astype(np.int64), strat)
        add("filtered_sources", (c["filtered"] > 0).astype(np.int64), strat)
        inv = c["first_inv"]
        long_first = inv[(inv > 0) & np.greater(L, capacity)] if inv is not None else inv
        if long_first is not None and long_first.size:
            first_long = max(first_long, int(long_first.max()))
        if t.source is not None:
            src = c["source"][started]
            if src.size:
                top = int(src.max()) + 1
                if seen_sources is None or seen_sources.size < top:
                    grown = np.zeros(max(top, 0 if seen_sources is None else 2 * seen_sources.size), np.bool_)
                    if seen_sources is not None:
                        grown[: seen_sources.size] = seen_sources
                    seen_sources = grown
                seen_sources[src] = True
        u, k = np.unique(L, return_counts=True)
        uniq_parts.append(u)
        cnt_parts.append(k.astype(np.int64))
    distinct = started_n
    if t.source is not None:
        distinct = 0 if seen_sources is None else int(seen_sources.sum())
    lengths = np.concatenate(uniq_parts) if uniq_parts else np.zeros(0, np.int64)
    counts = np.concatenate(cnt_parts) if cnt_parts else np.zeros(0, np.int64)
    uniq, inv = np.unique(lengths, return_inverse=True)
    length_counts = np.bincount(inv.ravel(), weights=counts, minlength=uniq.size).round().astype(np.int64)
    if single is not None:  # one block: the columns are at hand, one pass for every stratum
        c = single
        cov_all = np.divide(c["emitted"], c["L"], out=np.zeros(c["L"].size), where=c["L"] > 0)
        coverage = [summarise_coverage(cov_all[c["strat"] == s]) for s in range(S)]
    else:
        coverage = [_coverage(t, s, sums["counts"][s], boundaries, block) for s in range(S)]
    return TableAggregates(
        arrived_n, started_n, full_n, distinct, violations,
        FIRST_ORIGIN - first_long if first_long else None,
        sums["counts"], sums["started_by"], sums["full_by"], sums["arrived_tokens"], sums["emitted_tokens"],
        sums["discarded_tokens"], sums["buffered_tokens"], sums["filtered_sources"], sums["filtered_tokens"],
        uniq.astype(np.int64), length_counts, coverage,
    )


def _coverage(t: SourceTable, s: int, count: int, boundaries: tuple[int, ...], block: int
              ) -> tuple[int, float | None, float | None, int, int]:
    """(sources, mean, median, zero, full) of per-source coverage in stratum ``s``, in occurrence order."""
    x = np.empty(count, dtype=np.float64)
    pos = 0
    for a in range(0, t.n, block):
        b = min(t.n, a + block)
        fl = t.flags[a:b]
        arrived = (fl & ARRIVED) != 0
        L = t.length[a:b][arrived].astype(np.int64)
        sel = stratum_index(L, boundaries) == s
        if not sel.any():
            continue
        L = L[sel]
        em = t.emitted[a:b][arrived][sel].astype(np.int64)
        cov = np.divide(em, L, out=np.zeros(L.size), where=L > 0)
        x[pos : pos + cov.size] = cov
        pos += cov.size
    return summarise_coverage(x)


def summarise_coverage(x: npt.NDArray[np.float64]) -> tuple[int, float | None, float | None, int, int]:
    """(sources, mean, median, zero, full) of one stratum's coverage values (``x`` is overwritten). O(n)."""
    if not x.size:
        return 0, None, None, 0, 0
    zero, full = int((x == 0).sum()), int((x == 1).sum())
    mean = float(x.mean())
    return int(x.size), mean, float(np.median(x, overwrite_input=True)), zero, full
