"""Text inputs: parquet columns or plain files, through any tokenizer callable.

A *tokenizer* is any callable ``str -> tokens`` (``batched=False``, the default) or ``list[str] ->
batch`` (``batched=True``, e.g. nanochat's ``tokenizer.encode`` on a list or a Hugging Face fast
tokenizer's batch call). It is called on batches of ``batch_size`` texts (128, like the loaders) in the
batched form. What a tokenizer may return (anything else is a ``TypeError`` naming the tokenizer and the
text index):

* for one text: a sequence of token ids (``list``, ``tuple``...), a 1-D numpy
  integer array, or a mapping with an ``"input_ids"`` entry holding one of
  those (a Hugging Face ``BatchEncoding``);
* for a batch: a sequence of the above, a 2-D numpy array (one row per
  text), or a mapping whose ``"input_ids"`` holds one of those.

A ``str``, ``bytes``, a set, a mapping without ``"input_ids"``, or a sequence of sequences where ids are
expected is refused: its ``len`` is not a token count. A tokenizer that raises is reported as a
``ValueError`` naming it and the text (its index, or the file and record a reader names). The built-in
tokenizers ``"bytes"``, ``"chars"`` and ``"whitespace"`` may be passed by name to
:func:`lengths_from_texts` and :func:`lengths_from_text_files`, which then count tokens in chunks
(:mod:`packing_theory.corpus.textcount`) instead of materialising them.

Lengths are BOS-inclusive. With ``bos=True`` (the default) the tokenizer is assumed *not* to prepend BOS
and one is counted per document; with ``bos=False`` its output is taken to already start with BOS.
:func:`detect_bos` asks a tokenizer on a fixed probe whether it prepends BOS itself, and
:func:`resolve_bos` turns ``"auto"`` / ``"add"`` / ``"included"`` into that choice, so a BOS-adding
tokenizer is counted once.

Plain text files are read **without newline translation** by default: a whole-file document is exactly
the file's characters (``\\r\\n`` stays two characters, so the ``bytes`` tokenizer counts the file's
bytes), and with ``per_line=True`` a line ends at ``\\n`` (its ``\\r\\n`` or ``\\n`` ending removed; a
lone ``\\r`` is content). ``universal_newlines=True`` restores Python's translation (``\\r\\n`` and
``\\r`` read as ``\\n``). A file that does not decode in ``encoding``, or that holds a NUL character (a
binary file), raises :class:`NotText` naming it; ``errors="replace"`` decodes bad bytes as U+FFFD
(counted after replacement) and leaves only binary files refused.

>>> toy = lambda s: [ord(c) % 250 + 1 for c in s]
>>> lengths_from_texts(["ab", "", "xyz"], toy).tolist()
[3, 1, 4]
>>> list(documents_from_texts(["ab"], toy, bos_id=0))
[[0, 98, 99]]
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_id_sequence, check_int
from .._files import regular_file
from ..errors import InputError, InputTypeError, import_optional
from .textcount import (
    BUILTIN_TOKENIZERS,
    BuiltinTokenizer,
    NotText,
    binary_failure,
    check_errors,
    count_text,
    count_text_files,
    decode_failure,
)

__all__ = [
    "BOS_CHOICES",
    "NotText",
    "Tokenizer",
    "detect_bos",
    "documents_from_texts",
    "iter_parquet_texts",
    "iter_text_files",
    "lengths_from_text_files",
    "lengths_from_texts",
    "parquet_columns",
    "resolve_bos",
    "text_token_counts",
    "tokenize_batches",
    "tokenizer_name",
]

Tokenizer = Callable[[Any], Any]
"""``str -> Sequence[int]``, or ``list[str] -> Sequence[Sequence[int]]`` with ``batched=True``."""

PathLike = str | os.PathLike[str]

BOS_CHOICES: tuple[str, ...] = ("auto", "add", "included")
"""How a tokenizer's output maps to BOS-inclusive lengths: ask it (``auto``), add one, or it includes one."""

BOS_PROBE: tuple[str, ...] = ("a", "Hello world.", "Größe", "中文", "7 + 8", " x")
"""Texts with different first characters: a tokenizer that starts them all with one id prepends BOS."""


def _check_batch_size(batch_size: object) -> int:
    return check_int("batch_size", batch_size, 1)


def _as_paths(paths: PathLike | Iterable[PathLike], name: str = "paths") -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise InputError(f"{name} is empty: give at least one file")
    return out


