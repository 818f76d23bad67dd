"""How ``compare`` ranks packers and what its headline claims, checked against figures computed here from
each packer's per-document table (or from the lengths), never from the ranking's own numbers:

* packers that train the same tokens of every document tie, whatever label (never started, never
  reached) their untrained documents get;
* packers equal on the first ranked quantity are ordered by the next one that differs among them, and
  the headline says which quantity that is, with both values; packers equal on everything share a rank;
* what the headline says of packers that pad or repeat in their rows (fewer, as many, more tokens
  trained) is what their trained tokens say.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pytest

from packing_theory.orchestration import Comparison, Settings
from packing_theory.orchestration.measure import measure
from packing_theory.reporting.model import percent

SETTINGS = Settings(capacity=128, min_buffer=16, refill=4)


@pytest.fixture(scope="module")
def lengths() -> npt.NDArray[np.int64]:
    rng = np.random.default_rng(3)
    return np.maximum(2, rng.lognormal(4.0, 1.3, 400)).astype(np.int64)


def _no_token_trained(cmp: Comparison, packer: str) -> int:
    """Documents none of whose tokens is in a complete row, from the per-document table."""
    table = cmp.measurement.run(packer).documents
    assert table is not None
    return int((table.column("emitted") == 0).sum())


def _trained(cmp: Comparison, packer: str) -> int:
    """Tokens in complete rows, from the per-document table."""
    table = cmp.measurement.run(packer).documents
    assert table is not None
    return int(table.column("emitted").sum())


def test_packers_that_train_the_same_tokens_tie_whatever_they_call_the_rest(
    lengths: npt.NDArray[np.int64],
) -> None:
    names = ["discard", "foundry-concat-wrap", "torchtune-split", "seamless"]
    cmp = Comparison(measure(lengths, names, SETTINGS, documents=True))
    online, offline = cmp.measurement.run("foundry-concat-wrap"), cmp.measurement.run("torchtune-split")
    a, b = online.documents, offline.documents
    assert a is not None and b is not None
    # the same tokens of every document trained ...
    assert np.array_equal(a.column("emitted"), b.column("emitted"))
    # ... but the untrained ones are "never reached" by the online packer, "never started" by the offline
    assert online.never_trained.never_started.documents == 0 < online.never_trained.never_reached.documents
    assert offline.never_trained.never_started.documents > 0 == offline.never_trained.never_reached.documents
    counts = {n: _no_token_trained(cmp, n) for n in names}
    assert counts["discard"] < counts["torchtune-split"] < counts["seamless"]  # the corpus separates them
    head = cmp.headline()
    # never at opposite ends: neither is named fewest or most apart from the other
    assert "foundry-concat-wrap" not in head and "torchtune-split" not in head
    n = len(lengths)
    assert (f"documents with no token trained: discard fewest with {counts['discard']:,} "
            f"({percent(counts['discard'] / n)} of the documents offered), seamless most with "
            f"{counts['seamless']:,} ({percent(counts['seamless'] / n)} of the documents offered)") in head
    rk = cmp.ranking
    assert rk.by is not None and rk.by.key == "untrained_documents"
    assert rk.values == counts
    assert rk.ranks["foundry-concat-wrap"] == rk.ranks["torchtune-split"]
    # without discard they lead, together, and the headline says they tie
    led = Comparison(measure(lengths, names[1:], SETTINGS, documents=True))
    assert led.ranking.ranks == {"foundry-concat-wrap": 1, "torchtune-split": 1, "seamless": 3}
    head = led.headline()  # another common horizon (discard no longer sets it): counted again
    k = _no_token_trained(led, "torchtune-split")
    assert k == _no_token_trained(led, "foundry-concat-wrap") < _no_token_trained(led, "seamless")
    assert f"foundry-concat-wrap, torchtune-split fewest with {k:,} ({percent(k / n)} of the" in head
    assert "foundry-concat-wrap, torchtune-split tie on every ranked quantity" in head


def test_packers_tied_on_the_first_quantity_are_ranked_by_the_next_one_that_differs(
    lengths: npt.NDArray[np.int64],
) -> None:
    names = ["discard", "trl-bfd", "torchtune-split"]  # trl-bfd first in the registry's order
    cmp = Comparison(measure(lengths, names, SETTINGS, horizon="natural", documents=True))
    counts = {n: _no_token_trained(cmp, n) for n in names}
    assert counts["trl-bfd"] == counts["torchtune-split"] == 0 < counts["discard"]
    # trl-bfd truncates every document to the row; torchtune-split splits it: cut off, from the lengths
    width = cmp.measurement.run("trl-bfd").row_width
    cut = int(np.maximum(0, lengths - width).sum())
    offered = int(lengths.sum())
    assert cut > 0
    rk = cmp.ranking
    assert rk.order == ("torchtune-split", "trl-bfd", "discard")
    assert rk.ranks == {"torchtune-split": 1, "trl-bfd": 2, "discard": 3}
    assert [q.key for q in rk.then] == ["cut_off_tokens"]
    head = cmp.headline()
    assert ("documents with no token trained: torchtune-split, trl-bfd fewest with 0 (0.0% of the "
            "documents offered)") in head
    assert ("among torchtune-split, trl-bfd, tokens cut off: torchtune-split fewest with 0 (0.0% of the "
            f"tokens offered), trl-bfd most with {cut:,} ({percent(cut / offered)} of the tokens "
            "offered)") in head
    trained = {n: _trained(cmp, n) for n in names}
    lo = min(trained.values())
    assert f"tokens trained: discard fewest with {lo:,} ({percent(lo / offered)} of the {offered:,}" in head
    assert "torchtune-split most with" in head and trained["torchtune-split"] == max(trained.values())


def _padded_clause(head: str) -> str:
    m = re.search(r"; ([^;]*pad or repeat in their rows[^;]*);", head)
    assert m is not None, head
    return m.group(1)


def test_what_the_headline_says_of_padded_packers_is_what_they_trained(
    lengths: npt.NDArray[np.int64],
) -> None:
    full = ["discard", "trl-bfd", "olmo-truncate"]
    padded = ["bestfit-pad", "foundry-binpack", "axolotl-multipack", "parcae-bestfit"]
    cmp = Comparison(measure(lengths, full + padded, SETTINGS, documents=True))
    trained = {n: _trained(cmp, n) for n in full + padded}
    for n in full + padded:  # a packer fills its rows when every position holds a document token
        r = cmp.measurement.run(n)
        mass = r.aggregates.mass
        assert (mass.padding_tokens + mass.unused_capacity_tokens == 0) == (n in full), n
    lo, hi = min(trained[n] for n in full), max(trained[n] for n in full)
    fewer = [n for n in padded if trained[n] < lo]
    more = [n for n in padded if trained[n] > hi]
    assert fewer and more  # this corpus has both: the sentence cannot be one verdict for all
    clause = _padded_clause(cmp.headline())
    assert clause.startswith("of the packers that pad or repeat in their rows, ")

    def said(names: list[str], word: str) -> str:
        v = [trained[n] for n in names]
        amount = f"{min(v):,}" if min(v) == max(v) else f"{min(v):,}–{max(v):,}"
        return f"{', '.join(names)} {'trains' if len(names) == 1 else 'train'} {amount} ({word})"

    assert said(fewer, "fewer") in clause and said(more, "more") in clause
    for n in more:
        assert n not in clause.split("(fewer)")[0]
    # one padded packer that trains fewer: one verdict, said once
    alone = Comparison(measure(lengths, ["discard", "bestfit-pad"], SETTINGS, documents=True))
    t = {n: _trained(alone, n) for n in ("discard", "bestfit-pad")}
    assert t["bestfit-pad"] < t["discard"]
    said_alone = f"bestfit-pad pads or repeats in its rows and trains {t['bestfit-pad']:,} (fewer)"
    assert said_alone in alone.headline()


def test_padded_packers_within_the_range_are_counted_when_others_differ() -> None:
    from packing_theory.orchestration.compare_report import _padded_words

    trained = {"a": 5, "b": 10, "c": 20, "d": 11}  # the packers that fill their rows train 9–12
    assert _padded_words(trained, 9, 12) == ("of the packers that pad or repeat in their rows, a trains 5 "
                                             "(fewer), c trains 20 (more), 2 more train 10–11 (within "
                                             "that range)")
    assert _padded_words({"b": 10, "d": 11}, 9, 12) == ("b, d pad or repeat in their rows and train 10–11 "
                                                        "(within that range)")


def test_the_equal_group_holds_only_packers_that_fill_rows_with_new_tokens_and_reach_the_horizon(
    lengths: npt.NDArray[np.int64],
) -> None:
    """A packer that repeats tokens (seamless) trains fewer at the same placed tokens, and a packer that
    stops first trains what it reached: neither is "equal by construction" (both were, found by a review);
    the untrained share is the group's range, not its largest value said of each."""
    from packing_theory.engine.horizon import Budget

    names = ["discard", "trl-bfd", "seamless"]
    cmp = Comparison(measure(lengths, names, SETTINGS))
    eq = cmp.equal
    repeats = cmp.measurement.run("seamless").aggregates.mass.repeated_tokens
    assert repeats > 0 and "seamless" not in eq["packers"] and "seamless" in eq["padded"]
    low, high = percent(eq["untrained_share_min"]), percent(eq["untrained_share_max"])
    assert f"({low if low == high else f'{low}–{high}'} untrained: equal by construction" in cmp.headline()
    small = lengths[:10]  # fewer documents than B = 16: the streaming packer stops at row 0
    short = Comparison(measure(small, ["discard", "trl-bfd"], SETTINGS, horizon=Budget("rows", 3)))
    assert short.equal["short"] == ["discard"]
    assert short.measurement.run("discard").horizon.stopped_at_row == 0
    head = short.headline()
    assert "discard stops before the horizon and trains 0" in head
    assert "give --drain, or a smaller --min-buffer" in head
    assert "every packer that fills its rows and reaches the horizon trains" in head


