"""The protected-set invariant (seed 000 §3) as executable predicates and an embeddable monitor.

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

What is here
------------
* :class:`ProtectedSet` — ``K`` maintained incrementally: a bounded min-heap of
  the ``B - 1`` largest long keys plus a membership dict; O(log B) per long
  arrival, O(1) membership.
* :func:`protected_keys` / :func:`protected_set` — the naive specification of
  ``K`` (sort everything), the oracle for :class:`ProtectedSet`.
* :func:`protected_violations` / :func:`protected_invariant_holds` — the
  full-state predicate over a buffer snapshot (a sequence of
  :class:`~packing_theory.spans.BufferedSpan`).
* :class:`InvariantMonitor` — consumes the event stream of any packer
  (:meth:`~InvariantMonitor.feed`, :meth:`~InvariantMonitor.observe`) or
  low-level callbacks from a loader (:meth:`~InvariantMonitor.on_arrival`,
  :meth:`~InvariantMonitor.on_select`, :meth:`~InvariantMonitor.on_remove`),
  and records or raises :class:`Violation` reports.
* :class:`MonitoredBuffer` — a thin list wrapper for loaders whose buffer is a
  Python list of token lists or ``(tokens, start)`` spans.
* :class:`BufferTracker` — rebuilds the buffer from the event stream of an
  engine policy, for snapshot summaries and full-state checks.

Selections made with fewer than ``B`` buffered spans (after an
:class:`~packing_theory.spans.Exhausted` event in drain mode, or when a loader
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

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from ._checks import check_int
from .policies import CONTINUING_POLICIES, POLICIES, PackerConfig, Policy, segment
from .spans import Arrival, BosAdded, BufferedSpan, Discard, Event, Exhausted, Horizon, Placement

__all__ = [
    "OUTSIDE_FAMILY",
    "VIOLATION_KINDS",
    "BufferSummary",
    "BufferTracker",
    "InvariantMonitor",
    "InvariantViolation",
    "MonitorReport",
    "MonitoredBuffer",
    "ProtectedSet",
    "Violation",
    "ViolationKind",
    "protected_invariant_holds",
    "protected_keys",
    "protected_set",
    "protected_violations",
    "summarize_buffer",
]

OUTSIDE_FAMILY: dict[str, str] = {
    "bounded-wait": (
        "not applicable: bounded-wait forces the oldest overdue unstarted span to start at a row start "
        "(age-based service), outside the hypotheses of seed 000 §3 by design; its own theorem "
        "(start delay <= A + B + b - 2 rows, full rows, no discard) is checked by "
        "packing_theory.wait_bound.StartDelayMonitor instead"
    ),
}
"""Policies to which the protected-set proposition does not apply by design, with the reason.

