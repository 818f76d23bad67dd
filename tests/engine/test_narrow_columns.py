"""Per-occurrence columns kept narrow while their values provably fit, widened before one would not.

The horizon cut's held columns, the start tracker's rows, the costs' fragment
counts and sources and a peer's arrived lengths are ``int32`` below the bound
and ``int64`` at it, with the same results either way; and the consumers of a
stream hold no batch while the stream builds its next item.
"""

from __future__ import annotations

import pickle
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from packing_theory import build_packer
from packing_theory.audit.costs import CostAccumulator
from packing_theory.audit.ledger import Ledger
from packing_theory.engine.batches import EventBatch, split_batches, unbatched
from packing_theory.engine.consumers import feed_all
from packing_theory.engine.events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Filtered,
    Horizon,
    Placement,
)
from packing_theory.engine.horizon import Budget, cut_at_horizon
from packing_theory.engine.horizon_batches import NARROW_MAX, _HeldColumns, cut_batches_at_horizon
from packing_theory.engine.starts import StartTracker
from packing_theory.errors import InputError
from packing_theory.peers import FigureAccumulator
from packing_theory.peers._figures import SEED_RULE

BIG = NARROW_MAX + 1


# --------------------------------------------------------------------------- the horizon cut's held columns


def _held(*events: Any) -> _HeldColumns:
    h = _HeldColumns()
    h.account(EventBatch.from_events(events))
    h._check()
    return h


@pytest.mark.parametrize(("length", "source", "dtype"), [
    (NARROW_MAX, 7, np.int32), (BIG, 7, np.int64), (5, NARROW_MAX, np.int32), (5, BIG, np.int64),
])
def test_held_columns_are_int32_up_to_the_bound_and_int64_past_it(length: int, source: int,
                                                                  dtype: type) -> None:
    h = _held(Arrival(0, source, 0, length), Placement(0, 0, 0, source, 0, 3, False, True))
    assert h.dtype == dtype
    spans = h.spans()  # the values survive: nothing wrapped
    assert tuple(spans) == (BufferedSpan(0, source, 3, length - 3, False),)


def test_held_columns_widen_before_the_markers_added_pass_the_bound() -> None:
    h = _held(Arrival(0, 0, 0, NARROW_MAX))
    assert h.dtype == np.int32
    h.account(EventBatch.from_events([BosAdded(0, 0, 1)]))
    h._check()
    assert h.dtype == np.int64 and int(h.amount[0]) == BIG


def test_held_spans_release_the_columns() -> None:
    h = _held(Arrival(0, 5, 0, 9), Arrival(1, 1, 0, 4), BosAdded(0, 5, 1))
    assert len(h.spans()) == 2
    assert h.amount.size == h.stops == 0 and h.start is None and h.source is None and h.markers is None


def test_held_stops_widen_with_the_columns() -> None:
    h = _held(Arrival(0, 0, 0, 5), Placement(0, 0, 0, 0, 0, 2, False, True))
    assert h.stops == 1 and h.stop_at.dtype == np.int32
    h.account(EventBatch.from_events([Arrival(1, 1, 0, BIG)]))
    h._check()  # the pairs' stops are widened with the columns
    assert h.stop_at.dtype == h.dtype == np.int64
    assert tuple(h.spans()) == (BufferedSpan(0, 0, 2, 3, False), BufferedSpan(1, 1, 0, BIG, False))


@pytest.mark.parametrize("placed", [10, 1500])
def test_held_starts_are_pairs_while_few_and_a_column_once_many(placed: int) -> None:
    n = 3000
    h = _held(*(Arrival(i, i, 0, 5) for i in range(n)))
    for lo in range(0, placed, 100):  # batches of crops: 2 tokens of each of 100 occurrences, then 1 more
        crops = [Placement(0, 0, i, i, 0, 2, False, True) for i in range(lo, lo + 100)]
        h.account(EventBatch.from_events([*crops, Discard(lo, lo, 2, 1)]))
        h._check()
    assert (h.start is None) == (placed == 10) and (h.stops == 0) == (placed != 10)
    want = tuple(BufferedSpan(i, i, (3 if i % 100 == 0 else 2) if i < lo + 100 else 0,
                              (2 if i % 100 == 0 else 3) if i < lo + 100 else 5, False) for i in range(n))
    assert tuple(h.spans()) == want


