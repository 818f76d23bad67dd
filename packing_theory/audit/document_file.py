"""The per-document file: ``documents.csv`` or ``documents.parquet``, written block by block.

:func:`write_documents` stacks one or more packers'
:class:`~packing_theory.audit.documents.DocumentTable` s into one file, reading
each table in blocks of :data:`WRITE_BLOCK` rows (memory O(block) beyond the
tables, whatever the corpus size). Columns are built from numpy arrays
directly: integer and bool columns as they are, the string columns
``stratum``, ``fate``, ``source`` and ``packer`` from their codes (one string
per distinct value), so that only ``name`` costs a Python string per row. The
CSV follows the :mod:`csv` module's minimal quoting (``true``/``false`` for
booleans); the Parquet file has one row group per block, its string columns
dictionary-encoded and its integer columns delta-encoded (``DELTA_BINARY_PACKED``:
a third of the plain encoding's size here, at the same speed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import InputError, import_optional
from ..reporting.markdown import csv_cell
from .document_blocks import COLUMNS

__all__ = ["CSV_BLOCK", "WRITE_BLOCK", "csv_field", "write_documents"]

WRITE_BLOCK = 1 << 18
"""Rows read and written at a time in a Parquet file (a row group)."""

CSV_BLOCK = 1 << 15
"""Rows read and written at a time in a CSV file (its Python strings are the memory)."""

_CODED = ("packer", "stratum", "fate", "source")
_BOOL = ("started", "protected")
_SPECIAL = (",", '"', "\n", "\r")


def csv_field(value: str) -> str:
    """``value`` as the :mod:`csv` module writes a field (minimal quoting, quotes doubled), kept from
    being read as a spreadsheet formula (:func:`~packing_theory.reporting.markdown.csv_cell`).

    >>> print(csv_field("a,b"), csv_field('say "x" now'), csv_field("plain"), csv_field("=1+2"))
    "a,b" "say ""x"" now" plain '=1+2
    """
    value = str(csv_cell(value))
    if any(ch in value for ch in _SPECIAL):
        return '"' + value.replace('"', '""') + '"'
    return value


class DocumentTable(Protocol):
    """What the writers read of a :class:`~packing_theory.audit.documents.DocumentTable`."""

    packer: str

    def __len__(self) -> int: ...

    @property
    def dictionaries(self) -> dict[str, tuple[str, ...]]: ...

    def coded_blocks(self, block: int = ..., *, strings: bool = ...
                     ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]: ...


def _columns() -> tuple[str, ...]:
    return COLUMNS


def _csv_lines(table: DocumentTable, c: dict[str, npt.NDArray[Any]], tail: str) -> str:
    """One block as CSV lines: one ``%`` format per row (``%d`` for the integers, the strings escaped)."""
    dicts = table.dictionaries
    m = int(c["length"].size)
    cols: list[list[Any]] = []
    for name in _columns():
        if name in _CODED:
            words = np.asarray([csv_field(w) for w in dicts[name]], dtype=object)
            cols.append(words[np.zeros(m, np.intp) if name == "packer" else c[name]].tolist())
        elif name == "name":
            cols.append([csv_field(str(v)) for v in c[name].tolist()] if name in c else [""] * m)
        elif name in _BOOL:
            cols.append(np.where(c[name], "true", "false").tolist())
        else:
            cols.append(c[name].tolist())
    fmt = ",".join("%d" if n not in (*_CODED, "name", *_BOOL) else "%s" for n in _columns())
    fmt += ("," + tail.replace("%", "%%") if tail else "") + "\n"
    return "".join([fmt % row for row in zip(*cols, strict=True)])


def _csv_chunks(tables: Sequence[DocumentTable], run_id: str | None) -> Iterator[str]:
    header = [*_columns(), *(["run"] if run_id else [])]
    yield ",".join(csv_field(h) for h in header) + "\n"
    tail = csv_field(run_id) if run_id else ""
    for t in tables:
        for _, c in t.coded_blocks(CSV_BLOCK):
            yield _csv_lines(t, c, tail)


def _parquet(out: Path, tables: Sequence[DocumentTable], run_id: str | None) -> None:
    pa = import_optional("pyarrow", extra="parquet", purpose="a Parquet documents file")
    pq = import_optional("pyarrow.parquet", extra="parquet", purpose="a Parquet documents file")
    fields = [(c, pa.string() if c in (*_CODED, "name") else pa.bool_() if c in _BOOL else pa.int64())
              for c in _columns()]
    schema = pa.schema([*fields, *([("run", pa.string())] if run_id else [])], metadata={"run": run_id or ""})
    strings = [c for c in (*_CODED, "name", "run") if c in schema.names]
    delta = {c: "DELTA_BINARY_PACKED" for c in _columns() if c not in (*_CODED, "name", *_BOOL)}
    constants: dict[tuple[str, int], Any] = {}

    def constant(value: str, m: int) -> Any:  # one array per value and block size
        if (value, m) not in constants:
            constants[(value, m)] = pa.array([value], pa.string()).take(pa.array(np.zeros(m, np.int32)))
        return constants[(value, m)]

    with pq.ParquetWriter(str(out), schema, use_dictionary=strings, column_encoding=delta) as w:
        for t in tables:
            words = {k: pa.array(list(v), pa.string()) for k, v in t.dictionaries.items()}
            for _, c in t.coded_blocks(WRITE_BLOCK):
                m = int(c["length"].size)
                arrays = []
                for name in _columns():
                    values = t.dictionaries[name] if name in _CODED else ()
                    if len(values) == 1:  # the packer; a source column without labels
                        arrays.append(constant(values[0], m))
                    elif name in _CODED:
                        arrays.append(words[name].take(pa.array(c[name].astype(np.int32))))
                    elif name == "name":
                        arrays.append(pa.array(c[name], pa.string()) if name in c else constant("", m))
                    else:
                        arrays.append(pa.array(c[name]))
                if run_id:
                    arrays.append(constant(run_id, m))
                w.write_table(pa.Table.from_arrays(arrays, schema=schema))


def write_documents(path: str | os.PathLike[str], tables: Sequence[DocumentTable], *,
                    run_id: str | None = None) -> Path:
    """Write ``tables`` (one per packer, stacked) to ``path``: CSV, or Parquet when it ends ``.parquet``.

    Written in blocks of :data:`WRITE_BLOCK` rows (Parquet) or :data:`CSV_BLOCK`
    rows (CSV): memory O(block) beyond the tables. ``run_id`` (a report's
    run) is a last column ``run`` on every row, in both formats (and the
    Parquet file's ``run`` metadata), so that a row read on its own, or the
    report's check, ties the file to its run.

    Raises:
        InputError: another suffix.
        ImportError: ``.parquet`` without pyarrow (the ``parquet`` extra).
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix == ".csv":
        with open(out, "w", encoding="utf-8", newline="") as f:
            for chunk in _csv_chunks(tables, run_id):
                f.write(chunk)
        return out
    if suffix == ".parquet":
        _parquet(out, tables, run_id)
        return out
    raise InputError(f"--documents must end in .csv or .parquet, got {os.fspath(path)!r}")
