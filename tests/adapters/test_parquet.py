"""The nanochat-style parquet reader of the drop-in loaders (:mod:`packing_theory.adapters.parquet`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packing_theory.adapters.parquet import parquet_documents
from packing_theory.errors import InputError


def _encode(texts: list[str]) -> list[list[int]]:
    return [[0, *(len(w) for w in t.split())] for t in texts]


def test_parquet_documents_read_the_text_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": ["ab c", "dddd"]}), str(path))
    docs = parquet_documents([path], _encode)
    assert [list(docs[i]) for i in range(len(docs))] == [[0, 2, 1], [0, 4]]


def test_a_text_column_named_twice_is_bad_input(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "dup.parquet"
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["text", "text"])
    pq.write_table(table, str(path))
    with pytest.raises(InputError, match=r"dup\.parquet' has 2 columns named 'text'"):
        parquet_documents([path], _encode)