def check_text_file(name: str) -> None:
    """Refuse a missing path or a directory, naming it (a directory is not "missing").

    Raises:
        FileNotFoundError: no such path.
        InputError: a directory or another non-file.
    """
    if os.path.isdir(name):
        raise InputError(f"text file {name!r} is a directory: give its files (or --data DIR --format text)")
    regular_file(name, "text file")


def tokenizer_name(tokenizer: object) -> str:
    """A short name for error messages: ``module.qualname`` of a function, else the type's name.

    >>> tokenizer_name(len)
    'builtins.len'
    """
    qual = getattr(tokenizer, "__qualname__", None)
    if isinstance(qual, str):
        module = getattr(tokenizer, "__module__", None)
        return f"{module}.{qual}" if isinstance(module, str) else qual
    return f"{type(tokenizer).__module__}.{type(tokenizer).__qualname__} instance"


_ACCEPTED = ("a sequence of token ids, a 1-D numpy integer array, or a mapping with 'input_ids' "
             "(a Hugging Face BatchEncoding)")


def _input_ids(value: Any, name: str, where: str) -> Any:
    """``value["input_ids"]`` for a mapping; ``value`` otherwise (refusing sets and strings)."""
    if isinstance(value, Mapping):
        if "input_ids" not in value:
            keys = sorted(map(str, value))[:8]
            raise InputTypeError(f"tokenizer {name} returned a mapping without 'input_ids' (keys {keys}) "
                                 f"for {where}; expected {_ACCEPTED}")
        return value["input_ids"]
    return value


def _token_ids(value: Any, name: str, where: str) -> Sequence[int] | npt.NDArray[Any]:
    """The token ids of one text, validated as one of the accepted forms (O(1))."""
    ids = _input_ids(value, name, where)
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1 or not (np.issubdtype(ids.dtype, np.integer) and ids.dtype != np.bool_):
            raise InputTypeError(f"tokenizer {name} returned a {ids.ndim}-D {ids.dtype} array of shape "
                                 f"{ids.shape} for {where}; expected {_ACCEPTED}")
        return ids
    if isinstance(ids, (str, bytes, bytearray, AbstractSet, Mapping)) or not isinstance(ids, Sequence):
        raise InputTypeError(f"tokenizer {name} returned {type(ids).__name__} for {where}; expected "
                             f"{_ACCEPTED}")
    check_id_sequence(ids, f"tokenizer {name} on {where}")
    return ids



def _batch_ids(value: Any, name: str, where: str) -> list[Any]:
    """The per-text results of one batched call, as a list."""
    ids = _input_ids(value, name, where)
    if isinstance(ids, np.ndarray):
        if ids.ndim != 2:
            raise InputTypeError(f"batched tokenizer {name} returned a {ids.ndim}-D array of shape "
                                 f"{ids.shape} for {where}; expected one row per text")
        return list(ids)
    if isinstance(ids, (str, bytes, bytearray, AbstractSet, Mapping)) or not isinstance(ids, Sequence):
        raise InputTypeError(f"batched tokenizer {name} returned {type(ids).__name__} for {where}; "
                             "expected a sequence with one result per text, a 2-D array or a mapping with "
                             "'input_ids'")
    return list(ids)


def _call(tokenizer: Tokenizer, arg: Any, name: str, where: str) -> Any:
    try:
        return tokenizer(arg)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # a user's tokenizer may raise anything: name it and the text
        detail = " ".join(str(exc).split())[:200]
        raise InputError(f"tokenizer {name} raised {type(exc).__name__} on {where}: {detail}") from exc


