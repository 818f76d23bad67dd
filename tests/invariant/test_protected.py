"""The protected-set invariant: spec vs incremental set, monitor vs engines, stateful runs."""

from __future__ import annotations

import importlib.util
import sys
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import packing_theory as pt
from packing_theory.engine import make_packer
from packing_theory.engine.events import Arrival, BufferedSpan, Exhausted, Horizon, Placement
from packing_theory.invariant import (
    BufferTracker,
    InvariantMonitor,
    InvariantViolation,
    MonitoredBuffer,
    ProtectedSet,
    protected_invariant_holds,
    protected_keys,
    protected_set,
    protected_violations,
    summarize_buffer,
)
from packing_theory.invariant import strategies as pst
from packing_theory.registry import entries
from packing_theory.testing import scaled_examples

IN_FAMILY = tuple(n for n, e in entries().items() if e.in_family)
"""The policies the proposition applies to (``discard``, ``continue``), as the registry declares them."""
CHECKED_OUTSIDE = tuple(n for n, e in entries().items()
                        if e.kind == "streaming" and not e.in_family and e.protected_set)
"""Out-of-family streaming policies the monitor still checks (requeue-bos, segment-first, random-span)."""

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- ProtectedSet vs spec


@given(st.integers(2, 10), st.integers(1, 8), st.lists(st.integers(1, 30), max_size=80))
def test_protected_set_matches_spec_after_every_arrival(R: int, B: int, lengths: list[int]) -> None:
    ps = ProtectedSet(R, B)
    for i, n in enumerate(lengths):
        before = set(ps)
        evicted = ps.add(i, n)
        ps._check()
        spec = protected_keys(lengths[: i + 1], R, B)
        assert ps.keys() == spec
        assert set(ps) == protected_set(lengths[: i + 1], R, B)
        assert ps.mass == sum(k[0] for k in spec)
        # membership is an interval: only the new arrival can enter, at most one member leaves
        assert set(ps) - before <= {i}
        assert before - set(ps) == ({evicted} if evicted is not None else set())
        if ps.min_key is not None:
            assert ps.min_key == spec[-1]
            assert [ps.rank(occ) for _, occ in spec] == list(range(1, len(spec) + 1))
    assert ps.long_arrivals == sum(n > R for n in lengths)


def test_protected_set_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="min_buffer must be >= 1, got 0"):
        ProtectedSet(4, 0)
    with pytest.raises(TypeError, match="capacity must be an int, got float"):
        ProtectedSet(4.0, 2)  # type: ignore[arg-type]
    ps = ProtectedSet(4, 3)
    ps.add(5, 9)
    with pytest.raises(ValueError, match=r"occurrence must increase.*got 5 after 5"):
        ps.add(5, 9)
    with pytest.raises(KeyError):
        ps.length_of(7)
    with pytest.raises(TypeError, match=r"lengths\[1\] must be an int"):
        protected_keys([3, "x"], 4, 2)  # type: ignore[list-item]


def test_protected_set_b1_is_empty_and_ties_go_to_the_later_arrival() -> None:
    ps = ProtectedSet(2, 1)
    assert ps.add(0, 99) is None and len(ps) == 0 and ps.min_key is None
    ps = ProtectedSet(2, 2)
    ps.add(0, 5)
    assert ps.add(1, 5) == 0 and list(ps) == [1]


# --------------------------------------------------------------------------- full-state predicate


def test_full_state_predicate_reports_each_kind() -> None:
    members = {1: 9, 2: 8, 3: 7, 4: 6}
    spans = [
        BufferedSpan(1, 1, 0, 9, False),  # fine
        BufferedSpan(2, 2, 3, 5, False),  # started
        BufferedSpan(3, 3, 0, 7, False),
        BufferedSpan(3, 3, 0, 7, False),  # duplicated
        BufferedSpan(9, 9, 0, 2, False),
    ]
    found = {(v.kind, v.occurrence, v.rank) for v in protected_violations(spans, members, capacity=5)}
    assert found == {("changed", 2, 2), ("duplicated", 3, 3), ("missing", 4, 4)}
    assert protected_invariant_holds(spans[:1], {1: 9})
    assert not protected_invariant_holds([BufferedSpan(1, 1, 0, 9, True)], {1: 9})
    v = protected_violations(spans, members, capacity=5)[0]
    assert v.buffer == summarize_buffer(spans, 5) and v.buffered_spans == 5
    assert "protected occurrence" in v.describe()
    assert v.to_dict()["kind"] == v.kind


# --------------------------------------------------------------------------- monitor vs the engines


