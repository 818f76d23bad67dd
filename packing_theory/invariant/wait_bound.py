"""The bounded-wait theorem as an executable predicate over the event stream.

``proofs/coq/BoundedWait.v`` proves, for the ``bounded-wait`` policy and every
arrival sequence:

* every occurrence starts (its first token is placed) in a row at most
  ``D = A + B + b - 2`` rows after its *arrival row* (``bw_start_bound``), and
  an arrived occurrence that has not started is never more than ``D`` rows past
  its arrival row (``bw_unstarted_bound``);
* no token is discarded (``bw_conservation``);
* rows are full: every row before the current one holds exactly ``R`` emitted
  tokens (``bw_rows_full``).

:class:`StartDelayMonitor` checks exactly these statements on any event stream
(it reads events only, never a packer's internals), with ``D`` from
:attr:`~packing_theory.engine.policies.PackerConfig.start_delay_bound` or given
explicitly. On other policies it still *measures* start delays (pass
``bound=None``); its predicate then reports their discards and padding. Its
start delays live in a :class:`~packing_theory.engine.starts.StartTracker`
(``StartDelayMonitor.starts``), the record the cost accounting
(:mod:`packing_theory.audit.costs`) keeps too.

Arrival row
-----------
The arrival row of an occurrence is the number of complete rows emitted
before its :class:`~packing_theory.engine.events.Arrival` event. For the streaming
engines this is the index of the row being filled when the refill ran (the
refill precedes the selection whose placement follows the arrivals); it is the
quantity the Coq driver records (``bx_arows``) and the differential test
compares. The start row is the row of the occurrence's first placement.

>>> from packing_theory import Packer, PackerConfig, feed_all
>>> cfg = PackerConfig(capacity=4, min_buffer=3, refill=2, policy="bounded-wait", max_wait=1)
>>> mon = StartDelayMonitor.for_packer(cfg)
>>> (report,) = feed_all(Packer(cfg).stream([12, 13, 1, 1, 13, 13]), mon)
>>> report.bound, report.max_start_delay_rows, report.ok
(4, 4, True)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

from .._checks import check_int
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, Discard, Event, Exhausted, Filtered, Horizon, Padding, Placement, Repeat
from ..engine.starts import StartTracker
from ..errors import Finding, InputError, InputTypeError

__all__ = [
    "WAIT_VIOLATION_KINDS",
    "StartDelayExceeded",
    "StartDelayMonitor",
    "StartDelayReport",
    "StartDelayViolation",
    "WaitViolationKind",
]

WaitViolationKind = Literal["late-start", "overdue", "discard", "filtered", "padding", "repeat", "row-layout"]
WAIT_VIOLATION_KINDS: tuple[WaitViolationKind, ...] = (
    "late-start", "overdue", "discard", "filtered", "padding", "repeat", "row-layout",
)
"""``late-start``: a first placement more than ``D`` rows after the arrival row;
``overdue``: at a row boundary (or the horizon) an arrived, unstarted occurrence
is more than ``D`` rows past its arrival row; ``discard`` / ``filtered``: tokens
dropped; ``padding`` / ``repeat``: row positions not filled by new source
tokens; ``row-layout``: a placement that does not continue the current row at
its current offset (rows must be filled left to right, one after the other)."""


class StartDelayViolation(NamedTuple):
    """One finding of :class:`StartDelayMonitor`."""

    kind: WaitViolationKind
    occurrence: int | None
    row: int
    detail: str

    def describe(self) -> str:
        """One line for humans."""
        who = "" if self.occurrence is None else f" occurrence {self.occurrence}"
        return f"{self.kind}:{who} at row {self.row}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return self._asdict()


@dataclass
class StartDelayReport:
    """What a :class:`StartDelayMonitor` saw (``packing-theory check --json`` prints it).

    Fields: ``bound`` — the bound ``D`` checked (``None``: delays measured
    only); ``rows`` and ``partial_row_tokens`` — complete rows and the tokens
    of an incomplete last row; ``arrivals`` and ``started`` — occurrences
    arrived and with at least one placement; ``max_start_delay_rows`` — the
    largest start row minus arrival row (``None`` if nothing started);
    ``unstarted`` — arrived occurrences without a placement at the end;
    ``max_unstarted_wait_rows`` — the largest ``rows - arrival row`` among them
    (a censored delay: they have not started yet), or ``None``;
    ``discarded_tokens``, ``filtered_tokens``, ``padding_tokens``,
    ``repeated_tokens`` — totals of the corresponding events; ``rows_full`` —
    every complete row holds ``R`` placed tokens, laid out left to right, one
    row after the other; ``violations`` — the count; ``first_violation`` — the
    first one as a dict.
    """

    bound: int | None
    rows: int
    partial_row_tokens: int
    arrivals: int
    started: int
    max_start_delay_rows: int | None
    unstarted: int
    max_unstarted_wait_rows: int | None
    discarded_tokens: int
    filtered_tokens: int
    padding_tokens: int
    repeated_tokens: int
    rows_full: bool
    violations: int
    first_violation: dict[str, Any] | None = field(default=None)

    @property
    def ok(self) -> bool:
        """No violation."""
        return self.violations == 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``ok`` included)."""
        out = asdict(self)
        out["ok"] = self.ok
        return out