def test_held_columns_keep_sources_and_markers_only_once_needed() -> None:
    h = _held(Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4))
    assert h.source is None and h.markers is None  # sources are the occurrence ids; no marker held
    h.account(EventBatch.from_events([Arrival(2, 7, 0, 3), Filtered(1, 1, 4, "empty")]))
    h._check()
    assert h.source is not None and h.source[:3].tolist() == [0, 1, 7] and h.markers is None
    h.account(EventBatch.from_events([Placement(0, 0, 2, 7, 0, 2, True, True)]))  # a BOS moved in front
    h._check()
    assert h.markers is not None and h.markers[:3].tolist() == [0, 0, -1]
    assert tuple(h.spans()) == (BufferedSpan(0, 0, 0, 9, False), BufferedSpan(2, 7, 1, 1, False))


@pytest.mark.parametrize(("length", "source", "dtype"), [
    (NARROW_MAX, NARROW_MAX, np.int32), (BIG, NARROW_MAX, np.int64), (NARROW_MAX, BIG, np.int64),
])
def test_held_spans_are_int32_up_to_the_bound_and_int64_past_it(length: int, source: int,
                                                                dtype: type) -> None:
    h = _held(Arrival(0, source, 0, length), Arrival(1, 1, 0, length), Arrival(2, 2, 0, 5),
              Placement(0, 0, 2, 2, 0, 5, False, False))
    spans = h.spans()
    occ, src, start, ln, bos = spans.columns()
    assert occ.dtype == np.int32  # three arrivals: the index fits whatever the values
    assert src.dtype == start.dtype == ln.dtype == dtype
    assert tuple(spans) == (BufferedSpan(0, source, 0, length, False), BufferedSpan(1, 1, 0, length, False))
    assert spans.total_length() == 2 * length  # summed in int64: nothing wrapped
    assert start.strides == bos.strides == (0,)  # one value for every span: a broadcast, no memory per span
    assert pickle.loads(pickle.dumps(spans)) == spans  # a worker's Horizon crosses processes


def test_held_spans_share_the_occurrence_ids_as_sources() -> None:
    h = _held(*(Arrival(i, i, 0, 3) for i in range(5)), Placement(0, 0, 1, 1, 0, 2, False, True))
    occ, src, start, ln, _ = h.spans().columns()
    assert np.shares_memory(occ, src) and occ.tolist() == [0, 1, 2, 3, 4]
    assert start.tolist() == [0, 2, 0, 0, 0] and start.strides != (0,) and ln.tolist() == [3, 1, 3, 3, 3]


def test_held_spans_index_is_int64_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.engine.horizon_batches as hb
    monkeypatch.setattr(hb, "NARROW_MAX", 2)  # three arrivals pass a bound of 2
    h = _held(Arrival(0, 0, 0, 1), Arrival(1, 1, 0, 2), Arrival(2, 2, 0, 1))
    assert h.dtype == np.int32  # the values (at most 2) are within the bound
    occ, src, _, ln, _ = h.spans().columns()
    assert occ.dtype == np.int64 and occ.tolist() == [0, 1, 2] and ln.tolist() == [1, 2, 1]
    assert np.shares_memory(occ, src)


def test_held_spans_chunk_by_chunk_are_the_spans_in_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.engine.horizon_batches as hb
    events: list[Any] = [Arrival(i, (i * 7) % 11, 0, i % 5 + 1) for i in range(40)]
    events += [Placement(0, 0, i, (i * 7) % 11, 0, 1, False, True) for i in range(0, 40, 3)]
    want = tuple(_held(*events).spans())
    monkeypatch.setattr(hb, "_CHUNK", 3)
    emptied = len(range(0, 40, 15))  # length 1 and its one token placed
    assert tuple(_held(*events).spans()) == want and len(want) == 40 - emptied


# --------------------------------------------------------------------------- the start tracker