def _run_monitored(lengths: list[int], config: pt.PackerConfig, engine: str = "fast") -> tuple[
        InvariantMonitor, list[Any]]:
    mon = InvariantMonitor.for_packer(config, track_buffer=True)
    tracker = mon.tracker
    assert tracker is not None
    events = []
    arrived: list[int] = []
    outside = False
    for ev in make_packer(engine, config).events(lengths):
        if type(ev) is Placement and not outside:
            # the full-state predicate at the selection boundary
            assert protected_violations(tracker.snapshot(), mon.protected) == []
            assert tracker.mass == mon.buffered_mass >= mon.protected.mass
        elif type(ev) is Exhausted:
            outside = True
        mon.feed(ev)
        mon._check()
        events.append(ev)
        if type(ev) is Arrival:
            arrived.append(ev.length)
            expect = set() if mon.segmented else protected_set(arrived, config.capacity, config.min_buffer)
            assert set(mon.protected) == expect
    horizon = events[-1]
    assert isinstance(horizon, Horizon)
    assert tracker.snapshot() == horizon.buffered
    assert mon.buffered_mass == sum(s.length for s in horizon.buffered)
    return mon, events


@given(pst.replay_cases(policies=IN_FAMILY))
def test_no_violation_for_discard_and_continue(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    mon, events = _run_monitored(lengths, config)
    note(f"events={events}")
    assert mon.violation_count == 0, mon.first_violation
    n_sel = sum(type(e) is Placement for e in events)
    assert mon.selections == n_sel
    if config.exhausted == "stop":
        assert mon.selections_outside == 0


@given(pst.replay_cases(policies=IN_FAMILY, max_capacity=6, max_min_buffer=4, max_docs=25))
def test_no_violation_with_reference_engine(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    mon, _ = _run_monitored(lengths, config, engine="reference")
    assert mon.ok


@given(pst.replay_cases(policies=CHECKED_OUTSIDE))
def test_tracker_rebuilds_every_policy(case: tuple[list[int], pt.PackerConfig]) -> None:
    """The buffer tracker agrees with the engine's horizon for every policy."""
    lengths, config = case
    tracker = BufferTracker(config.capacity, config.policy)
    events = list(pt.Packer(config).events(lengths))
    for ev in events:
        tracker.feed(ev)
        tracker._check()
    assert tracker.snapshot() == tracker.horizon.buffered  # type: ignore[union-attr]


def test_segment_first_originals_are_not_protected() -> None:
    """With original occurrences as units, segment-first starts a protected long document."""
    lengths = [9, 9, 1, 1]
    config = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="segment-first")
    vacuous = InvariantMonitor.for_packer(config)
    pt.feed_all(pt.Packer(config).events(lengths), vacuous)
    assert vacuous.ok and len(vacuous.protected) == 0
    originals = InvariantMonitor.for_packer(config, segmented=False)
    pt.feed_all(pt.Packer(config).events(lengths), originals)
    assert not originals.ok
    assert originals.first_violation is not None and originals.first_violation.kind == "selected"


def test_drain_selections_are_outside_and_not_reported() -> None:
    config = pt.PackerConfig(capacity=2, min_buffer=4, refill=1, exhausted="drain")
    mon = InvariantMonitor.for_packer(config)
    pt.feed_all(pt.Packer(config).events([5, 6, 7]), mon)
    assert mon.ok and mon.selections_checked == 0 and mon.selections_outside == mon.selections > 0


def test_raise_mode_and_callback() -> None:
    seen: list[Any] = []
    mon = InvariantMonitor(2, 2, on_violation=seen.append)
    mon.on_arrival(0, 3)
    mon.on_arrival(1, 3)
    assert mon.on_select(0, buffered=2)
    assert not mon.on_select(1, buffered=2)
    assert [v.occurrence for v in seen] == [1]
    mon = InvariantMonitor(2, 2, on_violation="raise")
    mon.on_arrival(0, 3)
    mon.on_arrival(1, 3)
    with pytest.raises(InvariantViolation, match="protected occurrence 1") as info:
        mon.on_select(1)
    assert info.value.violation.kind == "selected"


def test_low_level_api_outside_and_removed() -> None:
    mon = InvariantMonitor(2, 2)
    mon.on_arrival(0, 3)
    mon.on_arrival(1, 3)
    assert mon.on_select(1, buffered=1)  # fewer than B spans: outside, not reported
    assert mon.ok and mon.selections_outside == 1
    mon.on_arrival(2, 1)
    assert not mon.on_select(2, buffered=2)  # occurrence 1 is still protected but was started
    assert mon.first_violation is not None and mon.first_violation.kind == "removed"
    mon._check()
    flushed = InvariantMonitor(2, 2)
    flushed.on_arrival(0, 3)
    flushed.on_remove(0)
    flushed.on_arrival(1, 1)
    assert not flushed.on_select(1, buffered=2)
    evicted = InvariantMonitor(2, 2)
    evicted.on_arrival(0, 3)
    evicted.on_remove(0)
    evicted.on_arrival(1, 3)  # a larger key evicts 0 from K: no longer a violation
    assert evicted.on_select(1 - 1, buffered=2) and evicted.ok


def test_monitor_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="on_violation must be"):
        InvariantMonitor(4, 2, on_violation="shout")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="capacity must be >= 2, got 1"):
        InvariantMonitor(1, 2)
    with pytest.raises(TypeError, match="segmented must be a bool"):
        InvariantMonitor(4, 2, segmented=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="policy must be one of"):
        InvariantMonitor(4, 2, track_buffer="shuffle")  # type: ignore[arg-type]
    mon = InvariantMonitor(4, 2, on_violation="raise")
    with pytest.raises(ValueError, match="length must be >= 1, got 0"):
        mon.on_arrival(0, 0)
    mon.on_arrival(3, 5)
    with pytest.raises(ValueError, match="occurrence must increase"):
        mon.on_arrival(2, 5)
    with pytest.raises(ValueError, match="occurrence must increase"):
        mon.feed(Arrival(1, 1, 0, 1))
    # in record mode the same calls are recorded as misuses and change nothing
    rec = InvariantMonitor(4, 2)
    assert rec.on_arrival(0, 0) is False
    rec.on_arrival(3, 5)
    rec.on_arrival(2, 5)
    rec.feed(Arrival(1, 1, 0, 1))
    assert [m.kind for m in rec.misuses] == ["bad-value", "out-of-order", "out-of-order"]
    assert rec.arrivals == 1 and rec.buffered_mass == 5 and not rec.ok and rec.violation_count == 0
    rec._check()


