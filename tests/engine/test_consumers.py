"""The consumer protocol: every consumer on events and on batches, feed_all, the start tracker, the engines.

The table ``CONSUMERS`` names every consumer of the event stream in the
package (``test_every_consumer_is_in_the_table`` finds them by their methods),
so a new consumer is fed the same streams as events and as batches, and has
its ``_check()`` called after every item, as soon as it is added to the table.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import importlib.util
import inspect
import math
import pkgutil
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.adapters.stream import RemainderTracker
from packing_theory.audit import DocumentRows, Ledger, StreamLedger
from packing_theory.audit.costs import CostAccumulator
from packing_theory.audit.histograms import nearest_rank
from packing_theory.audit.population import ScoredTargets
from packing_theory.engine import EventSource
from packing_theory.engine import consumers as consumers_module
from packing_theory.engine.base import PackingEngine
from packing_theory.engine.batches import EventBatch, batched, unbatched
from packing_theory.engine.compiled import COMPILED_POLICIES, compiled_available
from packing_theory.engine.consumers import Consumer, consumer_settings, feed_all
from packing_theory.engine.delays import DelayCounts
from packing_theory.engine.replay import ENGINES, make_packer
from packing_theory.engine.starts import PRUNE_RUNS, StartTracker
from packing_theory.engine.summary import SummaryAccumulator
from packing_theory.errors import InputError, InputTypeError
from packing_theory.invariant import BufferTracker, InvariantMonitor
from packing_theory.invariant import strategies as pst
from packing_theory.invariant.wait_bound import StartDelayMonitor
from packing_theory.peers import FigureAccumulator, peer_policies
from packing_theory.registry import build_packer

Factory = Callable[[Any], Consumer[Any]]

# every consumer, built from a packer or a config (``None``: it cannot read that packer's stream)
CONSUMERS: dict[str, Factory] = {
    "Ledger": lambda p: Ledger.for_packer(p, min_buffer=_b(p), chunk=8),
    "StreamLedger": lambda p: StreamLedger.for_packer(p, min_buffer=_b(p), chunk=16),
    "CostAccumulator": CostAccumulator.for_packer,
    "InvariantMonitor": lambda p: InvariantMonitor.for_packer(p, min_buffer=_b(p),
                                                              track_buffer=_b(p) is None),
    "StartDelayMonitor": lambda p: StartDelayMonitor.for_packer(p, max_recorded=10_000),
    "SummaryAccumulator": SummaryAccumulator.for_packer,
    "BufferTracker": BufferTracker.for_packer,  # streaming policies only
    "RemainderTracker": lambda p: RemainderTracker(),
    "ScoredTargets": lambda p: ScoredTargets.for_packer(p, targets=3 * consumer_settings(p).capacity),
    "FigureAccumulator": FigureAccumulator.for_packer,
    "DocumentRows": DocumentRows.for_packer,
}
PEER_CONSUMERS = [name for name in CONSUMERS if name != "BufferTracker"]

# result fields that describe how the stream was chunked, not the stream
CHUNKING = {"StreamLedger": ("live_peak",)}  # the most occurrences held at once: settled per batch

# consumers tested elsewhere, with the reason
NOT_IN_TABLE = {
    "Consumer": "the protocol itself",
    "_Progress": "feed_all's progress counter: test_feed_all_progress",
    "_StartRows": "per-rank start rows: tests/test_distributed_ranks.py through audit_ranks",
    "MixtureSeries": "needs one source label per document: tests/audit/test_sources.py (events and batches)",
    "TrainableTokens": "needs each document's first trainable offset: tests/configs/test_doctor.py (a naive "
                       "count, events and batches)",
}


def _b(packer: Any) -> int | None:
    """``B`` of a streaming packer (``None``: take it from the config), 2 for a peer."""
    return None if consumer_settings(packer).config is not None else 2


def _plain(value: Any) -> Any:
    """A result as comparable Python values (numpy arrays as lists)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_plain(v) for v in value)
    return value


def _fed(name: str, packer: Any, items: list[Any], *, ignore: tuple[str, ...] = (),
         check: bool = True) -> Any:
    """Feed ``items`` to a fresh consumer of the table, ``_check()`` ing it after every item; its result."""
    consumer = CONSUMERS[name](packer)
    assert isinstance(consumer, Consumer)
    for item in items:
        consumer.feed(item)
        if check:
            consumer._check()
    consumer._check()
    result = consumer.result()
    drop = (*CHUNKING.get(name, ()), *ignore)
    return _plain(dataclasses.replace(result, **dict.fromkeys(drop, None)) if drop else result)


