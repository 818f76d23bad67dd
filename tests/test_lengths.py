"""Exact token totals, or a clear refusal: lengths near 2**63 and totals past it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.audit import Ledger
from packing_theory.audit.ledger import MAX_EXACT_TOKENS
from packing_theory.cli import main
from packing_theory.engine.events import Arrival
from packing_theory.engine.policies import MAX_SEGMENTS, segment
from packing_theory.engine.summary import SummaryAccumulator
from packing_theory.invariant import InvariantMonitor
from packing_theory.lengths import INT64_MAX, exact_sum, load_lengths, validate_lengths
from packing_theory.orchestration import corpus_summary

HUGE = [2**62, 2**62, 5, 3000, INT64_MAX, 2**62 - 7]
HUGE_TOTAL = sum(HUGE)  # > 2**64


@pytest.fixture()
def huge_file(tmp_path: Path) -> Path:
    path = tmp_path / "huge.npy"
    np.save(path, np.array(HUGE, dtype=np.int64))
    return path


@given(st.lists(st.integers(-(2**63), INT64_MAX), max_size=40))
def test_exact_sum_of_int64_arrays(values: list[int]) -> None:
    assert exact_sum(np.array(values, dtype=np.int64)) == sum(values)
    assert exact_sum(values) == sum(values)


def test_exact_sum_of_uint64_beyond_int64() -> None:
    arr = np.array([2**64 - 1, 2**64 - 1], dtype=np.uint64)
    assert exact_sum(arr) == 2 * (2**64 - 1)
    assert exact_sum(np.zeros(0, dtype=np.int64)) == 0


def test_bounds_prints_the_exact_total(huge_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix: tokens -4611686018427384906."""
    assert main(["bounds", "--lengths", str(huge_file), "--min-buffer", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == HUGE_TOTAL
    assert out["mass_lower_bound"] == INT64_MAX  # the B - 1 = 1 largest long length


@pytest.mark.parametrize("policy", ["discard", "continue", "requeue-bos", "random-span"])
def test_replay_totals_are_exact(huge_file: Path, policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", "--lengths", str(huge_file), "--min-buffer", "2", "--policy", policy, "--rows", "50"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["consumed_tokens"] == HUGE_TOTAL
    assert out["identity_holds"] is True
    assert (out["consumed_tokens"] + out["added_bos_tokens"] == out["emitted_tokens"]
            + out["discarded_tokens"] + out["buffered_tokens"])


def test_summary_accumulator_counts_past_int64() -> None:
    acc = SummaryAccumulator(capacity=2049)
    for ev in pt.Packer(capacity=2049, min_buffer=2, refill=1, rows=40).events(HUGE * 3):
        acc.feed(ev)
        acc._check()
    s = acc.result()
    assert s.consumed_tokens == 3 * HUGE_TOTAL and s.identity_holds()


def test_monitor_mass_is_exact() -> None:
    mon = InvariantMonitor(capacity=2049, min_buffer=3)
    pt.feed_all(pt.Packer(capacity=2049, min_buffer=3, refill=1).events(HUGE), mon)
    mon._check()
    assert mon.protected.mass == INT64_MAX + 2**62  # the two largest long keys


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the series sample once wrapped int64 first
def test_ledger_refuses_totals_past_its_exact_range() -> None:
    """Before the fix the ledger summed int64 and reported negative arrived tokens."""
    led = Ledger(capacity=2049, min_buffer=2)
    with pytest.raises(ValueError, match=r"beyond the ledger's exact range: arrivals up to occurrence 0 "):
        pt.feed_all(pt.Packer(capacity=2049, min_buffer=2, refill=1).events(HUGE), led)


def test_ledger_is_exact_up_to_its_range() -> None:
    big = MAX_EXACT_TOKENS // 4
    led = Ledger(capacity=2049, min_buffer=2)
    pt.feed_all(pt.Packer(capacity=2049, min_buffer=2, refill=1, rows=30).events([big, 7, big, 9]), led)
    led._check()
    agg = led.result()
    assert agg.mass.arrived_tokens == 2 * big + 16 and agg.mass.identity_holds
    assert sum(r.arrived_tokens for r in agg.strata) == 2 * big + 16


def test_ledger_refuses_at_the_arrival_flush() -> None:
    led = Ledger(capacity=8, min_buffer=2)
    led.feed(Arrival(0, 0, 0, MAX_EXACT_TOKENS))
    led.feed(Arrival(1, 1, 0, 1))
    with pytest.raises(ValueError, match=r"occurrence 1 \(length 1\) hold more than 9,007,199,254,740,992"):
        led._flush()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_audit_refuses_on_one_line(huge_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   workers: str) -> None:
    """Before the fix: negative arrived tokens in the report; with --workers 2, a refusal raised in a
    worker process was reported as an internal error (exit 3) instead of bad input (exit 2)."""
    status = main(["audit", "--lengths", str(huge_file), "--min-buffer", "2", "--no-plots", "--permutations",
                   "0", "--out", str(tmp_path / "o"), "--workers", workers])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "exact range" in err
    assert not (tmp_path / "o" / "audit.json").exists()


def test_corpus_summary_is_exact() -> None:
    s = corpus_summary(np.array(HUGE, dtype=np.int64), capacity=2049, boundaries=(4096,))
    assert s.tokens == HUGE_TOTAL
    assert s.strata_tokens == (3005, HUGE_TOTAL - 3005)


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=60),
       st.lists(st.integers(1, 3000), min_size=1, max_size=4, unique=True), st.integers(1, 4000))
def test_corpus_summary_is_the_per_length_census(lengths: list[int], bounds: list[int],
                                                 capacity: int) -> None:
    """The histogram path (lengths clipped past the last boundary) against a census length by length."""
    boundaries = tuple(sorted(bounds))
    s = corpus_summary(np.array(lengths, np.int64), capacity=capacity, boundaries=boundaries)
    stratum = [sum(length > b for b in boundaries) for length in lengths]
    assert s.strata_sources == tuple(stratum.count(k) for k in range(len(boundaries) + 1))
    assert s.strata_tokens == tuple(sum(x for x, k in zip(lengths, stratum, strict=True) if k == j)
                                    for j in range(len(boundaries) + 1))
    assert (s.tokens, s.over_capacity_documents, s.max_length) == (
        sum(lengths), sum(x > capacity for x in lengths), max(lengths))


def test_corpus_summary_of_a_far_last_boundary_allocates_no_histogram() -> None:
    """Past a chunk's length the census goes length by length: a last boundary of 2**40 takes no table
    of its span (8 TiB)."""
    s = corpus_summary([3, 40, 5, 10**9], capacity=8, boundaries=(2**40,))
    assert (s.strata_sources, s.strata_tokens, s.over_capacity_documents) == ((4, 0), (10**9 + 48, 0), 2)


@pytest.mark.parametrize("bad", [(8, 4), (8, 8), (), (2.5,)])
def test_corpus_summary_refuses_boundaries_that_are_not_increasing_ints(bad: tuple[object, ...]) -> None:
    with pytest.raises((pt.InputError, pt.InputTypeError), match="boundaries"):
        corpus_summary([3, 40, 5, 6], capacity=8, boundaries=bad)  # type: ignore[arg-type]


def test_lengths_past_int64_are_refused_by_the_readers(tmp_path: Path) -> None:
    path = tmp_path / "u.npy"
    np.save(path, np.array([3, 2**63], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"does not fit a signed 64-bit length"):
        load_lengths(path)
    with pytest.raises(ValueError, match=r"fits a signed 64-bit int"):
        validate_lengths([1, 2**64])


def test_segment_first_refuses_a_document_of_too_many_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.engine.policies as policies

    assert MAX_SEGMENTS == 2**20
    monkeypatch.setattr(policies, "MAX_SEGMENTS", 10)
    assert len(segment(4 + 3 * 9, 4)) == 10
    with pytest.raises(ValueError, match=r"segment-first would split a document of length 34 into 11 chunks"):
        segment(4 + 3 * 10, 4)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="segment-first would split"):
        pt.replay([2**62], capacity=2049, min_buffer=1, policy="segment-first")


def test_unsigned_lengths_beyond_int64_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"lengths\[1\] does not fit a signed 64-bit length"):
        validate_lengths(np.array([3, 2**63 + 5], dtype=np.uint64))
