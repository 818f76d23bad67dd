"""Fuzz the MDS reader on the committed fixtures (``tests/data/readers/mds``, written by mosaicml-streaming):
a damaged ``index.json`` or shard is refused as bad input, never an internal error or a hang.

``index.json`` and every shard header are checked before ``streaming`` is imported, so without it
(it needs numpy < 2.2) these checks are what runs: a read that gets past them ends in the one-line
"streaming is not installed" (status 2). With ``streaming`` installed, a read that succeeds must give
the fixture's lengths (``expected.json``): a damaged file is never read as other lengths.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

DATA = Path(__file__).resolve().parents[2] / "data" / "readers" / "mds"
EXPECTED = [len(d) + 1 for d in json.loads((DATA / "expected.json").read_text())["documents"]]


def _check(root: Path, target: str, data: bytes, what: str) -> None:
    (root / target).write_bytes(data)
    got = read_or_refuse(lambda: open_data([str(root)], "mds", bos="add", field="tokens").lengths().tolist(),
                         f"{target}: {what}")
    if got is not None:  # only with streaming installed
        assert got == EXPECTED, f"{target}: {what}: read {len(got)} lengths other than the fixture's"


def _json_marks(data: bytes) -> list[int]:
    return [i for i, c in enumerate(data) if c in b'{}[]":,']


def _run(tmp_path: Path, name: str, all_offsets: bool) -> None:
    root = Path(shutil.copytree(DATA / name, tmp_path / name))
    index = (root / "index.json").read_bytes()
    _check(root, "index.json", index, "intact")
    for cut in cuts(len(index), _json_marks(index), all_offsets=all_offsets):
        _check(root, "index.json", index[:cut], f"cut at {cut}")
    for byte, bit in bit_flips(range(len(index)), all_bits=all_offsets):
        _check(root, "index.json", flipped(index, byte, bit), f"bit {bit} of byte {byte}")
    (root / "index.json").write_bytes(index)
    shard = sorted(p.name for p in root.iterdir() if ".mds" in p.name)[0]
    data = (root / shard).read_bytes()
    samples = json.loads(index)["shards"][0]["samples"]
    header = range(min(len(data), 8 + 4 * samples))
    for cut in cuts(len(data), [4, 8, header.stop, len(data) - 1], all_offsets=all_offsets):
        _check(root, shard, data[:cut], f"cut at {cut}")
    for byte, bit in bit_flips(header, all_bits=all_offsets, every_bit_of=range(8)):
        _check(root, shard, flipped(data, byte, bit), f"bit {bit} of byte {byte}")


@pytest.mark.parametrize("name", ["plain", "zstd"])
def test_mds_truncations_and_bit_flips(tmp_path: Path, name: str) -> None:
    _run(tmp_path, name, every())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["plain", "zstd"])
def test_mds_every_offset_and_bit(tmp_path: Path, name: str) -> None:
    _run(tmp_path, name, True)
