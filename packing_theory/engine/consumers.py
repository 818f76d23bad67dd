"""The consumer side of the event stream: one protocol, one helper that feeds several consumers.

Every consumer of the placement stream — :class:`~packing_theory.audit.Ledger`,
:class:`~packing_theory.audit.StreamLedger`,
:class:`~packing_theory.audit.costs.CostAccumulator`,
:class:`~packing_theory.invariant.InvariantMonitor`,
:class:`~packing_theory.invariant.wait_bound.StartDelayMonitor`,
:class:`~packing_theory.engine.summary.SummaryAccumulator`,
:class:`~packing_theory.invariant.BufferTracker`, the adapter's
:class:`~packing_theory.adapters.stream.RemainderTracker`, a peer's
:class:`~packing_theory.peers.FigureAccumulator` — has the three
methods of :class:`Consumer`:

* ``feed(item)`` — account one :class:`~packing_theory.engine.events.Event`
  *or* one :class:`~packing_theory.engine.batches.EventBatch` (the compiled
  engine's columns); a stream of events and the same stream in batches give
  the same result;
* ``result()`` — what the consumer measured (most need the
  :class:`~packing_theory.engine.events.Horizon` first);
* ``_check()`` — assert its internal invariants (the tests call it after
  every event).

:func:`feed_all` feeds several consumers in one pass over a stream — single
events from the Python engines and the peers, batches from the compiled
engine, or a mix — and returns their results. A packing engine's
:meth:`~packing_theory.engine.base.PackingEngine.stream` gives the stream in
the engine's own form, so a caller never asks which engine it holds::

    ledger, costs = Ledger.for_packer(packer), CostAccumulator.for_packer(packer)
    aggregates, packer_costs = feed_all(packer.stream(lengths), ledger, costs)

A consumer never assumes the row capacity ``R`` or the buffer size ``B``: its
constructor requires them, and its ``for_packer(packer)`` classmethod reads
them from a packer, an engine or a
:class:`~packing_theory.engine.policies.PackerConfig`
(:func:`consumer_settings`).

>>> from packing_theory.engine import Packer, SummaryAccumulator
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
>>> (summary,) = feed_all(packer.stream([5, 3, 9, 4]), SummaryAccumulator.for_packer(packer))
>>> summary.emitted_tokens, summary.sources_started
(16, 4)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol, TypeVar, overload, runtime_checkable

from .._checks import check_int, is_int
from ..errors import InputError, InputTypeError
from .batches import EventBatch, EventItem
from .events import Horizon, Placement
from .policies import PackerConfig

__all__ = ["PROGRESS_EVERY", "Consumer", "ConsumerSettings", "consumer_settings", "feed_all"]

T_co = TypeVar("T_co", covariant=True)
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")

PROGRESS_EVERY = 8192
"""Single events between two calls of :func:`feed_all`'s ``progress`` callback."""


@runtime_checkable
class Consumer(Protocol[T_co]):
    """What every consumer of the event stream provides (see the module doc)."""

    def feed(self, item: EventItem) -> None:
        """Account one event, or every event of one batch in stream order."""
        ...

    def result(self) -> T_co:
        """What the consumer measured so far (most consumers need the Horizon first)."""
        ...

    def _check(self) -> None:
        """Assert the internal invariants (tests call it after every event)."""
        ...


class ConsumerSettings(NamedTuple):
    """What a consumer needs to know about the packer whose stream it reads.

    Attributes:
        capacity: row capacity ``R`` (the row width, for every packer).
        min_buffer: the buffer size ``B`` of a streaming packer; ``None`` for a
            packer without one (a peer): a consumer that needs ``B`` must then
            be given it explicitly (:meth:`need_min_buffer`).
        label: the packer's name for reports (a streaming policy, a peer's name).
        config: the :class:`~packing_theory.engine.policies.PackerConfig`, or
            ``None`` for a peer.
    """

    capacity: int
    min_buffer: int | None
    label: str
    config: PackerConfig | None

    def need_min_buffer(self, given: int | None, consumer: str) -> int:
        """``given`` when not ``None``, else the packer's ``B``; an error if it has none.

        >>> consumer_settings(PackerConfig(min_buffer=7)).need_min_buffer(None, "Ledger")
        7
        >>> ConsumerSettings(8, None, "trl-bfd", None).need_min_buffer(None, "Ledger")
        Traceback (most recent call last):
        packing_theory.InputError: min_buffer: trl-bfd has no buffer size B; pass Ledger(..., min_buffer=B)
        """
        if given is not None:
            return check_int("min_buffer", given, 1)
        if self.min_buffer is None:
            raise InputError(f"min_buffer: {self.label or 'the packer'} has no buffer size B; pass "
                             f"{consumer}(..., min_buffer=B)")
        return self.min_buffer


