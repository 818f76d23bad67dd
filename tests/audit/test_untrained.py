"""Never trained as a number: the parts reconcile exactly with the tokens offered, for every packer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import Packer, build_packer, feed_all
from packing_theory.audit import Ledger
from packing_theory.audit.documents import UNTRAINED_FATES, DocumentRows, document_table
from packing_theory.audit.untrained import Part, horizon_statement, never_trained
from packing_theory.engine.horizon import Budget, cut_at_horizon
from packing_theory.engine.policies import POLICIES
from packing_theory.errors import InputError
from packing_theory.peers import peer_policies


def _account(events: object, lengths: list[int], capacity: int, min_buffer: int, passes: int | None):
    ledger, rows = Ledger(capacity, min_buffer), DocumentRows(capacity)
    feed_all(events, ledger, rows)  # type: ignore[arg-type]
    facts = rows.result()
    return ledger, document_table(ledger, facts, lengths, passes=passes), never_trained(
        ledger, lengths, passes=passes, rows=facts)


def _reconciles(table, nt, agg) -> None:  # type: ignore[no-untyped-def]
    table._check()
    nt._check()
    m = agg.mass
    assert nt.trained_tokens + nt.never_started.tokens + nt.dropped.tokens + nt.still_buffered.tokens \
        + nt.partial_row.tokens + nt.never_reached.tokens == nt.offered_tokens
    mass = nt.mass()
    assert mass["emitted"] + mass["dropped"] + mass["buffered"] + mass["never_reached"] == mass["offered"]
    # the per-document columns sum exactly to the report's totals
    assert table.total("emitted") == nt.trained_tokens
    assert table.total("partial_row") == nt.partial_row.tokens
    assert nt.trained_tokens + nt.partial_row.tokens == m.emitted_tokens - m.emitted_added_bos
    assert table.total("buffered") == nt.buffered_tokens == m.buffered_tokens - m.buffered_added_bos
    assert table.total("discarded") == nt.discarded_tokens == m.discarded_tokens
    assert table.total("filtered") == nt.filtered_tokens == m.filtered_tokens
    assert table.total("never_reached") == nt.never_reached.tokens
    assert table.total("length") == nt.offered_tokens
    fate = table.column("fate")
    assert int((fate == "never started").sum()) == nt.never_started.documents
    assert int((fate == "never reached").sum()) == nt.never_reached.documents
    assert int(table.column("length")[fate == "never started"].sum()) == nt.never_started.tokens
    assert int(table.column("protected").sum()) == agg.protected.members
    # one definition of "no token trained": the fates that start with "never", the count compare ranks by
    none = np.isin(fate, UNTRAINED_FATES)
    assert [f for f in UNTRAINED_FATES if not f.startswith("never")] == []
    assert int(none.sum()) == nt.no_token_trained.documents
    assert int(table.column("length")[none].sum()) == nt.no_token_trained.tokens
    assert not (table.column("emitted")[none]).any()
    if nt.never_started_distinct is not None:  # several passes: distinct documents never started
        started = set(table.column("document")[table.column("started")].tolist())
        never = set(table.column("document")[fate == "never started"].tolist())
        assert nt.never_started_distinct == len(never - started)


@given(lengths=st.lists(st.integers(1, 30), min_size=1, max_size=40), capacity=st.integers(2, 10),
       min_buffer=st.integers(1, 5), rows=st.none() | st.integers(0, 15), passes=st.integers(1, 2),
       drain=st.booleans(), policy=st.sampled_from(POLICIES))
def test_parts_reconcile_for_every_streaming_policy(lengths: list[int], capacity: int, min_buffer: int,
                                                    rows: int | None, passes: int, drain: bool,
                                                    policy: str) -> None:
    packer = Packer(capacity=capacity, min_buffer=min_buffer, refill=2, policy=policy, passes=passes,
                    rows=rows, exhausted="drain" if drain else "stop")
    ledger, table, nt = _account(packer.stream(lengths), lengths, capacity, min_buffer, passes)
    _reconciles(table, nt, ledger.result())
    assert nt.offered_tokens == sum(lengths) * passes


@given(lengths=st.lists(st.integers(1, 30), min_size=1, max_size=60), tokens=st.none() | st.integers(0, 400),
       name=st.sampled_from(sorted(peer_policies())))
def test_parts_reconcile_for_every_peer_at_a_token_horizon(lengths: list[int], tokens: int | None,
                                                           name: str) -> None:
    capacity = 32
    budget = None if tokens is None else Budget("tokens", tokens)
    try:
        events = list(cut_at_horizon(build_packer(name, capacity=capacity).events(lengths), budget,
                                     capacity=capacity))
    except InputError:
        return  # the framework's own rule refuses this stream (tests/test_peers.py covers which)
    ledger, table, nt = _account(events, lengths, capacity, 4, None)
    _reconciles(table, nt, ledger.result())


def test_a_stream_that_runs_dry_leaves_the_largest_never_started() -> None:
    """discard at B = 4: the three largest long documents are protected and never train."""
    lengths = [3, 40, 5, 50, 2, 60, 4, 70, 6, 3, 2, 5] * 2
    packer = Packer(capacity=8, min_buffer=4, refill=2)
    ledger, _, nt = _account(packer.stream(lengths), lengths, 8, 4, 1)
    agg = ledger.result()
    h = horizon_statement(agg, None, streaming=True)
    assert h.reason == "stream exhausted" and h.stopped_at_row == agg.rows
    assert nt.never_started.documents >= agg.protected.members == 3
    assert nt.largest
    assert nt.never_reached.documents == 0


def test_a_budget_leaves_documents_never_reached() -> None:
    lengths = list(range(1, 200))
    packer = Packer(capacity=16, min_buffer=2, refill=2, rows=10)
    ledger, table, nt = _account(packer.stream(lengths), lengths, 16, 2, 1)
    h = horizon_statement(ledger.result(), Budget("rows", 10), streaming=True)
    assert h.reason == "budget reached"
    assert h.sentence() == "stopped at row 10: the horizon of 10 rows was reached"
    assert nt.never_reached.documents > 150
    assert table.row(198)["fate"] == "never reached"


def test_never_trained_refuses_foreign_input() -> None:
    ledger = Ledger(8, 2)
    with pytest.raises(InputError, match="whole stream"):
        never_trained(ledger, [3])
    feed_all(Packer(capacity=8, min_buffer=2, refill=2).stream([3, 4, 5]), ledger)
    with pytest.raises(InputError, match="not a document of the 2 offered"):
        never_trained(ledger, [3, 4])
    with pytest.raises(InputError, match="needs rows"):  # this run ends with a partial row of 5
        never_trained(ledger, [3, 4, 5])


def test_peer_horizons_are_natural_ends_or_budgets() -> None:
    lengths = [5, 9, 3, 12, 4]
    agg = feed_all(build_packer("trl-bfd", capacity=16).events(lengths), Ledger(16, 2))[0]
    assert horizon_statement(agg, None, streaming=False).reason == "natural end"


def test_the_partial_row_of_a_stream_that_runs_dry_is_never_trained() -> None:
    """continue at exhaustion ends with an incomplete row: its tokens are not trained, in every view."""
    lengths = [5, 3, 9, 4, 6, 2, 7, 3]
    packer = Packer(capacity=8, min_buffer=2, refill=2, policy="continue")
    ledger, table, nt = _account(packer.stream(lengths), lengths, 8, 2, 1)
    agg = ledger.result()
    assert agg.stop_reason == "exhausted" and agg.partial_row_tokens == 6
    assert nt.trained_tokens == agg.rows * 8  # full rows only, no BOS inserted here
    assert nt.partial_row == Part(1, 6)
    assert nt.tokens == sum(lengths) - agg.rows * 8
    _reconciles(table, nt, agg)
    doc = table.row(6)  # its last 6 tokens sit in the partial row
    assert doc["partial_row"] == 6 and doc["emitted"] == 1
    assert doc["fate"] == "partly trained"
    assert nt.partial_row_only_documents == 0  # document 6 has a token in a complete row


def test_a_document_placed_only_in_the_partial_row_has_no_token_trained() -> None:
    lengths = [3, 5, 3, 5, 3, 5, 3, 5]  # continue at R = 8, B = 2: the last row holds a document alone
    packer = Packer(capacity=8, min_buffer=2, refill=2, policy="continue")
    ledger, table, nt = _account(packer.stream(lengths), lengths, 8, 2, 1)
    agg = ledger.result()
    _reconciles(table, nt, agg)
    only = (table.column("partial_row") > 0) & (table.column("emitted") == 0)
    assert agg.partial_row_tokens > 0 and only.any()
    assert nt.partial_row_only_documents == int(only.sum())
    assert nt.untrained_documents == nt.never_started.documents  # documents no row holds a token of
    assert all(f == "never trained (unfinished row)" for f in table.column("fate")[only])
    assert nt.partial_row_only_tokens == int(table.column("length")[only].sum())
    assert nt.no_token_trained.documents == nt.never_started.documents + int(only.sum())
    listed, count = table.largest_untrained(10, ("never trained (unfinished row)",))
    assert count == int(only.sum()) and {r["fate"] for r in listed} == {"never trained (unfinished row)"}
    assert "placed only there has no token trained" in nt.parts_sentence()


@given(lengths=st.lists(st.integers(1, 30), min_size=1, max_size=40), rows=st.none() | st.integers(0, 15),
       passes=st.integers(1, 2), block=st.integers(1, 5), policy=st.sampled_from(POLICIES))
def test_never_trained_in_blocks_equals_one_block(lengths: list[int], rows: int | None, passes: int,
                                                  block: int, policy: str) -> None:
    import packing_theory.audit.untrained as untrained

    packer = Packer(capacity=8, min_buffer=3, refill=2, policy=policy, passes=passes, rows=rows)
    ledger, facts = Ledger(8, 3), DocumentRows(8, per_occurrence=False)
    feed_all(packer.stream(lengths), ledger, facts)
    whole = never_trained(ledger, lengths, passes=passes, rows=facts.result())
    saved = untrained._BLOCK
    untrained._BLOCK = block
    try:
        assert never_trained(ledger, lengths, passes=passes, rows=facts.result()) == whole
    finally:
        untrained._BLOCK = saved


def test_never_trained_when_nothing_arrived() -> None:
    from packing_theory.engine.events import Horizon

    ledger = Ledger(8, 2)
    feed_all([Horizon(0, 0, "rows", ())], ledger)
    nt = never_trained(ledger, [3, 4])
    assert (nt.never_reached, nt.trained_tokens, nt.never_started) == (Part(2, 7), 0, Part(0, 0))


@given(st.lists(st.lists(st.integers(0, 49), max_size=12), max_size=8), st.booleans())
def test_reached_keys_equal_a_boolean_array(chunks: list[list[int]], in_order: bool) -> None:
    """A run from 0 is kept as a count; anything else as bits; both answer like a boolean array."""
    from packing_theory.audit.untrained import Reached

    r, model, nxt = Reached(50), np.zeros(50, np.bool_), 0
    for chunk in chunks:
        keys = np.arange(nxt, min(50, nxt + len(chunk)), dtype=np.int64) if in_order else \
            np.asarray(sorted(set(chunk)), np.int64)
        nxt += keys.size
        r.add(keys)
        model[keys] = True
        r._check()
        assert np.array_equal(r.mask(0, 50), model) and np.array_equal(r.mask(7, 19), model[7:19])
    if in_order:
        assert r.prefix == int(model.sum())


def test_a_corpus_smaller_than_one_row_stops_at_row_0_after_its_selections() -> None:
    """4 documents of 301 tokens at B = 2 in rows of 2,049: every document was buffered and three placed
    in the unfinished row 0. The stop said "ran dry before the buffer held B = 2 documents", because it
    took stopping at row 0 for "no selection was ever made" (found by a review); fewer documents than B
    is the case that sentence is for."""
    for lengths, selected in (([301] * 4, True), ([301], False), ([5000, 301, 301], True)):
        packer = Packer(capacity=2049, min_buffer=2, refill=1)
        (agg,) = feed_all(packer.stream(lengths), Ledger.for_packer(packer))
        h = horizon_statement(agg, None, streaming=True)
        assert (h.reason, h.stopped_at_row) == ("stream exhausted", 0), lengths
        assert h.selected is selected and h.never_selected is not selected, lengths
        assert ("before the buffer held B = 2 documents" in h.sentence()) is not selected, h.sentence()
    assert "a partial row of 903 tokens is not trained" in horizon_statement(
        feed_all(Packer(capacity=2049, min_buffer=2, refill=1).stream([301] * 4),
                 Ledger(2049, 2))[0], None, streaming=True).sentence()
