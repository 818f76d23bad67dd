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
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct
from ..engine.batches import ARRIVAL, DISCARD, FILTERED, PLACEMENT, EventBatch, EventItem
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
    span_columns,
)
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer
from ..errors import InputError, InputTypeError
from ..lengths import exact_sum
from .accounting import MAX_EXACT_TOKENS, ChunkAccounts, exact_total
from .exposure import exposure_profile, whole_exposure
from .histograms import counts_median
from .results import (
    Aggregates,
    CoverageRow,
    EmittedInterval,
    MassPartition,
    ProtectedMass,
    SeriesSample,
    SourceRecord,
    StratumRow,
)
from .strata import stratum_index, stratum_labels
from .table import ADDED, ARRIVED, BLOCK, FIRST_ORIGIN, STARTED, table_aggregates
from .table import FILTERED as F_FILTERED

__all__ = ["MAX_EXACT_TOKENS", "Ledger", "audit_events", "audit_lengths", "counts_median", "exact_total"]

Int64Array = npt.NDArray[np.int64]

_ARRAY_KEYS = ("arrived", "source", "pass_index", "length", "stratum", "started", "emitted", "discarded",
               "filtered", "buffered", "added_bos", "first_target")

# --------------------------------------------------------------------------- the ledger


class Ledger(ChunkAccounts):
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
        compiled: account chunks and reduce the table with the numba kernels
            (:mod:`packing_theory.audit.compiled`; the ``fast`` extra), same results.
        keep_first_targets: keep each occurrence's first target (8 bytes per
            occurrence: :meth:`first_targets`, ``first_target`` in :meth:`arrays`);
            ``False`` keeps only the first over-capacity target the aggregates report.
        occurrences_hint: the occurrences expected (e.g. documents x passes):
            the table is sized for them at once (zero pages, committed only as
            occurrences arrive) instead of grown by doubling and copying.

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
    one-pass stream without added BOS markers, 13
    (:data:`~packing_theory.audit.table.BYTES_PER_OCCURRENCE`) with
    ``keep_first_targets=False`` (see :mod:`packing_theory.audit.table`), plus O(chunk + B + R);
    ``detail=True`` adds O(placements + discards) unless spilled.

    Exactness: every total is exact or refused. Arrivals whose tokens sum past
    :data:`MAX_EXACT_TOKENS` (or past ``2**63 / (exposure_bins + 1)`` for very
    many bins) raise ``ValueError`` naming the occurrence, instead of a
    wrapped-around count.
    """

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
            if ev.row != self._row:
                self._new_row(ev.row)
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
            if ev.row != self._row:
                self._new_row(ev.row)
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

    # ------------------------------------------------------------------ batches

    def _batch(self, b: EventBatch) -> None:
        """Account a batch in the segments where the single-event path would flush (same series)."""
        if self._pl or self._ar or self._dc or self._ba:
            self._carry = [len(self._ar), len(self._pl), len(self._dc)]
            self._flush()
        kinds = b.kinds
        pos = {k: np.flatnonzero(kinds == k) for k in (ARRIVAL, PLACEMENT, DISCARD)}
        filt = np.flatnonzero(kinds == FILTERED)
        ba_pos = np.flatnonzero(kinds == 1)
        self._sample_batch(b, pos, filt, ba_pos)
        end = int(kinds.size) - (1 if b.horizon is not None else 0)
        bulk = self._filtered_in_bulk(b, pos[ARRIVAL], filt)
        p = 0
        fi = filt.size if bulk else 0
        while p < end:
            stops = []
            for j, k in enumerate((ARRIVAL, PLACEMENT, DISCARD)):
                at = int(np.searchsorted(pos[k], p)) + self._chunk - self._carry[j] - 1
                stops.append(int(pos[k][at]) if at < pos[k].size else end)
            trigger = min(stops)
            nf = int(filt[fi]) if fi < filt.size else end
            if nf < trigger:  # a Filtered event: flush what precedes it, then filter it
                self._segment(b, p, nf, pos, ba_pos)
                self._carry = [0, 0, 0]
                i = int(np.searchsorted(filt, nf))
                self._filter(int(b.filtered.occurrence[i]), int(b.filtered.length[i]))
                fi += 1
                p = nf + 1
            elif trigger < end:
                self._segment(b, p, trigger + 1, pos, ba_pos)
                self._carry = [0, 0, 0]
                p = trigger + 1
            else:
                carry = [self._carry[j] + int(np.searchsorted(pos[k], end) - np.searchsorted(pos[k], p))
                         for j, k in enumerate((ARRIVAL, PLACEMENT, DISCARD))]
                self._segment(b, p, end, pos, ba_pos)
                self._carry = carry
                p = end
        if bulk and filt.size:
            self._t.flags[b.filtered.occurrence] |= F_FILTERED
            self._filtered_tokens += exact_sum(b.filtered.length)
            self._filtered_sources += int(filt.size)
        self._padding_tokens += int(b.padding.length.sum())
        self._repeated_tokens += int(b.repeat.length.sum())
        if (b.padding.length < 0).any() or (b.repeat.length < 1).any():
            raise InputError("inconsistent event stream: negative Padding or Repeat length < 1 in a batch")
        if b.exhausted.row.size and self._exhausted_at_row is None:
            self._exhausted_at_row = int(b.exhausted.row[0])
        if b.horizon is not None:
            self._carry = [0, 0, 0]
            self._finish(b.horizon)

    def _filtered_in_bulk(self, b: EventBatch, arrival_pos: Int64Array, filt: Int64Array) -> bool:
        """Whether the batch's Filtered events may be accounted after its other events, in bulk.

        They may when each is valid where it stands — its occurrence arrived
        before it (earlier, unfiltered, unstarted and undiscarded, or in this
        batch before it) with its length, it is filtered once, and nothing of
        it is placed, discarded or given a BOS marker in the batch — so that
        the event-by-event walk would account the same and raise nowhere
        earlier. Otherwise the walk stops at each of them (the same errors).
        """
        if not filt.size:
            return True
        f, t = b.filtered, self._t
        occ = f.occurrence
        if distinct(occ).size != occ.size or (occ < 0).any() or np.isin(occ, np.concatenate(
                (b.placement.occurrence, b.discard.occurrence, b.bos_added.occurrence))).any():
            return False
        old = occ < t.n
        o = occ[old]
        if ((t.flags[o] & ARRIVED) == 0).any() or (t.flags[o] & (F_FILTERED | STARTED)).any() or (
                t.discarded[o] != 0).any() or (t.length[o] != f.length[old]).any():
            return False
        a = b.arrival.occurrence
        order = np.argsort(a, kind="stable")
        k = np.searchsorted(a[order], occ[~old])
        if (k >= a.size).any():
            return False
        k = order[k]
        return bool((a[k] == occ[~old]).all() and (arrival_pos[k] < filt[~old]).all()
                    and (b.arrival.length[k] == f.length[~old]).all())

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

    def _finish(self, h: Horizon) -> None:
        self._horizon = h
        if self._exhausted_at_row is None and h.stop_reason == "exhausted":
            self._exhausted_at_row = h.rows  # stop mode: the replay ended at the failed refill
        if h.buffered:
            occ, _, _, ln, bos = span_columns(h.buffered)
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
        self._fold_counts()
        kernels = self._kernels
        first_long = FIRST_ORIGIN - self._first_long_inv if self._first_long_inv else None
        agg = None if kernels is None else kernels.reduce(self._t, self._buf_occ, self._buf_amt, first_long)
        if agg is None:
            agg = table_aggregates(self._t, self._buf_occ, self._buf_amt, self.boundaries, R)._replace(
                first_long=first_long)
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
            exposure=exposure_profile(labels, self.boundaries, agg.lengths, agg.length_counts,
                                       self._expo + whole_exposure(self._whole_counts, self.boundaries,
                                                                    self.bins).ravel(), self.bins),
            coverage=tuple(CoverageRow(labels[s], *agg.coverage[s]) for s in range(self.n_strata)),
            series=tuple(self._series),
            filtered_sources=self._filtered_sources,
        )
        return self._result

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
        """Per occurrence: target index of its first emitted target, ``-1`` if none. O(occurrences).

        Raises:
            InputError: the ledger was built with ``keep_first_targets=False``.
        """
        if self._t.first_inv is None:
            raise InputError("per-occurrence first targets need Ledger(keep_first_targets=True)")
        return self._first_target_block(0, self._n)

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Per-occurrence columns (available in both modes; index = occurrence id). O(occurrences) memory.

        Keys: ``arrived, source, pass_index, length, stratum, started, emitted,
        discarded, filtered, buffered, added_bos, first_target`` (``emitted``, ``discarded``
        and ``buffered`` count source tokens; ``buffered`` needs the Horizon;
        ``first_target`` only with ``keep_first_targets=True``). About 90 bytes per
        occurrence: to stream the table instead, use :meth:`array_blocks`.
        """
        return self._columns(0, self._n)

    @property
    def occurrences(self) -> int:
        """Occurrence ids accounted so far: one past the largest arrived (the length of :meth:`arrays`)."""
        return self._n

    def array_blocks(self, block: int = BLOCK, columns: Sequence[str] | None = None
                     ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """:meth:`arrays` in blocks of ``block`` occurrences: ``(first occurrence id, columns)`` pairs,
        in id order (nothing when no occurrence arrived); ``columns`` picks keys (default: all).
        Memory O(block) besides the table.

        Raises:
            InputError: ``block`` is not a positive int, or an unknown column.
        """
        block = check_int("block", block, 1)
        names = _ARRAY_KEYS if columns is None else tuple(columns)
        for name in names:
            if name not in _ARRAY_KEYS:
                raise InputError(f"columns must be among {', '.join(_ARRAY_KEYS)}; got {name!r}")
        for a in range(0, self._n, block):
            yield a, self._columns(a, min(self._n, a + block), names)

    def _columns(self, a: int, b: int, names: Sequence[str] = ()) -> dict[str, npt.NDArray[Any]]:
        t, n = self._t, b - a
        fl = t.flags[a:b]
        names = names or _ARRAY_KEYS
        out: dict[str, npt.NDArray[Any]] = {}

        def length() -> Int64Array:
            if "length" not in out:
                out["length"] = t.length[a:b].astype(np.int64)
            return out["length"]

        def buffered() -> Int64Array:
            col = np.zeros(n, np.int64)
            lo, hi = np.searchsorted(self._buf_occ, [a, b])
            col[self._buf_occ[lo:hi] - a] = self._buf_amt[lo:hi]
            return col

        make: dict[str, Callable[[], npt.NDArray[Any]]] = {
            "arrived": lambda: (fl & ARRIVED) != 0,
            "source": lambda: t.sources(a, b).copy(),
            "pass_index": lambda: (np.zeros(n, np.int64) if t.pass_index is None
                                   else t.pass_index[a:b].astype(np.int64)),
            "length": length,
            "stratum": lambda: stratum_index(length(), self.boundaries),
            "started": lambda: (fl & STARTED) != 0,
            "emitted": lambda: t.emitted[a:b].astype(np.int64),
            "discarded": lambda: t.discarded[a:b].astype(np.int64),
            "filtered": lambda: np.where((fl & F_FILTERED) != 0, length(), 0),
            "buffered": buffered,
            "added_bos": lambda: np.zeros(n, np.int64) if t.added is None else t.added[a:b].astype(np.int64),
            "first_target": lambda: self._first_target_block(a, b),
        }
        for name in names:
            if name == "first_target" and t.first_inv is None:
                continue
            out[name] = make[name]()
        return {k: out[k] for k in names if k in out}

    def _first_target_block(self, a: int, b: int) -> Int64Array:
        assert self._t.first_inv is not None
        inv = self._t.first_inv[a:b]
        return np.where(inv > 0, FIRST_ORIGIN - inv, -1).astype(np.int64)

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
        assert t.first_inv is not None  # detail=True keeps the first targets
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
    options = {"compiled": engine == "compiled", **(ledger_kwargs or {})}
    (agg,) = feed_all(packer.stream(lengths), Ledger.for_packer(packer, **options), progress=progress)
    return agg
