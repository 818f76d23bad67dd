"""The event types offline packers need: Filtered, Padding, Repeat.

A hand-written stream of a toy offline packer (capacity 5) is fed to every
consumer; the expected numbers are worked out by hand in the comments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import InputError, Ledger, feed_all
from packing_theory.engine import SummaryAccumulator
from packing_theory.engine.events import (
    Arrival,
    BufferedSpan,
    BufferedSpans,
    Discard,
    Event,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
    buffered_length,
    fill_length,
    span_columns,
)
from packing_theory.engine.rows import group_rows, token_rows
from packing_theory.testing import scaled_examples

R = 5


def toy_stream() -> list[Event]:
    """Documents of lengths 3, 0, 7, 2 (occurrences 0..3).

    * occurrence 1 is empty and filtered;
    * row 0: occurrence 0 whole (3 tokens) + 2 padding;
    * row 1: occurrence 2 tokens [0, 5) (a truncation: [5, 7) discarded);
    * row 2: a repeat of occurrence 2's token 4 at offset 0, then occurrence 3
      whole (2 tokens), then 2 padding.
    """
    return [
        Arrival(0, 0, 0, 3), Arrival(1, 1, 0, 0), Arrival(2, 2, 0, 7), Arrival(3, 3, 0, 2),
        Filtered(1, 1, 0, "empty"),
        Placement(0, 0, 0, 0, 0, 3, False, False), Padding(0, 3, 2),
        Placement(1, 0, 2, 2, 0, 5, False, True), Discard(2, 2, 5, 2),
        Repeat(2, 0, 2, 2, 4, 1), Placement(2, 1, 3, 3, 0, 2, False, False), Padding(2, 3, 2),
        Horizon(3, 0, "exhausted", ()),
    ]


def test_summary_counts_padding_repeats_and_filtered() -> None:
    acc = SummaryAccumulator(R)
    for ev in toy_stream():
        acc.feed(ev)
        acc._check()
    s = acc.result()
    # emitted 3 + 5 + 2 = 10; padding 2 + 2 = 4; repeated 1; rows 3 * 5 = 15 = 10 + 4 + 1
    assert (s.emitted_tokens, s.padding_tokens, s.repeated_tokens) == (10, 4, 1)
    assert (s.discarded_tokens, s.filtered_sources, s.filtered_tokens) == (2, 1, 0)
    assert s.consumed_tokens == 12 and s.identity_holds() and s.row_identity_holds(R)
    assert (s.sources_started, s.sources_never_started) == (3, 1)
    assert s.to_dict()["sources_never_started"] == 1


def test_summary_identity_counts_filtered_mass() -> None:
    events: list[Event] = [Arrival(0, 0, 0, 9), Filtered(0, 0, 9, "over-capacity"),
                           Horizon(0, 0, "exhausted", ())]
    acc = SummaryAccumulator(R)
    for ev in events:
        acc.feed(ev)
    s = acc.result()
    assert (s.filtered_tokens, s.emitted_tokens, s.identity_holds()) == (9, 0, True)
    # without the Filtered event the identity is broken: 9 arrived tokens are unaccounted
    acc2 = SummaryAccumulator(R)
    for ev in (events[0], events[2]):
        acc2.feed(ev)
    assert not acc2.result().identity_holds()


def test_ledger_accounts_the_peer_events() -> None:
    led = Ledger(capacity=R, min_buffer=1)
    for ev in toy_stream():
        led.feed(ev)
        led._flush()
        led._check()
    agg = led.result()
    m = agg.mass
    assert (m.emitted_tokens, m.padding_tokens, m.repeated_tokens, m.filtered_tokens) == (10, 4, 1, 0)
    assert m.identity_holds and agg.conservation_violations == 0
    assert (agg.filtered_sources, agg.started_sources, agg.never_started_sources) == (1, 3, 1)
    # the empty document is neither fully emitted nor covered
    assert agg.fully_emitted_sources == 2  # occurrences 0 and 3
    arrays = led.arrays()
    assert arrays["filtered"].tolist() == [0, 0, 0, 0]
    assert arrays["emitted"].tolist() == [3, 0, 5, 2]


def test_ledger_filtered_over_capacity_document() -> None:
    led = Ledger(capacity=R, min_buffer=1, detail=True, boundaries=(R,))  # strata 1–5 and >5
    feed_all([Arrival(0, 0, 0, 9), Filtered(0, 0, 9, "over-capacity"), Arrival(1, 1, 0, 5),
                 Placement(0, 0, 1, 1, 0, 5, False, False), Horizon(1, 0, "exhausted", ())], led)
    agg = led.result()
    assert agg.mass.filtered_tokens == 9 and agg.mass.identity_holds
    long_stratum = [s for s in agg.strata if s.filtered_sources]
    assert len(long_stratum) == 1 and long_stratum[0].filtered_tokens == 9
    assert long_stratum[0].arrived_tokens == 9 and long_stratum[0].never_started_sources == 1
    assert led.record(0).filtered == 9 and not led.record(0).started


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([Filtered(0, 0, 3, "x")], "before its Arrival"),
        ([Arrival(0, 0, 0, 3), Filtered(0, 0, 2, "x")], "differs from its arrival length"),
        ([Arrival(0, 0, 0, 3), Filtered(0, 0, 3, "x"), Placement(0, 0, 0, 0, 0, 3, False, False)],
         "after it was filtered"),
        ([Arrival(0, 0, 0, 3), Filtered(0, 0, 3, "x"), Filtered(0, 0, 3, "x")], "filtered after"),
        ([Padding(0, 0, -1)], "negative Padding"),
        ([Repeat(0, 0, 0, 0, 0, 0)], "Repeat length"),
    ],
)
def test_ledger_rejects_inconsistent_peer_events(events: list[Event], message: str) -> None:
    led = Ledger(capacity=R, min_buffer=1)
    with pytest.raises(ValueError, match=message):
        for ev in events:
            led.feed(ev)
        feed_all([Horizon(1, 0, "rows", ())], led)


def test_group_rows_uses_every_filling_event() -> None:
    rows = list(group_rows(toy_stream(), R))
    assert [sum(fill_length(e) for e in row) for row in rows] == [R, R, R]
    assert [type(e).__name__ for e in rows[2]] == ["Repeat", "Placement", "Padding"]


class _Toy:
    capacity = R
    repeats_tokens = True

    def events(self, lengths: Any) -> Iterator[Event]:
        assert list(lengths) == [3, 0, 7, 2]
        yield from toy_stream()


def test_token_rows_fill_padding_and_repeats() -> None:
    docs = [[100, 1, 2], [], [200, 11, 12, 13, 14, 15, 16], [300, 21]]
    rows = list(token_rows(_Toy(), docs, pad_id=-1))
    assert rows == [[100, 1, 2, -1, -1], [200, 11, 12, 13, 14], [14, 300, 21, -1, -1]]


# --------------------------------------------------------------------------- buffered spans as columns


@settings(max_examples=scaled_examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 50), st.integers(1, 50),
                          st.booleans()), max_size=12))
def test_buffered_spans_are_the_tuple_of_their_spans(rows: list[tuple[int, int, int, int, bool]]) -> None:
    spans = tuple(BufferedSpan(*r) for r in rows)
    cols = BufferedSpans.of(spans)
    assert cols == spans and spans == cols and list(cols) == list(spans) and len(cols) == len(spans)
    assert hash(cols) == hash(spans)
    assert cols.total_length() == buffered_length(spans) == sum(r[3] for r in rows)
    assert Horizon(1, 0, "rows", cols) == Horizon(1, 0, "rows", spans)
    assert [cols[i] for i in range(len(cols))] == list(spans) and cols[1:] == spans[1:]
    assert [c.tolist() for c in span_columns(spans)] == [c.tolist() for c in cols.columns()]
    if spans:
        changed = (*spans[:-1], spans[-1]._replace(length=spans[-1].length + 1))
        assert cols != changed and cols != BufferedSpans.of(changed) and cols != spans[:-1]


def test_buffered_spans_refuse_ragged_columns_and_index_past_the_end() -> None:
    with pytest.raises(InputError, match="BufferedSpans columns must be 1-D of one length"):
        BufferedSpans([1, 2], [1], [0, 0], [1, 1], [False, False])
    with pytest.raises(IndexError):
        BufferedSpans([1], [1], [0], [2], [False])[1]
    assert BufferedSpans.of(()) == () and repr(BufferedSpans.of(())) == "BufferedSpans(0 spans, 0 tokens)"
    mine = np.array([1, 2])
    spans = BufferedSpans(mine, mine, [0, 0], [1, 1], [False, False])
    with pytest.raises(ValueError, match="read-only"):
        spans.columns()[0][0] = 9
    mine[0] = 5  # the caller's array is not frozen


def test_buffered_spans_keep_int32_columns_and_widen_any_other() -> None:
    top = int(np.iinfo(np.int32).max)
    narrow = np.array([top, 1], np.int32)
    spans = BufferedSpans(narrow, narrow, np.array([0, 0], np.int16), [top, 2], np.array([0, 1], np.uint8))
    occ, src, start, length, bos = spans.columns()
    names = [c.dtype.name for c in (occ, src, start, length, bos)]
    assert names == ["int32", "int32", "int64", "int64", "bool"]
    assert np.shares_memory(occ, narrow) and not occ.flags.writeable  # a read-only view, not a copy
    assert spans == (BufferedSpan(top, top, 0, top, False), BufferedSpan(1, 1, 0, 2, True))
    assert spans.total_length() == top + 2 and spans[0] == BufferedSpan(top, top, 0, top, False)
    assert BufferedSpans([], [], [], [], []).columns()[0].dtype == np.int64
