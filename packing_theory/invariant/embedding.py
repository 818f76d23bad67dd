"""Embedding the monitor in another loader: a monitored list buffer.

A loader whose buffer is a Python list of token lists (autoresearch,
nanochat) swaps the list for a :class:`MonitoredBuffer` and gets the
invariant checked on every ``pop``; see
``examples/autoresearch_monitored_loader.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from .._checks import is_int
from ..errors import InputError, InputTypeError
from .monitor import InvariantMonitor

__all__ = ["MonitoredBuffer"]

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
    * :meth:`flush` — drop everything outside a selection (an epoch flush);
    * ``buf[i] = item`` — replace an item in place (the same occurrence).

    Misuse is refused before anything changes (``ValueError`` / ``TypeError``):
    an item whose length is not a positive int; a :meth:`keep` or
    :meth:`requeue` without a :meth:`pop` before it, a second one after the
    same pop (two active spans of one occurrence), or a continuation longer
    than the popped item; a slice or non-integer index. Replacing a
    *protected* item with one of another length bypasses the selection the
    invariant is about: it goes to :meth:`InvariantMonitor.on_change` (raised
    in ``"raise"`` mode, recorded as a misuse otherwise).

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
            raise InputTypeError(f"monitor must be an InvariantMonitor, got {type(monitor).__name__}")
        self.monitor = monitor
        self._length: Callable[[T], int] = length if length is not None else _item_length
        self._items: list[T] = []
        self._occ: list[int] = []
        self._next = 0
        self.last_popped: int | None = None
        self._pending: tuple[int, int] | None = None  # (occurrence, length) a continuation may follow

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> T:
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def _index(self, index: object) -> int:
        if not is_int(index):
            raise InputTypeError(f"index must be an int, got {type(index).__name__} {index!r}")
        n = len(self._items)
        i: int = int(index)  # type: ignore[call-overload]
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for a buffer of {n} items")
        return i + n if i < 0 else i

    def _item_length(self, item: T, what: str) -> int:
        n: object = self._length(item)
        if not is_int(n):
            raise InputTypeError(f"length of {what} must be an int, got {type(n).__name__} {n!r}")
        length: int = int(n)  # type: ignore[call-overload]
        if length < 1:
            raise InputError(f"{what} must hold at least one token, got length {length}")
        return length

    def __setitem__(self, index: int, item: T) -> None:
        """Replace an item in place; it stays the same occurrence.

        Changing the length of a protected item is a misuse (see the class docstring).
        """
        i = self._index(index)
        new = self._item_length(item, "the new item")
        old = self._length(self._items[i])
        if new != old:
            self.monitor.on_change(self._occ[i], old, new)  # raises ("raise" mode) before anything changes
        self._items[i] = item

    def occurrence_at(self, index: int) -> int:
        """The occurrence id of the item at ``index``."""
        return self._occ[self._index(index)]

    def append(self, item: T) -> None:
        """A new document arrives at the end of the buffer."""
        n = self._item_length(item, "an appended item")
        occ = self._next
        self.monitor.on_arrival(occ, n)
        self._next = occ + 1
        self._items.append(item)
        self._occ.append(occ)

    def extend(self, items: Iterable[T]) -> None:
        """New documents arrive (one refill batch)."""
        for item in items:
            self.append(item)

    def pop(self, index: int = -1) -> T:
        """Select the item at ``index`` (a checked selection) and remove it.

        Allows one :meth:`keep` or :meth:`requeue` of a continuation afterwards.
        """
        i = self._index(index)
        occ = self._occ[i]
        n = self._length(self._items[i])
        self.monitor.on_select(occ, buffered=len(self._items))
        self.last_popped = occ
        self._pending = (occ, n)
        del self._occ[i]
        return self._items.pop(i)

    def _continuation(self, call: str, item: T) -> int:
        if self._pending is None:
            what = "a previous pop()" if self.last_popped is None else (
                f"a pop() since the last keep()/requeue() (occurrence {self.last_popped} already has "
                "its continuation; a second would duplicate its span)")
            raise InputError(f"{call}() needs {what}")
        occ, popped = self._pending
        n = self._item_length(item, f"the {call}() item")
        if n > popped:
            raise InputError(f"{call}() of occurrence {occ}: a continuation of {n} tokens is longer than the "
                             f"{popped} tokens popped")
        return occ

    def keep(self, index: int, item: T) -> None:
        """Insert the continuation of the last popped item at ``index`` (same occurrence)."""
        occ = self._continuation("keep", item)
        if not is_int(index):
            raise InputTypeError(f"index must be an int, got {type(index).__name__} {index!r}")
        self._items.insert(index, item)
        self._occ.insert(index, occ)
        self._pending = None

    def requeue(self, item: T) -> None:
        """Append the continuation of the last popped item at the end (same occurrence)."""
        occ = self._continuation("requeue", item)
        self._items.append(item)
        self._occ.append(occ)
        self._pending = None

    def flush(self) -> list[T]:
        """Drop every buffered item outside a selection; return them."""
        for occ in self._occ:
            self.monitor.on_remove(occ)
        items = self._items
        self._items = []
        self._occ = []
        return items

    def _check(self) -> None:
        """Assert the internal invariants (one active span per occurrence, lengths >= 1)."""
        assert len(self._items) == len(self._occ)
        assert all(0 <= o < self._next for o in self._occ)
        assert len(set(self._occ)) == len(self._occ), "an occurrence with two active spans"
        assert all(self._length(item) >= 1 for item in self._items)
        if self._pending is not None:
            assert self._pending[0] not in self._occ, "a pending continuation is already buffered"
        self.monitor._check()


def _item_length(item: Any) -> int:
    """Length of a token list, or of a ``(tokens, start)`` span (``len(tokens) - start``)."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], int):
        return len(item[0]) - item[1]
    return len(item)
