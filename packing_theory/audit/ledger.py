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
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

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
    IntColumn,
    Padding,
    Placement,
    Repeat,
    span_columns,
)
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer
from ..errors import InputError, InputTypeError
from ..lengths import exact_sum
from .accounting import MAX_EXACT_TOKENS, exact_total
from .exposure import exposure_profile, whole_exposure
from .histograms import counts_median
from .occurrences import OccurrenceViews
from .results import Aggregates, CoverageRow, MassPartition, ProtectedMass, StratumRow
from .store import ColumnStore
from .strata import STRATA_BOUNDARIES, stratum_labels
from .table import ADDED, ARRIVED, FIRST_ORIGIN, STARTED, table_aggregates
from .table import FILTERED as F_FILTERED
from .window import WINDOW

__all__ = ["MAX_EXACT_TOKENS", "Ledger", "audit_events", "audit_lengths", "counts_median", "exact_total"]

Int64Array = npt.NDArray[np.int64]

_SPANS_AT_ONCE = 1 << 16
"""Buffered spans looked up at a time at the Horizon (bounds the ``int64`` ids and slots in flight)."""

# --------------------------------------------------------------------------- the ledger


class Ledger(OccurrenceViews):
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
            occurrences arrive) instead of grown by doubling and copying
            (without a store).
        store: where the per-occurrence table goes: ``None`` keeps it in memory;
            a :class:`~packing_theory.audit.store.ColumnStore` or a directory path
            keeps only a window of recent occurrences and the still-buffered
            older ones in memory and writes the settled records to the store
            (:mod:`packing_theory.audit.window`): memory O(window + buffer) at any
            corpus size, the same results.
        window: occurrence ids per chunk written to the store (default 2**20).

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
    placement for the exposure profile. Memory without a store: 21 bytes per
    occurrence for a one-pass stream without added BOS markers, 13
    (:data:`~packing_theory.audit.table.BYTES_PER_OCCURRENCE`) with
    ``keep_first_targets=False`` (see :mod:`packing_theory.audit.table`), plus
    O(chunk + B + R); with a store, those bytes go to disk and memory is
    O(window + buffered occurrences + chunk + B + R). ``detail=True`` adds
    O(placements + discards) unless spilled.

    Exactness: every total is exact or refused. Arrivals whose tokens sum past
    :data:`MAX_EXACT_TOKENS` (or past ``2**63 / (exposure_bins + 1)`` for very
    many bins) raise ``ValueError`` naming the occurrence, instead of a
    wrapped-around count.
    """

    def __init__(self, capacity: int, min_buffer: int, *, policy: str = "", detail: bool = False,
                 boundaries: Sequence[int] = STRATA_BOUNDARIES, exposure_bins: int = 20, chunk: int = 8192,
                 spill: str | os.PathLike[str] | None = None, compiled: bool = False,
                 keep_first_targets: bool = True, occurrences_hint: int | None = None,
                 store: ColumnStore | str | os.PathLike[str] | None = None, window: int = WINDOW) -> None:
        super().__init__(capacity, min_buffer, policy=policy, detail=detail, boundaries=boundaries,
                         exposure_bins=exposure_bins, chunk=chunk, spill=spill, compiled=compiled,
                         keep_first_targets=keep_first_targets, occurrences_hint=occurrences_hint,
                         store=store, window=window)

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
            if ev.row != self._series.row:
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
            if ev.row != self._series.row:
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
        self._series.sample_batch(b, pos, filt, ba_pos, self._buffered_accounted(), self._prot_len)
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
            slots = self._t.slots(b.filtered.occurrence)  # first: a slot lookup may move the columns
            self._t.flags[slots] |= F_FILTERED
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
        o = t.slots(occ[old])
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
        self._t.evict()

    def _finish(self, h: Horizon) -> None:
        self._horizon = h
        if self._exhausted_at_row is None and h.stop_reason == "exhausted":
            self._exhausted_at_row = h.rows  # stop mode: the replay ended at the failed refill
        if h.buffered:
            occ, _, _, ln, bos = span_columns(h.buffered)  # int32 or int64 columns
            # checked (and the added BOS markers read) a chunk at a time, the ids in int64 (slot arithmetic
            # cannot wrap): O(chunk) scratch, not an int64 copy of them all
            added = np.zeros(occ.size, np.bool_) if bos.any() else None
            for i in range(0, occ.size, _SPANS_AT_ONCE):
                part = slice(i, i + _SPANS_AT_ONCE)
                slots = self._slots(occ[part].astype(np.int64), "buffered span")
                if added is not None:
                    added[part] = bos[part] & ((self._t.flags[slots] & ADDED) != 0)
                del slots
            self._buffered_added = 0 if added is None else int(added.sum())
            # no added marker buffered (the usual case): the span lengths themselves, not a copy
            amount = ln - added if added is not None and self._buffered_added else ln
            self._buf_occ, self._buf_amt = _per_occurrence(occ, amount)
            self._buffered_tokens = int(ln.sum(dtype=np.int64))
        self._series.end(h.rows, self._buffered_tokens, int(self._prot_len.sum()))
        self._detail.close()
        self._t.finish()

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
        first_long = FIRST_ORIGIN - self._first_long_inv if self._first_long_inv else None
        agg = table_aggregates(self._t, self._buf_occ, self._buf_amt, self.boundaries, R,
                               counts=self._strata_arrived.tolist(), kernels=self._kernels
                               )._replace(first_long=first_long)
        labels = stratum_labels(self.boundaries)
        crops = self._crop_counts
        mass = MassPartition(self._arrived_tokens, self._added_bos, self._emitted_tokens, self._emitted_added,
                             self._discarded_tokens, self._buffered_tokens, self._buffered_added,
                             self._filtered_tokens, self._padding_tokens, self._repeated_tokens,
                             unused_capacity_tokens=self._padding_tokens)  # every unused position is padded
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
            series=tuple(self._series.samples),
            filtered_sources=self._filtered_sources,
        )
        return self._result

    def lengths_of(self, occurrences: Int64Array) -> Int64Array:
        """The arrived length of each of ``occurrences`` (any order; 0 for an id that never arrived), from
        memory or the store. O(k log k).

        >>> from packing_theory import Packer
        >>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
        >>> ledger = Ledger.for_packer(packer)
        >>> _ = feed_all(packer.stream([5, 3, 9, 4]), ledger)
        >>> ledger.lengths_of(np.array([2, 0, 7])).tolist()
        [9, 5, 0]
        """
        occ = np.asarray(occurrences, np.int64)
        out = np.zeros(occ.size, np.int64)
        known = (occ >= 0) & (occ < self._t.n)
        out[known] = self._t.get("length", occ[known])
        return out

    def _protected_mass(self) -> ProtectedMass:
        prot_occ = self._prot_occ
        prot_tokens = int(self._prot_len.sum())
        buffered = int(self._buffered_of(prot_occ).sum())
        return ProtectedMass(
            members=int(prot_occ.size),
            long_arrivals=self._long_arrivals,
            tokens=prot_tokens,
            started_members=int(((self._t.get("flags", prot_occ) & STARTED) != 0).sum()),
            buffered_tokens=buffered,
            share_of_arrived=prot_tokens / self._arrived_tokens if self._arrived_tokens else None,
            share_of_buffered=buffered / self._buffered_tokens if self._buffered_tokens else None,
        )


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


def _per_occurrence(occ: IntColumn, amount: IntColumn) -> tuple[IntColumn, IntColumn]:
    """The distinct occurrences of the spans ``occ`` (sorted) and the sum of ``amount`` over each one's spans.

    Spans in occurrence order (a horizon cut's: each occurrence's spans together, in arrival order) are
    summed in place, O(n) and O(n) bytes; any other order is sorted first (``numpy.unique``). One span per
    occurrence gives ``occ`` and ``amount`` themselves (``int32`` or ``int64`` as given); sums are ``int64``.

    >>> [a.tolist() for a in _per_occurrence(np.array([2, 5, 5, 9]), np.array([3, 1, 1, 4]))]
    [[2, 5, 9], [3, 2, 4]]
    >>> [a.tolist() for a in _per_occurrence(np.array([5, 2, 5]), np.array([1, 3, 1]))]
    [[2, 5], [3, 2]]
    """
    if occ.size < 2 or bool((occ[1:] > occ[:-1]).all()):  # one span per occurrence (the usual case)
        return occ, amount
    if bool((occ[1:] >= occ[:-1]).all()):
        first = np.flatnonzero(np.concatenate(([True], occ[1:] != occ[:-1])))
        return occ[first], np.add.reduceat(amount.astype(np.int64, copy=False), first)
    uniq, inv = np.unique(occ, return_inverse=True)
    return cast("IntColumn", uniq), np.bincount(inv.ravel(), weights=amount).round().astype(np.int64)
