"""Coverage streamed in blocks gives numpy's mean and median bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from packing_theory.audit.coverage import CoverageSummary, MedianSelect, PairwiseSum
from packing_theory.audit.table import summarise_coverage
from packing_theory.errors import InputError

VALUES = st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.25]) | st.floats(0, 1, allow_nan=False), max_size=900)


def _feed(values: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    out, i, k = [], 0, 0
    while i < values.size:
        m = sizes[k % len(sizes)] if sizes else values.size
        out.append(values[i : i + m])
        i += m
        k += 1
    return out


@given(VALUES, st.lists(st.integers(1, 300), max_size=5), st.sampled_from([128, 136, 256, 1 << 16]))
@example([0.1] * 129, [1], 128)
def test_pairwise_sum_is_numpys_sum(values: list[float], sizes: list[int], leaf: int) -> None:
    x = np.asarray(values, np.float64)
    s = PairwiseSum(x.size, leaf)
    for part in _feed(x, sizes):
        s.feed(part)
        s._check()
    assert s.result() == (float(np.add.reduce(x)) if x.size else 0.0)


def test_pairwise_sum_on_large_arrays() -> None:
    rng = np.random.default_rng(0)
    for n in (8191, 65_536 * 3 + 17, 1_000_003):
        x = rng.random(n) * rng.choice([1e-3, 1.0, 1e9])
        s = PairwiseSum(n, leaf=1024)
        for part in np.array_split(x, 7):
            s.feed(part)
        assert s.result() == float(np.add.reduce(x)) and s.result() / n == float(np.mean(x))


@given(VALUES.filter(bool), st.sampled_from([0, 1, 3, 1 << 22]), st.integers(1, 97),
       st.sampled_from([0, 10**9]), st.sampled_from([4, 64, 1 << 16]))
def test_median_select_is_numpys_median(values: list[float], limit: int, block: int, direct: int,
                                        sample: int) -> None:
    x = np.asarray(values, np.float64)
    sel = MedianSelect(x.size, limit=limit, direct=direct, sample=sample)
    while sel.needs_pass():
        for part in _feed(x, [block]):
            sel.feed(part)
        sel.end_pass()
        sel._check()
    assert sel.median == float(np.median(x))
    assert sel.passes <= 5 and (sel.passes == 1 or not direct)


def test_a_tied_median_needs_one_pass_and_a_spread_one_refines() -> None:
    ties = MedianSelect(7, direct=0)
    ties.feed(np.asarray([1.0, 1.0, 0.0, 1.0, 1.0, 0.5, 1.0]))
    ties.end_pass()
    assert not ties.needs_pass() and ties.median == 1.0 and ties.passes == 1
    rng = np.random.default_rng(3)
    x = rng.random(5000)
    spread = MedianSelect(x.size, limit=10, direct=0, sample=16)  # never collect: refine 16 bits a pass
    while spread.needs_pass():
        spread.feed(x)
        spread.end_pass()
    assert spread.median == float(np.median(x)) and spread.passes >= 2
    guessed = MedianSelect(x.size, direct=0, sample=500)  # the middle of the first 500 holds the median
    guessed.feed(x)
    guessed.end_pass()
    assert guessed.passes == 1 and not guessed.needs_pass() and guessed.median == float(np.median(x))


@given(VALUES, st.integers(1, 200))
def test_coverage_summary_equals_the_whole_array_summary(values: list[float], block: int) -> None:
    x = np.asarray(values, np.float64)
    s = CoverageSummary(x.size)
    for part in _feed(x, [block]):
        s.feed(part)
    while s.needs_pass():
        for part in _feed(x, [block]):
            s.feed_pass(part)
        s.end_pass()
    s._check()
    assert s.result() == summarise_coverage(x.copy())


def test_misfed_summaries_are_refused() -> None:
    s = PairwiseSum(3)
    s.feed(np.ones(2))
    with pytest.raises(InputError, match="PairwiseSum of 3 values fed only 2"):
        s.result()
    with pytest.raises(InputError, match="PairwiseSum of 3 values fed 5"):
        s.feed(np.ones(3))
    for direct in (0, 4):
        m = MedianSelect(4, direct=direct)
        m.feed(np.ones(3))
        with pytest.raises(InputError, match="MedianSelect of 4 values fed 3 in a pass"):
            m.end_pass()
    assert MedianSelect(0).median is None and CoverageSummary(0).result() == (0, None, None, 0, 0)
