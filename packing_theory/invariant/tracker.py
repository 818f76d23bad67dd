"""Rebuild a streaming engine's buffer, in buffer order, from its event stream.

The event stream does not say where a ``continue`` suffix goes (it stays in
place) or how ``segment-first`` split an arrival; :class:`BufferTracker`
knows the policy and applies the engine's own rules
(:mod:`packing_theory.engine.policies`) to rebuild the buffer, so that a
monitor can summarise the buffer at a violation and check the full-state
predicate.
"""

from __future__ import annotations

from .._checks import check_int
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, BosAdded, BufferedSpan, Discard, Horizon, Placement
from ..engine.policies import POLICIES, STREAMING_POLICIES, Policy, crop_outcome, segment
from ..errors import InputError

__all__ = ["BufferTracker"]

class BufferTracker:
    """Rebuild the buffer, in buffer order, from the event stream of an engine policy.

    The event stream does not say where a ``continue`` suffix goes (it stays in
    place) or how ``segment-first`` split an arrival; the tracker knows the
    policy. It supports every policy of :data:`~packing_theory.engine.policies.POLICIES`.

    Complexity: O(1) amortised per event; :meth:`snapshot` O(n log n).

    >>> from packing_theory import Packer
    >>> packer = Packer(capacity=4, min_buffer=2, refill=1, policy="continue", rows=2)
    >>> tr = BufferTracker.for_packer(packer)
    >>> for ev in packer.events([3, 9, 2, 4]):
    ...     tr.feed(ev)
    >>> tr.result() == tr.horizon.buffered
    True
    """

    __slots__ = ("_by_occ", "_next", "_pending", "_spans", "capacity", "horizon", "mass", "policy")

    def __init__(self, capacity: int, policy: Policy) -> None:
        self.capacity = check_int("capacity", capacity, 2)
        if policy not in POLICIES:
            raise InputError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
        self.policy: Policy = policy
        self._spans: dict[int, BufferedSpan] = {}
        self._by_occ: dict[int, list[int]] = {}
        self._next = 0
        self._pending: BufferedSpan | None = None
        self.mass = 0
        self.horizon: Horizon | None = None

    @classmethod
    def for_packer(cls, packer: object) -> BufferTracker:
        """A tracker for the stream of ``packer`` (an engine or a
        :class:`~packing_theory.engine.policies.PackerConfig`): its ``R`` and policy.

        Raises:
            InputError: ``packer`` is not a streaming policy (a peer has no buffer to rebuild).
        """
        settings = consumer_settings(packer)
        if settings.config is None:
            raise InputError(f"packer: a BufferTracker rebuilds a streaming policy's buffer; "
                             f"{settings.label or 'this packer'} is not one")
        return cls(settings.capacity, settings.config.policy)

    def __len__(self) -> int:
        """Number of buffered spans. O(1)."""
        return len(self._spans)

    def _put(self, seq: int, span: BufferedSpan) -> None:
        self._spans[seq] = span
        self._by_occ.setdefault(span.occurrence, []).append(seq)
        self.mass += span.length

    def _append(self, span: BufferedSpan) -> None:
        self._put(self._next, span)
        self._next += 1

    def _find(self, occurrence: int, start: int) -> int:
        seqs = self._by_occ[occurrence]
        if len(seqs) == 1:
            return seqs[0]
        for seq in seqs:
            if self._spans[seq].start == start:
                return seq
        raise InputError(f"no buffered span of occurrence {occurrence} starts at {start}")

    def _remove(self, seq: int) -> BufferedSpan:
        span = self._spans.pop(seq)
        seqs = self._by_occ[span.occurrence]
        seqs.remove(seq)
        if not seqs:
            del self._by_occ[span.occurrence]
        self.mass -= span.length
        return span

    def feed(self, ev: EventItem) -> None:
        """Apply one event (or each event of a batch, in order). O(1) amortised per event.

        Raises:
            ValueError: a placement of a span that is not buffered.
        """
        if type(ev) is Arrival:
            if STREAMING_POLICIES[self.policy].segments and ev.length > self.capacity:
                for start, n, bos in segment(ev.length, self.capacity):
                    self._append(BufferedSpan(ev.occurrence, ev.source, start, n, bos))
            else:
                self._append(BufferedSpan(ev.occurrence, ev.source, 0, ev.length, False))
        elif type(ev) is Placement:
            if ev.occurrence not in self._by_occ:
                raise InputError(f"placement of occurrence {ev.occurrence}, which is not buffered")
            seq = self._find(ev.occurrence, ev.start)
            span = self._remove(seq)
            if ev.crop:
                # the engines' own crop rule; a random-span crop leaves the buffer as a discard does
                # (its draw only changes what was emitted)
                rule: Policy = self.policy if STREAMING_POLICIES[self.policy].keeps_remainder else "discard"
                out = crop_outcome(rule, span.start, span.length, span.bos_inserted, ev.length, None)
                if out.keep is not None:
                    self._put(seq, BufferedSpan(span.occurrence, span.source, *out.keep))
                elif out.requeue is not None:
                    self._pending = BufferedSpan(span.occurrence, span.source, *out.requeue)
        elif type(ev) is BosAdded:
            pending = self._pending
            if pending is not None and pending.occurrence == ev.occurrence:
                self._append(pending)
                self._pending = None
        elif type(ev) is Discard:
            self._pending = None
        elif type(ev) is Horizon:
            self.horizon = ev
        elif type(ev) is EventBatch:
            for e in ev.events():
                self.feed(e)

    def snapshot(self) -> tuple[BufferedSpan, ...]:
        """The buffered spans in buffer order. O(n log n)."""
        return tuple(self._spans[s] for s in sorted(self._spans))

    def result(self) -> tuple[BufferedSpan, ...]:
        """The buffer so far, in buffer order (:meth:`snapshot`; equal to ``Horizon.buffered`` at the end)."""
        return self.snapshot()

    def _check(self) -> None:
        """Assert the internal invariants."""
        seen = [s for seqs in self._by_occ.values() for s in seqs]
        assert sorted(seen) == sorted(self._spans), "occurrence index and spans disagree"
        assert all(self._spans[s].occurrence == o for o, seqs in self._by_occ.items() for s in seqs)
        assert self.mass == sum(s.length for s in self._spans.values()), "mass out of date"
        assert all(0 <= s < self._next for s in self._spans)
        assert all(s.length >= 1 for s in self._spans.values())
