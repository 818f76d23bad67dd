"""Rows per occurrence: each occurrence's first row and arrival row, in or out of core.

:class:`DocumentRows` is a consumer of any event stream. The ledger's
``first_target`` misses a document whose only placement is a BOS at a row's
position 0 (an input, never a target); this consumer counts rows instead, in
the order the packer emits them. It also keeps the placements of the last row
(:attr:`RowFacts.partial_placements`: the incomplete last row of a stream that
ran dry is never trained) and the filter reasons.

Per occurrence it keeps its first row (and, unless ``arrival_rows=False``,
its arrival row) in an :class:`~packing_theory.audit.window.OccurrenceWindow`
— in memory without a store, or only the recent and the not-yet-placed older
occurrences in memory with one (``DocumentRows(R, store=...)``): a record is
final once the occurrence has a placement (rows come in order).
:class:`RowFacts` reads them back in blocks (:meth:`RowFacts.first_rows`) or
whole (:attr:`RowFacts.first_row`, O(occurrences)).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, as_numpy, widened
from ..engine.batches import ARRIVAL, PADDING, PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, Filtered, Horizon, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError
from .accounting import open_store
from .store import ColumnStore
from .window import WINDOW, OccurrenceWindow

__all__ = ["DocumentRows", "FilteredReasons", "RowFacts"]

Int64Array = npt.NDArray[np.int64]

ORIGIN = 1 << 62
"""A first row ``r`` is held as ``ORIGIN - r`` (0: none yet), so that ``np.maximum.at`` keeps the least."""


def _unplaced(columns: dict[str, npt.NDArray[Any]]) -> npt.NDArray[np.bool_]:
    """Records still open: not placed yet (a filtered or never-arrived one stays open too)."""
    return np.asarray(columns["first_inv"] == 0, np.bool_)


class FilteredReasons(Mapping[int, str]):
    """Occurrence -> the reason it was filtered, kept as columns: an ``int32`` occurrence (``int64`` once
    one would not fit: :func:`~packing_theory._arrays.widened`) and a ``uint8`` code into a table of the
    distinct reason strings (``int32`` past 255 of them): 5 bytes per filtered occurrence, where a dict
    entry takes about 100. A read-only :class:`~collections.abc.Mapping` (``==`` a dict of the same items).

    An occurrence filtered twice keeps its last reason (as a dict assignment would).

    >>> r = FilteredReasons()
    >>> r.add(7, "too long"); r.add(2, "empty"); r.add(7, "dropped")
    >>> len(r), r[7], r.get(3), sorted(r.items())
    (2, 'dropped', None, [(2, 'empty'), (7, 'dropped')])

    Complexity: :meth:`add` O(1) amortised; the first lookup after an add sorts the columns,
    O(filtered log filtered); a lookup then O(log filtered).
    """

    def __init__(self) -> None:
        self._occ: array[int] = array("i")
        self._code: array[int] = array("B")
        self._table: list[str] = []
        self._index: dict[str, int] = {}
        self._keys: npt.NDArray[np.int64] | None = None  # the distinct occurrences, sorted, and ...
        self._codes: npt.NDArray[np.int64] | None = None  # ... each one's last code (built on demand)

    def _code_of(self, reason: str) -> int:
        code = self._index.get(reason)
        if code is None:
            code = self._index[reason] = len(self._table)
            self._table.append(reason)
            if code > 255 and self._code.typecode == "B":
                self._code = array("i", self._code)
        return code

    def _fit(self, lo: int, hi: int) -> None:
        if self._occ.typecode == "i" and not (INT32.min <= lo and hi <= INT32.max):
            self._occ = widened(self._occ)

    def add(self, occurrence: int, reason: str) -> None:
        """Occurrence ``occurrence`` was filtered for ``reason``. O(1) amortised."""
        code = self._code_of(reason)
        self._fit(occurrence, occurrence)
        self._occ.append(occurrence)
        self._code.append(code)
        self._keys = self._codes = None

    def add_all(self, occurrences: npt.NDArray[np.int64], codes: npt.NDArray[Any],
                reasons: tuple[str, ...]) -> None:
        """:meth:`add` for each ``(occurrences[i], reasons[codes[i]])`` in order, in bulk. O(k)."""
        if not occurrences.size:
            return
        lut = np.array([self._code_of(r) for r in reasons], np.int64)
        self._fit(int(occurrences.min()), int(occurrences.max()))
        self._occ.frombytes(np.ascontiguousarray(occurrences, as_numpy(self._occ).dtype).tobytes())
        mine = lut[np.asarray(codes, np.int64)]
        self._code.frombytes(mine.astype(np.uint8 if self._code.typecode == "B" else np.int32).tobytes())
        self._keys = self._codes = None

    def _sorted(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        if self._keys is None or self._codes is None:
            occ = as_numpy(self._occ).astype(np.int64)
            code = np.frombuffer(self._code, np.uint8 if self._code.typecode == "B" else np.int32)
            order = np.argsort(occ, kind="stable")
            occ = occ[order]
            last = np.ones(occ.size, np.bool_)  # the last of each occurrence's entries (stable: in order)
            last[:-1] = occ[1:] != occ[:-1]
            self._keys, self._codes = occ[last], code[order[last]].astype(np.int64)
        return self._keys, self._codes

    def __getitem__(self, occurrence: int) -> str:
        keys, codes = self._sorted()
        i = int(np.searchsorted(keys, occurrence))
        if i < keys.size and keys[i] == occurrence:
            return self._table[int(codes[i])]
        raise KeyError(occurrence)

    def __iter__(self) -> Iterator[int]:
        return iter(self._sorted()[0].tolist())

    def __len__(self) -> int:
        return int(self._sorted()[0].size)

    def nbytes(self) -> int:
        """Bytes of the columns (not of the sorted index a lookup builds)."""
        return len(self._occ) * self._occ.itemsize + len(self._code) * self._code.itemsize

    def _check(self) -> None:
        """Columns of one length, codes within the table, the table's strings distinct and indexed."""
        assert len(self._occ) == len(self._code)
        assert len(self._table) == len(self._index) == len(set(self._table))
        assert all(self._index[r] == i for i, r in enumerate(self._table))
        assert self._code.typecode == "B" or len(self._table) > 256 or not self._code
        if self._code:
            code = np.frombuffer(self._code, np.uint8 if self._code.typecode == "B" else np.int32)
            assert int(code.min()) >= 0 and int(code.max()) < len(self._table)
        keys, _ = self._sorted()
        assert keys.size == 0 or bool((keys[1:] > keys[:-1]).all())


