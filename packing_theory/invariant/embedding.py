"""Embedding the monitor in another loader: a monitored list buffer.

A loader whose buffer is a Python list of token lists (autoresearch,
nanochat) swaps the list for a :class:`MonitoredBuffer` and gets the
invariant checked on every ``pop``; see
``examples/autoresearch_monitored_loader.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

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
