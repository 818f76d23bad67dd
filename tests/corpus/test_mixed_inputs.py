"""A corpus whose sources are kept in different formats is one corpus: each input by its own reader.

Fixtures are written with the real libraries: pyarrow (parquet), ``datasets``
(``save_to_disk``), megatron-core (an indexed dataset). The mixed run's
per-document lengths, names and files must be the concatenation of the
single-format runs; a directory walk recognises saved datasets and lists the
files it skips as not data.
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import InputPlan, MixedReader, open_inputs, plan_inputs
from packing_theory.errors import InputError
from packing_theory.orchestration import open_corpus

pytest.importorskip("pyarrow")


def _text(i: int, width: int = 7) -> str:
    return " ".join(f"w{(i * 7 + k) % 13}" for k in range(1 + (i * width) % 23))


def make_mixed_corpus(root: Path) -> Path:
    """``root/corpus``: web (JSON Lines, with README.md, LICENSE and meta.json beside it), books
    (parquet, two row groups), code (a saved ``datasets`` Dataset with integer ids), notes (text)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = root / "corpus"
    (corpus / "web").mkdir(parents=True)
    with open(corpus / "web" / "web.jsonl", "w", encoding="utf-8") as fh:
        for i in range(12):  # the fifth record has no id: named by place
            record = {"text": _text(i)} if i == 4 else {"id": f"web-{i}", "text": _text(i)}
            fh.write(json.dumps(record) + "\n")
    (corpus / "web" / "README.md").write_text("# web\nscraped pages\n")
    (corpus / "web" / "LICENSE").write_text("CC-BY\n")
    (corpus / "web" / "meta.json").write_text('{"source": "web"}\n')
    (corpus / "books").mkdir()
    books = {"id": [f"book-{i}" for i in range(7)], "text": [_text(i, 11) for i in range(7)]}
    pq.write_table(pa.table(books), corpus / "books" / "books.parquet", row_group_size=4)
    save_dataset(corpus / "code", [700 + i for i in range(9)], [_text(i, 5) for i in range(9)])
    (corpus / "notes").mkdir()
    for i in range(3):
        (corpus / "notes" / f"note_{i}.txt").write_text(_text(i, 3))
    return corpus


def save_dataset(path: Path, ids: list[int], texts: list[str]) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()  # a test reads standard error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        datasets.Dataset.from_dict({"id": ids, "text": texts}).save_to_disk(str(path))


def _per_document(corpus: object) -> tuple[list[int], list[str]]:
    c = corpus  # a Corpus
    n = int(c.raw_lengths.size)  # type: ignore[attr-defined]
    return c.raw_lengths.tolist(), c.names.take(np.arange(n))  # type: ignore[attr-defined]


def test_mixed_corpus_is_the_concatenation_of_its_single_format_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_mixed_corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    parts = ["corpus/web", "corpus/books", "corpus/code", "corpus/notes"]
    mixed = open_corpus(parts, source_from="dir")
    lengths: list[int] = []
    names: list[str] = []
    for part in parts:
        one_lengths, one_names = _per_document(open_corpus(part))
        lengths += one_lengths
        names += one_names
    assert _per_document(mixed) == (lengths, names)
    assert names[4] == "corpus/web/web.jsonl#4" and names[12] == "book-0"
    assert names[19] == "700" and names[-1] == "corpus/notes/note_2.txt"  # an integer id; a file's only doc
    assert mixed.sources is not None
    assert [mixed.sources.names[c] for c in mixed.sources.codes[[0, 12, 19, 28]]] == ["web", "books", "code",
                                                                                     "notes"]
    assert mixed.described.startswith("mixed (auto-detected per input: 1 jsonl, 1 parquet, 1 hf, 3 text)")
    assert ("skipped 3 files that are not data: 'corpus/web/LICENSE' (documentation), 'corpus/web/README.md' "
            "(documentation), 'corpus/web/meta.json' (metadata)") in mixed.described
    # the walked directory: its inputs in sorted order (books, code, notes, web), the same documents
    walked = open_corpus("corpus", source_from="file")
    order = [parts[1], parts[2], parts[3], parts[0]]
    expected: tuple[list[int], list[str]] = ([], [])
    for part in order:
        one = _per_document(open_corpus(part))
        expected[0].extend(one[0])
        expected[1].extend(one[1])
    assert _per_document(walked) == expected
    assert walked.sources is not None and walked.sources.names[walked.sources.codes[7]] == \
        "code/data-00000-of-00001.arrow"