def tokenize_batches(
    texts: Iterable[str],
    tokenizer: Tokenizer,
    *,
    batched: bool = False,
    batch_size: int = 128,
    where: str = "texts[{i}]",
    first: int = 0,
) -> Iterator[list[Sequence[int] | npt.NDArray[Any]]]:
    """Yield the token ids of ``texts`` in batches of at most ``batch_size``.

    Each item is a sequence of ids or a 1-D array (a mapping's ``"input_ids"``
    is unwrapped); see the module docstring for the accepted tokenizer outputs.
    ``where`` names text ``i`` (from ``first``) in errors: a reader says which file and record it is.

    Raises:
        TypeError: a text that is not a ``str``, a non-callable tokenizer, or a
            tokenizer result of another form (naming the tokenizer and the text).
        ValueError: a tokenizer that raised, or a batched tokenizer returning
            the wrong number of results (naming the tokenizer and the texts).
    """
    if not callable(tokenizer):
        raise InputTypeError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
    size = _check_batch_size(batch_size)
    name = tokenizer_name(tokenizer)
    it = iter(texts)
    index = first
    while True:
        chunk = list(islice(it, size))
        if not chunk:
            return
        for j, text in enumerate(chunk):
            if not isinstance(text, str):
                raise InputTypeError(f"{where.format(i=index + j)} must be a str, got {type(text).__name__}")
        if batched:
            span = (f"texts[{index}:{index + len(chunk)}]" if where == "texts[{i}]"
                    else f"{where.format(i=index)} to {where.format(i=index + len(chunk) - 1)}")
            result = _batch_ids(_call(tokenizer, chunk, name, span), name, span)
            if len(result) != len(chunk):
                raise InputError(
                    f"batched tokenizer {name} returned {len(result)} token lists for {len(chunk)} texts "
                    f"({span})"
                )
        else:
            result = [_call(tokenizer, text, name, where.format(i=index + j)) for j, text in enumerate(chunk)]
        yield [_token_ids(tokens, name, where.format(i=index + j)) for j, tokens in enumerate(result)]
        index += len(chunk)


def _finish_lengths(counts: Iterable[int], bos: bool, what: str) -> npt.NDArray[np.int64]:
    extra = 1 if bos else 0
    out: array[int] = array("q")
    for n in counts:
        if n + extra < 1:
            raise InputError(
                f"{what}[{len(out)}] tokenized to 0 tokens with bos=False: a BOS-inclusive "
                "document holds at least one token (pass bos=True if the tokenizer adds none)"
            )
        out.append(n + extra)
    if not out:
        raise InputError(f"{what} is empty: a replay needs at least one document")
    return np.frombuffer(out, dtype=np.int64).copy()


def lengths_from_texts(
    texts: Iterable[str],
    tokenizer: Tokenizer | BuiltinTokenizer,
    *,
    bos: bool = True,
    batched: bool = False,
    batch_size: int = 128,
) -> npt.NDArray[np.int64]:
    """BOS-inclusive token lengths of ``texts`` (``int64``).

    ``bos=True`` adds one BOS per document (the tokenizer does not prepend it). ``tokenizer`` is a callable
    (see the module docstring for what it may return) or the name of a built-in tokenizer (``"bytes"``,
    ``"chars"``, ``"whitespace"``), which is counted without building token lists. Complexity: one tokenizer
    call per text (or per batch); memory 8 bytes per document plus one text's tokens at a time.

    Raises:
        ValueError: no texts ("empty"), a zero-length document (only
            possible with ``bos=False``), or a tokenizer that raised, naming
            the text index.
        TypeError: see :func:`tokenize_batches`.
    """
    if isinstance(tokenizer, str):
        unit = tokenizer

        def counts_by_name() -> Iterator[int]:
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise InputTypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
                yield count_text(text, unit)

        if unit not in BUILTIN_TOKENIZERS:
            raise InputError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                             f"got {unit!r}")
        return _finish_lengths(counts_by_name(), bos, "texts")
    counts = (len(tokens) for batch in tokenize_batches(texts, tokenizer, batched=batched,
                                                          batch_size=batch_size) for tokens in batch)
    return _finish_lengths(counts, bos, "texts")


def lengths_from_text_files(
    paths: PathLike | Iterable[PathLike],
    tokenizer: Tokenizer | BuiltinTokenizer,
    *,
    per_line: bool = False,
    encoding: str = "utf-8",
    bos: bool = True,
    batched: bool = False,
    batch_size: int = 128,
    errors: str = "strict",
    universal_newlines: bool = False,
) -> npt.NDArray[np.int64]:
    """BOS-inclusive token lengths of plain text files (one document per file, or per non-blank line).

    With a built-in tokenizer name the files are counted in chunks: memory
    O(1 MiB) plus 8 bytes per document, however long a line is. A callable
    tokenizer receives each document whole (:func:`iter_text_files`).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write("one two\\n\\nthree\\n")
    >>> lengths_from_text_files(path, "whitespace", per_line=True).tolist()
    [3, 2]

    Raises:
        FileNotFoundError: a missing file.
        NotText: a file that is not valid ``encoding`` (with ``errors="strict"``) or is binary.
        ValueError: no paths, a directory, no documents, or see :func:`lengths_from_texts`.
    """
    if isinstance(tokenizer, str):
        if tokenizer not in BUILTIN_TOKENIZERS:
            raise InputError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                             f"got {tokenizer!r}")
        files = _as_paths(paths)
        for name in files:
            check_text_file(name)
        counts = count_text_files(files, tokenizer, per_line=per_line, encoding=encoding, errors=errors,
                                  universal_newlines=universal_newlines)
        return _finish_lengths(counts, bos, "texts")
    texts = iter_text_files(paths, per_line=per_line, encoding=encoding, errors=errors,
                            universal_newlines=universal_newlines)
    return lengths_from_texts(texts, tokenizer, bos=bos, batched=batched, batch_size=batch_size)


