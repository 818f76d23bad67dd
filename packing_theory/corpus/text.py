"""Text inputs: parquet columns or plain files, through any tokenizer callable.

A *tokenizer* is any callable ``str -> Sequence[int]`` (``batched=False``, the
default) or ``list[str] -> Sequence[Sequence[int]]`` (``batched=True``, e.g.
nanochat's ``tokenizer.encode`` on a list or a Hugging Face fast tokenizer's
batch call). It is called on batches of ``batch_size`` texts (128, like the
loaders) in the batched form.

Lengths are BOS-inclusive. With ``bos=True`` (the default) the tokenizer is
assumed *not* to prepend BOS and one is counted per document; with ``bos=False``
its output is taken to already start with BOS.

>>> toy = lambda s: [ord(c) % 250 + 1 for c in s]
>>> lengths_from_texts(["ab", "", "xyz"], toy).tolist()
[3, 1, 4]
>>> list(documents_from_texts(["ab"], toy, bos_id=0))
[[0, 98, 99]]
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int

__all__ = [
    "Tokenizer",
    "documents_from_texts",
    "iter_parquet_texts",
    "iter_text_files",
    "lengths_from_texts",
    "parquet_columns",
    "tokenize_batches",
]

Tokenizer = Callable[[Any], Any]
"""``str -> Sequence[int]``, or ``list[str] -> Sequence[Sequence[int]]`` with ``batched=True``."""

PathLike = str | os.PathLike[str]


def _check_batch_size(batch_size: object) -> int:
    return check_int("batch_size", batch_size, 1)


def _as_paths(paths: PathLike | Iterable[PathLike], name: str = "paths") -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError(f"{name} is empty: give at least one file")
    return out


def tokenize_batches(
    texts: Iterable[str],
    tokenizer: Tokenizer,
    *,
    batched: bool = False,
    batch_size: int = 128,
) -> Iterator[list[Sequence[int]]]:
    """Yield the token lists of ``texts`` in batches of at most ``batch_size``.

    Raises:
        TypeError: a text that is not a ``str``, a non-callable tokenizer, or a
            tokenizer result that is not a sequence.
        ValueError: a batched tokenizer returning the wrong number of results.
    """
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
    size = _check_batch_size(batch_size)
    it = iter(texts)
    index = 0
    while True:
        chunk = list(islice(it, size))
        if not chunk:
            return
        for j, text in enumerate(chunk):
            if not isinstance(text, str):
                raise TypeError(f"texts[{index + j}] must be a str, got {type(text).__name__}")
        if batched:
            result = list(tokenizer(chunk))
            if len(result) != len(chunk):
                raise ValueError(
                    f"batched tokenizer returned {len(result)} token lists for {len(chunk)} texts "
                    f"(texts[{index}:{index + len(chunk)}])"
                )
        else:
            result = [tokenizer(text) for text in chunk]
        for j, tokens in enumerate(result):
            if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
                raise TypeError(
                    f"tokenizer returned {type(tokens).__name__} for texts[{index + j}], "
                    "expected a sequence of token ids"
                )
        yield result
        index += len(chunk)


def lengths_from_texts(
    texts: Iterable[str],
    tokenizer: Tokenizer,
    *,
    bos: bool = True,
    batched: bool = False,
    batch_size: int = 128,
) -> npt.NDArray[np.int64]:
    """BOS-inclusive token lengths of ``texts`` (``int64``).

    ``bos=True`` adds one BOS per document (the tokenizer does not prepend it).
    Complexity: one tokenizer call per text (or per batch); memory O(documents).

    Raises:
        ValueError: no texts ("empty"), or a zero-length document (only
            possible with ``bos=False``), naming the text index.
        TypeError: see :func:`tokenize_batches`.
    """
    extra = 1 if bos else 0
    out: list[int] = []
    for batch in tokenize_batches(texts, tokenizer, batched=batched, batch_size=batch_size):
        for tokens in batch:
            n = len(tokens) + extra
            if n < 1:
                raise ValueError(
                    f"texts[{len(out)}] tokenized to 0 tokens with bos=False: a BOS-inclusive "
                    "document holds at least one token (pass bos=True if the tokenizer adds none)"
                )
            out.append(n)
    if not out:
        raise ValueError("texts is empty: a replay needs at least one document")
    return np.asarray(out, dtype=np.int64)


def documents_from_texts(
    texts: Iterable[str],
    tokenizer: Tokenizer,
    *,
    bos_id: int | None,
    batched: bool = False,
    batch_size: int = 128,
) -> Iterator[list[int]]:
    """Yield BOS-inclusive token lists for :meth:`packing_theory.Packer.token_rows` (lazily).

    ``bos_id`` is prepended to every document; ``None`` means the tokenizer
    already starts each document with BOS.

    Raises:
        ValueError: an empty document with ``bos_id=None``, a negative ``bos_id``.
        TypeError: a non-int ``bos_id``; see :func:`tokenize_batches`.
    """
    if bos_id is not None:
        bos_id = check_int("bos_id", bos_id, 0)
    return _documents(texts, tokenizer, bos_id, batched, batch_size)


def _documents(
    texts: Iterable[str], tokenizer: Tokenizer, bos_id: int | None, batched: bool, batch_size: int
) -> Iterator[list[int]]:
    index = 0
    for batch in tokenize_batches(texts, tokenizer, batched=batched, batch_size=batch_size):
        for tokens in batch:
            doc = [int(t) for t in tokens]
            if bos_id is not None:
                doc.insert(0, int(bos_id))
            elif not doc:
                raise ValueError(f"texts[{index}] tokenized to 0 tokens with bos_id=None")
            index += 1
            yield doc


# --------------------------------------------------------------------------- parquet


def _pyarrow_parquet() -> Any:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading parquet needs pyarrow: pip install pyarrow (or packing-theory[test])"
        ) from exc
    return pq


def parquet_columns(path: PathLike) -> list[str]:
    """Column names of the parquet file ``path`` (reads only its footer)."""
    pq = _pyarrow_parquet()
    return list(pq.ParquetFile(os.fspath(path)).schema_arrow.names)


def _open_column(pq: Any, path: str, column: str) -> Any:
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid and friends
        raise ValueError(f"parquet file {path!r} cannot be read: {exc}") from exc
    names = list(pf.schema_arrow.names)
    if column not in names:
        raise ValueError(f"parquet file {path!r} has no column {column!r}; available columns: {names}")
    return pf


def _column_texts(table: Any, column: str, where: str) -> list[str]:
    values: list[str] = table.column(column).to_pylist()
    for i, v in enumerate(values):
        if not isinstance(v, str):
            kind = "null" if v is None else type(v).__name__
            raise TypeError(f"{where}: column {column!r} row {i} is {kind}, expected a string")
    return values


def iter_parquet_texts(
    paths: PathLike | Iterable[PathLike],
    column: str = "text",
    *,
    row_groups: Callable[[int, int], Iterable[int]] | None = None,
) -> Iterator[str]:
    """Yield the strings of ``column`` from each parquet file in ``paths``, row group by row group.

    ``row_groups(file_index, n_row_groups)`` may select the row groups read
    from each file, in the order given (see
    :func:`packing_theory.corpus.rank_row_groups`); by default all of them.
    Memory: one row group at a time.

    Raises:
        ImportError: pyarrow is not installed.
        ValueError: no paths, an unreadable file, or an unknown ``column``
            (the message lists the available columns).
        TypeError: a null or non-string value (naming file, row group and row).
    """
    pq = _pyarrow_parquet()
    files = _as_paths(paths)
    for name in files:
        _open_column(pq, name, column)  # fail fast on every file before yielding anything
    return _iter_parquet(pq, files, column, row_groups)


def _iter_parquet(
    pq: Any, files: list[str], column: str, row_groups: Callable[[int, int], Iterable[int]] | None
) -> Iterator[str]:
    for f, name in enumerate(files):
        pf = _open_column(pq, name, column)
        n = pf.num_row_groups
        selected = range(n) if row_groups is None else row_groups(f, n)
        for rg in selected:
            table = pf.read_row_group(rg, columns=[column])
            yield from _column_texts(table, column, f"parquet file {name!r} row group {rg}")


# --------------------------------------------------------------------------- plain text


def iter_text_files(
    paths: PathLike | Iterable[PathLike],
    *,
    per_line: bool = False,
    encoding: str = "utf-8",
) -> Iterator[str]:
    """Yield documents from plain text files: one per file, or one per non-blank line.

    With ``per_line=True`` each line (without its line ending) is a document
    and blank lines are skipped; otherwise each whole file is one document.

    Raises:
        ValueError: no paths, or a file that is not valid ``encoding``.
        FileNotFoundError: a missing file.
    """
    files = _as_paths(paths)
    for name in files:
        if not os.path.isfile(name):
            raise FileNotFoundError(f"text file {name!r} does not exist")
    return _iter_text(files, per_line, encoding)


def _iter_text(files: list[str], per_line: bool, encoding: str) -> Iterator[str]:
    for name in files:
        try:
            with open(name, encoding=encoding, newline=None) as fh:
                if per_line:
                    for line in fh:
                        line = line.rstrip("\n")
                        if line.strip():
                            yield line
                else:
                    yield fh.read()
        except UnicodeDecodeError as exc:
            raise ValueError(f"text file {name!r} is not valid {encoding}: {exc}") from exc
