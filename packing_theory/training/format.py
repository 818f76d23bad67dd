"""The training ledger on disk: a header, then self-describing chunks of rows and document spans.

A ledger records, per optimizer step and rank, every row a model consumed
and the document spans in it (:class:`~packing_theory.training.TrainingLedger`
writes it; :func:`read_ledger` reads it back). The file is written as the run
goes, one chunk at a time, so the writer's memory is bounded by one chunk
(``chunk_spans`` spans, default 65,536) whatever the length of the run.

Layout (every integer little-endian)::

    file    := header chunk*
    header  := b"PTLEDGER"  u16 version (1)  u32 n  n bytes of UTF-8 JSON (the meta)
    chunk   := b"PTLC"  u32 n_rows  u32 n_spans  u8 codec  3 bytes 0
               u64 payload bytes  u64 raw bytes  u32 crc32(payload)
               one (u8 width, i64 base) pair per column: ROW_FIELDS then SPAN_FIELDS
               payload
    payload := the columns, each ``value - base`` as an unsigned integer of ``width``
               bytes (1, 2, 4 or 8), n_rows values per row column then n_spans per span
               column, concatenated in field order; codec 1: zlib-compressed, 0: raw

Row columns (:data:`ROW_FIELDS`): ``step``, ``rank``, ``micro`` (micro-batch
within the step), ``row`` (row within the micro-batch), ``spans`` (how many
of the following spans belong to this row), ``positions`` (observed
positions), ``padding`` (positions holding no token: attention mask 0,
segment id 0), ``masked`` (non-padding positions whose label is the ignore
index), ``targets`` (positions whose label reached the loss). Span columns
(:data:`SPAN_FIELDS`): ``doc`` (raw corpus index; :data:`FOREIGN` = tokens of
no corpus document), ``start`` (offset in the document of the first source
token), ``length`` (positions, an inserted BOS included), ``targets``
(positions of the span that reached the loss), ``flags``
(:data:`FLAG_BOS_INSERTED`, :data:`FLAG_AMBIGUOUS`). Spans are in row order,
rows in consumption order.

Each column is stored with the narrowest width that holds its values above
the chunk's minimum (frame-of-reference), then the chunk is compressed with
zlib (level 1 by default): a span costs 5 to 16 bytes before compression and
a few bytes after (``benchmarks/bench_training_ledger.py`` measures it). A
chunk whose CRC does not match, or a file cut inside a chunk, is refused with
an :class:`~packing_theory.errors.InputError` naming the byte offset.

>>> import io
>>> buf = io.BytesIO()
>>> w = LedgerWriter(buf, {"rank": 0})
>>> w.append(np.array([(0, 0, 0, 0, 1, 4, 0, 0, 3)], ROW_DTYPE), np.array([(7, 0, 4, 3, 0)], SPAN_DTYPE))
>>> w.close()
>>> meta, chunks = read_ledger(io.BytesIO(buf.getvalue()))
>>> meta["rank"], [c.spans["doc"].tolist() for c in chunks]
(0, [[7]])
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = [
    "FLAG_AMBIGUOUS",
    "FLAG_BOS_INSERTED",
    "FOREIGN",
    "LEDGER_MAGIC",
    "LEDGER_VERSION",
    "ROW_DTYPE",
    "ROW_FIELDS",
    "SPAN_DTYPE",
    "SPAN_FIELDS",
    "LedgerChunk",
    "LedgerWriter",
    "iter_chunks",
    "read_ledger",
    "read_meta",
]

LEDGER_MAGIC = b"PTLEDGER"
LEDGER_VERSION = 1
_CHUNK_MAGIC = b"PTLC"
FOREIGN = -1
"""The ``doc`` of a span whose tokens are no corpus document's."""
FLAG_BOS_INSERTED = 1
"""The span's first position is the document's BOS inserted before a continuation (``start > 0``)."""
FLAG_AMBIGUOUS = 2
"""Several documents hold the span's tokens; ``doc`` is the one the index chose (content-equal)."""

ROW_FIELDS = ("step", "rank", "micro", "row", "spans", "positions", "padding", "masked", "targets")
SPAN_FIELDS = ("doc", "start", "length", "targets", "flags")
ROW_DTYPE = np.dtype([(name, "<i8") for name in ROW_FIELDS])
SPAN_DTYPE = np.dtype([(name, "<i8") for name in SPAN_FIELDS])

_HEAD = struct.Struct("<4sIIB3xQQI")
_COL = struct.Struct("<Bq")
_WIDTHS: dict[int, np.dtype[Any]] = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"),
                                     8: np.dtype("<u8")}