:meth:`InvariantMonitor.for_config` builds a monitor that checks nothing for
them and says why (``report().applicable`` is ``False``)."""

ViolationKind = Literal["selected", "removed", "missing", "changed", "duplicated"]
VIOLATION_KINDS: tuple[ViolationKind, ...] = ("selected", "removed", "missing", "changed", "duplicated")
"""``selected``: a checked selection took a member of ``K``; ``removed``: a member
of ``K`` was started or dropped outside a checked selection and is still in
``K`` at the next checked boundary; ``missing`` / ``changed`` / ``duplicated``:
full-state findings (no span, a span that is not the whole untouched original,
more than one span)."""



# --------------------------------------------------------------------------- the protected set


class ProtectedSet:
    """The protected set ``K``: the ``min(B - 1, N_L)`` largest long keys ``(L, i)`` so far.

    Args:
        capacity: row capacity ``R``; an occurrence is long when ``L > R``.
        min_buffer: minimum buffer occupancy ``B``; ``K`` holds at most ``B - 1`` keys.

    Arrivals must be added in arrival order (strictly increasing occurrence
    ids), so a later key wins a length tie.

    Complexity: :meth:`add` O(log B) for a long arrival that enters ``K``, O(1)
    otherwise; ``in`` O(1); :attr:`mass` O(1); memory O(B).

    >>> ps = ProtectedSet(capacity=4, min_buffer=3)
    >>> [ps.add(i, n) for i, n in enumerate([9, 2, 7, 8, 9])]
    [None, None, None, 2, 3]
    >>> ps.keys()
    [(9, 4), (9, 0)]
    >>> 0 in ps, 3 in ps, ps.mass, ps.long_arrivals
    (True, False, 18, 4)
    """

    __slots__ = ("_heap", "_last", "_limit", "_mass", "_members", "capacity", "long_arrivals", "min_buffer")

    def __init__(self, capacity: int, min_buffer: int) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.min_buffer = check_int("min_buffer", min_buffer, 1)
        self._limit = self.min_buffer - 1
        self._heap: list[tuple[int, int]] = []
        self._members: dict[int, int] = {}
        self._mass = 0
        self._last = -1
        self.long_arrivals = 0

    def add(self, occurrence: int, length: int) -> int | None:
        """Account the arrival of ``occurrence`` with original ``length``.

        Returns the occurrence that left ``K`` because of this arrival, or ``None``.

        Raises:
            ValueError: ``occurrence`` is not larger than every earlier one.
        """
        if occurrence <= self._last:
            raise ValueError(
                f"occurrence must increase with arrival order, got {occurrence} after {self._last}"
            )
        self._last = occurrence
        if length <= self.capacity:
            return None
        self.long_arrivals += 1
        heap = self._heap
        if len(heap) < self._limit:
            heapq.heappush(heap, (length, occurrence))
            self._members[occurrence] = length
            self._mass += length
            return None
        if not heap or length < heap[0][0]:
            return None
        # (length, occurrence) > heap[0]: equal lengths lose to the later arrival.
        old_length, old = heapq.heapreplace(heap, (length, occurrence))
        del self._members[old]
        self._members[occurrence] = length
        self._mass += length - old_length
        return old

    def __contains__(self, occurrence: object) -> bool:
        """``occurrence in K``. O(1)."""
        return occurrence in self._members

    def __len__(self) -> int:
        """``|K| = min(B - 1, N_L)``. O(1)."""
        return len(self._members)

    def __iter__(self) -> Iterator[int]:
        """Members in key order, largest first. O(B log B)."""
        return (occ for _, occ in self.keys())

    def keys(self) -> list[tuple[int, int]]:
        """The keys ``(L, i)`` of ``K``, largest first. O(B log B)."""
        return sorted(self._heap, reverse=True)

    def lengths(self) -> dict[int, int]:
        """``occurrence -> original length`` for every member (a copy). O(B)."""
        return dict(self._members)

    def length_of(self, occurrence: int) -> int:
        """Original length of a member. O(1). Raises KeyError for a non-member."""
        return self._members[occurrence]

    @property
    def min_key(self) -> tuple[int, int] | None:
        """The smallest key in ``K`` (``None`` when empty). O(1)."""
        return self._heap[0] if self._heap else None

    @property
    def mass(self) -> int:
        """Sum of the members' original lengths (the mass corollary's bound). O(1)."""
        return self._mass

    def rank(self, occurrence: int) -> int:
        """1-based rank of a member by key (1 = largest). O(B). Raises KeyError for a non-member."""
        key = (self._members[occurrence], occurrence)
        return 1 + sum(1 for k in self._heap if k > key)

    def _check(self) -> None:
        """Assert the internal invariants."""
        heap = self._heap
        assert all(not heap[(i - 1) // 2] > heap[i] for i in range(1, len(heap))), "heap order broken"
        assert len(heap) <= self._limit, "more than B - 1 members"
        assert len(heap) == min(self._limit, self.long_arrivals), "K is not min(B - 1, N_L) large"
        assert {occ: n for n, occ in heap} == self._members, "members and heap disagree"
        assert all(n > self.capacity for n, _ in heap), "a member is not long"
        assert self._mass == sum(n for n, _ in heap), "mass out of date"
        assert all(occ <= self._last for _, occ in heap)


def _long_keys(lengths: Iterable[int], capacity: int) -> list[tuple[int, int]]:
    keys = []
    for i, n in enumerate(lengths):
        n = check_int(f"lengths[{i}]", n, 1)
        if n > capacity:
            keys.append((n, i))
    return keys


def protected_keys(lengths: Iterable[int], capacity: int, min_buffer: int) -> list[tuple[int, int]]:
    """The keys of ``K`` after the arrivals ``lengths`` (occurrence ``i`` = index ``i``), largest first.

    The naive specification: sort every long key, keep ``min(B - 1, N_L)``.
    O(N log N). :class:`ProtectedSet` is the incremental implementation.

    >>> protected_keys([9, 2, 7, 8, 9], capacity=4, min_buffer=3)
    [(9, 4), (9, 0)]
    >>> protected_keys([9, 2], capacity=4, min_buffer=1)
    []
    """
    capacity = check_int("capacity", capacity, 1)
    min_buffer = check_int("min_buffer", min_buffer, 1)
    keys = sorted(_long_keys(lengths, capacity), reverse=True)
    return keys[: min_buffer - 1]


def protected_set(lengths: Iterable[int], capacity: int, min_buffer: int) -> frozenset[int]:
    """The occurrences in ``K`` after the arrivals ``lengths``. O(N log N).

    >>> sorted(protected_set([9, 2, 7, 8, 9], capacity=4, min_buffer=3))
    [0, 4]
    """
    return frozenset(occ for _, occ in protected_keys(lengths, capacity, min_buffer))


# --------------------------------------------------------------------------- reports


class BufferSummary(NamedTuple):
    """A few numbers describing a buffer snapshot (for violation reports).

    Attributes:
        spans: number of buffered spans.
        mass: buffered tokens.
        long_spans: spans whose current length exceeds ``R``.
        untouched: spans that are whole originals (``start == 0``, no inserted BOS).
        shortest: ``(length, occurrence)`` of the first shortest span, or ``None``.
        longest: ``(length, occurrence)`` of the first longest span, or ``None``.
    """

    spans: int
    mass: int
    long_spans: int
    untouched: int
    shortest: tuple[int, int] | None
    longest: tuple[int, int] | None


def summarize_buffer(spans: Iterable[BufferedSpan], capacity: int) -> BufferSummary:
    """Summarise a buffer snapshot in buffer order. O(n).

    >>> summarize_buffer([BufferedSpan(0, 0, 0, 9, False), BufferedSpan(1, 1, 3, 2, False)], 4)
    BufferSummary(spans=2, mass=11, long_spans=1, untouched=1, shortest=(2, 1), longest=(9, 0))
    """
    count = mass = long_spans = untouched = 0
    shortest: tuple[int, int] | None = None
    longest: tuple[int, int] | None = None
    for span in spans:
        count += 1
        mass += span.length
        long_spans += span.length > capacity
        untouched += span.start == 0 and not span.bos_inserted
        if shortest is None or span.length < shortest[0]:
            shortest = (span.length, span.occurrence)
        if longest is None or span.length > longest[0]:
            longest = (span.length, span.occurrence)
    return BufferSummary(count, mass, long_spans, untouched, shortest, longest)


@dataclass(frozen=True, slots=True)
class Violation:
    """One violation of the protected-set invariant.

    Attributes:
        kind: one of :data:`VIOLATION_KINDS`.
        occurrence: the protected occurrence concerned.
        length: its original length.
        rank: its rank in ``K`` by key (1 = largest) when the violation was found.
        protected_size: ``|K|`` then.
        min_protected_key: the smallest key of ``K`` then.
        selection: 0-based index (among all selections) of the selection at
            which it was found; ``None`` for full-state findings.
        row, offset: row coordinates of that selection, when known.
        event: the event that exposed it (the :class:`Placement` that took the
            member, or the event that removed it), when known.
        buffered_spans: spans buffered at that boundary, when known.
        buffered_mass: tokens buffered at that boundary, when known.
        buffer: a :class:`BufferSummary` of the buffer, when a snapshot was available.
        detail: one line in words.
    """

    kind: ViolationKind
    occurrence: int
    length: int
    rank: int
    protected_size: int
    min_protected_key: tuple[int, int] | None
    selection: int | None = None
    row: int | None = None
    offset: int | None = None
    event: Event | None = None
    buffered_spans: int | None = None
    buffered_mass: int | None = None
    buffer: BufferSummary | None = None
    detail: str = ""

    def describe(self) -> str:
        """A one-paragraph human-readable report."""
        where = "" if self.selection is None else f" at selection {self.selection}"
        if self.row is not None:
            where += f" (row {self.row}, offset {self.offset})"
        text = (
            f"{self.kind}: protected occurrence {self.occurrence} (L={self.length}, rank {self.rank} "
            f"of |K|={self.protected_size}, min key {self.min_protected_key}){where}"
        )
        if self.detail:
            text += f"; {self.detail}"
        if self.buffered_spans is not None:
            text += f"; buffered spans {self.buffered_spans}"
        if self.buffered_mass is not None:
            text += f"; buffered mass {self.buffered_mass}"
        if self.buffer is not None:
            text += f"; buffer {self.buffer._asdict()}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (events and summaries become dicts)."""
        out = asdict(self)
        out["event"] = None if self.event is None else {"type": type(self.event).__name__,
                                                         **self.event._asdict()}
        out["buffer"] = None if self.buffer is None else self.buffer._asdict()
        if isinstance(out["event"], dict) and "buffered" in out["event"]:
            out["event"]["buffered"] = len(out["event"]["buffered"])
        mk = self.min_protected_key
        out["min_protected_key"] = None if mk is None else list(mk)
        return out


