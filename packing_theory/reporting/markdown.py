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
from typing import cast

from ..errors import InputError
from .model import (
    MISSING,
    Amount,
    Attachment,
    Bars,
    Block,
    Column,
    Plot,
    PlotFile,
    Report,
    Section,
    Table,
    Text,
    cell_text,
    percent,
)

__all__ = ["TablesOnly", "count", "csv_cell", "md_escape", "millions", "percent", "render_markdown",
           "run_line", "table"]


def count(v: int | float | None) -> str:
    """``1,234`` for an int, ``1,234.5`` for a float, :data:`MISSING` for ``None``."""
    if v is None:
        return MISSING
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


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


# --------------------------------------------------------------------------- reports as Markdown

_MD_SPECIAL = str.maketrans({"\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
                             "|": "\\|", "<": "&lt;", "&": "&amp;", "#": "\\#",
                             "\n": " ", "\r": " "})


def md_escape(text: object) -> str:
    """``text`` as literal Markdown: no markup, no HTML tag (``<`` is an entity), no table break, one line.

    Every name that comes from the user's data (a file, a data source, a label)
    goes through this before it reaches a Markdown report.

    >>> md_escape("<script>x|y</script> *a*")
    '&lt;script>x\\\\|y&lt;/script> \\\\*a\\\\*'
    """
    return str(text).translate(_MD_SPECIAL)


def _md_table(t: Table) -> list[str]:
    header = [md_escape(c.label) for c in t.columns]
    align = "".join("r" if c.numeric else "l" for c in t.columns)
    rows = [[md_escape(cell_text(c, v)) for c, v in zip(t.columns, row, strict=True)] for row in t.rows]
    lines = [f"**{md_escape(t.caption)}**", "", *table(header, rows, align)] if t.caption else \
        table(header, rows, align)
    tail = [md_escape(x) for x in (t.note, t.more) if x]
    return [*lines, *(["", *tail] if tail else []), ""]


def _md_bars(b: Bars) -> list[str]:
    """Stacked bars as a table: one row per bar, one column per part, each value with its share."""
    columns = (Column(b.caption or "item"), *(Column(p, "count") for p in b.parts),
               Column(f"total ({b.unit})", "count"))
    rows = []
    for label, values in b.bars:
        total = sum(values)
        rows.append((label, *(Amount(v, v / total if total else None) for v in values), total))
    return _md_table(Table("", columns, tuple(rows), note=b.note))


def _md_blocks(blocks: Sequence[Block], depth: int, notes: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Section):
            lines += [f"{'#' * min(depth, 6)} {md_escape(b.title)}", ""]
            lines += _md_blocks(b.blocks, depth + 1, notes)
        elif isinstance(b, Text):
            lines += [md_escape(b.text), ""]
        elif isinstance(b, Table):
            lines += _md_table(b)
        elif isinstance(b, Bars):
            lines += _md_bars(b)
        elif isinstance(b, Plot):
            if b.name in notes:
                lines += [f"Not drawn: {b.name}: {md_escape(notes[b.name])}", ""]
            else:
                lines += [f"![{md_escape(b.caption or b.name)}]({b.name})", ""]
    return lines


def render_markdown(report: Report, *, run: Mapping[str, str] | None = None,
                    plots: Mapping[str, str | None] | None = None) -> str:
    """The Markdown document of ``report``: the headline, then every section, then the run line.

    ``plots`` maps each PNG written to ``None`` and each plot not drawn to the
    sentence saying why (``None`` for the whole mapping: no plot was asked for,
    and the sections' :class:`~packing_theory.reporting.model.Plot` blocks are left out).

    >>> from packing_theory.reporting.model import Section, Text
    >>> class R:
    ...     kind, title = "demo", "Demo"
    ...     def headline(self): return "3 rows."
    ...     def sections(self): return [Section("a", "Answer", (Text("x < y"),), answer=True)]
    >>> print(render_markdown(R()))  # doctest: +NORMALIZE_WHITESPACE
    3 rows.
    <BLANKLINE>
    # Demo
    <BLANKLINE>
    ## Answer
    <BLANKLINE>
    x &lt; y
    <BLANKLINE>
    """
    notes = {k: v for k, v in (plots or {}).items() if v is not None}
    sections: list[Section] = list(report.sections())
    if plots is None:
        sections = [_without_plots(s) for s in sections]
    else:
        sections = [_without_plots(s, keep=set(plots)) for s in sections]
    lines = [md_escape(report.headline()), "", f"# {md_escape(report.title)}", ""]
    lines += _md_blocks(sections, 2, notes)
    if run is not None:
        lines += [run_line(run), ""]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def _without_plots(s: Section, keep: set[str] | None = None) -> Section:
    """``s`` without the plot blocks not in ``keep`` (``None``: without any)."""
    blocks: list[Block] = []
    for b in s.blocks:
        if isinstance(b, Section):
            blocks.append(_without_plots(b, keep))
        elif not isinstance(b, Plot) or (keep is not None and b.name in keep):
            blocks.append(b)
    return Section(s.key, s.title, tuple(blocks), answer=s.answer, collapsed=s.collapsed)


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell a spreadsheet shows as text: a string starting with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return gets a leading ``'`` (it would otherwise be read as a formula);
    anything else, numbers included, is returned unchanged.

    The one rule for every CSV file the library writes (``documents.csv``).

    >>> print(csv_cell('=HYPERLINK("http://x")'), csv_cell("plain.txt"), csv_cell(-3))
    '=HYPERLINK("http://x") plain.txt -3
    """
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


class TablesOnly:
    """The defaults of a report whose every number is in its sections: no plots, no other files, and its
    Markdown rendered from the sections (:func:`render_markdown`).

    Mix it into a report class (``class DoctorReport(TablesOnly)``); a report that draws or attaches
    something defines that method itself.
    """

    def plots(self) -> Sequence[PlotFile]:
        """None."""
        return []

    def attachments(self) -> Sequence[Attachment]:
        """None."""
        return []

    def markdown(self) -> str:
        """The report as Markdown (:func:`~packing_theory.reporting.markdown.render_markdown`)."""
        return render_markdown(cast("Report", self))
