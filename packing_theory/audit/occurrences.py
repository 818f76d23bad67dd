"""A ledger's per-occurrence views: its columns (whole or in blocks), first targets, and detail records.

:class:`OccurrenceViews` reads the :class:`~packing_theory.audit.table.SourceTable`
of a :class:`~packing_theory.audit.ledger.Ledger` — in memory, or from its
store in blocks — and turns it into the columns users ask for
(:meth:`~OccurrenceViews.arrays`, :meth:`~OccurrenceViews.array_blocks`) and,
for a ledger built with ``detail=True``, one :class:`SourceRecord` per
occurrence. The :class:`~packing_theory.audit.ledger.Ledger` is this class
plus its feeding and results.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.events import IntColumn
from ..errors import InputError
from .accounting import ChunkAccounts
from .results import EmittedInterval, SourceRecord
from .strata import stratum_index
from .table import ARRIVED, BLOCK, FIRST_ORIGIN, STARTED, SourceTable
from .table import FILTERED as F_FILTERED

__all__ = ["ARRAY_KEYS", "OccurrenceColumns", "OccurrenceViews"]

Int64Array = npt.NDArray[np.int64]

ARRAY_KEYS = ("arrived", "source", "pass_index", "length", "stratum", "started", "emitted", "discarded",
              "filtered", "buffered", "added_bos", "first_target")
"""The per-occurrence columns of :meth:`OccurrenceViews.arrays`, in order."""


class OccurrenceColumns:
    """The per-occurrence columns of a ledger's table, read by occurrence range (see
    :meth:`OccurrenceViews.columns_view`). ``range(a, b, names)`` gives :data:`ARRAY_KEYS` columns."""

    def __init__(self, table: SourceTable, buf_occ: IntColumn, buf_amt: IntColumn,
                 boundaries: tuple[int, ...]) -> None:
        self._t = table
        self._buf_occ = buf_occ
        self._buf_amt = buf_amt
        self.boundaries = boundaries

    @property
    def n(self) -> int:
        """Occurrence ids covered: one past the largest arrived."""
        return self._t.n

    @property
    def keeps_first_targets(self) -> bool:
        """Whether ``first_target`` is available."""
        return self._t.keeps_first_targets

    def range(self, a: int, b: int, names: Sequence[str] = ()) -> dict[str, npt.NDArray[Any]]:
        """Columns ``names`` (default: :data:`ARRAY_KEYS`) of occurrences ``[a, b)``. O(b - a)."""
        t, n = self._t, b - a
        names = names or ARRAY_KEYS
        raw = {"arrived": ("flags",), "source": ("source",), "pass_index": ("pass_index",),
               "length": ("length",), "stratum": ("length",), "started": ("flags",),
               "emitted": ("emitted",), "discarded": ("discarded",), "filtered": ("flags", "length"),
               "added_bos": ("added",), "first_target": ("first_inv",), "buffered": ()}
        for name in names:
            if name not in raw:
                raise InputError(f"columns must be among {', '.join(ARRAY_KEYS)}; got {name!r}")
        need = sorted({c for name in names for c in raw[name]} - ({"first_inv"} if not t.keeps_first_targets
                                                                 else set()))
        c = t.column(need, a, b)
        fl = c.get("flags", np.zeros(0, np.uint8))

        def buffered() -> Int64Array:
            col = np.zeros(n, np.int64)
            lo, hi = np.searchsorted(self._buf_occ, [a, b])
            col[self._buf_occ[lo:hi].astype(np.int64) - a] = self._buf_amt[lo:hi]
            return col

        def first_target() -> Int64Array:
            inv = c["first_inv"]
            return np.where(inv > 0, FIRST_ORIGIN - inv, -1).astype(np.int64)

        make: dict[str, Callable[[], npt.NDArray[Any]]] = {
            "arrived": lambda: (fl & ARRIVED) != 0,
            "source": lambda: c["source"].astype(np.int64),
            "pass_index": lambda: c["pass_index"].astype(np.int64),
            "length": lambda: c["length"].astype(np.int64),
            "stratum": lambda: stratum_index(c["length"].astype(np.int64), self.boundaries),
            "started": lambda: (fl & STARTED) != 0,
            "emitted": lambda: c["emitted"].astype(np.int64),
            "discarded": lambda: c["discarded"].astype(np.int64),
            "filtered": lambda: np.where((fl & F_FILTERED) != 0, c["length"].astype(np.int64), 0),
            "buffered": buffered,
            "added_bos": lambda: c["added"].astype(np.int64),
            "first_target": first_target,
        }
        out: dict[str, npt.NDArray[Any]] = {}
        for name in names:
            if name == "first_target" and not t.keeps_first_targets:
                continue
            out[name] = make[name]()
        return out

    def blocks(self, block: int, names: Sequence[str] = ()
               ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """``(first occurrence id, columns)`` of consecutive blocks. Memory O(block)."""
        block = check_int("block", block, 1)
        for a in range(0, self.n, block):
            yield a, self.range(a, min(self.n, a + block), names)


class OccurrenceViews(ChunkAccounts):
    """The per-occurrence views of a ledger (see the module doc)."""

    _detail_cache: tuple[Int64Array, Int64Array] | None = None

    def protected_occurrences(self) -> Int64Array:
        """The occurrence ids of the protected set K so far, by increasing key ``(L, arrival)``. O(B)."""
        return self._prot_occ.copy()

    def first_targets(self) -> Int64Array:
        """Per occurrence: target index of its first emitted target, ``-1`` if none. O(occurrences).

        Raises:
            InputError: the ledger was built with ``keep_first_targets=False``.
        """
        if not self._t.keeps_first_targets:
            raise InputError("per-occurrence first targets need Ledger(keep_first_targets=True)")
        return self._columns(0, self._n, ("first_target",))["first_target"]

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Per-occurrence columns (available in both modes; index = occurrence id). O(occurrences) memory.

        Keys: ``arrived, source, pass_index, length, stratum, started, emitted,
        discarded, filtered, buffered, added_bos, first_target`` (``emitted``, ``discarded``
        and ``buffered`` count source tokens; ``buffered`` needs the Horizon;
        ``first_target`` only with ``keep_first_targets=True``). About 90 bytes per
        occurrence: to stream the table instead, use :meth:`array_blocks`.
        """
        return self._columns(0, self._n)

    @property
    def occurrences(self) -> int:
        """Occurrence ids accounted so far: one past the largest arrived (the length of :meth:`arrays`)."""
        return self._n

    def array_blocks(self, block: int = BLOCK, columns: Sequence[str] | None = None
                     ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """:meth:`arrays` in blocks of ``block`` occurrences: ``(first occurrence id, columns)`` pairs,
        in id order (nothing when no occurrence arrived); ``columns`` picks keys (default: all).
        Memory O(block) besides the table (whose settled records a store holds on disk).

        Raises:
            InputError: ``block`` is not a positive int, or an unknown column.
        """
        block = check_int("block", block, 1)
        names = ARRAY_KEYS if columns is None else tuple(columns)
        for name in names:
            if name not in ARRAY_KEYS:
                raise InputError(f"columns must be among {', '.join(ARRAY_KEYS)}; got {name!r}")
        for a in range(0, self._n, block):
            yield a, self._columns(a, min(self._n, a + block), names)

    def _columns(self, a: int, b: int, names: Sequence[str] = ()) -> dict[str, npt.NDArray[Any]]:
        return self.columns_view().range(a, b, names)

    def columns_view(self) -> OccurrenceColumns:
        """A picklable read-only view of the per-occurrence columns (the table, the buffered tokens at the
        horizon), independent of the ledger object: what a per-document table keeps."""
        return OccurrenceColumns(self._t, self._buf_occ, self._buf_amt, self.boundaries)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`arrays` (and, with ``detail=True``, the detail rows) to an ``.npz`` file.

        Returns the path written (``.npz`` appended when missing).

        Per-source detail lives on disk from then on; load it with :func:`numpy.load`.
        """
        out = Path(path)
        if out.suffix != ".npz":
            out = out.with_name(out.name + ".npz")
        extra: dict[str, Any] = {}
        if self.detail and self._horizon is not None:
            pl, dc = self._detail.rows()
            extra = {"placements": pl, "discards": dc}
        np.savez(out, **{**self.arrays(), **extra})
        return out

    def _detail_index(self) -> tuple[Int64Array, Int64Array]:
        if not self.detail:
            raise InputError("per-source records need Ledger(detail=True)")
        if self._horizon is None:
            raise InputError("per-source records need the Horizon event: feed the whole stream first")
        if self._detail_cache is None:
            pl, _ = self._detail.rows()
            order = np.argsort(pl[:, 2], kind="stable")
            pl = pl[order]
            bounds = np.searchsorted(pl[:, 2], np.arange(self._n + 1))
            self._detail_cache = (pl, bounds)
        return self._detail_cache

    def record(self, occurrence: int) -> SourceRecord:
        """The ledger line of one occurrence (``detail=True`` only). O(its placements)."""
        pl, bounds = self._detail_index()
        check_int("occurrence", occurrence, 0)
        if not 0 <= occurrence < self._n:
            raise InputError(f"occurrence {occurrence} never arrived")
        c = self._columns(occurrence, occurrence + 1)
        if not c["arrived"][0]:
            raise InputError(f"occurrence {occurrence} never arrived")
        rows = pl[bounds[occurrence]: bounds[occurrence + 1]]
        intervals = tuple(EmittedInterval(int(r[4]), int(r[5]), int(r[0]), int(r[1]), bool(r[6]), bool(r[8]))
                          for r in rows)
        first = int(c["first_target"][0])
        return SourceRecord(
            occurrence=int(occurrence),
            source=int(c["source"][0]),
            pass_index=int(c["pass_index"][0]),
            length=int(c["length"][0]),
            intervals=intervals,
            discarded=int(c["discarded"][0]),
            buffered=int(c["buffered"][0]),
            added_bos=int(c["added_bos"][0]),
            first_target=first if first >= 0 else None,
            filtered=int(c["filtered"][0]),
        )

    def records(self) -> Iterator[SourceRecord]:
        """Every arrived occurrence's :class:`SourceRecord`, in arrival-id order (``detail=True``)."""
        self._detail_index()
        for a, c in self.array_blocks(columns=("arrived",)):
            for occ in np.flatnonzero(c["arrived"]).tolist():
                yield self.record(a + occ)

    def by_source(self, source: int) -> list[SourceRecord]:
        """All occurrences (one per pass) of an original source id (``detail=True``). O(occurrences)."""
        self._detail_index()
        out = []
        for a, c in self.array_blocks(columns=("arrived", "source")):
            for occ in np.flatnonzero(c["arrived"] & (c["source"] == source)).tolist():
                out.append(self.record(a + occ))
        return out
