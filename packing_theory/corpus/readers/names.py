"""A document's own name: one rule for every reader of records (JSON Lines, parquet, saved datasets).

A record names itself by the first of :data:`NAME_COLUMNS` its file has (a
JSON Lines field, a parquet or Arrow column): ``id``, else ``name``. The
value is the name when it is a non-empty string, or a number (written as
text: ``17``, ``2.5``). A record without one — the file has neither column,
or this record's value is missing, ``null``, empty, a boolean, a list or an
object — is named by where it is: :func:`file_document_name`, ``FILE#k``
for the ``k``-th record (from 0) of a file of several, ``FILE`` for the only
document of a file. So a file where most records carry an ``id`` and one
does not names that one ``FILE#k``, never an empty name.

The file is the one the reader reads: a saved Hugging Face dataset's rows
are named by their Arrow file (``DIR/data-00001-of-00002.arrow#3``), an MDS
dataset's samples by their shard (``DIR/shard.00004.mds#0``), a Megatron
dataset's documents by its prefix, never by the directory and a position
across it. :func:`reader_names` is the one place that picks a reader's names
(its own, else by file); the per-document table, ``explain`` and
``contamination`` all take them from it, so every command gives a document
the same name.

Names are not checked for uniqueness here: two records with the same ``id``
share a name, and a lookup by that name is ambiguous
(:meth:`~packing_theory.audit.DocumentTable.find` refuses it and asks for the
document's index).

>>> record_name("books-00481"), record_name(17), record_name(None), record_name(""), record_name(True)
('books-00481', '17', None, None, None)
>>> names = RecordNames(["a.jsonl", "b.jsonl"])
>>> names.add("x-0"); names.add(None); names.end_file(); names.add(None); names.end_file()
>>> names.take(np.array([0, 1, 2]))
['x-0', 'a.jsonl#1', 'b.jsonl']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InputError

__all__ = ["NAME_COLUMNS", "FileColumnNames", "FileNames", "RecordNames", "file_document_name",
           "parquet_names", "reader_names", "record_name"]

NAME_COLUMNS: tuple[str, ...] = ("id", "name")
"""The fields / columns a record names itself by, first found first (every reader and ``contamination``)."""

Int64Array = npt.NDArray[np.int64]


def record_name(value: Any) -> str | None:
    """A record's own name from its name field's ``value``: a non-empty string as it is, a finite number
    as text; ``None`` for anything else (the record is then named by its file)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return None
    return str(value.item() if isinstance(value, (np.integer, np.floating)) else value)


def file_document_name(path: str, count: int, k: int) -> str:
    """The name of document ``k`` (from 0) of a file holding ``count`` documents, by place: the file's path
    for its only document, else ``path#k``.

    >>> file_document_name("a.txt", 1, 0), file_document_name("b.jsonl", 3, 2)
    ('a.txt', 'b.jsonl#2')
    """
    return path if count == 1 else f"{path}#{k}"


