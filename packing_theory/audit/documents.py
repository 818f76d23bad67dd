"""Per-document answers: one row per document offered to a packer, and what happened to it at the horizon.

:func:`document_table` turns a finished :class:`~packing_theory.audit.Ledger`
(its :meth:`~packing_theory.audit.Ledger.arrays`) into a
:class:`DocumentTable`: one row per document *offered* — every source of the
corpus in every pass the packer was given — whether it arrived or not. Each
row's tokens reconcile exactly::

    length == emitted + partial_row + discarded + filtered + buffered + never_reached

(source tokens; added BOS markers are not a document's tokens). ``emitted``
counts tokens in complete rows only; ``partial_row`` counts those placed in
the incomplete last row of a stream that ran dry, which is never delivered and
so never trained. ``fate`` says it in one word: ``trained`` (every token in
complete rows), ``partly trained`` (started, some tokens dropped, still
buffered or in the partial row — even all of them), ``never started`` (arrived,
no token emitted: still buffered or filtered) or ``never reached`` (the run
stopped before it arrived). :func:`write_documents` writes the table as CSV
(or Parquet, with the ``parquet`` extra) in chunks.

>>> from packing_theory import Packer, feed_all
>>> from packing_theory.audit import Ledger
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, rows=2)
>>> ledger, rows = Ledger.for_packer(packer), DocumentRows.for_packer(packer)
>>> _, facts = feed_all(packer.stream([5, 3, 9, 4, 6, 2]), ledger, rows)
>>> table = document_table(ledger, facts, [5, 3, 9, 4, 6, 2])
>>> table.column("fate").tolist()
['trained', 'trained', 'never started', 'trained', 'partly trained', 'trained']
>>> table.column("protected").tolist(), table.total("buffered")
([False, False, True, False, False, False], 9)
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._unique import distinct, group_min
from ..engine.batches import ARRIVAL, PADDING, PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.consumers import consumer_settings
from ..engine.events import Arrival, Filtered, Horizon, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError, import_optional
from ..lengths import validate_lengths
from ..reporting.markdown import csv_cell
from .ledger import Ledger
from .strata import stratum_labels

__all__ = [
    "DOCUMENTS_DEFAULT_LIMIT",
    "DOCUMENT_COLUMNS",
    "DOCUMENT_FATES",
    "DocumentRows",
    "DocumentTable",
    "RowFacts",
    "census_names",
    "document_names",
    "document_table",
    "is_document_id",
    "partial_row_tokens",
    "write_documents",
]

Int64Array = npt.NDArray[np.int64]

DOCUMENT_COLUMNS: tuple[str, ...] = (
    "packer", "document", "pass", "occurrence", "name", "length", "stratum", "started", "first_row",
    "emitted", "partial_row", "discarded", "filtered", "buffered", "never_reached", "protected", "fate",
)
"""Columns of the per-document file, in order (``first_row`` and ``occurrence`` are -1 when none)."""

DOCUMENT_FATES: tuple[str, ...] = ("trained", "partly trained", "never started", "never reached")
"""The values of the ``fate`` column."""

DOCUMENTS_DEFAULT_LIMIT = 100_000
"""``audit`` writes ``documents.csv`` without being asked when a corpus has at most this many documents."""

_CHUNK = 65_536


@dataclass(frozen=True, eq=False)
class RowFacts:
    """What :class:`DocumentRows` measured, per occurrence id (``-1`` where none). ``==`` compares values."""

    first_row: Int64Array
    """The smallest row index holding one of its tokens (a BOS-only placement counts)."""
    arrival_row: Int64Array
    """Complete rows emitted, in stream order, when it arrived (the row its refill fed)."""
    filtered_reason: dict[int, str]
    """Occurrence -> the :class:`~packing_theory.engine.events.Filtered` reason."""
    partial_placements: Int64Array = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    """The placements of the incomplete last row, never trained: ``(occurrence, length, bos_inserted)``."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowFacts):
            return NotImplemented
        return (np.array_equal(self.first_row, other.first_row)
                and np.array_equal(self.arrival_row, other.arrival_row)
                and self.filtered_reason == other.filtered_reason
                and np.array_equal(self.partial_placements, other.partial_placements))

    __hash__ = None  # type: ignore[assignment]


