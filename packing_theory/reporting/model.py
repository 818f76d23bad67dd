"""One report model: what every report says, independent of the file it is written to.

A report (the result of ``audit``, ``compare``, ``evaluate``, ``census``,
``contamination``, ``reconcile``, ``doctor``) implements :class:`Report`:

* :meth:`~Report.headline` — the answer in one sentence, each share beside its
  own quantity (the command's summary line, the first line of the Markdown and
  of the page);
* :meth:`~Report.to_dict` — the versioned JSON document (for machines);
* :meth:`~Report.sections` — what a person reads, as :class:`Section` blocks of
  :class:`Text`, :class:`Table`, :class:`Bars` and :class:`Plot`; the first
  section marked ``answer=True`` is the answer card of the page's first screen;
* :meth:`~Report.plots` — the PNG files it draws (matplotlib, the ``plots``
  extra), each with a note when there is nothing to draw;
* :meth:`~Report.attachments` — other files (the per-document table).

:mod:`~packing_theory.reporting.markdown` renders the sections as Markdown and
:mod:`~packing_theory.reporting.page` as one self-contained page, both from the
same blocks, so the two always say the same; :func:`~packing_theory.reporting.publish.write_report`
writes every file of a report as one unit through the locked atomic writer.

Cells are plain values; a :class:`Column`'s ``kind`` says how to show them
(:func:`cell_text`): ``count`` and ``tokens`` with thousands separators,
``share`` as a percentage, ``number`` with four significant digits,
``decimal`` with four decimals (a loss in bits per byte), ``delta`` signed with
five decimals (a difference of losses), ``text`` as is. :class:`Amount` is a
count with its share, shown together (``1,234 (5.0%)``).

>>> t = Table("rows", (Column("packer"), Column("tokens", "tokens"), Column("share", "share")),
...           (("discard", 1234567, 0.25),))
>>> [cell_text(c, v) for c, v in zip(t.columns, t.rows[0])]
['discard', '1,234,567', '25.0%']
>>> cell_text(Column("never started", "tokens"), Amount(302, 0.302))
'302 (30.2%)'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, Union, runtime_checkable

from ..errors import InputError

__all__ = [
    "COLUMN_KINDS",
    "MISSING",
    "Amount",
    "Attachment",
    "Bars",
    "Block",
    "Column",
    "ColumnKind",
    "Plot",
    "PlotFile",
    "Report",
    "Section",
    "Table",
    "Text",
    "cell_sort_value",
    "cell_text",
    "distinct_digits",
    "percent",
    "walk_blocks",
]

MISSING = "—"
"""The text of a value that is not defined (no document in the stratum, no start...)."""

ColumnKind = Literal["text", "count", "tokens", "share", "number", "decimal", "delta"]
COLUMN_KINDS: tuple[ColumnKind, ...] = ("text", "count", "tokens", "share", "number", "decimal", "delta")
"""How a column's cells are shown (see :func:`cell_text`)."""


@dataclass(frozen=True, slots=True)
class Amount:
    """A count and its share of a whole, shown together: ``1,234 (5.0%)``; sorted by the count."""

    value: int
    share: float | None


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its label in words, how its cells are shown, and the glossary term it uses."""

    label: str
    kind: ColumnKind = "text"
    term: str | None = None
    """A term of :data:`~packing_theory.reporting.glossary.GLOSSARY` (the page shows it on hover)."""
    digits: int = 4
    """Significant digits of a ``number`` cell that is not a whole number: a table whose rows are ranked
    by the column gives enough to tell its distinct values apart (:func:`distinct_digits`)."""

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise InputError(f"Column kind must be one of {', '.join(COLUMN_KINDS)}; got {self.kind!r}")
        if isinstance(self.digits, bool) or not isinstance(self.digits, int) or not 1 <= self.digits <= 17:
            raise InputError(f"Column digits must be an int in 1..17; got {self.digits!r}")

    @property
    def numeric(self) -> bool:
        """Whether the cells are numbers (right-aligned, sorted by value)."""
        return self.kind != "text"


@dataclass(frozen=True, slots=True)
class Text:
    """A paragraph of plain words (no markup: both renderers escape it)."""

    text: str


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of cells under labelled columns; the first column names the row.

    ``more`` says where the rows left out are (``"all 12,345 in documents.csv"``);
    ``key`` is a stable identifier (the page's element id, tests).
    """

    caption: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""
    more: str = ""
    key: str = ""

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise InputError(f"table {self.caption!r}: row {i} has {len(row)} cells for "
                                 f"{len(self.columns)} columns")


