"""The :class:`Ledger`: per-source accounting of any packer's event stream (seed 000 §5.1, §6).

Seed 000 §6 asks a practical audit to record four quantities *separately*:

1. **token mass** — emitted, discarded and still buffered (:class:`MassPartition`);
2. **sources** — which original source occurrences have started at all
   (:attr:`Aggregates.started_sources`, :class:`ProtectedMass`);
3. **exposure** — which positions within each source were emitted
   (:class:`ExposureProfile`, :class:`CoverageRow`);
4. **the finite evaluation population** — which sources and length strata a
   budgeted evaluation score can contain at all (:class:`EvalPopulation`).

:class:`Ledger` consumes the event stream of *any* packer
(:mod:`packing_theory.engine.events`), one event or one
:class:`~packing_theory.engine.batches.EventBatch` at a time: it never looks at
a packer's internals. Per-occurrence state lives in the compact
:class:`~packing_theory.audit.table.SourceTable` (21 bytes per occurrence for
a one-pass ``discard`` stream); the aggregates are kept incrementally or
reduced in blocks at the end. ``detail=True`` additionally keeps every
placement and discard so that :meth:`Ledger.record` can return one source's
emitted intervals — in memory, or spilled to disk with ``spill=PATH``.

Length strata are those of :mod:`packing_theory.audit.strata`.

>>> from packing_theory import Packer, feed_all
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
>>> (agg,) = feed_all(packer.stream([5, 3, 9, 4]), Ledger.for_packer(packer))
>>> agg.mass.emitted_tokens, agg.mass.discarded_tokens, agg.mass.identity_holds
(16, 5, True)
>>> agg.started_sources, agg.crop_events, agg.first_over_capacity_target
(4, 1, 10)
"""


from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import (
    ARRIVAL,
    DISCARD,
    FILTERED,
    PLACEMENT,
    EventBatch,
    EventItem,
)
from ..engine.consumers import consumer_settings, feed_all
from ..engine.events import (
    Arrival,
    BosAdded,
    Discard,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
    first_target,
)
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer
from ..errors import InputError, InputTypeError
from ..lengths import INT64_MAX, exact_sum
from .results import (
    Aggregates,
    CoverageRow,
    EmittedInterval,
    ExposureProfile,
    MassPartition,
    ProtectedMass,
    SeriesSample,
    SourceRecord,
    StratumRow,
)
from .strata import STRATA_BOUNDARIES, check_boundaries, stratum_index, stratum_labels
from .table import ADDED, ARRIVED, FIRST_ORIGIN, STARTED, SourceTable, table_aggregates
from .table import FILTERED as F_FILTERED

__all__ = ["MAX_EXACT_TOKENS", "Ledger", "audit_events", "audit_lengths", "counts_median"]

MAX_EXACT_TOKENS = 1 << 53
"""Arrived tokens a :class:`Ledger` accounts exactly (per-source columns are int64 and
per-stratum sums float64, exact up to 2**53); past it the ledger refuses with one line."""

Int64Array = npt.NDArray[np.int64]

_CHUNK = 8192
_MAX_SERIES = 1024

# --------------------------------------------------------------------------- the ledger


