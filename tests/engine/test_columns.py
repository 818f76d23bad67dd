"""ColumnBuilder: events appended in columns make the batches ``EventBatch.from_events`` makes of them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine.batches import EventBatch, batched
from packing_theory.engine.columns import ColumnBuilder
from packing_theory.engine.events import Arrival, Filtered, Horizon, Placement, Repeat
from packing_theory.engine.policies import POLICIES
from packing_theory.errors import InputError, InputTypeError


@st.composite
def streams(draw: st.DrawFn) -> list[Any]:
    """The whole event stream of a small replay (every event type the streaming engines emit)."""
    R = draw(st.integers(2, 9))
    lengths = draw(st.lists(st.integers(1, 3 * R), min_size=1, max_size=40))
    policy = draw(st.sampled_from(POLICIES))
    exhausted = draw(st.sampled_from(["stop", "drain"]))
    B, refill = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    packer = pt.ReferencePacker(capacity=R, min_buffer=B, refill=refill, policy=policy, exhausted=exhausted)
    return list(packer.events(lengths))


@given(streams(), st.integers(1, 30), st.data())
def test_the_builder_cuts_what_batched_cuts(events: list[Any], size: int, data: st.DataObject) -> None:
    """Added one by one (asking for the full batches at random moments), then finished: the batches of
    ``batched``."""
    cols = ColumnBuilder(size)
    got: list[EventBatch] = []
    *body, horizon = events
    for ev in body:
        cols.add(ev)
        cols._check()
        if data.draw(st.booleans()):
            got += cols.ready()
            cols._check()
            assert len(cols) < size
    got += cols.finish(horizon)
    assert len(cols) == 0
    want = list(batched(events, size))
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a._check()
        assert a == b


def test_arrivals_of_a_refill_batch_are_the_arrival_events() -> None:
    one, many = ColumnBuilder(100), ColumnBuilder(100)
    for k, n in enumerate([5, 9, 1]):
        one.add(Arrival(7 + k, 3 + k, 2, n))
    many.arrivals(7, 3, 2, [5, 9, 1])
    many._check()
    assert next(one.finish(None)) == next(many.finish(None))


def test_extend_is_add_in_order() -> None:
    events = list(pt.Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4, 12, 2]))[:-1]
    a, b = ColumnBuilder(4), ColumnBuilder(4)
    for ev in events:
        a.add(ev)
    b.extend(events)
    assert list(a.finish(None)) == list(b.finish(None))


def test_nothing_pending_makes_no_batch() -> None:
    cols = ColumnBuilder(3)
    assert list(cols.ready()) == [] and list(cols.finish(None)) == []
    only = list(cols.finish(Horizon(0, 0, "exhausted", ())))
    assert [len(b) for b in only] == [1] and only[0].horizon == Horizon(0, 0, "exhausted", ())


@pytest.mark.parametrize("event", [Filtered(0, 0, 3, "too long"), Repeat(0, 1, 0, 0, 0, 1),
                                   Horizon(0, 0, "exhausted", ())])
def test_an_event_the_streaming_engines_never_emit_is_refused(event: Any) -> None:
    cols = ColumnBuilder(4)
    with pytest.raises(InputTypeError, match=f"streaming engines' events, got {type(event).__name__}"):
        cols.add(event)
    with pytest.raises(InputTypeError, match=f"got {type(event).__name__}"):
        cols.extend([Placement(0, 0, 0, 0, 0, 1, False, False), event])


@pytest.mark.parametrize(("size", "error", "message"), [
    (0, InputError, "size must be a positive int, got 0"),
    (-2, InputError, "size must be a positive int, got -2"),
    (True, InputTypeError, "size must be a positive int, got bool True"),
    (2.0, InputTypeError, "size must be a positive int, got float 2.0"),
])
def test_a_bad_size_is_refused_naming_it(size: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        ColumnBuilder(size)
    with pytest.raises(error, match=message):
        pt.Packer(capacity=8, min_buffer=2).batches([3, 4], size=size)


def test_check_detects_fields_without_their_event() -> None:
    cols = ColumnBuilder(4)
    cols.add(Arrival(0, 0, 0, 5))
    cols.flat[0] += np.int64(1).tobytes()
    with pytest.raises(AssertionError, match="arrival"):
        cols._check()
