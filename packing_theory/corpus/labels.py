"""Data-source labels on every document: which component ``s`` of the mixture (seed 004) each document is.

A *document* is one text of the corpus; a *data source* is a component of
the declared mixture (seed 002's 15 sources: ``fineweb-edu``,
``finepdfs-edu``, ...). :class:`SourceLabels` holds, for the documents of a
corpus in their document order, the index of each document's source in a
tuple of names. Labels come from wherever they are known:

======================  ===========================================================
origin                  function
======================  ===========================================================
a labels file           :func:`labels_from_file` (one label per line, or a JSON list)
a seed-002 manifest     :func:`labels_from_manifest` (the source of single-source shards)
a census                :func:`labels_from_census` (the directory or file of each input of
                        ``packing-theory census``)
a dataset column        :func:`labels_from_column` (parquet files, Arrow files, a saved
                        Hugging Face dataset)
the file or directory   :func:`labels_from_paths` (``file``: the file a document came
                        from; ``dir``: its directory)
======================  ===========================================================

Every loader takes the corpus's document count and refuses another length
with an :class:`~packing_theory.InputError` naming the origin and both
lengths.

>>> labels = SourceLabels.from_strings(["web", "code", "web"], origin="example")
>>> labels.names, labels.codes.tolist(), labels.documents_per_source()
(('code', 'web'), [1, 0, 1], {'code': 1, 'web': 2})
>>> labels.check_documents(4)
Traceback (most recent call last):
packing_theory.InputError: source labels from example: 3 labels for 4 documents
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._files import DECLARATION_LIMIT, load_json, read_bounded, read_lines
from .._unique import distinct
from ..errors import InputError, InputTypeError, import_optional

__all__ = [
    "MAX_LABEL",
    "SOURCE_FROM",
    "SourceLabels",
    "labels_from_census",
    "labels_from_column",
    "labels_from_file",
    "labels_from_manifest",
    "labels_from_paths",
]

MAX_LABEL = 4096
"""The longest source label read from a labels file (characters)."""

SOURCE_FROM = ("dir", "file")
"""The choices of ``--source-from``: a document's source is its directory, or its file."""

Int32Array = npt.NDArray[np.int32]


@dataclass(frozen=True, eq=False)
class SourceLabels:
    """Per document (in document order) the index of its data source in ``names``.

    ``names`` are the distinct source names, sorted; ``codes[i]`` is document
    ``i``'s source (``names[codes[i]]``); ``origin`` says where the labels were
    read (it names the file in every error). Memory: 4 bytes per document.
    """

    names: tuple[str, ...]
    codes: Int32Array
    origin: str

    @classmethod
    def from_strings(cls, labels: Iterable[object], *, origin: str) -> SourceLabels:
        """Labels from one string per document. O(n log k) for ``k`` distinct sources.

        Raises:
            InputError: an empty label (naming its document).
        """
        values = [str(v) for v in labels]
        for i, v in enumerate(values):
            if not v.strip():
                raise InputError(f"source labels from {origin}: document {i} has an empty label")
        names, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
        return cls(tuple(str(n) for n in names), codes.astype(np.int32).ravel(), origin)

    @classmethod
    def from_codes(cls, names: Sequence[str], codes: npt.ArrayLike, *, origin: str) -> SourceLabels:
        """Labels from ``(names, codes)`` (a reader's ``sources()``), re-sorted by name. O(n)."""
        arr = np.asarray(codes)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise InputTypeError(f"source labels from {origin}: codes must be a 1-D integer array")
        if arr.size and (arr.min() < 0 or arr.max() >= len(names)):
            raise InputError(f"source labels from {origin}: a code outside 0..{len(names) - 1}")
        uniq = sorted(set(str(n) for n in names))
        remap = np.asarray([uniq.index(str(n)) for n in names], dtype=np.int32)
        used = distinct(remap[arr]) if arr.size else np.zeros(0, np.int32)
        kept = tuple(uniq[i] for i in used)
        squeeze = np.full(len(uniq), -1, dtype=np.int32)
        squeeze[used] = np.arange(used.size, dtype=np.int32)
        return cls(kept, squeeze[remap[arr]] if arr.size else np.zeros(0, np.int32), origin)

    def __len__(self) -> int:
        return int(self.codes.size)

    def check_documents(self, documents: int) -> SourceLabels:
        """``self`` when it has one label per document of a corpus of ``documents``; else refuse."""
        if len(self) != documents:
            raise InputError(
                f"source labels from {self.origin}: {len(self)} labels for {documents} documents"
            )
        return self

    def documents_per_source(self) -> dict[str, int]:
        """Documents per source name. O(n)."""
        counts = np.bincount(self.codes, minlength=len(self.names))
        return {n: int(c) for n, c in zip(self.names, counts, strict=True)}

    def subset(self, keep: npt.ArrayLike) -> SourceLabels:
        """The labels of the documents where ``keep`` is true (same ``names``). O(n)."""
        mask = np.asarray(keep, dtype=np.bool_)
        if mask.shape != self.codes.shape:
            raise InputError(
                f"source labels from {self.origin}: a keep mask of {mask.size} entries for "
                f"{len(self)} documents"
            )
        return SourceLabels(self.names, self.codes[mask], self.origin)

    def _check(self) -> None:
        """Assert the invariants: sorted distinct names, codes in range."""
        assert list(self.names) == sorted(set(self.names)), "names must be sorted and distinct"
        assert self.codes.ndim == 1 and self.codes.dtype == np.int32
        if self.codes.size:
            assert int(self.codes.min()) >= 0 and int(self.codes.max()) < len(self.names)