def text_token_counts(
    texts: Iterable[str],
    tokenizer: Tokenizer | BuiltinTokenizer,
    *,
    batched: bool = False,
    batch_size: int = 128,
    where: str = "texts[{i}]",
    first: int = 0,
) -> npt.NDArray[np.int64]:
    """Tokens per text as the tokenizer gives them (no BOS added), ``int64``; may be empty (``where``,
    ``first``: as :func:`tokenize_batches`).

    >>> text_token_counts(["a b", "c"], "whitespace").tolist()
    [2, 1]
    """
    if isinstance(tokenizer, str):
        if tokenizer not in BUILTIN_TOKENIZERS:
            raise InputError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                             f"got {tokenizer!r}")
        unit: BuiltinTokenizer = tokenizer
        return np.fromiter((count_text(t, unit) for t in texts), dtype=np.int64)
    counts = (len(tokens) for batch in tokenize_batches(texts, tokenizer, batched=batched,
                                                          batch_size=batch_size, where=where,
                                                          first=first) for tokens in batch)
    return np.fromiter(counts, dtype=np.int64)


def detect_bos(tokenizer: Tokenizer | BuiltinTokenizer, *, batched: bool = False) -> int | None:
    """The id ``tokenizer`` puts first on every text by itself (its BOS), or ``None``.

    The tokenizer is run on :data:`BOS_PROBE`, texts that begin with different
    characters: if every result starts with the same id (and the empty text
    gives nothing or that id), the tokenizer prepends it, as Llama-style Hugging
    Face tokenizers do with ``add_special_tokens=True``. The built-in tokenizers
    add none. O(probe).

    >>> detect_bos(lambda s: [1] + [ord(c) for c in s])
    1
    >>> detect_bos(lambda s: [ord(c) for c in s]) is None
    True
    """
    if isinstance(tokenizer, str):
        return None
    name = tokenizer_name(tokenizer)
    where = "the BOS probe texts"
    texts = ["", *BOS_PROBE]
    if batched:
        raw = _batch_ids(_call(tokenizer, texts, name, where), name, where)
    else:
        raw = [_call(tokenizer, t, name, where) for t in texts]
    ids = [_token_ids(r, name, where) for r in raw]
    empty, rest = ids[0], ids[1:]
    if any(len(r) == 0 for r in rest):
        return None
    first = int(rest[0][0])
    if any(int(r[0]) != first for r in rest) or (len(empty) and int(empty[0]) != first):
        return None
    return first


def resolve_bos(bos: object, tokenizer: Tokenizer | BuiltinTokenizer, *, batched: bool = False
                ) -> tuple[str, str]:
    """``("add" | "included", reason)`` for ``bos`` in :data:`BOS_CHOICES` and this tokenizer.

    ``"auto"`` asks :func:`detect_bos`: ``"included"`` (count the tokenizer's
    own BOS, add none) when it prepends one, else ``"add"``.

    >>> resolve_bos("auto", "bytes")
    ('add', 'the tokenizer adds no BOS (detected on the probe texts): one BOS counted per document')
    >>> resolve_bos("auto", lambda s: [7] + [ord(c) for c in s])[0]
    'included'
    """
    if bos not in BOS_CHOICES:
        raise InputError(f"bos must be one of {', '.join(BOS_CHOICES)}, got {bos!r}")
    if bos == "add":
        return "add", "declared: the tokenizer adds no BOS; one BOS counted per document"
    if bos == "included":
        return "included", "declared: the tokenizer's output starts with its BOS; nothing added"
    found = detect_bos(tokenizer, batched=batched)
    if found is None:
        return "add", "the tokenizer adds no BOS (detected on the probe texts): one BOS counted per document"
    return "included", (f"the tokenizer prepends BOS id {found} itself (detected on the probe texts): "
                        "counted once, none added")



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
                raise InputError(f"texts[{index}] tokenized to 0 tokens with bos_id=None")
            index += 1
            yield doc