def _peer_streams() -> list[tuple[Any, list[pt.Event]]]:
    out = []
    for name in sorted(peer_policies()):
        for L, lengths in ((8, [3, 9, 2, 4, 10, 1, 7, 17, 5]), (4, [1, 5, 4, 2, 2, 9])):
            try:
                peer = build_packer(name, capacity=L)
                out.append((peer, list(peer.events(lengths))))
            except ValueError:
                continue  # the framework's own rule refuses this input
    return out


PEER_STREAMS = _peer_streams()


# --------------------------------------------------------------------------- the table


def test_every_consumer_is_in_the_table() -> None:
    """Every class of the package with feed, result and _check is fed by the tests below."""
    found = set()
    for info in pkgutil.walk_packages(pt.__path__, prefix="packing_theory."):
        if info.name.endswith(("._kernel", "._ledger_kernel", "._starts_kernel", "._kernels",
                               "._best_fit_kernel", "._binpack_kernel")):  # numba kernels (the fast extra)
            continue
        if info.name == "packing_theory.adapters.torch" and importlib.util.find_spec("torch") is None:
            continue  # the torch extra: its classes are datasets and loaders, no event consumer
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == info.name and callable(getattr(obj, "feed", None)):
                params = list(inspect.signature(obj.feed).parameters.values())[1:]
                if params and "Event" in str(params[0].annotation):
                    found.add(name)
    assert found == set(CONSUMERS) | set(NOT_IN_TABLE)


def _constructors() -> list[tuple[str, Any]]:
    classes = {"Ledger": Ledger, "StreamLedger": StreamLedger, "CostAccumulator": CostAccumulator,
               "InvariantMonitor": InvariantMonitor, "StartDelayMonitor": StartDelayMonitor,
               "SummaryAccumulator": SummaryAccumulator, "BufferTracker": BufferTracker,
               "RemainderTracker": RemainderTracker, "ScoredTargets": ScoredTargets,
               "FigureAccumulator": FigureAccumulator,
               "DocumentRows": DocumentRows}
    assert set(classes) == set(CONSUMERS)
    return sorted(classes.items())


@pytest.mark.parametrize(("name", "cls"), _constructors())
def test_no_consumer_defaults_the_capacity(name: str, cls: Any) -> None:
    """R, B and the policy come from the packer: forgetting them is an error, never 2049."""
    params = inspect.signature(cls).parameters
    required = {"capacity", "min_buffer"} | ({"policy"} if cls is BufferTracker else set())
    for key in required & set(params):
        assert params[key].default is inspect.Parameter.empty, f"{name}({key}=...) has a default"
    if "capacity" in params:
        with pytest.raises(TypeError, match="capacity"):
            cls()
    assert callable(getattr(cls, "for_packer", None)) or "capacity" not in params, f"{name} lacks for_packer"


@given(pst.replay_cases(), st.integers(1, 40))
def test_every_consumer_equal_on_events_and_batches(case: tuple[list[int], pt.PackerConfig],
                                                    size: int) -> None:
    lengths, config = case
    events = list(pt.Packer(config).events(lengths))
    batches = list(batched(events, size))
    for name in CONSUMERS:
        assert _fed(name, config, batches) == _fed(name, config, events), name


@given(pst.replay_cases(), st.data())
def test_every_consumer_equal_on_a_mixed_stream(case: tuple[list[int], pt.PackerConfig], data: Any) -> None:
    lengths, config = case
    events = list(pt.Packer(config).events(lengths))
    i = data.draw(st.integers(0, len(events)))
    j = data.draw(st.integers(i, len(events)))
    mixed = [*events[:i], *([EventBatch.from_events(events[i:j])] if j > i else []), *events[j:]]
    for name in CONSUMERS:
        # the ledger samples its time series where a chunk or a batch ends
        ignore = ("series",) if name == "Ledger" else ()
        assert (_fed(name, config, mixed, ignore=ignore)
                == _fed(name, config, events, ignore=ignore, check=False)), name


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_every_consumer_equal_on_peer_events_and_batches(size: int) -> None:
    assert PEER_STREAMS
    for peer, events in PEER_STREAMS:
        for name in PEER_CONSUMERS:
            batches = list(batched(events, size))
            assert _fed(name, peer, batches) == _fed(name, peer, events), (peer.name, name)