class Ledger:
    """Per-source accounting of a placement event stream (any packer).

    Args:
        capacity: row capacity ``R``.
        min_buffer: ``B`` (defines the protected set; 1 gives an empty one).
        policy: a label for the report.
        detail: keep every placement and discard for :meth:`record` / :meth:`records`.
        boundaries: length-stratum boundaries (default :data:`STRATA_BOUNDARIES`).
        exposure_bins: relative-position bins of the exposure profile.
        chunk: events buffered per event kind before numpy accounting.
        spill: with ``detail=True``, a path: the detail rows are written to
            ``PATH`` (an ``.npz`` file, completed at the Horizon) instead of being
            held in memory; :meth:`record` reads them back on request.

    Build it from a packer with :meth:`for_packer`. Feed events with
    :meth:`feed` (one at a time, e.g. inside a loader) or a whole stream with
    :func:`~packing_theory.engine.consumers.feed_all`; both also take
    :class:`~packing_theory.engine.batches.EventBatch` values, which are
    accounted column by column with the same result (the time series is
    sampled at the same points for a stream of only events or only batches).
    Then call :meth:`result`.

    Complexity: amortised O(1) Python work per event (events are accounted in
    chunks of 8,192 with numpy; a batch costs O(1) Python work per chunk),
    O(B log B) per chunk for the protected set, O(bins) numpy work per
    placement for the exposure profile. Memory: 21 bytes per occurrence for a
    one-pass stream without added BOS markers (see
    :mod:`packing_theory.audit.table`), plus O(chunk + B + R);
    ``detail=True`` adds O(placements + discards) unless spilled.

    Exactness: every total is exact or refused. Arrivals whose tokens sum past
    :data:`MAX_EXACT_TOKENS` (or past ``2**63 / (exposure_bins + 1)`` for very
    many bins) raise ``ValueError`` naming the occurrence, instead of a
    wrapped-around count.
    """

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
        self.bins = int(exposure_bins)
        self._chunk = int(chunk)
        self.max_tokens = min(MAX_EXACT_TOKENS, INT64_MAX // (self.bins + 1))
        """Arrived tokens this ledger accounts exactly (see the class docstring)."""
        self._t = SourceTable()
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
        self._flushes = 0
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

    @classmethod
    def for_packer(cls, packer: object, **kwargs: Any) -> Ledger:
        """A ledger for the stream of ``packer``: ``R``, ``B`` and the policy label taken from it.

        ``packer``: an engine, a :class:`~packing_theory.engine.policies.PackerConfig`,
        or a peer (its row width and name; ``min_buffer=`` is then required,
        since a peer has no buffer size). ``kwargs`` go to the constructor and
        override what the packer says.
        """
        settings = consumer_settings(packer)
        min_buffer = settings.need_min_buffer(kwargs.pop("min_buffer", None), cls.__name__)
        return cls(settings.capacity, min_buffer, policy=kwargs.pop("policy", settings.label), **kwargs)

    @property
    def _n(self) -> int:
        return self._t.n

    # ------------------------------------------------------------------ feeding

    def feed(self, ev: EventItem) -> None:
        """Account one event (amortised O(1)) or one batch (O(its events) numpy work).

        The hot path: single events are collected per kind and accounted in
        chunks with numpy.
        """
        if self._horizon is not None:
            raise InputError(f"event after the Horizon: {ev!r}"[:300])
        if type(ev) is Placement:
            pl = self._pl
            pl.append(ev)
            if len(pl) >= self._chunk:
                self._flush()
        elif type(ev) is Arrival:
            ar = self._ar
            ar.append(ev)
            if len(ar) >= self._chunk:
                self._flush()
        elif type(ev) is Discard:
            dc = self._dc
            dc.append(ev)
            if len(dc) >= self._chunk:
                self._flush()
        else:
            self._other(ev)

    def _other(self, ev: EventItem) -> None:
        if isinstance(ev, BosAdded):
            self._ba.append(ev)
        elif isinstance(ev, Padding):
            if ev.length < 0:
                raise InputError(f"inconsistent event stream: negative Padding length in {ev!r}")
            self._padding_tokens += ev.length
        elif isinstance(ev, Repeat):
            if ev.length < 1:
                raise InputError(f"inconsistent event stream: Repeat length < 1 in {ev!r}")
            self._repeated_tokens += ev.length
        elif isinstance(ev, Filtered):
            self._flush()
            self._filter(ev.occurrence, ev.length)
        elif type(ev) is EventBatch:
            self._batch(ev)
        elif isinstance(ev, Placement):
            self._pl.append(Placement(*ev))
        elif isinstance(ev, Arrival):
            self._ar.append(Arrival(*ev))
        elif isinstance(ev, Discard):
            self._dc.append(Discard(*ev))
        elif isinstance(ev, Exhausted):
            if self._exhausted_at_row is None:
                self._exhausted_at_row = ev.row
        elif isinstance(ev, Horizon):
            self._flush()
            self._finish(ev)
        else:
            raise InputTypeError(f"events must be packing_theory events, got {type(ev).__name__} {ev!r}")

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

    # ------------------------------------------------------------------ batches

    def _batch(self, b: EventBatch) -> None:
        """Account a batch in the segments where the single-event path would flush (same series)."""
        if self._pl or self._ar or self._dc or self._ba:
            self._carry = [len(self._ar), len(self._pl), len(self._dc)]
            self._flush(sample=False)
        kinds = b.kinds
        pos = {k: np.flatnonzero(kinds == k) for k in (ARRIVAL, PLACEMENT, DISCARD)}
        filt = np.flatnonzero(kinds == FILTERED)
        ba_pos = np.flatnonzero(kinds == 1)
        end = int(kinds.size) - (1 if b.horizon is not None else 0)
        p = 0
        fi = 0
        while p < end:
            stops = []
            for j, k in enumerate((ARRIVAL, PLACEMENT, DISCARD)):
                at = int(np.searchsorted(pos[k], p)) + self._chunk - self._carry[j] - 1
                stops.append(int(pos[k][at]) if at < pos[k].size else end)
            trigger = min(stops)
            nf = int(filt[fi]) if fi < filt.size else end
            if nf < trigger:  # a Filtered event: flush what precedes it, then filter it
                self._segment(b, p, nf, pos, ba_pos)
                self._sample()
                self._carry = [0, 0, 0]
                i = int(np.searchsorted(filt, nf))
                self._filter(int(b.filtered.occurrence[i]), int(b.filtered.length[i]))
                fi += 1
                p = nf + 1
            elif trigger < end:
                self._segment(b, p, trigger + 1, pos, ba_pos)
                self._sample()
                self._carry = [0, 0, 0]
                p = trigger + 1
            else:
                carry = [self._carry[j] + int(np.searchsorted(pos[k], end) - np.searchsorted(pos[k], p))
                         for j, k in enumerate((ARRIVAL, PLACEMENT, DISCARD))]
                self._segment(b, p, end, pos, ba_pos)
                self._carry = carry
                p = end
        self._padding_tokens += int(b.padding.length.sum())
        self._repeated_tokens += int(b.repeat.length.sum())
        if (b.padding.length < 0).any() or (b.repeat.length < 1).any():
            raise InputError("inconsistent event stream: negative Padding or Repeat length < 1 in a batch")
        if b.exhausted.row.size and self._exhausted_at_row is None:
            self._exhausted_at_row = int(b.exhausted.row[0])
        if b.horizon is not None:
            self._sample()
            self._carry = [0, 0, 0]
            self._finish(b.horizon)

    def _segment(self, b: EventBatch, p: int, q: int, pos: dict[int, Int64Array], ba_pos: Int64Array) -> None:
        """Account events ``[p, q)`` of a batch (arrivals, markers, placements, discards)."""
        if q <= p:
            return

        def rows(positions: Int64Array) -> slice:
            lo, hi = np.searchsorted(positions, [p, q])
            return slice(int(lo), int(hi))

        r = rows(pos[ARRIVAL])
        if r.stop > r.start:
            a = b.arrival
            self._account_arrivals(a.occurrence[r], a.source[r], a.pass_index[r], a.length[r])
        r = rows(ba_pos)
        if r.stop > r.start:
            self._account_markers(b.bos_added.occurrence[r], b.bos_added.markers[r])
        r = rows(pos[PLACEMENT])
        if r.stop > r.start:
            c = b.placement
            self._account_placements(c.row[r], c.offset[r], c.occurrence[r], c.source[r], c.start[r],
                                     c.length[r], c.bos_inserted[r], c.crop[r])
        r = rows(pos[DISCARD])
        if r.stop > r.start:
            d = b.discard
            self._account_discards(d.occurrence[r], d.source[r], d.start[r], d.length[r])

    # ------------------------------------------------------------------ chunk accounting

    def _flush(self, sample: bool = True) -> None:
        if self._ar:
            a = np.fromiter(chain.from_iterable(self._ar), np.int64, 4 * len(self._ar)).reshape(-1, 4)
            self._ar.clear()
            self._account_arrivals(a[:, 0], a[:, 1], a[:, 2], a[:, 3])
        if self._ba:
            ba = np.fromiter(chain.from_iterable(self._ba), np.int64, 3 * len(self._ba)).reshape(-1, 3)
            self._ba.clear()
            self._account_markers(ba[:, 0], ba[:, 2])
        if self._pl:
            p = np.fromiter(chain.from_iterable(self._pl), np.int64, 8 * len(self._pl)).reshape(-1, 8)
            self._pl.clear()
            self._account_placements(p[:, 0], p[:, 1], p[:, 2], p[:, 3], p[:, 4], p[:, 5],
                                     p[:, 6].astype(np.bool_), p[:, 7].astype(np.bool_))
        if self._dc:
            d = np.fromiter(chain.from_iterable(self._dc), np.int64, 4 * len(self._dc)).reshape(-1, 4)
            self._dc.clear()
            self._account_discards(d[:, 0], d[:, 1], d[:, 2], d[:, 3])
        if sample:
            self._sample()

    def _known(self, occ: Int64Array, what: str) -> None:
        bad = (occ < 0) | (occ >= self._t.n)
        if not bad.any():
            bad = (self._t.flags[occ] & ARRIVED) == 0
        if bad.any():
            o = int(occ[np.argmax(bad)])
            raise InputError(f"inconsistent event stream: {what} for occurrence {o} before its Arrival")

    def _account_arrivals(self, occ: Int64Array, src: Int64Array, pas: Int64Array,
                          length: Int64Array) -> None:
        if (occ < 0).any():
            raise InputError(f"inconsistent event stream: negative occurrence id {int(occ.min())}")
        if (length < 0).any():
            i = int(np.argmax(length < 0))
            raise InputError(f"inconsistent event stream: Arrival of occurrence {int(occ[i])} "
                             f"has negative length {int(length[i])}")
        total = exact_total(self._arrived_tokens, occ, length, self.max_tokens)
        t = self._t
        top = int(occ.max()) + 1
        t.grow(top)
        srt = np.sort(occ)
        if (t.flags[occ] & ARRIVED).any() or (srt[1:] == srt[:-1]).any():
            dup = next(int(o) for i, o in enumerate(occ) if t.flags[o] & ARRIVED or o in occ[:i])
            raise InputError(f"inconsistent event stream: occurrence {dup} arrived twice")
        t.n = max(t.n, top)
        t.widen(int(length.max()))
        t.flags[occ] |= ARRIVED
        t.length[occ] = length
        t.set_sources(occ, src)
        t.set_passes(occ, pas)
        self._arrived_tokens = total
        long_mask = length > self.capacity
        if long_mask.any():
            self._long_arrivals += int(long_mask.sum())
            if self.min_buffer > 1:
                lens = np.concatenate([self._prot_len, length[long_mask]])
                occs = np.concatenate([self._prot_occ, occ[long_mask]])
                keep = np.lexsort((occs, lens))[-(self.min_buffer - 1):]
                self._prot_len, self._prot_occ = lens[keep], occs[keep]

    def _account_markers(self, occ: Int64Array, markers: Int64Array) -> None:
        self._known(occ, "BosAdded")
        self._t.add_markers(occ, markers)
        self._added_bos += int(markers.sum())

    def _account_placements(self, row: Int64Array, off: Int64Array, occ: Int64Array, src: Int64Array,
                            start: Int64Array, ln: Int64Array, bos: npt.NDArray[np.bool_],
                            crop: npt.NDArray[np.bool_]) -> None:
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
        np.maximum.at(t.first_inv, occ[has_target], FIRST_ORIGIN - first[has_target])
        self._emitted_tokens += int(ln.sum())
        self._emitted_added += int(added.sum())
        self._long_emitted += int(ln[L > R].sum())
        if crop.any():
            counts = self._crop_counts
            for k, v in zip(*(a.tolist() for a in np.unique(ln[crop], return_counts=True)), strict=True):
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
            for k, v in zip(*(a.tolist() for a in np.unique(L[whole], return_counts=True)), strict=True):
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
        edges = _bin_edges(L, nb)
        lo, hi = edges[:, :-1], edges[:, 1:]
        cnt = np.minimum(b[:, None], hi) - np.maximum(a[:, None], lo)
        np.maximum(cnt, 0, out=cnt)
        idx = strat[:, None] * nb + np.arange(nb, dtype=np.int64)[None, :]
        self._expo += np.bincount(idx.ravel(), weights=cnt.ravel(), minlength=self.n_strata * nb
                                  ).astype(np.int64)

    def _account_discards(self, occ: Int64Array, src: Int64Array, start: Int64Array, ln: Int64Array) -> None:
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

    def _sample(self) -> None:
        self._flushes += 1
        if self._flushes % self._series_stride:
            return
        R = self.capacity
        buffered = (self._arrived_tokens + self._added_bos - self._emitted_tokens - self._discarded_tokens
                    - self._filtered_tokens)
        self._series.append(SeriesSample(self._emitted_tokens // R * (R - 1), buffered,
                                         int(self._prot_len.sum())))
        if len(self._series) >= _MAX_SERIES:
            self._series = self._series[::2]
            self._series_stride *= 2

    def _finish(self, h: Horizon) -> None:
        self._horizon = h
        if self._exhausted_at_row is None and h.stop_reason == "exhausted":
            self._exhausted_at_row = h.rows  # stop mode: the replay ended at the failed refill
        if h.buffered:
            spans = np.array([(s.occurrence, s.start, s.length, s.bos_inserted) for s in h.buffered],
                             dtype=np.int64)
            occ, ln, bos = spans[:, 0], spans[:, 2], spans[:, 3].astype(np.bool_)
            self._known(occ, "buffered span")
            added = bos & ((self._t.flags[occ] & ADDED) != 0)
            self._buf_occ, inv = np.unique(occ, return_inverse=True)
            self._buf_amt = np.bincount(inv.ravel(), weights=ln - added).round().astype(np.int64)
            self._buffered_tokens = int(ln.sum())
            self._buffered_added = int(added.sum())
        R = self.capacity
        self._series.append(SeriesSample(h.rows * (R - 1), self._buffered_tokens, int(self._prot_len.sum())))
        if self.spill is not None:
            self._write_spill()

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

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert the ledger's internal invariants over the events accounted so far.

        Pending (not yet flushed) events are not included; tests call this
        after every event and after the Horizon.
        """
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
        assert (t.first_inv[:n][~started] == 0).all()
        assert (t.first_inv[:n] >= 0).all() and (t.first_inv[n:] == 0).all()
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
        if self._horizon is not None:
            assert not (self._pl or self._ar or self._dc or self._ba), "events pending after the Horizon"
            assert (self._arrived_tokens + self._added_bos
                    == self._emitted_tokens + self._discarded_tokens + self._filtered_tokens
                    + self._buffered_tokens)
            assert int(self._buf_amt.sum()) + self._buffered_added == self._buffered_tokens
            assert (np.diff(self._buf_occ) > 0).all()

    # ------------------------------------------------------------------ results

    @property
    def finished(self) -> bool:
        """Whether the Horizon event has been accounted."""
        return self._horizon is not None

    def result(self) -> Aggregates:
        """The :class:`Aggregates`; requires the Horizon event. O(occurrences) numpy work, cached."""
        if self._result is not None:
            return self._result
        h = self._horizon
        if h is None:
            raise InputError("result() needs the Horizon event: the events fed so far end without a "
                             "Horizon event (feed the whole event stream first)")
        R = self.capacity
        agg = table_aggregates(self._t, self._buf_occ, self._buf_amt, self.boundaries, R)
        labels = stratum_labels(self.boundaries)
        crops = self._crop_counts
        mass = MassPartition(self._arrived_tokens, self._added_bos, self._emitted_tokens, self._emitted_added,
                             self._discarded_tokens, self._buffered_tokens, self._buffered_added,
                             self._filtered_tokens, self._padding_tokens, self._repeated_tokens)
        los = [1, *(b + 1 for b in self.boundaries)]
        his: list[int | None] = [*self.boundaries, None]
        strata = tuple(
            StratumRow(labels[s], los[s], his[s], agg.counts[s], agg.started_by[s], agg.full_by[s],
                       agg.arrived_tokens[s], agg.emitted_tokens[s], agg.discarded_tokens[s],
                       agg.buffered_tokens[s], int(self._targets_by_stratum[s]), agg.filtered_sources[s],
                       agg.filtered_tokens[s])
            for s in range(self.n_strata))
        self._result = Aggregates(
            policy=self.policy,
            capacity=R,
            min_buffer=self.min_buffer,
            boundaries=self.boundaries,
            rows=h.rows,
            targets=h.rows * (R - 1),
            stop_reason=h.stop_reason,
            partial_row_tokens=h.partial_row_tokens,
            exhausted_at_row=self._exhausted_at_row,
            mass=mass,
            crop_events=sum(crops.values()),
            crop_bos_only=crops.get(1, 0),
            median_crop_prefix=counts_median(crops),
            arrived_sources=agg.arrived,
            started_sources=agg.started,
            fully_emitted_sources=agg.full,
            distinct_sources_started=agg.distinct_started,
            conservation_violations=agg.conservation_violations,
            over_capacity_emitted_fraction=(self._long_emitted / self._emitted_tokens
                                            if self._emitted_tokens else None),
            first_over_capacity_target=agg.first_long,
            protected=self._protected_mass(),
            strata=strata,
            exposure=_exposure_profile(labels, self.boundaries, agg.lengths, agg.length_counts,
                                       self._expo + _whole_exposure(self._whole_counts, self.boundaries,
                                                                    self.bins).ravel(), self.bins),
            coverage=tuple(CoverageRow(labels[s], *agg.coverage[s]) for s in range(self.n_strata)),
            series=tuple(self._series),
            filtered_sources=self._filtered_sources,
        )
        return self._result

    def _buffered_of(self, occ: Int64Array) -> Int64Array:
        """Source tokens buffered at the horizon for each of ``occ``."""
        i = np.searchsorted(self._buf_occ, occ)
        i = np.minimum(i, max(self._buf_occ.size - 1, 0))
        hit = (self._buf_occ.size > 0) & (self._buf_occ[i] == occ) if self._buf_occ.size else np.zeros(
            occ.size, np.bool_)
        return np.where(hit, self._buf_amt[i] if self._buf_amt.size else 0, 0).astype(np.int64)

    def _protected_mass(self) -> ProtectedMass:
        prot_occ = self._prot_occ
        prot_tokens = int(self._prot_len.sum())
        buffered = int(self._buffered_of(prot_occ).sum())
        return ProtectedMass(
            members=int(prot_occ.size),
            long_arrivals=self._long_arrivals,
            tokens=prot_tokens,
            started_members=int(((self._t.flags[prot_occ] & STARTED) != 0).sum()),
            buffered_tokens=buffered,
            share_of_arrived=prot_tokens / self._arrived_tokens if self._arrived_tokens else None,
            share_of_buffered=buffered / self._buffered_tokens if self._buffered_tokens else None,
        )

    # ------------------------------------------------------------------ per-source views

    def protected_occurrences(self) -> Int64Array:
        """The occurrence ids of the protected set K so far, by increasing key ``(L, arrival)``. O(B)."""
        return self._prot_occ.copy()

    def first_targets(self) -> Int64Array:
        """Per occurrence: target index of its first emitted target, ``-1`` if none. O(occurrences)."""
        inv = self._t.first_inv[: self._n]
        return np.where(inv > 0, FIRST_ORIGIN - inv, -1).astype(np.int64)

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Per-occurrence columns (available in both modes; index = occurrence id). O(occurrences) memory.

        Keys: ``arrived, source, pass_index, length, stratum, started, emitted,
        discarded, filtered, buffered, added_bos, first_target`` (``emitted``, ``discarded``
        and ``buffered`` count source tokens; ``buffered`` needs the Horizon).
        """
        t, n = self._t, self._n
        fl = t.flags[:n]
        length = t.length[:n].astype(np.int64)
        buffered = np.zeros(n, np.int64)
        buffered[self._buf_occ] = self._buf_amt
        return {
            "arrived": (fl & ARRIVED) != 0,
            "source": t.sources(0, n).copy(),
            "pass_index": (np.zeros(n, np.int64) if t.pass_index is None
                           else t.pass_index[:n].astype(np.int64)),
            "length": length,
            "stratum": stratum_index(length, self.boundaries),
            "started": (fl & STARTED) != 0,
            "emitted": t.emitted[:n].astype(np.int64),
            "discarded": t.discarded[:n].astype(np.int64),
            "filtered": np.where((fl & F_FILTERED) != 0, length, 0),
            "buffered": buffered,
            "added_bos": np.zeros(n, np.int64) if t.added is None else t.added[:n].astype(np.int64),
            "first_target": self.first_targets(),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`arrays` (and, with ``detail=True``, the detail rows) to an ``.npz`` file.

        Returns the path written (``.npz`` appended when missing).

        Per-source detail lives on disk from then on; load it with :func:`numpy.load`.
        """
        out = Path(path)
        if out.suffix != ".npz":
            out = out.with_name(out.name + ".npz")
        extra: dict[str, Any] = {}
        if self.detail and self._horizon is not None:
            pl, dc = self._detail_rows()
            extra = {"placements": pl, "discards": dc}
        np.savez(out, **{**self.arrays(), **extra})
        return out

    def _detail_rows(self) -> tuple[Int64Array, Int64Array]:
        if self.spill is not None:
            with np.load(self.spill) as z:
                return z["placements"], z["discards"]
        pl = np.concatenate(self._detail_pl) if self._detail_pl else np.zeros((0, 9), np.int64)
        dc = np.concatenate(self._detail_dc) if self._detail_dc else np.zeros((0, 4), np.int64)
        return pl, dc

    def _detail_index(self) -> tuple[Int64Array, Int64Array]:
        if not self.detail:
            raise InputError("per-source records need Ledger(detail=True)")
        if self._horizon is None:
            raise InputError("per-source records need the Horizon event: feed the whole stream first")
        if self._detail_cache is None:
            pl, _ = self._detail_rows()
            order = np.argsort(pl[:, 2], kind="stable")
            pl = pl[order]
            bounds = np.searchsorted(pl[:, 2], np.arange(self._n + 1))
            self._detail_cache = (pl, bounds)
        return self._detail_cache

    def record(self, occurrence: int) -> SourceRecord:
        """The ledger line of one occurrence (``detail=True`` only). O(its placements)."""
        pl, bounds = self._detail_index()
        check_int("occurrence", occurrence, 0)
        t = self._t
        if not (0 <= occurrence < self._n) or not t.flags[occurrence] & ARRIVED:
            raise InputError(f"occurrence {occurrence} never arrived")
        rows = pl[bounds[occurrence]: bounds[occurrence + 1]]
        intervals = tuple(EmittedInterval(int(r[4]), int(r[5]), int(r[0]), int(r[1]), bool(r[6]), bool(r[8]))
                          for r in rows)
        inv = int(t.first_inv[occurrence])
        occ = np.asarray([occurrence], dtype=np.int64)
        return SourceRecord(
            occurrence=int(occurrence),
            source=int(t.sources(occurrence, occurrence + 1)[0]),
            pass_index=0 if t.pass_index is None else int(t.pass_index[occurrence]),
            length=int(t.length[occurrence]),
            intervals=intervals,
            discarded=int(t.discarded[occurrence]),
            buffered=int(self._buffered_of(occ)[0]),
            added_bos=0 if t.added is None else int(t.added[occurrence]),
            first_target=FIRST_ORIGIN - inv if inv > 0 else None,
            filtered=int(t.length[occurrence]) if t.flags[occurrence] & F_FILTERED else 0,
        )

    def records(self) -> Iterator[SourceRecord]:
        """Every arrived occurrence's :class:`SourceRecord`, in arrival-id order (``detail=True``)."""
        self._detail_index()
        for occ in np.flatnonzero(self._t.flags[: self._n] & ARRIVED):
            yield self.record(int(occ))

    def by_source(self, source: int) -> list[SourceRecord]:
        """All occurrences (one per pass) of an original source id (``detail=True``). O(occurrences)."""
        self._detail_index()
        n = self._n
        occs = np.flatnonzero(((self._t.flags[:n] & ARRIVED) != 0) & (self._t.sources(0, n) == source))
        return [self.record(int(o)) for o in occs]


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


def counts_median(counts: dict[int, int]) -> float | None:
    """Median of a sparse histogram ``value -> count`` (the mean of the two middle values).

    >>> counts_median({3: 1, 10: 2}), counts_median({2: 1, 4: 1}), counts_median({})
    (10.0, 3.0, None)
    """
    total = sum(counts.values())
    if total == 0:
        return None
    keys = sorted(counts)
    cum = np.cumsum([counts[k] for k in keys])
    lo = keys[int(np.searchsorted(cum, (total - 1) // 2, side="right"))]
    hi = keys[int(np.searchsorted(cum, total // 2, side="right"))]
    return (lo + hi) / 2


def _bin_edges(L: Int64Array, bins: int) -> Int64Array:
    """Relative-position bin edges ``ceil(k L / bins)``, ``k = 0..bins``: shape ``(n, bins + 1)``."""
    k = np.arange(bins + 1, dtype=np.int64)
    return (k[None, :] * L[:, None] + bins - 1) // bins


def _whole_exposure(counts: dict[int, int], boundaries: tuple[int, ...], bins: int) -> Int64Array:
    """Exposure ``(strata, bins)`` of whole-document placements counted by length in ``counts``."""
    out = np.zeros((len(boundaries) + 1, bins), dtype=np.int64)
    if counts:
        uniq = np.fromiter(sorted(counts), np.int64, len(counts))
        n = np.fromiter((counts[int(k)] for k in uniq), np.int64, len(counts))
        edges = _bin_edges(uniq, bins)
        np.add.at(out, stratum_index(uniq, boundaries), (edges[:, 1:] - edges[:, :-1]) * n[:, None])
    return out


def _exposure_profile(labels: list[str], boundaries: tuple[int, ...], uniq: Int64Array, ucnt: Int64Array,
                      expo: Int64Array, bins: int) -> ExposureProfile:
    """The emitted counts ``expo`` against all positions of the arrived lengths (``uniq`` with counts)."""
    S = len(labels)
    edges = _bin_edges(uniq, bins)
    sizes = (edges[:, 1:] - edges[:, :-1]) * ucnt[:, None]
    positions = np.zeros((S, bins), dtype=np.int64)
    np.add.at(positions, stratum_index(uniq, boundaries), sizes)
    emitted = expo.reshape(S, bins)
    return ExposureProfile(bins, tuple(labels), tuple(tuple(int(v) for v in r) for r in emitted),
                           tuple(tuple(int(v) for v in r) for r in positions))


# --------------------------------------------------------------------------- convenience


def audit_events(events: Iterable[EventItem], capacity: int, min_buffer: int, **kwargs: Any) -> Aggregates:
    """Aggregate a whole stream of events and/or batches of any packer (``kwargs`` go to :class:`Ledger`).

    Raises:
        InputError: the stream ended without a Horizon event.
    """
    (agg,) = feed_all(events, Ledger(capacity, min_buffer, **kwargs))
    return agg


def audit_lengths(
    lengths: LengthsInput,
    config: PackerConfig | None = None,
    *,
    engine: Engine = "fast",
    progress: Callable[[int], None] | None = None,
    ledger_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Aggregates:
    """Replay ``lengths`` with one packer configuration and aggregate it.

    Keyword arguments are :class:`~packing_theory.engine.policies.PackerConfig` fields.
    The engine's own stream is fed (:meth:`~packing_theory.engine.base.PackingEngine.stream`:
    batches from the ``compiled`` engine, single events from the others).
    ``progress`` is called with the rows completed so far (:func:`feed_all`).

    >>> agg = audit_lengths([5, 3, 9, 4, 12, 2], capacity=8, min_buffer=2, refill=2, policy="continue")
    >>> agg.mass.discarded_tokens, agg.mass.identity_holds, agg.stop_reason
    (0, True, 'exhausted')
    """
    config = resolve_config(config, kwargs, PackerConfig)
    packer = make_packer(engine, config)
    (agg,) = feed_all(packer.stream(lengths), Ledger.for_packer(packer, **(ledger_kwargs or {})),
                      progress=progress)
    return agg
