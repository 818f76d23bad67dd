"""The corollaries: exact §5.2 table, and each bound checked against replayed streams."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine.events import Arrival, Exhausted, Placement
from packing_theory.invariant import InvariantMonitor
from packing_theory.invariant import strategies as pst
from packing_theory.invariant.bounds import (
    PAPER_COUNTS,
    PAPER_SOURCES,
    PAPER_THRESHOLDS,
    PAPER_TOKENS,
    PassBound,
    check_histogram,
    counts_from_lengths,
    default_thresholds,
    earliest_pass,
    expected_startup_index,
    format_pass_table,
    mass_lower_bound,
    parse_counts,
    repeated_corpus_table,
    startup_bound,
)

ROOT = Path(__file__).resolve().parents[2]
SEED = Path("/work/shared/seeds/000_f52003914094d358.txt")

# Seed 000 §5.2, verbatim.
PAPER_TABLE = """\
|Original length at least|Sources per pass|Earliest possible pass|
|---|---:|---:|
|16,384|789|2|
|32,768|196|6|
|65,536|39|26|
|131,072|9|112|
|290,219|1|1000|"""


def test_section_5_2_table_reproduced_exactly() -> None:
    rows = repeated_corpus_table(counts=PAPER_COUNTS, min_buffer=1000)
    assert [r.earliest_pass for r in rows] == [2, 6, 26, 112, 1000]
    assert [r.threshold for r in rows] == list(PAPER_THRESHOLDS)
    assert format_pass_table(rows) == PAPER_TABLE
    if SEED.exists():  # the table as printed in the paper itself
        assert PAPER_TABLE in SEED.read_text()


def test_docs_hold_the_code_produced_table() -> None:
    rst = (ROOT / "docs" / "invariant.rst").read_text()
    rows = repeated_corpus_table(counts=PAPER_COUNTS, min_buffer=1000)
    table = format_pass_table(rows, style="rst")
    assert "\n".join("   " + line for line in table.splitlines()) in rst


def test_paper_histogram_check_from_counts() -> None:
    """A histogram consistent with the paper's counts and totals passes the check."""
    hist = {290219: 1, 131072: 8, 65536: 30, 32768: 157, 16384: 593}
    rest_sources = PAPER_SOURCES - sum(hist.values())
    rest_tokens = PAPER_TOKENS - sum(n * c for n, c in hist.items())
    # spread the remaining mass exactly over lengths 100, 1000 and one length in between
    k_b = (rest_tokens - 100 * rest_sources) // 900
    k_a = rest_sources - k_b
    left = rest_tokens - 100 * k_a - 1000 * k_b
    assert 0 <= left < 900 and k_a > 0
    hist[100] = k_a - 1
    hist[1000] = k_b
    hist[100 + left] = hist.get(100 + left, 0) + 1
    chk = check_histogram(hist, total_sources=PAPER_SOURCES, total_tokens=PAPER_TOKENS,
                          thresholds=PAPER_THRESHOLDS, min_buffer=1000)
    assert chk.ok, chk.format()
    assert format_pass_table(chk.table) == PAPER_TABLE
    assert "(matches)" in chk.format() and chk.to_dict()["ok"] is True
    wrong = check_histogram(hist, total_tokens=PAPER_TOKENS + 1, thresholds=PAPER_THRESHOLDS)
    assert not wrong.ok and "MISMATCH" in wrong.format()


def test_earliest_pass_is_the_pass_of_the_bth_class_arrival() -> None:
    for r in range(1, 60):
        for b in range(1, 60):
            e = earliest_pass(r, b)
            assert (e - 1) * r < b <= e * r


def test_table_from_lengths_equals_table_from_counts() -> None:
    rng = np.random.default_rng(5)
    lengths = np.maximum(1, rng.lognormal(6, 1.6, 5000).astype(np.int64))
    by_lengths = repeated_corpus_table(lengths=lengths, min_buffer=100)
    ts = [r.threshold for r in by_lengths]
    assert ts == default_thresholds(lengths, 2049)
    counts = counts_from_lengths(lengths, ts)
    assert repeated_corpus_table(counts=counts, min_buffer=100) == by_lengths
    assert by_lengths[-1] == PassBound(int(lengths.max()), 1, 100)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: earliest_pass(0, 1000), ValueError, "sources_per_pass must be >= 1, got 0"),
        (lambda: earliest_pass(5, 0), ValueError, "min_buffer must be >= 1, got 0"),
        (lambda: earliest_pass(2.5, 10), TypeError, "sources_per_pass must be an int"),
        (lambda: expected_startup_index(10, 0), ValueError, "q must be in"),
        (lambda: expected_startup_index(10, 1.5), ValueError, "q must be in"),
        (lambda: expected_startup_index(10, "x"), TypeError, "q must be a real number"),
        (lambda: startup_bound([3, 0], 2, 1), ValueError,
         r"lengths\[1\] must be a positive BOS-inclusive length, got 0"),
        (lambda: startup_bound([3.5], 2, 1), TypeError, r"lengths\[0\] must be an int"),
        (lambda: startup_bound("abc", 2, 1), TypeError, "lengths must be a sequence"),
        (lambda: mass_lower_bound(np.zeros((2, 2), dtype=int) + 1, 3), ValueError, "must be 1-D"),
        (lambda: repeated_corpus_table(counts={1000: 5}, min_buffer=10), ValueError,
         "thresholds must exceed capacity 2049"),
        (lambda: repeated_corpus_table(min_buffer=10), ValueError, "exactly one of"),
        (lambda: repeated_corpus_table(counts={4096: 1, 8192: 5}), ValueError, "must not grow"),
        (lambda: repeated_corpus_table(counts={4096: -1}), ValueError, r"counts\[4096\] must be >= 0"),
        (lambda: repeated_corpus_table(counts={4096: 3}, thresholds=[8192]), ValueError, "have no count"),
        (lambda: parse_counts("16384:789"), ValueError, "is not THRESHOLD=COUNT"),
        (lambda: parse_counts("1=2,1=3"), ValueError, "repeats threshold 1"),
        (lambda: parse_counts(" , "), ValueError, "holds no"),
        (lambda: check_histogram({5: -1}), ValueError, r"histogram\[5\] must be >= 0"),
        (lambda: check_histogram([(5, 1), (5, 2)]), ValueError, "repeats length 5"),
        (lambda: check_histogram([5]), TypeError, "must be a \\(length, count\\) pair"),
        (lambda: format_pass_table([], style="html"), ValueError, "style must be"),  # type: ignore[arg-type]
    ],
)
def test_bad_inputs_name_the_parameter(call: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]


