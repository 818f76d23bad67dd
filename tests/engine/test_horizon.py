"""The common horizon: a budget in rows, targets or tokens, and the generic cut of any event stream."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import Packer, build_packer
from packing_theory.audit import Ledger, audit_events
from packing_theory.engine.events import Arrival, Horizon, Padding, Placement, Repeat
from packing_theory.engine.horizon import Budget, cut_at_horizon
from packing_theory.engine.policies import POLICIES
from packing_theory.errors import InputError
from packing_theory.peers import peer_policies

lengths_st = st.lists(st.integers(1, 30), min_size=1, max_size=40)


@given(lengths=lengths_st, capacity=st.integers(2, 10), min_buffer=st.integers(1, 5),
       refill=st.integers(1, 3), rows=st.integers(0, 15), passes=st.integers(1, 2), drain=st.booleans(),
       policy=st.sampled_from(POLICIES))
def test_cut_equals_the_native_row_budget_of_every_streaming_policy(
        lengths: list[int], capacity: int, min_buffer: int, refill: int, rows: int, passes: int, drain: bool,
        policy: str) -> None:
    """Cutting an unbudgeted stream at ``rows`` accounts exactly what the engine's own row budget does."""
    cfg = {"capacity": capacity, "min_buffer": min_buffer, "refill": refill, "policy": policy,
           "passes": passes, "exhausted": "drain" if drain else "stop"}
    native = audit_events(Packer(**cfg, rows=rows).events(lengths), capacity, min_buffer)
    cut = audit_events(cut_at_horizon(Packer(**cfg).events(lengths), Budget("rows", rows), capacity=capacity),
                       capacity, min_buffer)
    assert cut == native


def _rows_of(events: list[object], capacity: int) -> tuple[int, int]:
    """(complete rows, placed tokens in them) counted in stream order."""
    filled = rows = placed = 0
    for ev in events:
        if type(ev) in (Placement, Padding, Repeat):
            filled += ev.length  # type: ignore[attr-defined]
            placed += ev.length if type(ev) is Placement else 0  # type: ignore[attr-defined]
            if filled == capacity:
                rows, filled = rows + 1, 0
    return rows, placed


def _row_tokens(events: list[object], capacity: int) -> list[int]:
    """Tokens placed in each complete row, in stream order."""
    out: list[int] = []
    filled = placed = 0
    for ev in events:
        if type(ev) in (Placement, Padding, Repeat):
            filled += ev.length  # type: ignore[attr-defined]
            placed += ev.length if type(ev) is Placement else 0  # type: ignore[attr-defined]
            if filled == capacity:
                out.append(placed)
                filled = placed = 0
    return out


@pytest.mark.parametrize("name", peer_policies())
@pytest.mark.parametrize("unit", ["rows", "tokens"])
def test_every_peer_accepts_the_common_horizon(name: str, unit: str) -> None:
    """A peer cut at a budget: the identities hold, what it holds is buffered, rows stop at the budget."""
    lengths = [(7 * i) % 23 + 1 for i in range(60)]
    capacity = 32  # every document fits a row (no framework refuses the stream); a power of two (OLMo-core)
    packer = build_packer(name, capacity=capacity)
    full = list(packer.events(lengths))
    total_rows, total_placed = _rows_of(full, capacity)
    value = max(total_rows // 2, 1) if unit == "rows" else max(total_placed // 3, 1)
    budget = Budget(unit, value)  # type: ignore[arg-type]
    fresh = build_packer(name, capacity=capacity)
    cut = list(cut_at_horizon(fresh.events(lengths), budget, capacity=capacity))
    h = cut[-1]
    assert type(h) is Horizon
    ledger = Ledger(capacity, 4)
    for ev in cut:
        ledger.feed(ev)
        ledger._check()
    agg = ledger.result()
    assert agg.mass.identity_holds
    assert agg.rows * capacity + agg.partial_row_tokens == (agg.mass.emitted_tokens + agg.mass.padding_tokens
                                                             + agg.mass.repeated_tokens)
    rows, placed = _rows_of(cut, capacity)
    assert placed == agg.mass.emitted_tokens
    assert rows == h.rows
    if h.stop_reason == "rows":  # the budget is reached exactly at the last row, not one row later
        assert h.partial_row_tokens == 0
        if unit == "rows":
            assert rows == value
        else:
            per_row = _row_tokens(cut, capacity)
            assert sum(per_row) >= value > sum(per_row[:-1])
    arrived = sum(ev.length for ev in cut if type(ev) is Arrival)
    assert arrived <= sum(lengths)


def test_tokens_budget_of_a_streaming_packer_is_whole_rows() -> None:
    """Streaming rows are full, so ``tokens`` = T is ``ceil(T / R)`` rows, and the cut agrees."""
    lengths = [5, 9, 3, 12, 4, 7, 2, 8] * 5
    budget = Budget("tokens", 30)
    assert budget.streaming_rows(8) == 4
    native = audit_events(Packer(capacity=8, min_buffer=2, refill=2, rows=4).events(lengths), 8, 2)
    cut = audit_events(cut_at_horizon(Packer(capacity=8, min_buffer=2, refill=2).events(lengths), budget,
                                      capacity=8), 8, 2)
    assert cut == native and cut.rows == 4


def test_budget_refuses_bad_values() -> None:
    with pytest.raises(InputError, match="horizon unit must be one of rows, targets, tokens; got 'steps'"):
        Budget("steps", 3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="rows"):
        Budget("rows", -1)
    with pytest.raises(InputError, match="without a Horizon"):
        list(cut_at_horizon([Arrival(0, 0, 0, 3)], Budget("rows", 5), capacity=4))


def test_no_budget_passes_the_stream_through() -> None:
    events = list(Packer(capacity=8, min_buffer=2, refill=2).events([5, 9, 3]))
    assert list(cut_at_horizon(events, None, capacity=8)) == events
