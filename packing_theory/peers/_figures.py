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

from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, as_numpy, widened
from .._checks import check_int
from .._unique import group_min
from ..engine.batches import PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, Horizon, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError

__all__ = ["SEED_RULE", "TARGET_UNITS", "FigureAccumulator", "PeerFigures", "TargetUnit", "TrainerRule"]

TargetUnit = Literal["row", "sequence", "position"]
LengthsOf = Callable[[npt.NDArray[np.int64]], npt.NDArray[Any]]
"""The arrived length of each of the given occurrence ids."""
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


assert array("i").itemsize == 4


class FigureAccumulator:
    """Consume a peer's event stream and count its :class:`PeerFigures` under a :class:`TrainerRule`.

    Rows may interleave (Megatron emits samples in shuffled order, all of a
    row's events together); the counts are per event, the sequences per row.
    ``options``, ``start_delays`` and ``horizon`` are copied into the result.

    :attr:`keep_lengths` (default ``True``): keep each occurrence's arrived length (4 bytes per
    occurrence) for :meth:`occurrence_target_columns`; a caller that reads the lengths from another
    consumer of the same stream (the :class:`~packing_theory.audit.ledger.Ledger`'s
    :meth:`~packing_theory.audit.ledger.Ledger.lengths_of`) sets it to ``False`` before the first
    event and passes ``lengths=`` there.

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
        self._row_seen = bytearray()  # row -> 1 once one of its pieces was seen
        self._rows = 0  # rows seen
        self._targets = 0
        self._length = array("i")  # occurrence -> arrived length (0: not arrived); "q" once one passes int32
        self._occ_targets = array("i")  # occurrence -> targets its tokens hold; "q" once one could pass int32
        self._occ_has = bytearray()  # occurrence -> 1 once it placed or repeated a piece
        self._horizon: Horizon | None = None
        self.keep_lengths = True
        self._arrived = 0  # one past the largest occurrence id arrived: the per-occurrence columns grow to it

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
        """Account one event, or a batch column by column (:meth:`_batch`; the same figures)."""
        if self._horizon is not None:
            raise InputError(f"event after the Horizon: {item!r}"[:300])
        if isinstance(item, EventBatch):
            self._batch(item)
            return
        if isinstance(item, (Placement, Repeat)):
            r, o = _index("row", item.row), _index("occurrence", item.occurrence)
            _grow_bytes(self._row_seen, r + 1)
            first_of_row = not self._row_seen[r]  # a row's events come in position order
            if first_of_row:
                self._row_seen[r] = 1
                self._rows += 1
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
            _grow_ints(self._occ_targets, o + 1, self._arrived)
            _grow_bytes(self._occ_has, o + 1, self._arrived)
            value = self._occ_targets[o] + t
            self._fit_targets(value, value)
            self._occ_targets[o] = value
            self._occ_has[o] = 1
        elif isinstance(item, Arrival):
            o = _index("occurrence", item.occurrence)
            self._arrived = max(self._arrived, o + 1)
            if not self.keep_lengths:
                return
            self._fit_lengths(item.length, item.length)
            _grow_ints(self._length, o + 1)
            self._length[o] = item.length
        elif isinstance(item, Padding):
            self._unused += item.length
        elif isinstance(item, Horizon):
            self._horizon = item

    def _batch(self, b: EventBatch) -> None:
        """A batch's placements and repeats in stream order, accounted with numpy. O(its events)."""
        kinds = b.kinds
        is_piece = (kinds == PLACEMENT) | (kinds == REPEAT)
        isp = kinds[is_piece] == PLACEMENT
        n = int(isp.size)
        rows, lens, occs = (np.empty(n, np.int64) for _ in range(3))
        pl, rp = b.placement, b.repeat
        for out, a, c in ((rows, pl.row, rp.row), (lens, pl.length, rp.length),
                          (occs, pl.occurrence, rp.occurrence)):
            out[isp], out[~isp] = a, c
        arr = b.arrival
        for name, col in (("row", rows), ("occurrence", occs), ("occurrence", arr.occurrence)):
            if col.size and int(col.min()) < 0:
                _index(name, int(col.min()))
        if arr.occurrence.size:
            self._arrived = max(self._arrived, int(arr.occurrence.max()) + 1)
        if n:
            _grow_bytes(self._row_seen, int(rows.max()) + 1)
            _grow_ints(self._occ_targets, int(occs.max()) + 1, self._arrived)
            _grow_bytes(self._occ_has, int(occs.max()) + 1, self._arrived)
        if arr.occurrence.size and self.keep_lengths:
            self._fit_lengths(int(arr.length.min()), int(arr.length.max()))
            _grow_ints(self._length, int(arr.occurrence.max()) + 1)
        seen = np.frombuffer(self._row_seen, np.uint8)
        uniq, first_at = group_min(rows, np.arange(rows.size, dtype=np.int64))
        new = seen[uniq] == 0
        first = np.zeros(n, np.bool_)
        first[first_at[new]] = True
        seen[uniq] = 1
        self._rows += int(new.sum())
        unit = self.rule.unit
        input_only = (first if unit == "row" else (isp | first) if unit == "sequence"
                      else np.zeros(n, np.bool_))
        t = lens - input_only
        self._placed += int(lens[isp].sum())
        self._pieces += int(isp.sum())
        self._repeated += int(lens[~isp].sum())
        self._targets += int(t.sum())
        if n:  # every touched count ends within its old value plus the batch's negative / positive sum
            old = as_numpy(self._occ_targets)[occs]
            self._fit_targets(int(old.min()) + int(t[t < 0].sum()), int(old.max()) + int(t[t > 0].sum()))
            del old
            occ_targets = as_numpy(self._occ_targets)
            np.add.at(occ_targets, occs, t.astype(occ_targets.dtype))
            del occ_targets
        np.frombuffer(self._occ_has, np.uint8)[occs] = 1
        if self.keep_lengths:
            as_numpy(self._length)[arr.occurrence] = arr.length
        self._unused += int(b.padding.length.sum())
        del seen
        if b.horizon is not None:
            self._horizon = b.horizon

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

    def _fit_targets(self, lo: int, hi: int) -> None:
        """Widen the per-occurrence targets to ``int64`` (once) before a count outside ``int32`` is kept."""
        if self._occ_targets.typecode == "i" and not (INT32.min <= lo and hi <= INT32.max):
            self._occ_targets = widened(self._occ_targets)

    def _fit_lengths(self, lo: int, hi: int) -> None:
        """Widen the arrived lengths to ``int64`` (once) before a length outside ``int32`` is kept."""
        if self._length.typecode == "i" and not (INT32.min <= lo and hi <= INT32.max):
            self._length = widened(self._length)

    def occurrence_targets(self) -> tuple[list[int], list[int]]:
        """``(lengths, targets)``: each occurrence holding targets, its arrived length and its targets.

        Complexity: O(occurrences holding tokens).
        """
        lengths, targets = self.occurrence_target_columns()
        return lengths.tolist(), targets.tolist()

    def occurrence_target_columns(self, lengths: LengthsOf | None = None
                                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:meth:`occurrence_targets` as two ``int64`` arrays (16 bytes per occurrence, where the lists
        hold Python ints: about 70).

        ``lengths``: the arrived lengths of given occurrence ids, read from another consumer of the
        stream (needed when :attr:`keep_lengths` is ``False``; an id that never arrived has length 0).

        Complexity: O(occurrences holding tokens).
        """
        occs = np.flatnonzero(np.frombuffer(self._occ_has, np.uint8))
        if lengths is not None:
            out = np.asarray(lengths(occs), np.int64)
            if out.shape != occs.shape:
                raise InputError(f"lengths must give one length per occurrence: {out.size} for {occs.size}")
            return out, as_numpy(self._occ_targets)[occs].astype(np.int64)
        if not self.keep_lengths:
            raise InputError("occurrence_target_columns() needs lengths=: this accumulator was told not to "
                             "keep the arrived lengths (keep_lengths=False)")
        out = np.zeros(occs.size, np.int64)
        known = occs < len(self._length)
        out[known] = as_numpy(self._length)[occs[known]]
        del known
        return out, as_numpy(self._occ_targets)[occs].astype(np.int64)

    def _check(self) -> None:
        """Assert the counts' invariants: non-negative, the sequence rule, targets credited to occurrences."""
        assert self._placed >= 0 and self._repeated >= 0 and self._unused >= 0
        starts = {"row": self._rows, "sequence": None, "position": 0}[self.rule.unit]
        if starts is not None:
            assert self._targets == self._placed + self._repeated - starts
        assert self._rows == sum(self._row_seen) <= self._pieces + self._repeated
        assert sum(self._occ_targets) == self._targets
        assert {self._length.typecode, self._occ_targets.typecode} <= {"i", "q"}
        assert self.keep_lengths or not self._length, "lengths kept while keep_lengths is False"


def _index(name: str, value: int) -> int:
    """``value`` as an index (a row or an occurrence id must be ``>= 0``)."""
    if value < 0:
        raise InputError(f"inconsistent event stream: {name} {value} < 0")
    return value


def _grown(size: int, n: int, most: int | None) -> int:
    """The size to grow to for index ``n - 1``: by a quarter at least (amortised O(1)), not doubling, but not
    past ``most`` (the occurrences arrived: a valid stream names no other) unless ``n`` is."""
    step = size + size // 4 + 1024
    return max(n, step if most is None else min(step, most))


def _grow_bytes(buf: bytearray, n: int, most: int | None = None) -> None:
    if len(buf) < n:
        buf.extend(bytes(_grown(len(buf), n, most) - len(buf)))


def _grow_ints(buf: array[int], n: int, most: int | None = None) -> None:
    if len(buf) < n:
        buf.frombytes(bytes(buf.itemsize * (_grown(len(buf), n, most) - len(buf))))
