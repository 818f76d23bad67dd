"""Columnar batches: the round trip to single events, and every consumer equal on both forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine import summarize
from packing_theory.engine.batches import (
    EventBatch,
    LengthChunks,
    batched,
    iter_batches,
    unbatched,
)
from packing_theory.engine.rows import group_rows
from packing_theory.engine.summary import SummaryAccumulator
from packing_theory.testing import scaled_examples
from tests.engine.test_engines import packer_cases


def _peer_events() -> list[pt.Event]:
    """A hand-made offline-packer stream with Filtered, Padding and Repeat events."""
    return [
        pt.Arrival(0, 0, 0, 3), pt.Arrival(1, 1, 0, 9), pt.Filtered(1, 1, 9, "over-capacity"),
        pt.Arrival(2, 2, 0, 0), pt.Filtered(2, 2, 0, "empty"), pt.Arrival(3, 3, 0, 4),
        pt.Placement(0, 0, 0, 0, 0, 3, False, False), pt.Padding(0, 3, 3),
        pt.Placement(1, 0, 3, 3, 0, 4, False, False), pt.Repeat(1, 4, 3, 3, 3, 1), pt.Padding(1, 5, 1),
        pt.Horizon(2, 0, "drained", ()),
    ]


@given(packer_cases(), st.integers(1, 40))
def test_round_trip_every_policy(case: tuple[list[int], dict[str, Any]], size: int) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events
    batches = list(batched(events, size))
    for b in batches:
        b._check()
        assert len(b) <= size
    assert [len(b) for b in batches[:-1]] == [size] * (len(batches) - 1)
    assert list(unbatched(batches)) == events
    whole = EventBatch.from_events(events)
    assert list(whole.events()) == events
    assert whole.counts()["Placement"] == sum(type(e) is pt.Placement for e in events)


def test_peer_event_types_round_trip() -> None:
    events = _peer_events()
    b = EventBatch.from_events(events)
    b._check()
    assert b.reasons == ("over-capacity", "empty")
    assert b.filtered.reason.tolist() == [0, 1]
    assert b.padding.length.tolist() == [3, 1] and b.repeat.start.tolist() == [3]
    assert list(b.events()) == events
    for size in (1, 2, 5):
        assert list(unbatched(batched(events, size))) == events
    assert b == EventBatch.from_events(events)
    assert b != EventBatch.from_events(events[:-1])


def test_batch_validation_errors() -> None:
    with pytest.raises(ValueError, match=r"placement\.row has 0 values for 1 Placement"):
        EventBatch.from_columns(np.array([2], dtype=np.uint8))
    with pytest.raises(ValueError, match="Horizon"):
        EventBatch.from_columns(np.array([8, 0], dtype=np.uint8), pt.Horizon(0, 0, "rows", ()),
                                arrival=([0], [0], [0], [3]))
    with pytest.raises(ValueError, match="unknown code"):
        EventBatch.from_columns(np.array([9], dtype=np.uint8))
    with pytest.raises(TypeError, match="events must be"):
        EventBatch.from_events([("not", "an", "event")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="size must be a positive int"):
        list(batched([], 0))


def test_iter_batches_and_length_chunks() -> None:
    lengths = [5, 17, 3, 3, 40, 2, 9, 1, 1, 33] * 30
    cfg = pt.PackerConfig(capacity=16, min_buffer=7, refill=[3, 1])
    ref = pt.replay(lengths, config=cfg).events
    assert list(unbatched(iter_batches(pt.Packer(cfg), lengths, 7))) == ref
    chunks = LengthChunks(np.array(lengths[i : i + 13]) for i in range(0, len(lengths), 13))
    assert pt.replay(chunks, config=cfg).events == ref
    with pytest.raises(ValueError, match="one-shot"):
        list(chunks.chunks())


@settings(max_examples=scaled_examples(60))
@given(packer_cases(), st.integers(1, 30))
def test_summary_batches_equal_events(case: tuple[list[int], dict[str, Any]], size: int) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events
    a = SummaryAccumulator(kwargs["capacity"])
    for ev in events:
        a.feed(ev)
    b = SummaryAccumulator(kwargs["capacity"])
    for batch in batched(events, size):
        b.feed(batch)
        b._check()
    assert a.result() == b.result()
    assert summarize(batched(events, size), kwargs["capacity"]) == a.result()


def test_summary_accepts_peer_batches() -> None:
    events = _peer_events()
    a = summarize(events, 6)
    for size in (1, 3, 100):
        assert summarize(batched(events, size), 6) == a
    assert a.padding_tokens == 4 and a.repeated_tokens == 1 and a.filtered_tokens == 9


@settings(max_examples=scaled_examples(60))
@given(packer_cases(policies=("discard", "continue", "requeue-bos", "segment-first")), st.integers(1, 30))
def test_group_rows_and_token_rows_on_batches(case: tuple[list[int], dict[str, Any]], size: int) -> None:
    lengths, kwargs = case
    config = pt.PackerConfig(**{**kwargs, "passes": 1})
    events = pt.replay(lengths, config=config).events
    assert list(group_rows(batched(events, size), config.capacity)) == list(
        group_rows(events, config.capacity))


def test_compiled_engine_without_numba_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from packing_theory.engine import compiled

    monkeypatch.setattr(compiled, "compiled_available", lambda: False)
    with pytest.raises(ImportError, match=r"pip install 'packing-theory\[fast\]'"):
        list(compiled.CompiledPacker(capacity=4).batches([1, 2]))


def test_batch_totals_past_2_63_are_exact() -> None:
    """A batch's sums were taken in int64: replay --engine compiled printed negative totals past 2**63."""
    lengths = [2**62] * 3 + [5]
    events = list(pt.Packer(capacity=64, min_buffer=1, refill=1).events(lengths))
    one, bulk = SummaryAccumulator(64), SummaryAccumulator(64)
    for e in events:
        one.feed(e)
    bulk.feed(EventBatch.from_events(events))
    assert bulk.result() == one.result()
    assert bulk.result().consumed_tokens == 3 * 2**62 + 5
