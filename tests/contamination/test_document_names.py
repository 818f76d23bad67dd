"""A document has one name in every command: the per-document table (``audit --documents``), ``explain``
and ``contamination``'s hit list.

Each corpus is written with the format's own library (``datasets``'
``save_to_disk`` over two Arrow files, megatron-core's
``IndexedDatasetBuilder``, pyarrow, the committed MDS fixture written by
mosaicml-streaming), with and without record ids, and every command is run
through the command line on it. A hit document's name in ``contamination``
must be the table's name for the same raw index, and ``explain`` given that
name must find that index and print that name.
"""

from __future__ import annotations

import csv
import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.contamination import CorpusInput
from packing_theory.contamination.inputs import input_names
from packing_theory.errors import NotMeasured
from tests.contamination.corpora import N, Planted, planted, write_megatron, write_olmo

TOKENIZER = "tests.contamination.corpora:ids_tokenizer"
HORIZON = ["--seq-length", "64", "--rows", "20"]
MDS = Path(__file__).resolve().parents[1] / "data" / "readers" / "mds"


def _table_names(data: list[str], tmp: Path, capsys: Any) -> dict[int, str]:
    """The per-document table's name of every raw document."""
    out = tmp / "audit"
    assert main(["audit", *data, *HORIZON, "--out", str(out), "--documents", "documents.csv", "--no-plots",
                 "--no-progress"]) in (0, 1)
    capsys.readouterr()
    with open(out / "documents.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    names: dict[int, str] = {}
    for row in rows:
        assert names.setdefault(int(row["document"]), row["name"]) == row["name"]  # one name per document
    return names


def _hit_names(data: list[str], refs: Path, tmp: Path, capsys: Any, n: int = N) -> dict[int, str]:
    """``contamination``'s name of every hit document, by raw index."""
    capsys.readouterr()
    rc = main(["contamination", *data, "--reference", str(refs), "--reference-per-line", "--n", str(n),
               "--json", "--no-progress", "--out", str(tmp / "contamination")])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1, doc
    return {int(h["index"]): h["name"] for h in doc["hit_documents"]["documents"]}


def _explained(data: list[str], which: str, capsys: Any) -> tuple[int, str]:
    """``explain``'s raw index and name of document ``which`` (an index or a name)."""
    capsys.readouterr()
    assert main(["explain", *data, *HORIZON, "--json", which]) == 0
    doc = json.loads(capsys.readouterr().out)
    return int(doc["document"]), str(doc["name"])


def _agree(audit_data: list[str], scan_data: list[str], refs: Path, tmp: Path, capsys: Any,
           n: int = N) -> dict[int, str]:
    """Run the three commands; assert they name every hit document alike; the hits' names."""
    table = _table_names(audit_data, tmp, capsys)
    hits = _hit_names(scan_data, refs, tmp, capsys, n)
    assert hits, "the corpus must hold planted documents"
    assert hits == {i: table[i] for i in hits}
    for i, name in hits.items():
        assert _explained(audit_data, name, capsys) == (i, name)
        assert _explained(audit_data, str(i), capsys) == (i, name)
    return hits


def _texts(p: Planted) -> list[str]:
    return [p.text(i) for i in range(len(p.docs))]


def _ids(p: Planted, every: int) -> list[str | None]:
    """Every ``every``-th document's id (from the first, so the planted 3, 10, ... vary); others none."""
    return [p.names[i] if i % every == 0 else None for i in range(len(p.docs))]


def test_a_saved_text_dataset_over_two_arrow_files_without_ids(tmp_path: Path, capsys: Any) -> None:
    datasets = pytest.importorskip("datasets")
    p = planted(11)
    root = tmp_path / "hf"
    datasets.Dataset.from_dict({"text": _texts(p)}).save_to_disk(str(root), num_shards=2)
    arrows = sorted(str(a) for a in root.glob("*.arrow"))
    assert len(arrows) == 2
    refs = p.write_references(tmp_path / "refs.txt")
    data = ["--data", str(root), "--tokenizer", TOKENIZER]
    hits = _agree([*data, "--bos", "add"], data, refs, tmp_path, capsys)
    half = (len(p.docs) + 1) // 2  # num_shards=2 splits the rows in two contiguous halves
    assert hits == {i: f"{arrows[0]}#{i}" if i < half else f"{arrows[1]}#{i - half}" for i in p.planted}


def test_a_saved_token_dataset_where_some_rows_have_ids(tmp_path: Path, capsys: Any) -> None:
    datasets = pytest.importorskip("datasets")
    p = planted(12)
    root = tmp_path / "hf-ids"
    ids = _ids(p, 2)
    datasets.Dataset.from_dict({"id": ids, "input_ids": p.docs}).save_to_disk(str(root), num_shards=3)
    refs = p.write_references(tmp_path / "refs.txt")
    data = ["--data", str(root), "--bos", "add"]
    hits = _agree(data, [*data, "--tokenizer", TOKENIZER], refs, tmp_path, capsys)
    assert {i for i in hits if ids[i] is not None} and {i for i in hits if ids[i] is None}  # both kinds
    for i, name in hits.items():
        assert name == ids[i] if ids[i] is not None else (".arrow" in name and str(root) in name)


def test_jsonl_and_parquet_files_where_some_records_have_ids(tmp_path: Path, capsys: Any) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    p = planted(13, documents=80)
    refs = p.write_references(tmp_path / "refs.txt")
    ids, texts = _ids(p, 3), _texts(p)
    halves = [range(0, 40), range(40, 80)]
    jsonl = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path, part in zip(jsonl, halves, strict=True):
        path.write_text("".join(json.dumps({"text": texts[i], **({"id": ids[i]} if ids[i] else {})}) + "\n"
                                for i in part))
    data = ["--data", *map(str, jsonl), "--tokenizer", TOKENIZER]
    hits = _agree([*data, "--bos", "add"], data, refs, tmp_path / "j", capsys)
    assert {i: n for i, n in hits.items() if ids[i] is None} == {
        i: f"{jsonl[i // 40]}#{i % 40}" for i in hits if ids[i] is None}
    parquet = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for path, part in zip(parquet, halves, strict=True):
        if path.name == "a.parquet":
            pq.write_table(pa.table({"id": [ids[i] for i in part], "text": [texts[i] for i in part]}), path)
        else:  # a file without a name column beside one with it
            pq.write_table(pa.table({"text": [texts[i] for i in part]}), path)
    data = ["--data", *map(str, parquet), "--tokenizer", TOKENIZER]
    hits = _agree([*data, "--bos", "add"], data, refs, tmp_path / "p", capsys)
    assert hits == {i: ids[i] if i < 40 and ids[i] else f"{parquet[i // 40]}#{i % 40}" for i in hits}


def test_a_megatron_dataset_is_named_by_its_prefix(tmp_path: Path, capsys: Any) -> None:
    p = planted(14)
    idx = write_megatron(p, tmp_path / "mix_text_document")
    refs = p.write_references(tmp_path / "refs.txt")
    data = ["--data", str(idx), "--bos", "included"]
    hits = _agree(data, [*data, "--tokenizer", TOKENIZER], refs, tmp_path, capsys)
    assert hits == {i: f"{tmp_path / 'mix_text_document'}#{i}" for i in p.planted}


def _streaming() -> None:
    try:
        importlib.import_module("streaming.base.format")
    except Exception as exc:  # ImportError, or a numpy it was not built for
        pytest.skip(f"mosaicml-streaming does not import here ({type(exc).__name__})")


def test_an_mds_dataset_is_named_by_its_shards(tmp_path: Path, capsys: Any) -> None:
    _streaming()
    root = Path(shutil.copytree(MDS / "plain", tmp_path / "mds"))
    texts = json.loads((MDS / "expected.json").read_text())["texts"]
    index = json.loads((root / "index.json").read_text())
    shards = [(str(root / s["raw_data"]["basename"]), int(s["samples"])) for s in index["shards"]]
    assert len(shards) >= 2
    picked = [i for i, t in enumerate(texts) if len(t.encode()) >= 27][::9]  # in several shards
    refs = tmp_path / "refs.txt"
    refs.write_text("".join(texts[i] + "\n" for i in picked))
    data = ["--data", str(root), "--column", "text", "--tokenizer", "bytes"]
    hits = _agree([*data, "--bos", "add"], data, refs, tmp_path, capsys, n=24)
    assert set(picked) <= set(hits)
    place = {}
    start = 0
    for path, count in shards:
        for k in range(count):
            place[start + k] = path if count == 1 else f"{path}#{k}"
        start += count
    assert hits == {i: place[i] for i in hits}
    assert len({hits[i].split("#")[0] for i in picked}) >= 2


def test_a_dataset_that_changed_during_the_scan_is_not_measured(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    p = planted(15, documents=10)
    root = tmp_path / "hf"
    datasets.Dataset.from_dict({"text": _texts(p)}).save_to_disk(str(root), num_shards=2)
    inp = CorpusInput(str(root), "hf")
    assert input_names(inp, 10).take(np.array([9]))[0].endswith(".arrow#4")
    with pytest.raises(NotMeasured, match=r"hf input .* names 10 documents, the scan read 11: it changed"):
        input_names(inp, 11)


def test_a_text_dataset_is_named_without_tokenizing_it(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from packing_theory.corpus.readers.hf import HFDataset
    from packing_theory.corpus.readers.names import reader_names

    p = planted(16, documents=10)
    root = tmp_path / "hf"
    datasets.Dataset.from_dict({"text": _texts(p)}).save_to_disk(str(root), num_shards=2)
    calls: list[str] = []

    def counting(text: str) -> list[int]:
        calls.append(text)
        return [1] * len(text.split())

    reader = HFDataset(root, bos="add", tokenizer=counting)
    names = reader_names(reader)
    assert len(names) == 10 and names.take(np.array([0, 9]))[1].endswith("data-00001-of-00002.arrow#4")
    assert calls == []  # the rows are counted from the record batches, never tokenized
    assert len(reader) == 10 and len(calls) == 10 and reader.rows_per_file() == [5, 5]
    reader._check()


def test_token_arrays_and_shards_are_named_by_their_files(tmp_path: Path, capsys: Any) -> None:
    from packing_theory.corpus.shards import write_shard

    p = planted(17)
    refs = p.write_references(tmp_path / "refs.txt")
    olmo = write_olmo(p, tmp_path / "part-0-00000.npy", eos=0)
    data = ["--data", str(olmo), "--format", "olmo", "--bos", "included", "--eos-id", "0",
            "--dtype", "uint16"]
    hits = _agree(data, [*data, "--tokenizer", TOKENIZER], refs, tmp_path / "o", capsys)
    assert hits == {i: f"{olmo}#{i}" for i in p.planted}
    shards = [tmp_path / "a.bin", tmp_path / "b.bin"]
    write_shard(shards[0], [[0, *d] for d in p.docs[:30]], vocab=1000)  # each document opens with BOS 0
    write_shard(shards[1], [[0, *d] for d in p.docs[30:]], vocab=1000)
    data = ["--data", *map(str, shards), "--format", "shards"]
    hits = _agree(data, [*data, "--tokenizer", TOKENIZER], refs, tmp_path / "s", capsys)
    assert hits == {i: f"{shards[i // 30]}#{i % 30}" for i in p.planted}
