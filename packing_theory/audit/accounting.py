"""The :class:`~packing_theory.audit.ledger.Ledger`'s chunk accounting: events in columns -> the table.

:class:`ChunkAccounts` holds every accumulator of a ledger (the per-occurrence
:class:`~packing_theory.audit.table.SourceTable`, the running token totals,
the protected set, the exposure counts, the detail rows) and the numpy
reductions that account one chunk of arrivals, markers, placements or
discards at a time. :class:`~packing_theory.audit.ledger.Ledger` adds the
feeding (single events, batches, the time series) and the results on top.
Each accounting step validates the whole chunk before it changes anything,
so a refused chunk leaves the accumulators as they were.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct_counts
from ..engine.batches import ARRIVAL, DISCARD, PLACEMENT, EventBatch
from ..engine.events import Arrival, BosAdded, Discard, Horizon, Placement, first_target
from ..errors import InputError, InputTypeError
from ..lengths import INT64_MAX, exact_sum
from .exposure import bin_edges
from .results import Aggregates, SeriesSample
from .strata import STRATA_BOUNDARIES, check_boundaries, stratum_index
from .table import ADDED, ARRIVED, FIRST_ORIGIN, STARTED, SourceTable
from .table import FILTERED as F_FILTERED

if TYPE_CHECKING:
    from .compiled import LedgerKernels

__all__ = ["MAX_EXACT_TOKENS", "ChunkAccounts", "exact_total"]

MAX_EXACT_TOKENS = 1 << 53
"""Arrived tokens a :class:`~packing_theory.audit.ledger.Ledger` accounts exactly (per-source columns are
int64 and per-stratum sums float64, exact up to 2**53); past it the ledger refuses with one line."""

Int64Array = npt.NDArray[np.int64]

_CHUNK = 8192
_MAX_SERIES = 1024


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
    ) -> None:
        for name, value, lo in (("capacity", capacity, 2), ("min_buffer", min_buffer, 1),
                                ("exposure_bins", exposure_bins, 1), ("chunk", chunk, 1)):
            check_int(name, value, lo)
        if spill is not None and not detail:
            raise InputError(f"spill={os.fspath(spill)!r} needs detail=True (it spills the detail rows)")
        self.capacity = int(capacity)
        self.min_buffer = int(min_buffer)
        self.policy = str(policy)
        self.detail = bool(detail)
        self.spill = None if spill is None else Path(spill)
        if self.spill is not None and self.spill.suffix != ".npz":
            self.spill = self.spill.with_name(self.spill.name + ".npz")
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
        self._t = SourceTable(keep_first_targets)
        if occurrences_hint is not None:  # zero pages: committed only as occurrences arrive
            self._t.grow(check_int("occurrences_hint", occurrences_hint, 0))
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
        self._series: list[SeriesSample] = []
        self._series_stride = 1
        self._row: int | None = None  # the row of the last placement
        self._rows_started = 0  # rows begun so far (the series' clock)
        self._marks: list[tuple[int, int, int, int, int]] = []  # (row j, pending ar, ba, pl, dc) to sample
        self._exhausted_at_row: int | None = None
        self._horizon: Horizon | None = None
        self._buf_occ = np.zeros(0, dtype=np.int64)  # occurrences buffered at the horizon (sorted)
        self._buf_amt = np.zeros(0, dtype=np.int64)  # their buffered source tokens
        self._buffered_tokens = 0
        self._buffered_added = 0
        self._result: Aggregates | None = None
        self._detail_pl: list[Int64Array] = []
        self._detail_dc: list[Int64Array] = []
        self._detail_cache: tuple[Int64Array, Int64Array] | None = None
        self._spill_files: dict[str, Any] = {}
        self._kernels: LedgerKernels | None = None
        if compiled:
            from .compiled import LedgerKernels

            self._kernels = LedgerKernels(self.capacity, self.boundaries, self.bins)

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert the ledger's internal invariants over the events accounted so far.

        Pending (not yet flushed) events are not included; tests call this
        after every event and after the Horizon.
        """
        self._fold_counts()
        t = self._t
        n, cap = t.n, t.cap
        assert 0 <= n <= cap
        for name in SourceTable._FIXED + SourceTable._LAZY:
            col = getattr(t, name)
            assert col is None or col.size == cap, name
        fl = t.flags[:n]
        arrived, started = (fl & ARRIVED) != 0, (fl & STARTED) != 0
        emitted = t.emitted[:n].astype(np.int64)
        length = t.length[:n].astype(np.int64)
        added = np.zeros(n, np.int64) if t.added is None else t.added[:n].astype(np.int64)
        filtered = np.where((fl & F_FILTERED) != 0, length, 0)
        assert not (started & ~arrived).any(), "a started occurrence never arrived"
        assert not ((emitted > 0) & ~started).any(), "emitted tokens of an unstarted occurrence"
        assert not (started & ~((emitted > 0) | (added > 0))).any(), "a started occurrence emitted nothing"
        assert not fl[~arrived].any(), "flags on an occurrence id that never arrived"
        assert int(length[arrived].sum()) == self._arrived_tokens
        assert (length[arrived] >= 0).all()
        assert int(added.sum()) == self._added_bos
        assert (((fl & ADDED) != 0) == (added > 0)).all(), "ADDED flag and marker counts disagree"
        assert int(emitted.sum()) + self._emitted_added == self._emitted_tokens
        assert int(t.discarded[:n].astype(np.int64).sum()) == self._discarded_tokens
        assert int(filtered.sum()) == self._filtered_tokens
        assert int(((fl & F_FILTERED) != 0).sum()) == self._filtered_sources
        spent = emitted + t.discarded[:n] + filtered
        assert (spent <= length).all(), "source tokens overspent"
        assert not (((fl & F_FILTERED) != 0) & started).any(), "a filtered occurrence started"
        if t.first_inv is not None:
            assert (t.first_inv[:n][~started] == 0).all()
            assert (t.first_inv[:n] >= 0).all() and (t.first_inv[n:] == 0).all()
            long_inv = t.first_inv[:n][length > self.capacity]
            assert int(long_inv.max(initial=0)) == self._first_long_inv, "running first long target"
        if t.pass_index is not None:
            assert (t.pass_index[:n] >= 0).all()
        assert sum(k * v for k, v in self._crop_counts.items()) <= self._emitted_tokens
        assert all(1 <= k <= self.capacity and v >= 1 for k, v in self._crop_counts.items())
        expected_protected = min(self.min_buffer - 1, self._long_arrivals) if self.min_buffer > 1 else 0
        assert self._prot_len.size == self._prot_occ.size == expected_protected
        assert (self._prot_len > self.capacity).all()
        assert (t.length[self._prot_occ] == self._prot_len).all()
        assert (self._arrived_tokens + self._added_bos
                >= self._emitted_tokens + self._discarded_tokens + self._filtered_tokens)
        assert self._padding_tokens >= 0 and self._repeated_tokens >= 0
        assert all(0 <= c < self._chunk for c in self._carry)
        assert all(m[0] < self._rows_started for m in self._marks), "a mark of a row not yet started"
        assert not self._marks or self._pl, "marks pending without pending placements"
        assert all(a.targets <= b.targets for a, b in itertools.pairwise(self._series)), "series out of order"
        assert len(self._series) <= _MAX_SERIES, "series not thinned"
        if self._horizon is not None:
            assert not (self._pl or self._ar or self._dc or self._ba), "events pending after the Horizon"
            assert (self._arrived_tokens + self._added_bos
                    == self._emitted_tokens + self._discarded_tokens + self._filtered_tokens
                    + self._buffered_tokens)
            assert int(self._buf_amt.sum()) + self._buffered_added == self._buffered_tokens
            assert (np.diff(self._buf_occ) > 0).all()

    @property
    def _n(self) -> int:
        return self._t.n

    def _filter(self, o: int, length: int) -> None:
        t = self._t
        self._known(np.asarray([o], dtype=np.int64), "Filtered")
        if t.flags[o] & (F_FILTERED | STARTED) or t.discarded[o]:
            raise InputError(f"inconsistent event stream: occurrence {o} filtered after it was "
                             "filtered, placed or discarded")
        if length != t.length[o]:
            raise InputError(f"inconsistent event stream: Filtered length {length} of occurrence {o} "
                             f"differs from its arrival length {int(t.length[o])}")
        t.flags[o] |= F_FILTERED
        self._filtered_tokens += length
        self._filtered_sources += 1

    def _known(self, occ: Int64Array, what: str) -> None:
        bad = (occ < 0) | (occ >= self._t.n)
        if not bad.any():
            bad = (self._t.flags[occ] & ARRIVED) == 0
        if bad.any():
            o = int(occ[np.argmax(bad)])
            raise InputError(f"inconsistent event stream: {what} for occurrence {o} before its Arrival")

    def _account_arrivals(self, occ: Int64Array, src: Int64Array, pas: Int64Array,
                          length: Int64Array) -> None:
        kernels = self._kernels
        if kernels is not None and occ.size:  # one pass for the checks, the bounds and the sum
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
        top = top_occ + 1
        t.grow(top)
        if kernels is not None:
            t.widen(top_len)
            dup = kernels.arrivals(t, occ, length)
            if dup >= 0:
                raise InputError(f"inconsistent event stream: occurrence {int(occ[dup])} arrived twice")
        else:
            self._arrivals_numpy(occ, length)
        t.n = max(t.n, top)
        t.set_sources(occ, src)
        t.set_passes(occ, pas)
        self._arrived_tokens = total
        self._protect(occ, length)

    def _arrivals_numpy(self, occ: Int64Array, length: Int64Array) -> None:
        t = self._t
        srt = np.sort(occ)
        if (t.flags[occ] & ARRIVED).any() or (srt[1:] == srt[:-1]).any():
            dup = next(int(o) for i, o in enumerate(occ) if t.flags[o] & ARRIVED or o in occ[:i])
            raise InputError(f"inconsistent event stream: occurrence {dup} arrived twice")
        t.widen(int(length.max()))
        t.flags[occ] |= ARRIVED
        t.length[occ] = length

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
        self._known(occ, "BosAdded")
        self._t.add_markers(occ, markers)
        self._added_bos += int(markers.sum())

    def _account_placements(self, row: Int64Array, off: Int64Array, occ: Int64Array, src: Int64Array,
                            start: Int64Array, ln: Int64Array, bos: npt.NDArray[np.bool_],
                            crop: npt.NDArray[np.bool_]) -> None:
        kernels = self._kernels
        if kernels is not None and kernels.placements(self._t, row, off, occ, start, ln, bos, crop,
                                                      self._targets_by_stratum, self._expo):
            emitted, added_n, long_emitted, first_long = kernels.take_sums()
            self._first_long_inv = max(self._first_long_inv, first_long)
            self._emitted_tokens += emitted
            self._emitted_added += added_n
            self._long_emitted += long_emitted
            if self.detail:
                added = bos & ((self._t.flags[occ] & ADDED) != 0)
                rows = np.column_stack([row, off, occ, src, start, ln, bos, crop, added])
                self._keep_detail("placements", rows.astype(np.int64))
            return
        R = self.capacity
        t = self._t
        self._known(occ, "Placement")
        fl = t.flags[occ]
        if (fl & F_FILTERED).any():
            o = int(occ[np.argmax((fl & F_FILTERED) != 0)])
            raise InputError(f"inconsistent event stream: Placement of occurrence {o} after it was filtered")
        if (ln < 1).any() or (off < 0).any() or (off + ln > R).any() or (start < 0).any():
            i = int(np.argmax((ln < 1) | (off < 0) | (off + ln > R) | (start < 0)))
            raise InputError(f"inconsistent event stream: placement (row {int(row[i])}, offset "
                             f"{int(off[i])}, length {int(ln[i])}) does not fit a row of capacity {R}")
        L = t.length[occ].astype(np.int64)
        added = bos & ((fl & ADDED) != 0)
        own = bos & ~added
        stop = start + ln - bos
        if (stop > L).any():
            i = int(np.argmax(stop > L))
            raise InputError(f"inconsistent event stream: placement of occurrence {int(occ[i])} "
                             f"reaches source offset {int(stop[i])} > length {int(L[i])}")
        np.add.at(t.emitted, occ, (ln - added).astype(t.emitted.dtype))
        t.flags[occ] = fl | STARTED
        has_target = (off > 0) | (ln > 1)
        first = first_target(row, off, R)
        if t.first_inv is not None:
            np.maximum.at(t.first_inv, occ[has_target], FIRST_ORIGIN - first[has_target])
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
            self._keep_detail("placements", np.column_stack([row, off, occ, src, start, ln, bos, crop, added]
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
        added = None if self._kernels is None else self._kernels.discards(self._t, occ, ln)
        if added is not None:
            self._discarded_tokens += added
            if self.detail:
                self._keep_detail("discards", np.column_stack([occ, src, start, ln]).astype(np.int64))
            return
        self._known(occ, "Discard")
        if (ln < 0).any():
            raise InputError(f"inconsistent event stream: negative Discard length {int(ln.min())}")
        t = self._t
        np.add.at(t.discarded, occ, ln.astype(t.discarded.dtype))
        self._discarded_tokens += int(ln.sum())
        if self.detail:
            self._keep_detail("discards", np.column_stack([occ, src, start, ln]).astype(np.int64))

    def _keep_detail(self, kind: str, rows: Int64Array) -> None:
        if self.spill is None:
            (self._detail_pl if kind == "placements" else self._detail_dc).append(rows)
            return
        f = self._spill_files.get(kind)
        if f is None:
            f = self._spill_files[kind] = open(self._spill_raw(kind), "wb")  # noqa: SIM115 - closed at the Horizon
        rows.tofile(f)

    def _spill_raw(self, kind: str) -> Path:
        assert self.spill is not None
        return self.spill.with_name(f"{self.spill.name}.{kind}.raw")

    def _write_spill(self) -> None:
        assert self.spill is not None
        widths = {"placements": 9, "discards": 4}
        arrays: dict[str, Any] = {}
        for f in self._spill_files.values():
            f.close()
        for kind, w in widths.items():
            raw = self._spill_raw(kind)
            if raw.exists() and raw.stat().st_size:
                arrays[kind] = np.memmap(raw, dtype=np.int64, mode="r").reshape(-1, w)
            else:
                arrays[kind] = np.zeros((0, w), dtype=np.int64)
        np.savez(self.spill, **arrays)
        for kind in widths:
            self._spill_raw(kind).unlink(missing_ok=True)
        self._spill_files.clear()

    def _flush(self) -> None:
        def array(events: list[Any], width: int) -> Int64Array:
            return np.fromiter(chain.from_iterable(events), np.int64, width * len(events)).reshape(-1, width)

        a, ba, p, d = array(self._ar, 4), array(self._ba, 3), array(self._pl, 8), array(self._dc, 4)
        self._ar.clear()
        self._ba.clear()
        self._pl.clear()
        self._dc.clear()
        if self._marks:  # before the accounting: a mark is a state inside these pending events
            self._sample_marks(a[:, 3], ba[:, 2], p[:, 5], d[:, 3])
        if a.size:
            self._account_arrivals(a[:, 0], a[:, 1], a[:, 2], a[:, 3])
        if ba.size:
            self._account_markers(ba[:, 0], ba[:, 2])
        if p.size:
            self._account_placements(p[:, 0], p[:, 1], p[:, 2], p[:, 3], p[:, 4], p[:, 5],
                                     p[:, 6].astype(np.bool_), p[:, 7].astype(np.bool_))
        if d.size:
            self._account_discards(d[:, 0], d[:, 1], d[:, 2], d[:, 3])

    # ------------------------------------------------------------------ the time series (by rows)

    def _new_row(self, row: int) -> None:
        """A placement starts a new row: mark a sample of the series there (every stride-th row)."""
        self._row = row
        j = self._rows_started
        self._rows_started = j + 1
        if j % self._series_stride == 0:
            self._marks.append((j, len(self._ar), len(self._ba), len(self._pl), len(self._dc)))

    def _buffered_accounted(self) -> int:
        return (self._arrived_tokens + self._added_bos - self._emitted_tokens - self._discarded_tokens
                - self._filtered_tokens)

    def _protected_at(self, lengths: Int64Array, points: Sequence[int]) -> list[int]:
        """The protected-set mass once the first ``n`` of ``lengths`` have arrived (on top of the accounted
        ones), for each ``n`` of ``points``: the sum of the ``B - 1`` largest long lengths so far (a sum,
        so ties do not matter). A few points: one ``np.partition`` each, O(B + long arrivals); many:
        one heap walk, O(B + long arrivals × log B)."""
        k = self.min_buffer - 1
        idx = np.flatnonzero(lengths > self.capacity)
        longs = lengths[idx]
        counts = np.searchsorted(idx, np.asarray(points, dtype=np.int64)).tolist()
        if k <= 0:
            return [0] * len(counts)
        if len(counts) * 16 < longs.size:
            out = []
            for m in counts:
                vals = np.concatenate([self._prot_len, longs[:m]])
                top = vals if vals.size <= k else np.partition(vals, vals.size - k)[vals.size - k:]
                out.append(int(top.sum()))
            return out
        heap = self._prot_len.tolist()
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

    def _sample_marks(self, ar: Int64Array, ba: Int64Array, pl: Int64Array, dc: Int64Array) -> None:
        """Turn the marks taken in the pending events into samples (exact: prefix sums of each kind)."""
        def prefix(x: Int64Array) -> Int64Array:
            return np.concatenate([np.zeros(1, np.int64), np.cumsum(x, dtype=np.int64)])

        base, R = self._buffered_accounted(), self.capacity
        ca, cb, cp, cd = prefix(ar), prefix(ba), prefix(pl), prefix(dc)
        protected = self._protected_at(ar, [m[1] for m in self._marks])
        for (j, na, nb, npl, nd), prot in zip(self._marks, protected, strict=True):
            buffered = base + int(ca[na]) + int(cb[nb]) - int(cp[npl]) - int(cd[nd])  # exact (Python ints)
            self._series.append(SeriesSample(j * (R - 1), buffered, prot))
        self._marks.clear()
        self._thin()

    def _sample_batch(self, b: EventBatch, pos: dict[int, Int64Array], filt: Int64Array,
                      ba_pos: Int64Array) -> None:
        """The samples at the rows a batch starts (the same points as its events fed one by one)."""
        rows = b.placement.row
        if not rows.size:
            return
        first = np.ones(1, np.bool_) if self._row is None else np.asarray([rows[0] != self._row])
        starts = np.flatnonzero(np.concatenate([first, rows[1:] != rows[:-1]]))
        j = self._rows_started + np.arange(starts.size, dtype=np.int64)
        self._rows_started += int(starts.size)
        self._row = int(rows[-1])
        self._thin(j)
        keep = j % self._series_stride == 0
        if not keep.any():
            return
        at = pos[PLACEMENT][starts[keep]]  # batch positions of the marked placements
        delta = np.zeros(b.kinds.size + 1, np.int64)
        delta[pos[ARRIVAL] + 1] = b.arrival.length
        delta[ba_pos + 1] = b.bos_added.markers
        delta[pos[PLACEMENT] + 1] = -b.placement.length
        delta[pos[DISCARD] + 1] = -b.discard.length
        delta[filt + 1] = -b.filtered.length
        mass = self._buffered_accounted() + np.cumsum(delta)
        arrived = np.searchsorted(pos[ARRIVAL], at).tolist()
        protected = self._protected_at(b.arrival.length, arrived)
        R = self.capacity
        for jj, p, prot in zip(j[keep].tolist(), at.tolist(), protected, strict=True):
            self._series.append(SeriesSample(jj * (R - 1), int(mass[p]), prot))

    def _thin(self, pending: Int64Array | None = None) -> None:
        """Past :data:`_MAX_SERIES` samples keep the rows that are multiples of twice the stride, counting
        the ``pending`` rows about to be sampled (so the samples it would drop are never built)."""
        if pending is None and len(self._series) < _MAX_SERIES:
            return
        step = self.capacity - 1
        rows = np.asarray([s.targets // step for s in self._series], dtype=np.int64)
        todo = np.zeros(0, np.int64) if pending is None else pending
        while np.count_nonzero(rows % self._series_stride == 0) + np.count_nonzero(
                todo % self._series_stride == 0) >= _MAX_SERIES:
            self._series_stride *= 2
        stride = self._series_stride
        self._series = [s for s, r in zip(self._series, rows.tolist(), strict=True) if r % stride == 0]

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