class DocumentRows:
    """A consumer of any event stream: each occurrence's first row, arrival row and filter reason.

    The ledger's ``first_target`` misses a document whose only placement is a
    BOS at a row's position 0 (an input, never a target); this consumer counts
    rows instead. Rows are counted in the order the packer emits them.

    Args:
        capacity: the row capacity ``R``.
        per_occurrence: keep each occurrence's first and arrival rows (16 bytes
            per occurrence). ``False`` keeps only what :func:`never_trained
            <packing_theory.audit.untrained.never_trained>` needs (the last row's
            placements and the filter reasons); the result's ``first_row`` and
            ``arrival_row`` are then empty.

    Complexity: O(1) per event, a batch O(its events log its events) numpy
    work; memory O(occurrences) with ``per_occurrence``, else O(row + filtered).
    """

    def __init__(self, capacity: int, per_occurrence: bool = True) -> None:
        if capacity < 1:
            raise InputError(f"capacity must be >= 1, got {capacity}")
        if not isinstance(per_occurrence, bool):
            raise InputTypeError(f"per_occurrence must be a bool, got {type(per_occurrence).__name__} "
                                 f"{per_occurrence!r}")
        self.capacity = capacity
        self.per_occurrence = per_occurrence
        self._first = np.full(0, -1, np.int64)
        self._arrival = np.full(0, -1, np.int64)
        self._reasons: dict[int, str] = {}
        self._filled = 0  # row positions filled so far, in stream order
        self._done = False
        self._last_row = -1  # the highest row placed into so far, and its placements
        self._last: list[tuple[int, int, int]] = []
        self._partial = np.zeros((0, 3), np.int64)

    @classmethod
    def for_packer(cls, packer: object) -> DocumentRows:
        """Built with the packer's row capacity."""
        return cls(consumer_settings(packer).capacity)

    def _grow(self, top: int) -> None:
        if self.per_occurrence and top >= self._first.size:
            size = max(top + 1, 2 * self._first.size)
            self._first = np.concatenate([self._first, np.full(size - self._first.size, -1, np.int64)])
            self._arrival = np.concatenate([self._arrival, np.full(size - self._arrival.size, -1, np.int64)])

    def feed(self, item: EventItem) -> None:
        """Account one event, or a batch column by column. O(1) per event; a batch O(events) numpy work."""
        if isinstance(item, EventBatch):
            self._batch(item)
            return
        t = type(item)
        if t is Arrival:
            if self.per_occurrence:
                o = cast(Arrival, item).occurrence
                self._grow(o)
                self._arrival[o] = self._filled // self.capacity
        elif t is Placement:
            p = cast(Placement, item)
            if self.per_occurrence and (self._first[p.occurrence] < 0 or p.row < self._first[p.occurrence]):
                self._first[p.occurrence] = p.row
            if p.row > self._last_row:
                self._last_row, self._last = p.row, []
            if p.row == self._last_row:
                self._last.append((p.occurrence, p.length, int(p.bos_inserted)))
        elif t is Filtered:
            f = cast(Filtered, item)
            self._reasons[f.occurrence] = f.reason
        elif t is Horizon:
            self._end(item)  # type: ignore[arg-type]
        if t is Placement or t is Padding or t is Repeat:
            self._filled += cast("Placement | Padding | Repeat", item).length

    def _batch(self, b: EventBatch) -> None:
        kinds = b.kinds
        occ = b.arrival.occurrence
        filled = int(b.placement.length.sum()) + int(b.padding.length.sum()) + int(b.repeat.length.sum())
        if occ.size and self.per_occurrence:  # the positions filled before each arrival
            fill = np.zeros(kinds.size, np.int64)
            fill[kinds == PLACEMENT] = b.placement.length
            fill[kinds == PADDING] = b.padding.length
            fill[kinds == REPEAT] = b.repeat.length
            before = self._filled + np.cumsum(fill) - fill
            self._grow(int(occ.max()))
            self._arrival[occ] = before[kinds == ARRIVAL] // self.capacity
        pocc, prow = b.placement.occurrence, b.placement.row
        if pocc.size:
            if self.per_occurrence:  # O(batch log batch): only the occurrences placed in it
                u, low = group_min(pocc, prow)
                cur = self._first[u]
                self._first[u] = np.where((cur < 0) | (low < cur), low, cur)
            top = int(prow.max())
            if top > self._last_row:
                self._last_row, self._last = top, []
            if top == self._last_row:
                at = prow == top
                self._last += list(zip(pocc[at].tolist(), b.placement.length[at].tolist(),
                                       b.placement.bos_inserted[at].astype(np.int64).tolist(), strict=True))
        for o, code in zip(b.filtered.occurrence.tolist(), b.filtered.reason.tolist(), strict=True):
            self._reasons[o] = b.reasons[code]
        self._filled += filled
        if b.horizon is not None:
            self._end(b.horizon)

    def _end(self, h: Horizon) -> None:
        self._done = True
        if h.partial_row_tokens and self._last_row == h.rows:  # the incomplete row is the last one
            self._partial = np.array(self._last, np.int64).reshape(-1, 3)

    def result(self) -> RowFacts:
        """The per-occurrence rows (call after the Horizon)."""
        if not self._done:
            raise InputError("DocumentRows.result() needs the Horizon event: feed the whole stream first")
        n = int(np.flatnonzero(self._arrival >= 0).max()) + 1 if (self._arrival >= 0).any() else 0
        return RowFacts(self._first[:n].copy(), self._arrival[:n].copy(), dict(self._reasons),
                        self._partial.copy())

    def _check(self) -> None:
        assert self._first.size == self._arrival.size
        assert self.per_occurrence or self._first.size == 0
        assert self._filled >= 0
        assert np.all((self._first < 0) | (self._arrival >= 0)), "a placement before its arrival"


