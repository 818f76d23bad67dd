"""Small helpers of every Markdown report: number cells, tables, and user text made inert.

A name a user chose — a source label, a mixture's or a funnel stage's name, a
file name — goes into Markdown through :func:`md_text` (running text) or
:func:`md_cell` (a table cell): rendered, it shows as the characters it is,
never as HTML (``<script>``, ``<img onerror=...>``), a link, an image or
emphasis. Into a CSV file it goes through :func:`csv_cell`, so that a
spreadsheet never reads it as a formula.

>>> count(1234567), count(None), percent(0.12345), percent(None), millions(13_895_680)
('1,234,567', '—', '12.3%', '—', '13.90 M')
>>> print(md_text("<img src=x onerror=alert(1)> [a](javascript:b) *web*"))
&lt;img src=x onerror=alert(1)&gt; \\[a\\](javascript:b) \\*web\\*
>>> print(md_cell("a|b"), csv_cell('=HYPERLINK("http://x")'), csv_cell("plain.txt"), csv_cell(-3))
a\\|b '=HYPERLINK("http://x") plain.txt -3
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import InputError

__all__ = ["MISSING", "count", "csv_cell", "md_cell", "md_text", "millions", "percent", "run_line", "table"]

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


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_PUNCTUATION = frozenset("\\`*_[]!|#~")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def md_text(value: object) -> str:
    """``value`` (user text) as Markdown that renders as exactly its characters, on one line.

    ``&``, ``<`` and ``>`` become entities (no raw HTML reaches the page);
    Markdown's active punctuation (backslash, backtick, ``* _ [ ] ! | # ~``) is
    backslash-escaped (no emphasis, code, link, image or table cell boundary);
    line breaks and other control characters become spaces. O(len(text)).
    """
    out = []
    for ch in str(value):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_PUNCTUATION:
            out.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def md_cell(value: object) -> str:
    """``value`` as the text of a Markdown table cell (:func:`md_text`; :data:`MISSING` when empty)."""
    text = md_text(value)
    return text if text.strip() else MISSING


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell a spreadsheet shows as text: a string starting with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return gets a leading ``'`` (it would otherwise be read as a formula);
    anything else, numbers included, is returned unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value