NO_NUMBA = 'numba not installed: pip install "packing-theory[fast]"'


@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
@given(pst.replay_cases(policies=COMPILED_POLICIES))
def test_every_consumer_equal_on_the_compiled_stream(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    compiled = list(make_packer("compiled", config).stream(lengths))
    assert all(type(b) is EventBatch for b in compiled)
    events = list(pt.Packer(config).stream(lengths))
    for name in CONSUMERS:
        assert _fed(name, config, compiled) == _fed(name, config, events, check=False), name


# --------------------------------------------------------------------------- construction from a packer


def test_for_packer_reads_engines_configs_and_peers() -> None:
    config = pt.PackerConfig(capacity=8, min_buffer=3, refill=2, policy="continue")
    for source in (config, pt.Packer(config), pt.ReferencePacker(config), pt.CompiledPacker(config)):
        led = Ledger.for_packer(source)
        assert (led.capacity, led.min_buffer, led.policy) == (8, 3, "continue")
        mon = InvariantMonitor.for_packer(source, track_buffer=True)
        assert (mon.capacity, mon.min_buffer) == (8, 3) and mon.tracker is not None
        assert mon.tracker.policy == "continue"
        assert CostAccumulator.for_packer(source).label == "continue"
        assert StartDelayMonitor.for_packer(source).bound is None
        assert SummaryAccumulator.for_packer(source).capacity == StreamLedger.for_packer(source).capacity == 8
    bounded = pt.PackerConfig(capacity=8, min_buffer=3, refill=2, policy="bounded-wait", max_wait=1)
    assert StartDelayMonitor.for_packer(bounded).bound == bounded.start_delay_bound
    assert InvariantMonitor.for_packer(bounded).result().applicable is False
    peer = build_packer("trl-bfd", capacity=8)
    led = Ledger.for_packer(peer, min_buffer=4)
    assert (led.capacity, led.min_buffer, led.policy) == (peer.capacity, 4, "trl-bfd")
    assert CostAccumulator.for_packer(peer).capacity == peer.capacity


def test_for_packer_refuses_what_the_packer_cannot_say() -> None:
    peer = build_packer("trl-bfd", capacity=8)
    for cls in (Ledger, StreamLedger, InvariantMonitor):
        message = rf"^min_buffer: trl-bfd has no buffer size B; pass {cls.__name__}\(\.\.\., min_buffer=B\)$"
        with pytest.raises(InputError, match=message):
            cls.for_packer(peer)  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="rebuilds a streaming policy's buffer; trl-bfd is not one"):
        BufferTracker.for_packer(peer)
    with pytest.raises(InputError, match="track_buffer needs a streaming policy"):
        InvariantMonitor.for_packer(peer, min_buffer=2, track_buffer=True)
    refused = r"^packer must be a PackerConfig or a packer with a capacity, got int 2049$"
    with pytest.raises(InputTypeError, match=refused):
        Ledger.for_packer(2049)
    with pytest.raises(InputError, match="min_buffer must be >= 1, got 0"):
        Ledger.for_packer(peer, min_buffer=0)


# --------------------------------------------------------------------------- feed_all


class _Recorder:
    def __init__(self, name: str, log: list[tuple[str, int]]) -> None:
        self.name, self.log, self.n = name, log, 0

    def feed(self, item: Any) -> None:
        self.log.append((self.name, self.n))
        self.n += 1

    def result(self) -> int:
        return self.n

    def _check(self) -> None:
        assert self.n == sum(1 for who, _ in self.log if who == self.name)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_feed_all_feeds_each_item_to_every_consumer_in_order(k: int) -> None:
    log: list[tuple[str, int]] = []
    recorders = [_Recorder(str(i), log) for i in range(k)]
    assert feed_all(iter(range(4)), *recorders) == (4,) * k  # type: ignore[arg-type]
    assert log == [(str(i), n) for n in range(4) for i in range(k)]
    for r in recorders:
        r._check()


def test_feed_all_results_and_errors() -> None:
    packer = pt.Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
    agg, summary, costs = feed_all(packer.stream([5, 3, 9, 4]), Ledger.for_packer(packer),
                                   SummaryAccumulator.for_packer(packer), CostAccumulator.for_packer(packer))
    assert agg.mass.emitted_tokens == summary.emitted_tokens == 16
    assert costs.rows * 8 + costs.partial_row_tokens == 16
    with pytest.raises(InputError, match=r"^feed_all needs at least one consumer$"):
        feed_all([])
    with pytest.raises(InputTypeError, match="consumers must have feed"):
        feed_all([], object())  # type: ignore[call-overload]
    events = list(packer.events([5, 3]))
    with pytest.raises(InputError, match="after the Horizon"):
        feed_all([*events, pt.Arrival(9, 9, 0, 3)], Ledger.for_packer(packer))
    with pytest.raises(InputError, match="without a Horizon"):
        feed_all(events[:-1], Ledger.for_packer(packer))


