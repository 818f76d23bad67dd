"""Per-document answers: one row per document offered to a packer, and what happened to it at the horizon.

:func:`document_table` turns a finished :class:`~packing_theory.audit.Ledger`
and the :class:`~packing_theory.audit.rows.RowFacts` of the same stream into a
:class:`DocumentTable`: one row per document *offered* — every document of the
corpus in every pass the packer was given — whether it arrived or not, and,
given a :class:`~packing_theory.audit.identity.DocumentIdentity` with a
cleaning funnel, one row per raw document the funnel removed. Each row's
tokens reconcile exactly::

    length == emitted + partial_row + discarded + filtered + removed + buffered + never_reached

(source tokens; added BOS markers are not a document's tokens). ``emitted``
counts tokens in complete rows only; ``partial_row`` counts those placed in
the incomplete last row of a stream that ran dry, which is never delivered and
so never trained. ``fate`` says it in a few words: ``trained`` (every token in
complete rows), ``partly trained`` (placed in a complete row — for a packer
that inserts BOS markers possibly only its inserted BOS — the rest dropped,
still buffered or in the partial row), ``never trained (unfinished
row)`` (started, but every token placed is in the partial row: no token
trained), ``never started`` (arrived, no token emitted: still buffered or
filtered), ``never reached`` (the run stopped before it arrived) or ``removed
by <stage>`` (the funnel removed it before packing). The documents with no
token trained — :data:`UNTRAINED_FATES` — are exactly those ``compare`` ranks
by (:attr:`NeverTrained.no_token_trained
<packing_theory.audit.untrained.NeverTrained.no_token_trained>`). A row names
its document by its raw corpus index (``document``), its ``name`` and its data
``source``.

The table holds no per-row state: its rows are computed block by block from
the ledger's columns (in memory or in its store) when read
(:mod:`packing_theory.audit.document_blocks`). :meth:`DocumentTable.row` and
:meth:`DocumentTable.largest_untrained` cost O(1) rows each, whatever the
corpus size; :meth:`DocumentTable.column` builds a whole column (counted in
:attr:`DocumentTable.builds`). :func:`~packing_theory.audit.document_file.write_documents`
writes the table as CSV or Parquet in chunks.

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

import dataclasses
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._unique import distinct
from ..errors import InputError
from ..lengths import validate_lengths
from .document_blocks import COLUMNS, FATES, NEVER_REACHED, NEVER_STARTED, UNFINISHED_ROW, DocumentBlocks
from .document_file import write_documents
from .identity import DocumentIdentity, NameSource, as_names
from .ledger import Ledger
from .rows import DocumentRows, RowFacts

__all__ = [
    "DOCUMENTS_DEFAULT_LIMIT",
    "DOCUMENT_COLUMNS",
    "DOCUMENT_FATES",
    "UNTRAINED_FATES",
    "UNTRAINED_KEPT",
    "DocumentRows",
    "DocumentTable",
    "RowFacts",
    "census_names",
    "document_names",
    "document_table",
    "documents_named",
    "is_document_id",
    "lookup_document",
    "partial_row_by_stratum",
    "partial_row_tokens",
    "write_documents",
]

Int64Array = npt.NDArray[np.int64]

DOCUMENT_COLUMNS: tuple[str, ...] = COLUMNS
"""Columns of the per-document file, in order. ``document`` is the raw corpus index, ``name`` the file path
or dataset name (empty when unknown), ``source`` the data source (empty without labels); ``first_row`` and
``occurrence`` are -1 when none; a document the funnel removed has ``pass`` -1 and its tokens in
``removed``."""

DOCUMENT_FATES: tuple[str, ...] = (*FATES, "removed")
"""The values of the ``fate`` column (a removed document's says ``removed by <stage>``)."""

DOCUMENTS_DEFAULT_LIMIT = 100_000
"""``audit`` writes ``documents.csv`` without being asked when a corpus has at most this many documents."""

UNTRAINED_KEPT = 1000
"""The largest never-started and never-reached documents :func:`document_table` finds while it builds
the table."""

UNTRAINED_FATES: tuple[str, ...] = ("never started", "never reached", "never trained (unfinished row)")
"""The fates of a document with no token trained (:meth:`DocumentTable.largest_untrained`); a row of the
first two holds no token of it, the last means its only tokens placed are in the unfinished row."""

_BLOCK = 1 << 16
_BOOL = ("started", "protected")
_STRINGS = ("packer", "name", "source", "stratum", "fate")


class DocumentTable:
    """One packer's per-document rows (see the module doc); row order: offered (pass, then replay order),
    then the funnel's removed documents.

    Built by :func:`document_table`. :attr:`builds` counts the work done on
    request: ``columns`` (whole columns built) and ``rows`` (rows computed).
    """

    def __init__(self, packer: str, capacity: int, blocks: DocumentBlocks, *,
                 untrained: dict[str, tuple[Int64Array, Int64Array, int]] | None = None) -> None:
        self.packer = packer
        self.capacity = capacity
        self._b = blocks
        self.builds = {"columns": 0, "rows": 0}
        self._untrained = untrained
        self._totals: dict[str, int] = {}

    def __len__(self) -> int:
        return self._b.size

    def name_rows(self, names: NameSource | Sequence[str] | None) -> None:
        """Name the rows by ``names`` over the raw corpus: a table built where the names were not sent
        (a worker process; a dataset's name column is read lazily from its files, here).

        Raises:
            InputError: ``names`` does not cover the raw corpus the table's identity describes.
        """
        ident = self._b.identity
        if names is not None and ident.raw_documents >= 0 and len(names) != ident.raw_documents:
            raise InputError(f"names has {len(names):,} entries for a raw corpus of "
                             f"{ident.raw_documents:,} documents")
        self._b.identity = dataclasses.replace(ident, names=as_names(names))

    @property
    def dictionaries(self) -> dict[str, tuple[str, ...]]:
        """The values the coded string columns of :meth:`coded_blocks` index."""
        return {**self._b.dictionaries, "packer": (self.packer,)}

    def coded_blocks(self, block: int = _BLOCK, *, strings: bool = True
                     ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """``(first row, columns)`` for consecutive blocks: integer and bool columns, ``stratum``, ``fate``
        and ``source`` as codes into :attr:`dictionaries`, ``name`` as str (with ``strings``). O(block)."""
        for a in range(0, len(self), block):
            b = min(len(self), a + block)
            self.builds["rows"] += b - a
            yield a, self._b.block(a, b, strings=strings)

    def _decode(self, c: dict[str, npt.NDArray[Any]], name: str) -> npt.NDArray[Any]:
        if name == "packer" or (name == "name" and name not in c):
            return np.full(c["length"].size, self.packer if name == "packer" else "", dtype=object)
        if name in ("stratum", "fate", "source"):
            return np.asarray(np.asarray(self._b.dictionaries[name], dtype=object)[c[name]])
        return np.asarray(c[name])

    def column(self, name: str) -> npt.NDArray[Any]:
        """One whole column (strings as an object array). O(rows): counted in :attr:`builds`."""
        if name not in DOCUMENT_COLUMNS:
            raise InputError(f"column must be one of {', '.join(DOCUMENT_COLUMNS)}; got {name!r}")
        self.builds["columns"] += 1
        parts = [self._decode(c, name) for _, c in self.coded_blocks(1 << 20, strings=name == "name")]
        if parts:
            return np.concatenate(parts)
        return np.zeros(0, object if name in _STRINGS else np.bool_ if name in _BOOL else np.int64)

    @property
    def columns(self) -> dict[str, npt.NDArray[Any]]:
        """Every column but ``packer``, whole. O(rows x columns)."""
        return {c: self.column(c) for c in DOCUMENT_COLUMNS if c != "packer"}

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as plain Python values. O(1) rows of work, whatever the table's size."""
        if not -len(self) <= i < len(self):
            raise InputError(f"row {i} is outside the table's {len(self):,} rows")
        i %= len(self)
        self.builds["rows"] += 1
        c = self._b.block(i, i + 1)
        return {name: _plain(self._decode(c, name)[0]) for name in DOCUMENT_COLUMNS}

    def total(self, name: str) -> int:
        """The exact sum of an integer column (one pass over blocks, then cached)."""
        if name not in self._totals:
            if name not in DOCUMENT_COLUMNS or name in _STRINGS:
                raise InputError(f"total needs an integer column of {', '.join(DOCUMENT_COLUMNS)}; "
                                 f"got {name!r}")
            self._totals[name] = sum(int(c[name].sum()) for _, c in self.coded_blocks(1 << 20, strings=False))
        return self._totals[name]

    def largest_untrained(self, limit: int, fates: Sequence[str] = UNTRAINED_FATES
                          ) -> tuple[list[dict[str, Any]], int]:
        """The ``limit`` largest documents of ``fates`` (any of :data:`UNTRAINED_FATES`: no token
        trained), largest first (ties by row), as rows; and how many there are. O(limit) rows when
        ``limit`` is at most :data:`UNTRAINED_KEPT` (found while the table was built), else one pass
        over the ledger's flags and the lengths."""
        wanted = tuple(dict.fromkeys(fates))
        if not wanted or any(f not in UNTRAINED_FATES for f in wanted):
            raise InputError(f"fates must be among {', '.join(UNTRAINED_FATES)}; got {list(fates)}")
        tops = self._untrained
        if tops is None or any(tops[f][0].size < min(limit, tops[f][2]) for f in wanted):
            tops = self._untrained = _largest_untrained(self, max(limit, UNTRAINED_KEPT))
        rows = np.concatenate([tops[f][0] for f in wanted])
        lengths = np.concatenate([tops[f][1] for f in wanted])
        order = np.lexsort((rows, -lengths))[:limit]
        return [self.row(int(i)) for i in rows[order]], sum(tops[f][2] for f in wanted)

    def find(self, document: str | int) -> list[int]:
        """Row indices of a document by raw corpus index (``"12"`` or 12) or by name.

        A name matches exactly, else as a whole-component path suffix
        (``dom/__init__.py`` matches ``a/xml/dom/__init__.py``, not
        ``a/xdom/__init__.py``); several documents of that name (two records
        with the same ``id``), or several matching by suffix, are ambiguous,
        never resolved by picking one (:func:`documents_named`). An ``int`` is
        a raw index; a string of ASCII digits is the document named exactly so
        when there is one, else a raw index (:func:`lookup_document`).

        Raises:
            InputError: an empty ``document``, no document has that id or name, or the name is
                ambiguous.

        Complexity: O(log n) for an ``int``; O(N) name comparisons for a string (digits too, when the
        corpus has names).
        """
        b = self._b
        text = str(document).strip()
        if not text:  # an empty name would equal every unnamed document's empty name
            raise InputError(f"document {document!r} is empty: give an id 0..N-1 or a file name the corpus "
                             "knows")
        raw = lookup_document(b.identity.names, int(document) if isinstance(document, int) else text)
        hits: list[int] = []
        for d in raw.tolist():
            pos = b.identity.positions_of(d)
            hits += [p * b.n + int(q) for p in range(b.passes) for q in pos.tolist()]
            at = int(np.searchsorted(b.removed, d))
            if at < b.removed.size and b.removed[at] == d:
                hits.append(b.offered + at)
        if not hits:
            raise InputError(f"document {document!r} is not among the {len(self):,} documents offered "
                             "(give an id 0..N-1 or a file name the corpus knows)")
        return sorted(hits)

    def _check(self) -> None:
        """Every row reconciles: length = emitted + partial row + discarded + filtered + removed + buffered +
        never reached; fates, starts and the protected set agree with the columns. O(rows)."""
        for _, c in self.coded_blocks(_BLOCK, strings=False):
            parts = (c["emitted"] + c["partial_row"] + c["discarded"] + c["filtered"] + c["removed"]
                     + c["buffered"] + c["never_reached"])
            assert np.array_equal(parts, c["length"]), "a document's tokens do not reconcile"
            reached = c["occurrence"] >= 0
            offered = c["pass"] >= 0
            assert np.all(c["never_reached"][reached] == 0)
            assert np.all(c["never_reached"][offered & ~reached] == c["length"][offered & ~reached])
            assert np.all(c["removed"][offered] == 0)
            assert np.all(c["removed"][~offered] == c["length"][~offered])
            assert np.all(c["started"] == (c["first_row"] >= 0))
            assert np.all(~c["started"][~reached]) and np.all(~c["protected"][~reached])
            fate = c["fate"]
            assert np.all((fate == 0) == (c["started"] & (c["emitted"] == c["length"])))
            only_partial = c["started"] & (c["emitted"] == 0) & (c["partial_row"] > 0)
            assert np.all((fate == UNFINISHED_ROW) == only_partial)
            assert np.all((fate == NEVER_STARTED) == (reached & ~c["started"]))
            assert np.all((fate == NEVER_REACHED) == (offered & ~reached))
            assert np.all((fate >= len(FATES)) == ~offered)


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))


