"""A census keeps every record's own name: ``census`` + ``audit --lengths`` (and ``explain``) name each
document as ``audit --data`` does, through resume and reordered parts; an older census without names still
names its documents by place."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from packing_theory.audit.documents import census_names
from packing_theory.cli import main
from packing_theory.corpus.readers.names import RecordNames
from packing_theory.distributed.census import CensusOptions, run_census
from packing_theory.distributed.executors import ResultRejected
from packing_theory.distributed.parts import (
    ShardResult,
    census_shard,
    check_shard_result,
    load_part,
    write_part,
)
from packing_theory.errors import InputError
from packing_theory.orchestration import open_corpus

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
         "mu"]


def _text(i: int) -> str:
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(5 + (i * 7) % 40))


def _jsonl(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _jsonl_corpus(root: Path) -> Path:
    """Sources with ids, without ids, mixed, and a file of one unnamed record (named ``FILE``)."""
    data = root / "cj"
    _jsonl(data / "web" / "web0.jsonl", [{"id": f"web-0-{k}", "text": _text(k)} for k in range(9)])
    _jsonl(data / "web" / "web1.jsonl", [{"id": f"web-1-{k}", "text": _text(k + 3)} if k % 3 else
                                         {"text": _text(k + 3)} for k in range(8)])
    _jsonl(data / "books" / "books.jsonl", [{"text": _text(k + 5)} for k in range(7)])
    _jsonl(data / "chat" / "chat.jsonl", [{"name": "chat-Ω", "text": _text(2)}, {"id": 17, "text": _text(4)}])
    _jsonl(data / "one" / "one.jsonl", [{"text": _text(11)}])
    return data


def _parquet_corpus(root: Path) -> Path:
    """A parquet file with an ``id`` column (one null), one without a name column."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    data = root / "pq"
    (data / "pdf").mkdir(parents=True)
    (data / "misc").mkdir(parents=True)
    ids = [f"pdf-{k}" if k != 4 else None for k in range(12)]
    pq.write_table(pa.table({"id": ids, "text": [_text(k) for k in range(12)]}), data / "pdf" / "pdf.parquet",
                   row_group_size=5)
    pq.write_table(pa.table({"text": [_text(k + 1) for k in range(6)]}), data / "misc" / "misc.parquet",
                   row_group_size=4)
    return data


def _names(csv_path: Path) -> list[str]:
    with open(csv_path, newline="", encoding="utf-8") as fh:
        return [row["name"] for row in csv.DictReader(fh)]