def test_feed_all_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers_module, "PROGRESS_EVERY", 5)
    lengths = [3, 9, 2, 4, 10, 1, 7, 17, 5] * 6
    packer = pt.Packer(capacity=8, min_buffer=2, refill=2)
    events = list(packer.events(lengths))
    for stream in (events, list(batched(events, 7))):
        seen: list[int] = []
        feed_all(stream, SummaryAccumulator.for_packer(packer), progress=seen.append)
        horizon = events[-1]
        assert isinstance(horizon, pt.Horizon)
        assert seen[-1] == horizon.rows and seen == sorted(seen), seen
        calls = len(events) // 5 if stream is events else len(stream)
        assert len(seen) >= calls


# --------------------------------------------------------------------------- the start tracker


def test_start_tracker_by_hand() -> None:
    t = StartTracker()
    for occ, row in ((0, 0), (1, 0), (2, 1), (3, 4)):
        t.arrive(occ, row)
        t._check()
    assert t.start(2, 1) == 0 and t.start(2, 7) is None and t.start(0, 3) == 3
    t._check()
    assert (t.started, t.max_delay, dict(t.delays)) == (2, 3, {0: 1, 3: 1})
    assert (t.oldest_unstarted(), t.unstarted_wait(5), t.start_row(0), t.start_row(1)) == (1, 5, 3, None)
    assert t.is_started(2) and not t.is_started(3) and t.arrival_row(3) == 4
    t.start(1, 4)
    t.start(3, 4)
    assert t.oldest_unstarted() is None and t.unstarted_wait(9) is None
    with pytest.raises(InputError, match=r"^arrival of occurrence 7, expected 4 \(ids must be dense\)$"):
        t.arrive(7, 4)
    with pytest.raises(InputError, match=r"^placement of occurrence 4, which has not arrived$"):
        t.start(4, 5)
    with pytest.raises(InputError, match="has not arrived"):
        t.start(-1, 5)


def _seen(t: StartTracker) -> tuple[object, ...]:
    return (t.started, t.max_delay, dict(t.delays), t.started_mask().tolist(), t.oldest_unstarted(),
            t.unstarted_wait(99))


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n),
    st.lists(st.lists(st.tuples(st.integers(0, n - 1),
                                st.integers(-3, 9) | st.sampled_from([70_000, 10**15])), max_size=25),
             max_size=4))))
def test_start_all_is_start_one_by_one(case: tuple[list[int], list[list[tuple[int, int]]]]) -> None:
    """Bulk starts with repeated occurrences and rows out of order: the first placement in order wins;
    delays before the arrival row or far past the dense histogram are counted too."""
    arrival_rows = sorted(case[0])  # rows only grow along the stream
    batches = [[(o, arrival_rows[o] + d) for o, d in batch] for batch in case[1]]
    bulk, single = StartTracker(), StartTracker()
    flags, flags_single = StartTracker(rows=False), StartTracker(rows=False)  # whether started, no rows
    for t in (bulk, flags):
        t.arrive_all(np.arange(len(arrival_rows), dtype=np.int64), np.array(arrival_rows, np.int64))
    for o, r in enumerate(arrival_rows):
        single.arrive(o, r)
        flags_single.arrive(o, r)
    for batch in batches:
        occ = np.array([o for o, _ in batch], np.int64)
        rows = np.array([r for _, r in batch], np.int64)
        bulk.start_all(occ, rows)
        flags.start_all(occ, rows)
        for o, r in batch:
            single.start(o, r)
            flags_single.start(o, r)
        bulk._check()
        flags._check()
        flags_single._check()
        for t in (single, flags, flags_single):
            assert _seen(bulk) == _seen(t)
        assert [bulk.start_row(o) for o in range(len(arrival_rows))] == [
            single.start_row(o) for o in range(len(arrival_rows))]