def test_report_and_observe_pass_through() -> None:
    config = pt.PackerConfig(capacity=8, min_buffer=3, refill=2, policy="continue", passes=2)
    lengths = [20, 3, 11, 9, 2, 30, 5, 8]
    mon = InvariantMonitor.for_packer(config, max_recorded=0)
    events = list(mon.observe(pt.Packer(config).events(lengths)))
    assert events == list(pt.Packer(config).events(lengths))
    report = mon.result().to_dict()
    assert report["violations"] == 0 and report["selections"] == sum(type(e) is Placement for e in events)
    assert report["long_arrivals"] == 2 * sum(n > 8 for n in lengths)


# --------------------------------------------------------------------------- MonitoredBuffer


def test_monitored_buffer_token_lists_and_spans() -> None:
    mon = InvariantMonitor(4, 2)
    buf: MonitoredBuffer[Any] = MonitoredBuffer(mon)
    buf.extend([[0, 1, 2, 3, 4, 5], ([0, 1, 2, 3, 4, 5, 6], 0), [0, 9]])
    assert len(buf) == 3 and buf.occurrence_at(1) == 1 and list(buf)[2] == [0, 9]
    doc = buf.pop(2)
    assert doc == [0, 9] and mon.ok
    first = buf.pop(0)  # occurrence 0 (L=6) is protected only when B - 1 >= 2; here |K| = 1 -> (7, 1)
    assert mon.ok
    buf.keep(0, first[3:])
    assert buf.occurrence_at(0) == 0 and buf[0] == [3, 4, 5]
    buf[0] = [4, 5]
    with pytest.raises(ValueError, match="would duplicate its span"):  # a second continuation of one pop
        buf.requeue([0, 5])
    assert len(buf) == 2 and buf.occurrence_at(0) == 0
    buf._check()
    buf.pop(1)  # the protected (tokens, start) span
    assert mon.violation_count == 1 and mon.first_violation is not None
    assert mon.first_violation.occurrence == 1
    assert buf.flush() and len(buf) == 0
    with pytest.raises(TypeError, match="monitor must be an InvariantMonitor"):
        MonitoredBuffer(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep\\(\\) needs a previous pop"):
        MonitoredBuffer(InvariantMonitor(4, 2)).keep(0, [1])


def test_example_loader_runs_and_catches_the_bug() -> None:
    path = ROOT / "examples" / "autoresearch_monitored_loader.py"
    spec = importlib.util.spec_from_file_location("autoresearch_monitored_loader", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    docs = module.synthetic_documents(800)
    for suffix in ("discard", "continue"):
        mon = module.run(12, suffix=suffix, documents=docs, buffer_size=60)
        assert mon.ok and mon.selections_checked > 0
        mon._check()
    bad = module.run(12, suffix="discard", fallback="oldest", documents=docs, buffer_size=60)
    assert not bad.ok


def test_example_loader_matches_the_engine() -> None:
    """The example loader is the discard engine: same selections on the same documents."""
    path = ROOT / "examples" / "autoresearch_monitored_loader.py"
    spec = importlib.util.spec_from_file_location("autoresearch_monitored_loader_2", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    docs = module.synthetic_documents(600, seed=3)
    T, rows, B = 64, 24, 30
    loader = module.make_dataloader(docs, rows, T, buffer_size=B, tokenizer_batch_size=16)
    inputs, targets, _ = next(loader)
    packer = pt.Packer(capacity=T + 1, min_buffer=B, refill=16, rows=rows)
    expected = list(packer.token_rows(docs))
    assert [r[:-1] for r in expected] == inputs and [r[1:] for r in expected] == targets


# --------------------------------------------------------------------------- stateful


class _Feed:
    """An endless-looking length iterator fed by the state machine."""

    def __init__(self) -> None:
        self.queue: deque[int] = deque()

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> int:
        if not self.queue:  # the machine's precondition keeps this from happening
            raise AssertionError("the stream ran dry")
        return self.queue.popleft()


class EngineBesideMonitor(RuleBasedStateMachine):
    """The fast engine and the monitor on a stream that rules extend (new documents, new passes)."""

    @initialize(
        R=st.integers(2, 8),
        B=st.integers(1, 6),
        refill=pst.refill_batches(max_batch=4),
        policy=st.sampled_from(["discard", "continue", "segment-first"]),
    )
    def setup(self, R: int, B: int, refill: int | tuple[int, ...], policy: str) -> None:
        self.config = pt.PackerConfig(capacity=R, min_buffer=B, refill=refill, policy=policy)  # type: ignore[arg-type]
        self.feed = _Feed()
        self.events = pt.Packer(self.config).events(self.feed)
        self.monitor = InvariantMonitor.for_packer(self.config, track_buffer=True)
        self.corpus: list[int] = []
        self.arrived: list[int] = []
        self.need = B + max(self.config.batch_sizes)

    @rule(docs=st.data())
    def add_documents(self, docs: st.DataObject) -> None:
        R = self.config.capacity
        new = docs.draw(pst.arrival_streams(capacity=R, max_size=12, max_value=3 * R))
        self.corpus += new
        self.feed.queue.extend(new)

    @precondition(lambda self: bool(self.corpus))
    @rule()
    def repeat_corpus(self) -> None:
        """Another pass over the corpus so far, without a buffer reset."""
        self.feed.queue.extend(self.corpus)

    @precondition(lambda self: len(self.feed.queue) >= self.need)
    @rule(selections=st.integers(1, 6))
    def select(self, selections: int) -> None:
        tracker = self.monitor.tracker
        assert tracker is not None
        done = 0
        while done < selections and len(self.feed.queue) >= self.need:
            ev = next(self.events)
            if type(ev) is Placement:
                # a selection boundary: the full-state predicate and the mass identity
                assert protected_violations(tracker.snapshot(), self.monitor.protected) == []
                assert tracker.mass == self.monitor.buffered_mass
                if self.config.policy == "segment-first":
                    assert ev.offset > 0 or not ev.crop, "segment-first cropped at a row start"
                    if ev.offset == 0:  # a row start takes the largest buffered span, whole
                        assert ev.length == max(s.length for s in tracker.snapshot())
                done += 1
            elif type(ev) is Arrival:
                self.arrived.append(ev.length)
            self.monitor.feed(ev)
            assert type(ev) is not Exhausted and type(ev) is not Horizon

    @invariant()
    def monitor_agrees(self) -> None:
        mon = self.monitor
        mon._check()
        assert mon.ok, mon.first_violation
        if self.config.policy == "segment-first":
            assert len(mon.protected) == 0
            assert mon.tracker is not None
            assert all(s.length <= self.config.capacity for s in mon.tracker.snapshot())
        else:
            expect = protected_set(self.arrived, self.config.capacity, self.config.min_buffer)
            assert set(mon.protected) == expect

    @invariant()
    def full_state_holds(self) -> None:
        tracker = self.monitor.tracker
        assert tracker is not None
        assert protected_invariant_holds(tracker.snapshot(), self.monitor.protected)
        assert tracker.mass >= self.monitor.protected.mass  # the mass corollary


TestEngineBesideMonitor = EngineBesideMonitor.TestCase
TestEngineBesideMonitor.pytestmark = [pytest.mark.slow]  # type: ignore[attr-defined]  # over 10 s
TestEngineBesideMonitor.settings = settings(max_examples=scaled_examples(45), stateful_step_count=30,
                                            deadline=None)
