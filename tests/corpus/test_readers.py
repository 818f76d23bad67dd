"""The format readers against datasets written by the formats' own libraries, byte for byte.

Megatron-LM (megatron-core's ``IndexedDatasetBuilder``) and Hugging Face
``datasets`` (``save_to_disk``) write their fixtures here; OLMo-core and
mosaicml-streaming cannot be installed next to this project's numpy, so their
fixtures were written once by ``tools/reader_fixtures.py`` and are committed
(``tests/data/readers/``); the MDS reader goes through ``streaming`` and its
tests skip without it.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import detect_format, expand_inputs, open_data
from packing_theory.corpus.readers.megatron import MegatronIndex
from packing_theory.corpus.readers.olmo import OlmoTokenArray
from packing_theory.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "readers"


def _docs(n: int, seed: int, high: int = 60000, longest: int = 40) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, high, int(rng.integers(0, longest))) for _ in range(n)]


def _megatron_builder() -> object:
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("megatron-core (with torch) is not installed: pip install megatron-core==0.16.1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    return IndexedDatasetBuilder


# --------------------------------------------------------------------------- Megatron


def test_megatron_lengths_and_ids_equal_what_megatron_core_wrote(tmp_path: Path) -> None:
    builder_cls = _megatron_builder()  # skips without megatron-core and torch
    import torch

    docs = _docs(400, 1)
    docs[7] = np.zeros(0, dtype=np.int64)  # empty: length 1 with bos="add", refused with "included"
    builder = builder_cls(str(tmp_path / "d.bin"), dtype=np.uint16)  # type: ignore[operator]
    for d in docs:
        builder.add_document(torch.from_numpy(d.astype(np.int64)), [d.size])
    builder.finalize(str(tmp_path / "d.idx"))
    index = MegatronIndex(tmp_path / "d.idx", bos="add")
    index._check()
    assert index.dtype == np.uint16 and len(index) == 400 and index.one_sequence_per_document
    assert index.lengths().tolist() == [d.size + 1 for d in docs]
    for i, d in enumerate(docs):
        assert index.document(i).tolist() == d.tolist()
    assert MegatronIndex(tmp_path / "d", bos="included").token_counts().tolist() == [d.size for d in docs]
    with pytest.raises(InputError, match="document 7 holds 0 tokens, so with bos='included'"):
        MegatronIndex(tmp_path / "d", bos="included").lengths()


def test_megatron_documents_of_several_sequences(tmp_path: Path) -> None:
    builder_cls = _megatron_builder()  # skips without megatron-core and torch
    import torch

    rng = np.random.default_rng(2)
    builder = builder_cls(str(tmp_path / "s.bin"), dtype=np.int32)  # type: ignore[operator]
    expected = []
    for _ in range(150):
        parts = [rng.integers(0, 10**6, int(rng.integers(1, 9))) for _ in range(int(rng.integers(1, 4)))]
        for p in parts:
            builder.add_item(torch.from_numpy(p))
        builder.end_document()
        expected.append(np.concatenate(parts))
    builder.finalize(str(tmp_path / "s.idx"))
    index = MegatronIndex(tmp_path / "s.bin", bos="included")
    assert not index.one_sequence_per_document
    assert index.lengths().tolist() == [e.size for e in expected]
    assert all(index.document(i).tolist() == e.tolist() for i, e in enumerate(expected))


def test_megatron_lengths_never_touch_the_bin(tmp_path: Path) -> None:
    builder_cls = _megatron_builder()  # skips without megatron-core and torch
    import torch

    builder = builder_cls(str(tmp_path / "x.bin"), dtype=np.uint16)  # type: ignore[operator]
    for d in _docs(50, 3, longest=20):
        builder.add_document(torch.from_numpy(d.astype(np.int64)), [d.size])
    builder.finalize(str(tmp_path / "x.idx"))
    want = MegatronIndex(tmp_path / "x", bos="add").lengths()
    (tmp_path / "x.bin").unlink()  # lengths come from the index alone
    assert MegatronIndex(tmp_path / "x", bos="add").lengths().tolist() == want.tolist()
    with pytest.raises(FileNotFoundError, match=r"x\.bin"):
        MegatronIndex(tmp_path / "x", bos="add").document(0)
    (tmp_path / "x.bin").write_bytes(b"\0" * 3)  # a .bin that is not this index's: refused by its size
    with pytest.raises(InputError, match="does not belong together"):
        MegatronIndex(tmp_path / "x", bos="add")


def test_megatron_index_errors_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "b.idx"
    bad.write_bytes(b"NOTANIDX" + b"\0" * 40)
    with pytest.raises(InputError, match=r"b.idx' does not start with the header"):
        MegatronIndex(bad, bos="add")
    head = b"MMIDIDX\x00\x00" + (2).to_bytes(8, "little") + bytes([8]) + (0).to_bytes(8, "little") * 2
    bad.write_bytes(head)
    with pytest.raises(InputError, match="has version 2; version 1 is supported"):
        MegatronIndex(bad, bos="add")
    head = b"MMIDIDX\x00\x00" + (1).to_bytes(8, "little") + bytes([8]) + (2).to_bytes(8, "little") + \
        (3).to_bytes(8, "little")
    bad.write_bytes(head + b"\0" * 10)
    with pytest.raises(InputError, match="truncated or not a Megatron index"):
        MegatronIndex(bad, bos="add")
    with pytest.raises(InputError, match="bos for megatron data must be 'included'"):
        MegatronIndex(bad, bos="auto")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Hugging Face


def _datasets() -> object:
    if importlib.util.find_spec("datasets") is None:
        pytest.skip("datasets is not installed: pip install datasets")
    import datasets

    datasets.disable_progress_bars()
    return datasets


def test_hf_tokenized_dataset_lengths_and_ids(tmp_path: Path) -> None:
    datasets = _datasets()
    docs = [[*d.tolist(), 2] for d in _docs(600, 4)]  # every row ends with its EOS (id 2)
    ds = datasets.Dataset.from_dict({"input_ids": docs, "text": ["é" * len(d) for d in docs]})  # type: ignore[attr-defined]
    ds.save_to_disk(str(tmp_path / "ds"), num_shards=3)
    paths, fmt, why = expand_inputs([str(tmp_path / "ds")])
    assert fmt == "hf" and "save_to_disk" in why
    reader = open_data(paths, fmt, bos="included")
    assert reader.lengths().tolist() == [len(d) for d in docs] and len(reader.paths) == 3
    hf = reader.readers[0]
    hf._check()
    assert [a.tolist() for a in hf.iter_documents()] == docs
    assert hf.document(599).tolist() == docs[599] and hf.document(-600).tolist() == docs[0]
    labels, codes = reader.sources()
    assert len(labels) == 3 and codes.size == 600 and np.all(np.diff(codes) >= 0)
    text = open_data(paths, fmt, bos="auto", field="text", tokenizer="bytes")
    assert text.lengths().tolist() == [2 * len(d) + 1 for d in docs]  # "é" is 2 UTF-8 bytes
    with pytest.raises(InputError, match="already holds token ids: a tokenizer does not apply"):
        open_data(paths, fmt, bos="add", tokenizer="bytes")
    with pytest.raises(InputError, match=r"has no column 'ids'; columns: \['input_ids', 'text'\]"):
        open_data(paths, fmt, bos="add", field="ids")


def test_hf_dataset_names_rows_by_its_id_or_name_column(tmp_path: Path) -> None:
    """``HFDataset.names()``: the ``id`` column (else ``name``: the shared NAME_COLUMNS order), read lazily by
    file; none without either."""
    datasets = _datasets()
    docs = [[1, 2], [3], [4, 5, 6], [7], [8, 9]]
    ds = datasets.Dataset.from_dict({"input_ids": docs, "id": [10, 11, 12, 13, 14],  # type: ignore[attr-defined]
                                     "name": [f"doc-{i}" for i in range(5)]})
    ds.save_to_disk(str(tmp_path / "named"), num_shards=2)
    hf = open_data([str(tmp_path / "named")], "hf", bos="add")
    ids = (hf.readers[0] if hasattr(hf, "readers") else hf).names()
    assert ids is not None and ids.column == "id" and len(ids) == 5
    assert ids.take(np.arange(5)) == ["10", "11", "12", "13", "14"] and ids[3] == "13"
    with pytest.raises(InputError, match=r"row ids must be in \[0, 5\), got 0..5"):
        ids.take(np.array([0, 5]))
    ds.remove_columns("id").save_to_disk(str(tmp_path / "names"), num_shards=2)
    by_name = open_data([str(tmp_path / "names")], "hf", bos="add")
    names = (by_name.readers[0] if hasattr(by_name, "readers") else by_name).names()
    assert names is not None and names.column == "name"
    assert names.take(np.array([4, 0, 2])) == ["doc-4", "doc-0", "doc-2"]
    ds.remove_columns(["name", "id"]).save_to_disk(str(tmp_path / "plain"))
    plain = open_data([str(tmp_path / "plain")], "hf", bos="add")
    assert (plain.readers[0] if hasattr(plain, "readers") else plain).names() is None


def test_two_named_datasets_are_one_corpus_named_by_their_columns(tmp_path: Path) -> None:
    """``--data a b`` of saved datasets with a name column: the corpus names every document by it (the
    concatenation's names), the per-document identity too; a second input without one is named by its
    files while the first keeps its names."""
    from packing_theory.orchestration import open_corpus

    datasets = _datasets()
    for k in range(2):
        datasets.Dataset.from_dict({"input_ids": [[1, 2], [3], [4, 5, 6]],  # type: ignore[attr-defined]
                                    "name": [f"set{k}-doc{i}" for i in range(3)]}).save_to_disk(
            str(tmp_path / f"set{k}"))
    both = open_corpus([str(tmp_path / "set0"), str(tmp_path / "set1")], bos="add")
    assert [both.name(i) for i in range(6)] == [f"set{k}-doc{i}" for k in range(2) for i in range(3)]
    assert both.identity().name_of(np.array([5, 0])) == ["set1-doc2", "set0-doc0"]
    datasets.Dataset.from_dict({"input_ids": [[7, 8]]}).save_to_disk(str(tmp_path / "plain"))  # type: ignore[attr-defined]
    mixed = open_corpus([str(tmp_path / "set0"), str(tmp_path / "plain")], bos="add")
    assert mixed.name(3).endswith(".arrow") and mixed.name(0) == "set0-doc0"


def test_hf_dataset_dict_needs_a_split(tmp_path: Path) -> None:
    datasets = _datasets()
    ds = datasets.Dataset.from_dict({"input_ids": [[1, 2], [3], [4, 5, 6]]})  # type: ignore[attr-defined]
    datasets.DatasetDict({"train": ds, "test": ds.select([2])}).save_to_disk(str(tmp_path / "dd"))  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"DatasetDict with splits \['train', 'test'\]: choose one"):
        open_data([str(tmp_path / "dd")], "hf", bos="add")
    assert open_data([str(tmp_path / "dd")], "hf", bos="add", split="test").lengths().tolist() == [4]


# --------------------------------------------------------------------------- OLMo-core


def test_olmo_core_fixture_by_eos_and_by_metadata() -> None:
    expected = json.loads((DATA / "olmo" / "expected.json").read_text())
    path = DATA / "olmo" / "part-0-00000.npy"
    assert detect_format(path)[0] == "olmo"  # a raw array, no NumPy header, despite its name
    docs = expected["documents"]
    by_eos = OlmoTokenArray(path, bos="included", eos_id=expected["eos_id"], dtype="uint16")
    by_meta = OlmoTokenArray(path, bos="included", dtype="uint16")
    for reader in (by_eos, by_meta):
        reader._check()
        assert reader.lengths().tolist() == [len(d) + 1 for d in docs]  # through the EOS
        ranges = [[int(a), int(b)] for a, b in zip(reader.starts, reader.ends, strict=True)]
        assert ranges == expected["olmo_core_ranges"]
        assert all(reader.document(i).tolist() == [*d, expected["eos_id"]] for i, d in enumerate(docs))
    assert by_eos.trailing_tokens == len(expected["trailing"])
    assert "3 tokens after the last EOS" in by_eos.describe()
    assert OlmoTokenArray(path, bos="add", eos_id=expected["eos_id"], dtype="uint16").lengths().tolist() == [
        len(d) + 2 for d in docs]


def test_olmo_arrays_scanned_in_chunks_and_real_npy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.corpus.readers.olmo as olmo

    docs = _docs(300, 5, high=1000)
    flat = np.concatenate([np.append(d, 1000) for d in docs]).astype(np.uint32)
    np.save(tmp_path / "real.npy", flat)
    flat.tofile(tmp_path / "raw.npy")
    monkeypatch.setattr(olmo, "_CHUNK", 7)  # EOS positions found across chunk boundaries
    for name, dtype in (("real.npy", None), ("raw.npy", "uint32")):
        reader = OlmoTokenArray(tmp_path / name, bos="included", eos_id=1000, dtype=dtype)
        assert reader.lengths().tolist() == [d.size + 1 for d in docs]
    with pytest.raises(InputError, match=r"raw array .* give its dtype"):
        OlmoTokenArray(tmp_path / "raw.npy", bos="included", eos_id=1000)
    (tmp_path / "odd.npy").write_bytes(b"\1" * 5)
    with pytest.raises(InputError, match="5 bytes is not a whole number of uint32 ids"):
        OlmoTokenArray(tmp_path / "odd.npy", bos="included", eos_id=1000, dtype="uint32")
    with pytest.raises(FileNotFoundError, match=r"give the EOS id .* or the metadata file"):
        OlmoTokenArray(tmp_path / "raw.npy", bos="included", dtype="uint32")
    with gzip.open(tmp_path / "raw.csv.gz", "wt") as fh:
        fh.write("0,5\n3,9\n")
    with pytest.raises(InputError, match=r"raw.csv.gz' line 2: document \[3, 9\) must start at or after"):
        OlmoTokenArray(tmp_path / "raw.npy", bos="included", dtype="uint32")


# --------------------------------------------------------------------------- MDS


def _streaming() -> None:
    try:
        import streaming.base.format  # noqa: F401
    except Exception as exc:  # not installed, or its torch/torchvision stack does not import
        pytest.skip(f"mosaicml-streaming does not import here ({type(exc).__name__}); "
                    "pip install 'packing-theory[mds]' in an environment with numpy < 2.2")


@pytest.mark.parametrize("name", ["plain", "zstd"])
def test_mds_fixture_through_streaming(name: str) -> None:
    _streaming()
    expected = json.loads((DATA / "mds" / "expected.json").read_text())
    root = DATA / "mds" / name
    assert detect_format(root)[0] == "mds"
    tokens = open_data([str(root)], "mds", bos="add", field="tokens")
    assert tokens.lengths().tolist() == [len(d) + 1 for d in expected["documents"]]
    reader = tokens.readers[0]
    assert [v.tolist() for v in reader.iter_values()] == expected["documents"]
    text = open_data([str(root)], "mds", bos="auto", field="text", tokenizer="bytes")
    assert text.lengths().tolist() == [len(t.encode()) + 1 for t in expected["texts"]]
    if name == "plain":
        assert len(reader.shards) > 1


# --------------------------------------------------------------------------- detection and options


def test_detection_and_option_refusals(tmp_path: Path) -> None:
    np.save(tmp_path / "l.npy", np.array([3, 4]))
    (tmp_path / "t.txt").write_text("a")
    assert detect_format(tmp_path / "l.npy")[0] == "lengths"
    assert detect_format(tmp_path / "t.txt")[0] == "text"
    with pytest.raises(InputError, match=r"cannot tell the format of 'x\.dat'"):
        detect_format("x.dat")
    with pytest.raises(InputError, match=r"--data holds inputs of several formats \(lengths: .*l\.npy', te"):
        expand_inputs([str(tmp_path)])  # one format's reader: refused, naming an input of each
    with pytest.raises(InputError, match="eos_id does not apply to lengths data"):
        open_data([str(tmp_path / "l.npy")], "lengths", eos_id=3)
    with pytest.raises(InputError, match="megatron data holds token ids: say how BOS is counted"):
        open_data([str(tmp_path / "l.npy")], "megatron")
    with pytest.raises(InputError, match="matches no file"):
        expand_inputs([str(tmp_path / "*.zzz")])
    assert expand_inputs([str(tmp_path / "*.txt")])[:2] == ([str(tmp_path / "t.txt")], "text")
