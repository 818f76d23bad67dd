"""A document's own name (its record's ``id``, else ``name``) in every reader of records, and the commands
that show or accept names (``audit --documents``, ``explain``, ``contamination``) agreeing on it."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.contamination.inputs import NAME_COLUMNS as SCAN_COLUMNS
from packing_theory.corpus.readers import open_data
from packing_theory.corpus.readers.hf import NAME_COLUMNS as HF_COLUMNS
from packing_theory.corpus.readers.names import NAME_COLUMNS, RecordNames
from packing_theory.errors import InputError
from packing_theory.orchestration import open_corpus

TEXT = "alpha beta gamma delta epsilon zeta eta theta iota kappa"


def _jsonl(path: Path, records: list[dict[str, object]]) -> None:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)


def test_one_order_of_name_columns_everywhere() -> None:
    assert NAME_COLUMNS == ("id", "name") and HF_COLUMNS is NAME_COLUMNS and SCAN_COLUMNS is NAME_COLUMNS


def test_jsonl_records_are_named_by_their_id_across_files(tmp_path: Path) -> None:
    """Ids over plain, .gz and .zst files; a mixed file's records without a usable id are ``FILE#k``."""
    pytest.importorskip("zstandard", reason="the .zst file needs zstandard (the zstd extra)")
    _jsonl(tmp_path / "a.jsonl", [{"id": f"a-{i}", "text": TEXT} for i in range(3)])
    _jsonl(tmp_path / "b.jsonl.gz", [{"id": f"b-{i}", "text": TEXT} for i in range(2)])
    _jsonl(tmp_path / "c.jsonl.zst", [{"name": "c-by-name", "text": TEXT}])
    mixed = [{"id": "m-0", "text": TEXT}, {"text": TEXT}, {"id": None, "text": TEXT}, {"id": 7, "text": TEXT},
             {"id": True, "text": TEXT}, {"id": "", "text": TEXT}, {"id": ["x"], "text": TEXT}]
    _jsonl(tmp_path / "d.jsonl", mixed)
    paths = [str(tmp_path / f) for f in ("a.jsonl", "b.jsonl.gz", "c.jsonl.zst", "d.jsonl")]
    corpus = open_corpus(paths, format="jsonl")
    d = paths[3]
    expected = ["a-0", "a-1", "a-2", "b-0", "b-1", "c-by-name", "m-0", f"{d}#1", f"{d}#2", "7", f"{d}#4",
                f"{d}#5", f"{d}#6"]
    assert [corpus.name(i) for i in range(len(expected))] == expected
    names = open_data(paths, "jsonl").names()
    assert isinstance(names, RecordNames) and names.named == 8  # one bytes buffer, offsets: no list of str
    names._check()
    assert names.take(np.array([12, 0, 7])) == [f"{d}#6", "a-0", f"{d}#1"]
    with pytest.raises(InputError, match=r"record ids must be in \[0, 13\), got 0..13"):
        names.take(np.array([0, 13]))


def test_jsonl_without_ids_is_named_by_file(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a.jsonl", [{"text": TEXT}, {"text": TEXT}])
    _jsonl(tmp_path / "b.jsonl", [{"text": TEXT}])
    reader = open_data([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")], "jsonl")
    assert reader.names().take(np.array([2, 0])) == [f"{tmp_path}/b.jsonl", f"{tmp_path}/a.jsonl#0"]
    corpus = open_corpus([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert [corpus.name(i) for i in range(3)] == [f"{tmp_path}/a.jsonl#0", f"{tmp_path}/a.jsonl#1",
                                                  f"{tmp_path}/b.jsonl"]


def test_parquet_rows_are_named_by_their_name_columns(tmp_path: Path) -> None:
    """``name`` (beside ``doc_id``), ``id`` before ``name``, a null name and a file without one."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"name": ["n-0", None, "n-2"], "doc_id": [1, 2, 3], "text": [TEXT] * 3}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [40, 41], "name": ["x", "y"], "text": [TEXT] * 2}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"text": [TEXT] * 2}), tmp_path / "c.parquet")
    paths = [str(tmp_path / f"{k}.parquet") for k in "abc"]
    corpus = open_corpus(paths)
    assert [corpus.name(i) for i in range(7)] == ["n-0", f"{paths[0]}#1", "n-2", "40", "41", f"{paths[2]}#0",
                                                  f"{paths[2]}#1"]
    assert open_data(paths[2:], "parquet").names() is None


def _documents_csv(path: Path) -> dict[int, str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {int(r["document"]): r["name"] for r in csv.DictReader(fh)}


def test_audit_explain_and_contamination_agree_on_names(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ref = "the quick brown fox jumps over the lazy dog near the river bank"
    (tmp_path / "corpus" / "books").mkdir(parents=True)
    (tmp_path / "corpus" / "web").mkdir(parents=True)
    _jsonl(tmp_path / "corpus" / "books" / "part-0.jsonl",
           [{"id": f"books-{i:05d}", "text": f"{TEXT} {i} " + (ref if i % 2 else "")} for i in range(4)])
    _jsonl(tmp_path / "corpus" / "web" / "part-0.jsonl",
           [{"id": "web-00000", "text": ref}, {"text": f"{TEXT} {ref}"}, {"id": "web-00002", "text": TEXT}])
    (tmp_path / "ref.txt").write_text(ref + "\n")
    data = str(tmp_path / "corpus")
    common = ["--data", data, "--tokenizer", "whitespace"]
    packer = ["--capacity", "16", "--min-buffer", "2"]
    out = str(tmp_path / "a")
    assert main(["audit", *common, *packer, "--documents", "--no-plots", "--out", out]) in (0, 1)
    named = _documents_csv(tmp_path / "a" / "documents.csv")
    web = str(tmp_path / "corpus" / "web" / "part-0.jsonl")
    assert named == {0: "books-00000", 1: "books-00001", 2: "books-00002", 3: "books-00003", 4: "web-00000",
                     5: f"{web}#1", 6: "web-00002"}
    assert main(["contamination", *common, "--reference", str(tmp_path / "ref.txt"), "--n", "5",
                 "--out", str(tmp_path / "c")]) == 1
    hits = [json.loads(x) for x in (tmp_path / "c" / "hit_documents.jsonl").read_text().splitlines()]
    assert sorted(h["name"] for h in hits) == sorted(named[i] for i in (1, 3, 4, 5))
    for name in ("books-00003", "web-00000", f"{web}#1"):
        assert main(["explain", name, *common, *packer]) == 0, name
        assert f"({name}, length" in capsys.readouterr().out


def test_explain_refuses_a_name_two_documents_share(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Two records with the same id: explain refuses the name (exit 2) and names both; the index works."""
    _jsonl(tmp_path / "a.jsonl", [{"id": "dup", "text": TEXT}, {"id": "solo", "text": TEXT}])
    _jsonl(tmp_path / "b.jsonl", [{"id": "dup", "text": TEXT + " more"}])
    common = ["--data", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--capacity", "16",
              "--min-buffer", "2"]
    assert main(["explain", "dup", *common]) == 2
    out, err = capsys.readouterr()
    assert "document 'dup' is ambiguous: 2 documents are named so (documents 0, 2); give the document's " \
        "index instead" in err and "explain: document" not in err and not out
    assert main(["explain", "2", *common]) == 0
    assert "document 2 (dup, length" in capsys.readouterr().out
    assert main(["explain", "solo", *common]) == 0

