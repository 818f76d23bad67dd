"""Source labels: a labels file, a manifest, a dataset column, the file or directory of each document."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.labels import (
    SourceLabels,
    labels_from_column,
    labels_from_file,
    labels_from_manifest,
    labels_from_paths,
)
from packing_theory.errors import InputError, InputTypeError
from tests.fifo_helpers import raised_within


def test_labels_are_sorted_names_and_codes_in_document_order() -> None:
    lab = SourceLabels.from_strings(["web", "code", "web", "books"], origin="x")
    lab._check()
    assert lab.names == ("books", "code", "web") and lab.codes.tolist() == [2, 1, 2, 0]
    sub = lab.subset([True, False, True, True])
    sub._check()
    assert sub.codes.tolist() == [2, 2, 0] and sub.documents_per_source() == {"books": 1, "code": 0, "web": 2}
    with pytest.raises(InputError, match="document 1 has an empty label"):
        SourceLabels.from_strings(["a", " "], origin="x")
    with pytest.raises(InputError, match="a keep mask of 2 entries for 4 documents"):
        lab.subset([True, False])


def test_from_codes_drops_unused_names_and_checks_the_codes() -> None:
    lab = SourceLabels.from_codes(["z", "a", "unused"], [0, 1, 0], origin="r")
    lab._check()
    assert lab.names == ("a", "z") and lab.codes.tolist() == [1, 0, 1]
    with pytest.raises(InputError, match=r"a code outside 0\.\.1"):
        SourceLabels.from_codes(["a", "b"], [0, 2], origin="r")
    with pytest.raises(InputTypeError, match="codes must be a 1-D integer array"):
        SourceLabels.from_codes(["a"], [0.5], origin="r")


def test_a_labels_file_text_or_json_with_its_length_checked(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_text("web\ncode\n web \n")
    assert labels_from_file(tmp_path / "l.txt", documents=3).codes.tolist() == [1, 0, 1]
    with pytest.raises(InputError, match=r"labels file '.*l.txt': 3 labels for 4 documents"):
        labels_from_file(tmp_path / "l.txt", documents=4)
    (tmp_path / "b.txt").write_text("web\n\ncode\n")
    with pytest.raises(InputError, match="line 2 is blank"):
        labels_from_file(tmp_path / "b.txt")
    # blank lines that only end the file (an editor's extra newline) were refused as "more than 3 lines"
    (tmp_path / "t.txt").write_text("web\ncode\n web \n\n  \n")
    assert labels_from_file(tmp_path / "t.txt", documents=3).codes.tolist() == [1, 0, 1]
    (tmp_path / "m.txt").write_text("web\ncode\n\nweb\n\n")
    with pytest.raises(InputError, match="line 3 is blank"):
        labels_from_file(tmp_path / "m.txt", documents=3)
    (tmp_path / "l.json").write_text(json.dumps(["a", "b"]))
    assert labels_from_file(tmp_path / "l.json").names == ("a", "b")
    (tmp_path / "n.json").write_text(json.dumps([1, 2]))
    with pytest.raises(InputError, match="a JSON list of strings"):
        labels_from_file(tmp_path / "n.json")


def test_a_manifest_labels_single_source_shards_and_refuses_mixed_ones() -> None:
    m = {"shards": [{"path": "a", "n_docs": 2, "source_counts": {"web": 2}},
                    {"path": "e", "n_docs": 0, "source_counts": {}},
                    {"path": "b", "n_docs": 3, "source_counts": {"code": 3, "web": 0}}]}
    assert labels_from_manifest(m, documents=5).codes.tolist() == [1, 1, 0, 0, 0]
    mixed = {"shards": [{"path": "m", "n_docs": 2, "source_counts": {"web": 1, "code": 1}}]}
    with pytest.raises(InputError, match=r"shard 0 \('m'\) holds 2 sources \['code', 'web'\]"):
        labels_from_manifest(mixed)
    with pytest.raises(InputError, match="records no source_counts"):
        labels_from_manifest({"shards": [{"path": "m", "n_docs": 2}]})


def test_paths_give_the_file_or_the_directory() -> None:
    paths = ["/d/web/a.jsonl", "/d/web/b.jsonl", "/d/code/c.jsonl"]
    codes = np.array([0, 0, 1, 2])
    assert labels_from_paths(paths, codes, "file").names == ("code/c.jsonl", "web/a.jsonl", "web/b.jsonl")
    d = labels_from_paths(paths, codes, "dir", documents=4)
    assert d.names == ("code", "web") and d.codes.tolist() == [1, 1, 1, 0]
    # a file at the root is from the root's folder (it was '.': a one-file corpus read "sources: .")
    assert labels_from_paths(["/d/x.txt"], [0, 0], "dir").names == ("d",)
    assert labels_from_paths(["/d/x.txt", "/d/web/y.txt"], [0, 1], "dir").names == ("d", "web")
    assert labels_from_paths(["/x.txt"], [0], "dir").names == ("/",)
    with pytest.raises(InputError, match="--source-from must be one of dir, file"):
        labels_from_paths(paths, codes, "row")


def test_a_parquet_or_arrow_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["x", "y", "z"], "src": ["a", "b", "a"]}), tmp_path / "t.parquet")
    assert labels_from_column([str(tmp_path / "t.parquet")], "src", documents=3).codes.tolist() == [0, 1, 0]
    with pytest.raises(InputError, match=r"has no column 'nope'; available columns: \['text', 'src'\]"):
        labels_from_column(str(tmp_path / "t.parquet"), "nope")
    with pytest.raises(InputError, match="3 labels for 2 documents"):
        labels_from_column(str(tmp_path / "t.parquet"), "src", documents=2)
    pq.write_table(pa.table({"src": ["a", None]}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match="1 null value"):
        labels_from_column(str(tmp_path / "n.parquet"), "src")
    table = pa.table({"src": [1, 2, 1]})
    with pa.OSFile(str(tmp_path / "t.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    assert labels_from_column(str(tmp_path / "t.arrow"), "src").names == ("1", "2")


def test_a_saved_hugging_face_dataset_column(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["a", "bb", "ccc"], "origin": ["w", "w", "c"]})
    ds.save_to_disk(str(tmp_path / "hf"))
    assert labels_from_column(str(tmp_path / "hf"), "origin", documents=3).codes.tolist() == [1, 1, 0]


def test_a_labels_file_is_a_regular_file_read_no_further_than_its_documents(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe.txt")
    error = raised_within(labels_from_file, tmp_path / "pipe.txt", fifos=[tmp_path / "pipe.txt"])
    assert isinstance(error, InputError) and "pipe.txt' is not a regular file (a pipe" in str(error)
    (tmp_path / "long.txt").write_text("web\n" * 1000)
    with pytest.raises(InputError, match="has more than 3 labels, one per document"):
        labels_from_file(tmp_path / "long.txt", documents=3)
    (tmp_path / "wide.txt").write_text("x" * 10_000)
    with pytest.raises(InputError, match="a line longer than 4,096 characters"):
        labels_from_file(tmp_path / "wide.txt")