def is_document_id(text: str) -> bool:
    """Whether ``text`` names a document by its id: ASCII digits only (``"²"`` is a digit to
    ``str.isdigit`` that ``int`` refuses; ``""`` is no id).

    >>> is_document_id("12"), is_document_id("²"), is_document_id(""), is_document_id("a.txt")
    (True, False, False, False)
    """
    return text.isascii() and text.isdigit()


def lookup_document(names: NameSource | Sequence[str] | None, document: str | int) -> Int64Array:
    """The raw index of the document ``document`` means, one rule for the per-document table and
    ``explain``: an ``int`` is a raw index; a string of ASCII digits is the document whose name is exactly
    that string (a record's ``id`` ``"12345"``) when one is, else a raw index; any other string is a name
    (:func:`documents_named`: exact, else a whole-component path suffix). Empty when no document is named
    so; a raw index is not checked against the corpus's size.

    >>> names = ["a.txt", "7", "b.txt"]
    >>> lookup_document(names, "7").tolist(), lookup_document(names, 7).tolist()
    ([1], [7])
    >>> lookup_document(names, "2").tolist(), lookup_document(names, "b.txt").tolist()
    ([2], [2])
    >>> lookup_document(None, "1").tolist(), lookup_document(None, "a.txt").tolist()
    ([1], [])

    Raises:
        InputError: two documents are named so (:func:`documents_named`).

    Complexity: O(1) for an ``int``; O(N) name comparisons for a string when ``names`` is given.
    """
    if isinstance(document, (int, np.integer)):
        return np.asarray([int(document)], np.int64)
    digits = is_document_id(document)
    named = (np.zeros(0, np.int64) if names is None
             else documents_named(names, document, by_suffix=not digits))
    return np.asarray([int(document)], np.int64) if digits and not named.size else named


