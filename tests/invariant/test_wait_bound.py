"""The ``bounded-wait`` policy: rule, engines, proved bound, tightness, monitor, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.engine import FastBuffer, make_packer
from packing_theory.engine.batches import batched
from packing_theory.engine.policies import DEFAULT_MAX_WAIT, overdue, start_delay_bound
from packing_theory.invariant import OUTSIDE_FAMILY, InvariantMonitor
from packing_theory.invariant import strategies as pst
from packing_theory.invariant.wait_bound import StartDelayExceeded, StartDelayMonitor, StartDelayViolation

# --------------------------------------------------------------------------- configuration


def test_bound_formula_and_threshold() -> None:
    cfg = pt.PackerConfig(policy="bounded-wait", max_wait=16)
    assert cfg.wait_threshold == 16 and cfg.start_delay_bound == 16 + 1000 + 128 - 2
    assert pt.PackerConfig(policy="bounded-wait").wait_threshold == DEFAULT_MAX_WAIT
    assert pt.PackerConfig(policy="bounded-wait", min_buffer=4, refill=(2, 7, 3),
                           max_wait=0).start_delay_bound == 0 + 4 + 7 - 2
    # other policies ignore max_wait (as they ignore seed) and have no bound
    cfg = pt.PackerConfig(policy="continue", max_wait=3)
    assert cfg.wait_threshold is None and cfg.start_delay_bound is None
    assert overdue(7, 3, 3) and not overdue(6, 3, 3)


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, ValueError), (True, TypeError), (2.5, TypeError), ("3", TypeError)],
)
def test_max_wait_is_validated(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_wait"):
        pt.PackerConfig(policy="bounded-wait", max_wait=value)  # type: ignore[arg-type]


def test_max_wait_accepts_numpy_ints() -> None:
    cfg = pt.PackerConfig(policy="bounded-wait", max_wait=np.int64(5))
    assert cfg.max_wait == 5 and type(cfg.max_wait) is int


@pytest.mark.parametrize(
    ("args", "match"),
    [((-1, 3, 2), "max_wait"), ((0, 0, 2), "min_buffer"), ((0, 3, 0), "refill"),
     ((0, 3, []), "refill"), ((0, 3, [2, 0]), r"refill\[1\]")],
)
def test_start_delay_bound_errors(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        start_delay_bound(*args)


def test_other_policies_ignore_max_wait() -> None:
    lengths = [30, 3, 11, 9, 2, 40, 5, 8] * 5
    for policy in ("discard", "continue", "segment-first"):
        a = pt.replay(lengths, capacity=8, min_buffer=3, refill=2, policy=policy)
        b = pt.replay(lengths, capacity=8, min_buffer=3, refill=2, policy=policy, max_wait=0)
        assert a.events == b.events


# --------------------------------------------------------------------------- engines


@st.composite
def bounded_wait_cases(draw: st.DrawFn) -> tuple[list[int], dict[str, Any]]:
    """Small streams with ties and boundary lengths, small B, refill sequences, A in 0..5."""
    R = draw(st.integers(2, 12))
    special = st.sampled_from([1, 2, R - 1, R, R + 1, 2 * R, 3 * R])
    length = st.one_of(special, st.integers(1, 4 * R))
    pool = draw(st.lists(length, min_size=1, max_size=4))
    lengths = draw(st.lists(st.one_of(st.sampled_from(pool), length), min_size=1, max_size=60))
    kwargs: dict[str, Any] = dict(
        capacity=R,
        min_buffer=draw(st.integers(1, 6)),
        refill=draw(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=3))),
        policy="bounded-wait",
        max_wait=draw(st.integers(0, 5)),
        passes=draw(st.integers(1, 3)),
        exhausted=draw(st.sampled_from(["stop", "drain"])),
    )
    budget = draw(st.sampled_from(["none", "rows", "targets"]))
    if budget == "rows":
        kwargs["rows"] = draw(st.integers(0, 30))
    elif budget == "targets":
        kwargs["targets"] = draw(st.integers(0, 30 * R))
    return [max(1, n) for n in lengths], kwargs


@given(bounded_wait_cases())
def test_fast_equals_reference(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kwargs = case
    fast = pt.replay(lengths, engine="fast", **kwargs)
    ref = pt.replay(lengths, engine="reference", **kwargs)
    note(f"fast={fast.events}")
    assert fast.events == ref.events


@given(bounded_wait_cases())
def test_proved_bound_full_rows_no_discard(case: tuple[list[int], dict[str, Any]]) -> None:
    """What BoundedWait.v proves, observed on both engines (drain mode included: the
    relation needs no minimum occupancy for a selection)."""
    lengths, kwargs = case
    config = pt.PackerConfig(**kwargs)
    for engine in ("fast", "reference"):
        mon = StartDelayMonitor.for_packer(config)
        for ev in make_packer(engine, config).events(lengths):
            mon.feed(ev)
            mon._check()
        report = mon.result()
        assert report.ok, (engine, mon.violations[:3])
        assert report.discarded_tokens == 0 and report.rows_full
        assert report.max_start_delay_rows is None or report.max_start_delay_rows <= config.start_delay_bound
        rep = pt.replay(lengths, engine=engine, config=config)
        s = rep.summary()
        assert s.identity_holds() and s.discarded_tokens == 0 and s.added_bos_tokens == 0


@given(pst.replay_cases(policies=("bounded-wait",)))
def test_public_strategy_replays_respect_the_bound(case: tuple[list[int], pt.PackerConfig]) -> None:
    """Every replay the public property strategy draws (A drawn small by packer_configs)."""
    lengths, config = case
    assert config.policy == "bounded-wait" and config.max_wait is not None and config.max_wait <= 8
    mon = StartDelayMonitor.for_packer(config)
    events = list(pt.Packer(config).events(lengths))
    assert events == list(pt.ReferencePacker(config).events(lengths))
    assert pt.feed_all(events, mon)[0].ok, mon.violations[:3]


def test_forced_start_example() -> None:
    """R=4, B=2, A=0: the oldest unstarted span is forced at the next row start."""
    rep = pt.replay([9, 1, 2, 3, 3], capacity=4, min_buffer=2, refill=1, policy="bounded-wait",
                    max_wait=0, rows=4)
    got = [(p.row, p.offset, p.occurrence, p.start, p.length, p.crop) for p in rep.placements]
    # row 0: best fit takes 1 (occ 1), 2 (occ 2), then nothing fits: crop the shortest (occ 3)
    # row 1: occ 0 (arrived in row 0, never started) is overdue: forced first, cropped to R
    assert got[:4] == [(0, 0, 1, 0, 1, False), (0, 1, 2, 0, 2, False), (0, 3, 3, 0, 1, True),
                       (1, 0, 0, 0, 4, True)]
    plain = pt.replay([9, 1, 2, 3, 3], capacity=4, min_buffer=2, refill=1, policy="continue", rows=4)
    assert 0 not in {p.occurrence for p in plain.placements[:4]}


# --------------------------------------------------------------------------- tightness


def tight_stream(R: int, B: int, k: int, A: int) -> tuple[list[int], int]:
    """The construction of BoundedWaitExec.v's bw_bound_attained_example, for any R > k, B + k >= 3.

    A long span H (length (A + 2) R) is cropped first and its continuation, as the
    shortest span, fills rows 0..A; then one overdue span is forced per row, oldest
    first. Before the last batch, ``m`` one-token spans are consumed in row 0 so that
    the buffer drops to exactly B - 1 and the last batch (k spans, the victim last)
    arrives in row 0 too: B + k - 2 unstarted spans precede or are the victim.
    Returns the lengths and the victim's occurrence id.
    """
    LH = (A + 2) * R
    X = LH + 1
    if B >= 2:
        m = k * math.ceil(B / k) - (B - 1)
        assert 1 <= m < R
        lengths = [LH] + [X] * (B - 2) + [1] * m + [X] * k
    else:
        lengths = [LH] + [X] * (k - 1)
    return lengths, len(lengths) - 1


@pytest.mark.parametrize(
    ("B", "k"), [(B, k) for B in (1, 2, 3, 5, 8) for k in (1, 2, 3, 4) if B + k >= 3]
)  # B = refill = 1: test_gap_when_b_and_refill_are_one
@pytest.mark.parametrize("A", [0, 1, 3, 7])
def test_bound_is_attained(B: int, k: int, A: int) -> None:
    R = k + 3
    lengths, victim = tight_stream(R, B, k, A)
    config = pt.PackerConfig(capacity=R, min_buffer=B, refill=k, policy="bounded-wait", max_wait=A)
    D = config.start_delay_bound
    assert A + B + k - 2 == D
    for engine in ("fast", "reference"):
        mon = StartDelayMonitor.for_packer(config)
        rep = pt.replay(lengths, engine=engine, config=config, on_event=mon.feed)
        first = next(p for p in rep.placements if p.occurrence == victim)
        assert mon.arrival_row(victim) == 0
        assert first.row == D, (engine, first, D)  # the bound is attained exactly
        assert mon.result().max_start_delay_rows == D and mon.ok


@given(st.lists(st.integers(1, 40), min_size=1, max_size=50), st.integers(2, 9), st.integers(0, 6))
def test_gap_when_b_and_refill_are_one(lengths: list[int], R: int, A: int) -> None:
    """B = refill = 1: the buffer holds one span, taken in its arrival row, so every delay
    is 0 while the bound is A: the gap is exactly A."""
    config = pt.PackerConfig(capacity=R, min_buffer=1, refill=1, policy="bounded-wait", max_wait=A)
    mon = StartDelayMonitor.for_packer(config)
    pt.feed_all(pt.Packer(config).events(lengths), mon)
    assert config.start_delay_bound == A
    assert set(mon.delay_counts) == {0}


# --------------------------------------------------------------------------- the monitors


def test_protected_set_monitor_reports_not_applicable() -> None:
    lengths, _ = tight_stream(5, 3, 2, 1)
    config = pt.PackerConfig(capacity=5, min_buffer=3, refill=2, policy="bounded-wait", max_wait=1)
    mon = InvariantMonitor.for_packer(config)
    report = pt.feed_all(pt.Packer(config).events(lengths), mon)[0].to_dict()
    assert report["applicable"] is False and report["not_applicable"] == OUTSIDE_FAMILY["bounded-wait"]
    assert report["violations"] == 0 and report["selections_checked"] == 0
    assert report["selections_outside"] == report["selections"] > 0
    assert mon.on_select(0, buffered=10) and mon.selections_outside == report["selections"] + 1
    # the proposition really fails here: a monitor that checks finds forced protected starts
    forced = InvariantMonitor.for_packer(config, not_applicable=None)
    assert pt.feed_all(pt.Packer(config).events(lengths), forced)[0].violations > 0
    for policy in ("discard", "continue"):
        assert InvariantMonitor.for_packer(pt.PackerConfig(policy=policy)).result().applicable


def _events(policy: str, lengths: list[int], **kw: Any) -> list[pt.Event]:
    return list(pt.Packer(capacity=4, min_buffer=2, refill=1, policy=policy, **kw).events(lengths))


def test_start_delay_monitor_finds_each_kind() -> None:
    # discard: a discard event, and the long span never starts: overdue at a bound of 1 row
    mon = StartDelayMonitor(4, bound=1)
    pt.feed_all(_events("discard", [9, 3, 3, 3, 3, 3, 3, 3]), mon)
    kinds = {v.kind for v in mon.violations}
    assert {"discard", "overdue"} <= kinds and not mon.ok
    # continue, drained: the protected long span starts only when the buffer drains, late
    mon = StartDelayMonitor(4, bound=0)
    pt.feed_all(_events("continue", [9, 1, 2, 3, 3], exhausted="drain"), mon)
    assert "late-start" in {v.kind for v in mon.violations}
    # padding, repeats, filtered tokens and a broken row layout (a peer-like stream)
    mon = StartDelayMonitor(4)
    stream: list[pt.Event] = [
        pt.Arrival(0, 0, 0, 3), pt.Arrival(1, 1, 0, 0), pt.Filtered(1, 1, 0, "empty"),
        pt.Placement(0, 0, 0, 0, 0, 3, False, False), pt.Padding(0, 3, 1),
        pt.Repeat(1, 0, 0, 0, 2, 1), pt.Placement(1, 2, 0, 0, 0, 1, False, False),
        pt.Horizon(1, 2, "exhausted", ()),
    ]
    report = pt.feed_all(stream, mon)[0]
    assert {v.kind for v in mon.violations} == {"filtered", "padding", "repeat", "row-layout"}
    assert report.padding_tokens == 1 and report.repeated_tokens == 1 and not report.rows_full
    assert mon.violations[0].describe().startswith("filtered: occurrence 1")


def test_start_delay_monitor_modes_and_errors() -> None:
    seen: list[StartDelayViolation] = []
    mon = StartDelayMonitor(4, bound=1, on_violation=seen.append, max_recorded=1)
    pt.feed_all(_events("discard", [9, 3, 3, 3, 3, 3, 3, 3]), mon)
    assert len(mon.violations) == 1 and len(seen) == mon.violation_count > 1
    with pytest.raises(StartDelayExceeded, match="discard"):
        pt.feed_all(_events("discard", [9, 3, 3, 3, 3, 3]),
                    StartDelayMonitor(4, bound=1, on_violation="raise"))
    with pytest.raises(ValueError, match="on_violation"):
        StartDelayMonitor(4, on_violation="shout")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bound"):
        StartDelayMonitor(4, bound=-1)
    with pytest.raises(ValueError, match="dense"):
        StartDelayMonitor(4).feed(pt.Arrival(3, 3, 0, 2))
    with pytest.raises(ValueError, match="not arrived"):
        StartDelayMonitor(4).feed(pt.Placement(0, 0, 0, 0, 0, 2, False, False))
    mon = StartDelayMonitor(4)
    assert mon.result().max_start_delay_rows is None and mon.oldest_unstarted() is None


def test_check_detects_corruption() -> None:
    mon = StartDelayMonitor(4)
    pt.feed_all(_events("continue", [3, 5, 2]), mon)
    mon._check()
    mon.starts.started += 1
    with pytest.raises(AssertionError):
        mon._check()


# --------------------------------------------------------------------------- FastBuffer.remove


R_BUF = 9


class RemovingBufferMachine(RuleBasedStateMachine):
    """FastBuffer vs a list model: appends, the loader's take with continue, and the forced
    start (remove a given span; a long one keeps its suffix in place), ``_check()`` always."""

    def __init__(self) -> None:
        super().__init__()
        self.buf = FastBuffer(R_BUF)
        self.model: list[tuple[int, tuple[int, int, int, int, bool]]] = []
        self.occ = 0

    @rule(lengths=st.lists(st.one_of(st.integers(1, 3 * R_BUF), st.sampled_from([R_BUF, R_BUF + 1])),
                           min_size=1, max_size=4))
    def extend(self, lengths: list[int]) -> None:
        recs = [(self.occ + i, self.occ + i, 0, n, False) for i, n in enumerate(lengths)]
        self.occ += len(lengths)
        first = self.buf._next
        self.buf.extend(recs)
        self.model += [(first + i, rec) for i, rec in enumerate(recs)]

    @precondition(lambda self: bool(self.model))
    @rule(remaining=st.integers(1, R_BUF))
    def take(self, remaining: int) -> None:
        fits = [(i, x) for i, x in enumerate(self.model) if x[1][3] <= remaining]
        if fits:
            best = max(x[1][3] for _, x in fits)
            i, (seq, rec) = next((i, x) for i, x in fits if x[1][3] == best)
        else:
            short = min(x[1][3] for x in self.model)
            i, (seq, rec) = next((i, x) for i, x in enumerate(self.model) if x[1][3] == short)
        assert self.buf.take(remaining) == (seq, rec, not fits)
        del self.model[i]
        if not fits:
            new = (rec[0], rec[1], rec[2] + remaining, rec[3] - remaining, False)
            self.buf.replace(seq, new)
            self.model.insert(i, (seq, new))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def forced(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.model) - 1))
        seq, rec = self.model[i]
        assert self.buf.remove(seq) == rec
        del self.model[i]
        if rec[3] > R_BUF:
            new = (rec[0], rec[1], rec[2] + R_BUF, rec[3] - R_BUF, False)
            self.buf.replace(seq, new)
            self.model.insert(i, (seq, new))

    @invariant()
    def consistent(self) -> None:
        self.buf._check()
        assert [tuple(s) for s in self.buf.snapshot()] == [r for _, r in self.model]


TestRemovingBufferMachine = RemovingBufferMachine.TestCase


def test_remove_unknown_seq_raises() -> None:
    buf = FastBuffer(4)
    with pytest.raises(KeyError):
        buf.remove(0)


def test_stale_long_entries_are_compacted() -> None:
    buf = FastBuffer(4)
    seqs = [buf.append((i, i, 0, 10 + i, False)) for i in range(8)]
    for s in seqs[:5]:
        buf.remove(s)
        buf._check()
    assert len(buf._long) <= 2 * (len(buf) + 1)
    assert [buf.take(4)[1][3] for _ in range(3)] == [15, 16, 17]
    with pytest.raises(IndexError):
        buf.take(4)


# --------------------------------------------------------------------------- command line


def _npy(tmp_path: Path, values: list[int]) -> str:
    path = tmp_path / "lengths.npy"
    np.save(path, np.array(values, dtype=np.int64))
    return str(path)


def test_cli_replay_reports_delay_and_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lengths, _ = tight_stream(5, 3, 2, 1)
    path = _npy(tmp_path, lengths)
    base = ["--lengths", path, "--capacity", "5", "--min-buffer", "3", "--refill", "2"]
    assert main(["replay", *base, "--policy", "bounded-wait", "--max-wait", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["max_start_delay_rows"] == out["start_delay_bound_rows"] == 4
    assert out["discarded_tokens"] == 0 and out["max_wait"] == 1
    assert main(["replay", *base, "--policy", "continue", "--json"]) == 0
    assert "start_delay_bound_rows" not in json.loads(capsys.readouterr().out)
    assert main(["replay", *base, "--policy", "continue", "--max-wait", "1"]) == 2
    assert "--max-wait: policy 'continue' takes no option 'max_wait'" in capsys.readouterr().err


def test_cli_check_bounded_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    path = _npy(tmp_path, np.maximum(1, rng.lognormal(3, 1.3, 2000).astype(np.int64)).tolist())
    base = ["check", "--lengths", path, "--capacity", "65", "--min-buffer", "40", "--refill", "8",
            "--policy", "bounded-wait", "--max-wait", "3", "--passes", "2"]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protected_set"]["applicable"] is False and out["in_hypotheses"] is False
    assert out["violations"] == 0 and out["start_delay_bound_rows"] == 3 + 40 + 8 - 2
    assert 0 < out["max_start_delay_rows"] <= out["start_delay_bound_rows"]
    assert out["bounded_wait"]["rows_full"] and out["bounded_wait"]["discarded_tokens"] == 0
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "not applicable" in text and "max_start_delay_rows" in text
    assert main(["check", "--lengths", path, "--max-wait", "2"]) == 2
    assert main(["audit", "--lengths", path, "--policy", "discard", "--max-wait", "2", "--no-plots"]) == 2


def test_start_delay_monitor_reads_batches_like_events() -> None:
    cfg = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="bounded-wait", max_wait=1)
    lengths = [3, 9, 2, 5, 7, 1, 4, 6, 2]
    events = list(pt.Packer(cfg).events(lengths))
    one = pt.feed_all(events, StartDelayMonitor.for_packer(cfg))[0]
    for size in (1, 2, 5, 100):
        mon = StartDelayMonitor.for_packer(cfg)
        for b in batched(events, size):
            mon.feed(b)
        assert mon.result() == one  # a batch was silently ignored: 0 arrivals, 0 rows
    assert one.arrivals == len(lengths)
    with pytest.raises(TypeError, match="ev must be a packing_theory event"):
        StartDelayMonitor.for_packer(cfg).feed("garbage")  # type: ignore[arg-type]

