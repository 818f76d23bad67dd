"""Streaming aggregate of a replay: the quantities of ``packing-theory replay --json``.

:class:`SummaryAccumulator` consumes the event stream of any packer one event
at a time, in O(1) per event and one byte of memory per occurrence, or an
:class:`~packing_theory.engine.batches.EventBatch` at a time with numpy (the
same result: ``tests/engine/test_batches.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .._checks import check_int
from .._unique import distinct
from ..errors import InputError
from ..lengths import exact_sum
from .batches import EventBatch, EventItem
from .consumers import consumer_settings, feed_all
from .events import (
    Arrival,
    BosAdded,
    Discard,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
    buffered_length,
    first_target,
)
from .policies import PackerConfig

__all__ = ["ReplaySummary", "SummaryAccumulator", "summarize"]

_STARTED = 1
_LONG = 2


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """Token mass, source and timing aggregates of one replay.

    The mass identity ``consumed_tokens + added_bos_tokens == emitted_tokens
    + discarded_tokens + filtered_tokens + buffered_tokens`` holds for every
    replay (:meth:`identity_holds`); padding and repeated tokens fill rows but
    are never emitted source mass.

    Attributes:
        rows: complete rows emitted.
        targets: prediction targets in complete rows, ``rows * (R - 1)``.
        emitted_tokens: all row positions filled, including a partial last row.
        discarded_tokens: source tokens dropped by crops.
        buffered_tokens: tokens still buffered at the horizon.
        consumed_sources: occurrences that entered the buffer (an occurrence
            in a later pass counts again).
        consumed_tokens: their BOS-inclusive original lengths.
        added_bos_tokens: BOS markers created by the packer (requeue, segmentation).
        crop_events: crop selections.
        crop_bos_only: crops that emitted exactly one token.
        sources_started: occurrences with at least one emitted token.
        first_over_capacity_target: target index of the first emitted token of
            an occurrence with original length ``> R`` (``None`` if none).
        stop_reason: see :class:`~packing_theory.engine.events.Horizon`.
        partial_row_tokens: tokens in an incomplete last row.
        exhausted_at_row: row where the stream first failed to refill to B
            (in ``stop`` mode: the row the replay ended in), or ``None``.
        padding_tokens: row positions holding no source token (peers).
        repeated_tokens: row positions showing an already emitted token again (peers).
        filtered_sources: occurrences removed before packing (peers).
        filtered_tokens: their tokens.
    """

    rows: int
    targets: int
    emitted_tokens: int
    discarded_tokens: int
    buffered_tokens: int
    consumed_sources: int
    consumed_tokens: int
    added_bos_tokens: int
    crop_events: int
    crop_bos_only: int
    sources_started: int
    first_over_capacity_target: int | None
    stop_reason: str
    partial_row_tokens: int
    exhausted_at_row: int | None
    padding_tokens: int = 0
    repeated_tokens: int = 0
    filtered_sources: int = 0
    filtered_tokens: int = 0

    @property
    def sources_never_started(self) -> int:
        """Consumed occurrences with no emitted token (filtered ones included)."""
        return self.consumed_sources - self.sources_started

    def identity_holds(self) -> bool:
        """``consumed + added BOS == emitted + discarded + filtered + buffered``."""
        return (
            self.consumed_tokens + self.added_bos_tokens
            == self.emitted_tokens + self.discarded_tokens + self.filtered_tokens + self.buffered_tokens
        )

    def row_identity_holds(self, capacity: int) -> bool:
        """``rows * R + partial_row_tokens == emitted + padding + repeated`` (every row position is one)."""
        return (self.rows * capacity + self.partial_row_tokens
                == self.emitted_tokens + self.padding_tokens + self.repeated_tokens)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (field order preserved, plus ``sources_never_started``)."""
        return {**asdict(self), "sources_never_started": self.sources_never_started}


