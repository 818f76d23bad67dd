"""The rows of a per-document table, computed block by block from a finished ledger (nothing held per row).

:class:`DocumentBlocks` is what a :class:`~packing_theory.audit.documents.DocumentTable`
reads: given rows ``[a, b)`` it computes their columns from the ledger's
per-occurrence columns (:class:`~packing_theory.audit.occurrences.OccurrenceColumns`,
in memory or from its store), the first rows of a
:class:`~packing_theory.audit.rows.RowFacts`, the offered lengths (a
memory-mapped array's pages are released after each read) and a
:class:`~packing_theory.audit.identity.DocumentIdentity`. Memory: O(b - a)
per block plus the sparse parts (the protected set, the partial row, the
funnel's removed documents).

Rows ``[0, n P)`` are the documents offered, pass by pass in replay order
(row ``r`` = pass ``r // n``, replayed document ``r % n``); rows past them are
the raw documents the funnel removed, in raw order. An offered row's
occurrence is its own row index whenever the stream numbers occurrences so
(every streaming policy and peer does: occurrence ``p n + d`` is document
``d`` in pass ``p``); for any other numbering the row -> occurrence map and
the ledger's columns are held in memory (O(documents), as an offline peer
holds its corpus anyway).

String columns come as codes into :attr:`DocumentBlocks.dictionaries`
(``stratum``, ``fate``, ``source``); ``name`` as an object array of str.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..lengths import release_pages
from .identity import DocumentIdentity
from .occurrences import OccurrenceColumns
from .rows import RowFacts
from .strata import stratum_index, stratum_labels

__all__ = ["COLUMNS", "FATES", "NUMERIC", "DocumentBlocks"]

Int64Array = npt.NDArray[np.int64]

COLUMNS: tuple[str, ...] = (
    "packer", "document", "pass", "occurrence", "name", "source", "length", "stratum", "started", "first_row",
    "emitted", "partial_row", "discarded", "filtered", "removed", "buffered", "never_reached", "protected",
    "fate",
)
"""The table's columns, in order (:data:`~packing_theory.audit.documents.DOCUMENT_COLUMNS`)."""

FATES: tuple[str, ...] = ("trained", "partly trained", "never started", "never reached",
                          "never trained (unfinished row)")
"""Fate codes 0..4; code ``5 + k`` is ``removed by <stage k>``. ``never trained (unfinished row)``: a document
that started, but every token it had placed is in the unfinished last row, which is never delivered."""
TRAINED, PARTLY, NEVER_STARTED, NEVER_REACHED, UNFINISHED_ROW = range(5)

NUMERIC = ("document", "pass", "occurrence", "length", "first_row", "emitted", "partial_row", "discarded",
           "filtered", "removed", "buffered", "never_reached")
"""The integer columns of a block (``started`` and ``protected`` are bool; the rest strings)."""

_LEDGER = ("arrived", "started", "emitted", "discarded", "filtered", "buffered")


