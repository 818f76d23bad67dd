"""The source-inclusion audit: a ledger fed by placement events (seed 000 §5.1, §6).

Seed 000 §6 asks a practical audit to record four quantities *separately*:

1. **token mass** — emitted, discarded and still buffered (:class:`MassPartition`);
2. **sources** — which original source occurrences have started at all
   (:attr:`Aggregates.started_sources`, :class:`ProtectedMass`);
3. **exposure** — which positions within each source were emitted
   (:class:`ExposureProfile`, :class:`CoverageRow`);
4. **the finite evaluation population** — which sources and length strata a
   budgeted evaluation score can contain at all (:class:`EvalPopulation`).

:class:`Ledger` consumes the event stream of *any* packer
(:mod:`packing_theory.spans`): it never looks at a packer's internals. In the
default aggregate mode it keeps a few compact numpy arrays sized by
occurrences (about 50 bytes per occurrence) and bounded chunk buffers;
``detail=True`` additionally keeps every placement and discard so that
:meth:`Ledger.record` can return one source's emitted intervals.

Length strata
-------------
Strata use BOS-inclusive original lengths and the paper's boundaries
:data:`STRATA_BOUNDARIES` ``= (32, 128, 512, 1024, 2049, 4096, 8192, 16384)``:
stratum ``k`` holds ``boundaries[k-1] < L <= boundaries[k]``, giving
``1–32, 33–128, 129–512, 513–1024, 1025–2049, 2050–4096, 4097–8192,
8193–16384, >16384`` (seed 000 §5.1 quotes 33–128, 513–1024, 1025–2049; §4
uses 128…16384 for its evaluation diagnostic).

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

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import chain, pairwise
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ._checks import check_int
from .packer import Engine, make_packer
from .policies import POLICIES, LengthsInput, PackerConfig
from .spans import Arrival, BosAdded, Discard, Event, Exhausted, Filtered, Horizon, Padding, Placement, Repeat

__all__ = [
    "AUTORESEARCH_EVAL_TARGETS",
    "AUTORESEARCH_ROWS",
    "DEFAULT_EVAL_PREFIXES",
    "STRATA_BOUNDARIES",
    "Aggregates",
    "AuditResult",
    "CorpusSummary",
    "CoverageRow",
    "EmittedInterval",
    "EvalPopulation",
    "EvalPrefix",
    "ExposureProfile",
    "Ledger",
    "MassPartition",
    "ProtectedMass",
    "SeriesSample",
    "SourceRecord",
    "StartupSpread",
    "StratumRow",
    "audit_events",
    "audit_lengths",
    "corpus_summary",
    "evaluation_population",
    "run_audit",
    "startup_delays",
    "stratum_index",
    "stratum_labels",
]

Int64Array = npt.NDArray[np.int64]

STRATA_BOUNDARIES: tuple[int, ...] = (32, 128, 512, 1024, 2049, 4096, 8192, 16384)
"""The paper's BOS-inclusive length boundaries; stratum k is ``(b[k-1], b[k]]``, the last ``> 16384``."""

AUTORESEARCH_ROWS = 243_968
"""autoresearch's training budget: 953 updates × 256 rows (499,646,464 targets at R = 2049)."""

AUTORESEARCH_EVAL_TARGETS = 20_971_520
"""autoresearch's official evaluation budget in targets (10,240 rows at R = 2049)."""

DEFAULT_EVAL_PREFIXES: tuple[int, ...] = (2_097_152, 10_485_760)
"""Evaluation prefixes quoted by seed 000 §5.1 (2.10 M and 10.49 M targets)."""

_CHUNK = 8192
_NO_TARGET = np.iinfo(np.int64).max
_MAX_SERIES = 1024


# --------------------------------------------------------------------------- strata


def _check_boundaries(boundaries: Sequence[int]) -> tuple[int, ...]:
    b = tuple(boundaries)
    if not b:
        raise ValueError("boundaries must be a non-empty increasing sequence of positive ints, got ()")
    for i, v in enumerate(b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"boundaries[{i}] must be a positive int, got {v!r}")
    if any(x >= y for x, y in pairwise(b)):
        raise ValueError(f"boundaries must be strictly increasing, got {b}")
    return tuple(int(v) for v in b)


def stratum_labels(boundaries: Sequence[int] = STRATA_BOUNDARIES) -> list[str]:
    """Human labels of the strata defined by ``boundaries``.

    >>> stratum_labels((32, 128))
    ['1–32', '33–128', '>128']
    """
    b = _check_boundaries(boundaries)
    labels = []
    lo = 1
    for hi in b:
        labels.append(f"{lo}–{hi}")
        lo = hi + 1
    labels.append(f">{b[-1]}")
    return labels


