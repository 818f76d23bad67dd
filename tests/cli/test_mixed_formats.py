"""``audit`` and ``census`` read a corpus whose sources are kept in different formats, as a user names it.

The census of a mixed corpus is read back by ``audit --lengths ... --labels-manifest ...``
with the names, sources and lengths ``audit --data`` gives; the files a walk
skips are listed on standard error in one line and in the report's
``corpus.read``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from packing_theory.cli import main
from tests.corpus.test_mixed_inputs import make_mixed_corpus, save_dataset

pytest.importorskip("pyarrow")


def _rows(path: Path) -> list[tuple[str, str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return sorted((r["document"], r["name"], r["source"] + "|" + r["length"])
                      for r in csv.DictReader(fh) if r["packer"] == "discard")


def _audit(*argv: str) -> list[str]:
    return ["audit", *argv, "--policy", "discard", "--capacity", "64", "--no-plots", "--permutations", "0"]


def test_mixed_audit_and_census_agree_on_every_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    make_mixed_corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    parts = ["corpus/web", "corpus/books", "corpus/code", "corpus/notes"]
    assert main(_audit("--data", *parts, "--source-from", "dir", "--out", "by-data")) in (0, 1)
    err = capsys.readouterr().err.splitlines()
    skipped = ("--data: skipped 3 files that are not data: 'corpus/web/LICENSE' (documentation), "
               "'corpus/web/README.md' (documentation), 'corpus/web/meta.json' (metadata); name a file, or "
               "give a glob, to read it")
    assert err[0] == skipped and len(err) == 2
    report = json.loads((tmp_path / "by-data" / "audit.json").read_text())
    read = report["corpus"]["read"]
    assert read.startswith("mixed (auto-detected per input: 1 jsonl, 1 parquet, 1 hf, 3 text)")
    assert skipped.removeprefix("--data: ") in read
    assert main(["census", "--data", *parts, "--out", "census", "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("census: 31 documents") and "from 6 input(s)" in err[0]
    assert f"; {skipped.replace('--data: ', '--data ')}; wrote " in err[0]  # in the one summary line
    manifest = json.loads((tmp_path / "census" / "census.json").read_text())
    assert manifest["kind"] == "mixed" and manifest["n_inputs"] == 6
    assert [(s["path"], s["kind"]) for s in manifest["shards"][:3]] == [
        ("corpus/web/web.jsonl", "jsonl"), ("corpus/books/books.parquet", "parquet"),
        ("corpus/code/data-00000-of-00001.arrow", "hf")]
    assert main(_audit("--lengths", "census/lengths.npy", "--labels-manifest", "census/census.json",
                       "--source-from", "dir", "--out", "by-census")) in (0, 1)
    expected = _rows(tmp_path / "by-data" / "documents.csv")
    assert _rows(tmp_path / "by-census" / "documents.csv") == expected
    assert {r[2].split("|")[0] for r in expected} == {"web", "books", "code", "notes"}
    names = {r[1] for r in expected}
    assert {"web-0", "book-6", "708", "corpus/web/web.jsonl#4", "corpus/notes/note_1.txt"} <= names
    # the walked corpus folder: recognised as one dataset among the files, census and audit agree again
    assert main(["census", "--data", "corpus", "--out", "census2", "--no-progress"]) == 0
    assert main(_audit("--data", "corpus", "--source-from", "dir", "--out", "walked")) in (0, 1)
    assert main(_audit("--lengths", "census2/lengths.npy", "--labels-manifest", "census2/census.json",
                       "--source-from", "dir", "--out", "walked-census")) in (0, 1)
    assert _rows(tmp_path / "walked-census" / "documents.csv") == _rows(tmp_path / "walked" / "documents.csv")


def test_census_refusals_of_a_mix_name_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text('{"text": "abcd"}\n')
    np.save(tmp_path / "l.npy", np.array([3, 4]))
    save_dataset(tmp_path / "ids", [1], ["x"])
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"input_ids": [[1, 2], [3]]}).save_to_disk(str(tmp_path / "tok"))
    capsys.readouterr()
    cases = [
        (["--data", "t.jsonl", "l.npy"], "census reads text, jsonl, parquet, hf, shards inputs (it tokenizes "
                                         "text, one task per file); lengths data ('l.npy') already holds"),
        (["--data", "tok", "--column", "input_ids"],
         "column 'input_ids' holds token ids; the census tokenizes text"),
        (["--data", "t.jsonl", "--split", "train"],
         "--split applies to a saved Hugging Face DatasetDict, not jsonl input"),
        (["--data", "t.jsonl", "ids", "--per-line"], "--per-line applies to text input, not mixed"),
    ]
    for argv, needle in cases:
        assert main(["census", *argv, "--out", "c", "--no-progress"]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    # audit: a token dataset in a mix needs --bos, and the message names it
    assert main(_audit("--data", "t.jsonl", "tok", "--out", "a")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "hf input 'tok': bos for hf data must be 'included'" in err, err
