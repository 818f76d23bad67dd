"""The streaming summary: a replay's mass, sources and strata in O(B + strata) memory, however long.

:class:`~packing_theory.audit.ledger.Ledger` keeps a few bytes per occurrence
for ever (coverage medians, per-source views need them). :class:`StreamLedger`
keeps state only for the *live* occurrences — those with tokens still
buffered — and settles each occurrence's contribution to the per-stratum
counts the moment its last token is emitted, discarded or filtered. For the
streaming family the live occurrences are at most the buffered spans
(``B`` plus one refill batch, plus ``segment-first`` chunks), so memory is
O(B + R + strata + batch) whatever the stream's length.

What it reports (:class:`StreamResult`): the engine's
:class:`~packing_theory.engine.summary.ReplaySummary` (equal to
:class:`~packing_theory.engine.summary.SummaryAccumulator`'s), one
:class:`~packing_theory.audit.results.StratumRow` per stratum (equal to the
ledger's), the protected set's size, mass and started members, and the
median crop prefix. Not reported (they need every occurrence): coverage
medians, the exposure profile's positions, per-source records, and distinct
sources over several passes.

>>> from packing_theory import Packer, feed_all
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
>>> (r,) = feed_all(packer.stream([5, 3, 9, 4]), StreamLedger.for_packer(packer))
>>> r.summary.sources_started, [s.arrived_sources for s in r.strata][:2], r.live_peak <= 4
(4, [4, 0], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Event, Horizon, first_target, span_columns
from ..engine.summary import ReplaySummary
from ..errors import InputError, InputTypeError
from .accounting import MAX_EXACT_TOKENS, exact_total
from .histograms import counts_median
from .results import StratumRow
from .strata import STRATA_BOUNDARIES, check_boundaries, stratum_index, stratum_labels

if TYPE_CHECKING:
    from .compiled import StreamKernels

__all__ = ["StreamLedger", "StreamResult"]

Int64Array = npt.NDArray[np.int64]

_STARTED, _LONG, _ADDED = 1, 2, 4


@dataclass(frozen=True, slots=True)
class StreamResult:
    """What :class:`StreamLedger` reports (see the module doc).

    Attributes:
        summary: mass, source and timing aggregates of the replay.
        strata: one row per length stratum (source tokens; added markers excluded).
        protected_members, protected_tokens, protected_started: the protected
            set K at the horizon (seed 000 §3).
        median_crop_prefix: the median number of tokens a crop emitted.
        live_peak: the most occurrences held at once (the memory bound in use).
    """

    summary: ReplaySummary
    strata: tuple[StratumRow, ...]
    protected_members: int
    protected_tokens: int
    protected_started: int
    median_crop_prefix: float | None
    live_peak: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"summary": self.summary.to_dict(), "strata": [s.to_dict() for s in self.strata],
                "protected": {"members": self.protected_members, "tokens": self.protected_tokens,
                              "started_members": self.protected_started},
                "median_crop_prefix": self.median_crop_prefix, "live_peak": self.live_peak}


class StreamLedger:
    """Settle occurrences as they finish; keep only the live ones (see the module doc).

    Args:
        capacity: row capacity ``R``.
        min_buffer: ``B`` (for the protected set).
        boundaries: length-stratum boundaries.
        chunk: single events collected before they are accounted as one batch.
        compiled: account placements with a numba kernel
            (:class:`~packing_theory.audit.compiled.StreamKernels`; the ``fast``
            extra); the numpy path is its oracle, the results are identical.

    Build it from a packer with :meth:`for_packer`. Feed events or
    :class:`~packing_theory.engine.batches.EventBatch` values with :meth:`feed`
    (or a whole stream with :func:`~packing_theory.engine.consumers.feed_all`),
    then :meth:`result`.

    Complexity: O(batch log live) numpy work per batch; memory O(live + B + R
    + strata + chunk).
    """

    def __init__(self, capacity: int, min_buffer: int, *,
                 boundaries: Sequence[int] = STRATA_BOUNDARIES, chunk: int = 4096,
                 compiled: bool = False) -> None:
        self.capacity = check_int("capacity", capacity, 2)
        self.min_buffer = check_int("min_buffer", min_buffer, 1)
        self.boundaries = check_boundaries(boundaries)
        self._chunk = check_int("chunk", chunk, 1)
        if not isinstance(compiled, bool):
            raise InputTypeError(f"compiled must be a bool, got {type(compiled).__name__} {compiled!r}")
        S = len(self.boundaries) + 1
        self._kernels: StreamKernels | None = None
        if compiled:
            from .compiled import StreamKernels

            self._kernels = StreamKernels(self.capacity, S)
        self._S = S
        self._pending: list[Event] = []
        # live occurrences, sorted by id
        self._occ = np.zeros(0, dtype=np.int64)
        self._len = np.zeros(0, dtype=np.int64)
        self._strat = np.zeros(0, dtype=np.intp)  # each live occurrence's stratum (from its length)
        self._left = np.zeros(0, dtype=np.int64)
        self._emit = np.zeros(0, dtype=np.int64)
        self._flags = np.zeros(0, dtype=np.uint8)
        self._map: tuple[int, int, Int64Array] | None = None  # _recent() of the live ids, while they hold
        self._next_occ = 0
        self._arrived_exact = 0  # arrived tokens as a Python int: refused past MAX_EXACT_TOKENS
        self.live_peak = 0
        # per stratum
        self._counts = {k: np.zeros(S, dtype=np.int64) for k in (
            "arrived", "started", "full", "arrived_tokens", "emitted", "discarded", "targets",
            "filtered_sources", "filtered_tokens")}
        # totals
        self._t = dict.fromkeys(("emitted", "discarded", "consumed_sources", "consumed_tokens", "added",
                                 "crops", "bos_only", "started", "padding", "repeated", "filtered_sources",
                                 "filtered"), 0)
        self._first_long: int | None = None
        self._exhausted_at: int | None = None
        self._crop_counts: dict[int, int] = {}  # crop length -> crops (O(distinct), not O(R))
        self._prot_len = np.zeros(0, dtype=np.int64)
        self._prot_occ = np.zeros(0, dtype=np.int64)
        self._prot_started = np.zeros(0, dtype=np.bool_)
        self._long_arrivals = 0
        self.horizon: Horizon | None = None
        self._buffered_by = np.zeros(S, dtype=np.int64)

    @classmethod
    def for_packer(cls, packer: object, **kwargs: Any) -> StreamLedger:
        """A streaming summary for the stream of ``packer`` (``R`` and ``B`` taken from it).

        ``packer``: an engine, a :class:`~packing_theory.engine.policies.PackerConfig`,
        or a peer (``min_buffer=`` is then required).
        """
        settings = consumer_settings(packer)
        return cls(settings.capacity, settings.need_min_buffer(kwargs.pop("min_buffer", None), cls.__name__),
                   **kwargs)

    # ------------------------------------------------------------------ feeding

    def feed(self, ev: EventItem) -> None:
        """Account one event (collected into batches of ``chunk``) or one batch."""
        if self.horizon is not None:
            raise InputError(f"event after the Horizon: {ev!r}"[:300])
        if isinstance(ev, EventBatch):
            self._flush()
            self._batch(ev)
            return
        self._pending.append(ev)
        if len(self._pending) >= self._chunk or type(ev) is Horizon:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            batch = EventBatch.from_events(self._pending)
            self._pending = []
            self._batch(batch)

    def _idx(self, occ: Int64Array, what: str) -> Int64Array:
        """Positions of ``occ`` among the live occurrences (an InputError naming the first that is not).

        The live ids are sorted; the recent ones (at least the last ``4 x live + 1024`` ids arrived)
        are looked up in a dense map built once per batch (:meth:`_recent`), the older ones (the few
        long documents the buffer keeps) by binary search. O(live + len(occ))."""
        live = self._occ
        if self._map is None:
            self._map = self._recent()
        base, k, dense = self._map
        out = np.full(occ.size, -1, np.int64)
        recent = (occ >= base) & (occ < base + dense.size)
        out[recent] = dense[occ[recent] - base]
        older = np.flatnonzero(~recent)
        if older.size:
            i = np.searchsorted(live[:k], occ[older])
            ok = i < k
            ok[ok] = live[i[ok]] == occ[older][ok]
            out[older[ok]] = i[ok]
        if (out < 0).any():
            o = int(occ[np.argmax(out < 0)])
            raise InputError(f"inconsistent event stream: {what} for occurrence {o}, which holds no tokens")
        return out

    def _recent(self) -> tuple[int, int, Int64Array]:
        """(first recent id, position of the first recent live occurrence, id - base -> position or -1)."""
        live = self._occ
        if not live.size:
            return 0, 0, np.zeros(0, np.int64)
        base = max(int(live[0]), int(live[-1]) + 1 - 4 * int(live.size) - 1024)
        k = int(np.searchsorted(live, base))
        dense = np.full(int(live[-1]) + 1 - base, -1, np.int64)
        dense[live[k:] - base] = np.arange(k, live.size, dtype=np.int64)
        return base, k, dense

    def _batch(self, b: EventBatch) -> None:
        R, S, c, t = self.capacity, self._S, self._counts, self._t
        a = b.arrival
        if a.occurrence.size:
            occ, L = a.occurrence, a.length
            if (np.diff(occ) <= 0).any() or int(occ[0]) < self._next_occ:
                raise InputError("StreamLedger needs occurrence ids that increase with arrival order")
            self._arrived_exact = exact_total(self._arrived_exact, occ, L, MAX_EXACT_TOKENS)
            self._next_occ = int(occ[-1]) + 1
            strat = stratum_index(L, self.boundaries)
            c["arrived"] += np.bincount(strat, minlength=S)
            c["arrived_tokens"] += np.bincount(strat, weights=L, minlength=S).round().astype(np.int64)
            t["consumed_sources"] += int(occ.size)
            t["consumed_tokens"] += int(L.sum())
            long = L > R
            self._occ = np.concatenate([self._occ, occ])
            self._len = np.concatenate([self._len, L])
            self._strat = np.concatenate([self._strat, strat])
            self._left = np.concatenate([self._left, L])
            self._emit = np.concatenate([self._emit, np.zeros(occ.size, np.int64)])
            self._flags = np.concatenate([self._flags, np.where(long, _LONG, 0).astype(np.uint8)])
            self._map = None
            self.live_peak = max(self.live_peak, int(self._occ.size))
            if long.any():
                self._long_arrivals += int(long.sum())
                if self.min_buffer > 1:
                    lens = np.concatenate([self._prot_len, L[long]])
                    occs = np.concatenate([self._prot_occ, occ[long]])
                    started = np.concatenate([self._prot_started, np.zeros(int(long.sum()), np.bool_)])
                    keep = np.lexsort((occs, lens))[-(self.min_buffer - 1):]
                    self._prot_len, self._prot_occ, self._prot_started = lens[keep], occs[keep], started[keep]
        m = b.bos_added
        if m.occurrence.size:
            i = self._idx(m.occurrence, "BosAdded")
            np.add.at(self._left, i, m.markers)
            self._flags[i] |= _ADDED
            t["added"] += int(m.markers.sum())
        p = b.placement
        i = np.zeros(0, np.int64)
        if p.occurrence.size:
            i = self._idx(p.occurrence, "Placement")
            if self._kernels is not None and self._kernels.placements(
                    i, p.length, p.offset, p.bos_inserted, p.crop, self._flags, self._left, self._emit,
                    self._strat):
                self._take_placements(p.row, p.offset, i)
                i = np.zeros(0, np.int64)  # accounted
        if i.size:
            f = self._flags[i]
            fresh = (f & _STARTED) == 0
            mark = np.zeros(self._occ.size, np.bool_)  # O(live): the distinct fresh occurrences
            mark[i[fresh]] = True
            new = np.flatnonzero(mark)
            t["started"] += int(new.size)
            strat_new = self._strat[new]
            c["started"] += np.bincount(strat_new, minlength=S)
            if self._first_long is None:
                hit = np.flatnonzero(fresh & ((f & _LONG) != 0))
                if hit.size:
                    j = int(hit[0])
                    self._first_long = int(first_target(int(p.row[j]), int(p.offset[j]), R))
            self._flags[i] = f | _STARTED
            if self._prot_occ.size:
                mark[:] = False
                mark[i] = True  # the live occurrences placed in this batch
                at = np.minimum(np.searchsorted(self._occ, self._prot_occ), max(self._occ.size - 1, 0))
                self._prot_started |= (self._occ[at] == self._prot_occ) & mark[at]
            added = p.bos_inserted & ((f & _ADDED) != 0)
            np.add.at(self._left, i, -p.length)
            np.add.at(self._emit, i, p.length - added)
            strat = self._strat[i]
            c["emitted"] += np.bincount(strat, weights=p.length - added, minlength=S).round().astype(np.int64)
            c["targets"] += np.bincount(strat, weights=p.length - (p.offset == 0), minlength=S
                                        ).round().astype(np.int64)
            t["emitted"] += int(p.length.sum())
            t["crops"] += int(p.crop.sum())
            t["bos_only"] += int((p.crop & (p.length == 1)).sum())
            if p.crop.any():  # a crop emits at most R tokens: a dense histogram
                counts = self._crop_counts
                hist = np.bincount(p.length[p.crop], minlength=R + 1)
                for k in np.flatnonzero(hist).tolist():
                    counts[k] = counts.get(k, 0) + int(hist[k])
        d = b.discard
        if d.occurrence.size:
            i = self._idx(d.occurrence, "Discard")
            np.add.at(self._left, i, -d.length)
            strat = self._strat[i]
            c["discarded"] += np.bincount(strat, weights=d.length, minlength=S).round().astype(np.int64)
            t["discarded"] += int(d.length.sum())
        fl = b.filtered
        if fl.occurrence.size:
            held = fl.length > 0  # an empty document is settled at its arrival already
            i = self._idx(fl.occurrence[held], "Filtered")
            np.add.at(self._left, i, -fl.length[held])
            strat = stratum_index(fl.length, self.boundaries)
            c["filtered_sources"] += np.bincount(strat, minlength=S)
            c["filtered_tokens"] += np.bincount(strat, weights=fl.length, minlength=S
                                                ).round().astype(np.int64)
            t["filtered_sources"] += int(fl.occurrence.size)
            t["filtered"] += int(fl.length.sum())
        t["padding"] += int(b.padding.length.sum())
        t["repeated"] += int(b.repeat.length.sum())
        if b.exhausted.row.size and self._exhausted_at is None:
            self._exhausted_at = int(b.exhausted.row[0])
        if (self._left < 0).any():
            raise InputError("inconsistent event stream: an occurrence emitted or dropped more than it held")
        if b.horizon is not None:
            self._finish(b.horizon)
        self._settle()

    def _take_placements(self, row: Int64Array, off: Int64Array, i: Int64Array) -> None:
        """Fold the compiled placement accounting of a batch into the totals (the numpy path's result)."""
        assert self._kernels is not None
        sums, by = self._kernels.take()
        t, c = self._t, self._counts
        started, emitted, n_crops, bos_only, first = sums
        t["started"] += started
        t["emitted"] += emitted
        t["crops"] += n_crops
        t["bos_only"] += bos_only
        for key, row_by in zip(("started", "emitted", "targets"), by, strict=True):
            c[key] += row_by
        if self._first_long is None and first >= 0:
            self._first_long = int(first_target(int(row[first]), int(off[first]), self.capacity))
        if self._prot_occ.size:
            mark = np.zeros(self._occ.size, np.bool_)
            mark[i] = True  # the live occurrences placed in this batch
            at = np.minimum(np.searchsorted(self._occ, self._prot_occ), max(self._occ.size - 1, 0))
            self._prot_started |= (self._occ[at] == self._prot_occ) & mark[at]

    def _settle(self) -> None:
        """Settle and forget the occurrences with no token left (the filtered ones before their Filtered)."""
        done = self._left == 0
        if not done.any():
            return
        L, em = self._len[done], self._emit[done]
        strat = self._strat[done]
        self._counts["full"] += np.bincount(strat, weights=((em == L) & (L > 0)), minlength=self._S
                                            ).round().astype(np.int64)
        keep = ~done
        self._map = None
        self._occ, self._len, self._left = self._occ[keep], self._len[keep], self._left[keep]
        self._strat = self._strat[keep]
        self._emit, self._flags = self._emit[keep], self._flags[keep]

    def _finish(self, h: Horizon) -> None:
        self.horizon = h
        if h.buffered:
            occ, _, _, ln, bos = span_columns(h.buffered)
            i = self._idx(occ.astype(np.int64), "buffered span")  # the columns may be int32
            added = bos & ((self._flags[i] & _ADDED) != 0)
            strat = self._strat[i]
            self._buffered_by = np.bincount(strat, weights=ln - added, minlength=self._S
                                            ).round().astype(np.int64)
            self._buffered_tokens = int(ln.sum())
        else:
            self._buffered_tokens = 0
        # the horizon settles every live occurrence: nothing more can happen to it
        full = (self._emit == self._len) & (self._len > 0)
        self._counts["full"] += np.bincount(self._strat, weights=full,
                                            minlength=self._S).round().astype(np.int64)
        empty = np.zeros(0, dtype=np.int64)
        self._map = None
        self._occ, self._len, self._left, self._emit = empty, empty, empty, empty
        self._flags = np.zeros(0, dtype=np.uint8)
        self._strat = np.zeros(0, dtype=np.intp)

    def _check(self) -> None:
        """Assert the internal invariants."""
        n = self._occ.size
        assert self._len.size == self._left.size == self._emit.size == self._flags.size == n
        assert np.array_equal(self._strat, stratum_index(self._len, self.boundaries)), "live strata"
        assert (np.diff(self._occ) > 0).all(), "live occurrences out of order"
        assert (self._left > 0).all(), "a settled occurrence is still live"
        assert self.live_peak >= n
        c = self._counts
        assert (c["started"] <= c["arrived"]).all() and (c["full"] <= c["arrived"]).all()
        assert self._prot_len.size == self._prot_occ.size == self._prot_started.size
        assert self._prot_len.size <= max(self.min_buffer - 1, 0)

    # ------------------------------------------------------------------ results

    def result(self) -> StreamResult:
        """The :class:`StreamResult`; requires the Horizon."""
        self._flush()
        h = self.horizon
        if h is None:
            raise InputError("result() needs the Horizon event: feed the whole event stream first")
        R, t, c = self.capacity, self._t, self._counts
        summary = ReplaySummary(
            rows=h.rows, targets=h.rows * (R - 1), emitted_tokens=t["emitted"],
            discarded_tokens=t["discarded"], buffered_tokens=self._buffered_tokens,
            consumed_sources=t["consumed_sources"], consumed_tokens=t["consumed_tokens"],
            added_bos_tokens=t["added"], crop_events=t["crops"], crop_bos_only=t["bos_only"],
            sources_started=t["started"], first_over_capacity_target=self._first_long,
            stop_reason=h.stop_reason, partial_row_tokens=h.partial_row_tokens,
            exhausted_at_row=(self._exhausted_at if self._exhausted_at is not None
                              or h.stop_reason != "exhausted" else h.rows),
            padding_tokens=t["padding"], repeated_tokens=t["repeated"],
            filtered_sources=t["filtered_sources"], filtered_tokens=t["filtered"],
        )
        labels = stratum_labels(self.boundaries)
        los = [1, *(x + 1 for x in self.boundaries)]
        his: list[int | None] = [*self.boundaries, None]
        strata = tuple(
            StratumRow(labels[s], los[s], his[s], int(c["arrived"][s]), int(c["started"][s]),
                       int(c["full"][s]), int(c["arrived_tokens"][s]), int(c["emitted"][s]),
                       int(c["discarded"][s]),
                       int(self._buffered_by[s]), int(c["targets"][s]), int(c["filtered_sources"][s]),
                       int(c["filtered_tokens"][s]))
            for s in range(self._S))
        if self._kernels is not None:
            self._kernels.take_crops(self._crop_counts)
        median = counts_median(self._crop_counts)
        return StreamResult(summary, strata, int(self._prot_occ.size), int(self._prot_len.sum()),
                            int(self._prot_started.sum()), median, self.live_peak)