class RecordNames:
    """The records' own names of one or more files, collected while they are read, held compactly: the
    names' UTF-8 bytes in one buffer with ``int64`` offsets (a record without a name has an empty span and
    is named by :func:`file_document_name`). Memory: the names' bytes plus 8 bytes per record.

    Fill with :meth:`add` per record and :meth:`end_file` after each file, in the order of ``paths``.
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = [str(p) for p in paths]
        self._buffer = bytearray()
        self._offsets: list[int] | Int64Array = [0]
        self._ends: list[int] = []  # records before the end of each file read
        self.named = 0
        """Records that carry their own name."""

    def add(self, name: str | None) -> None:
        """Record the next record's own name (``None``: it has none)."""
        if name:
            self._buffer += name.encode("utf-8")
            self.named += 1
        assert isinstance(self._offsets, list), "names are added before they are read"
        self._offsets.append(len(self._buffer))

    def end_file(self) -> None:
        """The current file is read to its end."""
        if len(self._ends) >= len(self.paths):
            raise InputError(f"RecordNames of {len(self.paths)} files got the end of file "
                             f"{len(self._ends) + 1}")
        self._ends.append(len(self._offsets) - 1)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def arrays(self) -> tuple[bytes, Int64Array]:
        """The names' UTF-8 bytes and their ``int64`` offsets (``len + 1``; an empty span: no own name), to
        store them (a census part) and give them back with :meth:`stored`."""
        return bytes(self._buffer), self._frozen().copy()

    @classmethod
    def stored(cls, paths: Sequence[str], per_file: Sequence[int], buffer: Any, offsets: Int64Array,
               named: int) -> RecordNames:
        """Names kept elsewhere (:meth:`arrays` written to disk): ``buffer`` anything whose slices are
        ``bytes`` (an ``mmap.mmap`` of the names' file: read lazily), ``offsets`` one more than the
        documents of ``per_file`` (a memory-mapped array). Unchecked beyond the sizes (see :meth:`_check`)."""
        if len(paths) != len(per_file) or len(offsets) != sum(per_file) + 1:
            raise InputError(f"stored names of {len(paths)} files, {sum(per_file):,} records: got "
                             f"{len(per_file)} counts and {len(offsets):,} offsets")
        names = cls(paths)
        names._buffer, names._offsets, names.named = buffer, offsets, named
        names._ends = np.cumsum(np.asarray(per_file, np.int64)).tolist()
        return names

    def _frozen(self) -> Int64Array:
        if isinstance(self._offsets, list):
            if len(self._ends) != len(self.paths):
                raise InputError(f"RecordNames read after {len(self._ends)} of {len(self.paths)} files")
            self._offsets = np.asarray(self._offsets, np.int64)
        return self._offsets

    def __getitem__(self, i: int) -> str:
        """The name of record ``i``."""
        return self.take(np.asarray([i], np.int64))[0]

    def take(self, ids: Int64Array) -> list[str]:
        """The names of records ``ids`` (any order). O(ids + their names' bytes)."""
        offsets = self._frozen()
        ids = np.asarray(ids, np.int64)
        n = len(self)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
            raise InputError(f"record ids must be in [0, {n}), got {int(ids.min())}..{int(ids.max())}")
        ends = np.asarray(self._ends, np.int64)
        files = np.searchsorted(ends, ids, side="right")
        out = []
        buf = self._buffer
        for i, f in zip(ids.tolist(), files.tolist(), strict=True):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            if hi > lo:
                out.append(buf[lo:hi].decode("utf-8"))
            else:
                start = int(ends[f - 1]) if f else 0
                out.append(file_document_name(self.paths[f], int(ends[f]) - start, i - start))
        return out

    def _check(self) -> None:
        """Assert the invariants: offsets increase from 0 to the buffer's size; files end in order."""
        offsets = np.asarray(self._offsets, np.int64)
        assert offsets[0] == 0 and offsets[-1] == len(self._buffer)
        assert bool(np.all(np.diff(offsets) >= 0))
        assert self._ends == sorted(self._ends) and len(self._ends) <= len(self.paths)
        assert 0 <= self.named <= len(self)


class FileColumnNames:
    """Names read on request from a name column of each file (a parquet file, an Arrow file of a saved
    dataset): :meth:`take` reads the column of the files holding the rows asked for (the last file read
    is kept), each value through :func:`record_name`, a row without one named by
    :func:`file_document_name`. Memory O(rows of one file).

    Args:
        paths: the files, in order.
        per_file: rows per file.
        read: ``read(f)`` -> the name column's values of file ``f`` (one per row), or ``None`` when that
            file has no name column.
    """

    def __init__(self, paths: Sequence[str], per_file: Sequence[int],
                 read: Callable[[int], Sequence[Any] | None]) -> None:
        if len(paths) != len(per_file):
            raise InputError(f"FileColumnNames got {len(paths)} paths for {len(per_file)} counts")
        self.paths = [str(p) for p in paths]
        self.counts = np.asarray(per_file, np.int64)
        self._ends = np.cumsum(self.counts)
        self._read = read
        self._cached: tuple[int, Sequence[Any] | None] | None = None

    def __len__(self) -> int:
        return int(self._ends[-1]) if self._ends.size else 0

    def _file(self, f: int) -> Sequence[Any] | None:
        if self._cached is None or self._cached[0] != f:
            values = self._read(f)
            if values is not None and len(values) != int(self.counts[f]):
                raise InputError(f"file {self.paths[f]!r} holds {len(values):,} names for "
                                 f"{int(self.counts[f]):,} rows: it changed since it was read")
            self._cached = (f, values)
        return self._cached[1]

    def __getitem__(self, i: int) -> str:
        """The name of row ``i``."""
        return self.take(np.asarray([i], np.int64))[0]

    def take(self, ids: Int64Array) -> list[str]:
        """The names of rows ``ids`` (any order). O(ids log ids + rows of the files they are in)."""
        ids = np.asarray(ids, np.int64)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= len(self)):
            raise InputError(f"row ids must be in [0, {len(self)}), got {int(ids.min())}..{int(ids.max())}")
        files = np.searchsorted(self._ends, ids, side="right")
        out = [""] * int(ids.size)
        order = np.argsort(files, kind="stable")  # grouped by file: O(ids log ids), not O(ids * files)
        for at in np.split(order, np.flatnonzero(np.diff(files[order])) + 1) if ids.size else []:
            f = int(files[at[0]])
            start = int(self._ends[f - 1]) if f else 0
            values = self._file(f)
            count = int(self.counts[f])
            for k, i in zip(at.tolist(), (ids[at] - start).tolist(), strict=True):
                own = None if values is None else record_name(values[i])
                out[k] = own if own is not None else file_document_name(self.paths[f], count, i)
        return out


