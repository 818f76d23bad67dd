"""The common horizon's first pass (``packing_theory/orchestration/_reach.py``): batches read as events."""

from __future__ import annotations

import importlib
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.batches import batched
from packing_theory.engine.events import Padding, Placement
from packing_theory.orchestration._reach import ReachBound, Reaching, bounded_reach, placed_tokens
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


STREAMING = ["discard", "continue", "requeue-bos", "segment-first", "bestfit-pad", "bounded-wait"]


@settings(max_examples=scaled_examples(40), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=60), st.lists(st.sampled_from(STREAMING), min_size=1,
       max_size=4, unique=True), st.integers(4, 16))
def test_bounded_reach_finds_the_smallest_reach_and_who_has_it(lengths: list[int], names: list[str],
                                                              capacity: int) -> None:
    arr = np.asarray(lengths)
    full = {n: placed_tokens(build_packer(n, capacity=capacity, min_buffer=3).events(arr), capacity)
            for n in names}
    got = bounded_reach({n: build_packer(n, capacity=capacity, min_buffer=3).events(arr) for n in names},
                        dict.fromkeys(names, capacity))
    low = min(full.values())
    assert list(got) == names
    for n, (r, whole) in got.items():
        if whole:
            assert r == full[n]
        else:  # stopped: past a finished reach, so above the smallest
            assert low < r <= full[n]
    assert min(r for r, whole in got.values() if whole) == low
    assert {n for n, (r, whole) in got.items() if whole and r == low} == {n for n in names if full[n] == low}


def test_a_stream_stops_once_it_passes_a_bound_another_process_found(tmp_path: Path) -> None:
    path = str(tmp_path / "bound")
    mine, theirs = ReachBound(path, every_s=0), ReachBound(path, every_s=0)
    assert mine.get() is None  # no file yet: no bound
    theirs.offer(6)
    assert mine.get() == 6
    mine.offer(9)  # a larger reach never raises the bound
    assert theirs.get() == 6 and Path(path).read_text() == "6"
    mine.offer(2)
    assert theirs.get() == 2
    mine._check()
    theirs._check()
    events = [Placement(k, 0, k, 0, 0, 2, False, False) for k in range(10)]
    assert bounded_reach({"long": iter(events)}, {"long": 2}, theirs) == {"long": (4, False)}
    unreadable = ReachBound(str(tmp_path / "missing" / "bound"), every_s=0)
    unreadable.offer(3)  # its directory does not exist: the process keeps its own bound, nothing raised
    assert unreadable.get() == 3


def test_a_counted_stream_passes_every_event_and_counts_to_its_end() -> None:
    packer = build_packer("trl-bfd", capacity=8)
    events = list(packer.events(np.asarray([3, 9, 2, 4, 10, 1] * 3)))
    r = Reaching(iter(events), 8)
    taken = [next(r) for _ in range(5)]
    assert taken == events[:5]
    assert r.finish() == placed_tokens(events, 8)
    r.counter._check()


def test_a_counted_stream_with_a_bound_stops_once_it_passes_it() -> None:
    events = [Placement(k, 0, k, 0, 0, 2, False, False) for k in range(10)]
    r = Reaching(iter(events), 2, stop_above=5)
    assert r.finish() == 6 and not r.whole  # past 5 at the third row: a lower bound of the reach (20)
    short = Reaching(iter(events[:2]), 2, stop_above=5)
    assert short.finish() == 4 and short.whole  # it ended first: its reach


def test_a_peer_s_reach_is_read_on_after_its_consumers_are_released(monkeypatch: pytest.MonkeyPatch) -> None:
    # an offline peer's stream past the horizon is read for its reach only once the ledger (and every other
    # consumer's per-document state) is gone: what the peer builds there is never held beside it
    from packing_theory.audit.ledger import Ledger
    from packing_theory.orchestration import Settings, measure

    ledgers: list[weakref.ref[Ledger]] = []
    alive_at_finish: list[int] = []

    class TrackedLedger(Ledger):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            ledgers.append(weakref.ref(self))

    finish = Reaching.finish

    def finish_after_release(self: Reaching) -> int:
        alive_at_finish.append(sum(r() is not None for r in ledgers))
        return finish(self)

    module = importlib.import_module("packing_theory.orchestration.measure")  # not the function of that name
    monkeypatch.setattr(module, "Ledger", TrackedLedger)
    monkeypatch.setattr(Reaching, "finish", finish_after_release)
    lengths = np.random.default_rng(0).lognormal(4, 1, 3000).astype(np.int64) + 1
    m = measure(lengths, ["bestfit-pad", "megatron-gpt"], Settings(capacity=129), horizon="common")
    assert m.horizon_set_by == ("bestfit-pad",)  # the peer was cut before its end, so it read on
    assert len(ledgers) == 2 and alive_at_finish == [0]
