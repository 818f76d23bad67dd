"""Fuzz the seed-002 token-shard reader: a damaged shard is refused, or read as its own bytes say."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from packing_theory.corpus.shards import write_shard
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

DOCS = [[1, 5, 6], [1, 7], [1], [1, 2, 3, 4, 5, 6], [1, 9, 9]]


def _oracle(data: bytes) -> list[int] | None:
    """The layout of seed 002 section 10, parsed here: header, cumulative offsets, ids; exact size."""
    if len(data) < 16:
        return None
    vocab, n_docs, n_tokens, _ = struct.unpack("<IIII", data[:16])
    if not 0 < vocab <= 1 << 16 or len(data) != 16 + 4 * (n_docs + 1) + 2 * n_tokens:
        return None
    offsets = np.frombuffer(data[16 : 16 + 4 * (n_docs + 1)], dtype="<u4").astype(np.int64)
    lengths = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != n_tokens or (lengths < 1).any():
        return None
    return lengths.tolist() or None


def _check(path: Path, data: bytes, what: str) -> None:
    path.write_bytes(data)
    got = read_or_refuse(lambda: open_data([str(path)], "shards").lengths().tolist(), what)
    if got is not None:
        want = _oracle(data)
        assert want is not None and got == want, f"{what}: read {got}, the bytes say {want}"


def _run(tmp_path: Path, all_offsets: bool) -> None:
    path = tmp_path / "s.bin"
    write_shard(path, DOCS, vocab=16)
    data = path.read_bytes()
    _check(path, data, "the intact shard")
    assert _oracle(data) == [len(d) for d in DOCS]
    index_end = 16 + 4 * (len(DOCS) + 1)
    for cut in cuts(len(data), [0, 4, 8, 12, 16, index_end], all_offsets=all_offsets):
        _check(path, data[:cut], f"cut at {cut}")
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets, every_bit_of=range(index_end)):
        _check(path, flipped(data, byte, bit), f"bit {bit} of byte {byte}")


def test_shard_truncations_and_bit_flips(tmp_path: Path) -> None:
    _run(tmp_path, every())


@pytest.mark.slow
def test_shard_every_offset_and_bit(tmp_path: Path) -> None:
    _run(tmp_path, True)
