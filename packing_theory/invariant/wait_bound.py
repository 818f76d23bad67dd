"""The bounded-wait theorem as an executable predicate over the event stream (issue 13).

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
``bound=None``); its predicate then reports their discards and padding.

Arrival row
-----------
The arrival row of an occurrence is the number of complete rows emitted
before its :class:`~packing_theory.engine.events.Arrival` event. For the streaming
engines this is the index of the row being filled when the refill ran (the
refill precedes the selection whose placement follows the arrivals); it is the
quantity the Coq driver records (``bx_arows``) and the differential test
compares. The start row is the row of the occurrence's first placement.

>>> from packing_theory import Packer, PackerConfig
>>> cfg = PackerConfig(capacity=4, min_buffer=3, refill=2, policy="bounded-wait", max_wait=1)
>>> mon = StartDelayMonitor.for_config(cfg)
>>> report = mon.run(Packer(cfg).events([12, 13, 1, 1, 13, 13]))
>>> report.bound, report.max_start_delay_rows, report.ok
(4, 4, True)
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Arrival, Discard, Event, Exhausted, Filtered, Horizon, Padding, Placement, Repeat
from ..engine.policies import PackerConfig
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

    Occurrence ids must arrive as ``0, 1, 2, ...`` (every packer of the library
    numbers them so).

    Complexity: O(1) amortised per event; memory two bytes-and-an-int per
    occurrence (arrival rows and start flags) plus a histogram of delays.
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
        self._arow: list[int] = []
        self._started = bytearray()
        self._waiting: collections.deque[int] = collections.deque()
        self._overdue_reported = -1
        self.rows = 0
        self.fill = 0
        self.started = 0
        self.max_start_delay: int | None = None
        self.delay_counts: collections.Counter[int] = collections.Counter()
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
    def for_config(cls, config: PackerConfig, **kwargs: Any) -> StartDelayMonitor:
        """A monitor with ``R`` and the proved bound of ``config`` (``None`` unless ``bounded-wait``)."""
        return cls(config.capacity, config.start_delay_bound, **kwargs)

    # -- results -----------------------------------------------------------

    @property
    def ok(self) -> bool:
        """No violation so far."""
        return self.violation_count == 0

    @property
    def arrivals(self) -> int:
        """Occurrences arrived so far."""
        return len(self._arow)

    def arrival_row(self, occurrence: int) -> int:
        """The arrival row of ``occurrence`` (see the module doc)."""
        return self._arow[occurrence]

    def oldest_unstarted(self) -> int | None:
        """The earliest-arrived occurrence without a placement, or ``None``. O(1) amortised."""
        waiting = self._waiting
        started = self._started
        while waiting and started[waiting[0]]:
            waiting.popleft()
        return waiting[0] if waiting else None

    def report(self) -> StartDelayReport:
        """Counts, maxima and the first finding."""
        oldest = self.oldest_unstarted()
        first = self.violations[0] if self.violations else None
        return StartDelayReport(
            bound=self.bound,
            rows=self.rows,
            partial_row_tokens=self.fill,
            arrivals=self.arrivals,
            started=self.started,
            max_start_delay_rows=self.max_start_delay,
            unstarted=self.arrivals - self.started,
            max_unstarted_wait_rows=None if oldest is None else self.rows - self._arow[oldest],
            discarded_tokens=self.discarded_tokens,
            filtered_tokens=self.filtered_tokens,
            padding_tokens=self.padding_tokens,
            repeated_tokens=self.repeated_tokens,
            rows_full=self.layout_ok and self.padding_tokens == 0 and self.repeated_tokens == 0,
            violations=self.violation_count,
            first_violation=None if first is None else first.to_dict(),
        )

    # -- the stream --------------------------------------------------------

    def feed(self, ev: Event | EventBatch) -> None:
        """Consume one event or a columnar batch of them. O(1) amortised per event.

        Raises:
            ValueError: an arrival whose occurrence id is not the next one.
            StartDelayExceeded: a finding in ``on_violation="raise"`` mode.
            TypeError: ``ev`` is not an event.
        """
        t = type(ev)
        if t is Placement:
            self._place(ev)  # type: ignore[arg-type]
        elif t is Arrival:
            occ = ev.occurrence  # type: ignore[union-attr]
            if occ != len(self._arow):
                raise InputError(
                    f"arrival of occurrence {occ}, expected {len(self._arow)} (ids must be dense)"
                )
            self._arow.append(self.rows)
            self._started.append(0)
            self._waiting.append(occ)
        elif t is Discard:
            self.discarded_tokens += ev.length  # type: ignore[union-attr]
            self._record("discard", ev.occurrence, f"{ev.length} tokens discarded")  # type: ignore[union-attr]
        elif t is Filtered:
            self.filtered_tokens += ev.length  # type: ignore[union-attr]
            self._record("filtered", ev.occurrence, f"{ev.length} tokens filtered")  # type: ignore[union-attr]
        elif t is Padding or t is Repeat:
            n = ev.length  # type: ignore[union-attr]
            if t is Padding:
                self.padding_tokens += n
                self._record("padding", None, f"{n} padding positions")
            else:
                self.repeated_tokens += n
                self._record("repeat", ev.occurrence, f"{n} repeated tokens")  # type: ignore[union-attr]
            self._advance(ev.row, ev.offset, n)  # type: ignore[union-attr]
        elif t is Exhausted:
            self.exhausted = True
        elif t is Horizon:
            self._finish(ev)  # type: ignore[arg-type]
        elif t is EventBatch:
            for e in ev.events():  # type: ignore[union-attr]
                self.feed(e)
        elif not isinstance(ev, Event):
            raise InputTypeError(f"ev must be a packing_theory event or EventBatch, got "
                                 f"{type(ev).__name__} {ev!r}"[:300])

    def observe(self, events: Iterable[Event]) -> Iterator[Event]:
        """Pass events through unchanged while feeding them to the monitor."""
        feed = self.feed
        for ev in events:
            feed(ev)
            yield ev

    def run(self, events: Iterable[Event]) -> StartDelayReport:
        """Consume a whole event stream and return :meth:`report`."""
        feed = self.feed
        for ev in events:
            feed(ev)
        return self.report()

    # -- internals ---------------------------------------------------------

    def _place(self, ev: Placement) -> None:
        occ = ev.occurrence
        if occ >= len(self._arow):
            raise InputError(f"placement of occurrence {occ}, which has not arrived")
        if not self._started[occ]:
            self._started[occ] = 1
            self.started += 1
            delay = ev.row - self._arow[occ]
            self.delay_counts[delay] += 1
            if self.max_start_delay is None or delay > self.max_start_delay:
                self.max_start_delay = delay
            if self.bound is not None and delay > self.bound:
                self._record("late-start", occ, f"first token placed {delay} rows after its arrival row "
                                                f"{self._arow[occ]}, bound {self.bound}")
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
        oldest = self.oldest_unstarted()
        if oldest is not None and oldest != self._overdue_reported:
            wait = self.rows - self._arow[oldest]
            if wait > self.bound:
                self._overdue_reported = oldest
                self._record("overdue", oldest, f"unstarted {wait} rows after its arrival row "
                                                f"{self._arow[oldest]}, bound {self.bound}")

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
        assert len(self._arow) == len(self._started)
        assert self.started == sum(self._started)
        assert sum(self.delay_counts.values()) == self.started
        assert 0 <= self.fill < self.capacity
        assert all(a <= self.rows for a in self._arow)
        assert all(x <= y for x, y in itertools.pairwise(self._arow)), "arrival rows decrease"
        assert self.violation_count >= len(self.violations)
        assert self.max_start_delay is None or self.max_start_delay == max(self.delay_counts)
        oldest = self.oldest_unstarted()
        if oldest is not None:
            assert not self._started[oldest] and all(self._started[:oldest])