@dataclass(frozen=True)
class DocumentTable:
    """One packer's per-document columns (see the module doc); index = offered order (pass, then document).

    ``columns`` holds numpy arrays of equal length keyed by :data:`DOCUMENT_COLUMNS`
    (without ``packer``, which is :attr:`packer`); ``name`` is an object array
    of strings (empty when unknown).
    """

    packer: str
    capacity: int
    columns: dict[str, npt.NDArray[Any]]

    def __len__(self) -> int:
        return int(self.columns["length"].size)

    def column(self, name: str) -> npt.NDArray[Any]:
        """One column (``packer`` is repeated)."""
        if name == "packer":
            return np.full(len(self), self.packer, dtype=object)
        if name not in self.columns:
            raise InputError(f"column must be one of {', '.join(DOCUMENT_COLUMNS)}; got {name!r}")
        return self.columns[name]

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as plain Python values."""
        return {c: _plain(self.column(c)[i]) for c in DOCUMENT_COLUMNS}

    def total(self, name: str) -> int:
        """The exact sum of an integer column."""
        return int(self.columns[name].sum())

    def find(self, document: str | int) -> list[int]:
        """Row indices of a document by id (``"12"`` or 12) or by name.

        A name matches exactly, else as a whole-component path suffix
        (``dom/__init__.py`` matches ``a/xml/dom/__init__.py``, not
        ``a/xdom/__init__.py``); several documents matching that way are
        ambiguous, never resolved by picking one.

        Raises:
            InputError: an empty ``document``, no document has that id or name, or the name's suffix
                matches several documents.

        Complexity: O(N) name comparisons.
        """
        ids = self.columns["document"]
        text = str(document).strip()
        if not text:  # an empty name would equal every unnamed document's empty name
            raise InputError(f"document {document!r} is empty: give an id 0..N-1 or a file name the corpus "
                             "knows")
        if isinstance(document, int) or is_document_id(text):
            hits = np.flatnonzero(ids == int(text))
        else:
            names = self.columns["name"]
            hits = np.flatnonzero(names == text)
            if hits.size == 0:
                hits = _suffix_matches(names, ids, text)
        if hits.size == 0:
            raise InputError(f"document {document!r} is not among the {len(self):,} documents offered "
                             "(give an id 0..N-1 or a file name the corpus knows)")
        return [int(i) for i in hits]

    def _check(self) -> None:
        """Every row reconciles: length = emitted + discarded + filtered + buffered + never_reached."""
        c = self.columns
        parts = (c["emitted"] + c["partial_row"] + c["discarded"] + c["filtered"] + c["buffered"]
                 + c["never_reached"])
        assert np.array_equal(parts, c["length"]), "a document's tokens do not reconcile"
        reached = c["occurrence"] >= 0
        assert np.all(c["never_reached"][reached] == 0)
        assert np.all(c["never_reached"][~reached] == c["length"][~reached])
        assert np.all(c["started"] == (c["first_row"] >= 0))
        assert np.all(~c["started"][~reached]) and np.all(~c["protected"][~reached])
        fate = c["fate"]
        assert np.all((fate == "trained") == (c["started"] & (c["emitted"] == c["length"])))
        assert np.all((fate == "never started") == (reached & ~c["started"]))
        assert np.all((fate == "never reached") == ~reached)


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))


def is_document_id(text: str) -> bool:
    """Whether ``text`` names a document by its id: ASCII digits only (``"²"`` is a digit to
    ``str.isdigit`` that ``int`` refuses; ``""`` is no id).

    >>> is_document_id("12"), is_document_id("²"), is_document_id(""), is_document_id("a.txt")
    (True, False, False, False)
    """
    return text.isascii() and text.isdigit()


def _suffix_matches(names: np.ndarray, ids: np.ndarray, text: str) -> np.ndarray:
    """Rows whose name ends with ``text``'s path components; an InputError when several documents do."""
    want = _parts(text)
    k = len(want)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    hits = np.array([i for i, n in enumerate(names) if _parts(str(n))[-k:] == want], dtype=np.int64)
    documents = distinct(ids[hits]) if hits.size else hits
    if documents.size > 1:
        first = {int(d): str(names[hits[np.flatnonzero(ids[hits] == d)[0]]]) for d in documents[:5]}
        shown = ", ".join(f"{n} (document {d})" for d, n in first.items())
        more = ", …" if documents.size > 5 else ""
        raise InputError(f"document {text!r} is ambiguous: {documents.size:,} documents end with that path "
                         f"({shown}{more}); give a longer path or the document id")
    return hits


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def partial_row_tokens(arrays: dict[str, npt.NDArray[Any]], rows: RowFacts) -> Int64Array:
    """Per occurrence: source tokens placed in the incomplete last row (never trained). O(occurrences).

    ``arrays`` is :meth:`Ledger.arrays() <packing_theory.audit.Ledger.arrays>`;
    an inserted BOS counts only when the ledger counts it as an added marker.
    """
    out = np.zeros(arrays["length"].size, np.int64)
    pp = rows.partial_placements
    if pp.size:
        occ = pp[:, 0]
        if occ.max() >= out.size:
            raise InputError(f"a partial-row placement names occurrence {int(occ.max())}, "
                             "which never arrived")
        added = (pp[:, 2] > 0) & (arrays["added_bos"][occ] > 0)
        np.add.at(out, occ, pp[:, 1] - added)
    return out


