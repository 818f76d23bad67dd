"""Framework-true figures of a peer: padding it stores, unused capacity, targets its collator predicts.

The event stream describes rows *positionally*: a
:class:`~packing_theory.engine.events.Padding` event is a row position that
holds no source token. What a framework does with such positions differs:
OLMo-core stores ``pad_token_id`` there, TRL's ``pack_dataset`` stores rows
of variable length and nothing at all. Likewise which positions a trainer
predicts depends on the framework's training collator, not on the row width.
Each peer therefore declares its :class:`TrainerRule` (class attribute
``trainer_rule``), and :class:`FigureAccumulator` (a consumer of the event
stream, :mod:`packing_theory.engine.consumers`) applies it:

* ``unused_capacity_tokens`` — row positions without a token: the sum of the
  Padding events (the bin space the packer left empty);
* ``padding_tokens`` — the pad tokens the framework stores in its rows or its
  documented training collator adds whatever the batch: the unused capacity
  when :attr:`TrainerRule.stores_padding`, else 0. Padding a collator adds
  only to match the longest row of a batch depends on batch composition and
  is never counted (the rule's sentence says so where it applies);
* ``sequences`` — the units whose first position the collator makes input
  only: one per row (``unit="row"``: labels shifted across the whole row) or
  one per placed piece (``unit="sequence"``: position ids or labels restart at
  every packed sequence, TRL's ``padding_free`` collator);
* ``targets`` — positions whose label the trainer predicts: ``placed +
  repeated - sequences`` (``unit="row"`` and ``"sequence"``) or every placed
  position (``unit="position"``: the stored rows are the inputs and the
  labels are the next tokens of the same example, NeMo). Each is credited to
  the occurrence whose token it is (:meth:`FigureAccumulator.occurrence_targets`),
  so that a report can split them by length stratum.

>>> from packing_theory.engine.events import Arrival, Placement, Padding, Horizon
>>> acc = FigureAccumulator(TrainerRule("sequence", False, "ref", "rule"), capacity=6)
>>> for ev in [Arrival(0, 0, 0, 3), Arrival(1, 1, 0, 2), Placement(0, 0, 0, 0, 0, 3, False, False),
...            Placement(0, 3, 1, 1, 0, 2, False, False), Padding(0, 5, 1), Horizon(1, 0, "drained", ())]:
...     acc.feed(ev)
>>> f = acc.result()
>>> f.padding_tokens, f.unused_capacity_tokens, f.sequences, f.targets
(0, 1, 2, 3)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .._checks import check_int
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, Horizon, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError

__all__ = ["SEED_RULE", "TARGET_UNITS", "FigureAccumulator", "PeerFigures", "TargetUnit", "TrainerRule"]

TargetUnit = Literal["row", "sequence", "position"]
TARGET_UNITS: tuple[TargetUnit, ...] = ("row", "sequence", "position")
"""How a collator turns placed positions into targets (see the module doc)."""


@dataclass(frozen=True, slots=True)
class TrainerRule:
    """What a peer's framework stores and predicts (declared once per peer class).

    Attributes:
        unit: ``"row"``, ``"sequence"`` or ``"position"`` (:data:`TARGET_UNITS`).
        stores_padding: the framework stores (or its collator always adds) pad
            tokens in a row's unused positions.
        reference: the framework's file and function(s) the rule is read from.
        rule: the rule in one sentence, as the docs state it.
        checked: how the rule was checked here (a differential test against the
            installed framework, or read from the source and not run).
    """

    unit: TargetUnit
    stores_padding: bool
    reference: str
    rule: str
    checked: str = "read from the framework's source; not run here"

    def __post_init__(self) -> None:
        if self.unit not in TARGET_UNITS:
            raise InputError(f"unit must be one of {', '.join(TARGET_UNITS)}; got {self.unit!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


SEED_RULE = TrainerRule(
    "row", True, "not declared by this packer",
    "no trainer rule declared: seed 000's convention, every position holding a token but the first of "
    "a row is a target (targets = placed + repeated tokens - rows) and unused positions are stored pads",
    "not applicable")
"""The rule of a packer that declares none (seed 000's convention; the streaming family's rows are full)."""


@dataclass(frozen=True, slots=True)
class PeerFigures:
    """The framework-true figures of one peer replay (see the module doc).

    Attributes:
        rows: rows the stream emitted (the Horizon's count).
        placed_tokens: row positions holding a placed source token.
        repeated_tokens: row positions showing an already emitted token again.
        unused_capacity_tokens: row positions holding no token.
        padding_tokens: pad tokens the framework stores or its collator always adds.
        sequences: units whose first position is input only (see :class:`TrainerRule`).
        targets: positions the framework's training collator predicts.
        rule: the peer's :class:`TrainerRule`.
        options: every option the peer ran with, defaults included.
        start_delays: whether start delays mean a wait in the framework's
            emission order (``"measured"``) or not (``"not reported: ..."``).
        horizon: the framework's own horizon figures (e.g. Megatron's samples
            in the index and samples a trainer draws), when it has any.
    """

    rows: int
    placed_tokens: int
    repeated_tokens: int
    unused_capacity_tokens: int
    padding_tokens: int
    sequences: int
    targets: int
    rule: TrainerRule
    options: dict[str, Any] = field(default_factory=dict)
    start_delays: str = "measured"
    horizon: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out["rule"] = self.rule.to_dict()
        return out


class FigureAccumulator:
    """Consume a peer's event stream and count its :class:`PeerFigures` under a :class:`TrainerRule`.

    Rows may interleave (Megatron emits samples in shuffled order, all of a
    row's events together); the counts are per event, the sequences per row.
    ``options``, ``start_delays`` and ``horizon`` are copied into the result.

    Complexity: O(1) per event.
    """

    def __init__(self, rule: TrainerRule, capacity: int, *, options: dict[str, Any] | None = None,
                 start_delays: str = "measured", horizon: dict[str, Any] | None = None) -> None:
        if not isinstance(rule, TrainerRule):
            raise InputTypeError(f"rule must be a TrainerRule, got {type(rule).__name__}")
        self.rule = rule
        self.capacity = check_int("capacity", capacity, 1)
        self.options = dict(options or {})
        self.start_delays = start_delays
        self.horizon_figures = dict(horizon or {})
        self._placed = 0
        self._repeated = 0
        self._unused = 0
        self._pieces = 0
        self._rows_used: set[int] = set()
        self._targets = 0
        self._length: dict[int, int] = {}  # occurrence -> arrived length
        self._occ_targets: dict[int, int] = {}  # occurrence -> targets its tokens hold
        self._horizon: Horizon | None = None

    @classmethod
    def for_packer(cls, packer: object) -> FigureAccumulator:
        """A peer's own accumulator (``packer.figures()``), else one under :data:`SEED_RULE` at its capacity.

        ``packer``: a peer, an engine or a :class:`~packing_theory.engine.policies.PackerConfig`.
        """
        figures = getattr(packer, "figures", None)
        if callable(figures):
            made = figures()
            if isinstance(made, FigureAccumulator):
                return made
        return cls(SEED_RULE, consumer_settings(packer).capacity)

    def feed(self, item: EventItem) -> None:
        """Account one event (a batch is taken event by event)."""
        if isinstance(item, EventBatch):
            for one in item.events():
                self.feed(one)
            return
        if self._horizon is not None:
            raise InputError(f"event after the Horizon: {item!r}"[:300])
        if isinstance(item, (Placement, Repeat)):
            first_of_row = item.row not in self._rows_used  # a row's events come in position order
            self._rows_used.add(item.row)
            placement = isinstance(item, Placement)
            if placement:
                self._placed += item.length
                self._pieces += 1
            else:
                self._repeated += item.length
            unit = self.rule.unit
            if unit == "row":
                input_only = first_of_row
            elif unit == "sequence":
                input_only = placement or first_of_row
            else:
                input_only = False
            t = item.length - input_only
            self._targets += t
            self._occ_targets[item.occurrence] = self._occ_targets.get(item.occurrence, 0) + t
        elif isinstance(item, Arrival):
            self._length[item.occurrence] = item.length
        elif isinstance(item, Padding):
            self._unused += item.length
        elif isinstance(item, Horizon):
            self._horizon = item

    def result(self) -> PeerFigures:
        """The figures; requires the Horizon event."""
        if self._horizon is None:
            raise InputError("FigureAccumulator.result() needs the Horizon event (feed the whole stream)")
        targets = self._targets
        sequences = self._placed + self._repeated - targets
        return PeerFigures(
            rows=self._horizon.rows, placed_tokens=self._placed, repeated_tokens=self._repeated,
            unused_capacity_tokens=self._unused,
            padding_tokens=self._unused if self.rule.stores_padding else 0,
            sequences=sequences, targets=targets, rule=self.rule, options=dict(self.options),
            start_delays=self.start_delays, horizon=dict(self.horizon_figures))

    def occurrence_targets(self) -> tuple[list[int], list[int]]:
        """``(lengths, targets)``: each occurrence holding targets, its arrived length and its targets.

        Complexity: O(occurrences holding tokens).
        """
        occs = sorted(self._occ_targets)
        return [self._length.get(o, 0) for o in occs], [self._occ_targets[o] for o in occs]

    def _check(self) -> None:
        """Assert the counts' invariants: non-negative, the sequence rule, targets credited to occurrences."""
        assert self._placed >= 0 and self._repeated >= 0 and self._unused >= 0
        starts = {"row": len(self._rows_used), "sequence": None, "position": 0}[self.rule.unit]
        if starts is not None:
            assert self._targets == self._placed + self._repeated - starts
        assert len(self._rows_used) <= self._pieces + self._repeated
        assert sum(self._occ_targets.values()) == self._targets