class DocumentBlocks:
    """Rows of one packer's per-document table (see the module doc).

    Args:
        view: the ledger's per-occurrence columns.
        rows: the :class:`RowFacts` of the same stream.
        lengths: the lengths offered (one pass), an array or a memory map.
        passes: passes offered.
        identity: who each replayed document is.
        protected: the protected occurrences.
        partial: ``(occurrences sorted, source tokens)`` of the partial last row.
        boundaries: the length strata.
        occurrence: the row -> occurrence map (-1 never reached) when occurrence
            ids are not the rows; with ``arrays`` (the ledger's columns) and
            ``first`` (every occurrence's first row) in memory.
    """

    def __init__(self, view: OccurrenceColumns, rows: RowFacts, lengths: npt.NDArray[np.int64], passes: int,
                 identity: DocumentIdentity, protected: Int64Array, partial: tuple[Int64Array, Int64Array],
                 boundaries: tuple[int, ...], *, occurrence: Int64Array | None = None,
                 arrays: dict[str, npt.NDArray[Any]] | None = None, first: Int64Array | None = None) -> None:
        self.view, self.rows, self.lengths = view, rows, lengths
        self.n = int(lengths.size)
        self.passes = passes
        self.offered = self.n * passes
        self.identity = identity
        self.protected = np.sort(protected)
        self.partial = partial
        self.boundaries = boundaries
        self.occurrence, self.arrays, self.first = occurrence, arrays, first
        self.removed = identity.removed_ids()
        self.size = self.offered + int(self.removed.size)
        self.dictionaries: dict[str, tuple[str, ...]] = {
            "stratum": tuple(stratum_labels(boundaries)),
            "fate": FATES + tuple(f"removed by {s}" for s in identity.stages),
            "source": (*(identity.source_labels or ()), ""),
        }

    def read_lengths(self, a: int, b: int) -> Int64Array:
        """The lengths of offered rows ``[a, b)`` (``lengths[r % n]``), reading slices of the input.
        O(b - a)."""
        out = np.empty(b - a, np.int64)
        pos = a
        while pos < b:
            i = pos % self.n
            m = min(b - pos, self.n - i)
            part = self.lengths[i : i + m]
            out[pos - a : pos - a + m] = part
            release_pages(part)
            pos += m
        return out

    def _ledger(self, a: int, b: int) -> tuple[Int64Array, dict[str, npt.NDArray[Any]], Int64Array]:
        """(occurrence, ledger columns, first row) of offered rows ``[a, b)``."""
        m = b - a
        if self.occurrence is None:
            hi = min(b, self.view.n)
            got = self.view.range(a, hi, _LEDGER) if a < hi else {}
            led: dict[str, npt.NDArray[Any]] = {}
            for key in _LEDGER:
                col: npt.NDArray[Any] = np.zeros(m, np.bool_ if key in ("arrived", "started") else np.int64)
                if key in got:
                    col[: hi - a] = got[key]
                led[key] = col
            occ = np.where(led["arrived"], np.arange(a, b, dtype=np.int64), -1)
            return occ, led, self.rows.first_rows(a, b)
        assert self.arrays is not None and self.first is not None
        occ = self.occurrence[a:b]
        reached = occ >= 0
        at = np.where(reached, occ, 0)
        led = {k: (np.where(reached, v[at], np.zeros(1, v.dtype)) if v.size else np.zeros(m, v.dtype))
               for k, v in ((k, self.arrays[k]) for k in _LEDGER)}
        first = np.where(reached, self.first[np.minimum(at, max(self.first.size - 1, 0))]
                         if self.first.size else -1, -1).astype(np.int64)
        return occ, led, first

    def _sparse(self, a: int, occ: Int64Array, ids: Int64Array, values: Int64Array) -> Int64Array:
        """``values`` of the ``ids`` (sorted) among ``occ`` of rows from ``a`` (0 elsewhere). O(len(occ)),
        or O(ids in the block) when occurrence ids are the rows."""
        out = np.zeros(occ.size, np.int64)
        if self.occurrence is None:  # occ is the rows [a, a + len) where reached, else -1
            lo, hi = np.searchsorted(ids, [a, a + occ.size])
            out[ids[lo:hi] - a] = values[lo:hi]
            out[occ < 0] = 0
        elif ids.size and occ.size:
            at = np.minimum(np.searchsorted(ids, occ), ids.size - 1)
            hit = (ids[at] == occ) & (occ >= 0)
            out[hit] = values[at[hit]]
        return out

    def untrained(self, a: int, b: int) -> tuple[Int64Array, Int64Array, npt.NDArray[np.int16]]:
        """The offered rows of ``[a, b)`` with no token trained, their lengths and fate codes (never
        started, never reached, or never trained (unfinished row)): what the fate column says, from the
        ledger's arrived, started and emitted columns and the unfinished row. O(b - a)."""
        b = min(b, self.offered)
        if a >= b:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int16)
        if self.occurrence is None:
            hi = min(b, self.view.n)
            started = np.zeros(b - a, np.bool_)
            arrived = np.zeros(b - a, np.bool_)
            emitted = np.zeros(b - a, np.int64)
            if a < hi:
                got = self.view.range(a, hi, ("arrived", "started", "emitted"))
                started[: hi - a], arrived[: hi - a] = got["started"], got["arrived"]
                emitted[: hi - a] = got["emitted"]
            occ = np.where(arrived, np.arange(a, b, dtype=np.int64), -1)
        else:
            occ, led, _ = self._ledger(a, b)
            arrived = occ >= 0
            started = arrived & led["started"]
            emitted = np.where(arrived, led["emitted"], 0)
        partial = self._sparse(a, occ, self.partial[0], self.partial[1])
        only_partial = started & (emitted == partial) & (partial > 0)
        idx = np.flatnonzero(~started | only_partial)
        fate = np.where(only_partial[idx], UNFINISHED_ROW,
                        np.where(arrived[idx], NEVER_STARTED, NEVER_REACHED))
        return a + idx, self.read_lengths(a, b)[idx], fate.astype(np.int16)

    def block(self, a: int, b: int, *, strings: bool = True) -> dict[str, npt.NDArray[Any]]:
        """Rows ``[a, b)``: every column but ``packer``, string columns as codes (``name`` only with
        ``strings`` and names; without it the column is empty). O(b - a)."""
        parts = []
        if a < self.offered:
            parts.append(self._offered(a, min(b, self.offered), strings))
        if b > self.offered:
            parts.append(self._removed(max(a, self.offered) - self.offered, b - self.offered, strings))
        if len(parts) == 1:
            return parts[0]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _offered(self, a: int, b: int, strings: bool) -> dict[str, npt.NDArray[Any]]:
        occ, led, first = self._ledger(a, b)
        length = self.read_lengths(a, b)
        reached = occ >= 0
        started = reached & led["started"]
        partial = self._sparse(a, occ, self.partial[0], self.partial[1])
        emitted = led["emitted"] - partial
        fate = np.full(b - a, NEVER_REACHED, np.int16)
        fate[reached & ~started] = NEVER_STARTED
        fate[started] = PARTLY
        fate[started & (emitted == length)] = TRAINED
        fate[started & (emitted == 0) & (partial > 0)] = UNFINISHED_ROW  # placed only in the unfinished row
        protected = self._sparse(a, occ, self.protected, np.ones(self.protected.size, np.int64)) > 0
        rows = np.arange(a, b, dtype=np.int64)
        pos = rows % self.n
        raw = self.identity.raw(pos)
        out: dict[str, npt.NDArray[Any]] = {
            "document": raw, "pass": rows // self.n, "occurrence": occ, "length": length,
            "stratum": stratum_index(length, self.boundaries).astype(np.int16), "started": started,
            "first_row": np.where(reached, first, -1).astype(np.int64), "emitted": emitted,
            "partial_row": partial, "discarded": np.where(reached, led["discarded"], 0),
            "filtered": np.where(reached, led["filtered"], 0), "removed": np.zeros(b - a, np.int64),
            "buffered": np.where(reached, led["buffered"], 0), "never_reached": np.where(reached, 0, length),
            "protected": protected, "fate": fate,
        }
        self._labels(out, raw, strings)
        return out

    def _labels(self, out: dict[str, npt.NDArray[Any]], raw: Int64Array, strings: bool) -> None:
        src = self.identity.source_of(raw)
        out["source"] = np.where(src < 0, len(self.dictionaries["source"]) - 1, src).astype(np.int32)
        if strings and self.identity.names is not None:  # without names the column is empty: left out
            out["name"] = np.asarray(self.identity.name_of(raw), dtype=object).reshape(-1)

    def _removed(self, a: int, b: int, strings: bool) -> dict[str, npt.NDArray[Any]]:
        raw = self.removed[a:b]
        ident = self.identity
        assert ident.raw_lengths is not None and ident.removed_by is not None
        length = np.asarray(ident.raw_lengths[raw], np.int64)
        zeros = np.zeros(raw.size, np.int64)
        out: dict[str, npt.NDArray[Any]] = {
            "document": raw, "pass": np.full(raw.size, -1, np.int64), "occurrence": np.full(raw.size, -1),
            "length": length, "stratum": stratum_index(length, self.boundaries).astype(np.int16),
            "started": np.zeros(raw.size, np.bool_), "first_row": np.full(raw.size, -1, np.int64),
            "emitted": zeros, "partial_row": zeros, "discarded": zeros, "filtered": zeros, "removed": length,
            "buffered": zeros, "never_reached": zeros, "protected": np.zeros(raw.size, np.bool_),
            "fate": (len(FATES) + ident.removed_by[raw]).astype(np.int16),
        }
        self._labels(out, raw, strings)
        return out