def test_a_tracker_without_rows_refuses_start_row() -> None:
    t = StartTracker(rows=False)
    t.arrive_all(np.arange(3, dtype=np.int64), np.array([0, 0, 4], np.int64))
    t.start(1, 7)
    assert t.is_started(1) and not t.is_started(0) and t._srow.tolist() == [0, 1, 0]
    with pytest.raises(InputError, match=r"^start_row\(\) needs the start rows: this tracker was made"):
        t.start_row(1)
    with pytest.raises(InputTypeError, match="rows must be a bool, got int 1"):
        StartTracker(rows=1)  # type: ignore[arg-type]
    t._check()


def test_start_all_refuses_rows_that_are_not_one_per_occurrence() -> None:
    t = StartTracker()
    t.arrive_all(np.arange(3, dtype=np.int64), np.zeros(3, np.int64))
    with pytest.raises(InputError, match=r"^rows must give one row per occurrence: 1 rows for 3 occurrence"):
        t.start_all(np.arange(3, dtype=np.int64), np.array([5], np.int64))
    t._check()
    assert t.started == 0 and t.start_row(0) is None


def test_delay_counts_refuse_values_out_of_order_and_counts_below_one() -> None:
    h = DelayCounts()
    for values, counts in (([3, 3], [1, 1]), ([5, 2], [1, 1]), ([1], [0]), ([1, 2], [1])):
        with pytest.raises(InputError, match=r"values must be strictly increasing|one count per value"):
            h.add(np.array(values, np.int64), np.array(counts, np.int64))
    assert h.total == 0
    h.add(np.array([-(2**62), 2**62], np.int64), np.array([1, 1], np.int64))  # 2**63 apart: no overflow
    assert h.total == 2
    h = DelayCounts()
    h.one(7)
    h.one(7)
    h._merge()
    h.one(7)  # in the table now: counted in place
    h._check()
    assert dict(zip(*(x.tolist() for x in h.counts()), strict=True)) == {7: 3}


def test_delay_counts_keep_a_thin_tail_sparse_and_a_dense_run_in_the_table() -> None:
    """Short delays fill the table; a few waits far out stay sparse (memory follows the distinct
    delays, not the largest); a run of delays at least half as dense as a table moves in."""
    h = DelayCounts()
    h.add(np.arange(0, 50, dtype=np.int64), np.full(50, 3, np.int64))
    h.add(np.array([-4, 27_000_000], np.int64), np.array([1, 2], np.int64))
    h._merge()
    h._check()
    assert len(h.dense) == 50 and h._sv.tolist() == [-4, 27_000_000]
    h.add(np.arange(50, 5000, 2, dtype=np.int64), np.ones(2475, np.int64))  # half as dense as a table
    h._merge()
    h._check()
    assert len(h.dense) == 4999 and h._sv.tolist() == [-4, 27_000_000]
    values, counts = h.counts()
    assert values[0] == -4 and values[-1] == 27_000_000 and int(counts.sum()) == h.total == 150 + 3 + 2475
    as_dict = dict(zip(values.tolist(), counts.tolist(), strict=True))
    for q in (1e-4, 0.01, 0.5, 0.99, 1.0):
        assert nearest_rank((values, counts), q) == nearest_rank(as_dict, q)
    assert nearest_rank((values, counts), 1.0) == 27_000_000 and nearest_rank((values, counts), 1e-4) == -4


@given(st.lists(st.lists(st.tuples(st.integers(-5, 3000) | st.integers(0, 10**12), st.integers(1, 4)),
                         max_size=30), max_size=8))
def test_delay_counts_are_a_counter(batches: list[list[tuple[int, int]]]) -> None:
    h, each, want = DelayCounts(), DelayCounts(), collections.Counter[int]()
    for batch in batches:
        merged = collections.Counter[int]()
        for v, c in batch:
            merged[v] += c
        values = np.array(sorted(merged), np.int64)
        h.add(values, np.array([merged[v] for v in sorted(merged)], np.int64))
        each.add_each(np.array([v for v, c in batch for _ in range(c)], np.int64))  # ungrouped, repeated
        want.update(merged)
        h._check()
        each._check()
    assert [x.tolist() for x in each.counts()] == [x.tolist() for x in h.counts()]
    h._merge()
    h._check()
    values, counts = h.counts()
    assert dict(zip(values.tolist(), counts.tolist(), strict=True)) == dict(want)
    assert len(h.dense) <= 2 * max(len(want), 1)  # a table at least half full