@dataclass(frozen=True)
class LedgerChunk:
    """One chunk read back: its rows and spans (structured arrays of ``ROW_DTYPE`` and ``SPAN_DTYPE``)."""

    rows: npt.NDArray[Any]
    spans: npt.NDArray[Any]

    def row_of_span(self) -> npt.NDArray[np.int64]:
        """For every span, the index of its row in :attr:`rows`. O(spans)."""
        return np.repeat(np.arange(self.rows.size, dtype=np.int64), self.rows["spans"])


def _encode_column(values: npt.NDArray[np.int64]) -> tuple[int, int, bytes]:
    """``(width, base, bytes)``: ``values - base`` in the narrowest unsigned width."""
    if values.size == 0:
        return 1, 0, b""
    base = int(values.min())
    span = int(values.max()) - base
    width = next(w for w in (1, 2, 4, 8) if span < (1 << (8 * w)))
    shifted = (values.astype(np.int64) - np.int64(base)).view(np.uint64) if base else values.view(np.uint64)
    return width, base, shifted.astype(_WIDTHS[width]).tobytes()


class LedgerWriter:
    """Append rows and spans to a ledger file, one chunk per :meth:`append` call.

    Args:
        target: a path (created or truncated) or a binary file object.
        meta: the header's JSON object (the ledger's identity: corpus fingerprint, rank, ...).
        level: zlib level, 0 = store the columns raw.

    Memory: one chunk's columns. Each :meth:`append` writes one chunk: O(rows + spans).
    """

    def __init__(self, target: str | os.PathLike[str] | IO[bytes], meta: dict[str, Any], *,
                 level: int = 1) -> None:
        self.level = check_int("level", level, 0, maximum=9)
        self._own = not hasattr(target, "write")
        self._fh: IO[bytes] = (open(target, "wb") if isinstance(target, (str, os.PathLike))  # noqa: SIM115
                               else target)
        text = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8")
        self._fh.write(LEDGER_MAGIC + struct.pack("<HI", LEDGER_VERSION, len(text)) + text)
        self.bytes_written = len(LEDGER_MAGIC) + 6 + len(text)
        self.rows_written = 0
        self.spans_written = 0
        self.closed = False

    def append(self, rows: npt.NDArray[Any], spans: npt.NDArray[Any]) -> None:
        """Write one chunk.

        Raises:
            InputError: the rows' span counts do not add up to the spans given, or the writer is closed.
        """
        if self.closed:
            raise InputError("the ledger writer is closed")
        if int(rows["spans"].sum()) != spans.size:
            raise InputError(f"rows announce {int(rows['spans'].sum())} spans, {spans.size} given")
        cols: list[bytes] = []
        heads: list[bytes] = []
        for table, fields in ((rows, ROW_FIELDS), (spans, SPAN_FIELDS)):
            for name in fields:
                width, base, data = _encode_column(np.ascontiguousarray(table[name], dtype=np.int64))
                heads.append(_COL.pack(width, base))
                cols.append(data)
        raw = b"".join(cols)
        codec = 1 if self.level else 0
        payload = zlib.compress(raw, self.level) if codec else raw
        head = _HEAD.pack(_CHUNK_MAGIC, rows.size, spans.size, codec, len(payload), len(raw),
                          zlib.crc32(payload))
        blob = head + b"".join(heads) + payload
        self._fh.write(blob)
        self.bytes_written += len(blob)
        self.rows_written += int(rows.size)
        self.spans_written += int(spans.size)

    def flush(self) -> None:
        """Flush the file object."""
        self._fh.flush()

    def _check(self) -> None:
        """Assert the counters: non-negative; the bytes written are the size of a seekable file."""
        assert self.rows_written >= 0 and self.spans_written >= 0
        if not self.closed and self._fh.seekable():
            assert self._fh.tell() == self.bytes_written, (self._fh.tell(), self.bytes_written)

    def close(self) -> None:
        """Flush, and close the file if the writer opened it (idempotent)."""
        if self.closed:
            return
        self._fh.flush()
        if self._own:
            self._fh.close()
        self.closed = True


def _open(source: str | os.PathLike[str] | IO[bytes]) -> tuple[IO[bytes], bool]:
    """The file to read from its start (a file object is rewound: a ledger is read in several passes)."""
    if hasattr(source, "read"):
        source.seek(0)  # type: ignore[union-attr]
        return source, False  # type: ignore[return-value]
    return open(source, "rb"), True