class RowFacts:
    """What :class:`DocumentRows` measured, per occurrence id (``-1`` where none). ``==`` compares values.

    Args:
        first_row: per occurrence, the smallest row index holding one of its
            tokens (a BOS-only placement counts).
        arrival_row: per occurrence, the complete rows emitted, in stream
            order, when it arrived (the row its refill fed).
        filtered_reason: occurrence -> the :class:`~packing_theory.engine.events.Filtered` reason (a
            dict, or the :class:`FilteredReasons` columns, kept as given).
        partial_placements: the placements of the incomplete last row, never
            trained: ``(occurrence, length, bos_inserted)``.
        window: instead of the two arrays, the finished window holding them
            (read in blocks; the arrays are built only when asked for).
    """

    def __init__(self, first_row: Int64Array | None = None, arrival_row: Int64Array | None = None,
                 filtered_reason: Mapping[int, str] | None = None,
                 partial_placements: Int64Array | None = None, *,
                 window: OccurrenceWindow | None = None) -> None:
        if window is not None and (first_row is not None or arrival_row is not None):
            raise InputError("RowFacts takes the rows as arrays or as a window, not both")
        self._window = window
        self._first = None if first_row is None else np.asarray(first_row, np.int64)
        self._arrival = None if arrival_row is None else np.asarray(arrival_row, np.int64)
        if window is None and self._first is None:
            self._first = self._arrival = np.zeros(0, np.int64)
        kept = isinstance(filtered_reason, FilteredReasons)
        self.filtered_reason: Mapping[int, str] = (filtered_reason if kept and filtered_reason is not None
                                                   else dict(filtered_reason or {}))
        self.partial_placements: Int64Array = (np.zeros((0, 3), np.int64) if partial_placements is None
                                               else np.asarray(partial_placements, np.int64).reshape(-1, 3))

    @property
    def occurrences(self) -> int:
        """One past the largest occurrence id that arrived (0 when rows were not kept per occurrence)."""
        if self._window is not None:
            return self._window.n
        assert self._arrival is not None
        return int(self._arrival.size)

    def first_rows(self, a: int, b: int) -> Int64Array:
        """``first_row`` of occurrences ``[a, b)``; -1 past :attr:`occurrences`. O(b - a)."""
        return self._range("first_row", a, b)

    def arrival_rows(self, a: int, b: int) -> Int64Array:
        """``arrival_row`` of occurrences ``[a, b)``; -1 past :attr:`occurrences`. O(b - a)."""
        return self._range("arrival_row", a, b)

    def _range(self, name: str, a: int, b: int) -> Int64Array:
        out = np.full(max(b - a, 0), -1, np.int64)
        hi = min(b, self.occurrences)
        if a < hi:
            if self._window is not None and name == "first_row":
                inv = self._window.column(("first_inv",), a, hi)["first_inv"]
                out[: hi - a] = np.where(inv > 0, ORIGIN - inv, -1)
            elif self._window is not None:
                if name in self._window.cols:
                    out[: hi - a] = self._window.column((name,), a, hi)[name]
            else:
                col = self._first if name == "first_row" else self._arrival
                assert col is not None
                out[: hi - a] = col[a:hi]
        return out

    @property
    def first_row(self) -> Int64Array:
        """The smallest row index holding one of its tokens, per occurrence. O(occurrences)."""
        return self.first_rows(0, self.occurrences)

    @property
    def arrival_row(self) -> Int64Array:
        """The complete rows emitted when it arrived, per occurrence. O(occurrences)."""
        return self.arrival_rows(0, self.occurrences)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowFacts):
            return NotImplemented
        return (np.array_equal(self.first_row, other.first_row)
                and np.array_equal(self.arrival_row, other.arrival_row)
                and self.filtered_reason == other.filtered_reason
                and np.array_equal(self.partial_placements, other.partial_placements))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"RowFacts(occurrences={self.occurrences}, filtered={len(self.filtered_reason)}, "
                f"partial_placements={len(self.partial_placements)})")


