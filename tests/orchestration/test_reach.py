"""The common horizon's first pass (``packing_theory/orchestration/_reach.py``): batches read as events."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.batches import batched
from packing_theory.engine.events import Padding, Placement
from packing_theory.orchestration._reach import placed_tokens
from packing_theory.testing import scaled_examples


def by_hand(events: list[object], capacity: int) -> int:
    """Placed tokens of the complete rows, rows cut where the positions reach the capacity."""
    done, row = 0, []
    for ev in events:
        if type(ev) in (Placement, Padding) or type(ev).__name__ == "Repeat":
            row.append(ev)
            if sum(e.length for e in row) == capacity:  # type: ignore[attr-defined]
                done += sum(e.length for e in row if type(e) is Placement)  # type: ignore[attr-defined]
                row = []
    return done


@pytest.mark.parametrize("name", ["trl-bfd", "trl-wrapped", "megatron-gpt", "foundry-binpack", "discard"])
@settings(max_examples=scaled_examples(40), deadline=None)
@given(st.lists(st.integers(2, 20), min_size=1, max_size=40), st.sampled_from([1, 2, 5, 1000]))
def test_batches_and_events_reach_the_same_tokens(name: str, lengths: list[int], size: int) -> None:
    packer = build_packer(name, capacity=8)
    events = list(packer.events(np.asarray(lengths)))
    want = by_hand(events, packer.capacity)
    assert placed_tokens(iter(events), packer.capacity) == want
    assert placed_tokens(batched(iter(events), size), packer.capacity) == want