def test_start_all_counts_delays_far_apart() -> None:
    """Delays spread wider than a table of their span is worth: counted one by one, same histogram."""
    t = StartTracker()
    t.arrive_all(np.arange(4, dtype=np.int64), np.zeros(4, np.int64))
    t.start_all(np.array([2, 0, 3, 2], np.int64), np.array([5000, 1, 5000, 7], np.int64))
    t._check()
    assert (dict(t.delays), t.max_delay, t.started) == ({1: 1, 5000: 2}, 5000, 3)
    assert [x.tolist() for x in t.delay_counts] == [[1, 5000], [1, 2]]


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2), st.lists(st.integers(0, 60), max_size=12),
                          st.integers(0, 3)), max_size=25))
def test_a_tracker_without_rows_prunes_its_started_runs(steps: list[tuple[int, int, list[int], int]]) -> None:
    """Arrivals and starts interleaved: a tracker without rows that drops its started runs (pruning
    after every second run) records what the tracker with every row records."""
    full, pruned = StartTracker(), StartTracker(rows=False)
    pruned._prune_min = pruned._prune_at = 2
    fast = StartTracker(rows=False, compiled=True) if compiled_available() else None  # the numba first starts
    if fast is not None:
        fast._prune_min = fast._prune_at = 2
    row = 0
    for arrivals, step, picks, late in steps:
        row += step
        n = full.arrivals
        if arrivals:
            occ = np.arange(n, n + arrivals, dtype=np.int64)
            for t in (full, pruned, fast):
                if t is not None:
                    t.arrive_all(occ, np.full(arrivals, row, np.int64))
        n = full.arrivals
        if n and picks:
            occ = np.array([p % n for p in picks], np.int64)
            rows = np.full(occ.size, row + late, np.int64)
            for t in (full, pruned, fast):
                if t is not None:
                    t.start_all(occ, rows)
        pruned._check()
        assert _seen(pruned) == _seen(full)
        if fast is not None:
            fast._check()
            assert _seen(fast) == _seen(full)
        for o in range(n):
            if not full.is_started(o):
                assert pruned.arrival_row(o) == full.arrival_row(o)
    assert pruned.runs <= full.runs