def _read_exact(fh: IO[bytes], n: int, what: str, offset: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise InputError(f"ledger is truncated: {what} at byte {offset} needs {n} bytes, {len(data)} remain")
    return data


def _meta(fh: IO[bytes], name: str) -> tuple[dict[str, Any], int]:
    head = fh.read(len(LEDGER_MAGIC) + 6)
    if len(head) < len(LEDGER_MAGIC) + 6 or head[: len(LEDGER_MAGIC)] != LEDGER_MAGIC:
        raise InputError(f"{name} is not a packing_theory training ledger (no {LEDGER_MAGIC!r} header)")
    version, n = struct.unpack("<HI", head[len(LEDGER_MAGIC):])
    if version != LEDGER_VERSION:
        raise InputError(f"{name}: ledger version {version} is not supported (this library reads "
                         f"version {LEDGER_VERSION})")
    text = _read_exact(fh, n, "the header", len(head))
    try:
        meta = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{name}: the ledger header is not JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise InputError(f"{name}: the ledger header must be a JSON object")
    return meta, len(head) + n


def _decode(fh: IO[bytes], offset: int, name: str) -> tuple[LedgerChunk, int] | None:
    head = fh.read(_HEAD.size)
    if not head:
        return None
    if len(head) < _HEAD.size:
        raise InputError(f"{name}: ledger is truncated: a chunk header at byte {offset} is cut short")
    magic, n_rows, n_spans, codec, n_payload, n_raw, crc = _HEAD.unpack(head)
    if magic != _CHUNK_MAGIC or codec not in (0, 1):
        raise InputError(f"{name}: no chunk at byte {offset} (magic {magic!r}, codec {codec})")
    fields = ROW_FIELDS + SPAN_FIELDS
    cols = [_COL.unpack(_read_exact(fh, _COL.size, "a column header", offset)) for _ in fields]
    payload = _read_exact(fh, n_payload, "a chunk payload", offset)
    if zlib.crc32(payload) != crc:
        raise InputError(f"{name}: the chunk at byte {offset} is corrupt (CRC mismatch)")
    raw = zlib.decompress(payload) if codec else payload
    if len(raw) != n_raw:
        raise InputError(f"{name}: the chunk at byte {offset} holds {len(raw)} bytes, its header says "
                         f"{n_raw}")
    rows = np.zeros(n_rows, ROW_DTYPE)
    spans = np.zeros(n_spans, SPAN_DTYPE)
    pos = 0
    for i, (width, base) in enumerate(cols):
        if width not in _WIDTHS:
            raise InputError(f"{name}: the chunk at byte {offset} has a column of width {width}")
        table, n = (rows, n_rows) if i < len(ROW_FIELDS) else (spans, n_spans)
        end = pos + n * width
        if end > len(raw):
            raise InputError(f"{name}: the chunk at byte {offset} is shorter than its columns")
        values = np.frombuffer(raw[pos:end], dtype=_WIDTHS[width]).astype(np.uint64)
        table[fields[i]] = (values + np.uint64(base & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
        pos = end
    if pos != len(raw) or int(rows["spans"].sum()) != n_spans:
        raise InputError(f"{name}: the chunk at byte {offset} is inconsistent (columns or span counts)")
    size = _HEAD.size + len(cols) * _COL.size + n_payload
    return LedgerChunk(rows, spans), offset + size


def iter_chunks(source: str | os.PathLike[str] | IO[bytes]) -> Iterator[LedgerChunk]:
    """The chunks of a ledger, one at a time (memory: one chunk). Checks every CRC.

    Raises:
        InputError: not a ledger, another version, a corrupt or truncated chunk (naming its byte offset).
    """
    fh, own = _open(source)
    name = repr(os.fspath(source)) if own else "the ledger"  # type: ignore[arg-type]
    try:
        _, offset = _meta(fh, name)
        while (got := _decode(fh, offset, name)) is not None:
            chunk, offset = got
            yield chunk
    finally:
        if own:
            fh.close()


def read_meta(source: str | os.PathLike[str] | IO[bytes]) -> dict[str, Any]:
    """The header's JSON object of a ledger."""
    fh, own = _open(source)
    try:
        return _meta(fh, repr(os.fspath(source)) if own else "the ledger")[0]  # type: ignore[arg-type]
    finally:
        if own:
            fh.close()


def read_ledger(source: str | os.PathLike[str] | IO[bytes]) -> tuple[dict[str, Any], list[LedgerChunk]]:
    """The header and every chunk of a ledger (memory: the whole ledger; :func:`iter_chunks` streams)."""
    return read_meta(source), list(iter_chunks(source))