def test_a_directory_walk_lists_what_is_not_data_and_refuses_what_may_be(tmp_path: Path) -> None:
    web = tmp_path / "web"
    web.mkdir()
    (web / "a.jsonl").write_text('{"text": "x y"}\n')
    (web / "README.md").write_text("about\n")
    (web / "notes.md").write_text("a datacard\n")
    (web / "meta.json").write_text("{}\n")
    (web / ".hidden").write_text("x\n")
    (web / ".cache").mkdir()
    (web / ".cache" / "b.jsonl").write_text('{"text": "z"}\n')
    for fmt in ("auto", "jsonl"):
        plan = plan_inputs([str(web)], fmt)
        assert plan.inputs == ((str(web / "a.jsonl"), "jsonl"),)
        assert dict(plan.skipped) == {
            str(web / ".cache") + os.sep: "hidden", str(web / ".hidden"): "hidden",
            str(web / "README.md"): "documentation", str(web / "meta.json"): "metadata",
            str(web / "notes.md"): "documentation beside jsonl data"}
    first = str(web / ".cache") + os.sep
    assert plan.skipped_line(limit=1) == (f"skipped 5 files that are not data: {first!r} (hidden) and 4 "
                                          "more; name a file, or give a glob, to read it")
    # named (or matched) files are read as named
    assert plan_inputs([str(web / "notes.md")]).inputs == ((str(web / "notes.md"), "text"),)
    # documentation in a directory of text is text; README still is not
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.txt").write_text("a b\n")
    (notes / "guide.md").write_text("c d\n")
    (notes / "README.txt").write_text("what this is\n")
    plan = plan_inputs([str(notes)])
    assert [os.path.basename(p) for p in plan.paths] == ["guide.md", "n.txt"]
    assert plan.skipped == ((str(notes / "README.txt"), "documentation"),)
    # a file that may be data is never dropped: refused, naming it and the fix
    (web / "rows.csv").write_text("a,b\n")
    with pytest.raises(InputError, match=r"cannot tell the format of '.*rows\.csv' \(under --data directory "
                                         r"'.*web'\) from its name; pass --format .*name the data files "
                                         "with a glob"):
        plan_inputs([str(web)])
    only_docs = tmp_path / "docs"
    only_docs.mkdir()
    (only_docs / "README.md").write_text("x\n")
    with pytest.raises(InputError, match=r"--data directory '.*docs' holds no input files \(it holds only "
                                         r"files that are not data: '.*README\.md'"):
        plan_inputs([str(only_docs)])


def test_a_folder_of_saved_datasets_is_read_as_hf_datasets(tmp_path: Path) -> None:
    parent = tmp_path / "hub"
    save_dataset(parent / "code", [1, 2, 3], ["a b", "c", "d e f"])
    save_dataset(parent / "code2", [4, 5], ["g", "h i"])
    for fmt in ("auto", "hf"):
        plan = plan_inputs([str(parent)], fmt)
        assert plan.inputs == ((str(parent / "code"), "hf"), (str(parent / "code2"), "hf"))
        assert not plan.skipped
    corpus = open_corpus(str(parent))
    assert corpus.raw_lengths.tolist() == [4, 2, 6, 2, 4]  # bytes + 1 BOS
    assert corpus.names is not None and corpus.names.take(np.arange(5)) == ["1", "2", "3", "4", "5"]
    # a dataset directory cannot be read as files of another format
    with pytest.raises(InputError, match=r"--format jsonl reads every --data input as jsonl files, but "
                                         r"'.*code' is a hf dataset directory; leave --format out"):
        plan_inputs([str(parent)], "jsonl")


