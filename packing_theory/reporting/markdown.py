"""Small helpers of every Markdown report: number cells and tables.

>>> count(1234567), count(None), percent(0.12345), percent(None), millions(13_895_680)
('1,234,567', '—', '12.3%', '—', '13.90 M')
>>> print("\\n".join(table(["packer", "rows"], [["discard", "1,000"]], "lr")))
| packer | rows |
|---|---:|
| discard | 1,000 |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import InputError

__all__ = ["MISSING", "count", "millions", "percent", "run_line", "table"]

MISSING = "—"
"""The cell of a value that is not defined (no source in the stratum, no start...)."""


def count(v: int | float | None) -> str:
    """``1,234`` for an int, ``1,234.5`` for a float, :data:`MISSING` for ``None``."""
    if v is None:
        return MISSING
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


def percent(v: float | None, digits: int = 1) -> str:
    """A fraction as a percentage (``0.5`` -> ``50.0%``), :data:`MISSING` for ``None``."""
    return MISSING if v is None else f"{100 * v:.{digits}f}%"


def millions(v: int | float | None) -> str:
    """A count in millions with two decimals (``13.90 M``), :data:`MISSING` for ``None``."""
    return MISSING if v is None else f"{v / 1e6:.2f} M"


def run_line(run: Mapping[str, str]) -> str:
    """The line naming a report's run (``run``: its ``id`` and ``config_hash``); ``verify_report`` looks
    for the run id in every text file.

    >>> run_line({"id": "20250101T000000Z-00000000", "config_hash": "sha256:ab"})
    'Run `20250101T000000Z-00000000`, config `sha256:ab`.'
    """
    return f"Run `{run['id']}`, config `{run['config_hash']}`."


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str) -> list[str]:
    """A Markdown table's lines; ``align`` holds one letter per column: ``l`` left, ``r`` right.

    Raises:
        InputError: ``align`` or a row does not have one entry per column.
    """
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise InputError(f"align must hold one of l/r per column ({len(header)}), got {align!r}")
    lines = ["| " + " | ".join(header) + " |", "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    for row in rows:
        if len(row) != len(header):
            raise InputError(f"a row has {len(row)} cells for {len(header)} columns: {list(row)!r}")
        lines.append("| " + " | ".join(row) + " |")
    return lines
