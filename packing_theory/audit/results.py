"""The value types an audit reports (frozen dataclasses with ``to_dict``).

Seed 000 §6 asks a practical audit to record four quantities *separately*:
token mass (:class:`MassPartition`), sources started (:class:`Aggregates`,
:class:`ProtectedMass`), positions exposed (:class:`ExposureProfile`,
:class:`CoverageRow`) and the finite evaluation population
(:mod:`packing_theory.audit.population`). :class:`SourceRecord` is one
source's ledger line in detail mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..peers import PeerFigures
from .strata import stratum_index

_Ints = Sequence[int] | npt.NDArray[np.int64]

__all__ = [
    "Aggregates",
    "CoverageRow",
    "EmittedInterval",
    "ExposureProfile",
    "MassPartition",
    "ProtectedMass",
    "SeriesSample",
    "SourceRecord",
    "StratumRow",
]



@dataclass(frozen=True, slots=True)
class MassPartition:
    """Token mass of one replay.

    ``arrived_tokens + added_bos == emitted_tokens + discarded_tokens +
    filtered_tokens + buffered_tokens`` (:attr:`identity_holds`).
    ``emitted_tokens`` counts row positions holding source tokens, including
    added BOS markers (``emitted_added_bos``); source tokens alone are
    ``emitted_tokens - emitted_added_bos``. ``padding_tokens`` and
    ``repeated_tokens`` fill row positions too but are never emitted mass.

    ``unused_capacity_tokens`` counts the row positions that hold no token
    (the :class:`~packing_theory.engine.events.Padding` events);
    ``padding_tokens`` the pad tokens actually stored there. A ledger takes
    every unused position as a stored pad; a peer's audit replaces the count
    by what its framework stores or its collator adds
    (:meth:`Aggregates.with_peer_figures`: TRL's ``pack_dataset`` stores none).
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
    unused_capacity_tokens: int = 0

    @property
    def identity_holds(self) -> bool:
        """The mass identity of :mod:`packing_theory.engine.events`."""
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
    partial_row_tokens: int = 0
    """Of ``emitted_tokens``, those in the unfinished last row (never delivered, so never trained); filled
    in by the measurement (:func:`~packing_theory.audit.documents.partial_row_by_stratum`)."""

    @property
    def never_started_sources(self) -> int:
        """Arrived occurrences with no emitted token."""
        return self.arrived_sources - self.started_sources

    @property
    def trained_tokens(self) -> int:
        """Emitted tokens in complete rows (the unfinished row's are not trained)."""
        return self.emitted_tokens - self.partial_row_tokens

    @property
    def retention(self) -> float | None:
        """Trained share of the stratum's loaded (arrived) source-token mass: tokens in complete rows, the
        unfinished row left out."""
        return self.trained_tokens / self.arrived_tokens if self.arrived_tokens else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the derived fields."""
        return {**asdict(self), "never_started_sources": self.never_started_sources,
                "trained_tokens": self.trained_tokens, "retention": self.retention}


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
        targets: their targets: ``rows * (R - 1)`` for the streaming family (row
            position 0 is input only); for a peer, the positions its framework's
            training collator predicts (:attr:`peer_figures`).
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
        peer_figures: for a peer, its framework-true figures
            (:class:`~packing_theory.peers.PeerFigures`: the rule for padding and
            targets, the options it ran with, defaults included, and the
            framework's own horizon); ``None`` for the streaming family.
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
    peer_figures: PeerFigures | None = None

    @property
    def never_started_sources(self) -> int:
        """Arrived occurrences with no emitted token."""
        return self.arrived_sources - self.started_sources

    def with_peer_figures(
        self, figures: PeerFigures, occurrence_targets: tuple[_Ints, _Ints] | None = None,
    ) -> Aggregates:
        """These aggregates with a peer's framework-true targets and padding (and the figures kept).

        The row-position counts stay (``mass.unused_capacity_tokens``); ``targets``
        and ``mass.padding_tokens`` become the framework's (see
        :mod:`packing_theory.peers._figures`). ``occurrence_targets`` (the
        accumulator's :meth:`~packing_theory.peers.FigureAccumulator.occurrence_target_columns`:
        arrived lengths and targets per occurrence) re-splits the strata's
        ``targets`` by the same rule, so that they sum to ``targets``.
        """
        strata = self.strata
        if occurrence_targets is not None:
            lengths, targets = occurrence_targets
            by = np.zeros(len(self.strata), dtype=np.int64)
            step = 1 << 20  # in slices: O(slice) temporaries, whatever the occurrences
            for lo in range(0, len(lengths), step):
                np.add.at(by, stratum_index(lengths[lo : lo + step], self.boundaries),
                          np.asarray(targets[lo : lo + step], dtype=np.int64))
            strata = tuple(replace(s, targets=int(t)) for s, t in zip(self.strata, by.tolist(), strict=True))
        return replace(self, targets=figures.targets, peer_figures=figures, strata=strata,
                       mass=replace(self.mass, padding_tokens=figures.padding_tokens,
                                    unused_capacity_tokens=figures.unused_capacity_tokens))

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
            **({} if self.peer_figures is None else {"peer_figures": self.peer_figures.to_dict()}),
        }


class EmittedInterval(NamedTuple):
    """One placement of a source, as recorded by a detail-mode ledger.

    ``length`` counts row positions (as :class:`~packing_theory.engine.events.Placement`).
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