def test_start_rows_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    t = StartTracker()
    t.arrive_all(np.arange(3, dtype=np.int64), np.array([0, 5, NARROW_MAX - 1], np.int64))
    t.start_all(np.array([1], np.int64), np.array([NARROW_MAX - 1], np.int64))
    t._check()
    assert t.row_dtype == np.int32
    t.start_all(np.array([0], np.int64), np.array([NARROW_MAX], np.int64))  # the scratch mark: widened
    t._check()
    assert t.row_dtype == np.int64
    assert (t.start_row(0), t.start_row(1), t.start_row(2)) == (NARROW_MAX, NARROW_MAX - 1, None)
    assert dict(t.delays) == {NARROW_MAX: 1, NARROW_MAX - 6: 1}
    assert t.oldest_unstarted() == 2


def test_arrival_rows_are_kept_as_runs() -> None:
    t = StartTracker()
    t.arrive_all(np.arange(5, dtype=np.int64), np.zeros(5, np.int64))  # an offline packer: one run
    t.arrive(5, 0)
    assert t.runs == 1
    t.arrive_all(np.arange(6, 10, dtype=np.int64), np.array([0, 2, 2, 7], np.int64))
    t.arrive(10, 9)
    t._check()
    assert t.runs == 4 and (t._run_at.tolist(), t._run_row.tolist()) == ([0, 7, 9, 10], [0, 2, 7, 9])
    want = [0] * 7 + [2, 2, 7, 9]
    assert [t.arrival_row(o) for o in range(11)] == want
    assert t.arrival_rows(np.arange(11, dtype=np.int64)).tolist() == want


def test_run_starts_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    t = StartTracker()
    t._add_runs(NARROW_MAX, np.array([5], np.int64))
    assert t._run_at.typecode == "i"
    t._add_runs(BIG, np.array([6], np.int64))
    assert t._run_at.typecode == "q" and t._run_at.tolist() == [NARROW_MAX, BIG]
    assert t._run_rows(np.array([NARROW_MAX, BIG, BIG + 9], np.int64)).tolist() == [5, 6, 6]  # no arrival


def test_single_event_start_rows_widen_too() -> None:
    t = StartTracker()
    t.arrive(0, 0)
    t.arrive(1, 2)
    assert t.row_dtype == np.int32
    assert t.start(1, 3 * NARROW_MAX) == 3 * NARROW_MAX - 2
    t._check()
    assert t.row_dtype == np.int64 and t.start_row(1) == 3 * NARROW_MAX and not t.is_started(0)


# --------------------------------------------------------------------------- the costs


def test_cost_sources_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    narrow, wide = CostAccumulator(8), CostAccumulator(8)
    narrow.feed(EventBatch.from_events([Arrival(0, NARROW_MAX, 0, 3)]))
    wide.feed(EventBatch.from_events([Arrival(0, NARROW_MAX, 0, 3), Arrival(1, BIG, 0, 3)]))
    assert (narrow._source.typecode, wide._source.typecode) == ("i", "q")
    assert wide._source.tolist() == [NARROW_MAX, BIG]
    single = CostAccumulator(8)
    single.feed(Arrival(0, BIG, 0, 3))
    assert single._source.typecode == "q" and single._source[0] == BIG


def test_fragment_counts_widen_before_the_placements_could_pass_the_bound() -> None:
    c = CostAccumulator(8)
    c.feed(EventBatch.from_events([Arrival(0, 0, 0, 30)]))
    c._placements = NARROW_MAX - 2  # as if that many placements had been counted
    c.feed(EventBatch.from_events([Placement(0, 0, 0, 0, 0, 8, False, True)]))
    assert c._frag.typecode == "i"
    c.feed(EventBatch.from_events([Placement(1, 0, 0, 0, 8, 8, False, True)]))
    assert c._frag.typecode == "q" and c._frag.tolist() == [2]


def test_narrow_costs_are_the_same_costs() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 300) % 29 + 1
    batch = CostAccumulator(8)
    feed_all(packer.batches(lengths, 50, compiled=False), batch)
    one = CostAccumulator(8)
    feed_all(packer.events(lengths), one)
    assert batch.result() == one.result()
    assert batch._frag.typecode == batch._long_ids.typecode == "i"
    assert batch._source is None and one._source is None  # every source is its occurrence id: not stored
    batch._check()


