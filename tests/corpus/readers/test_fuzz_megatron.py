"""Fuzz the Megatron indexed-dataset reader (fixtures written by megatron-core's ``IndexedDatasetBuilder``):
a damaged ``.idx`` is refused, or read as megatron-core's own index reader reads the same bytes."""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("torch") is None:
    pytest.skip("megatron-core (with torch) is not installed: pip install megatron-core",
                allow_module_level=True)

DOCS = [[[5, 6, 7], [8, 9]], [[1]], [[2, 3, 4, 5]], [[6], [7], [8, 9, 10]], [[11, 12]]]  # sequences per doc


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

        prefix = tmp_path_factory.mktemp("megatron") / "d"
        builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
        for doc in DOCS:
            for seq in doc:
                builder.add_item(torch.tensor(seq, dtype=torch.int64))
            builder.end_document()
        builder.finalize(f"{prefix}.idx")
    return prefix


def _oracle(idx: Path) -> list[int] | None:
    """Document lengths as megatron-core's ``_IndexReader`` reads the index (sum of its sequences)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import _IndexReader
    try:
        index = _IndexReader(str(idx), multimodal=False)
        lengths = np.asarray(index.sequence_lengths, dtype=np.int64)
        bounds = np.asarray(index.document_indices, dtype=np.int64)
        out = [int(lengths[a:b].sum()) for a, b in itertools.pairwise(bounds)]
    except Exception:  # megatron-core cannot read it: neither may the reader
        return None
    if (lengths < 0).any() or (np.diff(bounds) < 0).any() or min(out, default=0) < 1:
        return None  # read by megatron-core, but not a dataset: negative or empty
    return out


def _check(prefix: Path, data: bytes, what: str) -> None:
    idx = Path(f"{prefix}.idx")
    idx.write_bytes(data)
    got = read_or_refuse(lambda: open_data([str(idx)], "megatron", bos="included").lengths().tolist(), what)
    if got is not None:
        want = _oracle(idx)
        assert want is not None and got == want, f"{what}: read {got}, megatron-core reads {want}"


def _run(written: Path, tmp_path: Path, all_offsets: bool) -> None:
    prefix = tmp_path / "d"
    shutil.copy(f"{written}.bin", f"{prefix}.bin")
    data = Path(f"{written}.idx").read_bytes()
    n_seq = sum(len(d) for d in DOCS)
    fields = [0, 9, 17, 18, 26, 34, 34 + 4 * n_seq, 34 + 12 * n_seq, len(data)]
    _check(prefix, data, "the intact index")
    assert _oracle(Path(f"{written}.idx")) == [sum(map(len, d)) for d in DOCS]
    for cut in cuts(len(data), fields, all_offsets=all_offsets):
        _check(prefix, data[:cut], f"cut at {cut}")
    lengths_and_index = [*range(34, 34 + 4 * n_seq), *range(34 + 12 * n_seq, len(data))]
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets, every_bit_of=lengths_and_index):
        _check(prefix, flipped(data, byte, bit), f"bit {bit} of byte {byte}")
    Path(f"{prefix}.idx").write_bytes(data)
    whole = Path(f"{written}.bin").read_bytes()
    for cut in (0, 1, len(whole) - 2, len(whole) - 1):
        Path(f"{prefix}.bin").write_bytes(whole[:cut])
        _check(prefix, data, f".bin cut at {cut}")


def test_megatron_truncations_and_bit_flips(written: Path, tmp_path: Path) -> None:
    _run(written, tmp_path, every())


@pytest.mark.slow
def test_megatron_every_offset_and_bit(written: Path, tmp_path: Path) -> None:
    _run(written, tmp_path, True)