def documents_named(names: NameSource | Sequence[str], text: str, *, by_suffix: bool = True) -> Int64Array:
    """The raw index of the one document named ``text``: exactly, else (``by_suffix``) as a whole-component
    path suffix; empty when none is.

    Two documents of the same name (two records with the same ``id``) are
    ambiguous, as are several that end with the same path: refused, never
    resolved by picking one.

    >>> documents_named(["a/x.txt", "b/y.txt"], "y.txt").tolist()
    [1]
    >>> documents_named(["d-1", "d-2", "d-1"], "d-1")
    Traceback (most recent call last):
    packing_theory.InputError: document 'd-1' is ambiguous: 2 documents are named so (documents 0, 2); \
give the document's index instead (explain --index N)

    Raises:
        InputError: the name is ambiguous.

    Complexity: O(N) name comparisons, names read in blocks.
    """
    source = as_names(names)
    assert source is not None
    total = len(source)
    exact: list[int] = []
    suffix: list[tuple[int, str]] = []
    want = _parts(text)
    for lo in range(0, total, _BLOCK):
        ids = np.arange(lo, min(total, lo + _BLOCK), dtype=np.int64)
        for i, n in zip(ids.tolist(), source.take(ids), strict=True):
            if n == text:
                exact.append(i)
            elif by_suffix and want and not exact and _parts(n)[-len(want):] == want:
                suffix.append((i, n))
    if len(exact) > 1:
        shown = ", ".join(str(d) for d in exact[:5]) + (", …" if len(exact) > 5 else "")
        raise InputError(f"document {text!r} is ambiguous: {len(exact):,} documents are named so "
                         f"(documents {shown}); give the document's index instead (explain --index N)")
    if exact:
        return np.asarray(exact, np.int64)
    if len(suffix) > 1:
        shown = ", ".join(f"{n} (document {d})" for d, n in suffix[:5])
        more = ", …" if len(suffix) > 5 else ""
        raise InputError(f"document {text!r} is ambiguous: {len(suffix):,} documents end with that path "
                         f"({shown}{more}); give a longer path or the document id")
    return np.asarray([d for d, _ in suffix], np.int64)


