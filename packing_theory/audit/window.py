"""Per-occurrence columns in bounded memory: the recent occurrences in memory, the settled ones in a store.

A consumer that keeps numbers per occurrence (the
:class:`~packing_theory.audit.ledger.Ledger`'s table,
:class:`~packing_theory.audit.documents.DocumentRows`) indexes them by
occurrence id. In a streaming replay occurrences arrive in id order and almost
every one is *settled* soon after — all of its tokens emitted, discarded or
filtered — after which nothing in a valid stream changes its record. Only the
*pending* ones (still buffered: at most the buffer, plus the long documents
the protected set keeps) can still change.

:class:`OccurrenceWindow` exploits that. It holds the columns in memory
*slots*: ids ``[base, n)`` (the window) at slots ``off + (id - base)``, and
the older ids that were still pending when the window moved past them (the
*old* slots ``[0, k)``). When the window spans two ``window``-sized chunks
(:meth:`~OccurrenceWindow.evict`), its first chunk is written to the
:class:`~packing_theory.audit.store.ColumnStore` in id order — every record
as it stands — and its pending records move to old slots; old slots that have
settled since are rewritten in the store and freed. :meth:`~OccurrenceWindow.finish`
writes what memory still holds. Memory: O(window + pending) slots, whatever
the number of occurrences; a chunk more than half pending is not written (an
offline packer, which arrives its whole corpus before it places any of it,
keeps its window in memory until its documents settle).

Eviction is never visible: an event that names an evicted occurrence (a
stream outside the family, a late arrival of a skipped id) loads its record
back into an old slot (:meth:`~OccurrenceWindow.slots`), so every check and
every result is the one the whole table in memory gives. Without a store
(``store=None``) nothing is evicted: slot = id, the table of old.

>>> from packing_theory.audit.store import ColumnStore
>>> w = OccurrenceWindow({"left": np.int32}, store=ColumnStore(), window=2)
>>> w.grow(6)
>>> s = w.slots(np.arange(6))
>>> w.cols["left"][s] = [0, 4, 0, 0, 0, 0]
>>> w.evict(lambda c: c["left"] > 0)      # ids 0, 1 go to the store; 1 stays in memory
>>> w.base, w.old_ids().tolist(), w.get("left", np.array([1, 5])).tolist()
(2, [1], [4, 0])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError
from .store import ColumnStore, Fill

__all__ = ["WINDOW", "OccurrenceWindow", "Pending"]

WINDOW = 1 << 20
"""Occurrence ids per chunk the window writes to its store (the window spans up to two chunks)."""

Int64Array = npt.NDArray[np.int64]
Pending = Callable[[dict[str, npt.NDArray[Any]]], npt.NDArray[np.bool_]]
"""Which records (given as columns of slots) may still change: they stay in memory."""


class OccurrenceWindow:
    """Columns indexed by occurrence id, held in memory slots and a :class:`ColumnStore` (see the module doc).

    Args:
        columns: name -> integer dtype of each column.
        store: where settled records go; ``None``: everything stays in memory
            (slot = occurrence id, nothing is ever evicted).
        window: occurrence ids per chunk written to the store.
        fills: a column's value for an id that never got one (default 0;
            ``None``: the id itself).
        reserve: ids to make room for at once (memory form); with a store, the ids expected: a window
            that outgrows its first three chunks before any id settles (a stream that keeps its corpus
            pending: an offline packer) is then given room for all of them at once, not a chunk at a
            time.

    ``cols[name]`` are the slot arrays a consumer indexes (with the slots of
    :meth:`slots`); ``n`` is one past the largest id covered.
    """

    def __init__(self, columns: Mapping[str, npt.DTypeLike], *, store: ColumnStore | None = None,
                 window: int = WINDOW, fills: Mapping[str, Fill] | None = None, reserve: int = 0) -> None:
        self.store = store
        self.window = check_int("window", window, 1)
        self.fixed: frozenset[str] = frozenset()
        """Columns written once, at arrival, and never changed: old records are not written back for them."""
        self.fills: dict[str, Fill] = {name: (fills or {}).get(name, 0) for name in columns}
        self.n = 0
        self.base = 0  # ids < base are in the store or in old slots
        self.off = 0  # the slot of id ``base``; slots [0, off) are old slots
        self.k = 0  # old slots in use
        self._loaded = np.zeros(0, np.int64)  # ids loaded back from the store (a stream outside the rule)
        self._retry_at = 0  # no eviction is tried before n reaches it
        self._old = np.zeros(0, np.int64)  # ids of the old slots [0, k)
        self._sorted = np.zeros(0, np.int64)  # the same ids, sorted, and their slots
        self._sorted_slots = np.zeros(0, np.int64)
        self.expect = max(check_int("reserve", reserve, 0), 0)
        cap = self.expect if store is None else 0
        self.cols: dict[str, npt.NDArray[Any]] = {}
        for name, dt in columns.items():
            self.cols[name] = np.zeros(cap, np.dtype(dt))
            if store is not None:
                store.add(name, dt, self.fills[name])
        if cap:
            for name in self.cols:
                self._fill(name, 0, cap, fresh=True)

    # ------------------------------------------------------------------ shape

    @property
    def cap(self) -> int:
        """Slots allocated."""
        return next(iter(self.cols.values())).size if self.cols else 0

    @property
    def slots_used(self) -> int:
        """One past the highest slot in use (the bound a kernel checks a slot against)."""
        return self.off + self.n - self.base

    @property
    def in_memory(self) -> bool:
        """Whether every record stays in memory (no store)."""
        return self.store is None

    def old_ids(self) -> Int64Array:
        """The ids held in old slots (evicted while pending, or loaded back), in slot order."""
        return self._old[: self.k].copy()

    def _slot_ids(self, a: int, b: int) -> Int64Array:
        """The occurrence id of each slot of ``[a, b)`` (-1 for a free old slot)."""
        ids = np.full(b - a, -1, np.int64)
        lo, hi = max(a, 0), min(b, self.k)
        if lo < hi:
            ids[lo - a : hi - a] = self._old[lo:hi]
        lo = max(a, self.off)
        if lo < b:
            ids[lo - a :] = self.base + np.arange(lo - self.off, b - self.off, dtype=np.int64)
        return ids

    def _fill(self, name: str, a: int, b: int, *, fresh: bool = False) -> None:
        """Give slots ``[a, b)`` their fill; ``fresh`` slots (just zeroed) need nothing for a fill of 0, so
        their pages stay uncommitted until written."""
        fill = self.fills[name]
        if fresh and fill == 0:
            return
        col = self.cols[name]
        if fill is None:
            col[a:b] = self._slot_ids(a, b)
        else:
            col[a:b] = fill

    def _reshape(self, off: int, cap: int) -> None:
        """Reallocate: old slots region ``off``, ``cap`` slots in all (window moved to ``off``)."""
        used = self.n - self.base
        for name, col in self.cols.items():
            new = np.zeros(cap, col.dtype)
            new[: self.k] = col[: self.k]
            new[off : off + used] = col[self.off : self.off + used]
            self.cols[name] = new
        self.off = off  # old slots stay where they are: the sorted index holds
        for name in self.cols:
            self._fill(name, off + used, cap, fresh=True)

    def grow(self, top: int) -> None:
        """Cover ids ``< top`` (new ids get their fill). Amortised O(1) per id."""
        if top <= self.n:
            return
        need = self.off + top - self.base
        if need > self.cap:  # with a store the window settles near three chunks: allocate them at once
            if self.store is None:
                self._reshape(self.off, max(need, 2 * self.cap, 1024))
            else:  # and grows by a chunk at a time (an offline packer's window grows with its corpus) ...
                cap = max(need + self.window, 3 * self.window + self.off)
                if self.base == 0 and self.cap >= 3 * self.window + self.off:  # ... or, past three chunks
                    cap = max(cap, self.off + self.expect)  # none settled, to the ids expected at once
                self._reshape(self.off, cap)
        self.n = top

    def truncate(self, n: int) -> None:
        """Forget ids ``>= n`` covered by the last :meth:`grow` (a refused chunk); their slots get their
        fill."""
        if not self.base <= n <= self.n:
            raise InputError(f"truncate to {n} outside the window [{self.base}, {self.n}]")
        lo, hi = self.off + n - self.base, self.slots_used
        self.n = n
        for name in self.cols:
            self._fill(name, lo, hi)

    # ------------------------------------------------------------------ lookups

    def slots(self, occ: Int64Array, *, load: bool = True) -> Int64Array:
        """The slot of each occurrence id; -1 for ids outside ``[0, n)``. An evicted id is loaded back into an
        old slot (``load``; else -1). O(len(occ)), plus O(log k) per id older than the window.

        Loading may reallocate :attr:`cols`: take the slots *before* reading a column array
        (``s = w.slots(occ); w.cols[name][s] = v``, not ``w.cols[name][w.slots(occ)] = v``)."""
        shift = self.base - self.off
        if occ.size:
            lo, hi = int(occ.min()), int(occ.max())
            if lo >= self.base and hi < self.n:
                return occ - shift if shift else occ
        out = np.where((occ >= self.base) & (occ < self.n), occ - shift, -1)
        older = np.flatnonzero((occ >= 0) & (occ < self.base))
        if older.size:
            ids = occ[older]
            at = np.searchsorted(self._sorted, ids)
            at = np.minimum(at, max(self._sorted.size - 1, 0))
            hit = (self._sorted[at] == ids) if self._sorted.size else np.zeros(ids.size, np.bool_)
            if load and not hit.all():
                self._load(np.unique(ids[~hit]))
                return self.slots(occ, load=False)
            out[older[hit]] = self._sorted_slots[at[hit]]
        return out

    def slot(self, o: int) -> int:
        """:meth:`slots` of one id."""
        if self.base <= o < self.n:
            return o - self.base + self.off
        return int(self.slots(np.asarray([o], np.int64))[0])

    def _load(self, ids: Int64Array) -> None:
        """Bring evicted records back into old slots (a stream that names an occurrence after it settled)."""
        assert self.store is not None
        rows = self.store.take(ids, tuple(self.cols))
        self._loaded = np.union1d(self._loaded, ids)
        at = self._old_slots(ids.size)
        for name, col in self.cols.items():
            col[at] = rows[name]
        self._set_old(np.concatenate([self._old[: self.k], ids]))

    def _old_slots(self, m: int) -> Int64Array:
        """``m`` free old slots (the region grown, the window moved, when it is full)."""
        if self.k + m > self.off:
            off = max(self.k + m, 2 * self.off, 64)
            self._reshape(off, off + max(self.cap - self.off, self.n - self.base))
        return np.arange(self.k, self.k + m, dtype=np.int64)

    def _set_old(self, ids: Int64Array) -> None:
        self._old = ids
        self.k = int(ids.size)
        order = np.argsort(ids, kind="stable")
        self._sorted = ids[order]
        self._sorted_slots = order.astype(np.int64)

    def get(self, name: str, occ: Int64Array) -> npt.NDArray[Any]:
        """Values of column ``name`` for ids ``occ`` (any order, each ``< n``), from memory or the store.
        Loads nothing. O(len(occ) log len(occ))."""
        col = self.cols[name]
        if occ.size and (int(occ.min()) < 0 or int(occ.max()) >= self.n):
            raise InputError(f"occurrence ids must be in [0, {self.n}), "
                             f"got {int(occ.min())}..{int(occ.max())}")
        s = self.slots(occ, load=False)
        out = np.zeros(occ.size, col.dtype)
        miss = s < 0
        out[~miss] = col[s[~miss]]
        if miss.any():
            assert self.store is not None
            u, inv = np.unique(occ[miss], return_inverse=True)
            out[miss] = self.store.take(u, (name,))[name][inv.ravel()]
        return out

    def column(self, names: Sequence[str], a: int, b: int) -> dict[str, npt.NDArray[Any]]:
        """Columns ``names`` for ids ``[a, b)`` (``b <= n``), as new arrays. O(b - a + k)."""
        if a >= b:
            return {name: np.zeros(0, self.cols[name].dtype) for name in names}
        out: dict[str, npt.NDArray[Any]] = {}
        stored = min(b, self.base)
        if a < stored:
            assert self.store is not None
            out = self.store.read(a, stored, names)
            old = np.flatnonzero((self._old[: self.k] >= a) & (self._old[: self.k] < stored))
            for name in names:
                out[name][self._old[old] - a] = self.cols[name][old]
        lo = max(a, self.base)
        if lo < b:
            for name in names:
                part = self.cols[name][self.off + lo - self.base : self.off + b - self.base]
                out[name] = np.concatenate([out[name], part]) if name in out else part.copy()
        return out

    def blocks(self, block: int, names: Sequence[str] | None = None
               ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """``(first id, columns)`` over ids ``[0, n)`` in blocks of ``block``. Memory O(block + k)."""
        check_int("block", block, 1)
        keys = tuple(self.cols) if names is None else tuple(names)
        for a in range(0, self.n, block):
            yield a, self.column(keys, a, min(self.n, a + block))

    # ------------------------------------------------------------------ columns

    def add_column(self, name: str, dtype: npt.DTypeLike, fill: Fill = 0) -> None:
        """A new column (every id covered gets ``fill``; ``None``: its id)."""
        self.fills[name] = fill
        self.cols[name] = np.zeros(self.cap, np.dtype(dtype))
        self._fill(name, 0, self.cap, fresh=True)
        if self.store is not None:
            self.store.add(name, dtype, fill)

    def widen(self, name: str, dtype: npt.DTypeLike) -> None:
        """Column ``name`` as the wider integer ``dtype``, in memory and in the store."""
        self.cols[name] = self.cols[name].astype(dtype)
        if self.store is not None:
            self.store.widen(name, dtype)

    # ------------------------------------------------------------------ eviction

    def evict(self, pending: Pending) -> None:
        """Write the first chunk(s) of the window to the store while it spans more than two chunks; the
        pending records of a chunk stay in old slots, and old slots no longer pending are written back and
        freed. A chunk mostly pending (an offline packer holds its corpus) stays, and the window grows by
        another chunk before the next try. A no-op without a store. Amortised O(1) per id."""
        if self.store is None:
            return
        while self.n - self.base > 2 * self.window and self.n >= self._retry_at:
            if not self._evict_chunk(pending):
                self._retry_at = self.n + self.window  # mostly pending (an offline packer): grow, retry later

    def _evict_chunk(self, pending: Pending) -> bool:
        assert self.store is not None
        c, off = self.window, self.off
        chunk = {name: col[off : off + c] for name, col in self.cols.items()}
        keep = np.flatnonzero(pending(chunk))
        if 2 * keep.size > c:
            return False
        self.store.append(chunk)
        kept = {name: col[keep].copy() for name, col in chunk.items()}
        ids = self.base + keep
        used = self.n - self.base
        for col in self.cols.values():  # the window moves down by one chunk
            col[off : off + used - c] = col[off + c : off + used]
        self.base += c
        for name in self.cols:  # the freed slots, and for an id fill every slot past the window
            self._fill(name, off + used - c, self.cap if self.fills[name] is None else off + used)
        self._settle_old(pending)
        at = self._old_slots(ids.size)
        for name, col in self.cols.items():
            col[at] = kept[name]
        self._set_old(np.concatenate([self._old[: self.k], ids]))
        return True

    def _settle_old(self, pending: Pending) -> None:
        """Write the old slots that are no longer pending to the store and free them."""
        if not self.k:
            return
        assert self.store is not None
        old = {name: col[: self.k] for name, col in self.cols.items()}
        still = pending(old)
        if still.all():
            return
        self._write_old(np.flatnonzero(~still))
        keep = np.flatnonzero(still)
        for col in self.cols.values():
            col[: keep.size] = col[keep]
        ids = self._old[keep]
        for name in self.cols:
            self._fill(name, keep.size, self.k)
        self._set_old(ids)

    def _write_old(self, slots: Int64Array) -> None:
        """Rewrite old slots' records in the store: the columns that change after an arrival (all, unless
        ``fixed`` names some that never do)."""
        assert self.store is not None
        ids = self._old[slots]
        order = np.argsort(ids, kind="stable")
        ids, slots = ids[order], slots[order]
        late = np.isin(ids, self._loaded) if self._loaded.size else np.zeros(ids.size, np.bool_)
        for part in (~late, late):  # a record loaded back may have arrived since: every column
            if part.any():
                self.store.write(ids[part], {name: col[slots[part]] for name, col in self.cols.items()
                                             if late[part][0] or name not in self.fixed})

    def finish(self) -> None:
        """Write every record still in memory to the store (a no-op without one); the store then holds
        ids ``[0, n)`` and memory nothing."""
        if self.store is None:
            return
        used = self.n - self.base
        self.store.append({name: col[self.off : self.off + used] for name, col in self.cols.items()})
        self.base = self.n
        if self.k:
            self._write_old(np.arange(self.k, dtype=np.int64))
        self._set_old(np.zeros(0, np.int64))
        for name, col in self.cols.items():
            self.cols[name] = np.zeros(0, col.dtype)
        self.off = 0
        self.store.sync()

    def nbytes(self) -> int:
        """Bytes of the slot arrays in memory."""
        return sum(c.nbytes for c in self.cols.values())

    def _check(self) -> None:
        """The window's shape: slots within the arrays, old ids distinct, evicted, below ``base``, sorted
        index consistent; the store holds ids ``[0, base)``."""
        assert 0 <= self.k <= self.off and 0 <= self.base <= self.n
        assert self.slots_used <= self.cap or not self.cols
        assert all(col.size == self.cap for col in self.cols.values())
        old = self._old[: self.k]
        assert self._old.size == self.k
        assert np.array_equal(self._sorted, np.sort(old))
        assert np.array_equal(old[self._sorted_slots], self._sorted)
        assert np.unique(old).size == old.size, "an id in two old slots"
        assert (old >= 0).all() and (old < self.base).all(), "an old slot not older than the window"
        if self.store is None:
            assert self.base == self.off == self.k == 0
        else:
            assert self.store.rows == self.base, "the store does not end where the window starts"
            assert set(self.store.names) >= set(self.cols)