class SummaryAccumulator:
    """Feed events or batches with :meth:`feed`; read :meth:`result` after the Horizon.

    Args:
        capacity: row capacity ``R`` (or build one with :meth:`for_packer`).

    >>> from packing_theory import Packer
    >>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
    >>> acc = SummaryAccumulator.for_packer(packer)
    >>> for ev in packer.events([5, 3, 9, 4]):
    ...     acc.feed(ev)
    >>> s = acc.result()
    >>> (s.rows, s.emitted_tokens, s.discarded_tokens, s.sources_started, s.identity_holds())
    (2, 16, 5, 4, True)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self._flags = bytearray()
        self.emitted = 0
        self.discarded = 0
        self.consumed_sources = 0
        self.consumed_tokens = 0
        self.added_bos = 0
        self.crops = 0
        self.crop_bos_only = 0
        self.started = 0
        self.first_long_target: int | None = None
        self.exhausted_at_row: int | None = None
        self.padding = 0
        self.repeated = 0
        self.filtered_sources = 0
        self.filtered = 0
        self.horizon: Horizon | None = None

    @classmethod
    def for_packer(cls, packer: object) -> SummaryAccumulator:
        """An accumulator for the stream of ``packer`` (an engine, a peer or a
        :class:`~packing_theory.engine.policies.PackerConfig`): its ``R``."""
        return cls(consumer_settings(packer).capacity)

    def feed(self, ev: EventItem) -> None:
        """Account one event or a whole :class:`~packing_theory.engine.batches.EventBatch`. O(1) amortised."""
        if isinstance(ev, Placement):
            self.emitted += ev.length
            if ev.crop:
                self.crops += 1
                if ev.length == 1:
                    self.crop_bos_only += 1
            flags = self._flags[ev.occurrence]
            if not flags & _STARTED:
                self._flags[ev.occurrence] = flags | _STARTED
                self.started += 1
                if flags & _LONG and self.first_long_target is None:
                    self.first_long_target = ev.first_target(self.capacity)
        elif isinstance(ev, Arrival):
            while len(self._flags) <= ev.occurrence:
                self._flags.append(0)
            if ev.length > self.capacity:
                self._flags[ev.occurrence] = _LONG
            self.consumed_sources += 1
            self.consumed_tokens += ev.length
        elif isinstance(ev, Discard):
            self.discarded += ev.length
        elif isinstance(ev, BosAdded):
            self.added_bos += ev.markers
        elif isinstance(ev, Padding):
            self.padding += ev.length
        elif isinstance(ev, Repeat):
            self.repeated += ev.length
        elif isinstance(ev, Filtered):
            self.filtered_sources += 1
            self.filtered += ev.length
        elif isinstance(ev, Exhausted):
            if self.exhausted_at_row is None:
                self.exhausted_at_row = ev.row
        elif isinstance(ev, Horizon):
            self.horizon = ev
        elif type(ev) is EventBatch:
            self._feed_batch(ev)

    def _feed_batch(self, b: EventBatch) -> None:
        """Account a batch column by column: O(n) numpy work, the single events' result."""
        a = b.arrival
        if a.occurrence.size:
            top = int(a.occurrence.max()) + 1
            if top > len(self._flags):
                self._flags.extend(bytes(top - len(self._flags)))
            flags = np.frombuffer(self._flags, dtype=np.uint8)
            flags[a.occurrence[a.length > self.capacity]] = _LONG
            del flags
            self.consumed_sources += int(a.occurrence.size)
            self.consumed_tokens += exact_sum(a.length)
        p = b.placement
        if p.occurrence.size:
            self.emitted += exact_sum(p.length)
            self.crops += int(p.crop.sum())
            self.crop_bos_only += int((p.crop & (p.length == 1)).sum())
            flags = np.frombuffer(self._flags, dtype=np.uint8)
            f = flags[p.occurrence]
            fresh = (f & _STARTED) == 0
            self.started += int(distinct(p.occurrence[fresh]).size)
            if self.first_long_target is None:
                idx = np.flatnonzero(fresh & ((f & _LONG) != 0))
                if idx.size:
                    i = int(idx[0])
                    self.first_long_target = first_target(int(p.row[i]), int(p.offset[i]), self.capacity)
            flags[p.occurrence] = f | _STARTED
            del flags
        self.discarded += exact_sum(b.discard.length)
        self.added_bos += int(b.bos_added.markers.sum())
        self.padding += exact_sum(b.padding.length)
        self.repeated += exact_sum(b.repeat.length)
        self.filtered_sources += int(b.filtered.length.size)
        self.filtered += exact_sum(b.filtered.length)
        if b.exhausted.row.size and self.exhausted_at_row is None:
            self.exhausted_at_row = int(b.exhausted.row[0])
        if b.horizon is not None:
            self.horizon = b.horizon

    def _check(self) -> None:
        """Assert the accumulator's internal invariants (tests call it after every event)."""
        assert len(self._flags) == self.consumed_sources, "occurrences must arrive in order 0, 1, ..."
        assert self.started == sum(1 for f in self._flags if f & _STARTED)
        assert 0 <= self.crop_bos_only <= self.crops
        assert self.emitted >= self.crops
        assert self.consumed_tokens + self.added_bos >= self.emitted + self.discarded + self.filtered
        assert 0 <= self.filtered_sources <= self.consumed_sources
        assert self.padding >= 0 and self.repeated >= 0
        if self.first_long_target is not None:
            assert any(f & _LONG and f & _STARTED for f in self._flags)
        if self.horizon is not None:
            assert self.result().identity_holds()
            assert self.result().row_identity_holds(self.capacity)

    def result(self) -> ReplaySummary:
        """The summary; requires the Horizon event to have been fed."""
        h = self.horizon
        if h is None:
            raise InputError("result() needs the Horizon event: feed the whole event stream first")
        return ReplaySummary(
            rows=h.rows,
            targets=h.rows * (self.capacity - 1),
            emitted_tokens=self.emitted,
            discarded_tokens=self.discarded,
            buffered_tokens=buffered_length(h.buffered),
            consumed_sources=self.consumed_sources,
            consumed_tokens=self.consumed_tokens,
            added_bos_tokens=self.added_bos,
            crop_events=self.crops,
            crop_bos_only=self.crop_bos_only,
            sources_started=self.started,
            first_over_capacity_target=self.first_long_target,
            stop_reason=h.stop_reason,
            partial_row_tokens=h.partial_row_tokens,
            exhausted_at_row=(
                self.exhausted_at_row
                if self.exhausted_at_row is not None or h.stop_reason != "exhausted"
                else h.rows  # stop mode: the replay ended at the failed refill
            ),
            padding_tokens=self.padding,
            repeated_tokens=self.repeated,
            filtered_sources=self.filtered_sources,
            filtered_tokens=self.filtered,
        )


def summarize(events: Iterable[EventItem], config: PackerConfig | int) -> ReplaySummary:
    """Summarise a whole event stream, of events and/or batches (``config`` or the capacity ``R``)."""
    capacity = config if isinstance(config, int) else config.capacity
    (summary,) = feed_all(events, SummaryAccumulator(capacity))
    return summary