def test_format_applies_to_every_input_and_single_format_readers_refuse_a_mix(tmp_path: Path) -> None:
    from packing_theory.corpus.readers import expand_inputs

    (tmp_path / "a.jsonl").write_text('{"text": "ab"}\n')
    (tmp_path / "b.txt").write_text("cde")
    plan = plan_inputs([str(tmp_path / "a.jsonl"), str(tmp_path / "b.txt")], "text")
    assert plan.format == "text" and plan.reason == "given with --format"
    both = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.txt")]
    assert open_corpus(both, format="text").raw_lengths.tolist() == [len('{"text": "ab"}\n') + 1, 4]
    with pytest.raises(InputError, match=r"--data holds inputs of several formats \(jsonl: '.*a\.jsonl', "
                                         r"text: '.*b\.txt'\); this reads one format at a time"):
        expand_inputs([str(tmp_path / "a.jsonl"), str(tmp_path / "b.txt")])
    with pytest.raises(InputError, match="source_column reads one format's field or column; the data holds "
                                         "jsonl, text inputs: label them with source_from='dir' or 'file'"):
        open_corpus([str(tmp_path / "a.jsonl"), str(tmp_path / "b.txt")], source_column="src")


def test_an_input_plan_checks_itself(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--data is empty"):
        InputPlan(())
    with pytest.raises(InputError, match=r"unknown format\(s\) \['csv'\]"):
        InputPlan((("a.csv", "csv"),))
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InputError, match="is given twice"):
        InputPlan(((str(tmp_path / "a.txt"), "text"), (str(tmp_path / "a.txt"), "text")))
    plan = InputPlan((("x.txt", "text"), ("y.txt", "text"), ("z.jsonl", "jsonl"), ("w.txt", "text")))
    assert plan.runs() == [("text", ["x.txt", "y.txt"]), ("jsonl", ["z.jsonl"]), ("text", ["w.txt"])]
    assert plan.format == "mixed" and plan.formats == ["text", "jsonl"] and plan.first("text") == "x.txt"


def _megatron(prefix: Path, docs: list[list[int]]) -> None:
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("megatron-core (with torch) is not installed")
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
    for d in docs:
        builder.add_document(torch.tensor(d, dtype=torch.int64), [len(d)])
    builder.finalize(f"{prefix}.idx")


def test_a_token_format_in_a_mix_needs_bos_and_the_message_names_it(tmp_path: Path) -> None:
    _megatron(tmp_path / "ids", [[1, 2, 3], [4], [5, 6]])
    (tmp_path / "t.jsonl").write_text('{"text": "abcd"}\n')
    inputs = [str(tmp_path / "t.jsonl"), str(tmp_path / "ids.idx")]
    with pytest.raises(InputError, match=r"bos must be given: megatron input '.*ids\.idx' stores token ids"):
        open_corpus(inputs)
    with pytest.raises(InputError, match=r"bos must be 'included' or 'add': megatron input '.*ids\.idx' "):
        open_inputs(plan_inputs(inputs))
    corpus = open_corpus(inputs, bos="add")
    assert corpus.raw_lengths.tolist() == [5, 4, 2, 3]  # 4 bytes + BOS; 3, 1, 2 ids + BOS
    reader = open_inputs(plan_inputs(inputs), bos="add", tokenizer="bytes")
    assert isinstance(reader, MixedReader) and reader.format == "mixed"
    assert reader.describe().startswith("jsonl: JSON Lines") and " | megatron: " in reader.describe()
    with pytest.raises(InputError, match=r"eos_id does not apply to any input \(jsonl, megatron data"):
        open_inputs(plan_inputs(inputs), bos="add", eos_id=3)
