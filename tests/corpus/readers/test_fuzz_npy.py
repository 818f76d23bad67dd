"""Fuzz the ``.npy`` lengths reader: truncations and bit flips are refused, or read as numpy reads them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

LENGTHS = np.array([5, 9, 3, 12, 40, 2, 7, 1, 2049, 3000], dtype=np.int64)


def _fixture(dtype: str) -> bytes:
    buf = io.BytesIO()
    np.save(buf, LENGTHS.astype(dtype))
    return buf.getvalue()


def _oracle(data: bytes) -> np.ndarray | None:
    """What numpy itself reads from the bytes, when it is a valid lengths array (else ``None``)."""
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception:  # numpy refuses it: so must the reader
        return None
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype.kind not in "iu" or not arr.size:
        return None
    if int(arr.min()) < 1 or (arr.dtype.kind == "u" and int(arr.max()) > 2**63 - 1):
        return None
    return arr.astype(np.int64)


def _check(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "lengths.npy"
    path.write_bytes(data)
    got = read_or_refuse(lambda: np.asarray(open_data([str(path)], "lengths").lengths()), what)
    if got is not None:
        want = _oracle(data)
        assert want is not None and np.array_equal(got, want), f"{what}: read {got}, numpy reads {want}"


def _header_end(data: bytes) -> int:
    return data.index(b"\n") + 1


def _run(tmp_path: Path, dtype: str, all_offsets: bool) -> None:
    data = _fixture(dtype)
    _check(tmp_path, data, "the intact file")
    end = _header_end(data)
    for cut in cuts(len(data), [0, 6, 8, 10, end, len(data) - 1], all_offsets=all_offsets):
        _check(tmp_path, data[:cut], f"cut at {cut}")
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets):
        _check(tmp_path, flipped(data, byte, bit), f"bit {bit} of byte {byte}")


@pytest.mark.parametrize("dtype", ["<i8", ">i4", "<u2"])
def test_npy_truncations_and_bit_flips(tmp_path: Path, dtype: str) -> None:
    _run(tmp_path, dtype, every())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["<i8", ">i4"])
def test_npy_every_offset_and_bit(tmp_path: Path, dtype: str) -> None:
    _run(tmp_path, dtype, True)