def _largest_untrained(table: DocumentTable, keep: int) -> dict[str, tuple[Int64Array, Int64Array, int]]:
    """Per fate of :data:`UNTRAINED_FATES`: the rows and lengths of its ``keep`` largest documents
    (largest first, ties by row) and its count, in one pass over the ledger's columns and the lengths.
    O(rows) time, O(block + keep) memory."""
    tops = {f: (np.zeros(0, np.int64), np.zeros(0, np.int64), 0) for f in UNTRAINED_FATES}
    codes = (NEVER_STARTED, NEVER_REACHED, UNFINISHED_ROW)
    blocks = table._b
    for a in range(0, blocks.offered, 1 << 20):
        idx_all, ln_all, code = blocks.untrained(a, a + (1 << 20))
        for fate, sel in zip(UNTRAINED_FATES, (code == c for c in codes), strict=True):
            rows, lengths, count = tops[fate]
            idx, ln = idx_all[sel], ln_all[sel]
            count += int(idx.size)
            if rows.size >= keep:  # only a strictly longer document can displace the kept ones
                longer = ln > lengths[-1]
                idx, ln = idx[longer], ln[longer]
            if idx.size:
                rows, lengths = np.concatenate([rows, idx]), np.concatenate([lengths, ln])
                order = np.lexsort((rows, -lengths))[:keep]
                rows, lengths = rows[order], lengths[order]
            tops[fate] = (rows, lengths, count)
    return tops


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


