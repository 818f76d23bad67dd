"""JSON Lines text: one JSON object per line, a text field through a tokenizer; plain, ``.gz`` or ``.zst``.

Each non-blank line is one document: a JSON object whose ``field`` (``text``
by default) is a string. Files ending in ``.gz`` are read with :mod:`gzip`,
files ending in ``.zst`` / ``.zstd`` with ``zstandard``'s streaming reader
(``pip install 'packing-theory[zstd]'``; frames written with or without a
content size, several frames concatenated, as ``zstd`` and Dolma write them).
Everything streams: memory is one line plus 8 bytes per document (and a
source code per document when ``source_field`` is given).

Errors name the file and the line: a line that is not JSON, not an object,
missing ``field``, or whose value is not a string. A file that does not
decode as UTF-8 (JSON's encoding) raises
:class:`~packing_theory.corpus.text.NotText`, which the census can skip.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from ..._files import load_json
from ...errors import InputError, import_optional
from ..textcount import binary_failure, decode_failure
from ._base import bos_inclusive, existing_file, file_codes
from .names import NAME_COLUMNS, FileNames, RecordNames, record_name

__all__ = ["JSONL_SUFFIXES", "JsonLines", "iter_jsonl", "iter_jsonl_records"]

JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".json.gz",
                                   ".json.zst", ".ndjson")
"""File names auto-detected as JSON Lines."""

Int64Array = npt.NDArray[np.int64]


def _open_binary(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if path.endswith((".zst", ".zstd")):
        zstd = import_optional("zstandard", extra="zstd", purpose="reading .zst JSON Lines")
        return io.BufferedReader(_ZstdFrames(open(path, "rb"), zstd), buffer_size=_CHUNK)
    return open(path, "rb")


_CHUNK = 1 << 20


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a file of zstd frames (one or several, concatenated), read in chunks.

    ``zstandard``'s ``stream_reader`` ends quietly when the file ends inside a
    frame, so a truncated ``.zst`` file would read as fewer documents; here a
    file that ends before its last frame does raises ``EOFError``, as
    :mod:`gzip` does for a truncated ``.gz``. Memory: one chunk of each side.
    """

    def __init__(self, raw: IO[bytes], zstd: Any) -> None:
        super().__init__()
        self._raw, self._zstd = raw, zstd
        self._frame: Any = None  # the decompressor of the frame being read (None between frames)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                if self._frame is not None:
                    raise EOFError("the compressed file ended inside a zstd frame (truncated)")
                return 0
            self._pending = self._feed(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            if self._frame is None:
                self._frame = self._zstd.ZstdDecompressor().decompressobj()
            out.append(self._frame.decompress(chunk))
            if not self._frame.eof:
                break
            chunk, self._frame = self._frame.unused_data, None  # the next frame starts right after
        return b"".join(out)

    def close(self) -> None:
        self._raw.close()
        super().close()


def iter_jsonl(path: str, field: str = "text", *, source_field: str | None = None,
               errors: str = "strict") -> Iterator[tuple[str, Any]]:
    """Yield ``(text, source)`` per non-blank line of one JSON Lines file (``source`` is ``None``
    without ``source_field``). Raises as :func:`iter_jsonl_records`."""
    for text, source, _ in iter_jsonl_records(path, field, source_field=source_field, errors=errors):
        yield text, source


def iter_jsonl_records(path: str, field: str = "text", *, source_field: str | None = None,
                       errors: str = "strict") -> Iterator[tuple[str, Any, str | None]]:
    """Yield ``(text, source, name)`` per non-blank line of one JSON Lines file: ``source`` as
    :func:`iter_jsonl`, ``name`` the record's own name (the first of
    :data:`~packing_theory.corpus.readers.names.NAME_COLUMNS` it has, by
    :func:`~packing_theory.corpus.readers.names.record_name`; ``None`` without one), read in the same pass.

    Raises:
        NotText: the file does not decode as UTF-8 (with ``errors="strict"``) or holds a NUL byte.
        InputError: a line that is not a JSON object with a string ``field``, or (with ``source_field``)
            whose source is missing, ``null`` or empty (naming file and line).
    """
    name = existing_file(path, "JSON Lines file")
    line_no = 0
    try:
        with _open_binary(name) as raw, io.TextIOWrapper(raw, encoding="utf-8", errors=errors,
                                                         newline="\n") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if "\x00" in line:
                    raise binary_failure(name, line.index("\x00"))
                yield _parse(line, name, line_no, field, source_field)
    except UnicodeDecodeError as exc:
        raise decode_failure(name, exc, "utf-8") from exc
    except (OSError, EOFError) as exc:  # a corrupt .gz / .zst stream
        if isinstance(exc, FileNotFoundError):
            raise
        raise InputError(f"JSON Lines file {name!r} cannot be decompressed near line {line_no + 1}: "
                         f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        if type(exc).__name__ == "ZstdError":
            raise InputError(f"JSON Lines file {name!r} is not a valid zstd stream: {exc}") from exc
        raise


def _parse(line: str, name: str, line_no: int, field: str,
           source_field: str | None) -> tuple[str, Any, str | None]:
    obj = load_json(line, f"JSON Lines file {name!r} line {line_no}")  # deep nesting too: bad input
    if not isinstance(obj, dict):
        raise InputError(f"JSON Lines file {name!r} line {line_no}: a JSON {type(obj).__name__}, "
                         "expected an object")
    if field not in obj:
        keys = sorted(obj)[:8]
        raise InputError(f"JSON Lines file {name!r} line {line_no}: no field {field!r} (keys {keys}); "
                         "choose the text field with --column")
    text = obj[field]
    if not isinstance(text, str):
        raise InputError(f"JSON Lines file {name!r} line {line_no}: field {field!r} is "
                         f"{type(text).__name__}, expected a string")
    if not text.isascii():
        try:  # a "\ud800" escape decodes to a lone surrogate: not text, and no tokenizer can encode it
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(f"JSON Lines file {name!r} line {line_no}: field {field!r} holds a lone "
                             f"surrogate (U+{ord(text[exc.start]):04X}), not text") from None
    own = next((obj[c] for c in NAME_COLUMNS if c in obj), None)
    if source_field is None:
        return text, None, record_name(own)
    source = obj.get(source_field)
    if source is None or not str(source).strip():
        raise InputError(f"JSON Lines file {name!r} line {line_no}: no source field {source_field!r} "
                         "(--source-column); every document needs a source")
    if isinstance(source, (bool, list, dict)):
        raise InputError(f"JSON Lines file {name!r} line {line_no}: source field {source_field!r} is a "
                         f"{type(source).__name__}; a source is a string or a number")
    return text, source, record_name(own)


class JsonLines:
    """Documents of JSON Lines files, through a tokenizer.

    Args:
        paths: the files, read in order.
        tokenizer: a callable or a built-in name (``bytes``, ``chars``, ``whitespace``).
        field: the text field.
        bos: ``"auto"`` (ask the tokenizer), ``"add"`` or ``"included"``.
        source_field: a field whose value labels each document's source (default: its file).
        errors: ``"strict"`` or ``"replace"`` (undecodable bytes as U+FFFD).
    """

    format = "jsonl"

    def __init__(self, paths: list[str] | tuple[str, ...], *, tokenizer: Any, field: str = "text",
                 bos: str = "auto", source_field: str | None = None, errors: str = "strict",
                 batched: bool = False) -> None:
        from ..text import resolve_bos

        if not paths:
            raise InputError("JSON Lines input is empty: give at least one file")
        self.paths: tuple[str, ...] = tuple(existing_file(p, "JSON Lines file") for p in paths)
        self.tokenizer = tokenizer
        self.field = field
        self.source_field = source_field
        self.errors = errors
        self.batched = batched
        self.bos, self.bos_reason = resolve_bos(bos, tokenizer, batched=batched)
        self._counts: Int64Array | None = None
        self._labels: tuple[str, ...] = ()
        self._codes: npt.NDArray[np.int32] | None = None
        self._names: RecordNames | None = None
        self._per_file: list[int] = []

    def _read(self) -> None:
        from ..text import text_token_counts

        parts: list[Int64Array] = []
        per_file: list[int] = []
        labels: dict[str, int] = {}
        codes: list[int] = []
        names = RecordNames(self.paths)
        for path in self.paths:
            rows = iter_jsonl_records(path, self.field, source_field=self.source_field, errors=self.errors)

            def texts(it: Iterator[tuple[str, Any, str | None]] = rows) -> Iterator[str]:
                for text, source, name in it:
                    names.add(name)
                    if self.source_field is not None:
                        codes.append(labels.setdefault(str(source), len(labels)))
                    yield text

            counts = text_token_counts(texts(), self.tokenizer, batched=self.batched,
                                       where=f"JSON Lines file {path!r} record {{i}} (from 0)")
            names.end_file()
            parts.append(counts)
            per_file.append(int(counts.size))
        self._counts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self._names = names if names.named else None  # no record names itself: named by file
        self._per_file = per_file
        if self.source_field is None:
            self._labels, self._codes = self.paths, file_codes(per_file)
        else:
            self._labels, self._codes = tuple(labels), np.asarray(codes, dtype=np.int32)

    def token_counts(self) -> Int64Array:
        """Tokens per document as the tokenizer gives them (no BOS added). O(text)."""
        if self._counts is None:
            self._read()
        assert self._counts is not None
        return self._counts

    def __len__(self) -> int:
        return int(self.token_counts().size)

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths (the tokenizer's BOS counted once, see :attr:`bos`)."""
        counts = self.token_counts()
        if counts.size == 0:
            raise InputError(f"JSON Lines input {list(self.paths)!r} holds no documents")
        return bos_inclusive(counts, self.bos, "JSON Lines input")  # type: ignore[arg-type]

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every document's source label: its ``source_field`` value, or its file."""
        self.token_counts()
        assert self._codes is not None
        return self._labels, self._codes

    def names(self) -> RecordNames | FileNames:
        """The records' own names (:mod:`~packing_theory.corpus.readers.names`: the ``id`` field, else
        ``name``; ``FILE#k`` for a record without one), collected in the pass that reads the texts; when
        no record names itself, every document by its file (:class:`FileNames`, O(files) memory), which
        :meth:`sources` does not give when a ``source_field`` labels the documents."""
        self.token_counts()
        return self._names if self._names is not None else FileNames(self.paths, self._per_file)

    def describe(self) -> str:
        """One line: files, documents, field and the BOS rule."""
        return (f"JSON Lines: {len(self.paths)} file(s), {len(self):,} documents, field {self.field!r}; "
                f"bos={self.bos}: {self.bos_reason}")