def test_cost_sources_are_stored_from_the_first_that_is_not_its_occurrence_id() -> None:
    c = CostAccumulator(8)
    c.feed(EventBatch.from_events([Arrival(0, 0, 0, 3), Arrival(1, 1, 0, 3)]))
    assert c._source is None
    c.feed(Arrival(2, 0, 1, 3))  # a second pass of source 0
    assert c._source is not None and c._source.tolist() == [0, 1, 0]
    c.feed(EventBatch.from_events([Arrival(3, 1, 1, 3), Placement(0, 0, 3, 1, 0, 3, False, False)]))
    assert c._source.tolist() == [0, 1, 0, 1]
    r = c.result()
    assert (r.arrived_occurrences, r.arrived_sources, r.never_started_sources) == (4, 2, 1)
    c._check()


def test_long_ids_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    c = CostAccumulator(8)
    c.feed(EventBatch.from_events([Arrival(0, 0, 0, 30), Arrival(1, 1, 0, 3), Arrival(2, 2, 0, 9)]))
    assert c._long_ids.tolist() == [0, 2] and c._frag.tolist() == [0, 0]
    c._fit_ids(NARROW_MAX)
    assert c._long_ids.typecode == "i"
    c._fit_ids(NARROW_MAX + 1)
    assert c._long_ids.typecode == "q" and c._long_ids.tolist() == [0, 2]
    c.feed(Placement(0, 0, 2, 2, 0, 8, False, True))
    c.feed(EventBatch.from_events([Placement(1, 0, 2, 2, 8, 1, False, False)]))
    assert c._frag.tolist() == [0, 2]
    c._check()


# --------------------------------------------------------------------------- a peer's figures


def test_figure_lengths_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    acc = FigureAccumulator.for_packer(packer)
    acc.feed(EventBatch.from_events([Arrival(0, 0, 0, NARROW_MAX)]))
    assert acc._length.typecode == "i"
    acc.feed(Arrival(1, 1, 0, BIG))
    assert acc._length.typecode == "q" and acc._length[:2].tolist() == [NARROW_MAX, BIG]


def test_figure_targets_are_int32_up_to_the_bound_and_int64_past_it() -> None:
    for batched in (False, True):
        acc = FigureAccumulator(SEED_RULE, capacity=8)
        pieces = [Arrival(0, 0, 0, 3), Placement(0, 0, 0, 0, 0, 3, False, False)]
        for item in [EventBatch.from_events(pieces)] if batched else pieces:
            acc.feed(item)
        assert acc._occ_targets.typecode == "i" and acc._occ_targets[0] == 2
        acc._occ_targets[0] = NARROW_MAX - 3  # as if that many targets had been credited to it
        more = Placement(1, 0, 0, 0, 0, 4, False, False)  # 3 more targets: exactly the bound
        acc.feed(EventBatch.from_events([more]) if batched else more)
        assert acc._occ_targets.typecode == "i" and acc._occ_targets[0] == NARROW_MAX
        acc.feed(EventBatch.from_events([more]) if batched else more)
        assert acc._occ_targets.typecode == "q" and acc._occ_targets[0] == BIG + 3
        # (row 1 was seen: all 4 positions are targets)
        lengths, targets = acc.occurrence_target_columns()
        assert targets.dtype == np.int64 and (lengths.tolist(), targets.tolist()) == ([3], [BIG + 3])


def test_figure_columns_grow_no_further_than_the_occurrences_arrived() -> None:
    acc = FigureAccumulator(SEED_RULE, capacity=8)
    acc.keep_lengths = False
    acc.feed(EventBatch.from_events([Arrival(o, o, 0, 3) for o in range(5000)]))
    acc.feed(EventBatch.from_events([Placement(0, 0, 3999, 3999, 0, 3, False, False)]))
    assert len(acc._occ_targets) == len(acc._occ_has) == 4000
    acc.feed(Placement(1, 0, 4500, 4500, 0, 3, False, False))  # a quarter more would be 6,024
    assert len(acc._occ_targets) == len(acc._occ_has) == 5000 and len(acc._length) == 0
    acc._check()


