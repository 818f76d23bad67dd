"""The horizon cut kept in batches (``packing_theory/engine/horizon_batches.py``) against the event cut."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory import InputError, build_packer
from packing_theory.engine.batches import EventBatch, batched, unbatched
from packing_theory.engine.events import Arrival, Placement
from packing_theory.engine.horizon import Budget, cut_at_horizon
from packing_theory.engine.horizon_batches import cut_batches_at_horizon
from packing_theory.registry import entries
from packing_theory.testing import scaled_examples

PACKERS = [n for n in entries() if n not in ("torchtune-next_fit",)]


def outcome(fn: Any) -> Any:
    try:
        return list(fn())
    except ValueError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize("name", PACKERS)
@settings(max_examples=scaled_examples(30), deadline=None)
@example([2, 2, 2, 2, 9, 3], "rows", 2, 1)  # rows of several pieces, one event per batch: the fill carries
@given(st.lists(st.integers(2, 20), min_size=1, max_size=30), st.sampled_from(["rows", "targets", "tokens"]),
       st.integers(0, 40), st.sampled_from([1, 3, 16, 10_000]))
def test_the_batch_cut_is_the_event_cut(name: str, lengths: list[int], unit: str, value: int,
                                        size: int) -> None:
    knobs = {"min_buffer": 2, "refill": 2} if entries()[name].kind == "streaming" else {}
    packer = build_packer(name, capacity=8, **knobs)
    try:
        events = list(packer.events(np.asarray(lengths)))
    except ValueError:
        return  # the framework refuses this corpus
    budget = Budget(unit, value)  # type: ignore[arg-type]
    want = outcome(lambda: cut_at_horizon(events, budget, capacity=packer.capacity))
    got = outcome(lambda: unbatched(cut_batches_at_horizon(batched(events, size), budget,
                                                           capacity=packer.capacity)))
    assert got == want
    assert outcome(lambda: cut_batches_at_horizon(iter(events), budget, capacity=packer.capacity)) == want
    items = list(cut_batches_at_horizon(batched(events, size), budget, capacity=packer.capacity))
    assert all(type(i) is EventBatch for i in items[:-1])  # batches stay batches; the Horizon may be single


def test_without_a_budget_the_stream_passes_through() -> None:
    batches = list(batched(build_packer("trl-bfd", capacity=4).events([5, 2, 3, 1]), 2))
    assert list(cut_batches_at_horizon(iter(batches), None, capacity=4)) == batches


def test_a_stream_without_its_horizon_is_refused() -> None:
    events = [Arrival(0, 0, 0, 2), Placement(0, 0, 0, 0, 0, 2, False, False)]
    with pytest.raises(InputError, match="ended without a Horizon"):
        list(cut_batches_at_horizon(batched(events, 5), Budget("rows", 3), capacity=4))


def test_occurrences_out_of_arrival_order_are_refused() -> None:
    events = [Arrival(1, 1, 0, 2)]
    with pytest.raises(InputError, match="occurrence ids 0, 1, 2"):
        list(cut_batches_at_horizon(batched(events, 5), Budget("rows", 3), capacity=4))


def test_the_cut_holds_no_batch_it_has_passed_on() -> None:
    # an offline peer's first batch holds every arrival: the cut must not keep it to the end of the stream
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 400) % 23 + 1
    alive: list[weakref.ref[Any]] = []

    def source() -> Iterator[Any]:
        for b in packer.batches(lengths, 64, compiled=False):
            alive.append(weakref.ref(b.kinds))
            yield b

    got = 0
    for item in cut_batches_at_horizon(source(), Budget("rows", 20), capacity=8):
        got += 1
        del item
        if got >= 2:
            assert alive[0]() is None, "the first batch is still held by the cut"
    assert got >= 3 and len(alive) >= 3
