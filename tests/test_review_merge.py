"""Regression tests for the review of the reliability merge: each failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.engine.batches import batched
from packing_theory.invariant import InvariantMonitor
from packing_theory.invariant.wait_bound import StartDelayMonitor

CFG = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="bounded-wait", max_wait=1)
LENGTHS = [3, 9, 2, 5, 7, 1, 4, 6, 2]


def test_not_applicable_monitor_keeps_its_invariants_and_refuses_misuse() -> None:
    mon = InvariantMonitor.for_packer(CFG)
    assert mon.not_applicable is not None
    for ev in pt.Packer(CFG).events(LENGTHS):
        mon.feed(ev)
        mon._check()  # failed at the Horizon: the arrival bookkeeping was not closed
    assert mon.ok and not mon.misuses
    mon.feed(pt.Arrival(len(LENGTHS) + 5, 0, 0, 4))  # after the Horizon
    mon.feed(pt.Placement(0, 0, 99, 0, 0, 1, False, False))  # after the Horizon
    mon.feed("garbage")  # type: ignore[arg-type]
    assert len(mon.misuses) == 3 and not mon.ok
    mon._check()


def test_not_applicable_monitor_refuses_a_placement_that_never_arrived() -> None:
    mon = InvariantMonitor.for_packer(CFG)
    mon.feed(pt.Arrival(0, 0, 0, 3))
    mon.feed(pt.Placement(0, 0, 7, 0, 0, 3, False, False))
    assert [m.kind for m in mon.misuses] == ["unknown-occurrence"]
    assert mon.selections == 0
    raising = InvariantMonitor.for_packer(CFG, on_violation="raise")
    with pytest.raises(pt.invariant.MonitorMisuse):
        raising.feed("garbage")  # type: ignore[arg-type]


def test_start_delay_monitor_reads_batches_like_events() -> None:
    events = list(pt.Packer(CFG).events(LENGTHS))
    one = pt.feed_all(events, StartDelayMonitor.for_packer(CFG))[0]
    for size in (1, 2, 5, 100):
        mon = StartDelayMonitor.for_packer(CFG)
        for b in batched(events, size):
            mon.feed(b)
        assert mon.result() == one  # a batch was silently ignored: 0 arrivals, 0 rows
    assert one.arrivals == len(LENGTHS)
    with pytest.raises(TypeError, match="ev must be a packing_theory event"):
        StartDelayMonitor.for_packer(CFG).feed("garbage")  # type: ignore[arg-type]


def test_misuse_after_the_horizon_counts_the_same_batched() -> None:
    cfg = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="continue")
    events = list(pt.Packer(cfg).events(LENGTHS))
    tail = [e for e in events if not isinstance(e, pt.Horizon)][-6:]
    per_event = InvariantMonitor.for_packer(cfg)
    for e in events + tail:
        per_event.feed(e)
    as_batch = InvariantMonitor.for_packer(cfg)
    for b in [*batched(events, 1000), *batched(tail, 1000)]:
        as_batch.feed(b)
    assert len(per_event.misuses) == len(as_batch.misuses) == 6


@pytest.mark.parametrize(("argv", "needle"), [
    (["audit", "--demo", "--permutation-seed", "-1"], "--permutation-seed must be >= 0, got -1"),
    (["audit", "--demo", "--eval-targets", "-5"], "--eval-targets must be >= 1, got -5"),
    (["audit", "--lengths", "{npy}", "--eval-targets", "4096"],
     "--eval-targets 4096 needs an evaluation stream"),
    (["audit", "--demo", "--policy", "bounded-wait", "--max-wait", "-1"],
     "--max-wait must be >= 0 (rows), got -1"),
    (["bounds", "--lengths", "{npy}", "--capacity", "1"], "--capacity must be >= 2, got 1"),
])
def test_cli_refusals_name_the_option(argv: list[str], needle: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    npy = tmp_path / "l.npy"
    np.save(npy, np.array([5, 9, 3, 7], dtype=np.int64))
    argv = [a.replace("{npy}", str(npy)) for a in argv]
    if argv[0] == "audit":
        argv += ["--no-plots", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "out" / "audit.json").exists()


def test_audit_report_records_the_wait_threshold(tmp_path: Path) -> None:
    npy = tmp_path / "l.npy"
    np.save(npy, np.random.default_rng(3).integers(1, 40, 400))
    waits = {}
    for a in ("0", "7"):
        out = tmp_path / f"o{a}"
        assert main(["audit", "--lengths", str(npy), "--capacity", "16", "--min-buffer", "8",
                     "--refill", "2", "--policy", "bounded-wait,continue", "--max-wait", a,
                     "--permutations", "0", "--no-plots", "--no-progress", "--out", str(out)]) == 0
        waits[a] = json.loads((out / "audit.json").read_text())["settings"]["max_wait"]
    assert waits == {"0": 0, "7": 7}