def test_lengths_read_from_the_ledger_are_the_lengths_kept() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 300) % 29 + 1
    kept, told = FigureAccumulator.for_packer(packer), FigureAccumulator.for_packer(packer)
    told.keep_lengths = False
    ledger = Ledger.for_packer(packer, min_buffer=1)
    feed_all(packer.batches(lengths, 50, compiled=False), kept, told, ledger)
    assert len(told._length) == 0 and len(kept._length) > 0
    told._check()
    want = kept.occurrence_target_columns()
    got = told.occurrence_target_columns(lengths=ledger.lengths_of)
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True)) and want[0].size > 0
    with pytest.raises(InputError, match="needs lengths=: this accumulator was told not to keep"):
        told.occurrence_target_columns()
    with pytest.raises(InputError, match="lengths must give one length per occurrence: 0 for"):
        told.occurrence_target_columns(lengths=lambda occ: np.zeros(0, np.int64))
    assert ledger.lengths_of(np.array([-1, 0, 10**9])).tolist() == [0, int(lengths[0]), 0]


def test_occurrence_target_columns_are_the_lists_as_arrays() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 300) % 29 + 1
    acc = FigureAccumulator.for_packer(packer)
    feed_all(packer.batches(lengths, 50, compiled=False), acc)
    cols = acc.occurrence_target_columns()
    assert all(type(c) is np.ndarray and c.dtype == np.int64 for c in cols)
    assert (cols[0].tolist(), cols[1].tolist()) == acc.occurrence_targets()
    assert cols[0].size > 0


# --------------------------------------------------------------------------- batches in pieces


def test_split_batches_gives_the_same_stream_in_pieces_of_at_most_size() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 200) % 31 + 1
    items = list(packer.batches(lengths, 10_000, compiled=False))
    for size in (1, 7, 64, 10_000):
        pieces = list(split_batches(iter(items), size))
        assert all(len(p) <= size for p in pieces if type(p) is EventBatch)
        assert list(unbatched(pieces)) == list(unbatched(items))
        assert sum(p.horizon is not None for p in pieces if type(p) is EventBatch) == 1
    with pytest.raises(InputError, match="size must be a positive int, got 0"):
        list(split_batches(iter(items), 0))


def test_piece_is_the_events_of_its_stretch() -> None:
    packer = build_packer("seamless", capacity=8)
    (b, *_) = list(packer.batches(np.arange(1, 60) % 13 + 1, 10_000, compiled=False))
    events = list(b.events())
    for a, z in ((0, 5), (3, 17), (10, 10), (len(b) - 4, len(b) + 9)):
        got = b.piece(a, z)
        got._check()
        assert list(got.events()) == events[a:z]


def _tracked(items: Iterator[Any], alive: list[weakref.ref[Any]]) -> Iterator[Any]:
    for item in items:
        if type(item) is EventBatch:
            assert all(r() is None for r in alive), "a batch passed on is still held"
            alive.append(weakref.ref(item.kinds))
        yield item


@pytest.mark.parametrize("consumers", [2, 3])
def test_feed_all_holds_no_item_while_the_next_is_built(consumers: int) -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 400) % 23 + 1
    alive: list[weakref.ref[Any]] = []
    stream = split_batches(packer.batches(lengths, 10_000, compiled=False), 50)
    got = feed_all(_tracked(stream, alive), *[CostAccumulator(8) for _ in range(consumers)])
    assert len(alive) > 3 and got[0].rows > 0


def test_the_cut_holds_no_batch_while_the_next_is_built() -> None:
    packer = build_packer("fewer-truncations", capacity=8)
    lengths = np.arange(1, 400) % 23 + 1
    alive: list[weakref.ref[Any]] = []
    events = list(packer.events(lengths))
    want = list(cut_at_horizon(events, Budget("rows", 30), capacity=8))
    cut = cut_batches_at_horizon(_tracked(packer.batches(lengths, 64, compiled=False), alive),
                                 Budget("rows", 30), capacity=8)
    got = []
    for item in cut:
        got.extend(unbatched([item]))
        del item
    assert got == want and len(alive) > 3
    assert isinstance(got[-1], Horizon)
