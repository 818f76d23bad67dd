"""explain: one document under one packer agrees with its documents.csv row, and says why."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory import feed_all
from packing_theory.audit import DocumentRows, Ledger, document_table, explain
from packing_theory.engine.horizon import Budget
from packing_theory.errors import InputError
from packing_theory.registry import build_packer


def _table(lengths: np.ndarray, policy: str, names: list[str] | None = None,  # type: ignore[no-untyped-def]
           **knobs: object):
    packer = build_packer(policy, capacity=64, **knobs)
    ledger, rows = Ledger(64, 16, policy=policy), DocumentRows(64)
    feed_all(packer.events(lengths), ledger, rows)
    return document_table(ledger, rows.result(), lengths, passes=1, names=names)


@pytest.mark.parametrize("policy", ["discard", "continue", "trl-bfd"])
def test_explain_agrees_with_the_table_for_every_never_started_document(policy: str) -> None:
    rng = np.random.default_rng(11)
    lengths = np.maximum(1, rng.lognormal(3.5, 1.4, 300)).astype(np.int64)
    knobs = {"min_buffer": 16, "refill": 4} if policy != "trl-bfd" else {}
    table = _table(lengths, policy, **knobs)
    fate = table.column("fate")
    never = np.flatnonzero(fate == "never started")
    sample = [*never.tolist(), *np.flatnonzero(fate != "never started")[:5].tolist()]
    assert policy == "trl-bfd" or np.count_nonzero(fate == "never started") >= 15
    for i in sample:
        e = explain(lengths, i, policy=policy, capacity=64, min_buffer=16,
                    options={"refill": 4} if policy != "trl-bfd" else None)
        row = table.row(i)
        got = (e.fate, e.protected, e.first_row, e.emitted, e.discarded, e.filtered, e.buffered,
               e.never_reached)
        want = (row["fate"], row["protected"], row["first_row"], row["emitted"], row["discarded"],
                row["filtered"], row["buffered"], row["never_reached"])
        assert got == want, i
        assert (e.first_row in e.rows) == (e.fate != "never started")
        if e.fate == "never started" and e.protected:
            assert "among the B − 1 = 15 largest over-capacity documents" in e.sentence
            assert e.larger_arrived < 15
        elif e.fate == "never started":
            assert "still buffered when the run stopped" in e.sentence


def test_explain_by_name_and_a_document_never_reached() -> None:
    lengths = np.arange(1, 400, dtype=np.int64)
    names = [f"dir/file{i}.txt" for i in range(lengths.size)]
    e = explain(lengths, "file398.txt", policy="discard", capacity=64, min_buffer=4, names=names,
                horizon=Budget("rows", 5), options={"refill": 2})
    assert e.document == 398 and e.name == "dir/file398.txt" and e.fate == "never reached"
    assert e.sentence.endswith("the run stopped at row 5 (budget reached) before it arrived")
    with pytest.raises(InputError, match=r"'nope\.txt' is not among the 399 documents offered"):
        explain(lengths, "nope.txt", capacity=64, min_buffer=4, names=names)


def test_a_started_document_lists_its_rows() -> None:
    e = explain([3, 200, 5, 4, 100], 1, policy="continue", capacity=64, min_buffer=1, options={"refill": 1})
    assert e.fate == "trained" and len(e.rows) >= 3 and e.rows == tuple(sorted(e.rows))
    assert e.partial_row == 0
    assert e.sentence.startswith("document 1 (length 200) under continue: trained; started in row 0")


def test_a_name_matches_exactly_or_by_a_unique_whole_component_suffix() -> None:
    lengths = np.array([10, 20, 30, 40, 50, 60], dtype=np.int64)
    names = ["c/ctypes/util.py", "c/abc.py", "c/__phello__/__init__.py", "c/xml/dom/__init__.py",
             "c/xdom/__init__.py", "c/distutils/util.py"]
    table = _table(lengths, "discard", names, min_buffer=2, refill=2)
    assert table.find("c/abc.py") == [1]
    assert table.find("dom/__init__.py") == [3]
    assert table.find("distutils/util.py") == [5]
    assert table.find("./xdom/__init__.py") == [4]
    for missing in ("collections/abc.py", "bc.py", "html/dom/__init__.py"):
        with pytest.raises(InputError, match=rf"{missing!r} is not among the 6 documents offered"):
            table.find(missing)
    with pytest.raises(InputError, match=r"'__init__\.py' is ambiguous: 3 documents end with that path "
                                         r"\(c/__phello__/__init__\.py \(document 2\), "):
        table.find("__init__.py")
    with pytest.raises(InputError, match=r"'util\.py' is ambiguous: 2 documents"):
        table.find("util.py")


def test_an_ambiguous_name_lists_five_candidates_and_the_count() -> None:
    names = [f"pkg{i}/__init__.py" for i in range(21)]
    with pytest.raises(InputError, match=r"21 documents end with that path \((pkg\d+/__init__\.py "
                                         r"\(document \d+\), ){4}pkg4/__init__\.py \(document 4\), …\)"):
        explain(np.full(21, 5, dtype=np.int64), "__init__.py", policy="discard", capacity=64, min_buffer=2,
                names=names, options={"refill": 2})


def test_one_row_is_a_row_not_rows() -> None:
    e = explain([3, 5, 4, 60, 70], 1, policy="continue", capacity=8, min_buffer=1, options={"refill": 1})
    assert e.rows == (0,) and e.sentence.endswith("emitted 5 of its 5 tokens in row 0"), e.sentence


def test_tokens_in_the_partial_row_are_named_never_trained_and_not_among_the_rows() -> None:
    """212 tokens in rows of 64: three complete rows and a partial row 3 of 20 tokens, some of document 1."""
    e = explain([3, 200, 5, 4], 1, policy="continue", capacity=64, min_buffer=1, options={"refill": 1})
    assert e.horizon.stopped_at_row == 3 and e.horizon.partial_row_tokens == 20
    assert e.fate == "partly trained" and 3 not in e.rows and e.rows == tuple(sorted(e.rows))
    assert 0 < e.partial_row <= 20 and e.emitted + e.partial_row == 200
    assert e.to_dict()["partial_row"] == e.partial_row
    assert f"{e.partial_row} in the partial row 3, which is never trained" in e.sentence


def test_a_document_placed_only_in_the_unfinished_row_is_explained_as_never_trained() -> None:
    """continue at R = 8, B = 2: document 7 is placed alone in the last row, which the stream never fills."""
    e = explain([3, 5, 3, 5, 3, 5, 3, 5], 7, policy="continue", capacity=8, min_buffer=2, refill=2)
    assert e.fate == "never trained (unfinished row)" and e.emitted == 0 and e.partial_row == 5
    assert e.sentence == ("document 7 (length 5) under continue: never trained (unfinished row); all 5 "
                          "tokens it had placed are in the unfinished last row 3, which is never delivered, "
                          "so none of its 5 tokens was trained")


def test_digits_are_the_document_named_so_before_a_raw_index() -> None:
    """A record's id ``"3"`` is the document ``documents.csv`` names 3, not raw document 3; digits no
    document is named exactly are the raw index, never a path suffix; an ``int`` is always the index.
    Before, a string of digits was always the raw index."""
    lengths = np.array([10, 20, 30, 40, 50], dtype=np.int64)
    names = ["3", "a/2", "b.txt", "c", "3x"]
    table = _table(lengths, "discard", names, min_buffer=2, refill=2)
    assert table.find("3") == [0] and table.find(3) == [3]
    assert table.find("2") == [2]  # 'a/2' ends with the component '2': digits match a whole name only
    assert table.find("4") == [4] and table.find("b.txt") == [2]
    e = explain(lengths, "3", policy="discard", capacity=64, min_buffer=2, names=names, options={"refill": 2})
    assert (e.document, e.name, e.length) == (0, "3", 10)
    assert explain(lengths, 3, policy="discard", capacity=64, min_buffer=2, names=names,
                   options={"refill": 2}).document == 3
    with pytest.raises(InputError, match=r"document '7' is ambiguous: 2 documents are named so \(documents "
                                         r"1, 3\); give the document's index instead \(explain --index N\)"):
        _table(lengths, "discard", ["x", "7", "y", "7", "z"], min_buffer=2, refill=2).find("7")


def test_a_corpus_smaller_than_one_row_was_selected_from() -> None:
    """4 documents of 301 tokens at B = 2 in rows of 2,049: three were selected into the unfinished row 0
    and the fourth stayed buffered. explain said "nothing was selected: ... before the buffer held B = 2
    documents" of the fourth (found by a review): it took stopping at row 0 for no selection."""
    e = explain([301] * 4, 3, policy="discard", capacity=2049, min_buffer=2, options={"refill": 1})
    assert e.fate == "never started" and e.horizon.selected and not e.horizon.never_selected
    assert "nothing was selected" not in e.sentence and "before the buffer held" not in e.sentence
    assert e.sentence == ("document 3 (length 301) under discard: never started; still buffered when the "
                          "run stopped at row 0 (stream exhausted): no selection took it before the horizon "
                          "(it is not in K, so the theorem does not force this); it arrived in row 0")
    one = explain([301], 0, policy="discard", capacity=2049, min_buffer=2, options={"refill": 1})
    assert one.horizon.never_selected
    assert "nothing was selected: stopped at row 0 because the stream ran dry before the buffer held B = 2 " \
           "documents" in one.sentence


