"""What the peer modules share: pieces and rows, the lengths check, the arrivals prologue, bin packing.

Private to :mod:`packing_theory.peers` (:class:`Piece` and :class:`RowEmitter`
are re-exported there):

* :class:`Piece`, :func:`row_events` (the one row emitter: a row's pieces as
  Placement / Repeat events padded to the row width on either side) and
  :class:`RowEmitter` (numbers the rows it emits);
* :class:`EventLog`, the events of one offline replay with its mass totals;
* :func:`peer_lengths` (the one lengths check; empty documents allowed unless
  the framework takes none), :func:`check_choice`, :func:`check_optional_int`;
* :func:`arrivals`, the Arrival prologue (with ``Filtered`` for empty documents);
* :func:`best_fit` / :func:`best_fit_decreasing` with an explicit tie rule
  (:data:`TieRule`), and :func:`first_fit` over a :class:`FirstFitTree`.
"""

from __future__ import annotations

import bisect
import heapq
import numbers
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.events import Arrival, Discard, Event, Filtered, Horizon, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError

__all__ = [
    "SPLIT_BUDGET",
    "TIE_RULES",
    "EventLog",
    "FirstFitTree",
    "Piece",
    "RowEmitter",
    "TieRule",
    "arrivals",
    "best_fit",
    "best_fit_decreasing",
    "check_choice",
    "check_optional_int",
    "check_split_budget",
    "column_split_budget",
    "first_fit",
    "peer_lengths",
    "row_events",
]

T = TypeVar("T")


# --------------------------------------------------------------------------- rows


class Piece(NamedTuple):
    """A contiguous run of source tokens placed in a row.

    ``repeat=True`` marks tokens already emitted by an earlier piece (shown
    again, e.g. Megatron's one-token sample overlap).
    """

    occurrence: int
    source: int
    start: int
    length: int
    crop: bool = False
    repeat: bool = False


def row_events(row: int, pieces: Iterable[Piece], capacity: int, *, left_pad: bool = False) -> list[Event]:
    """The events of one row: its pieces in order, padded to ``capacity`` on the right (or the left).

    >>> [type(e).__name__ for e in row_events(0, [Piece(0, 0, 0, 3)], 5, left_pad=True)]
    ['Padding', 'Placement']

    Raises:
        InputError: an empty piece, or pieces that overflow the row.
    """
    items = list(pieces)
    for p in items:
        if p.length < 1:
            raise InputError(f"piece {p!r} is empty")
    used = sum(p.length for p in items)
    if used > capacity:
        raise InputError(f"row {row} holds {used} tokens > capacity {capacity}")
    pad = capacity - used
    out: list[Event] = []
    pos = 0
    if left_pad and pad:
        out.append(Padding(row, 0, pad))
        pos = pad
    for p in items:
        if p.repeat:
            out.append(Repeat(row, pos, p.occurrence, p.source, p.start, p.length))
        else:
            out.append(Placement(row, pos, p.occurrence, p.source, p.start, p.length, False, p.crop))
        pos += p.length
    if pad and not left_pad:
        out.append(Padding(row, pos, pad))
    return out


