"""The ``bestfit-pad`` starvation bound (``proofs/coq/BestFitPad.v``) against the replay."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine.events import Padding, Placement
from packing_theory.invariant.starvation import first_row_bounds, starvation_bound


@st.composite
def pad_cases(draw: st.DrawFn) -> tuple[list[int], dict[str, Any]]:
    R = draw(st.integers(2, 12))
    length = st.one_of(st.integers(1, R), st.integers(R + 1, 3 * R), st.sampled_from([1, R, R + 1]))
    lengths = draw(st.lists(length, min_size=1, max_size=80))
    refill = draw(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return lengths, {"capacity": R, "min_buffer": draw(st.integers(1, 6)), "refill": refill,
                     "passes": draw(st.integers(1, 3)), "policy": "bestfit-pad"}


@given(pad_cases())
def test_the_replay_starves_within_the_proved_bounds(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kw = case
    bound = starvation_bound(lengths, **kw)
    rep = pt.replay(lengths, **kw)
    h = rep.horizon
    note(f"bound={bound} horizon={h}")
    if bound is None:  # fewer than B long occurrences: the stream runs dry first
        assert h.stop_reason == "exhausted"
        return
    assert h.stop_reason == "starved"
    assert bound.contains(h.rows)
    placed = [e for e in rep.events if type(e) is Placement]
    assert len(rep.arrivals) == bound.arrivals
    assert len(placed) == bound.placed_documents and not any(p.crop for p in placed)
    assert sum(p.length for p in placed) == bound.placed_tokens
    assert len(h.buffered) == bound.long_arrivals >= kw["min_buffer"]
    assert all(s.length > kw["capacity"] for s in h.buffered)
    # every row before the starved one holds a placement
    assert {p.row for p in placed} == set(range(h.rows))
    # the reference engine agrees
    assert list(pt.replay(lengths, engine="reference", **kw).events) == list(rep.events)


def test_both_bounds_are_attained() -> None:
    # every document fills its row exactly: s = M / R (the lower bound)
    b = starvation_bound([4, 4, 4, 9, 9], capacity=4, min_buffer=2, refill=1)
    rep = pt.replay([4, 4, 4, 9, 9], capacity=4, min_buffer=2, refill=1, policy="bestfit-pad")
    assert b is not None and (b.first_row_low, rep.horizon.rows) == (3, 3)
    # documents of 6 in rows of 10: one per row, 4 positions padded: s = P (the upper bound)
    lengths = [6, 6, 6, 6, 6, 11, 11]
    b = starvation_bound(lengths, capacity=10, min_buffer=2, refill=1)
    rep = pt.replay(lengths, capacity=10, min_buffer=2, refill=1, policy="bestfit-pad")
    assert b is not None and (b.first_row_high, rep.horizon.rows) == (5, 5)
    assert [e for e in rep.events if type(e) is Padding] == [Padding(r, 6, 4) for r in range(5)]


def test_nanochat_buffer_clog() -> None:
    """nanochat's SFT loader: B = 100 conversations, one per refill, rows of max_seq_len + 1 = 1025;
    every fifth conversation longer than a row clogs the buffer at the 100th of them (arrival 496)."""
    lengths = [300 + (i * 37) % 600 if i % 5 else 1500 + i for i in range(2000)]
    kw = {"capacity": 1025, "min_buffer": 100, "refill": 1, "policy": "bestfit-pad"}
    bound = starvation_bound(lengths, **kw)
    rep = pt.replay(lengths, **kw)
    assert bound is not None and bound.arrivals == 496 and bound.long_arrivals == 100
    assert rep.horizon.stop_reason == "starved" and bound.contains(rep.horizon.rows)


def test_errors_and_formula() -> None:
    assert first_row_bounds(1, 1, 2) == (1, 1)  # the Coq example bfp_starvation_example
    with pytest.raises(pt.InputError, match="policy 'discard' crops when nothing fits"):
        starvation_bound([5, 9], capacity=4, min_buffer=1, policy="discard")
    with pytest.raises(pt.InputError, match="placed_tokens must be >= 0, got -1"):
        first_row_bounds(-1, 0, 4)
    with pytest.raises(pt.InputError, match="row must be >= 0, got -2"):
        starvation_bound([9], capacity=4, min_buffer=1).contains(-2)  # type: ignore[union-attr]