def test_a_length_tie_is_ranked_by_arrival_as_the_protected_set_ranks_it() -> None:
    """Two over-capacity documents of one length: the protected set's key (length, arrival) puts the later
    one above. explain said of the earlier "1 larger over-capacity document had arrived" and of the later
    "0 larger" (found by a review): it is as long, not larger. The count above it equals its rank in
    :func:`~packing_theory.invariant.protected.protected_keys` (the naive specification)."""
    from packing_theory.invariant.protected import protected_keys

    lengths = [3, 90, 5, 70, 2, 90, 4, 120, 6, 3, 2, 5, 1, 2]
    keys = protected_keys(lengths, 8, 5)
    said = {}
    for d in (1, 5):
        e = explain(lengths, d, policy="discard", capacity=8, min_buffer=5, options={"refill": 2})
        assert e.fate == "never started" and e.protected, d
        assert keys.index((90, d)) == e.larger_arrived, d  # its rank in K, from 0
        assert (e.longer_arrived, e.as_long_arrived) == (1, 1) and "larger" not in e.sentence, d
        said[d] = e.sentence.split("; ")[2]
    row = f"(row {e.horizon.stopped_at_row})"
    assert said[1] == (f"1 longer over-capacity document had arrived by the horizon {row}, and 1 as long "
                       "that arrived after it and so ranks above it (K breaks a length tie by arrival, the "
                       "later first)")
    assert said[5].startswith(f"1 longer over-capacity document had arrived by the horizon {row}, and 1 as "
                              "long that arrived before it and so ranks below it (")