class InvariantViolation(AssertionError):
    """Raised by a monitor in ``on_violation="raise"`` mode; ``.violation`` holds the report."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.describe())
        self.violation = violation


# --------------------------------------------------------------------------- full-state predicate


def protected_violations(
    buffered: Iterable[BufferedSpan],
    protected: Mapping[int, int] | ProtectedSet,
    *,
    capacity: int | None = None,
) -> list[Violation]:
    """Check a buffer snapshot against ``K``: each member exactly once, whole and untouched.

    Args:
        buffered: the buffered spans (any order).
        protected: ``occurrence -> original length`` for every member of ``K``,
            or a :class:`ProtectedSet`.
        capacity: ``R``, only used for the buffer summary in the reports.

    Returns the violations (``missing``, ``changed``, ``duplicated``), members
    in key order, largest first. O(n + B log B).

    >>> spans = [BufferedSpan(0, 0, 0, 9, False), BufferedSpan(3, 3, 2, 6, False)]
    >>> [(v.kind, v.occurrence) for v in protected_violations(spans, {0: 9, 3: 8, 4: 9})]
    [('missing', 4), ('changed', 3)]
    """
    spans = list(buffered)
    members = protected.lengths() if isinstance(protected, ProtectedSet) else dict(protected)
    found: dict[int, list[BufferedSpan]] = {}
    for span in spans:
        if span.occurrence in members:
            found.setdefault(span.occurrence, []).append(span)
    keys = sorted(((n, occ) for occ, n in members.items()), reverse=True)
    min_key = keys[-1] if keys else None
    summary = summarize_buffer(spans, capacity) if capacity is not None else None
    out: list[Violation] = []
    for rank, (length, occ) in enumerate(keys, 1):
        mine = found.get(occ, [])
        kind: ViolationKind | None = None
        if not mine:
            kind, detail = "missing", "not buffered"
        elif len(mine) > 1:
            kind, detail = "duplicated", f"{len(mine)} active spans"
        else:
            s = mine[0]
            if s.start != 0 or s.length != length or s.bos_inserted:
                kind = "changed"
                detail = f"buffered as start={s.start} length={s.length} bos_inserted={s.bos_inserted}"
        if kind is not None:
            out.append(Violation(kind, occ, length, rank, len(keys), min_key,
                                 buffered_spans=len(spans), buffered_mass=sum(s.length for s in spans),
                                 buffer=summary, detail=detail))
    return out


def protected_invariant_holds(
    buffered: Iterable[BufferedSpan], protected: Mapping[int, int] | ProtectedSet
) -> bool:
    """``True`` when :func:`protected_violations` finds nothing. O(n + B log B).

    >>> protected_invariant_holds([BufferedSpan(0, 0, 0, 9, False)], {0: 9})
    True
    """
    return not protected_violations(buffered, protected)


# --------------------------------------------------------------------------- buffer tracker


class BufferTracker:
    """Rebuild the buffer, in buffer order, from the event stream of an engine policy.

    The event stream does not say where a ``continue`` suffix goes (it stays in
    place) or how ``segment-first`` split an arrival; the tracker knows the
    policy. It supports every policy of :data:`~packing_theory.policies.POLICIES`.

    Complexity: O(1) amortised per event; :meth:`snapshot` O(n log n).

    >>> from packing_theory import Packer
    >>> tr = BufferTracker(capacity=4, policy="continue")
    >>> for ev in Packer(capacity=4, min_buffer=2, refill=1, policy="continue", rows=2).events([3, 9, 2, 4]):
    ...     tr.feed(ev)
    >>> tr.snapshot() == tr.horizon.buffered
    True
    """

    __slots__ = ("_by_occ", "_next", "_pending", "_spans", "capacity", "horizon", "mass", "policy")

    def __init__(self, capacity: int, policy: Policy = "discard") -> None:
        self.capacity = check_int("capacity", capacity, 2)
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
        self.policy: Policy = policy
        self._spans: dict[int, BufferedSpan] = {}
        self._by_occ: dict[int, list[int]] = {}
        self._next = 0
        self._pending: BufferedSpan | None = None
        self.mass = 0
        self.horizon: Horizon | None = None

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
        raise ValueError(f"no buffered span of occurrence {occurrence} starts at {start}")

    def _remove(self, seq: int) -> BufferedSpan:
        span = self._spans.pop(seq)
        seqs = self._by_occ[span.occurrence]
        seqs.remove(seq)
        if not seqs:
            del self._by_occ[span.occurrence]
        self.mass -= span.length
        return span

    def feed(self, ev: Event) -> None:
        """Apply one event. O(1) amortised.

        Raises:
            ValueError: a placement of a span that is not buffered.
        """
        if type(ev) is Arrival:
            if self.policy == "segment-first" and ev.length > self.capacity:
                for start, n, bos in segment(ev.length, self.capacity):
                    self._append(BufferedSpan(ev.occurrence, ev.source, start, n, bos))
            else:
                self._append(BufferedSpan(ev.occurrence, ev.source, 0, ev.length, False))
        elif type(ev) is Placement:
            if ev.occurrence not in self._by_occ:
                raise ValueError(f"placement of occurrence {ev.occurrence}, which is not buffered")
            seq = self._find(ev.occurrence, ev.start)
            span = self._remove(seq)
            if ev.crop:
                m = ev.length
                rest = span.start + m - (1 if span.bos_inserted else 0)
                left = span.length - m
                if self.policy in CONTINUING_POLICIES:
                    self._put(seq, BufferedSpan(span.occurrence, span.source, rest, left, False))
                elif self.policy == "requeue-bos":
                    self._pending = BufferedSpan(span.occurrence, span.source, rest, left + 1, True)
        elif type(ev) is BosAdded:
            pending = self._pending
            if pending is not None and pending.occurrence == ev.occurrence:
                self._append(pending)
                self._pending = None
        elif type(ev) is Discard:
            self._pending = None
        elif type(ev) is Horizon:
            self.horizon = ev

    def snapshot(self) -> tuple[BufferedSpan, ...]:
        """The buffered spans in buffer order. O(n log n)."""
        return tuple(self._spans[s] for s in sorted(self._spans))

    def _check(self) -> None:
        """Assert the internal invariants."""
        seen = [s for seqs in self._by_occ.values() for s in seqs]
        assert sorted(seen) == sorted(self._spans), "occurrence index and spans disagree"
        assert all(self._spans[s].occurrence == o for o, seqs in self._by_occ.items() for s in seqs)
        assert self.mass == sum(s.length for s in self._spans.values()), "mass out of date"
        assert all(0 <= s < self._next for s in self._spans)
        assert all(s.length >= 1 for s in self._spans.values())


# --------------------------------------------------------------------------- the monitor

ViolationHandler = Callable[[Violation], None]


@dataclass
class MonitorReport:
    """What a monitor saw (``packing-theory check --json`` prints this)."""

    selections: int
    selections_checked: int
    selections_outside: int
    arrivals: int
    long_arrivals: int
    protected_size: int
    protected_mass: int
    violations: int
    first_violation: dict[str, Any] | None = field(default=None)
    applicable: bool = True
    not_applicable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


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
            :class:`~packing_theory.spans.BufferedSpan` values; called only when
            a violation is reported, for its summary.
        max_recorded: keep at most this many reports (all are counted).
        not_applicable: a reason why the proposition does not apply to the
            monitored packer (see :data:`OUTSIDE_FAMILY`); the monitor then
            checks nothing, counts every selection as outside and reports
            ``applicable=False`` with the reason.

    Stream use: ``for ev in monitor.observe(packer.events(lengths)): ...`` or
    ``monitor.feed(ev)`` per event. Loader use: :meth:`on_arrival`,
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
        capacity: int = 2049,
        min_buffer: int = 1000,
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
            raise ValueError(f"on_violation must be 'record', 'raise' or a callable, got {on_violation!r}")
        if not isinstance(segmented, bool):
            raise TypeError(f"segmented must be a bool, got {type(segmented).__name__} {segmented!r}")
        self.max_recorded = check_int("max_recorded", max_recorded, 0)
        self._raise = on_violation == "raise"
        self._handler: ViolationHandler | None = on_violation if callable(on_violation) else None
        self.segmented = segmented
        self.protected = ProtectedSet(self.capacity, self.min_buffer)
        self._members = self.protected._members
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

    @classmethod
    def for_config(
        cls, config: PackerConfig, *, track_buffer: bool = False, **kwargs: Any
    ) -> InvariantMonitor:
        """A monitor matching a :class:`~packing_theory.policies.PackerConfig`.

        ``segment-first`` sets ``segmented=True`` unless overridden; a policy of
        :data:`OUTSIDE_FAMILY` (``bounded-wait``) gets a monitor that reports
        the proposition as not applicable.
        """
        kwargs.setdefault("segmented", config.policy == "segment-first")
        kwargs.setdefault("not_applicable", OUTSIDE_FAMILY.get(config.policy))
        return cls(config.capacity, config.min_buffer,
                   track_buffer=config.policy if track_buffer else None, **kwargs)

    # -- results -----------------------------------------------------------

    @property
    def ok(self) -> bool:
        """No violation so far."""
        return self.violation_count == 0

    @property
    def first_violation(self) -> Violation | None:
        """The first recorded violation, or ``None``."""
        return self.violations[0] if self.violations else None

    def report(self) -> MonitorReport:
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
        )

    # -- low-level embedding API --------------------------------------------

    def on_arrival(self, occurrence: int, length: int) -> bool:
        """An original occurrence entered the buffer; return whether it joined ``K``.

        Occurrence ids must increase with arrival order. O(log B) when it joins
        ``K``, else O(1).

        Raises:
            ValueError: a non-increasing occurrence id or a length < 1.
            TypeError: non-integer arguments.
        """
        occurrence = check_int("occurrence", occurrence, 0)
        length = check_int("length", length, 1)
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

        O(1).
        """
        return self._select(occurrence, None, buffered, row, offset)

    def on_remove(self, occurrence: int) -> None:
        """A span of ``occurrence`` was dropped or changed outside a selection (flush, eviction).

        A member of ``K`` removed this way is reported at the next checked
        selection if it is still in ``K``. O(1).
        """
        if occurrence in self._members and occurrence != self._last_selected:
            self._tainted[occurrence] = None

    def on_exhausted(self) -> None:
        """The loader could not refill to ``B``: the next selections (until an arrival) are outside."""
        self._outside = True

    # -- event stream API ----------------------------------------------------

    def feed(self, ev: Event) -> None:
        """Consume one event of the placement stream. O(1) (O(log B) for a long arrival).

        Raises:
            InvariantViolation: in ``on_violation="raise"`` mode.
        """
        if type(ev) is Placement:
            occ = ev.occurrence
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
            self.arrivals += 1
            self.buffered_mass += length
            self._outside = False
            ps = self.protected
            if length <= self._long_cut:  # the common case, inlined: a short arrival
                occ = ev.occurrence
                if occ <= ps._last:
                    ps.add(occ, 0)  # raises
                ps._last = occ
            else:
                evicted = ps.add(ev.occurrence, length)
                if evicted is not None and self._tainted:
                    self._tainted.pop(evicted, None)
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
        if self.tracker is not None:
            self.tracker.feed(ev)

    def _feed_not_applicable(self, ev: Event) -> None:
        """:meth:`feed` when the proposition does not apply: count, check nothing."""
        t = type(ev)
        if t is Placement:
            self.selections += 1
            self.selections_outside += 1
        elif t is Arrival:
            self.arrivals += 1
        elif t is Horizon:
            self.horizon = ev  # type: ignore[assignment]

    def observe(self, events: Iterable[Event]) -> Iterator[Event]:
        """Pass events through unchanged while feeding them to the monitor.

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

    def run(self, events: Iterable[Event]) -> MonitorReport:
        """Consume a whole event stream and return :meth:`report`."""
        feed = self.feed
        for ev in events:
            feed(ev)
        return self.report()

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
        if self.tracker is not None:
            self.tracker._check()


# --------------------------------------------------------------------------- list wrapper

T = TypeVar("T")


class MonitoredBuffer(Generic[T]):
    """A loader's document buffer (a Python list) that reports to an :class:`InvariantMonitor`.

    Items are whatever the loader buffers: token lists, or ``(tokens, start)``
    spans. ``length(item)`` must give an item's current length in tokens (the
    default handles both forms). Each item remembers the occurrence it belongs
    to, so continuations are attributed correctly:

    * :meth:`append` / :meth:`extend` — new documents arrive (refill);
    * :meth:`pop` — a selection (checked; ``buffered=len(self)`` is passed on);
    * :meth:`keep` — put a continuation of the last popped item back at an index
      (``continue`` semantics, PR #372);
    * :meth:`requeue` — append a continuation of the last popped item at the
      end (``requeue-bos``, PR #544);
    * :meth:`flush` — drop everything outside a selection (an epoch flush).

    Complexity: as the underlying list (O(n) ``pop(i)``) plus O(1) monitoring.

    >>> mon = InvariantMonitor(capacity=4, min_buffer=2)
    >>> buf = MonitoredBuffer(mon)
    >>> buf.extend([[0, 1, 2, 3, 4], [0, 5], [0, 6, 7, 8, 9, 10]])
    >>> doc = buf.pop(1)                 # the short document: fine
    >>> doc = buf.pop(1)                 # the largest long document: protected
    >>> mon.violation_count, mon.first_violation.occurrence
    (1, 2)
    """

    def __init__(self, monitor: InvariantMonitor, *, length: Callable[[T], int] | None = None) -> None:
        if not isinstance(monitor, InvariantMonitor):
            raise TypeError(f"monitor must be an InvariantMonitor, got {type(monitor).__name__}")
        self.monitor = monitor
        self._length: Callable[[T], int] = length if length is not None else _item_length
        self._items: list[T] = []
        self._occ: list[int] = []
        self._next = 0
        self.last_popped: int | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> T:
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __setitem__(self, index: int, item: T) -> None:
        """Replace an item in place; it stays the same occurrence (a continuation)."""
        self._items[index] = item

    def occurrence_at(self, index: int) -> int:
        """The occurrence id of the item at ``index``."""
        return self._occ[index]

    def append(self, item: T) -> None:
        """A new document arrives at the end of the buffer."""
        occ = self._next
        self._next += 1
        self.monitor.on_arrival(occ, self._length(item))
        self._items.append(item)
        self._occ.append(occ)

    def extend(self, items: Iterable[T]) -> None:
        """New documents arrive (one refill batch)."""
        for item in items:
            self.append(item)

    def pop(self, index: int = -1) -> T:
        """Select the item at ``index`` (a checked selection) and remove it."""
        occ = self._occ[index]
        self.monitor.on_select(occ, buffered=len(self._items))
        self.last_popped = occ
        del self._occ[index]
        return self._items.pop(index)

    def keep(self, index: int, item: T) -> None:
        """Insert a continuation of the last popped item at ``index`` (same occurrence)."""
        if self.last_popped is None:
            raise ValueError("keep() needs a previous pop()")
        self._items.insert(index, item)
        self._occ.insert(index, self.last_popped)

    def requeue(self, item: T) -> None:
        """Append a continuation of the last popped item at the end (same occurrence)."""
        if self.last_popped is None:
            raise ValueError("requeue() needs a previous pop()")
        self._items.append(item)
        self._occ.append(self.last_popped)

    def flush(self) -> list[T]:
        """Drop every buffered item outside a selection; return them."""
        for occ in self._occ:
            self.monitor.on_remove(occ)
        items = self._items
        self._items = []
        self._occ = []
        return items

    def _check(self) -> None:
        """Assert the internal invariants."""
        assert len(self._items) == len(self._occ)
        assert all(0 <= o < self._next for o in self._occ)


def _item_length(item: Any) -> int:
    """Length of a token list, or of a ``(tokens, start)`` span (``len(tokens) - start``)."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], int):
        return len(item[0]) - item[1]
    return len(item)