def test_the_plots_draw_the_packers_in_the_ranking_s_order(lengths: npt.NDArray[np.int64]) -> None:
    """The plot of documents with no token trained listed packers by that count alone, so a tie broken by
    the next quantity came out in another order than the table's (found by a review)."""
    from packing_theory.orchestration.compare_report import ranked_runs

    names = ["discard", "continue", "trl-bfd", "olmo-truncate", "foundry-concat-wrap", "bestfit-pad"]
    cmp = Comparison(measure(lengths, names, SETTINGS))
    drawn = [r.packer for r in ranked_runs(cmp)]
    assert drawn[: len(cmp.ranking.order)] == list(cmp.ranking.order)
    assert sorted(drawn) == sorted(names)


def test_a_corpus_smaller_than_one_row_is_not_called_smaller_than_the_buffer() -> None:
    """Rows of 128 and 20 documents of 5 tokens at B = 16: the streaming packer selects 5 of them into the
    unfinished row 0, until its buffer falls below B. Stopping at row 0 was taken for "a corpus smaller
    than the buffer's B: give --drain" (found by a review); the audit's headline said "ran dry before the
    buffer held B"; both now say that only when no selection was made."""
    from packing_theory.engine.horizon import Budget
    from packing_theory.orchestration import audit_corpus
    from packing_theory.orchestration.audit_report import audit_headline

    tiny = np.full(20, 5, dtype=np.int64)
    short = Comparison(measure(tiny, ["discard", "trl-bfd"], SETTINGS, horizon=Budget("rows", 3)))
    run = short.measurement.run("discard")
    assert run.horizon.stopped_at_row == 0 and run.horizon.selected and run.aggregates.started_sources == 5
    assert "discard" in short.equal["short"] and short.equal["short_never_selected"] is False
    assert "give --drain" not in short.headline()
    dry = Comparison(measure(tiny[:10], ["discard", "trl-bfd"], SETTINGS, horizon=Budget("rows", 3)))
    assert dry.equal["short_never_selected"] is True and "give --drain" in dry.headline()
    res = audit_corpus(tiny, ["discard"], SETTINGS, permutations=0)
    line = audit_headline(res)
    assert line.startswith("discard stopped at row 0 because the stream ran dry: trained 0.0%"), line
    assert "before the buffer held" not in line
    dry = audit_headline(audit_corpus(tiny[:10], ["discard"], SETTINGS, permutations=0))
    assert dry.startswith("discard stopped at row 0 because the stream ran dry before the buffer held B = 16")
