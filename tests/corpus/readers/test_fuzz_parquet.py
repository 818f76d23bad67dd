"""Fuzz the parquet text reader: a damaged file is refused, or read as pyarrow reads the same bytes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install 'packing-theory[parquet]'")
pq = pytest.importorskip("pyarrow.parquet")

TEXTS = ["plain ascii", "é accents", "", "x" * 40, "tab\tand \\ backslash", "a longer line " * 5, "last"]


def _fixture(compression: str) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": TEXTS, "n": list(range(len(TEXTS)))}), buf, row_group_size=3,
                   compression=compression)
    return buf.getvalue()


def _structural(data: bytes) -> list[int]:
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    offsets = [0, 4, footer, len(data) - 8, len(data) - 4]
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            offsets += [col.data_page_offset, col.data_page_offset + col.total_compressed_size]
    return offsets


def _oracle(data: bytes) -> list[int] | None:
    """What pyarrow reads from the bytes: BOS-inclusive UTF-8 byte lengths of the text column."""
    try:
        values = pq.read_table(io.BytesIO(data), columns=["text"]).column("text").to_pylist()
        if not all(isinstance(v, str) for v in values):
            return None
        return [len(v.encode("utf-8")) + 1 for v in values]
    except Exception:  # pyarrow refuses the bytes: so must the reader
        return None


def _check(path: Path, data: bytes, what: str) -> None:
    path.write_bytes(data)
    got = read_or_refuse(lambda: open_data([str(path)], "parquet", bos="add").lengths().tolist(), what)
    if got is not None:
        want = _oracle(data)
        assert want is not None and got == want, f"{what}: read {got}, pyarrow reads {want}"


def _run(tmp_path: Path, compression: str, all_offsets: bool) -> None:
    data = _fixture(compression)
    path = tmp_path / "d.parquet"
    _check(path, data, "the intact file")
    assert _oracle(data) == [len(t.encode()) + 1 for t in TEXTS]
    structural = _structural(data)
    for cut in cuts(len(data), structural, all_offsets=all_offsets):
        _check(path, data[:cut], f"cut at {cut}")
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets, every_bit_of=structural):
        _check(path, flipped(data, byte, bit), f"bit {bit} of byte {byte}")


@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_parquet_truncations_and_bit_flips(tmp_path: Path, compression: str) -> None:
    _run(tmp_path, compression, every())


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_parquet_every_offset_and_bit(tmp_path: Path, compression: str) -> None:
    _run(tmp_path, compression, True)
