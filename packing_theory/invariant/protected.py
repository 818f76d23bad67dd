"""The protected set ``K`` of seed 000 §3, its naive specification, and the full-state predicate.

Statement
---------
A source occurrence is *long* when its original BOS-inclusive length exceeds
the row capacity ``R``. Order long occurrences by the key ``(L_i, i)`` (length,
then arrival index). After any prefix of arrivals, the *protected set* ``K`` is
the ``min(B - 1, N_L)`` largest keys among the ``N_L`` long occurrences arrived
so far.

* :class:`ProtectedSet` — ``K`` maintained incrementally (O(log B) per long arrival);
* :func:`protected_keys` / :func:`protected_set` — the naive specification (sort
  everything), the oracle for :class:`ProtectedSet`;
* :class:`Violation`, :class:`InvariantViolation` — what a monitor reports;
* :func:`protected_violations` / :func:`protected_invariant_holds` — the
  full-state predicate over a buffer snapshot.

Proof names: ``ProtectedSet`` is ``protected_set`` in ``proofs/coq/Defs.v``;
the per-step form is ``protected_invariant`` in ``Invariant.v``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from .._checks import check_int
from ..engine.events import BufferedSpan, Event
from ..errors import Finding, InputError

__all__ = [
    "VIOLATION_KINDS",
    "BufferSummary",
    "InvariantViolation",
    "ProtectedSet",
    "Violation",
    "ViolationKind",
    "protected_invariant_holds",
    "protected_keys",
    "protected_set",
    "protected_violations",
    "summarize_buffer",
]

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

    __slots__ = ("_heap", "_last", "_limit", "_mass", "_members", "capacity", "long_arrivals", "members",
                 "min_buffer")

    def __init__(self, capacity: int, min_buffer: int) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.min_buffer = check_int("min_buffer", min_buffer, 1)
        self._limit = self.min_buffer - 1
        self._heap: list[tuple[int, int]] = []
        self._members: dict[int, int] = {}
        self.members: Mapping[int, int] = MappingProxyType(self._members)
        """``occurrence -> original length`` of every member: a read-only live view (``in`` is O(1))."""
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
            raise InputError(
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
        row: row of that selection, when known.
        offset: row position of that selection, when known.
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


class InvariantViolation(Finding):
    """Raised by a monitor in ``on_violation="raise"`` mode; ``.violation`` holds the report.

    A :class:`~packing_theory.errors.Finding` (exit status 1), not an ``AssertionError``.
    """

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
