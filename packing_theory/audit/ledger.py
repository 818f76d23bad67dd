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
(:mod:`packing_theory.engine.events`): it never looks at a packer's internals. In the
default aggregate mode it keeps a few compact numpy arrays sized by
occurrences (about 50 bytes per occurrence) and bounded chunk buffers;
``detail=True`` additionally keeps every placement and discard so that
:meth:`Ledger.record` can return one source's emitted intervals.

Length strata are those of :mod:`packing_theory.audit.strata`.

>>> from packing_theory import Packer
>>> led = Ledger(capacity=8, min_buffer=2)
>>> led.consume(Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain").events([5, 3, 9, 4]))
>>> agg = led.result()
>>> agg.mass.emitted_tokens, agg.mass.discarded_tokens, agg.mass.identity_holds
(16, 5, True)
>>> agg.started_sources, agg.crop_events, agg.first_over_capacity_target
(4, 1, 10)
"""


from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.events import (
    Arrival,
    BosAdded,
    Discard,
    Event,
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

__all__ = ["MAX_EXACT_TOKENS", "Ledger", "audit_events", "audit_lengths"]

MAX_EXACT_TOKENS = 1 << 53
"""Arrived tokens a :class:`Ledger` accounts exactly (per-source columns are int64 and
per-stratum sums float64, exact up to 2**53); past it the ledger refuses with one line."""

Int64Array = npt.NDArray[np.int64]

_CHUNK = 8192
_NO_TARGET = np.iinfo(np.int64).max
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

    Feed events with :meth:`feed` (one at a time, e.g. inside a loader) or
    :meth:`consume` (a whole iterable, faster); then call :meth:`result`.

    Complexity: amortised O(1) Python work per event (events are buffered in
    chunks of 8,192 and accounted with numpy), O(B log B) per chunk for the
    protected set, O(bins) numpy work per placement for the exposure profile.
    Memory: about 50 bytes per occurrence plus O(chunk + B); ``detail=True``
    adds O(placements + discards).

    Exactness: every total is exact or refused. Arrivals whose tokens sum past
    :data:`MAX_EXACT_TOKENS` (or past ``2**63 / (exposure_bins + 1)`` for very
    many bins) raise ``ValueError`` naming the occurrence, instead of a
    wrapped-around count.
    """

    def __init__(
        self,
        capacity: int = 2049,
        min_buffer: int = 1000,
        *,
        policy: str = "",
        detail: bool = False,
        boundaries: Sequence[int] = STRATA_BOUNDARIES,
        exposure_bins: int = 20,
        chunk: int = _CHUNK,
    ) -> None:
        for name, value, lo in (("capacity", capacity, 2), ("min_buffer", min_buffer, 1),
                                ("exposure_bins", exposure_bins, 1), ("chunk", chunk, 1)):
            check_int(name, value, lo)
        self.capacity = int(capacity)
        self.min_buffer = int(min_buffer)
        self.policy = str(policy)
        self.detail = bool(detail)
        self.boundaries = check_boundaries(boundaries)
        self.n_strata = len(self.boundaries) + 1
        self.bins = int(exposure_bins)
        self._chunk = int(chunk)
        self.max_tokens = min(MAX_EXACT_TOKENS, INT64_MAX // (self.bins + 1))
        """Arrived tokens this ledger accounts exactly (see the class docstring)."""
        # per-occurrence arrays (grown by doubling)
        self._cap = 0
        self._n = 0
        self._length = np.zeros(0, dtype=np.int64)
        self._source = np.zeros(0, dtype=np.int64)
        self._pass = np.zeros(0, dtype=np.int32)
        self._stratum = np.zeros(0, dtype=np.int8)
        self._arrived = np.zeros(0, dtype=np.bool_)
        self._started = np.zeros(0, dtype=np.bool_)
        self._emitted = np.zeros(0, dtype=np.int64)
        self._discarded = np.zeros(0, dtype=np.int64)
        self._filtered = np.zeros(0, dtype=np.int64)
        self._added = np.zeros(0, dtype=np.int32)
        self._first = np.zeros(0, dtype=np.int64)
        # pending events
        self._pl: list[Placement] = []
        self._ar: list[Arrival] = []
        self._dc: list[Discard] = []
        self._ba: list[BosAdded] = []
        # running totals
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
        self._long_arrivals = 0
        self._prot_len = np.zeros(0, dtype=np.int64)
        self._prot_occ = np.zeros(0, dtype=np.int64)
        self._series: list[SeriesSample] = []
        self._series_stride = 1
        self._flushes = 0
        self._exhausted_at_row: int | None = None
        self._horizon: Horizon | None = None
        self._buffered = np.zeros(0, dtype=np.int64)
        self._buffered_tokens = 0
        self._buffered_added = 0
        self._result: Aggregates | None = None
        self._detail_pl: list[Int64Array] = []
        self._detail_dc: list[Int64Array] = []

    @classmethod
    def from_config(cls, config: PackerConfig, **kwargs: Any) -> Ledger:
        """A ledger for replays of ``config`` (capacity, B and policy label taken from it)."""
        return cls(config.capacity, config.min_buffer, policy=kwargs.pop("policy", config.policy), **kwargs)

    # ------------------------------------------------------------------ feeding

    def feed(self, ev: Event) -> None:
        """Account one event. Amortised O(1)."""
        if self._horizon is not None:
            raise ValueError(f"event after the Horizon: {ev!r}")
        t = type(ev)
        if t is Placement:
            self._pl.append(ev)  # type: ignore[arg-type]
            if len(self._pl) >= self._chunk:
                self._flush()
        elif t is Arrival:
            self._ar.append(ev)  # type: ignore[arg-type]
            if len(self._ar) >= self._chunk:
                self._flush()
        elif t is Discard:
            self._dc.append(ev)  # type: ignore[arg-type]
            if len(self._dc) >= self._chunk:
                self._flush()
        else:
            self._other(ev)

    def consume(self, events: Iterable[Event], *, progress: Callable[[int], None] | None = None) -> None:
        """Account a whole event stream (faster than calling :meth:`feed` per event).

        ``progress`` is called with the number of complete rows after every chunk.
        """
        if self._horizon is not None:
            raise ValueError("this ledger already saw a Horizon event")
        pl, ar, dc = self._pl, self._ar, self._dc
        pl_append, ar_append, dc_append = pl.append, ar.append, dc.append
        chunk = self._chunk
        R = self.capacity
        for ev in events:
            t = type(ev)
            if t is Placement:
                pl_append(ev)  # type: ignore[arg-type]
                if len(pl) >= chunk:
                    self._flush()
                    if progress is not None:
                        progress(self._emitted_tokens // R)
            elif t is Arrival:
                ar_append(ev)  # type: ignore[arg-type]
                if len(ar) >= chunk:
                    self._flush()
            elif t is Discard:
                dc_append(ev)  # type: ignore[arg-type]
                if len(dc) >= chunk:
                    self._flush()
            else:
                self._other(ev)
                if self._horizon is not None:
                    break
        if progress is not None and self._horizon is not None:
            progress(self._horizon.rows)

    def _other(self, ev: Event) -> None:
        if isinstance(ev, BosAdded):
            self._ba.append(ev)
        elif isinstance(ev, Padding):
            if ev.length < 0:
                raise ValueError(f"inconsistent event stream: negative Padding length in {ev!r}")
            self._padding_tokens += ev.length
        elif isinstance(ev, Repeat):
            if ev.length < 1:
                raise ValueError(f"inconsistent event stream: Repeat length < 1 in {ev!r}")
            self._repeated_tokens += ev.length
        elif isinstance(ev, Filtered):
            self._flush()
            self._filter(ev)
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
            raise TypeError(f"events must be packing_theory events, got {type(ev).__name__} {ev!r}")

    def _filter(self, ev: Filtered) -> None:
        occ = np.asarray([ev.occurrence], dtype=np.int64)
        self._known(occ, "Filtered")
        o = ev.occurrence
        if self._filtered[o] or self._started[o] or self._discarded[o]:
            raise ValueError(f"inconsistent event stream: occurrence {o} filtered after it was "
                             "filtered, placed or discarded")
        if ev.length != self._length[o]:
            raise ValueError(f"inconsistent event stream: Filtered length {ev.length} of occurrence {o} "
                             f"differs from its arrival length {int(self._length[o])}")
        self._filtered[o] = ev.length
        self._filtered_tokens += ev.length
        self._filtered_sources += 1

    def _check(self) -> None:
        """Assert the ledger's internal invariants over the events accounted so far.

        Pending (not yet flushed) events are not included; tests call this
        after every event and after the Horizon.
        """
        n, cap = self._n, self._cap
        assert 0 <= n <= cap
        for name in ("_length", "_source", "_pass", "_stratum", "_arrived", "_started",
                     "_emitted", "_discarded", "_filtered", "_added", "_first"):
            assert getattr(self, name).size == cap, name
        arrived, started = self._arrived[:n], self._started[:n]
        assert not (started & ~arrived).any(), "a started occurrence never arrived"
        emitted_any = (self._emitted[:n] > 0) | (self._added[:n] > 0)
        assert not ((self._emitted[:n] > 0) & ~started).any(), "emitted tokens of an unstarted occurrence"
        assert not (started & ~emitted_any).any(), "a started occurrence with nothing emitted"
        assert int(self._length[:n][arrived].sum()) == self._arrived_tokens
        assert (self._length[:n][arrived] >= 0).all()
        assert int(self._added[:n].sum()) == self._added_bos
        assert int(self._emitted[:n].sum()) + self._emitted_added == self._emitted_tokens
        assert int(self._discarded[:n].sum()) == self._discarded_tokens
        assert int(self._filtered[:n].sum()) == self._filtered_tokens
        spent = self._emitted[:n] + self._discarded[:n] + self._filtered[:n]
        assert (spent <= self._length[:n]).all(), "source tokens overspent"
        assert not ((self._filtered[:n] > 0) & started).any(), "a filtered occurrence started"
        assert (self._first[:n][~started] == _NO_TARGET).all()
        assert sum(k * v for k, v in self._crop_counts.items()) <= self._emitted_tokens
        assert all(1 <= k <= self.capacity and v >= 1 for k, v in self._crop_counts.items())
        expected_protected = min(self.min_buffer - 1, self._long_arrivals) if self.min_buffer > 1 else 0
        assert self._prot_len.size == self._prot_occ.size == expected_protected
        assert (self._prot_len > self.capacity).all()
        assert (self._length[self._prot_occ] == self._prot_len).all()
        assert (self._arrived_tokens + self._added_bos
                >= self._emitted_tokens + self._discarded_tokens + self._filtered_tokens)
        assert self._padding_tokens >= 0 and self._repeated_tokens >= 0
        if self._horizon is not None:
            assert not (self._pl or self._ar or self._dc or self._ba), "events pending after the Horizon"
            assert (self._arrived_tokens + self._added_bos
                    == self._emitted_tokens + self._discarded_tokens + self._filtered_tokens
                    + self._buffered_tokens)

    # ------------------------------------------------------------------ chunk accounting

    def _grow(self, n: int) -> None:
        if n <= self._cap:
            return
        cap = max(n, 2 * self._cap, 1024)
        for name in ("_length", "_source", "_pass", "_stratum", "_arrived", "_started",
                     "_emitted", "_discarded", "_filtered", "_added", "_first"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: old.size] = old
            setattr(self, name, new)
        self._first[self._cap:] = _NO_TARGET
        self._cap = cap

    def _flush(self) -> None:
        if self._ar:
            self._flush_arrivals()
        if self._ba:
            ba = np.fromiter(chain.from_iterable(self._ba), np.int64, 3 * len(self._ba)).reshape(-1, 3)
            self._ba.clear()
            occ = ba[:, 0]
            self._known(occ, "BosAdded")
            np.add.at(self._added, occ, ba[:, 2].astype(np.int32))
            self._added_bos += int(ba[:, 2].sum())
        if self._pl:
            self._flush_placements()
        if self._dc:
            self._flush_discards()
        self._sample()

    def _known(self, occ: Int64Array, what: str) -> None:
        bad = (occ < 0) | (occ >= self._n)
        if not bad.any():
            bad = ~self._arrived[occ]
        if bad.any():
            o = int(occ[np.argmax(bad)])
            raise ValueError(f"inconsistent event stream: {what} for occurrence {o} before its Arrival")

    def _flush_arrivals(self) -> None:
        n = len(self._ar)
        a = np.fromiter(chain.from_iterable(self._ar), np.int64, 4 * n).reshape(-1, 4)
        self._ar.clear()
        occ, length = a[:, 0], a[:, 3]
        if (occ < 0).any():
            raise ValueError(f"inconsistent event stream: negative occurrence id {int(occ.min())}")
        if (length < 0).any():
            i = int(np.argmax(length < 0))
            raise ValueError(f"inconsistent event stream: Arrival of occurrence {int(occ[i])} "
                             f"has negative length {int(length[i])}")
        total = self._arrived_tokens + exact_sum(length)
        if total > self.max_tokens:
            running, i = self._arrived_tokens, 0
            for n in length.tolist():  # the refusal path: find the first arrival past the range
                running += n
                if running > self.max_tokens:
                    break
                i += 1
            raise ValueError(f"token total beyond the ledger's exact range: arrivals up to occurrence "
                             f"{int(occ[i])} (length {int(length[i])}) hold more than {self.max_tokens:,} "
                             "tokens (per-source counts are int64, per-stratum sums float64); audit fewer "
                             "tokens")
        top = int(occ.max()) + 1
        self._grow(top)
        self._n = max(self._n, top)
        srt = np.sort(occ)
        if self._arrived[occ].any() or (srt[1:] == srt[:-1]).any():
            dup = next(int(o) for i, o in enumerate(occ) if self._arrived[o] or o in occ[:i])
            raise ValueError(f"inconsistent event stream: occurrence {dup} arrived twice")
        self._arrived[occ] = True
        self._length[occ] = length
        self._source[occ] = a[:, 1]
        self._pass[occ] = a[:, 2]
        self._stratum[occ] = stratum_index(length, self.boundaries)
        self._arrived_tokens = total
        long_mask = length > self.capacity
        if long_mask.any() and self.min_buffer > 1:
            self._long_arrivals += int(long_mask.sum())
            lens = np.concatenate([self._prot_len, length[long_mask]])
            occs = np.concatenate([self._prot_occ, occ[long_mask]])
            keep = np.lexsort((occs, lens))[-(self.min_buffer - 1):]
            self._prot_len, self._prot_occ = lens[keep], occs[keep]
        elif long_mask.any():
            self._long_arrivals += int(long_mask.sum())

    def _flush_placements(self) -> None:
        n = len(self._pl)
        p = np.fromiter(chain.from_iterable(self._pl), np.int64, 8 * n).reshape(-1, 8)
        self._pl.clear()
        row, off, occ, start, ln = p[:, 0], p[:, 1], p[:, 2], p[:, 4], p[:, 5]
        bos, crop = p[:, 6].astype(np.bool_), p[:, 7].astype(np.bool_)
        R = self.capacity
        self._known(occ, "Placement")
        if self._filtered[occ].any():
            o = int(occ[np.argmax(self._filtered[occ] > 0)])
            raise ValueError(f"inconsistent event stream: Placement of occurrence {o} after it was filtered")
        if (ln < 1).any() or (off < 0).any() or (off + ln > R).any() or (start < 0).any():
            i = int(np.argmax((ln < 1) | (off < 0) | (off + ln > R) | (start < 0)))
            raise ValueError(f"inconsistent event stream: placement (row {int(row[i])}, offset "
                             f"{int(off[i])}, length {int(ln[i])}) does not fit a row of capacity {R}")
        L = self._length[occ]
        added = bos & (self._added[occ] > 0)
        own = bos & ~added
        stop = start + ln - bos
        if (stop > L).any():
            i = int(np.argmax(stop > L))
            raise ValueError(f"inconsistent event stream: placement of occurrence {int(occ[i])} "
                             f"reaches source offset {int(stop[i])} > length {int(L[i])}")
        src_n = ln - added
        np.add.at(self._emitted, occ, src_n)
        self._started[occ] = True
        has_target = (off > 0) | (ln > 1)
        first = first_target(row, off, R)
        np.minimum.at(self._first, occ[has_target], first[has_target])
        self._emitted_tokens += int(ln.sum())
        self._emitted_added += int(added.sum())
        self._long_emitted += int(ln[L > R].sum())
        if crop.any():
            counts = self._crop_counts
            for k, v in zip(*(a.tolist() for a in np.unique(ln[crop], return_counts=True)), strict=True):
                counts[k] = counts.get(k, 0) + v
        strat = self._stratum[occ].astype(np.int64)
        self._targets_by_stratum += np.bincount(strat, weights=ln - (off == 0), minlength=self.n_strata
                                                ).astype(np.int64)
        # exposure: text interval [start, stop) plus the moved own BOS at offset 0
        a = start
        if own.any():
            a = np.concatenate([a, np.zeros(int(own.sum()), dtype=np.int64)])
            stop = np.concatenate([stop, np.ones(int(own.sum()), dtype=np.int64)])
            L = np.concatenate([L, L[own]])
            strat = np.concatenate([strat, strat[own]])
        self._expose(a, stop, L, strat)
        if self.detail:
            self._detail_pl.append(np.column_stack([p, added.astype(np.int64)]))

    def _expose(self, a: Int64Array, b: Int64Array, L: Int64Array, strat: Int64Array) -> None:
        nb = self.bins
        edges = _bin_edges(L, nb)
        lo, hi = edges[:, :-1], edges[:, 1:]
        cnt = np.minimum(b[:, None], hi) - np.maximum(a[:, None], lo)
        np.maximum(cnt, 0, out=cnt)
        idx = strat[:, None] * nb + np.arange(nb, dtype=np.int64)[None, :]
        self._expo += np.bincount(idx.ravel(), weights=cnt.ravel(), minlength=self.n_strata * nb
                                  ).astype(np.int64)

    def _flush_discards(self) -> None:
        n = len(self._dc)
        d = np.fromiter(chain.from_iterable(self._dc), np.int64, 4 * n).reshape(-1, 4)
        self._dc.clear()
        occ, ln = d[:, 0], d[:, 3]
        self._known(occ, "Discard")
        if (ln < 0).any():
            raise ValueError(f"inconsistent event stream: negative Discard length {int(ln.min())}")
        np.add.at(self._discarded, occ, ln)
        self._discarded_tokens += int(ln.sum())
        if self.detail:
            self._detail_dc.append(d)

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
        buffered = np.zeros(self._n, dtype=np.int64)
        if h.buffered:
            spans = np.array([(s.occurrence, s.start, s.length, s.bos_inserted) for s in h.buffered],
                             dtype=np.int64)
            occ, ln, bos = spans[:, 0], spans[:, 2], spans[:, 3].astype(np.bool_)
            self._known(occ, "buffered span")
            added = bos & (self._added[occ] > 0)
            np.add.at(buffered, occ, ln - added)
            self._buffered_tokens = int(ln.sum())
            self._buffered_added = int(added.sum())
        self._buffered = buffered
        R = self.capacity
        self._series.append(SeriesSample(h.rows * (R - 1), self._buffered_tokens, int(self._prot_len.sum())))

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
            raise ValueError("result() needs the Horizon event: feed the whole event stream first")
        R, n = self.capacity, self._n
        arrived = self._arrived[:n]
        cols = _Columns(
            L=self._length[:n][arrived], strat=self._stratum[:n][arrived].astype(np.int64),
            emitted=self._emitted[:n][arrived], discarded=self._discarded[:n][arrived],
            filtered=self._filtered[:n][arrived], buffered=self._buffered[arrived],
            started=self._started[:n][arrived],
        )
        full = (cols.emitted == cols.L) & (cols.L > 0)
        labels = stratum_labels(self.boundaries)
        long_first = self._first[:n][arrived & (self._length[:n] > R) & (self._first[:n] != _NO_TARGET)]
        crops = self._crop_counts
        mass = MassPartition(self._arrived_tokens, self._added_bos, self._emitted_tokens, self._emitted_added,
                             self._discarded_tokens, self._buffered_tokens, self._buffered_added,
                             self._filtered_tokens, self._padding_tokens, self._repeated_tokens)
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
            median_crop_prefix=_counts_median(crops),
            arrived_sources=int(arrived.sum()),
            started_sources=int(cols.started.sum()),
            fully_emitted_sources=int(full.sum()),
            distinct_sources_started=_count_distinct(self._source[:n][arrived][cols.started]),
            conservation_violations=int(
                (cols.emitted + cols.discarded + cols.filtered + cols.buffered != cols.L).sum()),
            over_capacity_emitted_fraction=(self._long_emitted / self._emitted_tokens
                                            if self._emitted_tokens else None),
            first_over_capacity_target=int(long_first.min()) if long_first.size else None,
            protected=self._protected_mass(),
            strata=_stratum_rows(labels, self.boundaries, cols, full, self._targets_by_stratum),
            exposure=_exposure_profile(labels, self.boundaries, cols.L, self._expo, self.bins),
            coverage=_coverage_rows(labels, cols),
            series=tuple(self._series),
            filtered_sources=self._filtered_sources,
        )
        return self._result

    def _protected_mass(self) -> ProtectedMass:
        prot_occ = self._prot_occ
        prot_tokens = int(self._prot_len.sum())
        buffered = int(self._buffered[prot_occ].sum())
        return ProtectedMass(
            members=int(prot_occ.size),
            long_arrivals=self._long_arrivals,
            tokens=prot_tokens,
            started_members=int(self._started[prot_occ].sum()),
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
        first = self._first[: self._n].copy()
        first[first == _NO_TARGET] = -1
        return first

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Per-occurrence columns (available in both modes; index = occurrence id).

        Keys: ``arrived, source, pass_index, length, stratum, started, emitted,
        discarded, filtered, buffered, added_bos, first_target`` (``emitted``, ``discarded``
        and ``buffered`` count source tokens; ``buffered`` needs the Horizon).
        """
        n = self._n
        return {
            "arrived": self._arrived[:n].copy(),
            "source": self._source[:n].copy(),
            "pass_index": self._pass[:n].astype(np.int64),
            "length": self._length[:n].copy(),
            "stratum": self._stratum[:n].astype(np.int64),
            "started": self._started[:n].copy(),
            "emitted": self._emitted[:n].copy(),
            "discarded": self._discarded[:n].copy(),
            "filtered": self._filtered[:n].copy(),
            "buffered": self._buffered.copy() if self._horizon is not None else np.zeros(n, np.int64),
            "added_bos": self._added[:n].astype(np.int64),
            "first_target": self.first_targets(),
        }

    def _detail_index(self) -> tuple[Int64Array, Int64Array, Int64Array]:
        if not self.detail:
            raise ValueError("per-source records need Ledger(detail=True)")
        if self._horizon is None:
            raise ValueError("per-source records need the Horizon event: feed the whole stream first")
        cache = getattr(self, "_detail_cache", None)
        if cache is None:
            pl = (np.concatenate(self._detail_pl) if self._detail_pl else np.zeros((0, 9), np.int64))
            order = np.argsort(pl[:, 2], kind="stable")
            pl = pl[order]
            bounds = np.searchsorted(pl[:, 2], np.arange(self._n + 1))
            cache = (pl, bounds, np.zeros(0, np.int64))
            self._detail_cache = cache
        return cache

    def record(self, occurrence: int) -> SourceRecord:
        """The ledger line of one occurrence (``detail=True`` only). O(its placements)."""
        pl, bounds, _ = self._detail_index()
        check_int("occurrence", occurrence, 0)
        if not (0 <= occurrence < self._n) or not self._arrived[occurrence]:
            raise ValueError(f"occurrence {occurrence} never arrived")
        rows = pl[bounds[occurrence]: bounds[occurrence + 1]]
        intervals = tuple(EmittedInterval(int(r[4]), int(r[5]), int(r[0]), int(r[1]), bool(r[6]), bool(r[8]))
                          for r in rows)
        first = int(self._first[occurrence])
        first = -1 if first == _NO_TARGET else first
        return SourceRecord(
            occurrence=int(occurrence),
            source=int(self._source[occurrence]),
            pass_index=int(self._pass[occurrence]),
            length=int(self._length[occurrence]),
            intervals=intervals,
            discarded=int(self._discarded[occurrence]),
            buffered=int(self._buffered[occurrence]),
            added_bos=int(self._added[occurrence]),
            first_target=first if first >= 0 else None,
            filtered=int(self._filtered[occurrence]),
        )

    def records(self) -> Iterator[SourceRecord]:
        """Every arrived occurrence's :class:`SourceRecord`, in arrival-id order (``detail=True``)."""
        self._detail_index()
        for occ in np.flatnonzero(self._arrived[: self._n]):
            yield self.record(int(occ))

    def by_source(self, source: int) -> list[SourceRecord]:
        """All occurrences (one per pass) of an original source id (``detail=True``). O(occurrences)."""
        self._detail_index()
        occs = np.flatnonzero(self._arrived[: self._n] & (self._source[: self._n] == source))
        return [self.record(int(o)) for o in occs]


def _count_distinct(values: Int64Array) -> int:
    if values.size == 0:
        return 0
    if int(values.min()) >= 0 and int(values.max()) < 64 * values.size + 1_000_000:
        return int(np.count_nonzero(np.bincount(values)))
    return int(np.unique(values).size)


def _value_counts(values: Int64Array) -> tuple[Int64Array, Int64Array]:
    if values.size and int(values.max()) < 64 * values.size + 1_000_000:
        counts = np.bincount(values)
        uniq = np.flatnonzero(counts)
        return uniq.astype(np.int64), counts[uniq].astype(np.int64)
    u, c = np.unique(values, return_counts=True)
    return u.astype(np.int64), c.astype(np.int64)


def _counts_median(counts: dict[int, int]) -> float | None:
    """Median of a sparse histogram ``value -> count`` (the mean of the two middle values).

    >>> _counts_median({3: 1, 10: 2}), _counts_median({2: 1, 4: 1}), _counts_median({})
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


class _Columns(NamedTuple):
    """Per-occurrence columns of the arrived occurrences (what the aggregates are computed from)."""

    L: Int64Array
    strat: Int64Array
    emitted: Int64Array
    discarded: Int64Array
    filtered: Int64Array
    buffered: Int64Array
    started: npt.NDArray[np.bool_]


def _bin_edges(L: Int64Array, bins: int) -> Int64Array:
    """Relative-position bin edges ``ceil(k L / bins)``, ``k = 0..bins``: shape ``(n, bins + 1)``."""
    k = np.arange(bins + 1, dtype=np.int64)
    return (k[None, :] * L[:, None] + bins - 1) // bins


def _stratum_rows(labels: list[str], boundaries: tuple[int, ...], c: _Columns, full: npt.NDArray[np.bool_],
                  targets_by_stratum: Int64Array) -> tuple[StratumRow, ...]:
    S = len(labels)

    def by(w: npt.NDArray[Any]) -> list[int]:
        return [int(v) for v in np.bincount(c.strat, weights=w, minlength=S).round()]

    counts = np.bincount(c.strat, minlength=S)
    arrived_tok, em_tok, dc_tok, bf_tok, ft_tok = by(c.L), by(c.emitted), by(c.discarded), by(c.buffered), \
        by(c.filtered)
    st_cnt, full_cnt, ft_cnt = by(c.started.astype(np.int64)), by(full.astype(np.int64)), \
        by((c.filtered > 0).astype(np.int64))
    los = [1, *(b + 1 for b in boundaries)]
    his: list[int | None] = [*boundaries, None]
    return tuple(
        StratumRow(labels[s], los[s], his[s], int(counts[s]), st_cnt[s], full_cnt[s], arrived_tok[s],
                   em_tok[s], dc_tok[s], bf_tok[s], int(targets_by_stratum[s]), ft_cnt[s], ft_tok[s])
        for s in range(S))


def _exposure_profile(labels: list[str], boundaries: tuple[int, ...], L: Int64Array, expo: Int64Array,
                      bins: int) -> ExposureProfile:
    """The emitted counts ``expo`` against all positions of the arrived lengths (over unique lengths)."""
    S = len(labels)
    uniq, ucnt = _value_counts(L)
    edges = _bin_edges(uniq, bins)
    sizes = (edges[:, 1:] - edges[:, :-1]) * ucnt[:, None]
    positions = np.zeros((S, bins), dtype=np.int64)
    np.add.at(positions, stratum_index(uniq, boundaries), sizes)
    emitted = expo.reshape(S, bins)
    return ExposureProfile(bins, tuple(labels), tuple(tuple(int(v) for v in r) for r in emitted),
                           tuple(tuple(int(v) for v in r) for r in positions))


def _coverage_rows(labels: list[str], c: _Columns) -> tuple[CoverageRow, ...]:
    cov = np.divide(c.emitted, c.L, out=np.zeros(c.L.size), where=c.L > 0)
    rows = []
    for s in range(len(labels)):
        x = cov[c.strat == s]
        rows.append(CoverageRow(labels[s], int(x.size), float(x.mean()) if x.size else None,
                                float(np.median(x)) if x.size else None,
                                int((x == 0).sum()), int((x == 1).sum())))
    return tuple(rows)


# --------------------------------------------------------------------------- convenience


def audit_events(events: Iterable[Event], capacity: int = 2049, min_buffer: int = 1000, **kwargs: Any
                 ) -> Aggregates:
    """Aggregate a whole event stream of any packer (``kwargs`` go to :class:`Ledger`)."""
    ledger = Ledger(capacity, min_buffer, **kwargs)
    ledger.consume(events)
    if not ledger.finished:
        raise ValueError("the event stream ended without a Horizon event")
    return ledger.result()


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

    >>> agg = audit_lengths([5, 3, 9, 4, 12, 2], capacity=8, min_buffer=2, refill=2, policy="continue")
    >>> agg.mass.discarded_tokens, agg.mass.identity_holds, agg.stop_reason
    (0, True, 'exhausted')
    """
    config = resolve_config(config, kwargs, PackerConfig)
    ledger = Ledger.from_config(config, **(ledger_kwargs or {}))
    ledger.consume(make_packer(engine, config).events(lengths), progress=progress)
    return ledger.result()