def labels_from_file(path: str | os.PathLike[str], *, documents: int | None = None) -> SourceLabels:
    """A labels file: one label per line (``.txt``, any name) or a JSON list of strings (``.json``).

    Lines are stripped of their line ending and surrounding spaces; a blank
    line is an error (every document has a source) unless only blank lines
    follow it (the end of the file). The file must be a regular file (a FIFO or
    a device is refused before reading); a label is at most :data:`MAX_LABEL`
    characters, and with ``documents`` a file holding more labels is refused as
    soon as the extra label is read. O(n).

    Raises:
        FileNotFoundError: no such file.
        InputError: a blank label, bad JSON, or (with ``documents``) another count of labels, naming
            the file and both lengths.
    """
    name = os.fspath(path)
    origin = f"labels file {name!r}"
    if name.endswith(".json"):
        limit = max(DECLARATION_LIMIT, MAX_LABEL * (documents or 0))
        values = load_json(read_bounded(name, "labels file", limit), origin)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InputError(f"{origin} must hold a JSON list of strings (one label per document)")
    else:
        values = []
        blank = 0  # the first blank line not yet followed by a label (blank lines may only end the file)
        for number, line in read_lines(name, "labels file", max_line=MAX_LABEL):
            value = line.strip()
            if not value:
                blank = blank or number
                continue
            if blank:
                raise InputError(f"{origin}: line {blank} is blank; give one label per document")
            if documents is not None and len(values) == documents:  # refused as soon as it is read
                raise InputError(f"{origin} has more than {documents:,} labels, one per document")
            values.append(value)
    labels = SourceLabels.from_strings(values, origin=origin)
    return labels if documents is None else labels.check_documents(documents)


def labels_from_manifest(
    manifest: Mapping[str, Any], *, origin: str = "the manifest", documents: int | None = None
) -> SourceLabels:
    """A seed-002 manifest's sources: every document of a single-source shard gets that source.

    A manifest records documents per source per shard (``source_counts``), not
    their order inside a shard; a shard holding several sources (or none
    recorded) cannot label its documents, and is refused (give a labels file).
    Seed 002's staged shards hold one source each. O(shards + documents).

    >>> m = {"shards": [{"path": "a.bin", "n_docs": 2, "source_counts": {"web": 2}},
    ...                 {"path": "b.bin", "n_docs": 1, "source_counts": {"code": 1}}]}
    >>> labels_from_manifest(m).codes.tolist()
    [1, 1, 0]
    """
    names: list[str] = []
    counts: list[int] = []
    for i, shard in enumerate(manifest.get("shards") or []):
        present = sorted(k for k, v in (shard.get("source_counts") or {}).items() if v)
        n = int(shard.get("n_docs", 0))
        if n == 0:
            continue
        if len(present) != 1:
            what = "records no source_counts" if not present else f"holds {len(present)} sources {present}"
            raise InputError(
                f"{origin}: shard {i} ({shard.get('path')!r}) {what}; a manifest labels only "
                "the documents of single-source shards: give a labels file instead"
            )
        names.append(present[0])
        counts.append(n)
    codes = np.repeat(np.arange(len(names), dtype=np.int32), np.asarray(counts, dtype=np.int64))
    labels = SourceLabels.from_codes(names, codes, origin=origin)
    return labels if documents is None else labels.check_documents(documents)


