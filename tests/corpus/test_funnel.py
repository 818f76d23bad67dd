"""The cleaning funnel: ordered stages, outcomes on each stage's input, exact reconciliation."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory.corpus.funnel import Funnel, FunnelResult
from packing_theory.corpus.labels import SourceLabels
from packing_theory.corpus.masks import write_mask
from packing_theory.errors import InputError
from packing_theory.testing import scaled_examples
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


def test_an_absolute_outcome_path_inside_the_declarations_directory_reads_as_the_relative_one(
        tmp_path: Path) -> None:
    """The user wrote the declaration: an absolute path that stays inside its directory is the same file
    (it was refused as "an absolute path"; found by a review)."""
    write_mask(tmp_path / "m.u8", [0, 1, 0])
    kept = []
    for path in ("m.u8", str(tmp_path / "m.u8")):
        (tmp_path / "f.json").write_text(json.dumps({"stages": [{"name": "s", "mask": path}]}))
        kept.append(Funnel.read(tmp_path / "f.json").apply([4, 5, 6]).keep.tolist())
    assert kept[0] == kept[1] == [True, False, True]


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
# --------------------------------------------------------------------------- the reconciliation can fail


def _three_stage() -> tuple[np.ndarray, SourceLabels, FunnelResult]:
    lengths = np.arange(1, 13)
    labels = SourceLabels.from_strings(list("aabbaabbabab"), origin="x")
    f = Funnel.from_document({"stages": [
        {"name": "quality", "kind": "filter", "mask": [0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]},  # raw 1, 9
        {"name": "dedup", "kind": "dedup", "ids": [2, 3]},
        {"name": "decon", "kind": "decontamination", "mask": [1, 0, 0, 0, 0, 0, 0, 1]}]})  # raw 0, 11
    return lengths, labels, f.apply(lengths)


def _with_stage(r: FunnelResult, k: int, **changes: object) -> FunnelResult:
    stages = list(r.stages)
    stages[k] = replace(stages[k], **changes)
    return replace(r, stages=tuple(stages))


def test_a_funnel_as_applied_reconciles() -> None:
    lengths, labels, r = _three_stage()
    r._check()
    assert r.reconcile(labels, lengths) == ()
    assert np.flatnonzero(r.keep).tolist() == [4, 5, 6, 7, 8, 10]


def test_a_stage_that_removes_a_document_an_earlier_stage_removed_fails_naming_both_and_the_source() -> None:
    lengths, labels, r = _three_stage()
    removed = r.stages[1].removed.copy()
    removed[9] = True  # quality removed raw 9 (source b) already
    bad = _with_stage(r, 1, removed=removed)
    problems = bad.reconcile(labels, lengths)
    stray = [p for p in problems if "did not reach it" in p.message]
    assert [(p.stage, p.source) for p in stray] == [("dedup", "b")]
    assert stray[0].message == ("stage 'dedup' removed 1 document(s) of source 'b' that did not reach it "
                                "(raw 9; removed before by stage 'quality')")
    # the recorded counts no longer match the mask, and raw != kept + removed for source b
    assert any(p.stage == "dedup" and "records 2 removed documents; its mask" in p.message for p in problems)
    assert any(p.source == "b" and p.message == "source 'b': raw documents 6 != kept 2 + removed by the "
               "stages 5" for p in problems)
    assert all(p.source in (None, "b") for p in problems)


def test_a_tampered_keep_or_count_fails_naming_the_source_or_stage() -> None:
    lengths, labels, r = _three_stage()
    keep = r.keep.copy()
    keep[0] = True  # decon removed raw 0 (source a)
    problems = replace(r, keep=keep).reconcile(labels, lengths)
    assert {(p.stage, p.source) for p in problems} == {(None, "a")}
    assert any("keeps 1 document(s) of source 'a' that a stage removed (raw 0)" in p.message
               for p in problems)
    keep = r.keep.copy()
    keep[4] = False  # no stage removed raw 4 (source a)
    assert any("drops 1 document(s) of source 'a' that no stage removed (raw 4)" in p.message
               for p in replace(r, keep=keep).reconcile(labels, lengths))
    counted = _with_stage(r, 2, removed_tokens=r.stages[2].removed_tokens + 1)
    (p,) = counted.reconcile(labels, lengths)
    assert (p.stage, p.source) == ("decon", None)
    assert p.message == "stage 'decon' records 14 removed tokens; its mask and the stages before it give 13"
    assert replace(r, raw_tokens=1).reconcile(labels, lengths)[0].message.startswith(
        "the funnel records 12 raw documents and 1 tokens; the corpus has 12 and 78")
    short = _with_stage(r, 0, removed=r.stages[0].removed[:5])
    assert short.reconcile(labels, lengths)[-1].message == (
        "stage 'quality' mask does not cover the 12 raw documents")


@settings(max_examples=scaled_examples(80), deadline=None)
@given(data=st.data(), n=st.integers(1, 40), n_stages=st.integers(1, 4))
def test_random_funnels_reconcile_and_every_planted_inconsistency_is_caught(
        data: st.DataObject, n: int, n_stages: int) -> None:
    lengths = np.asarray(data.draw(st.lists(st.integers(1, 50), min_size=n, max_size=n)), np.int64)
    labels = SourceLabels.from_strings(data.draw(st.lists(st.sampled_from("pqr"), min_size=n, max_size=n)),
                                       origin="drawn")
    stages, alive = [], n
    for k in range(n_stages):
        mask = data.draw(st.lists(st.integers(0, 1), min_size=alive, max_size=alive))
        stages.append({"name": f"s{k}", "mask": mask})
        alive -= sum(mask)
    r = Funnel.from_document({"stages": stages}).apply(lengths)
    assert r.reconcile(labels, lengths) == ()
    per = r.per_source(labels, lengths)
    for src, row in per.items():  # raw = kept + Σ removed per source, naively
        mine = np.asarray([labels.names[c] == src for c in labels.codes])
        gone = sum(int(s.removed[mine].sum()) for s in r.stages)
        assert row["documents"][0] == int(r.keep[mine].sum()) + gone
    # plant: flip one document in one stage's removed set
    k = data.draw(st.integers(0, n_stages - 1))
    i = data.draw(st.integers(0, n - 1))
    removed = r.stages[k].removed.copy()
    removed[i] = not removed[i]
    problems = _with_stage(r, k, removed=removed).reconcile(labels, lengths)
    assert problems
    source = labels.names[labels.codes[i]]
    assert any(p.stage == f"s{k}" for p in problems)
    assert any(p.source == source for p in problems)
