"""packing_theory.audit.costs: per-packer costs from the event stream only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory import build_packer
from packing_theory.audit.costs import COST_COLUMNS, CostAccumulator, costs_table, nearest_rank, packer_costs
from packing_theory.engine.batches import EventBatch, batched
from packing_theory.engine.compiled import compiled_available
from packing_theory.engine.starts import PRUNE_RUNS
from packing_theory.errors import InputError, InputTypeError
from packing_theory.invariant import strategies as pst
from packing_theory.invariant.wait_bound import StartDelayMonitor
from packing_theory.registry import names
from packing_theory.testing import scaled_examples


def test_hand_checked_continue_stream() -> None:
    """R=4, B=2, refill 1, continue, drained: [9, 1, 2, 3, 3].

    rows: 0 = occ1[0:1] occ2[0:2] occ3[0:1]; 1 = occ3[1:3] occ4[0:2]; 2 = occ4[2:3] occ0[0:3];
    3 = occ0[3:7]; partial 4 = occ0[7:9]. Targets: 3 + 3 + 3 + 3 + 1 = 13, of which the
    continuations (start > 0) hold 1 + 0 + 3 + 1 = 5.
    """
    events = list(pt.Packer(capacity=4, min_buffer=2, refill=1, policy="continue",
                            exhausted="drain").events([9, 1, 2, 3, 3]))
    acc = CostAccumulator(4, "continue")
    for ev in events:
        acc.feed(ev)
        acc._check()
    c = acc.result()
    assert (c.rows, c.partial_row_tokens, c.utilization) == (4, 2, 1.0)
    assert (c.targets, c.targets_without_context) == (13, 5)
    assert c.share_without_context == pytest.approx(5 / 13)
    assert (c.arrived_occurrences, c.started_occurrences, c.never_started_occurrences) == (5, 5, 0)
    assert (c.long_occurrences, c.long_started, c.fragments_per_long_max) == (1, 1, 3)
    assert c.fragments_per_long_mean == 3.0
    # occurrence 0 arrived in row 0 and started in row 2; occurrence 4 arrived in row 1, started there
    assert (c.start_delay_max, c.start_delay_p50, c.start_delay_p99) == (2, 0, 2)
    assert c.unstarted_wait_max is None and c.discarded_tokens == 0


def test_discard_stream_never_started_and_censored_wait() -> None:
    events = pt.Packer(capacity=4, min_buffer=2, refill=1, policy="discard").events([9, 3, 3, 3, 3, 3])
    c = packer_costs(events, 4, label="discard")
    assert c.never_started_occurrences == 1 and c.never_started_sources == 1
    assert c.unstarted_wait_max is not None and c.unstarted_wait_max >= 1
    assert c.discarded_tokens > 0 and c.share_without_context == 0.0


def test_peer_like_stream_with_padding_repeats_and_filtered() -> None:
    events: list[pt.Event] = [
        pt.Arrival(0, 0, 0, 3), pt.Arrival(1, 1, 0, 9), pt.Filtered(1, 1, 9, "too long"),
        pt.Arrival(2, 0, 1, 3),
        pt.Placement(0, 0, 0, 0, 0, 3, False, False), pt.Padding(0, 3, 1),
        pt.Placement(1, 0, 2, 0, 0, 3, False, False), pt.Repeat(1, 3, 2, 0, 2, 1),
        pt.Horizon(2, 0, "exhausted", ()),
    ]
    c = packer_costs(events, 4, label="peer")
    assert c.utilization == pytest.approx(6 / 8)
    assert (c.padding_tokens, c.repeated_tokens, c.filtered_tokens) == (1, 1, 9)
    assert (c.arrived_sources, c.never_started_sources, c.never_started_occurrences) == (2, 1, 1)
    assert c.long_occurrences == c.long_never_started == 1 and c.long_started == 0
    assert c.fragments_per_long_mean is None
    assert c.start_delay_max == 1  # occurrence 2 arrived before any row completed, started in row 1


@given(pst.replay_cases())
def test_costs_agree_with_the_summary(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    rep = pt.replay(lengths, config=config)
    s = rep.summary()
    c = packer_costs(rep.events, config.capacity, label=config.policy)
    R = config.capacity
    assert c.discarded_tokens == s.discarded_tokens and c.rows == s.rows
    assert c.started_occurrences == s.sources_started
    assert c.never_started_occurrences == s.consumed_sources - s.sources_started
    # padding positions (a padding loader: bestfit-pad) are never at a row start, and never targets
    assert c.targets == c.rows * (R - 1) + max(c.partial_row_tokens - 1, 0) - c.padding_tokens
    if c.rows or c.partial_row_tokens:  # every position holds a token, but the padding a padding loader adds
        positions = c.rows * R + c.partial_row_tokens
        assert c.utilization == (positions - c.padding_tokens) / positions
    if config.policy == "discard":
        assert c.share_without_context == 0.0 or c.targets == 0
        assert c.fragments_per_long_max in (None, 1)
    if config.policy == "bounded-wait":
        mon = StartDelayMonitor.for_packer(config)
        pt.feed_all(rep.events, mon)
        assert c.start_delay_max == mon.max_start_delay
        assert c.start_delay_max is None or c.start_delay_max <= config.start_delay_bound


def test_table_and_errors() -> None:
    c = packer_costs(pt.Packer(capacity=4, min_buffer=2, refill=1).events([9, 1, 2, 3]), 4, label="d")
    table = costs_table([c])
    assert table.splitlines()[0].count("|") == len(COST_COLUMNS) + 2 and "| d |" in table
    with pytest.raises(ValueError, match="unknown"):
        costs_table([c], [("nope", "x")])
    with pytest.raises(ValueError, match="q must be"):
        nearest_rank({1: 1}, 0)
    assert nearest_rank({}, 0.5) is None
    acc = CostAccumulator(4)
    with pytest.raises(ValueError, match="dense"):
        acc.feed(pt.Arrival(2, 2, 0, 3))
    with pytest.raises(ValueError, match="not arrived"):
        acc.feed(pt.Placement(0, 0, 0, 0, 0, 2, False, False))
    assert acc.result().utilization is None and acc.result().to_dict()["label"] == ""
    acc.starts.started = 3
    with pytest.raises(AssertionError):
        acc._check()


def test_costs_of_each_policy_differ_as_expected() -> None:
    lengths: list[Any] = [5000, 40, 900, 3000, 70, 2100, 30, 800, 60, 4100, 50, 10, 20] * 40
    kw = dict(capacity=512, min_buffer=12, refill=4)
    out = {}
    for policy in ("discard", "continue", "segment-first", "bounded-wait"):
        extra = {"max_wait": 2} if policy == "bounded-wait" else {}
        out[policy] = packer_costs(pt.Packer(policy=policy, **kw, **extra).events(lengths), 512, label=policy)
    assert out["discard"].discarded_tokens > 0 and out["bounded-wait"].discarded_tokens == 0
    assert out["continue"].never_started_occurrences > out["bounded-wait"].never_started_occurrences
    assert out["segment-first"].fragments_per_long_mean is not None
    assert out["bounded-wait"].start_delay_max is not None
    assert out["bounded-wait"].start_delay_max <= 2 + 12 + 4 - 2


def _costs_both_ways(events: list[Any], capacity: int, size: int, compiled: bool = False
                     ) -> tuple[Any, Any, CostAccumulator]:
    one, bulk = CostAccumulator(capacity), CostAccumulator(capacity, compiled=compiled)
    for e in events:
        one.feed(e)
    for i, b in enumerate(batched(iter(events), size)):
        bulk.feed(b)
        if i == 1:  # the delays so far into the table: the later batches count theirs there
            bulk.starts._hist._merge()
    bulk._check()
    return one.result(), bulk.result(), bulk


@settings(max_examples=scaled_examples(80), deadline=None)
@given(st.sampled_from(names()), st.lists(st.integers(1, 40), max_size=40), st.sampled_from([8, 16]),
       st.integers(1, 50))
def test_a_batch_in_bulk_is_its_events_one_by_one(name: str, lengths: list[int], capacity: int,
                                                  size: int) -> None:
    """Every packer, streaming and peer (padding, repeats, filtered): bulk equals the per-event oracle."""
    try:
        packer = build_packer(name, capacity=capacity)
        events = list(packer.events(lengths))
    except InputError:  # a framework's own refusal (e.g. an empty dataset, a length it cannot take)
        return
    one, bulk, acc = _costs_both_ways(events, capacity, size)
    assert bulk == one
    assert acc.starts.delays == _costs_both_ways(events, capacity, 1)[2].starts.delays
    if compiled_available():  # the kernels' rows and first starts: the same costs as the oracle's
        _, fast, fast_acc = _costs_both_ways(events, capacity, size, compiled=True)
        assert fast == one and fast_acc.starts.delays == acc.starts.delays


@pytest.mark.skipif(not compiled_available(), reason="numba (the fast extra) is not installed")
def test_the_compiled_costs_of_a_long_stream_are_the_oracle_s() -> None:
    """300,000 documents of the compiled engine in batches (past 65,536 rows the tracker prunes its
    started runs; the long ids are looked up by recency): the compiled and numpy accounting agree."""
    rng = np.random.default_rng(3)
    lengths = np.minimum(rng.lognormal(6, 1.3, 300_000).astype(np.int64) + 1, 50_000)
    packer = build_packer("discard", capacity=2049, engine="compiled")
    fast, slow = CostAccumulator(2049, compiled=True), CostAccumulator(2049)
    for b in packer.stream(lengths):
        fast.feed(b)
        slow.feed(b)
    assert fast.result() == slow.result() and fast.rows > PRUNE_RUNS > fast.starts.runs
    assert fast.result().start_delay_max is not None and fast.result().long_occurrences > 1000


def test_an_accumulator_pickles_compiled_or_not() -> None:
    """A consumer is sent to a worker process whole: the compiled one keeps whether it is, not the kernels."""
    import pickle

    lengths = [9, 3, 12, 5, 7, 20, 2]
    events = list(build_packer("discard", capacity=8).events(lengths))
    for compiled in (False, *((True,) if compiled_available() else ())):
        acc = CostAccumulator(8, compiled=compiled)
        for b in batched(iter(events[:6]), 3):
            acc.feed(b)
        again = pickle.loads(pickle.dumps(acc))
        for b in batched(iter(events[6:]), 3):
            acc.feed(b)
            again.feed(b)
        assert again.result() == acc.result() and again.compiled == compiled


@pytest.mark.skipif(not compiled_available(), reason="numba (the fast extra) is not installed")
def test_a_hand_built_batch_whose_columns_outrun_its_kinds_is_walked_event_by_event() -> None:
    """The compiled loop refuses a column longer than its events (EventBatch(...) checks nothing): the
    batch is walked as its kinds say, as on the numpy path, never read past them."""
    good = EventBatch.from_events([pt.Arrival(0, 0, 0, 5), pt.Arrival(1, 1, 0, 3)])
    bad = EventBatch(good.kinds[:1], arrival=good.arrival)  # one arrival in kinds, two in the columns
    slow, fast = CostAccumulator(8), CostAccumulator(8, compiled=True)
    slow.feed(bad)
    fast.feed(bad)
    assert fast.starts.arrivals == slow.starts.arrivals and fast.result() == slow.result()


def test_compiled_must_be_a_bool() -> None:
    with pytest.raises(InputTypeError, match="compiled must be a bool, got int 1"):
        CostAccumulator(8, compiled=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.skipif(
    not compiled_available(), reason="numba (the fast extra) is not installed"))])
def test_a_batch_the_rules_refuse_raises_at_the_same_event(compiled: bool) -> None:
    arrive = [pt.Arrival(0, 0, 0, 3), pt.Arrival(2, 2, 0, 3)]  # occurrence 1 skipped
    with pytest.raises(ValueError, match=r"arrival of occurrence 2, expected 1 \(ids must be dense\)"):
        CostAccumulator(4, compiled=compiled).feed(EventBatch.from_events(arrive))
    early = [pt.Placement(0, 0, 0, 0, 0, 2, False, False), pt.Arrival(0, 0, 0, 2)]  # placed before it arrived
    acc = CostAccumulator(4, compiled=compiled)
    with pytest.raises(ValueError, match="placement of occurrence 0, which has not arrived"):
        acc.feed(EventBatch.from_events(early))


@settings(max_examples=scaled_examples(200), deadline=None)
@given(st.dictionaries(st.integers(0, 40), st.integers(0, 5), max_size=12),
       st.floats(0.01, 1.0, allow_nan=False))
def test_nearest_rank_of_a_dense_histogram_is_the_sparse_one_s(counts: dict[int, int], q: float) -> None:
    import numpy as np

    dense = np.zeros(max(counts, default=-1) + 1, np.int64)
    for value, n in counts.items():
        dense[value] = n
    assert nearest_rank(dense, q) == nearest_rank({v: n for v, n in counts.items() if n}, q)


def test_a_broken_stream_s_start_delays_are_recorded_not_refused() -> None:
    """The bounded-wait monitor checks any stream: a start before its arrival row, or in a far-off
    row, is a recorded delay (and the monitor's row-layout violation), never an error or a huge table."""
    m = StartDelayMonitor(4)
    m.feed(pt.Padding(0, 0, 4))
    m.feed(pt.Arrival(0, 0, 0, 1))
    m.feed(pt.Placement(0, 0, 0, 0, 0, 1, False, False))  # row 0, before the arrival row 1
    assert dict(m.delay_counts) == {-1: 1}
    far = StartDelayMonitor(4)
    far.feed(pt.Arrival(0, 0, 0, 1))
    far.feed(pt.Placement(10**15, 0, 0, 0, 0, 1, False, False))
    assert dict(far.delay_counts) == {10**15: 1} and len(far.starts._hist.dense) == 0  # kept sparse
    far.starts._check()
