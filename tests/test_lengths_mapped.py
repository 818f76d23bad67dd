"""Lengths files are memory-mapped: reading and summarising them allocates O(chunk), not O(n)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from packing_theory.audit.strata import STRATA_BOUNDARIES
from packing_theory.errors import InputError
from packing_theory.lengths import VALIDATE_CHUNK, load_lengths, release_pages, validate_lengths
from packing_theory.orchestration.audit import corpus_summary

T = TypeVar("T")
N = 16 * VALIDATE_CHUNK  # 128 MiB of int64 lengths


@pytest.fixture(scope="module")
def big_npy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lengths") / "lengths.npy"
    rng = np.random.default_rng(0)
    np.save(path, rng.integers(1, 5000, N, dtype=np.int64))
    return path


def _peak(fn: Callable[[], T]) -> tuple[T, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_int64_lengths_are_mapped_not_copied(big_npy: Path) -> None:
    arr, peak = _peak(lambda: load_lengths(big_npy))
    assert isinstance(arr, np.memmap)
    assert peak < N * 8 // 8, f"peak traced allocation {peak:,} B for a {N * 8:,} B array"
    assert np.array_equal(arr, np.load(big_npy))


def test_corpus_summary_of_a_mapped_array_is_chunked(big_npy: Path) -> None:
    arr = load_lengths(big_npy)
    summary, peak = _peak(lambda: corpus_summary(arr, capacity=2049))
    assert peak < N * 8 // 4, f"peak traced allocation {peak:,} B for a {N * 8:,} B array"
    full = np.load(big_npy)
    assert summary.tokens == int(full.sum())
    assert summary.over_capacity_documents == int((full > 2049).sum())
    assert summary.strata_sources == tuple(
        np.bincount(np.searchsorted(np.array(STRATA_BOUNDARIES), full), minlength=9).tolist())


def test_a_mapped_array_validated_whole_is_not_read_again(big_npy: Path, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """An audit's steps each validate the mapped input: the same read-only map is read once; an array
    that owns its memory is read every time (it could be made writeable and changed in between)."""
    import packing_theory.lengths as lengths_module

    chunks: list[int] = []
    monkeypatch.setattr(lengths_module, "release_pages", lambda part: chunks.append(part.size))
    arr = load_lengths(big_npy)
    assert sum(chunks) == N
    assert validate_lengths(arr) is arr and validate_lengths(arr[5:]) is not None and sum(chunks) == 2 * N - 5
    assert validate_lengths(arr) is arr and sum(chunks) == 2 * N - 5  # the same map: not read again
    for owner in (np.load(big_npy, mmap_mode="r+"), np.load(big_npy)):  # could be made writeable again
        owner.setflags(write=False)
        validate_lengths(owner)
        owner.setflags(write=True)
        kept, owner[7] = owner[7], 0
        try:
            with pytest.raises(InputError, match=r"lengths\[7\] must be a positive"):
                validate_lengths(owner)
        finally:
            owner[7] = kept  # the file as it was, for the module's other tests
    empty = arr[:0]
    assert validate_lengths(empty, allow_empty=True).size == 0
    with pytest.raises(InputError, match="is empty"):
        validate_lengths(empty)
    owned = np.load(big_npy)
    owned.setflags(write=False)
    validate_lengths(owned)
    owned.setflags(write=True)
    owned[7] = 0
    with pytest.raises(InputError, match=r"lengths\[7\] must be a positive"):
        validate_lengths(owned)


def test_in_memory_load_still_available(big_npy: Path) -> None:
    arr = load_lengths(big_npy, mmap=False)
    assert not isinstance(arr, np.memmap)
    assert arr.dtype == np.int64 and arr.size == N


def test_narrow_dtype_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "u16.npy"
    np.save(path, np.array([3, 1, 7], dtype=np.uint16))
    arr = load_lengths(path)
    assert arr.dtype == np.int64 and arr.tolist() == [3, 1, 7]


def test_bad_length_found_in_a_later_chunk(tmp_path: Path) -> None:
    values = np.ones(VALIDATE_CHUNK + 10, dtype=np.int64)
    values[VALIDATE_CHUNK + 3] = 0
    path = tmp_path / "bad.npy"
    np.save(path, values)
    with pytest.raises(InputError, match=rf"\[{VALIDATE_CHUNK + 3}\] must be a positive"):
        load_lengths(path)
    big = np.ones(VALIDATE_CHUNK + 2, dtype=np.uint64)
    big[-1] = np.uint64(1 << 63)
    with pytest.raises(InputError, match=rf"\[{VALIDATE_CHUNK + 1}\] does not fit"):
        validate_lengths(big)


def _rss_file_kib() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssFile:"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_release_pages_drops_a_mapped_files_pages(big_npy: Path) -> None:
    arr = load_lengths(big_npy)
    before = _rss_file_kib()
    total = int(np.asarray(arr[: N // 2]).sum())  # touch half the file: 64 MiB resident
    touched = _rss_file_kib()
    if touched - before < 32 * 1024:
        pytest.skip("the kernel does not report the mapped pages in RssFile")
    release_pages(arr[: N // 2])
    assert _rss_file_kib() - before < 8 * 1024
    assert int(np.asarray(arr[: N // 2]).sum()) == total  # the data are read again from the file
    release_pages(arr)
    validate_lengths(arr)  # a chunked pass: each chunk's pages dropped after its check
    assert _rss_file_kib() - before < 24 * 1024
    release_pages(np.arange(5))  # not mapped: a no-op
