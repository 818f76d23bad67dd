"""Fuzz the saved Hugging Face dataset reader (fixtures written by ``datasets``' ``save_to_disk``): a
damaged Arrow file or ``state.json`` is refused, or read as pyarrow reads the same bytes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

datasets = pytest.importorskip("datasets", reason="datasets is not installed: pip install datasets")
pa = pytest.importorskip("pyarrow")

ROWS = [list(range(n)) for n in (3, 1, 7, 2, 5, 4, 9, 6, 8, 2, 3)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hf") / "ds"
    ds = datasets.Dataset.from_dict({"input_ids": ROWS})
    ds.save_to_disk(str(root), max_shard_size="2KB")  # one Arrow file ...
    return root


def _arrow(root: Path) -> Path:
    return sorted(root.glob("*.arrow"))[0]


def _oracle(data: bytes) -> list[int] | None:
    """The list lengths pyarrow reads from the stream bytes (each batch validated), or None."""
    try:
        reader = pa.ipc.open_stream(pa.BufferReader(data))
        out: list[int] = []
        for batch in reader:
            col = batch.column("input_ids")
            col.validate(full=True)
            out.extend(np.diff(np.asarray(col.offsets)).tolist())
        return out
    except Exception:  # pyarrow refuses the bytes: so must the reader
        return None


def _structural(data: bytes) -> list[int]:
    """Where each IPC message starts (its continuation marker) and where its length field is."""
    return [m.start() + d for m in re.finditer(b"\xff\xff\xff\xff", data) for d in (0, 4, 8)]


def _check(root: Path, data: bytes, what: str, *, state: bytes | None = None) -> None:
    if state is None:
        _arrow(root).write_bytes(data)
    else:
        (root / "state.json").write_bytes(state)
    got = read_or_refuse(lambda: open_data([str(root)], "hf", bos="included").lengths().tolist(), what)
    if got is not None:
        want = _oracle(_arrow(root).read_bytes())
        assert want is not None and got == want, f"{what}: read {got}, pyarrow reads {want}"


def _run(saved: Path, tmp_path: Path, all_offsets: bool) -> None:
    root = Path(shutil.copytree(saved, tmp_path / "ds"))
    data = _arrow(root).read_bytes()
    state = (root / "state.json").read_bytes()
    _check(root, data, "the intact dataset")
    assert _oracle(data) == [len(r) for r in ROWS]
    structural = _structural(data)
    for cut in cuts(len(data), structural, all_offsets=all_offsets):
        _check(root, data[:cut], f"Arrow file cut at {cut}")
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets, every_bit_of=structural):
        _check(root, flipped(data, byte, bit), f"Arrow file: bit {bit} of byte {byte}")
    _arrow(root).write_bytes(data)
    for cut in cuts(len(state), [i for i, c in enumerate(state) if c in b'{}[]":,'], all_offsets=all_offsets):
        _check(root, data, f"state.json cut at {cut}", state=state[:cut])
    for byte, bit in bit_flips(range(len(state)), all_bits=all_offsets):
        _check(root, data, f"state.json: bit {bit} of byte {byte}", state=flipped(state, byte, bit))


def test_hf_truncations_and_bit_flips(saved: Path, tmp_path: Path) -> None:
    _run(saved, tmp_path, every())


@pytest.mark.slow
def test_hf_every_offset_and_bit(saved: Path, tmp_path: Path) -> None:
    _run(saved, tmp_path, True)


def test_the_fixture_is_what_save_to_disk_writes(saved: Path) -> None:
    assert json.loads((saved / "state.json").read_text())["_data_files"][0]["filename"].endswith(".arrow")
