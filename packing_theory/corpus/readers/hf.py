"""Hugging Face datasets saved to disk (``Dataset.save_to_disk``): Arrow files, read memory-mapped.

A saved dataset is a directory holding ``state.json`` (its Arrow files, in
order, under ``_data_files``), ``dataset_info.json`` and the files
themselves, ``data-NNNNN-of-NNNNN.arrow`` in Arrow's IPC *stream* format; a
saved ``DatasetDict`` is a directory with ``dataset_dict.json`` (its
``splits``) and one such directory per split. This is the layout ``datasets``
has written since 2.x (checked with ``datasets`` 5.2.0, which writes the test
fixtures); the files are read with ``pyarrow`` alone.

* A **tokenized** dataset (a list column, ``input_ids`` by default): the
  lengths are the list lengths, taken from the Arrow list *offsets*
  (``pyarrow.compute.list_value_length``) of each record batch of the
  memory-mapped file, so the ids themselves are never read: memory is one
  batch's offsets plus 8 bytes per document. :meth:`HFDataset.document`
  gives the ids of one row.
* A **text** dataset (a string column): each value through a tokenizer
  (:func:`packing_theory.corpus.lengths_from_texts`), one record batch at a time.

**BOS.** For a token column, ``bos="included"`` takes each row as it is
(the tokenizer that built the column put its BOS, or an EOS, in every row:
Llama-style tokenizers do), ``bos="add"`` adds one per row. For a text
column, ``"auto"`` asks the tokenizer (:func:`packing_theory.corpus.text.detect_bos`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._files import confined, read_json
from ...errors import InputError, InputTypeError, import_optional
from ._base import bos_inclusive, check_bos, file_codes
from .names import NAME_COLUMNS, FileColumnNames

__all__ = ["NAME_COLUMNS", "ColumnNames", "HFDataset", "hf_data_files", "is_hf_dataset", "stream_batches",
           "stream_schema"]


Int64Array = npt.NDArray[np.int64]
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # the Arrow IPC end-of-stream marker


def _pyarrow() -> tuple[Any, Any]:
    pa = import_optional("pyarrow", extra="hf", purpose="reading a Hugging Face dataset")
    pc = import_optional("pyarrow.compute", extra="hf", purpose="reading a Hugging Face dataset")
    return pa, pc


def is_hf_dataset(path: str) -> bool:
    """True for a directory written by ``save_to_disk`` (a ``Dataset`` or a ``DatasetDict``)."""
    return os.path.isdir(path) and any(
        os.path.isfile(os.path.join(path, name)) for name in ("state.json", "dataset_dict.json"))


def hf_data_files(path: str, split: str | None = None) -> tuple[str, list[str]]:
    """``(dataset directory, its Arrow files in order)`` of a saved dataset, a split chosen for a dict.

    Every path read from the dataset's own files (``dataset_dict.json``'s splits,
    ``state.json``'s ``_data_files[].filename``) and the ``split`` asked for must
    stay inside the directory named (:func:`packing_theory._files.confined`).

    Raises:
        InputError: not a saved dataset, a ``DatasetDict`` without ``split``
            (the message lists the splits), an unknown split, a ``state.json`` or
            ``dataset_dict.json`` that is not the JSON ``save_to_disk`` writes, a
            file name leaving the directory, a missing Arrow file.
    """
    name = os.fspath(path)
    if not os.path.isdir(name):
        raise InputError(f"Hugging Face dataset {name!r} is not a directory (save_to_disk writes one)")
    dict_file = os.path.join(name, "dataset_dict.json")
    if os.path.isfile(dict_file):
        doc = read_json(dict_file, "Hugging Face dataset file")
        splits = doc.get("splits") if isinstance(doc, dict) else None
        if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits):
            raise InputError(f"Hugging Face dataset file {dict_file!r} must be an object whose 'splits' is a "
                             "list of names (as save_to_disk writes it)")
        if split is None:
            raise InputError(f"Hugging Face dataset {name!r} is a DatasetDict with splits {splits}: "
                             "choose one (--split NAME)")
        if split not in splits:
            raise InputError(f"Hugging Face dataset {name!r} has no split {split!r}; splits: {splits}")
        name = confined(name, split, what=f"--split of Hugging Face dataset {name!r} (its dataset_dict.json)")
    elif split is not None:
        raise InputError(f"--split {split!r} applies to a DatasetDict; {name!r} is a single Dataset")
    state_file = os.path.join(name, "state.json")
    if not os.path.isfile(state_file):
        raise InputError(f"{name!r} holds no state.json: not a dataset written by save_to_disk")
    state = read_json(state_file, "Hugging Face dataset file")
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"Hugging Face dataset file {state_file!r} must be an object whose '_data_files' is "
                         "a list of {'filename': ...} entries (as save_to_disk writes it)")
    if state.get("_indices_data_files"):
        raise InputError(f"Hugging Face dataset {name!r} carries an indices mapping; save it with "
                         "save_to_disk after flatten_indices() so that the rows are stored in order")
    files = [confined(name, entry.get("filename"), what=f"{state_file!r} _data_files[{i}].filename")
             for i, entry in enumerate(entries)]
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"Hugging Face dataset {name!r}: state.json lists {f!r}, which is "
                                    "missing")
    if not files:
        raise InputError(f"Hugging Face dataset {name!r}: state.json lists no data files")
    return name, files


def stream_schema(path: str) -> Any:
    """The schema of one Arrow stream file (as ``save_to_disk`` writes them).

    Raises:
        InputError: not a readable Arrow stream (naming the file).
    """
    pa, _ = _pyarrow()
    try:
        with pa.memory_map(path) as src:
            return pa.ipc.open_stream(src).schema
    except (pa.ArrowException, OSError) as exc:  # pyarrow reports a short read as a plain OSError
        raise InputError(f"Arrow file {path!r} cannot be read as an Arrow stream: "
                         f"{' '.join(str(exc).split())[:200]}") from exc


def stream_batches(path: str, column: str) -> Iterator[Any]:
    """The record batches of one Arrow stream file, ``column`` validated in each; the stream must end
    exactly at the end of the file.

    A stream cut at a batch boundary reads as a shorter valid stream: the
    end-of-stream marker that ``save_to_disk`` writes last, found exactly at
    the end of the file and reached by the reader, is what says no batch is
    missing. Full validation of the column checks its list offsets (a damaged
    offset could otherwise give a negative or overlapping length). Memory: one
    batch (memory-mapped).

    Raises:
        InputError: not a readable Arrow stream, a batch failing validation, a stream that ends
            early or without its end-of-stream marker (naming the file).
    """
    pa, _ = _pyarrow()
    try:
        with pa.memory_map(path) as src:
            for batch in pa.ipc.open_stream(src):
                batch.column(column).validate(full=True)
                yield batch
            if src.tell() != src.size() or src.size() < 8 or src.read_at(8, src.size() - 8) != _EOS:
                raise InputError(f"Arrow file {path!r} is truncated or damaged: its stream ends at byte "
                                 f"{src.tell():,} of {src.size():,}, not with the end-of-stream marker that "
                                 "save_to_disk writes last")
    except (pa.ArrowException, OSError) as exc:  # pyarrow reports a short read as a plain OSError
        raise InputError(f"Arrow file {path!r} cannot be read as an Arrow stream: "
                         f"{' '.join(str(exc).split())[:200]}") from exc


class HFDataset:
    """A saved Hugging Face dataset: lengths of one list column, or of a text column through a tokenizer.

    Args:
        path: the ``save_to_disk`` directory.
        column: the column (``input_ids`` when ``None`` and the dataset has it, else ``text``).
        bos: ``"included"`` or ``"add"`` (a text column also takes ``"auto"``).
        tokenizer: for a text column: a callable or a built-in name (``bytes``, the default,
            ``chars``, ``whitespace``).
        split: the split of a ``DatasetDict``.

    Raises:
        MissingDependency: pyarrow is not installed (``pip install 'packing-theory[hf]'``).
        InputError: see :func:`hf_data_files`; an unknown column (the message lists the columns); a
            tokenizer for a token column; a null row.
    """

    format = "hf"

    def __init__(self, path: str | os.PathLike[str], *, bos: str, column: str | None = None,
                 tokenizer: Any = None, split: str | None = None, batched: bool = False) -> None:
        self.pa, self.pc = _pyarrow()
        self.root, files = hf_data_files(os.fspath(path), split)
        self.paths: tuple[str, ...] = tuple(files)
        schema = self._schema(files[0])
        names = list(schema.names)
        if column is None:
            column = "input_ids" if "input_ids" in names else "text"
        if column not in names:
            raise InputError(f"Hugging Face dataset {self.root!r} has no column {column!r}; columns: {names}")
        self.column = column
        kind = schema.field(column).type
        self.tokenized = bool(self.pa.types.is_list(kind) or self.pa.types.is_large_list(kind))
        if not self.tokenized and not (self.pa.types.is_string(kind) or self.pa.types.is_large_string(kind)):
            raise InputTypeError(f"Hugging Face dataset {self.root!r}: column {column!r} is {kind}; expected "
                                 "a list of token ids or a string")
        self.tokenizer = tokenizer
        self.batched = batched
        if self.tokenized:
            if tokenizer is not None:
                raise InputError(f"column {column!r} of {self.root!r} already holds token ids: a tokenizer "
                                 "does not apply (drop --tokenizer)")
            self.bos: str = check_bos(bos, self.format)
        else:
            from ..text import resolve_bos

            self.tokenizer = tokenizer = "bytes" if tokenizer is None else tokenizer

            self.bos, self.bos_reason = resolve_bos(bos, tokenizer, batched=batched)
        self._counts: Int64Array | None = None
        self._per_file: list[int] = []

    def _schema(self, path: str) -> Any:
        return stream_schema(path)

    def _batches(self, path: str) -> Iterator[Any]:
        return stream_batches(path, self.column)

    def token_counts(self) -> Int64Array:
        """Tokens per row (ids in the list column, or what the tokenizer gives without BOS). O(rows)."""
        if self._counts is None:
            parts: list[Int64Array] = []
            per_file: list[int] = []
            for path in self.paths:
                row = 0  # the file's rows before this batch: errors name a row of the file
                for batch in self._batches(path):
                    parts.append(self._batch_counts(batch, path, row))
                    row += parts[-1].size
                per_file.append(row)
            self._counts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            self._per_file = per_file
        return self._counts

    def _batch_counts(self, batch: Any, path: str, row: int) -> Int64Array:
        col = batch.column(self.column)
        if col.null_count:
            first = row + int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise InputError(f"Arrow file {path!r}: column {self.column!r} has a null row (row {first} of "
                             "the file, from 0)")
        if self.tokenized:
            out: Int64Array = np.asarray(self.pc.list_value_length(col)).astype(np.int64)
            return out
        from ..text import text_token_counts

        return text_token_counts(col.to_pylist(), self.tokenizer, batched=self.batched,
                                 where=f"Arrow file {path!r} row {{i}} (from 0)", first=row)

    def __len__(self) -> int:
        return int(self.token_counts().size)

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths under :attr:`bos`."""
        counts = self.token_counts()
        if counts.size == 0:
            raise InputError(f"Hugging Face dataset {self.root!r} holds no rows")
        return bos_inclusive(counts, self.bos, f"Hugging Face dataset {self.root!r}")  # type: ignore[arg-type]

    def document(self, i: int) -> npt.NDArray[Any]:
        """The token ids of row ``i`` of a tokenized dataset (one record batch is read)."""
        if not self.tokenized:
            raise InputError(f"column {self.column!r} of {self.root!r} holds text, not token ids")
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InputTypeError(f"document index must be an int, got {type(i).__name__}")
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"document {i} out of range for {n} documents")
        seen = 0
        for path in self.paths:
            for batch in self._batches(path):
                if j < seen + batch.num_rows:
                    return np.asarray(batch.column(self.column)[j - seen].values)
                seen += batch.num_rows
        raise AssertionError("unreachable: the row count was computed from the same batches")

    def iter_documents(self) -> Iterator[npt.NDArray[Any]]:
        """The token ids of every row, in order, one record batch in memory at a time."""
        if not self.tokenized:
            raise InputError(f"column {self.column!r} of {self.root!r} holds text, not token ids")
        for path in self.paths:
            for batch in self._batches(path):
                col = batch.column(self.column)
                offsets = np.asarray(col.offsets)
                values = np.asarray(col.values)
                for k in range(len(col)):
                    yield values[offsets[k] : offsets[k + 1]]

    def rows_per_file(self) -> list[int]:
        """Rows in each Arrow file, from the record batches' row counts: nothing is tokenized (the
        names of a text dataset cost O(record batches), not a pass of the tokenizer)."""
        if not self._per_file:
            self._per_file = [sum(int(b.num_rows) for b in self._batches(p)) for p in self.paths]
        return self._per_file

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every row's source label: the Arrow file holding it."""
        return self.paths, file_codes(self.rows_per_file())

    def names(self) -> ColumnNames | None:
        """The rows' own names: the dataset's first column of
        :data:`~packing_theory.corpus.readers.names.NAME_COLUMNS` (``id``, else ``name``; see
        :mod:`~packing_theory.corpus.readers.names`), read lazily one Arrow file at a time, a row whose
        value is null named ``ARROW_FILE#k``; ``None`` when it has neither (the rows are then named by
        file)."""
        schema = self._schema(self.paths[0])
        column = next((c for c in NAME_COLUMNS if c in schema.names), None)
        if column is None:
            return None
        return ColumnNames(self, column, self.rows_per_file())

    def describe(self) -> str:
        """One line: rows, column, files and the BOS rule."""
        what = ("token ids (lengths from the Arrow list offsets)" if self.tokenized
                else f"text, tokenized by {getattr(self.tokenizer, '__name__', self.tokenizer)}")
        rule = {"included": "length = stored tokens (each row holds its BOS/EOS)",
                "add": "length = tokens + 1 BOS"}[self.bos]
        return (f"Hugging Face dataset {self.root!r} ({len(self.paths)} Arrow file(s)): {len(self):,} "
                f"rows of column {self.column!r}, {what}; bos={self.bos}: {rule}")

    def _check(self) -> None:
        """Assert the reader's invariants."""
        assert self.bos in ("included", "add")
        assert self._counts is None or sum(self._per_file) == self._counts.size


class ColumnNames(FileColumnNames):
    """A dataset column as document names, read on request: :meth:`take` reads the column of the Arrow
    files holding the rows asked for (the last file read is kept). Memory O(rows of one file)."""

    def __init__(self, dataset: HFDataset, column: str, per_file: list[int]) -> None:
        self.dataset = dataset
        self.column = column
        super().__init__(dataset.paths, per_file, self._values)

    def _values(self, f: int) -> list[Any]:
        values: list[Any] = []
        for batch in self.dataset._batches(self.dataset.paths[f]):
            values += batch.column(self.column).to_pylist()
        return values