class FileNames(FileColumnNames):
    """Names of documents read from files, by place only: the file's path, ``path#k`` for the k-th of
    several in one file (:func:`file_document_name`). O(files) memory.

    >>> FileNames(["a.txt", "b.jsonl"], [1, 2]).take(np.array([2, 0]))
    ['b.jsonl#1', 'a.txt']
    """

    def __init__(self, paths: Sequence[str], per_file: Sequence[int]) -> None:
        if len(paths) != len(per_file):
            raise InputError(f"FileNames got {len(paths)} paths for {len(per_file)} counts")
        super().__init__(paths, per_file, _no_column)


def _no_column(f: int) -> None:
    return None


def reader_names(reader: Any) -> Any:
    """The names of a reader's documents, the one rule every command uses: the records' own names
    when the reader has them (``reader.names()``, which names a record without one by its file), else
    every document by its file and its place in it (:class:`FileNames` over ``reader.sources()``, which
    by default gives each document's file). ``None`` when neither covers the documents (sources that
    are not files in order). The caller checks that the names cover its documents (``len``): this
    asks the reader for no lengths, so a text dataset is not tokenized for its names.

    Returns:
        an object with ``len`` and ``take(ids) -> list[str]`` (a
        :class:`~packing_theory.audit.identity.NameSource`), or ``None``.
    """
    own = getattr(reader, "names", None)
    if callable(own):
        found = own()
        if found is not None:
            return found
    files, codes = reader.sources()
    codes = np.asarray(codes)
    if not codes.size or not bool(np.all(np.diff(codes) >= 0)):
        return None
    return FileNames(list(files), np.bincount(codes, minlength=len(files)).tolist())


def parquet_names(paths: Sequence[str], per_file: Sequence[int]) -> FileColumnNames | None:
    """The rows' own names of parquet files (the first of :data:`NAME_COLUMNS` each file has, read lazily
    from its footer's schema and, on request, that one column); ``None`` when no file has one. Needs
    ``pyarrow``."""
    from ...errors import import_optional

    pq = import_optional("pyarrow.parquet", extra="parquet", purpose="reading parquet")
    columns = []
    for path in paths:
        schema = list(pq.ParquetFile(path).schema_arrow.names)
        columns.append(next((c for c in NAME_COLUMNS if c in schema), None))
    if all(c is None for c in columns):
        return None

    def read(f: int) -> list[Any] | None:
        column = columns[f]
        if column is None:
            return None
        try:
            values: list[Any] = pq.ParquetFile(paths[f]).read(columns=[column]).column(column).to_pylist()
        except (OSError, ValueError) as exc:  # ArrowIOError / ArrowInvalid
            raise InputError(f"parquet file {paths[f]!r}: its name column {column!r} cannot be read: "
                             f"{' '.join(str(exc).split())[:200]}") from exc
        return values

    return FileColumnNames(paths, per_file, read)
