"""Regression tests for bugs found in review (each failed before its fix)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.audit import evaluation_population
from packing_theory.cli import main
from packing_theory.invariant import InvariantMonitor
from packing_theory.lengths import validate_lengths


def test_audit_text_with_default_bytes_tokenizer(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("hello world\nsecond line\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["audit", "--text", str(text), "--no-plots", "--permutations", "0", "--capacity", "4",
                 "--min-buffer", "1", "--out", str(out), "--no-progress"]) == 0
    doc = json.loads((out / "audit.json").read_text())
    assert doc["corpus"]["tokens"] == len(b"hello world\nsecond line\n") + 1


def test_eval_target_counts_stop_at_the_budget() -> None:
    ev = evaluation_population([3] * 30, capacity=4, min_buffer=1, refill=1, targets=4, prefixes=(),
                               boundaries=(8,))
    assert sum(ev.target_counts) == 4
    ev = evaluation_population([2, 9], capacity=4, min_buffer=1, refill=1, targets=1, prefixes=(),
                               boundaries=(4,))
    assert ev.first_over_capacity_target is None
    assert ev.zero_inclusion == (">4",)


def test_eval_population_counts_distinct_sources_over_passes() -> None:
    ev = evaluation_population([3, 2, 3, 2], capacity=4, min_buffer=1, refill=1, passes=3, targets=30,
                               prefixes=(), boundaries=(8,))
    assert ev.population == (4, 0)
    assert ev.included == (4, 0)
    assert ev.arrived == (4, 0)


def test_demo_honours_eval_options(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main(["audit", "--demo", "--scale", "0.01", "--eval-targets", "4096", "--eval-prefixes", "2048",
                 "--permutations", "0", "--no-plots", "--out", str(out), "--no-progress"]) == 0
    pop = json.loads((out / "audit.json").read_text())["evaluation"]["populations"][0]
    assert pop["targets"] == 4096
    assert [p["targets"] for p in pop["prefixes"]] == [2048]
    assert main(["audit", "--demo", "--eval-lengths", "x.npy", "--out", str(out)]) == 2


def test_violation_reports_the_mass_at_the_boundary() -> None:
    lengths = [9, 3, 9, 2, 12, 5, 1, 1, 7, 30] * 5
    mon = InvariantMonitor(capacity=4, min_buffer=3, track_buffer="requeue-bos")
    pt.feed_all(pt.Packer(capacity=4, min_buffer=3, refill=1, policy="requeue-bos").events(lengths), mon)
    v = mon.first_violation
    assert v is not None and v.buffer is not None
    assert v.buffered_mass == v.buffer.mass


def test_large_capacity_buffer_is_cheap() -> None:
    buf = pt.FastBuffer(1_000_000)
    buf.extend([(0, 0, 0, 999_999, False), (1, 1, 0, 5, False)])
    assert buf.take(1_000_000)[0] == 0
    rep = pt.replay([3, 2_000_000, 7], capacity=1_000_000, min_buffer=1, refill=1, exhausted="drain")
    assert rep.summary().identity_holds()


def test_unsigned_lengths_beyond_int64_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"lengths\[1\] does not fit a signed 64-bit length"):
        validate_lengths(np.array([3, 2**63 + 5], dtype=np.uint64))


def test_numpy_integers_in_the_config() -> None:
    cfg = pt.PackerConfig(capacity=np.int64(4), min_buffer=np.int32(1), refill=np.int64(1),
                          seed=np.int64(3), policy="random-span", rows=np.int64(2))
    assert all(type(v) is int for v in (cfg.capacity, cfg.min_buffer, cfg.refill, cfg.seed, cfg.rows))
    assert pt.replay([9, 3, 9, 2], config=cfg).summary().rows == 2


def test_exhausted_at_row_in_stop_mode() -> None:
    s = pt.replay([3] * 5, capacity=4, min_buffer=2, refill=1).summary()
    assert s.stop_reason == "exhausted" and s.exhausted_at_row == s.rows


def test_cli_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bounds", "--counts", "16384=x"]) == 2  # main() returns the status, never SystemExit
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "16384=x" in err and "THRESHOLD=COUNT" in err