def _explained(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    """The first line ``explain`` prints (``document K (NAME, length L) ...``)."""
    capsys.readouterr()
    assert main(["explain", *args]) in (0, 1)
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("make", [_jsonl_corpus, _parquet_corpus])
def test_census_names_every_document_as_data_does(tmp_path: Path, make: object,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert callable(make)
    data = make(tmp_path)
    monkeypatch.chdir(tmp_path)  # paths as a user types them: relative, as the reviewer's cj/
    rel = os.path.relpath(data, tmp_path)
    assert main(["audit", "--data", rel, "--out", "by-data", "--documents", "documents.csv"]) in (0, 1)
    assert main(["census", "--data", rel, "--out", "census", "--workers", "2"]) == 0  # two processes
    lengths = ["--lengths", "census/lengths.npy"]
    assert main(["audit", *lengths, "--labels-manifest", "census/census.json", "--out", "by-census",
                 "--documents", "documents.csv"]) in (0, 1)
    expected = _names(tmp_path / "by-data" / "documents.csv")
    assert _names(tmp_path / "by-census" / "documents.csv") == expected
    own = [n for n in expected if not n.startswith(rel)]
    placed = [n for n in expected if n.startswith(rel)]
    assert own and placed  # both kinds of name are in the comparison
    if "cj" in rel:
        assert {"web-0-5", "web-1-4", "chat-Ω", "17", f"{rel}/web/web1.jsonl#3", f"{rel}/one/one.jsonl"} <= \
            set(expected)
        name = "web-0-5"
    else:
        assert {"pdf-7", f"{rel}/pdf/pdf.parquet#4", f"{rel}/misc/misc.parquet#0"} <= set(expected)
        name = "pdf-7"
    manifest = json.loads((tmp_path / "census" / "census.json").read_text(encoding="utf-8"))
    assert manifest["names"]["named"] == len(own)
    for document in (name, placed[-1]):
        line = _explained(capsys, [document, "--data", rel])
        assert f"({document}, " in line
        assert _explained(capsys, [document, *lengths]) == line

    # lengths away from their census: the census given as --labels-manifest names them
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "lengths.npy").write_bytes((tmp_path / "census" / "lengths.npy").read_bytes())
    moved = open_corpus("elsewhere/lengths.npy", format="lengths", labels_manifest="census/census.json")
    assert [moved.name(i) for i in range(len(expected))] == expected
    assert open_corpus("elsewhere/lengths.npy", format="lengths").names is None

    # resumed: every part reused, the names the same
    assert main(["census", "--data", rel, "--out", "census", "--workers", "2"]) == 0
    assert "reused" in capsys.readouterr().err
    names = census_names(tmp_path / "census" / "census.json", len(expected))
    assert isinstance(names, RecordNames)
    names._check()
    assert names.take(np.arange(len(expected), dtype=np.int64)) == expected


def test_reordered_inputs_reuse_their_parts_and_keep_their_names(tmp_path: Path) -> None:
    data = _jsonl_corpus(tmp_path)
    files = sorted(str(p) for p in data.rglob("*.jsonl"))
    options = CensusOptions("jsonl", "whitespace")
    first = run_census(files, options, tmp_path / "c", workers=2)
    again = run_census(files[::-1], options, tmp_path / "c", force=True)
    assert (first.computed, again.reused, again.computed) == (len(files), len(files), 0)
    expected = open_corpus(files[::-1], format="jsonl", tokenizer="whitespace")
    names = census_names(tmp_path / "c" / "census.json", int(again.lengths.size))
    assert names is not None
    got = names.take(np.arange(len(names), dtype=np.int64))
    assert got == [expected.name(i) for i in range(len(got))]
    assert files[-1].endswith("web1.jsonl") and files[2].endswith("one.jsonl")
    assert got[:2] == [f"{files[-1]}#0", "web-1-1"] and files[2] in got and got[-1] == f"{files[0]}#6"


def test_a_census_without_names_still_names_its_documents_by_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An older census (no ``names`` entry) and one of text files (no record names itself)."""
    data = _jsonl_corpus(tmp_path)
    out = tmp_path / "c"
    assert main(["census", "--data", str(data), "--out", str(out)]) == 0
    doc = json.loads((out / "census.json").read_text(encoding="utf-8"))
    del doc["names"]
    (out / "census.json").write_text(json.dumps(doc), encoding="utf-8")
    for name in ("doc_names.bin", "doc_name_offsets.npy"):
        (out / name).unlink()
    n = int(doc["n_docs"])
    names = census_names(out / "census.json", n)
    assert names is not None
    books = str(data / "books" / "books.jsonl")
    got = names.take(np.arange(n, dtype=np.int64))
    assert f"{books}#6" in got and not any(g.startswith("web-") for g in got)
    assert f"({books}#6, " in _explained(capsys, [f"{books}#6", "--lengths", str(out / "lengths.npy")])
    text = tmp_path / "t"
    text.mkdir()
    (text / "a.txt").write_text("one document\n", encoding="utf-8")
    (text / "b.txt").write_text("another document\n", encoding="utf-8")
    assert main(["census", "--data", str(text), "--out", str(tmp_path / "tc")]) == 0
    written = json.loads((tmp_path / "tc" / "census.json").read_text(encoding="utf-8"))
    assert written["names"] == {"named": 0} and not (tmp_path / "tc" / "doc_names.bin").exists()
    placed = census_names(tmp_path / "tc" / "census.json", 2)
    assert placed is not None and placed.take(np.array([1, 0])) == [str(text / "b.txt"), str(text / "a.txt")]


def test_damaged_census_names_are_refused_naming_the_file(tmp_path: Path) -> None:
    data = _jsonl_corpus(tmp_path)
    out = tmp_path / "c"
    assert main(["census", "--data", str(data), "--out", str(out)]) == 0
    n = int(np.load(out / "lengths.npy").size)
    names_file = out / "doc_names.bin"
    names_file.write_bytes(names_file.read_bytes()[:-3])
    with pytest.raises(InputError, match=r"doc_name_offsets\.npy' holds int64 \(\d+,\) offsets over [\d,]+ "
                                         r"bytes of names, expected .*rerun the census"):
        census_names(out / "census.json", n)
    names_file.unlink()
    with pytest.raises(InputError, match=r"its names files cannot be read .*rerun the census"):
        census_names(out / "census.json", n)
    doc = json.loads((out / "census.json").read_text(encoding="utf-8"))
    doc["names"]["bytes"] = "../elsewhere.bin"
    (out / "census.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"names\.bytes '\.\./elsewhere\.bin' leaves the directory"):
        census_names(out / "census.json", n)


def test_a_part_keeps_its_names_and_bad_names_are_rejected(tmp_path: Path) -> None:
    data = _jsonl_corpus(tmp_path)
    path = str(data / "web" / "web1.jsonl")
    options = CensusOptions("jsonl", "whitespace")
    result = census_shard(path, options)
    assert isinstance(result, ShardResult)
    checked = check_shard_result(result, result.input_sha256, options)
    assert checked.name_bytes is not None and checked.name_offsets is not None
    parts = tmp_path / "parts"
    parts.mkdir()
    write_part(str(parts), checked, options, path)
    loaded = load_part(str(parts), checked.input_sha256, options)
    assert loaded is not None and loaded.name_bytes is not None and loaded.name_offsets is not None
    assert bytes(loaded.name_bytes) == bytes(checked.name_bytes)
    assert np.array_equal(loaded.name_offsets, checked.name_offsets)
    bad = checked.name_offsets.copy()
    bad[-1] += 1
    for wrong, message in ((dataclasses.replace(checked, name_offsets=bad), "increasing int64 offsets"),
                           (dataclasses.replace(checked, name_bytes=None), "names come with their offsets")):
        with pytest.raises(ResultRejected, match=message):
            check_shard_result(wrong, checked.input_sha256, options)
    unnamed = census_shard(str(data / "books" / "books.jsonl"), options)
    assert isinstance(unnamed, ShardResult) and unnamed.name_bytes is None and unnamed.n_docs == 7


def test_record_names_stored_round_trip() -> None:
    names = RecordNames(["a.jsonl", "b.jsonl"])
    for own in ("x-0", None, "ü-2"):
        names.add(own)
    names.end_file()
    names.add(None)
    names.end_file()
    buffer, offsets = names.arrays()
    stored = RecordNames.stored(["a.jsonl", "b.jsonl"], [3, 1], buffer, offsets, names.named)
    stored._check()
    ids = np.array([3, 2, 1, 0])
    assert stored.take(ids) == names.take(ids) == ["b.jsonl", "ü-2", "a.jsonl#1", "x-0"]
    with pytest.raises(InputError, match=r"stored names of 2 files, 4 records: got 2 counts and 4 offsets"):
        RecordNames.stored(["a.jsonl", "b.jsonl"], [3, 1], buffer, offsets[:-1], 2)


def test_a_census_of_other_lengths_is_refused_not_pinned_to_them(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The same number of documents in another order: the census's names and sources would belong to other
    documents; only the count was checked (found by a review). Given as --labels-manifest, or lying
    beside the lengths, it is refused naming both files; the census's own lengths still read."""
    data = _jsonl_corpus(tmp_path)
    assert main(["census", "--data", str(data), "--out", str(tmp_path / "cen")]) == 0
    lengths = np.load(tmp_path / "cen" / "lengths.npy")
    (tmp_path / "other").mkdir()
    np.save(tmp_path / "other" / "lengths.npy", lengths[::-1].copy())
    census = str(tmp_path / "cen" / "census.json")
    common = ["--no-plots", "--min-buffer", "2", "--capacity", "64"]
    capsys.readouterr()
    assert main(["audit", "--lengths", str(tmp_path / "other" / "lengths.npy"), "--labels-manifest", census,
                 "--out", str(tmp_path / "a"), *common]) == 2
    err = capsys.readouterr().err
    assert f"census {census!r} describes other lengths than" in err and not (tmp_path / "a").exists()
    (tmp_path / "other" / "census.json").write_bytes(Path(census).read_bytes())
    assert main(["explain", "0", "--lengths", str(tmp_path / "other" / "lengths.npy"), "--min-buffer", "2",
                 "--capacity", "64"]) == 2
    assert "describes other lengths than" in capsys.readouterr().err
    assert main(["audit", "--lengths", str(tmp_path / "cen" / "lengths.npy"), "--labels-manifest", census,
                 "--out", str(tmp_path / "b"), *common]) in (0, 1)