class DocumentRows:
    """A consumer of any event stream: each occurrence's first row, arrival row and filter reason.

    Args:
        capacity: the row capacity ``R``.
        per_occurrence: keep each occurrence's first and arrival rows (16
            bytes per occurrence, in memory or in ``store``). ``False`` keeps
            only what :func:`never_trained
            <packing_theory.audit.untrained.never_trained>` needs (the last row's
            placements and the filter reasons); the result's ``first_row`` and
            ``arrival_row`` are then empty.
        store: where the settled rows go (a
            :class:`~packing_theory.audit.store.ColumnStore` or a directory);
            ``None`` keeps them in memory.
        window: occurrence ids per chunk written to the store.
        arrival_rows: also keep each occurrence's arrival row (8 more bytes;
            ``False`` leaves :attr:`RowFacts.arrival_row` at -1).

    Complexity: O(1) per event, a batch O(its events log its events) numpy
    work; memory O(occurrences) with ``per_occurrence`` and no store,
    O(window + unplaced occurrences) with one, else O(row + filtered).
    """

    def __init__(self, capacity: int, per_occurrence: bool = True, *,
                 store: ColumnStore | str | os.PathLike[str] | None = None, window: int = WINDOW,
                 arrival_rows: bool = True) -> None:
        if capacity < 1:
            raise InputError(f"capacity must be >= 1, got {capacity}")
        if not isinstance(per_occurrence, bool):
            raise InputTypeError(f"per_occurrence must be a bool, got {type(per_occurrence).__name__} "
                                 f"{per_occurrence!r}")
        if not isinstance(arrival_rows, bool):
            raise InputTypeError(f"arrival_rows must be a bool, got {type(arrival_rows).__name__} "
                                 f"{arrival_rows!r}")
        self.capacity = capacity
        self.per_occurrence = per_occurrence
        self.arrival_rows = per_occurrence and arrival_rows
        columns: dict[str, Any] = {"first_inv": np.int64}
        if self.arrival_rows:
            columns["arrival_row"] = np.int64
        self._w = OccurrenceWindow(columns, store=open_store(store) if per_occurrence else None,
                                   window=window, fills={"first_inv": 0, "arrival_row": -1})
        self._reasons = FilteredReasons()
        self._filled = 0  # row positions filled so far, in stream order
        self._done = False
        self._last_row = -1  # the highest row placed into so far, and its placements
        self._last: list[tuple[int, int, int]] = []
        self._partial = np.zeros((0, 3), np.int64)

    @classmethod
    def for_packer(cls, packer: object) -> DocumentRows:
        """Built with the packer's row capacity."""
        return cls(consumer_settings(packer).capacity)

    def _slots(self, occ: Int64Array) -> Int64Array:
        s = self._w.slots(occ)
        if (s < 0).any():
            o = int(occ[np.argmax(s < 0)])
            raise InputError(f"inconsistent event stream: Placement for occurrence {o} before its Arrival")
        return s

    def feed(self, item: EventItem) -> None:
        """Account one event, or a batch column by column. O(1) per event; a batch O(events) numpy work."""
        if isinstance(item, EventBatch):
            self._batch(item)
            return
        t = type(item)
        if t is Arrival:
            if self.per_occurrence:
                o = cast(Arrival, item).occurrence
                self._w.grow(o + 1)
                if self.arrival_rows:
                    s = self._w.slot(o)  # first: a slot lookup may move the columns
                    self._w.cols["arrival_row"][s] = self._filled // self.capacity
                self._w.evict(_unplaced)
        elif t is Placement:
            p = cast(Placement, item)
            if self.per_occurrence:
                s = int(self._slots(np.asarray([p.occurrence], np.int64))[0])
                first = self._w.cols["first_inv"]
                first[s] = max(int(first[s]), ORIGIN - p.row)
            if p.row > self._last_row:
                self._last_row, self._last = p.row, []
            if p.row == self._last_row:
                self._last.append((p.occurrence, p.length, int(p.bos_inserted)))
        elif t is Filtered:
            f = cast(Filtered, item)
            self._reasons.add(f.occurrence, f.reason)
        elif t is Horizon:
            self._end(item)  # type: ignore[arg-type]
        if t is Placement or t is Padding or t is Repeat:
            self._filled += cast("Placement | Padding | Repeat", item).length

    def _batch(self, b: EventBatch) -> None:
        kinds = b.kinds
        occ = b.arrival.occurrence
        filled = int(b.placement.length.sum()) + int(b.padding.length.sum()) + int(b.repeat.length.sum())
        if occ.size and self.per_occurrence:
            self._w.grow(int(occ.max()) + 1)
        if occ.size and self.arrival_rows:  # the positions filled before each arrival
            fill = np.zeros(kinds.size, np.int64)
            fill[kinds == PLACEMENT] = b.placement.length
            fill[kinds == PADDING] = b.padding.length
            fill[kinds == REPEAT] = b.repeat.length
            before = self._filled + np.cumsum(fill) - fill
            s = self._w.slots(occ)  # first: a slot lookup may move the columns
            self._w.cols["arrival_row"][s] = before[kinds == ARRIVAL] // self.capacity
        pocc, prow = b.placement.occurrence, b.placement.row
        if pocc.size:
            if self.per_occurrence:  # O(batch): the least row of each occurrence placed in it
                s = self._slots(pocc)  # first: a slot lookup may move the columns
                np.maximum.at(self._w.cols["first_inv"], s, ORIGIN - prow)
            top = int(prow.max())
            if top > self._last_row:
                self._last_row, self._last = top, []
            if top == self._last_row:
                at = prow == top
                self._last += list(zip(pocc[at].tolist(), b.placement.length[at].tolist(),
                                       b.placement.bos_inserted[at].astype(np.int64).tolist(), strict=True))
        self._reasons.add_all(b.filtered.occurrence, b.filtered.reason, b.reasons)
        self._filled += filled
        self._w.evict(_unplaced)
        if b.horizon is not None:
            self._end(b.horizon)

    def _end(self, h: Horizon) -> None:
        self._done = True
        if h.partial_row_tokens and self._last_row == h.rows:  # the incomplete row is the last one
            self._partial = np.array(self._last, np.int64).reshape(-1, 3)
        self._w.finish()

    def result(self) -> RowFacts:
        """The per-occurrence rows (call after the Horizon)."""
        if not self._done:
            raise InputError("DocumentRows.result() needs the Horizon event: feed the whole stream first")
        if not self.per_occurrence:
            return RowFacts(None, None, self._reasons, self._partial.copy())
        return RowFacts(filtered_reason=self._reasons, partial_placements=self._partial.copy(),
                        window=self._w)

    def _check(self) -> None:
        self._w._check()
        self._reasons._check()
        assert self.per_occurrence or self._w.n == 0
        assert self._filled >= 0
        for _, c in self._w.blocks(1 << 16):
            assert (c["first_inv"] >= 0).all() and (c["first_inv"] <= ORIGIN).all()
            if self.arrival_rows:
                assert np.all((c["first_inv"] == 0) | (c["arrival_row"] >= 0)), "placed before its arrival"
