"""``explain DOC`` finds the document ``documents.csv`` names ``DOC``: a record whose own id is all digits
(a JSON Lines ``"id": "12345"``, a saved dataset's integer ``id``) by that id; ``--index N`` always by raw
index; digits that are one document's name and another's index say which was taken and how to ask for
the other; an index out of range or a name no document has is refused naming the parameter and value.

Before, an all-digit ``DOC`` was always the raw index: ``explain 12345`` on a corpus of ids was refused
(or explained another document), whatever ``documents.csv`` said.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main

PACKER = ["--capacity", "16", "--min-buffer", "2", "--refill", "2"]


def _jsonl(path: Path, ids: list[object]) -> list[str]:
    """One record per id, of growing lengths (whitespace tokens); the command's input options."""
    path.write_text("".join(json.dumps({"id": d, "text": "w " * (3 + 5 * k)}) + "\n"
                            for k, d in enumerate(ids)))
    return ["--data", str(path), "--tokenizer", "whitespace"]


def _documents_csv(data: list[str], out: Path,
                   capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    """audit's per-document rows, by name."""
    assert main(["audit", *data, *PACKER, "--documents", "--no-plots", "--no-progress", "--permutations", "0",
                 "--out", str(out)]) in (0, 1)
    capsys.readouterr()
    with open(out / "documents.csv", newline="", encoding="utf-8") as fh:
        return {r["name"]: r for r in csv.DictReader(fh)}


def _explain(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, object], str]:
    assert main(["explain", *argv, *PACKER, "--json"]) == 0, argv
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_every_name_documents_csv_writes_explains_that_document(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ids: list[object] = ["12345", "12346", 7, "doc-3", 2, "0", 1]  # string and integer ids, digits or not
    data = _jsonl(tmp_path / "c.jsonl", ids)
    table = _documents_csv(data, tmp_path / "a", capsys)
    assert sorted(table) == sorted(str(d) for d in ids)
    for name, row in table.items():
        got, _ = _explain([name, *data], capsys)
        assert (got["document"], got["name"], got["fate"], got["emitted"]) == (
            int(row["document"]), name, row["fate"], int(row["emitted"])), name


def test_digits_that_are_a_name_and_another_index_say_which_was_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _jsonl(tmp_path / "c.jsonl", ["a", "b", "c", "1", "e", "9"])
    got, err = _explain(["1", *data], capsys)
    assert got["document"] == 3 and got["name"] == "1"
    assert ("explain: DOC 1 is the name of document 3, explained here; the document at raw index 1 (named b) "
            "is --index 1") in err
    got, err = _explain(["--index", "1", *data], capsys)
    assert got["document"] == 1 and got["name"] == "b" and "is the name of" not in err
    got, err = _explain(["--index", "3", *data], capsys)  # --index is the index even where digits name one
    assert got["document"] == 3
    # '9' names document 5 and is no index of these 6: taken silently; '2' names none: the raw index
    got, err = _explain(["9", *data], capsys)
    assert got["document"] == 5 and "is the name of" not in err
    got, err = _explain(["2", *data], capsys)
    assert got["document"] == 2 and got["name"] == "c" and "is the name of" not in err


def test_a_saved_dataset_s_integer_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    datasets = pytest.importorskip("datasets")
    ids = [40, 41, 0, 43, 44, 45, 1]
    docs = [list(range(2 + 3 * k)) for k in range(len(ids))]
    datasets.Dataset.from_dict({"id": ids, "input_ids": docs}).save_to_disk(str(tmp_path / "hf"))
    data = ["--data", str(tmp_path / "hf"), "--bos", "add"]
    table = _documents_csv(data, tmp_path / "a", capsys)
    for d in ids:
        got, err = _explain([str(d), *data], capsys)
        assert got["document"] == ids.index(d) == int(table[str(d)]["document"]), d
        assert ("is the name of document" in err) == (d < len(ids) and ids[d] != d), d
    got, _ = _explain(["--index", "0", *data], capsys)
    assert (got["document"], got["name"]) == (0, "40")


def test_digits_two_documents_are_named_are_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data = _jsonl(tmp_path / "c.jsonl", ["7", "x", "7", "y"])
    assert main(["explain", "7", *data, *PACKER]) == 2
    assert ("document '7' is ambiguous: 2 documents are named so (documents 0, 2); give the document's index "
            "instead (explain --index N)") in capsys.readouterr().err
    assert main(["explain", "--index", "2", *data, *PACKER]) == 0
    assert capsys.readouterr().out.startswith("document 2 (7, length ")


def test_what_names_no_document_is_refused_naming_the_parameter_and_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _jsonl(tmp_path / "c.jsonl", ["a", "b", "10"])
    np.save(tmp_path / "l.npy", np.array([5, 9, 3], dtype=np.int64))
    lengths = ["--lengths", str(tmp_path / "l.npy")]
    refused = {
        ("nope", *data): "DOC 'nope' is not the name of any of the 3 documents (a name as documents.csv's "
                         "name column writes it: exact, else a whole-component path suffix); a raw index "
                         "is --index N (0..2)",
        ("11", *data): "DOC 11 is not a raw index of the 3 documents (0..2) nor any document's name",
        ("--index", "3", *data): "--index 3 is not a raw index of the 3 documents (0..2)",
        ("--index", "10", *data): "--index 10 is not a raw index of the 3 documents (0..2)",  # a name: no
        ("a.txt", *lengths): "DOC 'a.txt': this corpus names no document (lengths alone); give a raw index "
                             "of the 3 documents (0..2)",
        ("3", *lengths): "DOC 3 is not a raw index of the 3 documents (0..2)",
        ("--index", "-1", *lengths): "--index must be >= 0",
        ("1", "--index", "1", *lengths): "DOC '1' and --index 1 both name the document: give one of them",
        tuple(lengths): "DOC is missing: give the document's name or raw index (DOC), or --index N",
    }
    for argv, message in refused.items():
        assert main(["explain", *argv, *PACKER]) == 2, argv
        out = capsys.readouterr()
        assert message in out.err and not out.out, (argv, out.err)
        assert len(out.err.strip().splitlines()) == 1, out.err


def test_a_document_the_funnel_removed_is_found_by_its_all_digit_id(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _jsonl(tmp_path / "c.jsonl", ["a", "b", "1", "c"])
    stages = [{"name": "dedup", "kind": "any", "ids": [2]}]
    (tmp_path / "funnel.json").write_text(json.dumps({"stages": stages}))
    funnel = ["--funnel", str(tmp_path / "funnel.json")]
    got, err = _explain(["1", *data, *funnel], capsys)
    assert (got["document"], got["name"], got["fate"]) == (2, "1", "removed by dedup")
    assert "DOC 1 is the name of document 2, explained here" in err
    assert "document 2 (1, length 14): removed by the cleaning funnel at stage 'dedup'" in err  # BOS + 13
    got, _ = _explain(["--index", "1", *data, *funnel], capsys)
    assert (got["document"], got["name"]) == (1, "b") and not got["fate"].startswith("removed")


def test_a_doc_taken_by_data_is_named_and_data_source_options_are_honoured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``explain --data DIR 5`` failed "one of the arguments DOC --index is required" (--data took 5), and
    ``explain --index 5 --data DIR --source-from dir`` failed "argument DOC: not allowed with argument
    --index" (explain had no --source-from, so ``dir`` became DOC). Found by a review."""
    for source in ("books", "web"):
        (tmp_path / "c" / source).mkdir(parents=True)
        _jsonl(tmp_path / "c" / source / "part.jsonl", [f"{source}-{k}" for k in range(3)])
    data = ["--data", str(tmp_path / "c"), "--tokenizer", "whitespace"]
    assert main(["explain", *data[2:], *data[:2], "4", *PACKER]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("packing-theory explain: error: DOC is missing: '4' was read as a --data path "
                           "(--data takes every word up to the next option): put DOC before --data, or last "
                           "after --")
    assert main(["explain", *data[2:], *PACKER, *data[:2], "--", "web-1"]) == 0
    assert capsys.readouterr().out.startswith("document 4 (web-1, length 9)")
    got, _ = _explain(["--index", "4", *data, "--source-from", "dir"], capsys)
    assert (got["name"], got["source"]) == ("web-1", "web")
    assert str(got["sentence"]).startswith("document 4 (web-1, source web, length 9) under discard: ")
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{s}\n" for s in ["a", "a", "a", "b", "b", "b"]))
    got, _ = _explain(["web-1", *data, "--labels", str(labels)], capsys)
    assert got["source"] == "b"
    assert main(["explain", "--index", "4", *data, "--mixture-blocks", "3", *PACKER]) == 2
    assert "unrecognized arguments: --mixture-blocks" in capsys.readouterr().err


def test_a_corpus_smaller_than_one_row_is_explained_by_what_was_selected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """4 files of 301 tokens at B = 2 in rows of 2,049: three documents were selected into the unfinished
    row 0. ``explain --index 3`` said "nothing was selected ... before the buffer held B = 2 documents (a
    corpus this small needs --drain ...)" and audit's headline the same (found by a review)."""
    for name in "abcd":
        (tmp_path / name).write_text("x" * 300, encoding="utf-8")
    data = ["--data", *(str(tmp_path / n) for n in "abcd"), "--format", "text", "--min-buffer", "2"]
    assert main(["explain", "--index", "3", *data]) == 0
    line = capsys.readouterr().out
    assert "length 301) under discard: never started; still buffered when the run stopped at row 0" in line
    assert "nothing was selected" not in line and "--drain" not in line
    assert main(["audit", *data, "--no-plots", "--no-progress", "--permutations", "0",
                 "--out", str(tmp_path / "rep")]) in (0, 1)
    headline = json.loads((tmp_path / "rep" / "audit.json").read_text())["headline"]
    assert headline.startswith("discard stopped at row 0 because the stream ran dry: trained 0.0%"), headline