@dataclass(frozen=True, slots=True)
class Bars:
    """Stacked bars: per item (a packer), how one whole splits into named parts, with the numbers.

    ``parts`` name the segments in order (each with its glossary term in
    ``terms``); every bar gives one non-negative value per part, in ``unit``.
    Shares are of the bar's total (the sum of its parts).
    """

    caption: str
    unit: str
    parts: tuple[str, ...]
    bars: tuple[tuple[str, tuple[int, ...]], ...]
    terms: tuple[str | None, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        for label, values in self.bars:
            if len(values) != len(self.parts):
                raise InputError(f"bars {self.caption!r}: {label!r} has {len(values)} values for "
                                 f"{len(self.parts)} parts")
            if any(v < 0 for v in values):
                raise InputError(f"bars {self.caption!r}: {label!r} has a negative value: {list(values)}")
        if self.terms and len(self.terms) != len(self.parts):
            raise InputError(f"bars {self.caption!r}: {len(self.terms)} terms for {len(self.parts)} parts")


@dataclass(frozen=True, slots=True)
class Plot:
    """A PNG plot of the report shown in a section: its file name (written by :meth:`Report.plots`)."""

    name: str
    caption: str = ""


Block = Union[Text, Table, Bars, Plot, "Section"]


@dataclass(frozen=True, slots=True)
class Section:
    """A titled part of a report. ``answer``: the answer card (the page's first screen);
    ``collapsed``: details a reader opens on demand."""

    key: str
    title: str
    blocks: tuple[Block, ...]
    answer: bool = False
    collapsed: bool = False


def walk_blocks(blocks: Sequence[Block]) -> list[Block]:
    """Every block of ``blocks``, nested sections' blocks included, in reading order."""
    out: list[Block] = []
    for b in blocks:
        out.append(b)
        if isinstance(b, Section):
            out += walk_blocks(b.blocks)
    return out


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file of the report other than its JSON, Markdown, page and plots (e.g. ``documents.csv``).

    ``write(path, run_id)`` writes it (the run id goes into the file so that
    :func:`~packing_theory.reporting.verify_report` can check it).
    """

    name: str
    write: Callable[[Path, str], None] = field(compare=False)


@dataclass(frozen=True, slots=True)
class PlotFile:
    """A PNG the report draws: ``draw(path, metadata)`` writes it; or ``note`` says why it is not drawn."""

    name: str
    draw: Callable[[Path, Mapping[str, str]], None] | None = field(default=None, compare=False)
    note: str | None = None

    def __post_init__(self) -> None:
        if (self.draw is None) == (self.note is None):
            raise InputError(f"PlotFile {self.name!r} needs exactly one of draw and note")


@runtime_checkable
class Report(Protocol):
    """What every report implements (see the module doc)."""

    @property
    def kind(self) -> str:
        """The report's name: its files are ``KIND.json``, ``KIND.md``, ``KIND.html``."""
        ...

    @property
    def title(self) -> str:
        """The page's title."""
        ...

    def headline(self) -> str:
        """The answer in one sentence."""
        ...

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON document; ``run`` is the run entry (id, config hash, tool)."""
        ...

    def sections(self) -> Sequence[Section]:
        """What a person reads, answer card first."""
        ...

    def plots(self) -> Sequence[PlotFile]:
        """The PNG plots (drawn only when plots are asked for)."""
        ...

    def attachments(self) -> Sequence[Attachment]:
        """Other files of the report."""
        ...


# --------------------------------------------------------------------------- cells


def percent(v: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: ``0.5`` -> ``50.0%`` (:data:`MISSING` for ``None``).

    >>> percent(0.123456), percent(None), percent(0.5, 0)
    ('12.3%', '—', '50%')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return MISSING
    return f"{100 * v:.{digits}f}%"


def _number(v: float, digits: int = 4) -> str:
    if not math.isfinite(v):
        return MISSING
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}g}"


def distinct_digits(values: Iterable[object], least: int = 4, most: int = 17) -> int:
    """The fewest significant digits, at least ``least``, at which the distinct finite numbers of ``values``
    all read differently (``None`` and text are left out): a ranking never rests on a difference its
    reader cannot see. O(k · (most − least)) for k values.

    >>> distinct_digits([0.039598, 0.039604, None]), distinct_digits([0.5, 0.25]), distinct_digits([1.0, 1.0])
    (5, 4, 4)
    """
    numbers = {float(v) for v in values
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    for d in range(least, most):
        if len({f"{v:.{d}g}" for v in numbers}) == len(numbers):
            return d
    return most


def cell_text(column: Column, v: Any) -> str:
    """The text of one cell of ``column`` (see :data:`COLUMN_KINDS`).

    >>> cell_text(Column("n", "count"), 1234), cell_text(Column("x", "number"), 0.0123456)
    ('1,234', '0.01235')
    >>> cell_text(Column("n", "count"), None), cell_text(Column("ok"), True)
    ('—', 'yes')
    >>> cell_text(Column("BPB", "decimal"), 1.23456), cell_text(Column("Δ", "delta"), 0.000123)
    ('1.2346', '+0.00012')
    >>> cell_text(Column("x", "number", digits=6), 0.0123456)
    '0.0123456'
    """
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Amount):
        share = "" if v.share is None else f" ({percent(v.share)})"
        return f"{v.value:,}{share}"
    if column.kind == "share" and isinstance(v, (int, float)):
        return percent(float(v))
    if column.kind == "decimal" and isinstance(v, (int, float)):
        return f"{v:.4f}" if math.isfinite(v) else MISSING
    if column.kind == "delta" and isinstance(v, (int, float)):
        return f"{v:+.5f}" if math.isfinite(v) else MISSING
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return _number(v, column.digits)
    return str(v)


def cell_sort_value(v: Any) -> float | None:
    """The number a cell sorts by (``None``: sort as text)."""
    if isinstance(v, Amount):
        return float(v.value)
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    return None