def _partial(ledger: Ledger, rows: RowFacts) -> tuple[Int64Array, Int64Array]:
    """``(occurrences, source tokens)`` in the partial last row, sorted (at most one row's placements)."""
    pp = rows.partial_placements
    if not pp.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    occ = pp[:, 0]
    if occ.max() >= ledger.occurrences or occ.min() < 0:
        raise InputError(f"a partial-row placement names occurrence {int(occ.max())}, which never arrived")
    view = ledger.columns_view()
    ids = distinct(occ)
    added = np.asarray([int(view.range(o, o + 1, ("added_bos",))["added_bos"][0]) for o in ids.tolist()])
    at = np.searchsorted(ids, occ)
    tokens = np.zeros(ids.size, np.int64)
    np.add.at(tokens, at, pp[:, 1] - ((pp[:, 2] > 0) & (added[at] > 0)))
    return ids, tokens


def partial_row_by_stratum(ledger: Ledger, rows: RowFacts, boundaries: Sequence[int]) -> tuple[int, ...]:
    """Source tokens of the unfinished last row per length stratum of ``boundaries`` (the ledger's
    strata). O(one row's placements)."""
    from .strata import stratum_index

    out = np.zeros(len(boundaries) + 1, np.int64)
    ids, tokens = _partial(ledger, rows)
    if ids.size:
        view = ledger.columns_view()
        lengths = np.asarray([int(view.range(o, o + 1, ("length",))["length"][0]) for o in ids.tolist()])
        np.add.at(out, stratum_index(lengths, boundaries), tokens)
    return tuple(int(v) for v in out)


def document_table(ledger: Ledger, rows: RowFacts, lengths: npt.ArrayLike, *, passes: int | None = None,
                   names: Sequence[str] | NameSource | None = None,
                   identity: DocumentIdentity | None = None) -> DocumentTable:
    """The per-document table of a finished ``ledger`` whose packer was offered ``lengths``, ``passes`` times.

    ``rows`` comes from a :class:`DocumentRows` fed the same stream.
    ``passes`` defaults to the passes the stream reached (at least 1): a
    streaming packer's ``passes``; a peer's epochs as far as they arrived.
    ``identity`` names each document offered (its raw corpus index, name and
    source, and the documents a funnel removed); without it a document is its
    position in ``lengths`` and ``names`` (one per document, or a
    :class:`~packing_theory.audit.identity.NameSource`) fills the ``name`` column.

    Raises:
        InputError: a ledger without its Horizon, ``names`` or ``identity`` of the
            wrong size, or an arrival that is not a document of ``lengths``.

    Complexity: one pass over the ledger's columns in blocks (O(offered
    documents) numpy work, O(block) memory); the table holds no per-row state
    unless occurrence ids are not the offered rows.
    """
    if not ledger.finished:
        raise InputError("document_table needs a ledger fed the whole stream (its Horizon event)")
    arr = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
    n = int(arr.size)
    if names is not None and identity is None and len(names) != n:
        raise InputError(f"names has {len(names):,} entries for {n:,} documents")
    ident = (identity or DocumentIdentity.of(n, names=names)).check(n)
    view = ledger.columns_view()
    ordered, top_pass = True, -1
    for a, c in view.blocks(1 << 20, ("arrived", "source", "pass_index")):
        occ = a + np.flatnonzero(c["arrived"])
        src, pas = c["source"][c["arrived"]], c["pass_index"][c["arrived"]]
        if src.size and (src.min() < 0 or src.max() >= n):
            raise InputError(f"an arrival names source {int(src.max())}, not a document of the {n:,} offered")
        if src.size:
            top_pass = max(top_pass, int(pas.max()))
            ordered = ordered and bool(np.array_equal(pas * n + src, occ))
    P = max(top_pass + 1, 1) if passes is None else max(int(passes), top_pass + 1)
    extra: dict[str, Any] = {}
    if not ordered:  # occurrence ids are not the offered rows: the map and the columns in memory
        cols = ledger.arrays()
        occ = np.flatnonzero(cols["arrived"])
        key = cols["pass_index"][occ] * n + cols["source"][occ]
        if distinct(key).size != key.size:
            raise InputError("two arrivals are the same document in the same pass")
        occurrence = np.full(n * P, -1, np.int64)
        occurrence[key] = occ
        extra = {"occurrence": occurrence, "arrays": cols, "first": rows.first_row}
    blocks = DocumentBlocks(view, rows, arr, P, ident, ledger.protected_occurrences(), _partial(ledger, rows),
                            ledger.boundaries, **extra)
    table = DocumentTable(ledger.policy, ledger.capacity, blocks)
    table._untrained = _largest_untrained(table, UNTRAINED_KEPT)
    table.builds["rows"] = 0
    return table


