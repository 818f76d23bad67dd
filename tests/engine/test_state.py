"""Exact resume: a replay stopped at a row boundary and resumed from its state yields the same events."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine import make_packer
from packing_theory.engine.events import Event, fill_length
from packing_theory.engine.policies import POLICIES
from packing_theory.engine.refill import CursorState, RefillCursor
from packing_theory.engine.state import EngineState
from packing_theory.invariant import strategies as pst
from packing_theory.testing import scaled_examples


def state_after_rows(packer: Any, lengths: Any, k: int) -> tuple[list[Event], EngineState | None, int | None]:
    """Run ``packer`` to the end, asking for its state once ``k`` rows are complete."""
    run = packer.run(lengths)
    R = packer.capacity
    filled = rows = 0
    events: list[Event] = []
    if k == 0:
        run.request_state()
    for ev in run:
        events.append(ev)
        filled += fill_length(ev)
        if filled == R:
            filled = 0
            rows += 1
            if rows == k:
                run.request_state()
    return events, run.state, run.captured_at


@settings(max_examples=scaled_examples(150), deadline=None)
# the second family drains to the end: many rows, so that most boundaries are interior ones
@given(case=st.one_of(pst.replay_cases(policies=POLICIES, max_docs=80),
                      pst.replay_cases(policies=POLICIES, max_docs=80, budgets=False, exhausted=("drain",))),
       data=st.data())
def test_resume_continues_exactly(case: tuple[list[int], pt.PackerConfig], data: st.DataObject) -> None:
    lengths, config = case
    for engine in ("fast", "reference"):
        packer = make_packer(engine, config)
        full = list(packer.events(lengths))
        rows = full[-1].rows  # type: ignore[union-attr]
        # mostly an interior boundary; the first (k = 0) and the last (k = rows) now and then
        k = data.draw(st.one_of(st.integers(min(1, rows), max(1, rows - 1)), st.sampled_from([0, rows]))
                      if rows >= 2 else st.integers(0, rows), label=f"{engine} stop row")
        events, state, at = state_after_rows(packer, lengths, k)
        assert events == full
        if state is None:  # the stream stopped mid-row before reaching a boundary after row k
            assert full[-1].stop_reason != "rows" or rows < k  # type: ignore[union-attr]
            continue
        assert state.row == k and at is not None
        again = EngineState.from_json(state.to_json())
        assert again == state
        for resumer in ("fast", "reference"):  # the state is engine-independent
            resumed = list(make_packer(resumer, config).events(lengths, resume=again))
            assert resumed == full[at:], (engine, resumer, k)


def test_resume_checks_the_configuration() -> None:
    lengths = [5, 3, 9, 4, 6, 2, 7, 8]
    _, state, _ = state_after_rows(pt.Packer(capacity=8, min_buffer=2, refill=1), lengths, 1)
    assert state is not None
    with pytest.raises(ValueError, match="min_buffer=2"):
        list(pt.Packer(capacity=8, min_buffer=3, refill=1).events(lengths, resume=state))
    # the budget may differ: a resumed run can go further or stop earlier
    out = list(pt.Packer(capacity=8, min_buffer=2, refill=1, rows=2).events(lengths, resume=state))
    assert out[-1].rows == 2  # type: ignore[union-attr]


def test_state_json_is_validated() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        EngineState.from_json("{")
    with pytest.raises(ValueError, match="not a packing-theory/engine-state"):
        EngineState.from_json('{"format": "x"}')
    _, state, _ = state_after_rows(pt.Packer(capacity=8, min_buffer=2, refill=1), [5, 3, 9, 4], 1)
    assert state is not None
    doc = state.to_json().replace('"row":1', '"row":-1')
    with pytest.raises(ValueError, match="row must be >= 0"):
        EngineState.from_json(doc)
    assert EngineState.from_bytes(state.to_bytes()) == state


def test_random_span_rng_state_travels() -> None:
    lengths = [40, 3, 50, 60, 2, 45, 70, 5] * 6
    cfg = pt.PackerConfig(capacity=8, min_buffer=3, refill=2, policy="random-span", seed=7)
    full = list(pt.Packer(cfg).events(lengths))
    _, state, at = state_after_rows(pt.Packer(cfg), lengths, 9)
    assert state is not None and state.rng_state is not None
    assert list(pt.Packer(cfg).events(lengths, resume=state)) == full[at:]
    # without the RNG state the draws differ: the state is what makes the resume exact
    blind = EngineState(state.config, state.row, state.next_occurrence, state.cursor, state.buffer, None,
                        state.announced)
    assert list(pt.Packer(cfg).events(lengths, resume=blind)) != full[at:]


def test_streamed_iterator_resumes_from_its_position() -> None:
    lengths = [5, 3, 9, 4, 6, 2, 7, 8, 3, 3, 6]
    cfg = pt.PackerConfig(capacity=8, min_buffer=2, refill=2)
    full = list(pt.Packer(cfg).events(iter(lengths)))
    _, state, at = state_after_rows(pt.Packer(cfg), iter(lengths), 2)
    assert state is not None
    rest = iter(lengths[state.cursor.position:])
    assert list(pt.Packer(cfg).events(rest, resume=state)) == full[at:]


def test_cursor_passes_and_batches() -> None:
    cur = RefillCursor([5, 3, 9], pt.PackerConfig(refill=2, passes=2))
    batches = list(iter(cur.next_batch, None))
    assert [[s for s, _, _ in b] for b in batches] == [[0, 1], [2], [0, 1], [2]]
    assert [b[0][1] for b in batches] == [0, 0, 1, 1]
    assert cur.state() == CursorState(2, 0, 0, True)
    with pytest.raises(ValueError, match="one-shot iterator"):
        RefillCursor(iter([1, 2]), pt.PackerConfig(passes=2))
    with pytest.raises(TypeError, match="got set: a mapping or set has no arrival order"):
        RefillCursor({3, 4}, pt.PackerConfig())
    with pytest.raises(ValueError, match="past the 3 documents"):
        RefillCursor([5, 3, 9], pt.PackerConfig(), CursorState(0, 4, 0, False))


@settings(max_examples=scaled_examples(60), deadline=None)
@given(case=pst.replay_cases(policies=POLICIES, max_docs=40))
def test_token_rows_over_several_passes(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    docs = [[1000 + s] + [s * 100 + j for j in range(1, n)] for s, n in enumerate(lengths)]
    packer = pt.Packer(config)
    rows = list(packer.token_rows(docs))
    expected = []
    for placements in packer.placement_rows(lengths):
        row: list[int] = []
        for p in placements:
            if isinstance(p, pt.Padding):  # bestfit-pad: the row's end is padding (pad id 0)
                row += [0] * p.length
                continue
            doc = docs[p.source]
            if p.bos_inserted:
                row += [doc[0], *doc[p.start : p.start + p.length - 1]]
            else:
                row += doc[p.start : p.start + p.length]
        expected.append(row)
    assert rows == expected
