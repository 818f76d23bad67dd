"""Fuzz the OLMo-core token-array reader (the committed fixture of ``tests/data/readers/olmo``): a damaged
array or metadata file is refused, or read as OLMo-core's rules read the same bytes."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

DATA = Path(__file__).resolve().parents[2] / "data" / "readers" / "olmo"
EXPECTED = json.loads((DATA / "expected.json").read_text())
EOS = int(EXPECTED["eos_id"])


def _metadata_oracle(array: bytes, meta: bytes) -> list[int] | None:
    """Lengths from the ``start,end`` lines of the gzip metadata (OLMo-core's ranges), checked."""
    if len(array) % 2:
        return None
    try:
        lines = gzip.decompress(meta).decode("utf-8").splitlines()
        ranges = [tuple(int(f) for f in line.split(",")[:2]) for line in lines]
    except (OSError, EOFError, ValueError):
        return None
    prev, out = 0, []
    for start, end in ranges:
        if not prev <= start < end <= len(array) // 2:
            return None
        out.append(end - start)
        prev = end
    return out or None


def _eos_oracle(array: bytes) -> list[int] | None:
    """Lengths from the EOS positions (OLMo-core's ``iter_document_indices``): a document ends at its EOS."""
    if len(array) % 2:
        return None
    ends = np.flatnonzero(np.frombuffer(array, dtype="<u2") == EOS) + 1
    return np.diff(np.concatenate(([0], ends))).tolist() or None


def _check(root: Path, array: bytes, meta: bytes, what: str) -> None:
    (root / "part-0-00000.npy").write_bytes(array)
    (root / "part-0-00000.csv.gz").write_bytes(meta)
    path = str(root / "part-0-00000.npy")
    got = read_or_refuse(lambda: open_data([path], "olmo", bos="included", dtype="uint16").lengths().tolist(),
                         f"metadata: {what}")
    if got is not None:
        want = _metadata_oracle(array, meta)
        assert want is not None and got == want, f"{what}: read {got}, the metadata says {want}"
    got = read_or_refuse(lambda: open_data([path], "olmo", bos="included", dtype="uint16",
                                           eos_id=EOS).lengths().tolist(), f"eos: {what}")
    if got is not None:
        want = _eos_oracle(array)
        assert want is not None and got == want, f"{what}: read {got}, the EOS ids say {want}"


def _run(tmp_path: Path, all_offsets: bool) -> None:
    root = tmp_path / "olmo"
    root.mkdir()
    array, meta = (DATA / "part-0-00000.npy").read_bytes(), (DATA / "part-0-00000.csv.gz").read_bytes()
    _check(root, array, meta, "the intact files")
    assert _metadata_oracle(array, meta) == _eos_oracle(array) == [len(d) + 1 for d in EXPECTED["documents"]]
    ends = [2 * e for e in np.flatnonzero(np.frombuffer(array, dtype="<u2") == EOS) + 1]
    for cut in cuts(len(array), ends[:4] + ends[-4:], all_offsets=all_offsets):
        _check(root, array[:cut], meta, f"array cut at {cut}")
    for byte, bit in bit_flips(range(len(array)), all_bits=all_offsets, every_bit_of=ends[:2]):
        _check(root, flipped(array, byte, bit), meta, f"array: bit {bit} of byte {byte}")
    for cut in cuts(len(meta), [10, len(meta) - 8, len(meta) - 4], all_offsets=all_offsets):
        _check(root, array, meta[:cut], f"metadata cut at {cut}")
    for byte, bit in bit_flips(range(len(meta)), all_bits=all_offsets, every_bit_of=range(10)):
        _check(root, array, flipped(meta, byte, bit), f"metadata: bit {bit} of byte {byte}")


def test_olmo_truncations_and_bit_flips(tmp_path: Path) -> None:
    _run(tmp_path, every())


@pytest.mark.slow
def test_olmo_every_offset_and_bit(tmp_path: Path) -> None:
    _run(tmp_path, True)


def test_the_fixture_is_the_committed_one(tmp_path: Path) -> None:
    shutil.copy(DATA / "part-0-00000.npy", tmp_path / "a.npy")
    assert len(_eos_oracle((tmp_path / "a.npy").read_bytes()) or []) == len(EXPECTED["documents"])
