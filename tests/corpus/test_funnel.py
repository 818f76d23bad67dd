"""The cleaning funnel: ordered stages, outcomes on each stage's input, exact reconciliation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.funnel import Funnel
from packing_theory.corpus.labels import SourceLabels
from packing_theory.corpus.masks import write_mask
from packing_theory.errors import InputError


def test_each_mask_covers_the_stage_input_and_ids_name_raw_documents(tmp_path: Path) -> None:
    lengths = np.arange(1, 11)
    write_mask(tmp_path / "f.u8", [0, 1, 0, 0, 0, 0, 0, 0, 0, 1])  # raw 1 and 9
    (tmp_path / "ids.txt").write_text("2\n9\n")  # 9 is already gone
    write_mask(tmp_path / "d.u8", [1, 0, 0, 0, 0, 0, 1])  # of the 7 left (0, 3, 4, 5, 6, 7, 8): 0 and 8
    (tmp_path / "funnel.json").write_text(json.dumps({"stages": [
        {"name": "quality", "kind": "filter", "parameters": {"t": 4}, "revision": "r1", "mask": "f.u8"},
        {"name": "exact", "kind": "dedup", "ids": "ids.txt"},
        {"name": "decon", "kind": "decontamination", "mask": "d.u8"}]}))
    f = Funnel.read(tmp_path / "funnel.json")
    r = f.apply(lengths)
    r._check()
    assert np.flatnonzero(r.keep).tolist() == [3, 4, 5, 6, 7]
    assert [(s.input_documents, s.removed_documents) for s in r.stages] == [(10, 2), (8, 1), (7, 2)]
    assert [s.removed_tokens for s in r.stages] == [2 + 10, 3, 1 + 9]
    assert r.stages[0].to_dict()["parameters"] == {"t": 4} and r.stages[0].to_dict()["revision"] == "r1"
    labels = SourceLabels.from_strings(list("aabbaabbab"), origin="x")
    per = r.per_source(labels, lengths)
    assert per["a"]["documents"] == [5, 4, 4, 2] and per["b"]["documents"] == [5, 4, 3, 3]
    assert per["a"]["tokens"][0] + per["b"]["tokens"][0] == 55


def test_the_order_of_the_stages_changes_the_retained_corpus() -> None:
    lengths = np.array([5, 5, 5, 5])
    first = Funnel.from_document({"stages": [{"name": "f", "mask": [1, 0, 0, 0]},
                                             {"name": "d", "mask": [1, 0, 0]}]})
    second = Funnel.from_document({"stages": [{"name": "d", "mask": [1, 0, 0, 0]},
                                              {"name": "f", "mask": [0, 1, 0]}]})
    assert first.apply(lengths).keep.tolist() == [False, False, True, True]
    assert second.apply(lengths).keep.tolist() == [False, True, False, True]


def test_a_mask_of_another_length_names_the_stage_the_file_and_both_lengths(tmp_path: Path) -> None:
    write_mask(tmp_path / "m.u8", [0, 0, 0])
    f = Funnel.from_document({"stages": [{"name": "drop", "ids": [0]}, {"name": "q", "mask": "m.u8"}]},
                             base=str(tmp_path))
    with pytest.raises(InputError, match=r"stage 'q': mask '.*m.u8' has 3 entries for the stage's input of "
                                         r"4 documents"):
        f.apply([1, 2, 3, 4, 5])


def test_a_column_outcome(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"bad": [False, True, False]}), tmp_path / "c.parquet")
    stage = {"name": "c", "kind": "filter", "column": {"path": "c.parquet", "name": "bad"}}
    f = Funnel.from_document({"stages": [stage]}, base=str(tmp_path))
    assert f.apply([4, 5, 6]).keep.tolist() == [True, False, True]
    pq.write_table(pa.table({"bad": ["x", "y", "x"]}), tmp_path / "s.parquet")
    g = Funnel.from_document({"stages": [{"name": "c", "column": {"path": "s.parquet", "name": "bad"}}]},
                             base=str(tmp_path))
    with pytest.raises(InputError, match="not 0/1 or booleans"):
        g.apply([4, 5, 6])


@pytest.mark.parametrize(("doc", "message"), [
    ({"stages": []}, "non-empty 'stages' list"),
    ({"stages": [{"kind": "filter", "ids": []}]}, r"stages\[0\] needs a 'name'"),
    ({"stages": [{"name": "a", "ids": []}, {"name": "a", "ids": []}]}, "stage name 'a' is repeated"),
    ({"stages": [{"name": "a", "kind": "sort", "ids": []}]}, "kind must be one of filter, dedup"),
    ({"stages": [{"name": "a"}]}, "exactly one outcome of mask, ids, column"),
    ({"stages": [{"name": "a", "ids": [], "mask": []}]}, "exactly one outcome"),
    ({"stages": [{"name": "a", "column": "x.parquet"}]}, r"column must be \{'path'"),
    ({"stages": [{"name": "a", "ids": [], "when": 1}]}, r"unknown key\(s\) \['when'\]"),
])
def test_a_malformed_declaration_is_refused(doc: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Funnel.from_document(doc)


def test_bad_ids_are_refused() -> None:
    with pytest.raises(InputError, match="document id 7 is outside the raw corpus"):
        Funnel.from_document({"stages": [{"name": "a", "ids": [7]}]}).apply([1, 2])
    with pytest.raises(InputError, match="repeats an id"):
        Funnel.from_document({"stages": [{"name": "a", "ids": [1, 1]}]}).apply([1, 2])
    with pytest.raises(InputError, match="inline mask holds only 0 and 1"):
        Funnel.from_document({"stages": [{"name": "a", "mask": [2, 0]}]}).apply([1, 2])