def document_table(ledger: Ledger, rows: RowFacts, lengths: npt.ArrayLike, *, passes: int | None = None,
                   names: Sequence[str] | None = None) -> DocumentTable:
    """The per-document table of a finished ``ledger`` whose packer was offered ``lengths``, ``passes`` times.

    ``rows`` comes from a :class:`DocumentRows` fed the same stream.
    ``passes`` defaults to the passes the stream reached (at least 1): a
    streaming packer's ``passes``; a peer's epochs as far as they arrived.
    ``names`` (one per document of ``lengths``) fills the ``name`` column.

    Raises:
        InputError: a ledger without its Horizon, ``names`` of the wrong
            length, or an arrival that is not a document of ``lengths``.

    Complexity: O(offered documents) numpy work and memory.
    """
    if not ledger.finished:
        raise InputError("document_table needs a ledger fed the whole stream (its Horizon event)")
    arr = validate_lengths(np.asarray(lengths))
    n = int(arr.size)
    a = ledger.arrays()
    arrived = a["arrived"]
    occ = np.flatnonzero(arrived)
    src, pas = a["source"][occ], a["pass_index"][occ]
    if occ.size and (src.min() < 0 or src.max() >= n):
        raise InputError(f"an arrival names source {int(src.max())}, not a document of the {n:,} offered")
    reached_passes = int(pas.max()) + 1 if occ.size else 1
    P = reached_passes if passes is None else max(int(passes), reached_passes)
    if names is not None and len(names) != n:
        raise InputError(f"names has {len(names):,} entries for {n:,} documents")
    total = n * P
    key = pas * n + src
    if distinct(key).size != key.size:
        raise InputError("two arrivals are the same document in the same pass")
    occurrence = np.full(total, -1, np.int64)
    occurrence[key] = occ
    reached = occurrence >= 0
    length = np.tile(arr, P)
    where = np.where(reached, occurrence, 0)

    def take(col: str) -> npt.NDArray[Any]:
        values = a[col]
        if values.size == 0:  # nothing arrived
            return np.zeros(total, values.dtype)
        return np.where(reached, values[where], np.zeros(1, values.dtype))

    protected = np.zeros(total, np.bool_)
    prot = ledger.protected_occurrences()
    if prot.size:
        mark = np.zeros(arrived.size, np.bool_)
        mark[prot] = True
        protected = reached & mark[where]
    R = ledger.capacity
    firsts = np.full(max(arrived.size, 1), -1, np.int64)
    firsts[: min(arrived.size, rows.first_row.size)] = rows.first_row[: arrived.size]
    first_row = np.where(reached, firsts[where], -1).astype(np.int64)
    started = reached & take("started")
    partial = np.where(reached, partial_row_tokens(a, rows)[where], 0) if a["length"].size \
        else np.zeros(total, np.int64)
    emitted, discarded = take("emitted") - partial, take("discarded")
    filtered, buffered = take("filtered"), take("buffered")
    never_reached = np.where(reached, 0, length).astype(np.int64)
    fate = np.full(total, "never reached", dtype=object)
    fate[reached & ~started] = "never started"
    fate[started] = "partly trained"
    fate[started & (emitted == length)] = "trained"
    labels = np.array(stratum_labels(ledger.boundaries), dtype=object)
    name_col = (np.tile(np.asarray(list(names), dtype=object), P) if names is not None
                else np.full(total, "", dtype=object))
    cols: dict[str, npt.NDArray[Any]] = {
        "document": np.tile(np.arange(n, dtype=np.int64), P),
        "pass": np.repeat(np.arange(P, dtype=np.int64), n),
        "occurrence": occurrence,
        "name": name_col,
        "length": length,
        "stratum": labels[_strata(length, ledger.boundaries)],
        "started": started,
        "first_row": first_row,
        "emitted": emitted,
        "partial_row": partial.astype(np.int64),
        "discarded": discarded,
        "filtered": filtered,
        "buffered": buffered,
        "never_reached": never_reached,
        "protected": protected,
        "fate": fate,
    }
    return DocumentTable(ledger.policy, R, cols)


