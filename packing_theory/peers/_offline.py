"""Helpers shared by the offline peers (torchtune, Axolotl, NeMo, the paper methods).

Offline packers read their whole dataset before they pack it, so these peers
first materialise the length stream (:func:`peer_lengths`), emit one
:class:`~packing_theory.engine.events.Arrival` per document, then the rows.
:class:`EventLog` collects the events of one replay and checks the mass
identity before it hands them out.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._checks import check_int
from ..engine.events import Arrival, Discard, Event, Filtered, Horizon, Placement
from ..errors import InputError, InputTypeError
from ._base import Piece, RowEmitter

__all__ = ["EventLog", "FirstFitTree", "check_choice", "check_optional_int", "first_fit", "peer_lengths"]


def peer_lengths(lengths: Any, name: str = "lengths") -> list[int]:
    """Materialise a length stream as a list of ints ``>= 0``.

    Peers accept empty documents (length 0) because some frameworks take
    them; each peer says what it does with one.

    >>> peer_lengths([3, 0, 2])
    [3, 0, 2]
    >>> peer_lengths([3, -1])
    Traceback (most recent call last):
    packing_theory.InputError: lengths[1] must be a length >= 0, got -1
    """
    if isinstance(lengths, np.ndarray):
        if lengths.ndim != 1:
            raise InputError(f"{name} must be 1-D, got shape {lengths.shape}")
        if lengths.dtype == np.bool_ or not np.issubdtype(lengths.dtype, np.integer):
            raise InputTypeError(f"{name} must have an integer dtype, got {lengths.dtype}")
        values: Iterable[Any] = lengths.tolist()
    elif isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        raise InputTypeError(f"{name} must be a sequence of ints or a numpy array, got "
                             f"{type(lengths).__name__}")
    else:
        values = lengths
    out: list[int] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise InputTypeError(f"{name}[{i}] must be an int, got {type(v).__name__} {v!r}")
        if v < 0:
            raise InputError(f"{name}[{i}] must be a length >= 0, got {v}")
        out.append(int(v))
    return out


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError naming both.

    >>> check_choice("version", "0.6.1", ["0.6.1"])
    '0.6.1'
    >>> check_choice("version", "9", ["0.6.1"])
    Traceback (most recent call last):
    packing_theory.InputError: version must be one of '0.6.1'; got '9'
    """
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def check_optional_int(name: str, value: object, minimum: int) -> int | None:
    """``None`` or an int ``>= minimum`` (see :func:`~packing_theory._checks.check_int`)."""
    return None if value is None else check_int(name, value, minimum)


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

    def arrival(self, occurrence: int, source: int, pass_index: int, length: int) -> None:
        """Record an Arrival."""
        self.events.append(Arrival(occurrence, source, pass_index, length))
        self.arrived += length

    def filtered(self, occurrence: int, source: int, length: int, reason: str) -> None:
        """Record a Filtered event."""
        self.events.append(Filtered(occurrence, source, length, reason))
        self.accounted += length

    def discard(self, occurrence: int, source: int, start: int, length: int) -> None:
        """Record a Discard (nothing for an empty range)."""
        if length > 0:
            self.events.append(Discard(occurrence, source, start, length))
            self.accounted += length

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
