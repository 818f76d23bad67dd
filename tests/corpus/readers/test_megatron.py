"""A Megatron index is read from the mapped ``.idx``: one int64 result, O(chunk) scratch, no ``.bin``."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers.megatron import INDEX_HEADER, MegatronIndex
from packing_theory.errors import InputError

N = 3_000_000


def _write_index(prefix: Path, sizes: np.ndarray) -> None:
    n = int(sizes.size)
    with open(f"{prefix}.idx", "wb") as fh:
        fh.write(INDEX_HEADER + (1).to_bytes(8, "little") + bytes([8]) + n.to_bytes(8, "little")
                 + (n + 1).to_bytes(8, "little"))
        fh.write(sizes.astype(np.int32).tobytes())
        pointers = np.zeros(n, dtype=np.int64)
        np.cumsum(sizes[:-1].astype(np.int64) * 2, out=pointers[1:])
        fh.write(pointers.tobytes())
        fh.write(np.arange(n + 1, dtype=np.int64).tobytes())


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    prefix = tmp_path_factory.mktemp("megatron") / "big"
    sizes = np.random.default_rng(3).integers(1, 4096, N).astype(np.int32)
    _write_index(prefix, sizes)
    return prefix, sizes


@pytest.mark.parametrize("bos", ["included", "add"])
def test_lengths_allocate_the_result_only(big_index: tuple[Path, np.ndarray], bos: str) -> None:
    prefix, sizes = big_index
    tracemalloc.start()
    try:
        index = MegatronIndex(prefix, bos=bos)  # type: ignore[arg-type]
        lengths = index.lengths()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    result = N * 8
    assert peak < result + result // 4, f"peak {peak:,} B for an int64 result of {result:,} B"
    assert np.array_equal(lengths, sizes.astype(np.int64) + (bos == "add"))
    index._check()


def test_zero_token_document_named(tmp_path: Path) -> None:
    sizes = np.ones((1 << 20) + 5, dtype=np.int32)
    sizes[(1 << 20) + 2] = 0
    _write_index(tmp_path / "z", sizes)
    with pytest.raises(InputError, match=rf"document {(1 << 20) + 2} holds 0 tokens"):
        MegatronIndex(tmp_path / "z", bos="included").lengths()
    assert MegatronIndex(tmp_path / "z", bos="add").lengths()[(1 << 20) + 2] == 1


def _write_raw(prefix: Path, sizes: list[int], docs: list[int], pointers: list[int] | None = None) -> None:
    n = len(sizes)
    ptr = np.zeros(n, dtype=np.int64)
    np.cumsum(np.array(sizes[:-1], dtype=np.int64) * 2, out=ptr[1:])
    with open(f"{prefix}.idx", "wb") as fh:
        fh.write(INDEX_HEADER + (1).to_bytes(8, "little") + bytes([8]) + n.to_bytes(8, "little")
                 + len(docs).to_bytes(8, "little"))
        fh.write(np.array(sizes, dtype=np.int32).tobytes())
        fh.write((ptr if pointers is None else np.array(pointers, dtype=np.int64)).tobytes())
        fh.write(np.array(docs, dtype=np.int64).tobytes())


@pytest.mark.parametrize("bos", ["included", "add"])
def test_a_negative_sequence_length_is_refused_in_every_document(tmp_path: Path, bos: str) -> None:
    """Before the fix sequences [5, -3, 9] with document index [0, 2, 3] read as lengths [2, 9] (exit 0);
    in a one-sequence document the same length was refused."""
    _write_raw(tmp_path / "m", [5, -3, 9], [0, 2, 3])
    with pytest.raises(InputError, match=r"sequence 1 \(of document 0\) has length -3: a damaged index"):
        MegatronIndex(tmp_path / "m", bos=bos).lengths()  # type: ignore[arg-type]
    _write_raw(tmp_path / "one", [5, -3, 9], [0, 1, 2, 3])
    with pytest.raises(InputError, match=r"sequence 1 \(of document 1\) has length -3"):
        MegatronIndex(tmp_path / "one", bos=bos).lengths()  # type: ignore[arg-type]


def test_a_length_its_pointers_disagree_with_is_refused(tmp_path: Path) -> None:
    """A damaged length would change a document's length silently; the pointers written from the lengths
    say which is damaged."""
    _write_raw(tmp_path / "m", [5, 4, 9], [0, 2, 3], pointers=[0, 10, 20])  # 20 should be 18
    with pytest.raises(InputError, match=r"sequence 2 \(of document 1\) starts at byte 20, but the lengths "
                                         r"before it put it at 18: a damaged index"):
        MegatronIndex(tmp_path / "m", bos="included")
    _write_raw(tmp_path / "ok", [5, 4, 9], [0, 2, 3])
    assert MegatronIndex(tmp_path / "ok", bos="included").lengths().tolist() == [9, 9]
