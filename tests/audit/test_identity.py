"""Every document by its real name: the raw corpus index, name and source, before and after a funnel."""

from __future__ import annotations

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.audit import Ledger
from packing_theory.audit.documents import DocumentRows, document_names, document_table
from packing_theory.audit.identity import DocumentIdentity, FileNames, ListNames, as_names, document_identity
from packing_theory.corpus.funnel import Funnel
from packing_theory.corpus.labels import SourceLabels
from packing_theory.errors import InputError, InputTypeError

R, B = 16, 4


def _raw_corpus() -> tuple[np.ndarray, list[str], SourceLabels]:
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 70, 60).astype(np.int64)
    lengths[[5, 17, 41]] = [300, 250, 400]  # long documents, some of them removed below
    names = [f"dir/file{i}.txt" for i in range(60)]
    labels = SourceLabels.from_strings(["web" if i % 3 else "code" for i in range(60)], origin="test")
    return lengths, names, labels


def _table(identity: DocumentIdentity, kept: np.ndarray, rows: int | None = None):  # type: ignore[no-untyped-def]
    packer = pt.Packer(capacity=R, min_buffer=B, refill=2, rows=rows)
    ledger, doc_rows = Ledger.for_packer(packer), DocumentRows.for_packer(packer)
    _, facts = pt.feed_all(packer.stream(kept), ledger, doc_rows)
    return document_table(ledger, facts, kept, identity=identity)


def test_a_funnelled_corpus_names_every_row_by_its_raw_document() -> None:
    raw, names, labels = _raw_corpus()
    funnel = Funnel.from_document({"stages": [
        {"name": "quality", "kind": "filter", "mask": [1 if i in (2, 17) else 0 for i in range(60)]},
        {"name": "dedup", "kind": "dedup", "ids": [3, 41]}]}).apply(raw)
    identity = document_identity(raw, names=names, labels=labels, funnel=funnel)
    kept = raw[funnel.keep]
    table = _table(identity, kept)
    table._check()
    assert len(table) == 60  # 56 replayed, 4 removed
    offered = [table.row(i) for i in range(56)]
    assert [r["document"] for r in offered] == np.flatnonzero(funnel.keep).tolist()
    for r in offered:  # the name, source and length are the raw document's
        assert r["name"] == names[r["document"]] and r["length"] == raw[r["document"]]
        assert r["source"] == ("web" if r["document"] % 3 else "code")
    removed = [table.row(i) for i in range(56, 60)]
    assert [(r["document"], r["fate"], r["pass"], r["removed"]) for r in removed] == [
        (2, "removed by quality", -1, int(raw[2])), (3, "removed by dedup", -1, int(raw[3])),
        (17, "removed by quality", -1, 250), (41, "removed by dedup", -1, 400)]
    # the largest document never started is named by its raw index, with the raw document's length
    rows, count = table.largest_untrained(3)
    assert count >= 1 and rows[0]["document"] == 5 and rows[0]["length"] == 300 == raw[5]
    assert rows[0]["name"] == "dir/file5.txt"
    # find: by raw index (replayed or removed) and by name
    assert table.find(5) == [int(np.flatnonzero(np.flatnonzero(funnel.keep) == 5)[0])]
    assert table.find("41") == [59] and table.find("file41.txt") == [59]
    assert table.find("dir/file7.txt") == table.find(7)
    with pytest.raises(InputError, match="document 60 is not among the 60 documents offered"):
        table.find(60)
    assert table.total("removed") == int(raw[[2, 3, 17, 41]].sum())


def test_without_an_identity_a_document_is_its_position() -> None:
    raw, names, _ = _raw_corpus()
    plain = _table(DocumentIdentity.of(raw.size), raw)
    named = _table(document_identity(raw, names=names), raw)
    assert plain.column("document").tolist() == list(range(60))
    assert set(plain.column("name").tolist()) == {""} and set(plain.column("source").tolist()) == {""}
    assert named.column("name").tolist() == names
    for col in ("emitted", "fate", "first_row", "buffered"):
        assert np.array_equal(plain.column(col), named.column(col))


