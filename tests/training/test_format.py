"""The ledger file: round trips, narrow columns, and every kind of damage refused with its byte offset."""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory.errors import InputError
from packing_theory.training.format import (
    LEDGER_MAGIC,
    ROW_DTYPE,
    SPAN_DTYPE,
    LedgerWriter,
    iter_chunks,
    read_ledger,
    read_meta,
)


def tables(spans_per_row: list[int], values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.zeros(len(spans_per_row), ROW_DTYPE)
    rows["spans"] = spans_per_row
    for i, name in enumerate(ROW_DTYPE.names):
        if name != "spans":
            rows[name] = [values[(i + j) % len(values)] for j in range(rows.size)]
    spans = np.zeros(sum(spans_per_row), SPAN_DTYPE)
    for i, name in enumerate(SPAN_DTYPE.names):
        spans[name] = [values[(3 * i + j) % len(values)] for j in range(spans.size)]
    return rows, spans


@given(st.lists(st.lists(st.integers(0, 4), max_size=5), min_size=1, max_size=4),
       st.lists(st.integers(-1, 2**41), min_size=1, max_size=9), st.integers(0, 9))
@settings(deadline=None)
def test_round_trip(chunks: list[list[int]], values: list[int], level: int) -> None:
    buf = io.BytesIO()
    w = LedgerWriter(buf, {"rank": 3, "note": "x"}, level=level)
    written = [tables(c, values) for c in chunks]
    for rows, spans in written:
        w.append(rows, spans)
        w._check()
    w.close()
    meta, got = read_ledger(io.BytesIO(buf.getvalue()))
    assert meta == {"rank": 3, "note": "x"}
    assert len(got) == len(written)
    for c, (rows, spans) in zip(got, written, strict=True):
        assert c.rows.tolist() == rows.tolist() and c.spans.tolist() == spans.tolist()
        assert c.row_of_span().tolist() == [i for i, n in enumerate(rows["spans"]) for _ in range(n)]
    assert w.bytes_written == len(buf.getvalue())


def test_columns_are_narrow() -> None:
    """Small values cost one byte a column: 5 bytes a span before compression."""
    rows = np.zeros(1, ROW_DTYPE)
    rows["spans"] = 10_000
    spans = np.zeros(10_000, SPAN_DTYPE)
    spans["doc"] = np.arange(10_000) % 200
    spans["length"] = 31
    buf = io.BytesIO()
    w = LedgerWriter(buf, {}, level=0)
    w.append(rows, spans)
    w.close()
    assert w.bytes_written < 5 * 10_000 + 300


def _ledger(level: int = 1) -> bytes:
    buf = io.BytesIO()
    w = LedgerWriter(buf, {"rank": 0}, level=level)
    w.append(*tables([2, 1], [5, 6, 7]))
    w.append(*tables([1], [8]))
    w.close()
    return buf.getvalue()


def _header_size() -> int:
    return len(LEDGER_MAGIC) + 6 + len(b'{"rank":0}')


def test_damage_is_refused_with_its_offset(tmp_path: Any) -> None:
    data = _ledger()
    bad = bytearray(data)
    bad[-1] ^= 0xFF  # the last chunk's payload
    with pytest.raises(InputError, match=r"the chunk at byte \d+ is corrupt \(CRC mismatch\)"):
        list(iter_chunks(io.BytesIO(bytes(bad))))
    with pytest.raises(InputError, match="ledger is truncated"):
        list(iter_chunks(io.BytesIO(data[:-3])))
    with pytest.raises(InputError, match=f"no chunk at byte {_header_size()}"):
        list(iter_chunks(io.BytesIO(data[: _header_size()] + b"XXXX" + data[_header_size() + 4 :])))
    path = tmp_path / "x.ptl"
    path.write_bytes(b"not a ledger at all")
    with pytest.raises(InputError, match=r"x\.ptl' is not a packing_theory training ledger"):
        read_meta(path)
    path.write_bytes(LEDGER_MAGIC + struct.pack("<HI", 2, 2) + b"{}")
    with pytest.raises(InputError, match="ledger version 2 is not supported"):
        read_meta(path)
    path.write_bytes(LEDGER_MAGIC + struct.pack("<HI", 1, 2) + b"[]")
    with pytest.raises(InputError, match="header must be a JSON object"):
        read_meta(path)


def test_writer_refuses_misuse(tmp_path: Any) -> None:
    w = LedgerWriter(tmp_path / "a.ptl", {})
    rows, spans = tables([2], [1])
    with pytest.raises(InputError, match="rows announce 2 spans, 1 given"):
        w.append(rows, spans[:1])
    w.close()
    w.close()  # idempotent
    with pytest.raises(InputError, match="closed"):
        w.append(rows, spans)
    with pytest.raises(InputError, match="level must be <= 9"):
        LedgerWriter(io.BytesIO(), {}, level=10)
    assert read_ledger(tmp_path / "a.ptl") == ({}, [])
