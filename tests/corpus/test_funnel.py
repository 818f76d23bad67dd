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
from tests.fifo_helpers import raised_within


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


@pytest.mark.parametrize("outcome", ["mask", "ids", "column"])
@pytest.mark.parametrize("escape", ["relative", "absolute", "symlink"])
def test_an_outcome_file_outside_the_declarations_directory_is_refused(tmp_path: Path, outcome: str,
                                                                         escape: str) -> None:
    """Before the fix a funnel's outcome paths were joined unchecked (``..`` and absolute paths followed)."""
    decl = tmp_path / "decl"
    decl.mkdir()
    write_mask(tmp_path / "m.u8", [0, 1, 0])
    (tmp_path / "ids.txt").write_text("1\n")
    name = {"mask": "m.u8", "ids": "ids.txt", "column": "c.parquet"}[outcome]
    path = {"relative": f"../{name}", "absolute": str(tmp_path / name), "symlink": "link"}[escape]
    if escape == "symlink":
        (decl / "link").symlink_to(tmp_path / name)
    where: object = {"path": path, "name": "bad"} if outcome == "column" else path
    (decl / "f.json").write_text(json.dumps({"stages": [{"name": "s", outcome: where}]}))
    funnel = Funnel.read(decl / "f.json")
    with pytest.raises(InputError, match=rf"funnel .* stage 's' {outcome} .* leaves the directory"):
        funnel.apply([4, 5, 6])


def test_outcome_files_must_be_regular_files_and_a_mask_is_sized_before_it_is_read(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "m.u8")
    os.mkfifo(tmp_path / "ids.txt")
    for outcome, name in (("mask", "m.u8"), ("ids", "ids.txt")):
        f = Funnel.from_document({"stages": [{"name": "s", outcome: name}]}, base=str(tmp_path))
        error = raised_within(f.apply, [1, 2, 3], fifos=[tmp_path / name])
        assert isinstance(error, InputError), error
        assert "is not a regular file (a pipe: reading it could wait" in str(error)
    (tmp_path / "big.u8").write_bytes(b"\0" * 4096)
    f = Funnel.from_document({"stages": [{"name": "s", "mask": "big.u8"}]}, base=str(tmp_path))
    with pytest.raises(InputError, match="has 4096 entries for the stage's input of 3 documents"):
        f.apply([1, 2, 3])
    (tmp_path / "many.txt").write_text("0\n" * 10_000)  # more bytes than 3 raw ids can take
    f = Funnel.from_document({"stages": [{"name": "s", "ids": "many.txt"}]}, base=str(tmp_path))
    with pytest.raises(InputError, match="is larger than 4,168 bytes"):
        f.apply([1, 2, 3])


@pytest.mark.parametrize("ids", [[10**30], [-(10**30)], [2**63]])
def test_an_id_past_int64_is_outside_the_corpus_not_an_overflow(ids: list[int], tmp_path: Path) -> None:
    """Before the fix ``ids: [10**30]`` was an OverflowError (exit 3)."""
    with pytest.raises(InputError, match=f"document id {ids[0]} is outside the raw corpus"):
        Funnel.from_document({"stages": [{"name": "a", "ids": ids}]}).apply([1, 2])
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    with pytest.raises(InputError, match=f"document id {ids[0]} is outside the raw corpus"):
        Funnel.from_document({"stages": [{"name": "a", "ids": "ids.json"}]}, base=str(tmp_path)).apply([1, 2])


def test_parameters_that_alias_a_billion_leaves_are_refused_when_read(tmp_path: Path) -> None:
    """Before the fix a 1 KB YAML funnel took the audit out of memory: its parameters went into the report."""
    pytest.importorskip("yaml")
    laughs = "".join(f"      {c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n"
                     for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    text = ("stages:\n  - name: q\n    ids: []\n    parameters:\n      a: &a [lol, lol, lol, lol, lol, lol, "
            "lol, lol, lol, lol]\n" + laughs)
    assert len(text) < 1024
    (tmp_path / "f.yaml").write_text(text)
    with pytest.raises(InputError, match="through shared nodes \\(YAML aliases\\)"):
        Funnel.read(tmp_path / "f.yaml")


@pytest.mark.parametrize("text", ['{"stages": [{"name": "a", "ids": [], "ids": [0]}]}',
                                  '{"stages": [{"name": "a", "ids": []}], "stages": []}'])
def test_a_repeated_key_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "f.json").write_text(text)
    with pytest.raises(InputError, match="repeats the key"):
        Funnel.read(tmp_path / "f.json")
