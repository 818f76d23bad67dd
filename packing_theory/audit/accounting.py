"""The :class:`~packing_theory.audit.ledger.Ledger`'s chunk accounting: events in columns -> the table.

:class:`ChunkAccounts` holds every accumulator of a ledger (the per-occurrence
:class:`~packing_theory.audit.table.SourceTable`, the running token totals,
the protected set, the exposure counts, the time series and the detail rows)
and the numpy reductions that account one chunk of arrivals, markers,
placements or discards at a time. :class:`~packing_theory.audit.ledger.Ledger`
adds the feeding (single events, batches) and the results on top.

Every chunk first maps its occurrence ids to the table's slots
(:meth:`~packing_theory.audit.table.SourceTable.slots`: the id itself in
memory; with a store, the window's slot, an evicted record loaded back), then
validates the whole chunk before it changes anything, so a refused chunk
leaves the accumulators as they were. After each chunk the table may move the
settled records of its oldest chunk to its store
(:meth:`~packing_theory.audit.table.SourceTable.evict`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct_counts
from ..engine.events import Arrival, BosAdded, Discard, Horizon, IntColumn, Placement, first_target
from ..errors import InputError, InputTypeError
from ..lengths import INT64_MAX, exact_sum
from .detail import DetailRows
from .exposure import bin_edges
from .results import Aggregates
from .series import SeriesSampler, protected_at
from .store import ColumnStore
from .strata import STRATA_BOUNDARIES, check_boundaries, stratum_index
from .table import ADDED, ARRIVED, FIRST_ORIGIN, STARTED, SourceTable
from .table import FILTERED as F_FILTERED
from .window import WINDOW

if TYPE_CHECKING:
    from .compiled import LedgerKernels

__all__ = ["MAX_EXACT_TOKENS", "ChunkAccounts", "exact_total"]

MAX_EXACT_TOKENS = 1 << 53
"""Arrived tokens a :class:`~packing_theory.audit.ledger.Ledger` accounts exactly (per-source columns are
int64 and per-stratum sums float64, exact up to 2**53); past it the ledger refuses with one line."""

Int64Array = npt.NDArray[np.int64]

_CHUNK = 8192
_CHECK_BLOCK = 1 << 16


def open_store(store: ColumnStore | str | os.PathLike[str] | None) -> ColumnStore | None:
    """A :class:`ColumnStore` from a store, a directory path, or ``None`` (in memory)."""
    if store is None or isinstance(store, ColumnStore):
        return store
    if isinstance(store, (str, os.PathLike)):
        return ColumnStore(store)
    raise InputTypeError(f"store must be a ColumnStore, a directory path or None, got {type(store).__name__}")


class ChunkAccounts:
    """The accumulators of a ledger and their chunk accounting (arguments: see
    :class:`~packing_theory.audit.ledger.Ledger`)."""

    def __init__(
        self,
        capacity: int,
        min_buffer: int,
        *,
        policy: str = "",
        detail: bool = False,
        boundaries: Sequence[int] = STRATA_BOUNDARIES,
        exposure_bins: int = 20,
        chunk: int = _CHUNK,
        spill: str | os.PathLike[str] | None = None,
        compiled: bool = False,
        keep_first_targets: bool = True,
        occurrences_hint: int | None = None,
        store: ColumnStore | str | os.PathLike[str] | None = None,
        window: int = WINDOW,
    ) -> None:
        for name, value, lo in (("capacity", capacity, 2), ("min_buffer", min_buffer, 1),
                                ("exposure_bins", exposure_bins, 1), ("chunk", chunk, 1),
                                ("window", window, 1)):
            check_int(name, value, lo)
        if spill is not None and not detail:
            raise InputError(f"spill={os.fspath(spill)!r} needs detail=True (it spills the detail rows)")
        self.capacity = int(capacity)
        self.min_buffer = int(min_buffer)
        self.policy = str(policy)
        self.detail = bool(detail)
        self._detail = DetailRows(spill)
        self.spill = self._detail.spill
        self.boundaries = check_boundaries(boundaries)
        self.n_strata = len(self.boundaries) + 1
        for flag, value in (("compiled", compiled), ("keep_first_targets", keep_first_targets)):
            if not isinstance(value, bool):
                raise InputTypeError(f"{flag} must be a bool, got {type(value).__name__} {value!r}")
        self.compiled = compiled
        if detail and not keep_first_targets:
            raise InputError("detail=True needs keep_first_targets=True (a record holds its first target)")
        self.keep_first_targets = keep_first_targets
        """Whether each occurrence's first target is kept (8 bytes per occurrence)."""
        self.bins = int(exposure_bins)
        self._chunk = int(chunk)
        self.max_tokens = min(MAX_EXACT_TOKENS, INT64_MAX // (self.bins + 1))
        """Arrived tokens this ledger accounts exactly (see the class docstring)."""
        hint = 0 if occurrences_hint is None else check_int("occurrences_hint", occurrences_hint, 0)
        self.store = open_store(store)
        """Where settled per-occurrence records go (``None``: all kept in memory)."""
        self._t = SourceTable(keep_first_targets, store=self.store, window=window, reserve=hint)
        self._strata_arrived = np.zeros(self.n_strata, np.int64)  # arrivals per length stratum
        self._first_long_inv = 0  # the largest FIRST_ORIGIN - first target of an over-capacity placement
        # pending single events
        self._pl: list[Placement] = []
        self._ar: list[Arrival] = []
        self._dc: list[Discard] = []
        self._ba: list[BosAdded] = []
        self._carry = [0, 0, 0]  # arrivals, placements, discards accounted since the last sample (batches)
        # running totals (Python ints: exact however large)
        self._arrived_tokens = 0
        self._added_bos = 0
        self._emitted_tokens = 0
        self._emitted_added = 0
        self._discarded_tokens = 0
        self._filtered_tokens = 0
        self._filtered_sources = 0
        self._padding_tokens = 0
        self._repeated_tokens = 0
        self._long_emitted = 0
        self._crop_counts: dict[int, int] = {}  # crop length -> crops (sparse: O(distinct), not O(R))
        self._targets_by_stratum = np.zeros(self.n_strata, dtype=np.int64)
        self._expo = np.zeros(self.n_strata * self.bins, dtype=np.int64)
        self._whole_counts: dict[int, int] = {}  # whole-document placements by L (O(distinct), not O(R))
        self._long_arrivals = 0
        self._prot_len = np.zeros(0, dtype=np.int64)
        self._prot_occ = np.zeros(0, dtype=np.int64)
        self._series = SeriesSampler(self.capacity, self.min_buffer)
        self._exhausted_at_row: int | None = None
        self._horizon: Horizon | None = None
        # occurrences buffered at the horizon (sorted) and their buffered source tokens: int32 or int64,
        # as the Horizon's span columns give them (often those very arrays)
        self._buf_occ: IntColumn = np.zeros(0, dtype=np.int64)
        self._buf_amt: IntColumn = np.zeros(0, dtype=np.int64)
        self._buffered_tokens = 0
        self._buffered_added = 0
        self._result: Aggregates | None = None
        self._kernels: LedgerKernels | None = None
        if compiled:
            from .compiled import LedgerKernels

            self._kernels = LedgerKernels(self.capacity, self.boundaries, self.bins)

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert the ledger's internal invariants over the events accounted so far.

        Pending (not yet flushed) events are not included; tests call this
        after every event and after the Horizon. The table is read in blocks
        (from memory and the store). O(occurrences).
        """
        self._fold_counts()
        t = self._t
        t._check()
        used = t.w.slots_used
        for name, col in t.w.cols.items():  # slots past those in use hold nothing
            if name != "source":
                assert not col[used:].any(), f"{name} set on a slot past the table"
        totals = dict.fromkeys(("arrived", "added", "emitted", "discarded", "filtered", "filtered_n"), 0)
        strata = np.zeros(self.n_strata, np.int64)
        long_inv = 0
        names = ("flags", "length", "emitted", "discarded", "added", "pass_index",
                 *(("first_inv",) if t.keeps_first_targets else ()))
        for a in range(0, t.n, _CHECK_BLOCK):
            c = t.column(names, a, min(t.n, a + _CHECK_BLOCK))
            long_inv = max(long_inv, self._check_block(c, totals, strata))
        assert totals["arrived"] == self._arrived_tokens
        assert totals["added"] == self._added_bos
        assert totals["emitted"] + self._emitted_added == self._emitted_tokens
        assert totals["discarded"] == self._discarded_tokens
        assert totals["filtered"] == self._filtered_tokens
        assert totals["filtered_n"] == self._filtered_sources
        assert np.array_equal(strata, self._strata_arrived), "arrivals per stratum"
        if t.keeps_first_targets:
            assert long_inv == self._first_long_inv, "running first long target"
        assert sum(k * v for k, v in self._crop_counts.items()) <= self._emitted_tokens
        assert all(1 <= k <= self.capacity and v >= 1 for k, v in self._crop_counts.items())
        expected_protected = min(self.min_buffer - 1, self._long_arrivals) if self.min_buffer > 1 else 0
        assert self._prot_len.size == self._prot_occ.size == expected_protected
        assert (self._prot_len > self.capacity).all()
        assert (t.get("length", self._prot_occ) == self._prot_len).all()
        assert (self._arrived_tokens + self._added_bos
                >= self._emitted_tokens + self._discarded_tokens + self._filtered_tokens)
        assert self._padding_tokens >= 0 and self._repeated_tokens >= 0
        assert all(0 <= c < self._chunk for c in self._carry)
        self._series._check(bool(self._pl))
        if self._horizon is not None:
            assert not (self._pl or self._ar or self._dc or self._ba), "events pending after the Horizon"
            assert (self._arrived_tokens + self._added_bos
                    == self._emitted_tokens + self._discarded_tokens + self._filtered_tokens
                    + self._buffered_tokens)
            assert int(self._buf_amt.sum()) + self._buffered_added == self._buffered_tokens
            assert (np.diff(self._buf_occ) > 0).all()

    def _check_block(self, c: dict[str, npt.NDArray[Any]], totals: dict[str, int], strata: Int64Array) -> int:
        fl = c["flags"]
        arrived, started = (fl & ARRIVED) != 0, (fl & STARTED) != 0
        emitted, length = c["emitted"].astype(np.int64), c["length"].astype(np.int64)
        added = c["added"].astype(np.int64)
        filtered = np.where((fl & F_FILTERED) != 0, length, 0)
        assert not (started & ~arrived).any(), "a started occurrence never arrived"
        assert not ((emitted > 0) & ~started).any(), "emitted tokens of an unstarted occurrence"
        assert not (started & ~((emitted > 0) | (added > 0))).any(), "a started occurrence emitted nothing"
        assert not fl[~arrived].any(), "flags on an occurrence id that never arrived"
        assert (length[arrived] >= 0).all()
        assert (((fl & ADDED) != 0) == (added > 0)).all(), "ADDED flag and marker counts disagree"
        spent = emitted + c["discarded"] + filtered
        assert (spent <= length).all(), "source tokens overspent"
        assert not (((fl & F_FILTERED) != 0) & started).any(), "a filtered occurrence started"
        assert (c["pass_index"] >= 0).all()
        totals["arrived"] += int(length[arrived].sum())
        totals["added"] += int(added.sum())
        totals["emitted"] += int(emitted.sum())
        totals["discarded"] += int(c["discarded"].astype(np.int64).sum())
        totals["filtered"] += int(filtered.sum())
        totals["filtered_n"] += int(((fl & F_FILTERED) != 0).sum())
        strata += np.bincount(stratum_index(length[arrived], self.boundaries), minlength=self.n_strata)
        if "first_inv" not in c:
            return 0
        inv = c["first_inv"]
        assert (inv[~started] == 0).all() and (inv >= 0).all()
        return int(inv[length > self.capacity].max(initial=0))

    @property
    def _n(self) -> int:
        return self._t.n

    def _slots(self, occ: Int64Array, what: str) -> Int64Array:
        """The table slots of ``occ``, or the error naming the first one that never arrived."""
        s = self._t.slots(occ)
        bad = s < 0
        if not bad.any():
            bad = (self._t.flags[s] & ARRIVED) == 0
        if bad.any():
            o = int(occ[np.argmax(bad)])
            raise InputError(f"inconsistent event stream: {what} for occurrence {o} before its Arrival")
        return s

    def _filter(self, o: int, length: int) -> None:
        t = self._t
        s = int(self._slots(np.asarray([o], dtype=np.int64), "Filtered")[0])
        if t.flags[s] & (F_FILTERED | STARTED) or t.discarded[s]:
            raise InputError(f"inconsistent event stream: occurrence {o} filtered after it was "
                             "filtered, placed or discarded")
        if length != t.length[s]:
            raise InputError(f"inconsistent event stream: Filtered length {length} of occurrence {o} "
                             f"differs from its arrival length {int(t.length[s])}")
        t.flags[s] |= F_FILTERED
        self._filtered_tokens += length
        self._filtered_sources += 1

    def _account_arrivals(self, occ: Int64Array, src: Int64Array, pas: Int64Array,
                          length: Int64Array) -> None:
        kernels = self._kernels
        if kernels is not None and occ.size:  # one pass for the checks, the bounds, the sum and the strata
            low_occ, low_len, top_occ, top_len, chunk_sum = kernels.arrival_stats(occ, length)
        else:
            low_occ, low_len = int(occ.min(initial=0)), int(length.min(initial=0))
            top_occ, top_len, chunk_sum = int(occ.max(initial=-1)), int(length.max(initial=0)), -1
        if low_occ < 0:
            raise InputError(f"inconsistent event stream: negative occurrence id {low_occ}")
        if low_len < 0:
            i = int(np.argmax(length < 0))
            raise InputError(f"inconsistent event stream: Arrival of occurrence {int(occ[i])} "
                             f"has negative length {int(length[i])}")
        total = self._arrived_tokens + chunk_sum
        if chunk_sum < 0 or top_len * occ.size >= 1 << 63 or total > self.max_tokens:
            total = exact_total(self._arrived_tokens, occ, length, self.max_tokens)
        t = self._t
        before = t.n
        t.grow(top_occ + 1)
        t.widen(top_len)
        s = t.slots(occ)
        dup = -1 if kernels is None else kernels.arrivals(t, s, length)
        if kernels is None:
            dup = self._arrivals_numpy(s, length)
        if dup >= 0:
            t.w.truncate(max(before, t.w.base))
            raise InputError(f"inconsistent event stream: occurrence {int(occ[dup])} arrived twice")
        t.set_sources(s, occ, src)
        t.set_passes(s, pas)
        self._arrived_tokens = total
        if kernels is not None:
            self._strata_arrived += kernels.strata
        else:
            self._strata_arrived += np.bincount(stratum_index(length, self.boundaries),
                                                minlength=self.n_strata)
        self._protect(occ, length)

    def _arrivals_numpy(self, s: Int64Array, length: Int64Array) -> int:
        """Mark the slots ``s`` arrived; -1, or the position of one that arrived twice (nothing changed)."""
        t = self._t
        srt = np.sort(s)
        if (t.flags[s] & ARRIVED).any() or (srt[1:] == srt[:-1]).any():
            return next(i for i, o in enumerate(s.tolist()) if t.flags[o] & ARRIVED or o in s[:i])
        t.flags[s] |= ARRIVED
        t.length[s] = length
        return -1

    def _protect(self, occ: Int64Array, length: Int64Array) -> None:
        """Keep the ``B - 1`` largest keys ``(L, occurrence)`` of the long arrivals. O(chunk + B log B)."""
        long_mask = length > self.capacity
        if long_mask.any():
            self._long_arrivals += int(long_mask.sum())
            if self.min_buffer > 1:
                lens, occs = length[long_mask], occ[long_mask]
                if self._prot_len.size == self.min_buffer - 1:  # full: only keys above its least can enter
                    least_len, least_occ = int(self._prot_len[0]), int(self._prot_occ[0])
                    above = (lens > least_len) | ((lens == least_len) & (occs > least_occ))
                    if not above.any():
                        return
                    lens, occs = lens[above], occs[above]
                lens = np.concatenate([self._prot_len, lens])
                occs = np.concatenate([self._prot_occ, occs])
                keep = np.lexsort((occs, lens))[-(self.min_buffer - 1):]
                self._prot_len, self._prot_occ = lens[keep], occs[keep]

    def _account_markers(self, occ: Int64Array, markers: Int64Array) -> None:
        s = self._slots(occ, "BosAdded")
        self._t.add_markers(s, markers)
        self._added_bos += int(markers.sum())

    def _account_placements(self, row: Int64Array, off: Int64Array, occ: Int64Array, src: Int64Array,
                            start: Int64Array, ln: Int64Array, bos: npt.NDArray[np.bool_],
                            crop: npt.NDArray[np.bool_]) -> None:
        kernels = self._kernels
        t = self._t
        if kernels is not None:
            s = t.slots(occ)
            if kernels.placements(t, row, off, s, start, ln, bos, crop, self._targets_by_stratum, self._expo):
                emitted, added_n, long_emitted, first_long = kernels.take_sums()
                self._first_long_inv = max(self._first_long_inv, first_long)
                self._emitted_tokens += emitted
                self._emitted_added += added_n
                self._long_emitted += long_emitted
                if self.detail:
                    added = bos & ((t.flags[s] & ADDED) != 0)
                    rows = np.column_stack([row, off, occ, src, start, ln, bos, crop, added])
                    self._detail.keep("placements", rows.astype(np.int64))
                return
        R = self.capacity
        s = self._slots(occ, "Placement")
        fl = t.flags[s]
        if (fl & F_FILTERED).any():
            o = int(occ[np.argmax((fl & F_FILTERED) != 0)])
            raise InputError(f"inconsistent event stream: Placement of occurrence {o} after it was filtered")
        if (ln < 1).any() or (off < 0).any() or (off + ln > R).any() or (start < 0).any():
            i = int(np.argmax((ln < 1) | (off < 0) | (off + ln > R) | (start < 0)))
            raise InputError(f"inconsistent event stream: placement (row {int(row[i])}, offset "
                             f"{int(off[i])}, length {int(ln[i])}) does not fit a row of capacity {R}")
        L = t.length[s].astype(np.int64)
        added = bos & ((fl & ADDED) != 0)
        own = bos & ~added
        stop = start + ln - bos
        if (stop > L).any():
            i = int(np.argmax(stop > L))
            raise InputError(f"inconsistent event stream: placement of occurrence {int(occ[i])} "
                             f"reaches source offset {int(stop[i])} > length {int(L[i])}")
        np.add.at(t.emitted, s, (ln - added).astype(t.emitted.dtype))
        t.flags[s] = fl | STARTED
        has_target = (off > 0) | (ln > 1)
        first = first_target(row, off, R)
        if t.first_inv is not None:
            np.maximum.at(t.first_inv, s[has_target], FIRST_ORIGIN - first[has_target])
        long_first = first[has_target & (L > R)]
        if long_first.size:
            self._first_long_inv = max(self._first_long_inv, FIRST_ORIGIN - int(long_first.min()))
        self._emitted_tokens += int(ln.sum())
        self._emitted_added += int(added.sum())
        self._long_emitted += int(ln[L > R].sum())
        if crop.any():
            counts = self._crop_counts
            for k, v in zip(*(a.tolist() for a in distinct_counts(ln[crop])), strict=True):
                counts[k] = counts.get(k, 0) + v
        strat = stratum_index(L, self.boundaries)
        self._targets_by_stratum += np.bincount(strat, weights=ln - (off == 0), minlength=self.n_strata
                                                ).astype(np.int64)
        if self.detail:
            self._detail.keep("placements", np.column_stack([row, off, occ, src, start, ln, bos, crop, added]
                                                            ).astype(np.int64))
        # exposure: whole documents by a length histogram (folded in at the end), the others by
        # their text interval [start, stop) plus the moved own BOS at offset 0
        whole = (start == 0) & (stop == L) & ~bos
        if whole.any():
            counts = self._whole_counts
            for k, v in zip(*(a.tolist() for a in distinct_counts(L[whole])), strict=True):
                counts[k] = counts.get(k, 0) + v
            keep = ~whole
            start, stop, L, strat, own = start[keep], stop[keep], L[keep], strat[keep], own[keep]
        a = start
        if own.any():
            a = np.concatenate([a, np.zeros(int(own.sum()), dtype=np.int64)])
            stop = np.concatenate([stop, np.ones(int(own.sum()), dtype=np.int64)])
            L = np.concatenate([L, L[own]])
            strat = np.concatenate([strat, strat[own]])
        self._expose(a, stop, L, strat)

    def _expose(self, a: Int64Array, b: Int64Array, L: Int64Array, strat: Int64Array) -> None:
        nb = self.bins
        edges = bin_edges(L, nb)
        lo, hi = edges[:, :-1], edges[:, 1:]
        cnt = np.minimum(b[:, None], hi) - np.maximum(a[:, None], lo)
        np.maximum(cnt, 0, out=cnt)
        idx = strat[:, None] * nb + np.arange(nb, dtype=np.int64)[None, :]
        self._expo += np.bincount(idx.ravel(), weights=cnt.ravel(), minlength=self.n_strata * nb
                                  ).astype(np.int64)

    def _account_discards(self, occ: Int64Array, src: Int64Array, start: Int64Array, ln: Int64Array) -> None:
        t = self._t
        added = None if self._kernels is None else self._kernels.discards(t, t.slots(occ), ln)
        if added is None:
            s = self._slots(occ, "Discard")
            if (ln < 0).any():
                raise InputError(f"inconsistent event stream: negative Discard length {int(ln.min())}")
            np.add.at(t.discarded, s, ln.astype(t.discarded.dtype))
            added = int(ln.sum())
        self._discarded_tokens += added
        if self.detail:
            self._detail.keep("discards", np.column_stack([occ, src, start, ln]).astype(np.int64))

    def _flush(self) -> None:
        def array(events: list[Any], width: int) -> Int64Array:
            return np.fromiter(chain.from_iterable(events), np.int64, width * len(events)).reshape(-1, width)

        a, ba, p, d = array(self._ar, 4), array(self._ba, 3), array(self._pl, 8), array(self._dc, 4)
        self._ar.clear()
        self._ba.clear()
        self._pl.clear()
        self._dc.clear()
        if self._series.marks:  # before the accounting: a mark is a state inside these pending events
            self._series.sample_marks(self._buffered_accounted(), self._prot_len, a[:, 3], ba[:, 2], p[:, 5],
                                      d[:, 3])
        if a.size:
            self._account_arrivals(a[:, 0], a[:, 1], a[:, 2], a[:, 3])
        if ba.size:
            self._account_markers(ba[:, 0], ba[:, 2])
        if p.size:
            self._account_placements(p[:, 0], p[:, 1], p[:, 2], p[:, 3], p[:, 4], p[:, 5],
                                     p[:, 6].astype(np.bool_), p[:, 7].astype(np.bool_))
        if d.size:
            self._account_discards(d[:, 0], d[:, 1], d[:, 2], d[:, 3])
        self._t.evict()

    # ------------------------------------------------------------------ the time series (by rows)

    def _new_row(self, row: int) -> None:
        """A placement starts a new row: mark a sample of the series there (every stride-th row)."""
        self._series.new_row(row, (len(self._ar), len(self._ba), len(self._pl), len(self._dc)))

    def _buffered_accounted(self) -> int:
        return (self._arrived_tokens + self._added_bos - self._emitted_tokens - self._discarded_tokens
                - self._filtered_tokens)

    def _protected_at(self, lengths: Int64Array, points: Sequence[int]) -> list[int]:
        """:func:`~packing_theory.audit.series.protected_at` on top of this ledger's protected lengths."""
        return protected_at(self._prot_len, lengths, points, self.capacity, self.min_buffer)

    def _fold_counts(self) -> None:
        """Move the compiled accounting's dense crop and whole-document histograms into the sparse
        ``length -> count`` dicts (the one representation the results read). O(R)."""
        if self._kernels is not None:
            self._kernels.take_counts(self._crop_counts, self._whole_counts)

    def _buffered_of(self, occ: Int64Array) -> Int64Array:
        """Source tokens buffered at the horizon for each of ``occ``."""
        i = np.searchsorted(self._buf_occ, occ)
        i = np.minimum(i, max(self._buf_occ.size - 1, 0))
        hit = (self._buf_occ.size > 0) & (self._buf_occ[i] == occ) if self._buf_occ.size else np.zeros(
            occ.size, np.bool_)
        return np.where(hit, self._buf_amt[i] if self._buf_amt.size else 0, 0).astype(np.int64)


def exact_total(before: int, occ: Int64Array, length: Int64Array, limit: int) -> int:
    """``before`` plus the arrived ``length`` (exact), or a ``ValueError`` past ``limit``.

    The ledgers keep per-stratum sums in float64 and per-source counts in
    int64; both are exact only below :data:`MAX_EXACT_TOKENS`. The error names
    the first arrival that crosses ``limit``. O(n), in numpy unless refused.
    """
    total = before + exact_sum(length)
    if total <= limit:
        return total
    running, i = before, 0
    for n in length.tolist():  # the refusal path: find the first arrival past the range
        running += n
        if running > limit:
            break
        i += 1
    raise InputError(f"token total beyond the ledger's exact range: arrivals up to occurrence "
                     f"{int(occ[i])} (length {int(length[i])}) hold more than {limit:,} "
                     "tokens (per-source counts are int64, per-stratum sums float64); audit fewer "
                     "tokens")