def stratum_index(lengths: npt.ArrayLike, boundaries: Sequence[int] = STRATA_BOUNDARIES) -> Int64Array:
    """Stratum of each BOS-inclusive length (vectorised, O(n log k)).

    >>> stratum_index([1, 32, 33, 2049, 2050, 16385]).tolist()
    [0, 0, 1, 4, 5, 8]
    """
    b = np.asarray(_check_boundaries(boundaries), dtype=np.int64)
    return np.searchsorted(b, np.asarray(lengths, dtype=np.int64), side="left").astype(np.int64)


# --------------------------------------------------------------------------- result types


@dataclass(frozen=True, slots=True)
class MassPartition:
    """Token mass of one replay.

    ``arrived_tokens + added_bos == emitted_tokens + discarded_tokens +
    filtered_tokens + buffered_tokens`` (:attr:`identity_holds`).
    ``emitted_tokens`` counts row positions holding source tokens, including
    added BOS markers (``emitted_added_bos``); source tokens alone are
    ``emitted_tokens - emitted_added_bos``. ``padding_tokens`` and
    ``repeated_tokens`` fill row positions too but are never emitted mass.
    """

    arrived_tokens: int
    added_bos: int
    emitted_tokens: int
    emitted_added_bos: int
    discarded_tokens: int
    buffered_tokens: int
    buffered_added_bos: int
    filtered_tokens: int = 0
    padding_tokens: int = 0
    repeated_tokens: int = 0

    @property
    def identity_holds(self) -> bool:
        """The mass identity of :mod:`packing_theory.spans`."""
        return (
            self.arrived_tokens + self.added_bos
            == self.emitted_tokens + self.discarded_tokens + self.filtered_tokens + self.buffered_tokens
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with ``identity_holds``."""
        return {**asdict(self), "identity_holds": self.identity_holds}


@dataclass(frozen=True, slots=True)
class StratumRow:
    """Sources and source-token mass of one original-length stratum.

    Token counts are *source* tokens (added BOS markers excluded), so
    ``arrived_tokens == emitted_tokens + discarded_tokens + filtered_tokens + buffered_tokens``.
    ``targets`` counts prediction targets held by the stratum's row positions
    (markers included; row position 0 is input only).
    """

    label: str
    lo: int
    hi: int | None
    arrived_sources: int
    started_sources: int
    fully_emitted_sources: int
    arrived_tokens: int
    emitted_tokens: int
    discarded_tokens: int
    buffered_tokens: int
    targets: int
    filtered_sources: int = 0
    filtered_tokens: int = 0

    @property
    def never_started_sources(self) -> int:
        """Arrived occurrences with no emitted token."""
        return self.arrived_sources - self.started_sources

    @property
    def retention(self) -> float | None:
        """Emitted share of the stratum's loaded (arrived) source-token mass."""
        return self.emitted_tokens / self.arrived_tokens if self.arrived_tokens else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the derived fields."""
        return {**asdict(self), "never_started_sources": self.never_started_sources,
                "retention": self.retention}


@dataclass(frozen=True, slots=True)
class ProtectedMass:
    """The protected set K of seed 000 §3 at the horizon.

    K is the ``min(B-1, N_L)`` largest keys ``(L, arrival)`` among the ``N_L``
    long arrivals (``L > R``). For ``discard`` and ``continue`` the proposition
    says every member is buffered, unchanged and unstarted
    (``started_members == 0``); other policies are outside its hypotheses.
    """

    members: int
    long_arrivals: int
    tokens: int
    started_members: int
    buffered_tokens: int
    share_of_arrived: float | None
    share_of_buffered: float | None
    """``buffered_tokens / all buffered tokens`` (= ``tokens / buffered`` when every member is buffered)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ExposureProfile:
    """Emitted fraction of source positions by stratum and relative position.

    Position ``o`` of a source of length ``L`` lies in relative bin
    ``floor(o * bins / L)``. ``emitted[s][k]`` counts emitted positions and
    ``positions[s][k]`` all positions of arrived sources of stratum ``s`` in bin
    ``k``; :meth:`fraction` is their ratio. A flat profile means no prefix
    bias; ``discard`` shows a falling one.
    """

    bins: int
    labels: tuple[str, ...]
    emitted: tuple[tuple[int, ...], ...]
    positions: tuple[tuple[int, ...], ...]

    def fraction(self, stratum: int) -> list[float | None]:
        """Emitted fraction per relative bin for one stratum (``None`` where empty)."""
        pairs = zip(self.emitted[stratum], self.positions[stratum], strict=True)
        return [e / p if p else None for e, p in pairs]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the fractions."""
        return {"bins": self.bins, "labels": list(self.labels),
                "emitted": [list(r) for r in self.emitted],
                "positions": [list(r) for r in self.positions],
                "fraction": [self.fraction(s) for s in range(len(self.labels))]}


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """Per-source coverage (emitted source positions / L) over one stratum's arrived sources."""

    label: str
    sources: int
    mean: float | None
    median: float | None
    zero: int
    full: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class SeriesSample(NamedTuple):
    """Buffered mass and protected-set mass after ``targets`` emitted targets."""

    targets: int
    buffered_tokens: int
    protected_tokens: int


@dataclass(frozen=True, slots=True)
class Aggregates:
    """Everything :class:`Ledger` reports about one replay (see the module doc).

    Attributes:
        policy: a label (the replay's policy when known).
        capacity: ``R``.
        min_buffer: ``B``.
        boundaries: the length-stratum boundaries.
        rows: complete rows.
        targets: their targets, ``rows * (R - 1)``.
        stop_reason: from the Horizon event.
        partial_row_tokens: tokens in an incomplete last row.
        exhausted_at_row: row of the Exhausted event, if any.
        mass: the token mass partition.
        crop_events: crop selections.
        crop_bos_only: crops emitting exactly one token (the BOS).
        median_crop_prefix: the median number of tokens a crop emitted.
        arrived_sources: occurrences that entered the buffer.
        started_sources: occurrences with at least one emitted token.
        fully_emitted_sources: occurrences whose every source position was emitted.
        distinct_sources_started: distinct original source ids started (passes merged).
        conservation_violations: occurrences whose emitted + discarded +
            buffered source tokens differ from their length (0 for a consistent stream).
        over_capacity_emitted_fraction: share of emitted row tokens from
            occurrences with original length ``> R``.
        first_over_capacity_target: startup delay — target index of the first
            emitted token of a long occurrence (``None`` if none started).
        protected: the protected set at the horizon.
        strata: one :class:`StratumRow` per length stratum.
        exposure: the relative-position exposure profile.
        coverage: one :class:`CoverageRow` per stratum.
        series: buffered and protected mass over time (about 100–1000 samples).
    """

    policy: str
    capacity: int
    min_buffer: int
    boundaries: tuple[int, ...]
    rows: int
    targets: int
    stop_reason: str
    partial_row_tokens: int
    exhausted_at_row: int | None
    mass: MassPartition
    crop_events: int
    crop_bos_only: int
    median_crop_prefix: float | None
    arrived_sources: int
    started_sources: int
    fully_emitted_sources: int
    distinct_sources_started: int
    conservation_violations: int
    over_capacity_emitted_fraction: float | None
    first_over_capacity_target: int | None
    protected: ProtectedMass
    strata: tuple[StratumRow, ...]
    exposure: ExposureProfile
    coverage: tuple[CoverageRow, ...]
    series: tuple[SeriesSample, ...] = field(repr=False)
    filtered_sources: int = 0

    @property
    def never_started_sources(self) -> int:
        """Arrived occurrences with no emitted token."""
        return self.arrived_sources - self.started_sources

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready nested dict (the per-policy block of the report schema)."""
        return {
            "policy": self.policy,
            "capacity": self.capacity,
            "min_buffer": self.min_buffer,
            "rows": self.rows,
            "targets": self.targets,
            "stop_reason": self.stop_reason,
            "partial_row_tokens": self.partial_row_tokens,
            "exhausted_at_row": self.exhausted_at_row,
            "mass": self.mass.to_dict(),
            "crops": {"events": self.crop_events, "bos_only": self.crop_bos_only,
                      "median_prefix": self.median_crop_prefix},
            "sources": {"arrived": self.arrived_sources, "started": self.started_sources,
                        "never_started": self.never_started_sources,
                        "fully_emitted": self.fully_emitted_sources,
                        "filtered": self.filtered_sources,
                        "distinct_started": self.distinct_sources_started,
                        "conservation_violations": self.conservation_violations},
            "over_capacity_emitted_fraction": self.over_capacity_emitted_fraction,
            "first_over_capacity_target": self.first_over_capacity_target,
            "protected": self.protected.to_dict(),
            "strata": [s.to_dict() for s in self.strata],
            "exposure": self.exposure.to_dict(),
            "coverage": [c.to_dict() for c in self.coverage],
            "series": {"targets": [s.targets for s in self.series],
                       "buffered_tokens": [s.buffered_tokens for s in self.series],
                       "protected_tokens": [s.protected_tokens for s in self.series]},
        }


class EmittedInterval(NamedTuple):
    """One placement of a source, as recorded by a detail-mode ledger.

    ``length`` counts row positions (as :class:`~packing_theory.spans.Placement`).
    With ``bos_inserted`` the first position is a BOS: an *added* marker
    (``added_bos``) or the source's own BOS moved in front (``random-span``).
    """

    start: int
    length: int
    row: int
    offset: int
    bos_inserted: bool
    added_bos: bool

    @property
    def source_positions(self) -> tuple[range, ...]:
        """The source offsets this placement emitted."""
        if not self.bos_inserted:
            return (range(self.start, self.start + self.length),)
        text = range(self.start, self.start + self.length - 1)
        return (text,) if self.added_bos else (range(0, 1), text)


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """The ledger line of one source occurrence (detail mode).

    Attributes:
        occurrence: arrival id.
        source: original source id.
        pass_index: corpus pass.
        length: original BOS-inclusive length.
        intervals: its placements in emission order.
        discarded: source tokens dropped.
        buffered: source tokens still buffered at the horizon.
        added_bos: BOS markers the packer created for it.
        first_target: target index of its first emitted target, or ``None``.
        filtered: source tokens removed before packing (the whole length, or 0).
    """

    occurrence: int
    source: int
    pass_index: int
    length: int
    intervals: tuple[EmittedInterval, ...]
    discarded: int
    buffered: int
    added_bos: int
    first_target: int | None
    filtered: int = 0

    @property
    def started(self) -> bool:
        """At least one token emitted."""
        return bool(self.intervals)

    @property
    def emitted(self) -> int:
        """Source tokens emitted (added markers excluded)."""
        return sum(i.length - i.added_bos for i in self.intervals)

    @property
    def coverage(self) -> float:
        """Emitted share of the source's positions."""
        return self.emitted / self.length if self.length else 0.0


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
        self.boundaries = _check_boundaries(boundaries)
        self._b = np.asarray(self.boundaries, dtype=np.int64)
        self.n_strata = len(self.boundaries) + 1
        self.bins = int(exposure_bins)
        self._chunk = int(chunk)
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
        self._crop_hist = np.zeros(self.capacity + 1, dtype=np.int64)
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
            raise TypeError(f"events must be packing_theory.spans events, got {type(ev).__name__} {ev!r}")

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
        assert int(self._crop_hist.sum()) <= self._emitted_tokens
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
        self._stratum[occ] = np.searchsorted(self._b, length, side="left")
        self._arrived_tokens += int(length.sum())
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
        first = row * (R - 1) + np.maximum(off - 1, 0)
        np.minimum.at(self._first, occ[has_target], first[has_target])
        self._emitted_tokens += int(ln.sum())
        self._emitted_added += int(added.sum())
        self._long_emitted += int(ln[L > R].sum())
        if crop.any():
            self._crop_hist += np.bincount(ln[crop], minlength=R + 1)
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
        K = self.bins
        k = np.arange(K + 1, dtype=np.int64)
        edges = (k[None, :] * L[:, None] + K - 1) // K  # ceil(k L / K), shape (n, K+1)
        lo, hi = edges[:, :-1], edges[:, 1:]
        cnt = np.minimum(b[:, None], hi) - np.maximum(a[:, None], lo)
        np.maximum(cnt, 0, out=cnt)
        idx = strat[:, None] * K + k[None, :-1]
        self._expo += np.bincount(idx.ravel(), weights=cnt.ravel(), minlength=self.n_strata * K
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
        R, S, K = self.capacity, self.n_strata, self.bins
        n = self._n
        arrived = self._arrived[:n]
        L = self._length[:n][arrived]
        strat = self._stratum[:n][arrived].astype(np.int64)
        em = self._emitted[:n][arrived]
        dc = self._discarded[:n][arrived]
        ft = self._filtered[:n][arrived]
        bf = self._buffered[arrived]
        started = self._started[:n][arrived]
        filtered = ft > 0
        full = (em == L) & (L > 0)
        labels = stratum_labels(self.boundaries)

        def by(w: npt.NDArray[Any]) -> list[int]:
            return [int(v) for v in np.bincount(strat, weights=w, minlength=S).round()]

        counts = np.bincount(strat, minlength=S)
        arrived_tok, em_tok, dc_tok, bf_tok = by(L), by(em), by(dc), by(bf)
        st_cnt, full_cnt = by(started.astype(np.int64)), by(full.astype(np.int64))
        ft_cnt, ft_tok = by(filtered.astype(np.int64)), by(ft)
        los = [1, *(b + 1 for b in self.boundaries)]
        his: list[int | None] = [*self.boundaries, None]
        strata = tuple(
            StratumRow(labels[s], los[s], his[s], int(counts[s]), st_cnt[s], full_cnt[s], arrived_tok[s],
                       em_tok[s], dc_tok[s], bf_tok[s], int(self._targets_by_stratum[s]),
                       ft_cnt[s], ft_tok[s])
            for s in range(S))
        # exposure denominators over unique lengths
        uniq, ucnt = _value_counts(L)
        kk = np.arange(K + 1, dtype=np.int64)
        edges = (kk[None, :] * uniq[:, None] + K - 1) // K
        sizes = (edges[:, 1:] - edges[:, :-1]) * ucnt[:, None]
        ustrat = np.searchsorted(self._b, uniq, side="left")
        positions = np.zeros((S, K), dtype=np.int64)
        np.add.at(positions, ustrat, sizes)
        expo = self._expo.reshape(S, K)
        exposure = ExposureProfile(K, tuple(labels), tuple(tuple(int(v) for v in r) for r in expo),
                                   tuple(tuple(int(v) for v in r) for r in positions))
        cov = np.divide(em, L, out=np.zeros(L.size), where=L > 0)
        coverage = []
        for s in range(S):
            c = cov[strat == s]
            coverage.append(CoverageRow(labels[s], int(c.size),
                                        float(c.mean()) if c.size else None,
                                        float(np.median(c)) if c.size else None,
                                        int((c == 0).sum()), int((c == 1).sum())))
        # protected set
        prot_occ = self._prot_occ
        prot_tokens = int(self._prot_len.sum())
        buffered_tokens = self._buffered_tokens
        protected = ProtectedMass(
            members=int(prot_occ.size),
            long_arrivals=self._long_arrivals,
            tokens=prot_tokens,
            started_members=int(self._started[prot_occ].sum()),
            buffered_tokens=int(self._buffered[prot_occ].sum()),
            share_of_arrived=prot_tokens / self._arrived_tokens if self._arrived_tokens else None,
            share_of_buffered=(int(self._buffered[prot_occ].sum()) / buffered_tokens
                               if buffered_tokens else None),
        )
        long_first = self._first[:n][arrived & (self._length[:n] > R) & (self._first[:n] != _NO_TARGET)]
        hist = self._crop_hist
        crops = int(hist.sum())
        mass = MassPartition(self._arrived_tokens, self._added_bos, self._emitted_tokens, self._emitted_added,
                             self._discarded_tokens, buffered_tokens, self._buffered_added,
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
            crop_events=crops,
            crop_bos_only=int(hist[1]),
            median_crop_prefix=_hist_median(hist),
            arrived_sources=int(arrived.sum()),
            started_sources=int(started.sum()),
            fully_emitted_sources=int(full.sum()),
            distinct_sources_started=_count_distinct(self._source[:n][arrived][started]),
            conservation_violations=int((em + dc + ft + bf != L).sum()),
            over_capacity_emitted_fraction=(self._long_emitted / self._emitted_tokens
                                            if self._emitted_tokens else None),
            first_over_capacity_target=int(long_first.min()) if long_first.size else None,
            protected=protected,
            strata=strata,
            exposure=exposure,
            coverage=tuple(coverage),
            series=tuple(self._series),
            filtered_sources=self._filtered_sources,
        )
        return self._result

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
        if isinstance(occurrence, bool) or not isinstance(occurrence, (int, np.integer)):
            raise TypeError(f"occurrence must be an int, got {type(occurrence).__name__} {occurrence!r}")
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


def _hist_median(hist: Int64Array) -> float | None:
    total = int(hist.sum())
    if total == 0:
        return None
    c = np.cumsum(hist)
    lo = int(np.searchsorted(c, (total - 1) // 2, side="right"))
    hi = int(np.searchsorted(c, total // 2, side="right"))
    return (lo + hi) / 2


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

    Keyword arguments are :class:`~packing_theory.policies.PackerConfig` fields.

    >>> agg = audit_lengths([5, 3, 9, 4, 12, 2], capacity=8, min_buffer=2, refill=2, policy="continue")
    >>> agg.mass.discarded_tokens, agg.mass.identity_holds, agg.stop_reason
    (0, True, 'exhausted')
    """
    if config is None:
        config = PackerConfig(**kwargs)
    elif kwargs:
        raise TypeError(f"pass either config or keyword arguments, not both (got {sorted(kwargs)})")
    ledger = Ledger.from_config(config, **(ledger_kwargs or {}))
    ledger.consume(make_packer(engine, config).events(lengths), progress=progress)
    return ledger.result()


@dataclass(frozen=True, slots=True)
class StartupSpread:
    """Startup delay (first over-capacity target) over random permutations of one length multiset.

    ``delays[i]`` is ``None`` when permutation ``i`` emitted no long source
    within the budget. Computed by replaying each permutation only up to its
    first long placement.
    """

    policy: str
    permutations: int
    seed: int
    delays: tuple[int | None, ...]

    def _known(self) -> list[int]:
        return sorted(d for d in self.delays if d is not None)

    @property
    def minimum(self) -> int | None:
        """Smallest delay (``None`` if no permutation started a long source)."""
        k = self._known()
        return k[0] if k else None

    @property
    def maximum(self) -> int | None:
        """Largest delay among permutations that started a long source."""
        k = self._known()
        return k[-1] if k else None

    @property
    def median(self) -> float | None:
        """Median delay among permutations that started a long source."""
        k = self._known()
        return float(np.median(k)) if k else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"policy": self.policy, "permutations": self.permutations, "seed": self.seed,
                "delays": list(self.delays), "min": self.minimum, "median": self.median,
                "max": self.maximum}


def startup_delays(
    lengths: LengthsInput,
    config: PackerConfig | None = None,
    *,
    permutations: int = 20,
    seed: int = 0,
    engine: Engine = "fast",
    **kwargs: Any,
) -> StartupSpread:
    """Startup delay over ``permutations`` random orders of the same lengths (seed 000 §5.1 used 20).

    Each replay stops at its first placement of a long occurrence (original
    length ``> R``), so the cost is that of the replay prefix, not the budget.

    >>> s = startup_delays([3, 9, 2, 4, 10, 1] * 5, capacity=8, min_buffer=3, refill=2, permutations=4)
    >>> s.permutations, len(s.delays), s.minimum is not None
    (4, 4, True)
    """
    if config is None:
        config = PackerConfig(**kwargs)
    elif kwargs:
        raise TypeError(f"pass either config or keyword arguments, not both (got {sorted(kwargs)})")
    check_int("permutations", permutations, 1)
    from .lengths import validate_lengths

    base = validate_lengths(np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths))
    rng = np.random.default_rng(seed)
    R = config.capacity
    packer = make_packer(engine, config)
    delays: list[int | None] = []
    for _ in range(permutations):
        perm = rng.permutation(base)
        delay: int | None = None
        # one pass: stream the permutation lazily, so only the replayed prefix is converted
        gen = packer.events(_lazy_ints(perm) if config.passes == 1 else perm)
        try:
            for ev in gen:
                if type(ev) is Placement and perm[ev.source] > R:
                    delay = ev.first_target(R)
                    break
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()
        delays.append(delay)
    return StartupSpread(config.policy, int(permutations), int(seed), tuple(delays))


def _lazy_ints(arr: Int64Array, chunk: int = 16384) -> Iterator[int]:
    for i in range(0, arr.size, chunk):
        yield from arr[i : i + chunk].tolist()


# --------------------------------------------------------------------------- evaluation population


@dataclass(frozen=True, slots=True)
class EvalPrefix:
    """Inclusion within the first ``targets`` targets of the evaluation stream.

    ``included[s]`` counts population sources of stratum ``s`` with at least one
    target before ``targets``; ``zero_inclusion`` lists the labels of strata
    present in the population (``population[s] > 0``) with none included.
    """

    targets: int
    included: tuple[int, ...]
    zero_inclusion: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class EvalPopulation:
    """Which sources and length strata a budgeted evaluation score can contain (seed 000 §3, §5.1).

    Attributes:
        policy: the evaluation loader's policy.
        targets: the evaluation budget in targets.
        labels: stratum labels.
        population: sources per stratum in the intended population (the
            whole evaluation stream unless another population was given).
        arrived: distinct evaluation sources that entered the buffer within the budget.
        included: distinct sources with at least one scored target within the budget.
        target_counts: scored targets per stratum, counted up to the budget.
        zero_inclusion: labels of strata present in the population with no
            included source: reweighting the observed losses cannot identify
            their loss (the support statement of seed 000 §3).
        prefixes: the same verdict for shorter budgets (nested prefixes).
        first_over_capacity_target: first target of a source longer than R, if any.
        protected_tokens: the protected-set mass at the budget.
        protected_share_of_arrived: its share of the arrived mass.
        included_sources: the original source ids with at least one scored target.
    """

    policy: str
    targets: int
    labels: tuple[str, ...]
    population: tuple[int, ...]
    arrived: tuple[int, ...]
    included: tuple[int, ...]
    target_counts: tuple[int, ...]
    zero_inclusion: tuple[str, ...]
    prefixes: tuple[EvalPrefix, ...]
    first_over_capacity_target: int | None
    protected_tokens: int
    protected_share_of_arrived: float | None
    included_sources: Int64Array = field(repr=False, compare=False)

    @property
    def verdict(self) -> str:
        """One sentence: which strata the score cannot contain."""
        if not self.zero_inclusion:
            return (f"every length stratum present in the population has at least one source scored "
                    f"within {self.targets:,} targets")
        return (f"zero inclusion within {self.targets:,} targets for stratum(s) "
                f"{', '.join(self.zero_inclusion)}: their loss is not identified by reweighting "
                f"the observed rows")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the source id list is summarised by its length)."""
        return {"policy": self.policy, "targets": self.targets, "labels": list(self.labels),
                "population": list(self.population), "arrived": list(self.arrived),
                "included": list(self.included), "target_counts": list(self.target_counts),
                "zero_inclusion": list(self.zero_inclusion),
                "prefixes": [p.to_dict() for p in self.prefixes],
                "first_over_capacity_target": self.first_over_capacity_target,
                "protected_tokens": self.protected_tokens,
                "protected_share_of_arrived": self.protected_share_of_arrived,
                "included_source_count": int(self.included_sources.size),
                "verdict": self.verdict}


def evaluation_population(
    lengths: LengthsInput,
    config: PackerConfig | None = None,
    *,
    targets: int = AUTORESEARCH_EVAL_TARGETS,
    prefixes: Sequence[int] = DEFAULT_EVAL_PREFIXES,
    population: npt.ArrayLike | None = None,
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
    engine: Engine = "fast",
    **kwargs: Any,
) -> EvalPopulation:
    """Replay an evaluation stream to ``targets`` and report which strata it can score.

    ``config`` (or keyword :class:`PackerConfig` fields) gives the evaluation
    loader; its budget is replaced by ``targets``. ``population`` (lengths of
    the intended population) defaults to the whole evaluation stream.

    Complexity: one replay of the budget plus O(sources) numpy work.

    >>> ev = evaluation_population([3, 40, 5, 2, 6, 4] * 4, capacity=8, min_buffer=3, refill=2,
    ...                            targets=21, prefixes=(7,), boundaries=(8,))
    >>> ev.labels, ev.population, ev.included, ev.zero_inclusion
    (('1–8', '>8'), (20, 4), (7, 0), ('>8',))
    >>> ev.prefixes[0].included
    (2, 0)
    """
    if config is None:
        config = PackerConfig(**kwargs)
    elif kwargs:
        raise TypeError(f"pass either config or keyword arguments, not both (got {sorted(kwargs)})")
    targets = check_int("targets", targets, 1)
    for i, p in enumerate(prefixes):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 < p <= targets:
            raise ValueError(f"prefixes[{i}] must be an int in 1..targets={targets}, got {p!r}")
    from .lengths import validate_lengths

    arr = lengths if isinstance(lengths, np.ndarray) else np.asarray(list(lengths))
    arr = validate_lengths(arr, name="evaluation lengths")
    pop = arr if population is None else validate_lengths(np.asarray(population), name="population")
    cfg = replace(config, rows=None, targets=int(targets))
    ledger = Ledger.from_config(cfg, boundaries=boundaries)
    bounds_arr = np.asarray(ledger.boundaries, dtype=np.int64)
    R = cfg.capacity
    scored = [0] * (len(ledger.boundaries) + 1)
    stratum_of: dict[int, int] = {}

    def clipped(events: Iterable[Event]) -> Iterator[Event]:
        # Scored targets per stratum, cut at the budget: the last row may hold
        # targets beyond it (rows are whole, the budget need not be).
        for ev in events:
            if isinstance(ev, Arrival):
                stratum_of[ev.occurrence] = int(np.searchsorted(bounds_arr, ev.length, side="left"))
            elif isinstance(ev, Placement):
                first = ev.row * (R - 1) + max(ev.offset - 1, 0)
                n = ev.length - (1 if ev.offset == 0 else 0)
                scored[stratum_of[ev.occurrence]] += max(0, min(first + n, targets) - first)
            yield ev

    ledger.consume(clipped(make_packer(engine, cfg).events(arr)))
    agg = ledger.result()
    cols = ledger.arrays()
    arrived = cols["arrived"]
    strat = cols["stratum"][arrived]
    first = cols["first_target"][arrived]
    src = cols["source"][arrived]
    S = ledger.n_strata
    labels = tuple(stratum_labels(ledger.boundaries))
    pop_counts = tuple(int(v) for v in np.bincount(stratum_index(pop, ledger.boundaries), minlength=S))

    def per_stratum(sel: npt.NDArray[np.bool_]) -> tuple[int, ...]:
        # distinct original sources (a source repeated over passes counts once)
        _, idx = np.unique(src[sel], return_index=True)
        return tuple(int(v) for v in np.bincount(strat[sel][idx], minlength=S))

    def included_within(limit: int) -> tuple[int, ...]:
        return per_stratum((first >= 0) & (first < limit))

    def zero(inc: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(labels[s] for s in range(S) if pop_counts[s] > 0 and inc[s] == 0)

    inc = included_within(int(targets))
    pre = tuple(EvalPrefix(int(p), included_within(int(p)), zero(included_within(int(p))))
                for p in sorted(prefixes))
    sources = np.unique(src[(first >= 0) & (first < targets)])
    first_long = agg.first_over_capacity_target
    return EvalPopulation(
        policy=cfg.policy,
        targets=int(targets),
        labels=labels,
        population=pop_counts,
        arrived=per_stratum(np.ones(src.size, dtype=np.bool_)),
        included=inc,
        target_counts=tuple(scored),
        zero_inclusion=zero(inc),
        prefixes=pre,
        first_over_capacity_target=first_long if first_long is not None and first_long < targets else None,
        protected_tokens=agg.protected.tokens,
        protected_share_of_arrived=agg.protected.share_of_arrived,
        included_sources=sources,
    )


# --------------------------------------------------------------------------- the whole audit


@dataclass(frozen=True, slots=True)
class CorpusSummary:
    """The audited corpus: size and sources per stratum."""

    label: str
    documents: int
    tokens: int
    over_capacity_documents: int
    max_length: int
    strata_sources: tuple[int, ...]
    strata_tokens: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def corpus_summary(lengths: npt.ArrayLike, capacity: int = 2049, *, label: str = "",
                   boundaries: Sequence[int] = STRATA_BOUNDARIES) -> CorpusSummary:
    """Size and stratum census of a length array. O(n).

    >>> corpus_summary([3, 40, 5], capacity=8, boundaries=(8,)).strata_sources
    (2, 1)
    """
    from .lengths import validate_lengths

    arr = validate_lengths(np.asarray(lengths))
    s = stratum_index(arr, boundaries)
    S = len(boundaries) + 1
    return CorpusSummary(label, int(arr.size), int(arr.sum()), int((arr > capacity).sum()), int(arr.max()),
                         tuple(int(v) for v in np.bincount(s, minlength=S)),
                         tuple(int(v) for v in np.bincount(s, weights=arr, minlength=S).round()))


@dataclass(frozen=True, slots=True)
class AuditResult:
    """A complete audit: one corpus, several policies side by side, startup spreads, evaluation.

    ``seconds`` holds wall times by stage (``"replay:<policy>"``,
    ``"startup:<policy>"``, ``"evaluation:<policy>"``).
    """

    corpus: CorpusSummary
    config: PackerConfig
    boundaries: tuple[int, ...]
    policies: tuple[Aggregates, ...]
    startup: tuple[StartupSpread, ...]
    evaluation: tuple[EvalPopulation, ...]
    eval_corpus: CorpusSummary | None
    seconds: dict[str, float]

    def policy(self, name: str) -> Aggregates:
        """The aggregates of one policy."""
        for agg in self.policies:
            if agg.policy == name:
                return agg
        raise KeyError(f"policy {name!r} was not audited (audited: {[a.policy for a in self.policies]})")


def run_audit(
    lengths: npt.ArrayLike,
    config: PackerConfig | None = None,
    *,
    policies: Sequence[str] | None = None,
    permutations: int = 20,
    permutation_seed: int = 0,
    eval_lengths: npt.ArrayLike | None = None,
    eval_targets: int = AUTORESEARCH_EVAL_TARGETS,
    eval_prefixes: Sequence[int] = DEFAULT_EVAL_PREFIXES,
    engine: Engine = "fast",
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
    corpus_label: str = "",
    eval_label: str = "",
    progress: Callable[[str, int | None], Callable[[int], None] | None] | None = None,
) -> AuditResult:
    """Audit ``lengths`` under each policy of ``policies`` with the rest of ``config``.

    Args:
        lengths: BOS-inclusive source lengths (the training corpus).
        config: the loader settings (default :class:`PackerConfig`: R = 2049,
            B = 1000, refill 128, and ``rows`` = :data:`AUTORESEARCH_ROWS` when
            neither ``rows`` nor ``targets`` is set).
        policies: policies compared side by side (default: ``config.policy``).
        permutations: startup-delay permutations per policy (0 to skip).
        eval_lengths: an evaluation stream; when given, its population is
            audited with each policy at ``eval_targets`` and ``eval_prefixes``.
        progress: a factory ``(description, total rows) -> callback(rows)``
            (see :func:`packing_theory.report.progress_bar`).

    Complexity: one replay per policy (O(events)), the permutation prefixes,
    and one evaluation replay per policy.
    """
    from .lengths import validate_lengths

    arr = validate_lengths(np.asarray(lengths))
    if config is None:
        config = PackerConfig(rows=AUTORESEARCH_ROWS)
    names: list[str] = list(policies) if policies is not None else [config.policy]
    if not names:
        raise ValueError("policies must name at least one policy, got []")
    for name in names:
        if name not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"policies must not repeat, got {names}")
    if isinstance(permutations, bool) or not isinstance(permutations, (int, np.integer)) or permutations < 0:
        raise ValueError(f"permutations must be an int >= 0, got {permutations!r}")
    seconds: dict[str, float] = {}
    aggs: list[Aggregates] = []
    spreads: list[StartupSpread] = []
    evals: list[EvalPopulation] = []
    ev_arr = None if eval_lengths is None else validate_lengths(np.asarray(eval_lengths),
                                                                name="evaluation lengths")
    for name in names:
        cfg = replace(config, policy=name)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        cb = progress(f"audit {name}", cfg.row_budget) if progress is not None else None
        aggs.append(audit_lengths(arr, cfg, engine=engine, progress=cb,
                                  ledger_kwargs={"boundaries": boundaries}))
        if cb is not None and hasattr(cb, "close"):
            cb.close()
        seconds[f"replay:{name}"] = time.perf_counter() - t0
        if permutations:
            t0 = time.perf_counter()
            spreads.append(startup_delays(arr, cfg, permutations=int(permutations), seed=permutation_seed,
                                          engine=engine))
            seconds[f"startup:{name}"] = time.perf_counter() - t0
        if ev_arr is not None:
            t0 = time.perf_counter()
            evals.append(evaluation_population(ev_arr, cfg, targets=eval_targets, prefixes=eval_prefixes,
                                               boundaries=boundaries, engine=engine))
            seconds[f"evaluation:{name}"] = time.perf_counter() - t0
    return AuditResult(
        corpus=corpus_summary(arr, config.capacity, label=corpus_label, boundaries=boundaries),
        config=config,
        boundaries=_check_boundaries(boundaries),
        policies=tuple(aggs),
        startup=tuple(spreads),
        evaluation=tuple(evals),
        eval_corpus=(corpus_summary(ev_arr, config.capacity, label=eval_label, boundaries=boundaries)
                     if ev_arr is not None else None),
        seconds=seconds,
    )