def document_names(paths: Sequence[str], per_file: Sequence[int]) -> list[str]:
    """One name per document: the file's path, ``path#k`` for the k-th of several documents of one file.

    >>> document_names(["a.txt", "b.jsonl"], [1, 2])
    ['a.txt', 'b.jsonl#0', 'b.jsonl#1']
    """
    if len(paths) != len(per_file):
        raise InputError(f"document_names got {len(paths)} paths for {len(per_file)} counts")
    from ..corpus.readers.names import file_document_name

    out: list[str] = []
    for path, k in zip(paths, per_file, strict=True):
        out += [file_document_name(str(path), k, i) for i in range(k)]
    return out


def census_names(path: str | os.PathLike[str], documents: int) -> NameSource | None:
    """The document names of a ``packing-theory census`` report (its ``census.json``), or ``None``.

    ``None`` when the file is missing, is not a census (its ``format``), or counts another number
    of documents than ``documents`` (the lengths it is meant to name). A census
    that kept its records' own names (``census.json``'s ``names`` entry:
    ``doc_names.bin`` and ``doc_name_offsets.npy`` beside it) names each document
    as the ``--data`` readers do: its ``id`` / ``name``, else by place (a
    :class:`~packing_theory.corpus.readers.names.RecordNames` over a memory map:
    only the names asked for are read). A census without that entry (written
    before censuses kept names), or where no record names itself, names every
    document by place: ``FILE``, ``FILE#k`` of its inputs in their order.

    Raises:
        InputError: the names files the census lists are missing or do not fit its documents.
    """
    p = Path(path)
    if not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        shards = doc["shards"]
        paths = [str(s["path"]) for s in shards]
        counts = [int(s["n_docs"]) for s in shards]
        entry = doc.get("names")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if doc.get("format") != "packing-theory/census" or sum(counts) != documents:
        return None
    if isinstance(entry, dict) and entry.get("offsets") is not None:
        return _stored_names(p, entry, paths, counts)
    from .identity import FileNames

    return FileNames(paths, counts)


def _stored_names(census: Path, entry: dict[str, Any], paths: list[str], counts: list[int]) -> NameSource:
    """The records' own names a census stored beside its ``census.json`` (memory-mapped, read lazily)."""
    import mmap

    from .._files import confined
    from ..corpus.readers.names import RecordNames

    where = f"census {str(census)!r}"
    root = str(census.parent)
    names_file = confined(root, entry.get("bytes"), what=f"{where} names.bytes")
    offsets_file = confined(root, entry.get("offsets"), what=f"{where} names.offsets")
    n = sum(counts)
    try:
        offsets = np.load(offsets_file, mmap_mode="r", allow_pickle=False)
        size = os.path.getsize(names_file)
        with open(names_file, "rb") as fh:
            buffer: Any = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}: its names files cannot be read ({type(exc).__name__}: {exc}); rerun "
                         "the census") from exc
    if (offsets.dtype != np.int64 or offsets.shape != (n + 1,) or int(offsets[0]) != 0
            or int(offsets[-1]) != size):
        raise InputError(f"{where}: {offsets_file!r} holds {offsets.dtype} {offsets.shape} offsets over "
                         f"{size:,} bytes of names, expected int64 ({n + 1},) from 0 to {size:,}; rerun the "
                         "census")
    named = entry.get("named")
    return RecordNames.stored(paths, counts, buffer, offsets, named if isinstance(named, int) else 0)