def labels_from_census(census: Mapping[str, Any], source_from: str = "dir", *, origin: str = "the census",
                       documents: int | None = None) -> SourceLabels:
    """A census's inputs (``census.json``: ``shards``, one entry per input in document order) as labels.

    Each document's source is the directory (``dir``) or the file (``file``)
    of the input it was counted from (:func:`labels_from_paths`); the
    census's ``lengths.npy`` has the same document order. O(inputs + documents).

    >>> c = {"shards": [{"path": "web/a.txt", "n_docs": 2}, {"path": "code/b.txt", "n_docs": 1}]}
    >>> labels_from_census(c).codes.tolist()
    [1, 1, 0]
    """
    entries = census.get("shards")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{origin} lists no inputs ('shards')")
    paths = [str(e["path"]) for e in entries]
    counts = np.asarray([int(e["n_docs"]) for e in entries], dtype=np.int64)
    codes = np.repeat(np.arange(len(paths), dtype=np.int32), counts)
    labels = labels_from_paths(paths, codes, source_from)
    labels = SourceLabels(labels.names, labels.codes, f"{origin} (--source-from {source_from})")
    return labels if documents is None else labels.check_documents(documents)


def labels_from_paths(
    paths: Sequence[str], codes: npt.ArrayLike, source_from: str, *, documents: int | None = None
) -> SourceLabels:
    """A reader's ``(paths, codes)`` (document ``i`` read from ``paths[codes[i]]``) as source labels.

    ``source_from="file"``: the source is the file, named relative to the
    inputs' common directory; ``"dir"``: the directory holding the file,
    relative to the same root (a file at the root: the root directory's own
    name, so one file's source is its folder, not ``.``). O(n).

    >>> labels_from_paths(["d/web/a.jsonl", "d/web/b.jsonl", "d/code/c.jsonl"], [0, 1, 2], "dir").names
    ('code', 'web')
    >>> labels_from_paths(["d/web/a.jsonl"], [0], "dir").names
    ('web',)
    >>> labels_from_paths(["d/a", "d/w/b"], [0, 1], "dir").names
    ('d', 'w')
    """
    if source_from not in SOURCE_FROM:
        raise InputError(f"--source-from must be one of {', '.join(SOURCE_FROM)}, got {source_from!r}")
    if not paths:
        raise InputError("source labels from paths: no input paths")
    full = [os.path.abspath(p) for p in paths]
    root = os.path.dirname(full[0]) if len(full) == 1 else os.path.commonpath(full)
    if len(full) > 1 and root in full:
        root = os.path.dirname(root)
    rel = [os.path.relpath(p, root) for p in full]
    at_root = os.path.basename(root) or root  # the filesystem root has no name of its own
    names = rel if source_from == "file" else [os.path.dirname(r) or at_root for r in rel]
    labels = SourceLabels.from_codes(names, codes, origin=f"--source-from {source_from}")
    return labels if documents is None else labels.check_documents(documents)


def labels_from_column(
    paths: Sequence[str] | str, column: str, *, split: str | None = None, documents: int | None = None
) -> SourceLabels:
    """The values of ``column`` in parquet files, Arrow stream files or a saved Hugging Face dataset.

    ``paths``: ``.parquet`` files, ``.arrow`` files, or one ``save_to_disk``
    directory (``split`` for a ``DatasetDict``), read in order; every row is
    one document. Values are turned into strings; a null is an error.
    O(rows); memory: the column.

    Raises:
        MissingDependency: pyarrow is not installed.
        InputError: an unknown column (listing the columns), a null value, or (with ``documents``)
            another count of rows.
    """
    from .readers.hf import hf_data_files, stream_batches, stream_schema
    from .text import _open_column, _pyarrow_parquet, _read_row_group

    import_optional("pyarrow", extra="parquet", purpose="source labels from a dataset column")
    files = [paths] if isinstance(paths, str) else list(paths)
    if len(files) == 1 and os.path.isdir(files[0]):
        _, files = hf_data_files(files[0], split)
    values: list[str] = []
    for name in files:
        if name.endswith(".parquet"):
            pf = _open_column(_pyarrow_parquet(), name, column)
            for group in range(pf.num_row_groups):
                values.extend(_strings(_read_row_group(pf, name, group, column).column(column), name, column))
        else:
            schema_names = list(stream_schema(name).names)
            if column not in schema_names:
                raise InputError(f"{name!r} has no column {column!r}; columns: {schema_names}")
            for batch in stream_batches(name, column):
                values.extend(_strings(batch.column(column), name, column))
    where = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more"
    labels = SourceLabels.from_strings(values, origin=f"column {column!r} of {where!r}")
    return labels if documents is None else labels.check_documents(documents)


def _strings(col: Any, name: str, column: str) -> list[str]:
    if col.null_count:
        raise InputError(
            f"{name!r}: column {column!r} has {col.null_count} null value(s); every document needs a source"
        )
    return [str(v) for v in col.to_pylist()]