def _strata(length: Int64Array, boundaries: tuple[int, ...]) -> Int64Array:
    from .strata import stratum_index

    return stratum_index(length, boundaries)


def document_names(paths: Sequence[str], per_file: Sequence[int]) -> list[str]:
    """One name per document: the file's path, ``path#k`` for the k-th of several documents of one file.

    >>> document_names(["a.txt", "b.jsonl"], [1, 2])
    ['a.txt', 'b.jsonl#0', 'b.jsonl#1']
    """
    if len(paths) != len(per_file):
        raise InputError(f"document_names got {len(paths)} paths for {len(per_file)} counts")
    out: list[str] = []
    for path, k in zip(paths, per_file, strict=True):
        out += [str(path)] if k == 1 else [f"{path}#{i}" for i in range(k)]
    return out


def census_names(path: str | os.PathLike[str], documents: int) -> list[str] | None:
    """The document names of a ``packing-theory census`` report (its ``census.json``), or ``None``.

    ``None`` when the file is missing, is not a census, or counts another number
    of documents than ``documents`` (the lengths it is meant to name). Names are
    :func:`document_names` of the census inputs in their order.
    """
    import json

    p = Path(path)
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        shards = doc["shards"]
        paths = [str(s["path"]) for s in shards]
        counts = [int(s["n_docs"]) for s in shards]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if sum(counts) != documents:
        return None
    return document_names(paths, counts)