def test_several_passes_name_the_pass_explained_and_the_others() -> None:
    """With two passes explain explained pass 0 without saying so; pass 1 of the same document may have
    another fate (found by a review: partly trained, then never started). The sentence names the pass
    and gives the other passes' fates, which are the per-document table's."""
    lengths = np.array([3, 40, 5, 50, 2, 60, 4, 70], dtype=np.int64)
    for passes in (2, 3):
        knobs = {"refill": 2, "passes": passes}
        packer = build_packer("discard", capacity=8, min_buffer=4, **knobs)
        ledger, rows = Ledger(8, 4, policy="discard"), DocumentRows(8)
        feed_all(packer.events(lengths), ledger, rows)
        table = document_table(ledger, rows.result(), lengths, passes=passes)
        fates = {p: table.row(p * 8 + 5)["fate"] for p in range(passes)}
        for p in range(passes):
            e = explain(lengths, 5, policy="discard", capacity=8, min_buffer=4, pass_index=p, options=knobs)
            assert (e.pass_index, e.passes, e.fate) == (p, passes, fates[p])
            assert e.other_passes == tuple((q, fates[q]) for q in range(passes) if q != p)
            assert e.sentence.startswith(f"document 5 (length 60) under discard, pass {p} of {passes}: "
                                         f"{fates[p]}; "), e.sentence
            if passes == 2:
                q = 1 - p
                said = "it never started" if fates[q] == "never started" else f"it was {fates[q]}"
                tail = f"; in pass {q} {said} (--pass {q} explains that pass)"
                assert e.sentence.endswith(tail), e.sentence
    assert fates == {0: "partly trained", 1: "partly trained", 2: "partly trained"}
    assert e.sentence.endswith("; in the other passes: passes 0, 1 partly trained (--pass K explains pass K)")
    two = [explain(lengths, 5, policy="discard", capacity=8, min_buffer=4, pass_index=p,
                   options={"refill": 2, "passes": 2}).fate for p in (0, 1)]
    assert two == ["partly trained", "never started"]  # the fates differ: naming the pass matters
    one = explain(lengths, 5, policy="discard", capacity=8, min_buffer=4, options={"refill": 2})
    assert one.passes == 1 and one.other_passes == () and "pass" not in one.sentence
