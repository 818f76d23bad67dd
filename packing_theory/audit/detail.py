"""A detail ledger's rows: every placement and discard, kept in memory or spilled to an ``.npz`` file.

``Ledger(detail=True)`` keeps each placement as a row ``(row, offset,
occurrence, source, start, length, bos_inserted, crop, added)`` and each
discard as ``(occurrence, source, start, length)`` so that
:meth:`~packing_theory.audit.ledger.Ledger.record` can return one source's
emitted intervals. :class:`DetailRows` holds them — in memory, or with
``spill=PATH`` written to raw files as they come and packed into ``PATH``
(an ``.npz``) at the Horizon. Memory O(placements + discards) in memory, O(1)
spilled.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

__all__ = ["WIDTHS", "DetailRows"]

Int64Array = npt.NDArray[np.int64]

WIDTHS = {"placements": 9, "discards": 4}
"""Columns of a detail row of each kind."""


class DetailRows:
    """The detail rows of one ledger (see the module doc).

    Args:
        spill: an ``.npz`` path (the suffix is added when missing) to spill to; ``None`` keeps them in memory.
    """

    def __init__(self, spill: str | os.PathLike[str] | None = None) -> None:
        self.spill = None if spill is None else Path(spill)
        if self.spill is not None and self.spill.suffix != ".npz":
            self.spill = self.spill.with_name(self.spill.name + ".npz")
        self._rows: dict[str, list[Int64Array]] = {kind: [] for kind in WIDTHS}
        self._files: dict[str, IO[bytes]] = {}

    def keep(self, kind: str, rows: Int64Array) -> None:
        """Add rows of ``kind`` (``"placements"`` or ``"discards"``)."""
        if self.spill is None:
            self._rows[kind].append(rows)
            return
        f = self._files.get(kind)
        if f is None:
            f = self._files[kind] = open(self._raw(kind), "wb")  # noqa: SIM115 - closed by close()
        rows.tofile(f)

    def _raw(self, kind: str) -> Path:
        assert self.spill is not None
        return self.spill.with_name(f"{self.spill.name}.{kind}.raw")

    def close(self) -> None:
        """At the Horizon: pack spilled rows into the ``.npz`` (nothing to do in memory)."""
        if self.spill is None:
            return
        arrays: dict[str, Any] = {}
        for f in self._files.values():
            f.close()
        for kind, w in WIDTHS.items():
            raw = self._raw(kind)
            if raw.exists() and raw.stat().st_size:
                arrays[kind] = np.memmap(raw, dtype=np.int64, mode="r").reshape(-1, w)
            else:
                arrays[kind] = np.zeros((0, w), dtype=np.int64)
        np.savez(self.spill, **arrays)
        for kind in WIDTHS:
            self._raw(kind).unlink(missing_ok=True)
        self._files.clear()

    def held(self) -> int:
        """Rows held in memory (0 when spilled)."""
        return sum(len(r) for parts in self._rows.values() for r in parts)

    def rows(self) -> tuple[Int64Array, Int64Array]:
        """All placement rows and all discard rows (read back from the spill file)."""
        if self.spill is not None:
            with np.load(self.spill) as z:
                return z["placements"], z["discards"]
        pl, dc = self._rows["placements"], self._rows["discards"]
        return (np.concatenate(pl) if pl else np.zeros((0, WIDTHS["placements"]), np.int64),
                np.concatenate(dc) if dc else np.zeros((0, WIDTHS["discards"]), np.int64))