def consumer_settings(packer: object) -> ConsumerSettings:
    """The settings of ``packer``: a :class:`~packing_theory.engine.policies.PackerConfig`,
    an engine (its ``config``) or any packer with a ``capacity`` (a peer).

    >>> from packing_theory import Packer
    >>> consumer_settings(Packer(capacity=8, min_buffer=2, policy="continue"))[:3]
    (8, 2, 'continue')
    >>> consumer_settings(8)
    Traceback (most recent call last):
    packing_theory.InputTypeError: packer must be a PackerConfig or a packer with a capacity, got int 8
    """
    config = packer if isinstance(packer, PackerConfig) else getattr(packer, "config", None)
    if isinstance(config, PackerConfig):
        return ConsumerSettings(config.capacity, config.min_buffer, config.policy, config)
    capacity: Any = getattr(packer, "capacity", None)
    if not is_int(capacity):
        raise InputTypeError(f"packer must be a PackerConfig or a packer with a capacity, got "
                             f"{type(packer).__name__} {packer!r}"[:300])
    name = getattr(packer, "name", "")
    return ConsumerSettings(int(capacity), None, name if isinstance(name, str) else "", None)


class _Progress:
    """Calls ``callback(rows)`` every :data:`PROGRESS_EVERY` events, after every batch, and at the Horizon.

    ``rows`` is the row of the latest placement (the rows completed before it,
    for a packer that fills rows in order) and the Horizon's row count at the end.
    """

    def __init__(self, callback: Callable[[int], None]) -> None:
        self._callback = callback
        self._left = PROGRESS_EVERY
        self._row = 0

    def feed(self, item: EventItem) -> None:
        if type(item) is Placement:
            self._row = item.row
        elif type(item) is Horizon:
            self._callback(item.rows)
            return
        elif type(item) is EventBatch:
            if item.horizon is not None:
                self._callback(item.horizon.rows)
            else:
                if item.placement.row.size:
                    self._row = int(item.placement.row[-1])
                self._callback(self._row)
            self._left = PROGRESS_EVERY
            return
        self._left -= 1
        if not self._left:
            self._left = PROGRESS_EVERY
            self._callback(self._row)

    def result(self) -> None:
        """Nothing: the callback has had every value."""

    def _check(self) -> None:
        assert 0 < self._left <= PROGRESS_EVERY and self._row >= 0


@overload
def feed_all(items: Iterable[EventItem], first: Consumer[A], /, *,
             progress: Callable[[int], None] | None = None) -> tuple[A]: ...
@overload
def feed_all(items: Iterable[EventItem], first: Consumer[A], second: Consumer[B], /, *,
             progress: Callable[[int], None] | None = None) -> tuple[A, B]: ...
@overload
def feed_all(items: Iterable[EventItem], first: Consumer[A], second: Consumer[B], third: Consumer[C], /, *,
             progress: Callable[[int], None] | None = None) -> tuple[A, B, C]: ...
@overload
def feed_all(items: Iterable[EventItem], *consumers: Consumer[Any],
             progress: Callable[[int], None] | None = None) -> tuple[Any, ...]: ...
def feed_all(items: Iterable[EventItem], *consumers: Consumer[Any],
             progress: Callable[[int], None] | None = None) -> tuple[Any, ...]:
    """Feed every item of ``items`` to each consumer, in order; return their ``result()`` s.

    ``items``: single events, :class:`~packing_theory.engine.batches.EventBatch`
    values, or a mix (a packer's stream). Each item goes to every consumer, in
    the order the consumers are given, before the next item is read, so that
    each consumer sees the whole stream in order whatever the others do. An
    event after the Horizon is refused by the consumers that check it.

    ``progress`` (optional) is called with the rows completed so far: every
    :data:`PROGRESS_EVERY` single events (the row of the latest placement),
    after every batch, and with the Horizon's row count at the end.

    Complexity: one ``feed`` call per item and consumer (a lone consumer is
    fed from C, without a Python loop), plus the consumers' own work.

    Raises:
        InputError: no consumer given, or whatever a consumer raises.
        InputTypeError: a consumer lacks ``feed`` or ``result``.
    """
    if not consumers:
        raise InputError("feed_all needs at least one consumer")
    for c in consumers:
        if not (callable(getattr(c, "feed", None)) and callable(getattr(c, "result", None))):
            raise InputTypeError(f"consumers must have feed() and result() (the Consumer protocol), got "
                                 f"{type(c).__name__}")
    feeds = [c.feed for c in consumers]
    if progress is not None:
        feeds.append(_Progress(progress).feed)
    if len(feeds) == 1:
        collections.deque(map(feeds[0], items), maxlen=0)
    elif len(feeds) == 2:  # an item is dropped before the next is read: the stream may build it then
        a, b = feeds
        for item in items:
            a(item)
            b(item)
            del item
    else:
        for item in items:
            for feed in feeds:
                feed(item)
            del item
    return tuple(c.result() for c in consumers)