def test_a_multi_pass_table_repeats_the_raw_index_per_pass() -> None:
    raw, names, _ = _raw_corpus()
    identity = DocumentIdentity.from_funnel_masks(raw, {"drop": np.arange(60) < 10}, names=names)
    kept = raw[10:]
    packer = pt.Packer(capacity=R, min_buffer=B, refill=2, passes=2, exhausted="drain")
    ledger, doc_rows = Ledger.for_packer(packer), DocumentRows.for_packer(packer)
    _, facts = pt.feed_all(packer.stream(kept), ledger, doc_rows)
    table = document_table(ledger, facts, kept, passes=2, identity=identity)
    table._check()
    assert len(table) == 2 * 50 + 10
    assert table.column("document").tolist() == [*range(10, 60), *range(10, 60), *range(10)]
    assert table.column("pass").tolist() == [0] * 50 + [1] * 50 + [-1] * 10
    assert table.find(12) == [2, 52] and table.find("dir/file3.txt") == [103]


def test_names_are_read_lazily_and_match_document_names() -> None:
    paths, counts = ["a.txt", "b.jsonl", "c.txt"], [1, 3, 1]
    lazy = FileNames(paths, counts)
    assert len(lazy) == 5
    assert lazy.take(np.arange(5)) == document_names(paths, counts)
    assert lazy.take(np.array([3, 0])) == ["b.jsonl#2", "a.txt"] and lazy[4] == "c.txt"
    assert ListNames(["x", "y"])[1] == "y"
    assert isinstance(ListNames(["x"]), ListNames) and as_names(None) is None
    with pytest.raises(InputTypeError, match="names must be a sequence of names or a NameSource, got str"):
        as_names("abc")
    with pytest.raises(InputError, match="FileNames got 2 paths for 1 counts"):
        FileNames(["a", "b"], [1])


def test_file_names_of_ids_in_any_order_over_many_files() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 4, size=50).tolist()
    paths = [f"d/{i}.txt" for i in range(50)]
    ids = rng.integers(0, sum(counts), size=400).astype(np.int64)  # shuffled, with repeats
    every = document_names(paths, counts)
    assert FileNames(paths, counts).take(ids) == [every[i] for i in ids.tolist()]
    assert FileNames(paths, counts).take(np.zeros(0, np.int64)) == []
    with pytest.raises(InputError, match=r"row ids must be in \[0, \d+\), got -1\.\.0"):
        FileNames(paths, counts).take(np.array([0, -1]))


def test_a_bad_identity_is_refused_naming_what_is_wrong() -> None:
    with pytest.raises(InputError, match=r"raw_index must be 1-D in \[0, 3\), got 0\.\.5"):
        DocumentIdentity(np.array([0, 5]), ListNames(["a", "b", "c"]))
    with pytest.raises(InputError, match="must cover the same raw corpus, got sizes \\[3, 2\\]"):
        DocumentIdentity(None, ListNames(["a", "b", "c"]), ("s",), np.zeros(2, np.int32))
    with pytest.raises(InputError, match="removed_by needs raw_lengths"):
        DocumentIdentity(None, removed_by=np.array([-1, 0], np.int16), stages=("x",))
    with pytest.raises(InputError, match="give source_labels and source_codes together"):
        DocumentIdentity(None, source_labels=("a",))
    with pytest.raises(InputError, match="removed_by must index the 1 stages"):
        DocumentIdentity(None, removed_by=np.array([3], np.int16), stages=("x",), raw_lengths=np.array([4]))
    with pytest.raises(InputError, match="stage 0 removes 2 documents' worth of flags for 3 raw documents"):
        DocumentIdentity.from_funnel_masks([1, 2, 3], {"x": [True, False]})
    ident = DocumentIdentity.of(5)
    with pytest.raises(InputError, match="document identity names 5 replayed documents, the packer was "
                                         "offered 4"):
        ident.check(4)
    raw, _, _ = _raw_corpus()
    with pytest.raises(InputError, match="document identity names 60 replayed documents"):
        _table(DocumentIdentity.of(60), raw[:50])