# --------------------------------------------------------------------------- parquet


def _pyarrow_parquet() -> Any:
    return import_optional("pyarrow.parquet", extra="parquet", purpose="reading parquet")


def parquet_columns(path: PathLike) -> list[str]:
    """Column names of the parquet file ``path`` (reads only its footer)."""
    pq = _pyarrow_parquet()
    return list(pq.ParquetFile(os.fspath(path)).schema_arrow.names)


def _open_column(pq: Any, path: str, column: str) -> Any:
    try:
        pf = pq.ParquetFile(regular_file(path, "parquet file"))
    except (FileNotFoundError, InputError):
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid and friends
        raise InputError(f"parquet file {path!r} cannot be read: {exc}") from exc
    names = list(pf.schema_arrow.names)
    if column not in names:
        raise InputError(f"parquet file {path!r} has no column {column!r}; available columns: {names}")
    if names.count(column) > 1:
        raise InputError(f"parquet file {path!r} has {names.count(column)} columns named {column!r}; "
                         "the text column must be named once")
    return pf


def _read_row_group(pf: Any, path: str, group: int, column: str) -> Any:
    """Row group ``group`` of ``column``: pyarrow's errors on a damaged file (a bad page, a truncated
    chunk) as an :class:`~packing_theory.errors.InputError` naming the file and the row group."""
    try:
        return pf.read_row_group(group, columns=[column])
    except (OSError, ValueError, IndexError) as exc:  # ArrowIOError / ArrowInvalid; pyarrow's own errors
        raise InputError(f"parquet file {path!r} row group {group} cannot be read: "
                         f"{' '.join(str(exc).split())[:200]}") from exc


def _column_texts(table: Any, column: str, where: str) -> list[str]:
    values: list[str] = table.column(column).to_pylist()
    for i, v in enumerate(values):
        if not isinstance(v, str):
            kind = "null" if v is None else type(v).__name__
            raise InputTypeError(f"{where}: column {column!r} row {i} is {kind}, expected a string")
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
            table = _read_row_group(pf, name, rg, column)
            yield from _column_texts(table, column, f"parquet file {name!r} row group {rg}")


# --------------------------------------------------------------------------- plain text


def iter_text_files(
    paths: PathLike | Iterable[PathLike],
    *,
    per_line: bool = False,
    encoding: str = "utf-8",
    errors: str = "strict",
    universal_newlines: bool = False,
) -> Iterator[str]:
    """Yield documents from plain text files: one per file, or one per non-blank line.

    With ``per_line=True`` each line (without its ``\\n`` or ``\\r\\n`` ending)
    is a document and blank lines are skipped; otherwise each whole file is
    one document, exactly as stored (no newline translation unless
    ``universal_newlines``; see the module docstring).

    Raises:
        ValueError: no paths, or a directory.
        NotText: a file that is not valid ``encoding`` (``errors="strict"``) or is binary.
        FileNotFoundError: a missing file.
    """
    files = _as_paths(paths)
    for name in files:
        check_text_file(name)
    return _iter_text(files, per_line, encoding, check_errors(errors), universal_newlines)


def _iter_text(files: list[str], per_line: bool, encoding: str, errors: str,
               universal_newlines: bool) -> Iterator[str]:
    newline = None if universal_newlines else "\n"
    for name in files:
        seen = 0
        try:
            with open(name, encoding=encoding, errors=errors, newline=newline) as fh:
                if per_line:
                    for line in fh:
                        if "\x00" in line:
                            raise binary_failure(name, seen + line.index("\x00"))
                        seen += len(line)
                        if line.endswith("\n"):
                            line = line[:-2] if line.endswith("\r\n") else line[:-1]
                        if line.strip():
                            yield line
                else:
                    text = fh.read()
                    if "\x00" in text:
                        raise binary_failure(name, text.index("\x00"))
                    yield text
        except UnicodeDecodeError as exc:
            raise decode_failure(name, exc, encoding) from exc