class RowEmitter:
    """Numbers rows and turns a row's pieces into events (:func:`row_events`).

    >>> em = RowEmitter(capacity=6)
    >>> [type(e).__name__ for e in em.row([Piece(0, 0, 0, 3), Piece(1, 1, 0, 2)])]
    ['Placement', 'Placement', 'Padding']
    >>> em.rows
    1
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.rows = 0

    def row(self, pieces: Sequence[Piece], *, row: int | None = None, left_pad: bool = False) -> list[Event]:
        """Events of one row; ``row`` overrides the index (shuffled outputs), else rows count up.

        Raises:
            InputError: the pieces overflow the row or a piece is empty.
        """
        out = row_events(self.rows if row is None else row, pieces, self.capacity, left_pad=left_pad)
        self.rows += 1
        return out


class EventLog:
    """The events of one offline replay, with running mass totals.

    Rows are added with :meth:`row`; :meth:`finish` appends the Horizon and
    asserts the mass and row identities (an internal error, never bad input).
    """

    def __init__(self, capacity: int) -> None:
        self.emitter = RowEmitter(capacity)
        self.events: list[Event] = []
        self.arrived = 0
        self.accounted = 0
        self.filled = 0

    def extend(self, events: Iterable[Event]) -> None:
        """Record Arrival, Filtered and Discard events (e.g. :func:`arrivals`' prologue)."""
        for ev in events:
            if type(ev) is Arrival:
                self.arrived += ev.length
            elif type(ev) is Filtered or type(ev) is Discard:
                self.accounted += ev.length
            else:
                raise InputError(f"EventLog.extend records arrivals, filters and discards, got {ev!r}")
            self.events.append(ev)

    def filtered(self, occurrence: int, source: int, length: int, reason: str) -> None:
        """Record a Filtered event."""
        self.extend((Filtered(occurrence, source, length, reason),))

    def discard(self, occurrence: int, source: int, start: int, length: int) -> None:
        """Record a Discard (nothing for an empty range)."""
        if length > 0:
            self.extend((Discard(occurrence, source, start, length),))

    def row(self, pieces: Sequence[Piece]) -> None:
        """Record one row: its pieces, then padding to the capacity."""
        evs = self.emitter.row(pieces)
        self.events.extend(evs)
        for ev in evs:
            if type(ev) is Placement:
                self.accounted += ev.length
        self.filled += self.emitter.capacity

    @property
    def rows(self) -> int:
        """Rows recorded so far."""
        return self.emitter.rows

    def finish(self, stop_reason: str) -> list[Event]:
        """Append the Horizon and return the events."""
        self._check()
        self.events.append(Horizon(self.emitter.rows, 0, stop_reason, ()))
        return self.events

    def _check(self) -> None:
        """Assert the mass identity (every arrived token emitted, discarded or filtered)."""
        assert self.arrived == self.accounted, (self.arrived, self.accounted)
        assert self.filled == self.emitter.rows * self.emitter.capacity


# --------------------------------------------------------------------------- input checks


def peer_lengths(lengths: Any, *, allow_empty: bool = True, who: str = "this packer") -> list[int]:
    """``lengths`` (a sequence of ints or an integer array) as a list of ints ``>= 0``.

    Peers accept empty documents (length 0) because some frameworks take them;
    with ``allow_empty=False`` (a framework that takes none, named by ``who``)
    every length must be ``>= 1``.

    >>> peer_lengths([3, 0, 2])
    [3, 0, 2]
    >>> peer_lengths([3, -1])
    Traceback (most recent call last):
    packing_theory.InputError: lengths[1] must be a length >= 0, got -1
    >>> peer_lengths([3, 0], allow_empty=False, who="OLMo-core")
    Traceback (most recent call last):
    packing_theory.InputError: lengths[1] must be a length >= 1 (OLMo-core takes no empty documents), got 0

    Raises:
        InputTypeError: not a sequence of ints / an integer array.
        InputError: not 1-D, a negative length, or an empty document where none is taken.
    """
    if isinstance(lengths, np.ndarray) and not isinstance(lengths, np.ma.MaskedArray):
        if lengths.dtype == np.bool_ or not np.issubdtype(lengths.dtype, np.integer):
            raise InputTypeError(f"lengths must have an integer dtype, got {lengths.dtype}")
        if lengths.ndim != 1:
            raise InputError(f"lengths must be 1-D, got shape {lengths.shape}")
        check_short_lengths(lengths, allow_empty=allow_empty, who=who)  # its values are ints: one bulk check
        out: list[int] = lengths.tolist()
        return out
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        raise InputTypeError(f"lengths must be a sequence of ints or a numpy array, "
                             f"got {type(lengths).__name__}")
    out = []
    for i, v in enumerate(lengths):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise InputTypeError(f"lengths[{i}] must be an int, got {type(v).__name__} {v!r}")
        if v < (0 if allow_empty else 1):
            raise _too_short(i, v, allow_empty, who)
        out.append(int(v))
    return out


def check_short_lengths(lengths: npt.NDArray[np.integer[Any]], *, allow_empty: bool = True,
                        who: str = "this packer") -> None:
    """:func:`peer_lengths`'s length check on an integer array, in bulk: the first too short one. O(n).

    Raises:
        InputError: a negative length, or an empty document where none is taken.
    """
    short = np.flatnonzero(lengths < (0 if allow_empty else 1))
    if short.size:
        i = int(short[0])
        raise _too_short(i, int(lengths[i]), allow_empty, who)


def _too_short(i: int, value: Any, allow_empty: bool, who: str) -> InputError:
    """The error of ``lengths[i] = value`` below the least length (one message for list and array)."""
    what = "a length >= 0" if allow_empty else f"a length >= 1 ({who} takes no empty documents)"
    return InputError(f"lengths[{i}] must be {what}, got {value}")


SPLIT_BUDGET = 10_000_000
"""The most pieces beyond one per document that cutting documents at the row width may make on the event path.

A peer that cuts a document of ``n`` tokens at the row width ``R`` into
``ceil(n / R)`` pieces before it emits a row (TRL ``bfd_split`` and ``wrapped``,
OLMo-core ``fragment``, torchtune ``split``, ``fewer-truncations``, ``seamless``)
holds every piece of :meth:`~packing_theory.peers.PeerPacker.events` as a Python
object, 400-670 bytes with its events (measured through ``compare`` on the
fast engine): a length near 2**63 would grow memory without bound (about
100 MB/s). These 10,000,000 extra pieces are 4-7 GB;
:func:`check_split_budget` refuses more before anything is allocated. A
document's first piece is not counted: those are bounded by the input itself.
The columnar path (:meth:`~packing_theory.peers.PeerPacker.batches`, what
``measure`` and ``compare`` run on the compiled engine, ``--engine compiled``)
has a budget of its own: :func:`column_split_budget`.
"""


def column_split_budget(documents: int) -> int:
    """The split budget of the columnar path for ``documents`` documents: the larger of :data:`SPLIT_BUDGET`
    and one extra piece per document.

    The columnar path holds a piece in numpy columns: measured with ``measure`` on
    the compiled engine, about 20-35 bytes per extra piece when the pieces are
    spread over the corpus (a million documents of eleven rows each) and 33-280
    bytes when ten documents make them all (TRL builds a map batch's pieces at
    once). The documents themselves cost a measurement 50-70 bytes each, so one
    extra piece per document adds at most about five times that, while a length
    near 2**63 is still refused before anything is allocated. A corpus of
    100,000,000 lognormal(6, 1.3) lengths cut at 2,048 tokens makes 19,663,384.

    >>> column_split_budget(1_000), column_split_budget(100_000_000)
    (10000000, 100000000)
    """
    return max(SPLIT_BUDGET, documents)


def check_split_budget(lengths: Sequence[int] | npt.NDArray[np.integer[Any]], capacity: int, who: str, *,
                       budget: int | None = None, columns: bool = False) -> None:
    """Refuse ``lengths`` if cutting them at ``capacity`` makes more than ``budget`` extra pieces
    (default :data:`SPLIT_BUDGET`).

    With ``columns`` (the columnar path) the budget is the larger of ``budget``
    and ``len(lengths)``: :func:`column_split_budget` by default.
    O(N) integer arithmetic, nothing per piece allocated (an integer array: numpy
    over its long documents, the same refusal and message).

    >>> check_split_budget([10, 3], 4, "trl-bfd_split")  # 3 + 1 pieces: 2 beyond one per document
    >>> try:
    ...     check_split_budget([2**63 - 1], 64, "trl-bfd_split")
    ... except ValueError as exc:
    ...     print(str(exc)[:92])
    lengths[0] = 9223372036854775807 is cut by trl-bfd_split into 144,115,188,075,855,872 pieces

    Raises:
        InputError: over the budget, naming the first length that crosses it, its
            piece count, ``capacity`` and the budget.
    """
    which = "the budget given"
    if budget is None:
        which, budget = "peers.SPLIT_BUDGET, the event path's: 400-670 bytes a piece", SPLIT_BUDGET
    if columns:
        which = (f"the columnar path's, peers.column_split_budget: the larger of {budget:,} and one per "
                 f"document, {len(lengths):,} here")
        budget = max(budget, len(lengths))
    if isinstance(lengths, np.ndarray) and lengths.dtype.kind in "iu":
        crossing = _split_budget_crossing(lengths, capacity, budget)
        if crossing is not None:
            raise _over_split_budget(*crossing, capacity, who, budget, which)
        return
    extra = 0
    for i, n in enumerate(lengths):
        if n > capacity:
            pieces = -(-n // capacity)
            extra += pieces - 1
            if extra > budget:
                raise _over_split_budget(i, n, pieces, extra, capacity, who, budget, which)


def _over_split_budget(i: int, n: int, pieces: int, extra: int, capacity: int, who: str, budget: int,
                       which: str) -> InputError:
    """The refusal of :func:`check_split_budget` (one message for lists and arrays)."""
    return InputError(
        f"lengths[{i}] = {n} is cut by {who} into {pieces:,} pieces of capacity {capacity}, "
        f"{extra:,} beyond one per document so far: over the budget of {budget:,} ({which}); "
        f"use a larger capacity or leave the document out")


def _split_budget_crossing(lengths: npt.NDArray[Any], capacity: int, budget: int
                           ) -> tuple[int, int, int, int] | None:
    """Where an integer array's pieces beyond one per document first pass ``budget``: the index, the
    length, its pieces and the running count then (``None``: they never do). O(N) numpy over the long
    documents, nothing per piece; unsigned lengths are cut as they are (no wrap through ``int64``)."""
    long = np.flatnonzero(lengths > capacity)
    if long.size == 0:
        return None
    n = lengths[long]
    n = n if n.dtype.kind == "u" else n.astype(np.int64)
    extra = n // capacity + (n % capacity != 0) - 1  # pieces - 1 per long document (>= 1), no overflow
    over = np.flatnonzero(extra > budget)  # one document alone over the budget: the running sum wraps no more
    upto = long.size if over.size == 0 else int(over[0]) + 1
    running = np.cumsum(np.minimum(extra[:upto], budget + 1), dtype=np.int64)  # each term <= budget + 1
    first = np.flatnonzero(running > budget)
    if not first.size:
        return None
    k = int(first[0])
    before = int(running[k - 1]) if k else 0  # <= budget: the sum is exact up to the crossing
    pieces = int(extra[k]) + 1
    return int(long[k]), int(n[k]), pieces, before + pieces - 1


def check_choice(name: str, value: object, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices``, else an :class:`~packing_theory.InputError` naming both.

    >>> check_choice("version", "0.6.1", ["0.6.1"])
    '0.6.1'
    >>> check_choice("version", "9", ["0.6.1"])
    Traceback (most recent call last):
    packing_theory.InputError: version must be one of '0.6.1'; got '9'
    """
    for c in choices:
        if type(value) is type(c) and value == c:
            return c
    raise InputError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")


def check_optional_int(name: str, value: object, minimum: int) -> int | None:
    """``None`` or an int ``>= minimum`` (see :func:`~packing_theory._checks.check_int`)."""
    return None if value is None else check_int(name, value, minimum)


def arrivals(lengths: Sequence[int], first: int, *, pass_index: int | Sequence[int] = 0,
             sources: Sequence[int] | None = None, empty: bool = True) -> list[Event]:
    """The Arrival events of occurrences ``first, first + 1, ...``, then Filtered for the empty ones.

    ``sources`` (default: the occurrence ids) and ``pass_index`` (one value or
    one per document) label the arrivals; ``empty=False`` leaves empty documents
    to the caller (a framework that drops them at another stage).

    >>> [type(e).__name__ for e in arrivals([2, 0], 5)]
    ['Arrival', 'Arrival', 'Filtered']
    """
    out: list[Event] = []
    dropped: list[Event] = []
    for k, n in enumerate(lengths):
        occ = first + k
        src = occ if sources is None else sources[k]
        p = pass_index if isinstance(pass_index, int) else pass_index[k]
        out.append(Arrival(occ, src, p, n))
        if n == 0 and empty:
            dropped.append(Filtered(occ, src, 0, "empty"))
    return out + dropped


# --------------------------------------------------------------------------- bin packing

TieRule = Literal["first-to-reach", "first-opened"]
TIE_RULES: tuple[TieRule, ...] = ("first-to-reach", "first-opened")
"""How :func:`best_fit` chooses among bins with the same smallest sufficient space:
``"first-to-reach"`` — the bin that reached that space first (FIFO: TRL's and OLMo-core's
``space -> deque`` tables); ``"first-opened"`` — the bin opened first (Fewer Truncations)."""


def best_fit(sizes: Sequence[int], order: Iterable[int], capacity: int, *, ties: TieRule) -> list[list[int]]:
    """Best fit in the given ``order``: bins (lists of indices into ``sizes``) in creation order.

    Each size (``1..capacity``) goes to the bin with the smallest remaining space
    that holds it, ties broken by ``ties`` (:data:`TIE_RULES`); a new bin when none
    fits. The frameworks search a segment tree over the present space values for
    the leftmost (smallest) one ``>= size``; a sorted list of the present values
    gives the same answer.

    >>> best_fit([3, 3, 1, 1], [0, 1, 2, 3], 4, ties="first-to-reach")
    [[0, 2], [1, 3]]

    Both bins below hold space 1 when item 3 arrives; bin 1 reached it first,
    bin 0 was opened first:

    >>> best_fit([2, 4, 2, 1, 1], range(5), 5, ties="first-to-reach")
    [[0, 2, 4], [1, 3]]
    >>> best_fit([2, 4, 2, 1, 1], range(5), 5, ties="first-opened")
    [[0, 2, 3], [1, 4]]

    Complexity: O(log S + S) per item, ``S <= capacity`` distinct spaces (a
    C-level ``list`` insert/delete) plus O(log n) for a ``first-opened`` heap.
    """
    fifo = check_choice("ties", ties, TIE_RULES) == "first-to-reach"
    bins: list[list[int]] = []
    spaces: list[int] = []  # sorted distinct remaining spaces in 1..capacity-1 held by some bin
    by_space: dict[int, Any] = {}  # space -> the bins holding it: a deque (fifo) or a min-heap
    for idx in order:
        n = sizes[idx]
        k = bisect.bisect_left(spaces, n)
        if k < len(spaces):
            space = spaces[k]
            queue = by_space[space]
            b = queue.popleft() if fifo else heapq.heappop(queue)
            if not queue:
                del spaces[k]
        else:
            space = capacity
            b = len(bins)
            bins.append([])
        bins[b].append(idx)
        left = space - n
        if left > 0:
            queue = by_space.setdefault(left, deque() if fifo else [])
            if not queue:
                bisect.insort(spaces, left)
            if fifo:
                queue.append(b)
            else:
                heapq.heappush(queue, b)
    return bins


def best_fit_decreasing(sizes: Sequence[int], capacity: int, *, ties: TieRule) -> list[list[int]]:
    """:func:`best_fit` over the sizes sorted longest first, stably (equal sizes keep their index order).

    >>> best_fit_decreasing([4, 2, 3, 1], 4, ties="first-to-reach")
    [[0], [2, 3], [1]]
    >>> best_fit_decreasing([8, 6, 7, 5, 2, 3], 8, ties="first-opened")  # seed 000 ref [4], Fig. 1
    [[0], [2], [1, 4], [3, 5]]

    Complexity: O(n log n) for the sort plus :func:`best_fit`.
    """
    order = sorted(range(len(sizes)), key=sizes.__getitem__, reverse=True)  # stable: ties keep index order
    return best_fit(sizes, order, capacity, ties=ties)


_CLOSED = -(1 << 62)


class FirstFitTree:
    """A max segment tree over bins' free space: the leftmost bin with room in O(log n).

    Bins are numbered in opening order; a bin that must take no more items
    (a per-bin item cap) is closed with :meth:`close`.

    >>> t = FirstFitTree(4)
    >>> t.open(0, 5); t.open(1, 9); t.leftmost(6), t.leftmost(5), t.leftmost(10)
    (1, 0, -1)
    """

    def __init__(self, n: int) -> None:
        size = 1
        while size < max(n, 1):
            size *= 2
        self.size = size
        self.tree = [_CLOSED] * (2 * size)

    def open(self, b: int, free: int) -> None:
        """Set bin ``b``'s free space (opening it, or updating it)."""
        t = self.tree
        i = b + self.size
        t[i] = free
        i //= 2
        while i:
            a, c = t[2 * i], t[2 * i + 1]
            t[i] = a if a >= c else c
            i //= 2

    def close(self, b: int) -> None:
        """Bin ``b`` takes nothing more."""
        self.open(b, _CLOSED)

    def _check(self) -> None:
        """Assert that every inner node holds the maximum of its children."""
        t = self.tree
        for i in range(1, self.size):
            assert t[i] == max(t[2 * i], t[2 * i + 1]), i

    def leftmost(self, need: int) -> int:
        """The first bin whose free space is ``>= need``, or -1."""
        t = self.tree
        if t[1] < need:
            return -1
        i = 1
        while i < self.size:
            i = 2 * i if t[2 * i] >= need else 2 * i + 1
        return i - self.size


def first_fit(
    sizes: Sequence[int],
    capacity: int,
    max_items: int | None = None,
    *,
    _tree: list[FirstFitTree] | None = None,
) -> list[list[int]]:
    """First fit in the given order: bins of item positions; a bin holds at most ``max_items`` items.

    An item that fits no open bin opens a new one (even when larger than the
    capacity: its bin then has negative free space).

    >>> first_fit([5, 3, 4, 2, 2], 8)
    [[0, 1], [2, 3, 4]]
    >>> first_fit([1, 1, 1], 8, max_items=2)
    [[0, 1], [2]]

    Complexity: O(N log N) (:class:`FirstFitTree`).
    """
    tree = FirstFitTree(len(sizes))
    if _tree is not None:
        _tree.append(tree)
    bins: list[list[int]] = []
    free: list[int] = []
    for k, size in enumerate(sizes):
        b = tree.leftmost(size)
        if b < 0:
            b = len(bins)
            bins.append([k])
            free.append(capacity - size)
        else:
            bins[b].append(k)
            free[b] -= size
        if max_items is not None and len(bins[b]) >= max_items:
            tree.close(b)
        else:
            tree.open(b, free[b])
    return bins