def test_a_tracker_without_rows_keeps_the_runs_of_its_unstarted_occurrences_only() -> None:
    """A stream of 200,000 rows whose every tenth row leaves one occurrence unstarted keeps those rows'
    runs and the recent ones, not a run per row; a started occurrence's arrival row is refused."""
    t = StartTracker(rows=False)
    for lo in range(0, 600_000, 30_000):  # 10,000 rows at a time: their arrivals, then their starts
        occ = np.arange(lo, lo + 30_000, dtype=np.int64)
        t.arrive_all(occ, occ // 3)
        placed = occ[occ % 30 != 0]
        t.start_all(placed, placed // 3 + 2)
    t._check()
    assert t.runs < PRUNE_RUNS + 30_000 and t.oldest_unstarted() == 0 and t.unstarted_wait(200_005) == 200_005
    assert t.arrival_row(599_970) == 199_990 and dict(t.delays) == {2: 580_000}
    with pytest.raises(InputError, match=r"^arrival_row\(1\): a tracker made with rows=False keeps"):
        t.arrival_row(1)
    with pytest.raises(InputError, match=r"^arrival_rows\(\): occurrence 1 has started, and a tracker made"):
        t.arrival_rows(np.array([0, 1], np.int64))
    assert t.arrival_rows(np.array([0, 599_970], np.int64)).tolist() == [0, 199_990]
    for bad in (-1, 600_000):  # not arrived: named, never wrapped around
        with pytest.raises(InputError, match=rf"occurrence {bad} has not arrived"):
            t.arrival_rows(np.array([bad], np.int64))
        with pytest.raises(InputError, match=rf"occurrence {bad} has not arrived"):
            t.arrival_row(bad)
    with pytest.raises(InputTypeError, match="occurrences must be integer ids, got dtype float64"):
        t.arrival_rows(np.array([0.0]))


@pytest.mark.parametrize("corrupt", [
    lambda t: setattr(t, "started", t.started + 1),
    lambda t: setattr(t._hist, "total", t._hist.total + 1),
    lambda t: setattr(t, "max_delay", 99),
    lambda t: t._srow.__setitem__(0, 2),
    lambda t: t._run_row.__setitem__(0, 3),
    lambda t: t._run_at.__setitem__(1, 0),
    lambda t: (t._run_at.append(2), t._run_row.append(2)),
    lambda t: setattr(t, "_cursor", 4),
    lambda t: (t.oldest_unstarted(), t._srow.__setitem__(0, t._unset), setattr(t, "_hist", DelayCounts()),
               setattr(t, "started", 0), setattr(t, "max_delay", None)),
])
def test_start_tracker_check_detects_corruption(corrupt: Callable[[StartTracker], None]) -> None:
    t = StartTracker()
    for occ in range(3):
        t.arrive(occ, occ)
    t.start(0, 1)
    t._check()
    corrupt(t)
    with pytest.raises(AssertionError):
        t._check()


def test_costs_and_monitor_share_the_tracker() -> None:
    assert isinstance(CostAccumulator(4).starts, StartTracker)
    assert isinstance(StartDelayMonitor(4).starts, StartTracker)


def _naive_starts(events: list[pt.Event], capacity: int, *, wrap: bool) -> tuple[list[int], dict[int, int]]:
    """Arrival rows and first-placement rows, recomputed from the whole list.

    ``wrap``: rows so far as the costs count them (a row completes whenever ``R``
    positions are filled, in stream order); else as the monitor counts them
    (the placement's own row for a start, a row boundary at every fill to ``R``).
    """
    rows = fill = 0
    arrival: list[int] = []
    start: dict[int, int] = {}
    for ev in events:
        if isinstance(ev, pt.Arrival):
            arrival.append(rows)
        elif isinstance(ev, pt.Placement | pt.Padding | pt.Repeat):
            if isinstance(ev, pt.Placement) and ev.occurrence not in start:
                start[ev.occurrence] = rows if wrap else ev.row
            fill += ev.length
            if wrap:
                rows, fill = rows + fill // capacity, fill % capacity
            elif fill >= capacity:
                rows, fill = rows + 1, 0
    return arrival, start


@given(pst.replay_cases(), st.integers(0, 6))
def test_costs_and_monitor_delays_against_a_naive_recomputation(case: tuple[list[int], pt.PackerConfig],
                                                                bound: int) -> None:
    lengths, config = case
    events = list(pt.Packer(config).events(lengths))
    _check_delays(events, config.capacity, bound)


def test_costs_and_monitor_delays_on_peer_streams() -> None:
    for peer, events in PEER_STREAMS:
        for bound in (0, 1, 3):
            _check_delays(events, peer.capacity, bound)


def _check_delays(events: list[pt.Event], capacity: int, bound: int) -> None:
    """The costs' and the monitor's start delays, and the monitor's late starts, against the naive ones."""
    (costs,) = feed_all(events, CostAccumulator(capacity))
    mon = StartDelayMonitor(capacity, bound, max_recorded=10_000)
    (report,) = feed_all(events, mon)
    arrival, start = _naive_starts(events, capacity, wrap=True)
    delays = [start[o] - arrival[o] for o in sorted(start)]
    assert costs.start_delay_max == (max(delays) if delays else None)
    assert costs.start_delay_p50 == _nearest_rank(delays, 0.5)
    assert costs.start_delay_p99 == _nearest_rank(delays, 0.99)
    assert costs.started_occurrences == len(start) and costs.arrived_occurrences == len(arrival)
    unstarted = [o for o in range(len(arrival)) if o not in start]
    rows = costs.rows
    assert costs.unstarted_wait_max == (rows - arrival[unstarted[0]] if unstarted else None)
    arrival, start = _naive_starts(events, capacity, wrap=False)
    firsts = [(o, start[o] - arrival[o]) for o in sorted(start, key=lambda o: _first_index(events, o))]
    assert collections.Counter(d for _, d in firsts) == mon.delay_counts
    assert report.max_start_delay_rows == (max(d for _, d in firsts) if firsts else None)
    late = [v.occurrence for v in mon.violations if v.kind == "late-start"]
    assert late == [o for o, d in firsts if d > bound]
    assert [mon.arrival_row(o) for o in range(mon.arrivals)] == arrival


def _first_index(events: list[pt.Event], occ: int) -> int:
    return next(i for i, ev in enumerate(events) if isinstance(ev, pt.Placement) and ev.occurrence == occ)


def _nearest_rank(values: list[int], q: float) -> int | None:
    """The nearest-rank quantile, naively: the ceil(q n)-th smallest value."""
    return sorted(values)[math.ceil(q * len(values)) - 1] if values else None


# --------------------------------------------------------------------------- the other consumers' checks


def test_remainder_tracker_check_detects_corruption() -> None:
    t = RemainderTracker()
    for ev in (pt.Arrival(0, 0, 0, 5), pt.Placement(0, 0, 0, 0, 1, 2, False, False)):
        t.feed(ev)
    t._check()
    t._used[3] = [(0, 1)]  # a piece of an occurrence that never arrived
    with pytest.raises(AssertionError):
        t._check()
    t = RemainderTracker()
    t.feed(pt.Arrival(0, 0, 0, 5))
    t._used[0] = [(4, 3)]  # beyond the occurrence's length
    with pytest.raises(AssertionError):
        t._check()


def test_scored_targets_by_hand_and_check() -> None:
    s = ScoredTargets(capacity=4, targets=5)
    for ev in (pt.Placement(0, 0, 0, 0, 0, 4, False, False), pt.Placement(1, 0, 1, 1, 0, 2, False, False),
               pt.Placement(1, 2, 2, 2, 0, 2, False, False), pt.Placement(2, 0, 3, 3, 0, 4, False, False)):
        s.feed(ev)
        s._check()
    # targets 0..2 in row 0, 3..5 in row 1: the budget of 5 scores 3, 1 (target 3), 1 (target 4), 0
    assert [a.tolist() for a in s.result()] == [[0, 1, 2], [3, 1, 1]]
    s._cnt.append(9)
    s._occ.append(0)
    with pytest.raises(AssertionError):
        s._check()


# --------------------------------------------------------------------------- the engines' façade


def _engines(config: pt.PackerConfig) -> list[PackingEngine]:
    runs = compiled_available() and config.policy in COMPILED_POLICIES
    names = [e for e in ENGINES if e != "compiled" or runs]
    return [make_packer(e, config) for e in names]  # type: ignore[arg-type]


def test_every_engine_is_a_packing_engine() -> None:
    config = pt.PackerConfig(capacity=8, min_buffer=2, refill=2)
    for name in ENGINES:
        packer = make_packer(name, config)
        assert isinstance(packer, PackingEngine) and packer.engine == name
        assert packer.config == config and packer.capacity == 8
        assert isinstance(packer, EventSource)
    assert {cls.engine for cls in (pt.Packer, pt.ReferencePacker, pt.CompiledPacker)} == set(ENGINES)


@given(pst.replay_cases(), st.integers(1, 30))
def test_every_engine_offers_the_same_views(case: tuple[list[int], pt.PackerConfig], size: int) -> None:
    lengths, config = case
    events = list(pt.Packer(config).events(lengths))
    placements = [e for e in events if type(e) is pt.Placement]
    rows = [[tuple(p) for p in row] for row in pt.Packer(config).placement_rows(lengths)]
    for packer in _engines(config):
        items = list(packer.stream(lengths))
        assert list(unbatched(items)) == events, packer.engine
        assert {type(item) is EventBatch for item in items} == {packer.native_batches}, packer.engine
        if packer.engine != "fast":  # the fast engine's own events are the expectation
            assert list(packer.events(lengths)) == events, packer.engine
        assert list(unbatched(packer.batches(lengths, size=max(size, 4)))) == events, packer.engine
        assert list(packer.placements(lengths)) == placements, packer.engine
        assert [[tuple(p) for p in row] for row in packer.placement_rows(lengths)] == rows, packer.engine


def test_resume_through_the_facade() -> None:
    config = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="continue")
    lengths = [3, 9, 2, 4, 7, 1, 5]
    state = _state_at(pt.Packer(config), lengths, 2)
    full = list(pt.Packer(config).events(lengths))
    for packer in _engines(config):
        if not packer.resumable:
            refused = r"^resume: the compiled engine cannot capture or resume"
            with pytest.raises(InputError, match=refused):
                packer.run(lengths)
            with pytest.raises(InputError, match=refused):
                packer.events(lengths, resume=state)
            with pytest.raises(InputError, match=refused):
                packer.stream(lengths, resume=state)
            continue
        assert _state_at(packer, lengths, 2) == state
        rest = list(packer.events(lengths, resume=state))
        assert 0 < len(rest) < len(full) and full[-len(rest):] == rest, packer.engine
        assert list(unbatched(packer.stream(lengths, resume=state))) == rest
        assert list(unbatched(packer.batches(lengths, size=3, resume=state))) == rest


def _state_at(packer: PackingEngine, lengths: list[int], rows: int) -> Any:
    run = packer.run(lengths)
    seen = 0
    for ev in run:
        if type(ev) is pt.Placement and ev.offset + ev.length == packer.capacity:
            seen += 1
            if seen == rows:
                run.request_state()
    assert run.state is not None
    return run.state
