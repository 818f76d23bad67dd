"""The :class:`InvariantMonitor`: the protected-set invariant checked on every selection.

Statement
---------
A source occurrence is *long* when its original BOS-inclusive length exceeds
the row capacity ``R``. Order long occurrences by the key ``(L_i, i)`` (length,
then arrival index). After any prefix of arrivals, the *protected set* ``K`` is
the ``min(B - 1, N_L)`` largest keys among the ``N_L`` long occurrences arrived
so far.

**Proposition.** For the ``discard`` and ``continue`` loaders, at every
selection boundary with at least ``B`` buffered spans, every member of ``K`` is
buffered, unchanged and unstarted.

The proof establishes the per-step form this module checks: *no selection made
with at least* ``B`` *buffered spans takes a member of* ``K``. Membership of an
occurrence in ``K`` is an interval of time — it enters (if at all) on its own
arrival and leaves for good when ``B - 1`` larger keys have arrived — so
checking each selection against the current ``K`` is O(1) and, together with
"no other event removes a member of ``K``", equivalent to the statement at
every boundary.

The protected set itself, its naive specification and the full-state predicate are in
:mod:`~packing_theory.invariant.protected`; the monitor's result type and the
out-of-family table in :mod:`~packing_theory.invariant.report`.

Misuse
------
The low-level API refuses calls that cannot describe a real loader — an
occurrence that never arrived, a ``None`` or other non-integer occurrence,
an arrival out of order, a change to a protected span outside a selection,
something that is not an event — without changing any state. With
``on_violation="raise"`` it raises :class:`MonitorMisuse` (a ``ValueError``;
:class:`MonitorTypeError` for wrong types); otherwise the call is recorded
as a :class:`Misuse` in :attr:`InvariantMonitor.misuses`, counted separately
from invariant violations (and :attr:`InvariantMonitor.ok` is false).

Selections made with fewer than ``B`` buffered spans (after an
:class:`~packing_theory.engine.events.Exhausted` event in drain mode, or when a loader
reports ``buffered < B``) are outside the proposition: they are counted in
``selections_outside`` and never reported. A member of ``K`` started or removed
there (or removed by a non-selection event such as an epoch flush) is reported
as ``"removed"`` at the next checked selection if it is still in ``K``.

>>> from packing_theory import replay
>>> mon = InvariantMonitor(capacity=4, min_buffer=3)
>>> rep = replay([9, 2, 7, 8, 1, 3, 5], capacity=4, min_buffer=3, refill=1, on_event=mon.feed)
>>> sorted(mon.protected), mon.selections_checked, mon.violation_count
([0, 3], 5, 0)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from .._checks import check_bool, check_int, is_int
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, BosAdded, BufferedSpan, Discard, Event, Exhausted, Horizon, Placement
from ..engine.policies import Policy
from ..errors import InputError
from .misuse import MISUSE_KINDS, Misuse, MisuseKind, MonitorMisuse, MonitorTypeError
from .protected import (
    InvariantViolation,
    ProtectedSet,
    Violation,
    ViolationKind,
    protected_violations,
    summarize_buffer,
)
from .report import OUTSIDE_FAMILY, MonitorReport, ViolationHandler
from .tracker import BufferTracker

__all__ = ["InvariantMonitor"]

class InvariantMonitor:
    """Check the protected-set invariant on every selection of a running loader.

    Args:
        capacity: row capacity ``R``.
        min_buffer: minimum buffer occupancy ``B``.
        on_violation: ``"record"`` (default: keep the reports in
            :attr:`violations`), ``"raise"`` (raise :class:`InvariantViolation`
            at the first one) or a callable receiving each :class:`Violation`
            (it is also recorded).
        segmented: arrivals are split into spans of length ``<= R`` before
            buffering (``segment-first``): no span is long, ``K`` stays empty and
            the proposition is vacuous. With ``False`` on a segment-first stream
            the monitor checks the *original* occurrences instead, for which the
            proposition does not hold (a long original's first chunk is served).
        track_buffer: an engine policy: rebuild the buffer from the events with
            a :class:`BufferTracker` so that reports carry a buffer summary
            (costs about one more dict operation per event).
        snapshot: a callable returning the current buffer as
            :class:`~packing_theory.engine.events.BufferedSpan` values; called only when
            a violation is reported, for its summary.
        max_recorded: keep at most this many reports (all are counted).
        not_applicable: a reason why the proposition does not apply to the
            monitored packer (see :data:`OUTSIDE_FAMILY`); the monitor then
            checks nothing, counts every selection as outside and reports
            ``applicable=False`` with the reason.
        max_recorded: keep at most this many reports (all are counted), and
            at most this many :class:`Misuse` records.

    Build it from a packer with :meth:`for_packer`. Stream use:
    ``feed_all(packer.stream(lengths), monitor)`` (the
    :class:`~packing_theory.engine.consumers.Consumer` protocol; ``result()``
    is the :class:`MonitorReport`), ``for ev in monitor.observe(packer.events(lengths)): ...``
    or ``monitor.feed(ev)`` per event. Loader use: :meth:`on_arrival`,
    :meth:`on_select` (with ``buffered=len(buffer)``), :meth:`on_remove`; or wrap
    the buffer list in a :class:`MonitoredBuffer`.

    Complexity: O(1) per event except long arrivals that enter ``K`` (O(log B));
    memory O(B).

    >>> mon = InvariantMonitor(capacity=2, min_buffer=2)
    >>> for occ, n in enumerate([3, 3]):
    ...     _ = mon.on_arrival(occ, n)
    >>> mon.on_select(1, buffered=2)          # the protected one: (3, 1) > (3, 0)
    False
    >>> mon.first_violation.kind, mon.first_violation.occurrence
    ('selected', 1)
    """

    def __init__(
        self,
        capacity: int,
        min_buffer: int,
        *,
        on_violation: Literal["record", "raise"] | ViolationHandler = "record",
        segmented: bool = False,
        track_buffer: Policy | None = None,
        snapshot: Callable[[], Iterable[BufferedSpan]] | None = None,
        max_recorded: int = 100,
        not_applicable: str | None = None,
    ) -> None:
        self.capacity = check_int("capacity", capacity, 2)
        self.min_buffer = check_int("min_buffer", min_buffer, 1)
        if not (on_violation in ("record", "raise") or callable(on_violation)):
            raise InputError(f"on_violation must be 'record', 'raise' or a callable, got {on_violation!r}")
        check_bool("segmented", segmented)
        self.max_recorded = check_int("max_recorded", max_recorded, 0)
        self._raise = on_violation == "raise"
        self._handler: ViolationHandler | None = on_violation if callable(on_violation) else None
        self.segmented = segmented
        self.protected = ProtectedSet(self.capacity, self.min_buffer)
        self._members = self.protected.members  # a read-only live view: `in` without a method call
        self.tracker = BufferTracker(self.capacity, track_buffer) if track_buffer is not None else None
        self._snapshot = snapshot
        # arrivals longer than this enter the protected-set computation
        self._long_cut = self.capacity if not segmented else 1 << 62
        self.selections = 0
        self.selections_checked = 0
        self.selections_outside = 0
        self.arrivals = 0
        self.buffered_mass = 0
        self.violation_count = 0
        self.violations: list[Violation] = []
        self.horizon: Horizon | None = None
        self._outside = False
        self._last_selected = -1
        self._tainted: dict[int, Event | None] = {}
        self._reported: set[int] = set()
        self.not_applicable = not_applicable
        if not_applicable is not None:  # nothing to check: an instance-level feed shadows the method
            self.feed = self._feed_not_applicable  # type: ignore[method-assign]
        self.misuse_count = 0
        self.misuses: list[Misuse] = []
        self._last_arrival = -1  # every arrived id is <= this ...
        self._gaps: list[tuple[int, int]] = []  # ... except these closed ranges of ids that never arrived
        self._fast_max = -1  # feed(): placements of 0.._fast_max need no check (-1: with gaps, after the end)
        self._next_arrival: int | None = 0  # feed(): the arrival id that needs no check (None: after the end)

    @classmethod
    def for_packer(
        cls, packer: object, *, track_buffer: bool = False, **kwargs: Any
    ) -> InvariantMonitor:
        """A monitor matching ``packer``: an engine, a
        :class:`~packing_theory.engine.policies.PackerConfig`, or a peer (then
        ``min_buffer=`` is required: a peer has no buffer size).

        ``segment-first`` sets ``segmented=True`` unless overridden; a policy of
        :data:`OUTSIDE_FAMILY` (``bounded-wait``) gets a monitor that reports
        the proposition as not applicable. ``track_buffer`` rebuilds the
        buffer with the packer's policy (engines and configs only).
        """
        settings = consumer_settings(packer)
        min_buffer = settings.need_min_buffer(kwargs.pop("min_buffer", None), cls.__name__)
        config = settings.config
        if config is not None:
            kwargs.setdefault("segmented", config.spec.segments)
            kwargs.setdefault("not_applicable", OUTSIDE_FAMILY.get(config.policy))
        elif track_buffer:
            raise InputError(f"track_buffer needs a streaming policy; {settings.label or 'the packer'} "
                             "is not one")
        return cls(settings.capacity, min_buffer,
                   track_buffer=config.policy if track_buffer and config is not None else None, **kwargs)

    # -- results -----------------------------------------------------------

    @property
    def ok(self) -> bool:
        """No violation and no misuse so far."""
        return self.violation_count == 0 and self.misuse_count == 0

    @property
    def first_misuse(self) -> Misuse | None:
        """The first recorded misuse, or ``None``."""
        return self.misuses[0] if self.misuses else None

    @property
    def first_violation(self) -> Violation | None:
        """The first recorded violation, or ``None``."""
        return self.violations[0] if self.violations else None

    def result(self) -> MonitorReport:
        """Counts and the first violation."""
        first = self.first_violation
        return MonitorReport(
            selections=self.selections,
            selections_checked=self.selections_checked,
            selections_outside=self.selections_outside,
            arrivals=self.arrivals,
            long_arrivals=self.protected.long_arrivals,
            protected_size=len(self.protected),
            protected_mass=self.protected.mass,
            violations=self.violation_count,
            first_violation=None if first is None else first.to_dict(),
            applicable=self.not_applicable is None,
            not_applicable=self.not_applicable,
            misuses=self.misuse_count,
            first_misuse=None if self.first_misuse is None else self.first_misuse.to_dict(),
        )

    # -- misuse ------------------------------------------------------------------

    def _misuse(self, kind: MisuseKind, call: str, detail: str) -> None:
        """Raise (``"raise"`` mode) or record a refused call. The caller changes no state."""
        m = Misuse(kind, call, detail)
        if self._raise:
            raise (MonitorTypeError if kind == "wrong-type" else MonitorMisuse)(m)
        self.misuse_count += 1
        if len(self.misuses) < self.max_recorded:
            self.misuses.append(m)

    def _int_arg(self, call: str, name: str, value: object, minimum: int) -> bool:
        """Whether ``value`` is an int ``>= minimum``; a misuse otherwise."""
        if not is_int(value):
            self._misuse("wrong-type", call, f"{name} must be an int, got {type(value).__name__} {value!r}")
            return False
        if value < minimum:  # type: ignore[operator]
            self._misuse("bad-value", call, f"{name} must be >= {minimum}, got {value}")
            return False
        return True

    def _arrived(self, occurrence: int) -> bool:
        """Whether ``occurrence`` arrived. O(1), O(log gaps) when arrival ids skipped values."""
        if not 0 <= occurrence <= self._last_arrival:
            return False
        gaps = self._gaps
        if not gaps:
            return True
        i = bisect_right(gaps, (occurrence, self._last_arrival + 1)) - 1
        return i < 0 or not gaps[i][0] <= occurrence <= gaps[i][1]

    def _known(self, call: str, occurrence: object) -> bool:
        """Whether ``occurrence`` is an int that arrived; a misuse otherwise."""
        if not self._int_arg(call, "occurrence", occurrence, 0):
            return False
        if not self._arrived(occurrence):  # type: ignore[arg-type]
            self._misuse("unknown-occurrence", call, f"occurrence {occurrence} never arrived "
                         f"(arrivals so far: {self.arrivals}, last id {self._last_arrival})")
            return False
        return True

    def _accept_arrival(self, call: str, occurrence: int, length: int) -> bool:
        """Validate an arrival before any state changes; record its id."""
        if self.horizon is not None:
            self._misuse("after-horizon", call, f"arrival of occurrence {occurrence} after the Horizon")
            return False
        if occurrence <= self._last_arrival:
            self._misuse("out-of-order", call, f"occurrence must increase with arrival order, got "
                         f"{occurrence} after {self._last_arrival}")
            return False
        if occurrence > self._last_arrival + 1:
            self._gaps.append((self._last_arrival + 1, occurrence - 1))
        self._last_arrival = occurrence
        self._next_arrival = occurrence + 1
        self._fast_max = -1 if self._gaps else occurrence
        return True

    # -- low-level embedding API --------------------------------------------

    def on_arrival(self, occurrence: int, length: int) -> bool:
        """An original occurrence entered the buffer; return whether it joined ``K``.

        Occurrence ids must increase with arrival order (they may skip values).
        O(log B) when it joins ``K``, else O(1). A refused arrival changes nothing.

        Raises:
            MonitorMisuse: a non-increasing occurrence id or a length < 1
                (``"raise"`` mode; recorded otherwise, returning ``False``).
            MonitorTypeError: non-integer arguments (likewise).
        """
        if not (self._int_arg("on_arrival", "occurrence", occurrence, 0)
                and self._int_arg("on_arrival", "length", length, 1)):
            return False
        occurrence, length = int(occurrence), int(length)
        if not self._accept_arrival("on_arrival", occurrence, length):
            return False
        self._arrival(occurrence, length)
        return occurrence in self._members

    def _arrival(self, occurrence: int, length: int) -> None:
        self.arrivals += 1
        self.buffered_mass += length
        self._outside = False
        evicted = self.protected.add(occurrence, length if length > self._long_cut else 0)
        if evicted is not None and self._tainted:
            self._tainted.pop(evicted, None)

    def on_select(
        self,
        occurrence: int,
        *,
        buffered: int | None = None,
        row: int | None = None,
        offset: int | None = None,
    ) -> bool:
        """The loader selected a span of ``occurrence``; return ``False`` on a violation.

        Args:
            occurrence: the selected span's occurrence.
            buffered: spans buffered just before the selection; below ``B`` the
                selection is outside the proposition (counted, not checked).
                ``None``: assume the loader refilled to ``B``.
            row, offset: optional coordinates for the report.

        O(1). A refused call (an occurrence that never arrived, ``None``, a
        negative ``buffered``...) changes nothing and returns ``False``.
        """
        if not self._known("on_select", occurrence):
            return False
        for name, value in (("buffered", buffered), ("row", row), ("offset", offset)):
            if value is not None and not self._int_arg("on_select", name, value, 0):
                return False
        return self._select(int(occurrence), None, buffered, row, offset)

    def on_remove(self, occurrence: int) -> None:
        """A span of ``occurrence`` was dropped outside a selection (flush, eviction).

        A member of ``K`` removed this way is reported at the next checked
        selection if it is still in ``K``. O(1). An occurrence that never
        arrived is a misuse.
        """
        if not self._known("on_remove", occurrence):
            return
        if occurrence in self._members and occurrence != self._last_selected:
            self._tainted[int(occurrence)] = None

    def on_change(self, occurrence: int, old_length: int, new_length: int) -> bool:
        """The loader changed a buffered span of ``occurrence`` in place, outside a selection.

        Changing the length of a *protected* span this way bypasses the
        selection the proposition is about: it is a misuse
        (``changed-protected``) — raised in ``"raise"`` mode, recorded
        otherwise — and the method returns ``False``. Any other change returns
        ``True``. O(1).
        """
        if not self._known("on_change", occurrence):
            return False
        if occurrence in self._members and old_length != new_length:
            self._misuse("changed-protected", "on_change", f"protected occurrence {occurrence} (L="
                         f"{self.protected.length_of(int(occurrence))}) changed from {old_length} to "
                         f"{new_length} tokens outside a selection; pop() it and keep() the rest instead")
            return False
        return True

    def on_exhausted(self) -> None:
        """The loader could not refill to ``B``: the next selections (until an arrival) are outside."""
        self._outside = True

    # -- event stream API ----------------------------------------------------

    def feed(self, ev: EventItem) -> None:
        """Consume one event of the placement stream. O(1) (O(log B) for a long arrival).

        An :class:`~packing_theory.engine.batches.EventBatch` is consumed event
        by event in stream order (the check depends on the interleaving of
        arrivals and selections).
        Something that is not an event, a placement of an occurrence that
        never arrived, an arrival out of order and any event after the
        Horizon are misuses (nothing is counted).

        Raises:
            InvariantViolation: in ``on_violation="raise"`` mode.
            MonitorMisuse: a misuse, in ``on_violation="raise"`` mode.
        """
        if type(ev) is Placement:
            occ = ev.occurrence
            if not 0 <= occ <= self._fast_max:  # rare: an id past the last arrival, gaps, or the end
                if self.horizon is not None:
                    self._misuse("after-horizon", "feed", f"event after the Horizon: {ev!r}"[:300])
                    return
                if not self._known("feed", occ):
                    return
            if self._outside or self._tainted or occ in self._members:
                # reported with the buffer as it was at this selection boundary
                self._select(occ, ev, None, ev.row, ev.offset)
            else:  # the common case, inlined: a checked selection of an unprotected span
                self.selections += 1
                self.selections_checked += 1
                self._last_selected = occ
            self.buffered_mass -= ev.length
            if self.tracker is not None:
                self.tracker.feed(ev)
            return
        if type(ev) is Arrival:
            length = ev.length
            occ = ev.occurrence
            if occ == self._next_arrival:  # the common case, inlined: the next id in order
                self._last_arrival = occ
                self._next_arrival = occ + 1
                if not self._gaps:
                    self._fast_max = occ
            elif not self._accept_arrival("feed", occ, length):
                return
            self.arrivals += 1
            self.buffered_mass += length
            self._outside = False
            evicted = self.protected.add(ev.occurrence, length if length > self._long_cut else 0)
            if evicted is not None and self._tainted:
                self._tainted.pop(evicted, None)
        elif type(ev) is EventBatch:  # before the Horizon check: each event is judged on its own
            feed = self.feed
            for e in ev.events():
                feed(e)
            return  # each event already reached the tracker
        elif self.horizon is not None:
            self._misuse("after-horizon", "feed", f"event after the Horizon: {ev!r}"[:300])
            return
        elif type(ev) is Discard:
            self.buffered_mass -= ev.length
            occ = ev.occurrence
            if occ in self._members and occ != self._last_selected:
                self._tainted[occ] = ev
        elif type(ev) is BosAdded:
            self.buffered_mass += ev.markers
        elif type(ev) is Exhausted:
            self._outside = True
        elif type(ev) is Horizon:
            self._finish(ev)
        elif not isinstance(ev, Event):
            self._misuse("not-an-event", "feed", f"expected a packing_theory event, got "
                         f"{type(ev).__name__} {ev!r}"[:300])
            return
        if self.tracker is not None:
            self.tracker.feed(ev)

    def _feed_not_applicable(self, ev: EventItem) -> None:
        """:meth:`feed` when the proposition does not apply: count, check nothing but misuse."""
        if type(ev) is EventBatch:
            for e in ev.events():
                self._feed_not_applicable(e)
            return
        if type(ev) is not Arrival and self.horizon is not None:
            self._misuse("after-horizon", "feed", f"event after the Horizon: {ev!r}"[:300])
            return
        if type(ev) is Placement:
            occ = ev.occurrence
            if not 0 <= occ <= self._fast_max and not self._known("feed", occ):
                return
            self.selections += 1
            self.selections_outside += 1
        elif not isinstance(ev, Event):
            self._misuse("not-an-event", "feed", f"expected a packing_theory event, got "
                         f"{type(ev).__name__} {ev!r}"[:300])
        elif type(ev) is Arrival:
            occ = ev.occurrence
            if occ == self._next_arrival:  # feed()'s arrival bookkeeping: misuse is still refused
                self._last_arrival = occ
                self._next_arrival = occ + 1
                if not self._gaps:
                    self._fast_max = occ
            elif not self._accept_arrival("feed", occ, ev.length):
                return
            self.arrivals += 1
        elif type(ev) is Horizon:
            self.horizon = ev
            self._fast_max = -1
            self._next_arrival = None

    def observe(self, events: Iterable[EventItem]) -> Iterator[EventItem]:
        """Pass events (or batches) through unchanged while feeding them to the monitor.

        >>> from packing_theory import Packer
        >>> mon = InvariantMonitor(capacity=8, min_buffer=2)
        >>> n = sum(1 for _ in mon.observe(Packer(capacity=8, min_buffer=2, refill=1).events([9, 3, 12, 5])))
        >>> mon.selections, mon.ok
        (3, True)
        """
        feed = self.feed
        for ev in events:
            feed(ev)
            yield ev

    # -- internals -------------------------------------------------------------

    def _select(self, occ: int, ev: Placement | None, buffered: int | None,
                row: int | None, offset: int | None) -> bool:
        index = self.selections
        self.selections = index + 1
        self._last_selected = occ
        if self.not_applicable is not None:
            self.selections_outside += 1
            return True
        if self._outside or (buffered is not None and buffered < self.min_buffer):
            self.selections_outside += 1
            if occ in self._members:
                self._tainted[occ] = ev
            return True
        self.selections_checked += 1
        ok = True
        if self._tainted:
            for victim, cause in list(self._tainted.items()):
                self._report("removed", victim, index, row, offset, cause, buffered,
                             "started or dropped outside a checked selection and still protected")
            self._tainted.clear()
            ok = False
        if occ in self._members:
            self._report("selected", occ, index, row, offset, ev, buffered,
                         "the loader selected it" if ev is None else
                         ("a crop selection" if ev.crop else "a whole selection"))
            ok = False
        return ok

    def _finish(self, ev: Horizon) -> None:
        self.horizon = ev
        self._fast_max = -1
        self._next_arrival = None
        if self._outside or ev.stop_reason != "rows":
            return  # the stream could not refill to B: not a boundary the proposition covers
        for victim, cause in list(self._tainted.items()):
            self._report("removed", victim, None, ev.rows, ev.partial_row_tokens, cause, len(ev.buffered),
                         "started or dropped outside a checked selection; still protected at the horizon")
        self._tainted.clear()
        for v in protected_violations(ev.buffered, self.protected, capacity=self.capacity):
            if v.occurrence not in self._reported:
                self._record(v)

    def _report(self, kind: ViolationKind, occ: int, selection: int | None, row: int | None,
                offset: int | None, ev: Event | None, buffered: int | None, detail: str) -> None:
        ps = self.protected
        summary = None
        if self.tracker is not None:  # the buffer just before this event
            summary = summarize_buffer(self.tracker.snapshot(), self.capacity)
            if buffered is None:
                buffered = summary.spans
        elif self._snapshot is not None:  # whatever the source reports now
            summary = summarize_buffer(self._snapshot(), self.capacity)
        v = Violation(kind, occ, ps.length_of(occ), ps.rank(occ), len(ps), ps.min_key, selection, row,
                      offset, ev, buffered, self.buffered_mass, summary, detail)
        self._record(v)

    def _record(self, v: Violation) -> None:
        self.violation_count += 1
        self._reported.add(v.occurrence)
        if len(self.violations) < self.max_recorded:
            self.violations.append(v)
        if self._handler is not None:
            self._handler(v)
        if self._raise:
            raise InvariantViolation(v)

    def _check(self) -> None:
        """Assert the internal invariants."""
        self.protected._check()
        assert self.selections == self.selections_checked + self.selections_outside
        assert self.violation_count >= len(self.violations)
        assert len(self.violations) <= self.max_recorded
        assert all(occ in self._members for occ in self._tainted), "tainted occurrence left K"
        assert self.arrivals >= len(self.protected)
        assert self.misuse_count >= len(self.misuses) and len(self.misuses) <= self.max_recorded
        assert all(m.kind in MISUSE_KINDS for m in self.misuses)
        gaps = self._gaps
        missing = sum(hi - lo + 1 for lo, hi in gaps)
        assert self.arrivals == self._last_arrival + 1 - missing, "arrival count and arrived ids disagree"
        if self.horizon is None:
            assert self._next_arrival == self._last_arrival + 1
            assert self._fast_max == (-1 if gaps else self._last_arrival)
        else:
            assert self._next_arrival is None and self._fast_max == -1
        assert all(lo <= hi and (i == 0 or gaps[i - 1][1] < lo) for i, (lo, hi) in enumerate(gaps))
        assert all(self._arrived(o) for o in self.protected.members), "a protected occurrence never arrived"
        if self.tracker is not None:
            self.tracker._check()