def test_zero_count_row_has_no_pass() -> None:
    rows = repeated_corpus_table(counts={4096: 2, 8192: 0}, min_buffer=3)
    assert rows == [PassBound(4096, 2, 2), PassBound(8192, 0, None)]
    assert "|8,192|0|-|" in format_pass_table(rows)


def test_expected_startup_index_by_simulation() -> None:
    rng = np.random.default_rng(11)
    B, q, R = 40, 0.08, 100
    draws = []
    for _ in range(400):
        lengths = np.where(rng.random(4000) < q, 500, 10)
        n = startup_bound(lengths, R, B)
        assert n is not None
        draws.append(n)
    mean = float(np.mean(draws))
    sd = math.sqrt(B * (1 - q)) / q / math.sqrt(len(draws))  # negative binomial
    assert abs(mean - expected_startup_index(B, q)) < 4 * sd


# --------------------------------------------------------------------------- against replays


def _replay_checks(lengths: list[int], config: pt.PackerConfig) -> None:
    R, B = config.capacity, config.min_buffer
    mon = InvariantMonitor.for_packer(config)
    arrived: list[int] = []
    arrived_pass: list[int] = []
    started: set[int] = set()
    first_long_start_at: int | None = None
    class_first: dict[int, tuple[int, int]] = {}  # threshold -> (class arrivals, last pass) at 1st start
    per_pass = sorted(set(n for n in lengths if n > R))
    r_of = {t: sum(n >= t for n in lengths) for t in per_pass}
    outside = False
    for ev in pt.Packer(config).events(lengths):
        if type(ev) is Arrival:
            arrived.append(ev.length)
            arrived_pass.append(ev.pass_index)
        elif type(ev) is Exhausted:
            outside = True
        elif type(ev) is Placement and not outside:
            # mass corollary at the boundary (monitor.buffered_mass is the identity's buffered term)
            assert mon.buffered_mass >= mass_lower_bound(arrived, B, capacity=R)
            L = arrived[ev.occurrence]
            if ev.occurrence not in started and L > R:
                if first_long_start_at is None:
                    first_long_start_at = len(arrived)
                for t in per_pass:
                    if t <= L and t not in class_first:
                        class_first[t] = (sum(n >= t for n in arrived), arrived_pass[-1] + 1)
            started.add(ev.occurrence)
        mon.feed(ev)
    # startup corollary: no long start before the B-th long arrival
    bound = startup_bound(arrived, R, B)
    if first_long_start_at is not None:
        assert bound is not None and first_long_start_at >= bound
    # repeated-corpus corollary: never beaten
    for t, (class_arrivals, current_pass) in class_first.items():
        assert class_arrivals >= B
        assert current_pass >= earliest_pass(r_of[t], B)
    assert mon.ok


@given(pst.replay_cases(policies=("discard", "continue"), max_passes=4))
def test_corollaries_hold_on_replays(case: tuple[list[int], pt.PackerConfig]) -> None:
    _replay_checks(*case)


@given(
    corpus=pst.arrival_streams(capacity=4, min_size=1, max_size=12, max_value=12, tail=0.5),
    B=st.integers(2, 9),
    passes=st.integers(2, 8),
    policy=st.sampled_from(["discard", "continue"]),
)
def test_repeated_corpus_bound_never_beaten(corpus: list[int], B: int, passes: int, policy: str) -> None:
    """Many passes over a tiny corpus with the buffer kept: first starts respect ceil(B / r)."""
    config = pt.PackerConfig(capacity=4, min_buffer=B, refill=2, passes=passes, policy=policy)  # type: ignore[arg-type]
    _replay_checks(corpus, config)


def test_unique_longest_source_waits_b_passes() -> None:
    """A corpus with one long source: its first start is in pass B at the earliest."""
    B = 5
    corpus = [1, 1, 9, 2, 1, 3]
    config = pt.PackerConfig(capacity=4, min_buffer=B, refill=1, passes=12)
    first_pass = None
    for ev in pt.Packer(config).events(corpus):
        if type(ev) is Arrival:
            current = ev.pass_index
        elif type(ev) is Placement and ev.source == 2 and first_pass is None:
            first_pass = current + 1
    assert first_pass is not None and first_pass >= earliest_pass(1, B) == B
    table = repeated_corpus_table(lengths=corpus, thresholds=[9], min_buffer=B, capacity=4)
    assert table == [PassBound(9, 1, B)]


def test_mass_bound_is_order_free() -> None:
    lengths = [50, 3, 80, 80, 7, 60]
    assert mass_lower_bound(lengths, 3, capacity=10) == mass_lower_bound(lengths[::-1], 3, capacity=10) == 160
    assert mass_lower_bound([], 3) == 0
    assert re.fullmatch(r"\d+", str(mass_lower_bound([11, 12], 1)))