def _csv_value(v: Any) -> Any:
    return "true" if v is True else "false" if v is False else csv_cell(v)


def _csv_chunks(tables: Sequence[DocumentTable], run_id: str | None) -> Iterator[str]:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*DOCUMENT_COLUMNS, *(["run"] if run_id else [])])
    yield buf.getvalue()
    tail = [run_id] if run_id else []
    for t in tables:
        for lo in range(0, len(t), _CHUNK):
            hi = min(lo + _CHUNK, len(t))
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            cols = [t.column(c)[lo:hi].tolist() for c in DOCUMENT_COLUMNS]
            for r in zip(*cols, strict=True):  # a name is never a formula (reporting.markdown.csv_cell)
                w.writerow([_csv_value(v) for v in r] + tail)
            yield buf.getvalue()


def write_documents(path: str | os.PathLike[str], tables: Sequence[DocumentTable], *,
                    run_id: str | None = None) -> Path:
    """Write ``tables`` (one per packer, stacked) to ``path``: CSV, or Parquet when it ends ``.parquet``.

    Written in chunks of 65,536 rows (memory O(chunk) beyond the tables).
    ``run_id`` (a report's run) is a last column ``run`` on every row, in both
    formats (and the Parquet file's ``run`` metadata), so that a row read on its
    own, or the report's check, ties the file to its run.

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
        pa = import_optional("pyarrow", extra="parquet", purpose="a Parquet documents file")
        pq = import_optional("pyarrow.parquet", extra="parquet", purpose="a Parquet documents file")
        fields = [(c, pa.string() if c in ("packer", "name", "stratum", "fate") else
                   pa.bool_() if c in ("started", "protected") else pa.int64()) for c in DOCUMENT_COLUMNS]
        schema = pa.schema([*fields, *([("run", pa.string())] if run_id else [])],
                           metadata={"run": run_id or ""})
        with pq.ParquetWriter(str(out), schema) as w:
            for t in tables:
                for lo in range(0, len(t), _CHUNK):
                    hi = min(lo + _CHUNK, len(t))
                    cols: dict[str, Any] = {c: t.column(c)[lo:hi].tolist() for c in DOCUMENT_COLUMNS}
                    if run_id:
                        cols["run"] = [run_id] * (hi - lo)
                    w.write_table(pa.table(cols, schema=schema))
        return out
    raise InputError(f"--documents must end in .csv or .parquet, got {os.fspath(path)!r}")