class StartDelayExceeded(Finding):
    """Raised by a :class:`StartDelayMonitor` in ``on_violation="raise"`` mode (``.violation``: the record).

    A :class:`~packing_theory.errors.Finding` (exit status 1), not an ``AssertionError``.
    """

    def __init__(self, violation: StartDelayViolation) -> None:
        super().__init__(violation.describe())
        self.violation = violation


ViolationHandler = Callable[[StartDelayViolation], None]


class StartDelayMonitor:
    """Check the bounded-wait theorem's statements on an event stream, one event at a time.

    Args:
        capacity: row capacity ``R``.
        bound: the start-delay bound ``D`` in rows; ``None`` measures delays
            without checking them (discards, padding and the row layout are
            still checked).
        on_violation: ``"record"`` (default), ``"raise"`` (:class:`StartDelayExceeded` at
            the first finding) or a callable receiving each
            :class:`StartDelayViolation` (also recorded).
        max_recorded: keep at most this many findings (all are counted).

    Build it from a packer with :meth:`for_packer`. Occurrence ids must
    arrive as ``0, 1, 2, ...`` (every packer of the library numbers them so).
    An occurrence's arrival row is the rows completed at its arrival, its start
    row the row of its first placement; both are kept in :attr:`starts` (a
    :class:`~packing_theory.engine.starts.StartTracker`).

    Complexity: O(1) amortised per event; memory 16 bytes per occurrence
    (arrival and start rows) plus a histogram of delays.
    """

    def __init__(
        self,
        capacity: int,
        bound: int | None = None,
        *,
        on_violation: Literal["record", "raise"] | ViolationHandler = "record",
        max_recorded: int = 100,
    ) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.bound = None if bound is None else check_int("bound", bound, 0)
        if not (on_violation in ("record", "raise") or callable(on_violation)):
            raise InputError(f"on_violation must be 'record', 'raise' or a callable, got {on_violation!r}")
        self._raise = on_violation == "raise"
        self._handler: ViolationHandler | None = on_violation if callable(on_violation) else None
        self.max_recorded = check_int("max_recorded", max_recorded, 0)
        self.starts = StartTracker()
        self._overdue_reported = -1
        self.rows = 0
        self.fill = 0
        self.discarded_tokens = 0
        self.filtered_tokens = 0
        self.padding_tokens = 0
        self.repeated_tokens = 0
        self.layout_ok = True
        self.exhausted = False
        self.horizon: Horizon | None = None
        self.violation_count = 0
        self.violations: list[StartDelayViolation] = []

    @classmethod
    def for_packer(cls, packer: object, **kwargs: Any) -> StartDelayMonitor:
        """A monitor with ``R`` and the proved bound of ``packer`` (an engine, a peer or a
        :class:`~packing_theory.engine.policies.PackerConfig`).

        The bound is :attr:`~packing_theory.engine.policies.PackerConfig.start_delay_bound`:
        ``None`` (delays measured, not checked) unless the policy is ``bounded-wait``
        or ``bound=`` is given.
        """
        settings = consumer_settings(packer)
        config = settings.config
        kwargs.setdefault("bound", None if config is None else config.start_delay_bound)
        return cls(settings.capacity, **kwargs)

    # -- results -----------------------------------------------------------

    @property
    def ok(self) -> bool:
        """No violation so far."""
        return self.violation_count == 0

    @property
    def arrivals(self) -> int:
        """Occurrences arrived so far."""
        return self.starts.arrivals

    @property
    def started(self) -> int:
        """Occurrences with at least one placement so far."""
        return self.starts.started

    @property
    def max_start_delay(self) -> int | None:
        """The largest start delay so far (``None`` before the first placement)."""
        return self.starts.max_delay

    @property
    def delay_counts(self) -> collections.Counter[int]:
        """Histogram ``{start delay: occurrences}`` (a snapshot of :attr:`starts`)."""
        return self.starts.delays

    def arrival_row(self, occurrence: int) -> int:
        """The arrival row of ``occurrence`` (see the module doc)."""
        return self.starts.arrival_row(occurrence)

    def oldest_unstarted(self) -> int | None:
        """The earliest-arrived occurrence without a placement, or ``None``. O(1) amortised."""
        return self.starts.oldest_unstarted()

    def result(self) -> StartDelayReport:
        """Counts, maxima and the first finding."""
        first = self.violations[0] if self.violations else None
        return StartDelayReport(
            bound=self.bound,
            rows=self.rows,
            partial_row_tokens=self.fill,
            arrivals=self.arrivals,
            started=self.started,
            max_start_delay_rows=self.max_start_delay,
            unstarted=self.arrivals - self.started,
            max_unstarted_wait_rows=self.starts.unstarted_wait(self.rows),
            discarded_tokens=self.discarded_tokens,
            filtered_tokens=self.filtered_tokens,
            padding_tokens=self.padding_tokens,
            repeated_tokens=self.repeated_tokens,
            rows_full=self.layout_ok and self.padding_tokens == 0 and self.repeated_tokens == 0,
            violations=self.violation_count,
            first_violation=None if first is None else first.to_dict(),
        )

    # -- the stream --------------------------------------------------------

    def feed(self, ev: EventItem) -> None:
        """Consume one event or a columnar batch of them (walked in stream order). O(1) amortised per event.

        Raises:
            InputError: an arrival whose occurrence id is not the next one.
            StartDelayExceeded: a finding in ``on_violation="raise"`` mode.
            InputTypeError: ``ev`` is not an event.
        """
        if type(ev) is Placement:
            self._place(ev)
        elif type(ev) is Arrival:
            self.starts.arrive(ev.occurrence, self.rows)
        elif type(ev) is Discard:
            self.discarded_tokens += ev.length
            self._record("discard", ev.occurrence, f"{ev.length} tokens discarded")
        elif type(ev) is Filtered:
            self.filtered_tokens += ev.length
            self._record("filtered", ev.occurrence, f"{ev.length} tokens filtered")
        elif type(ev) is Padding:
            self.padding_tokens += ev.length
            self._record("padding", None, f"{ev.length} padding positions")
            self._advance(ev.row, ev.offset, ev.length)
        elif type(ev) is Repeat:
            self.repeated_tokens += ev.length
            self._record("repeat", ev.occurrence, f"{ev.length} repeated tokens")
            self._advance(ev.row, ev.offset, ev.length)
        elif type(ev) is Exhausted:
            self.exhausted = True
        elif type(ev) is Horizon:
            self._finish(ev)
        elif type(ev) is EventBatch:
            feed = self.feed
            for e in ev.events():
                feed(e)
        elif not isinstance(ev, Event):
            raise InputTypeError(f"ev must be a packing_theory event or EventBatch, got "
                                 f"{type(ev).__name__} {ev!r}"[:300])

    def observe(self, events: Iterable[EventItem]) -> Iterator[EventItem]:
        """Pass events (or batches) through unchanged while feeding them to the monitor."""
        feed = self.feed
        for ev in events:
            feed(ev)
            yield ev

    # -- internals ---------------------------------------------------------

    def _place(self, ev: Placement) -> None:
        occ = ev.occurrence
        delay = self.starts.start(occ, ev.row)
        if delay is not None and self.bound is not None and delay > self.bound:
            self._record("late-start", occ, f"first token placed {delay} rows after its arrival row "
                                            f"{self.starts.arrival_row(occ)}, bound {self.bound}")
        self._advance(ev.row, ev.offset, ev.length)

    def _advance(self, row: int, offset: int, n: int) -> None:
        if row != self.rows or offset != self.fill or self.fill + n > self.capacity:
            self.layout_ok = False
            self._record("row-layout", None, f"tokens at row {row} offset {offset} (+{n}); expected row "
                                             f"{self.rows} offset {self.fill}")
        self.fill += n
        if self.fill >= self.capacity:
            self.rows += 1
            self.fill = 0
            self._check_overdue()

    def _check_overdue(self) -> None:
        if self.bound is None:
            return
        oldest = self.starts.oldest_unstarted()
        if oldest is not None and oldest != self._overdue_reported:
            arrival = self.starts.arrival_row(oldest)
            wait = self.rows - arrival
            if wait > self.bound:
                self._overdue_reported = oldest
                self._record("overdue", oldest, f"unstarted {wait} rows after its arrival row "
                                                f"{arrival}, bound {self.bound}")

    def _finish(self, ev: Horizon) -> None:
        self.horizon = ev
        if ev.rows != self.rows or ev.partial_row_tokens != self.fill:
            self.layout_ok = False
            self._record("row-layout", None, f"horizon says {ev.rows} rows + {ev.partial_row_tokens} tokens, "
                                             f"placements filled {self.rows} rows + {self.fill}")
        self._check_overdue()

    def _record(self, kind: WaitViolationKind, occ: int | None, detail: str) -> None:
        v = StartDelayViolation(kind, occ, self.rows, detail)
        self.violation_count += 1
        if len(self.violations) < self.max_recorded:
            self.violations.append(v)
        if self._handler is not None:
            self._handler(v)
        if self._raise:
            raise StartDelayExceeded(v)

    def _check(self) -> None:
        """Assert the internal invariants (used by tests)."""
        self.starts._check()
        assert 0 <= self.fill < self.capacity
        assert all(self.starts.arrival_row(o) <= self.rows for o in range(self.arrivals))
        assert self.violation_count >= len(self.violations)
        assert len(self.violations) <= self.max_recorded
