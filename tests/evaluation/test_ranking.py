"""The prefix ranking check (seed 000 §5.6): reversals, the uniform-row-subset reference, row statistics."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory.evaluation import (
    DEFAULT_SUBSETS,
    PAPER_PREFIXES,
    RowStatistics,
    rank,
    ranking_check,
    reversals,
    row_statistics,
)

ROWS, PER_ROW = 400, 2048


def stats(seed: int, quality: dict[str, float], prefix_shift: dict[str, float] | None = None,
          shifted_rows: int = 0) -> RowStatistics:
    """Rows with random byte counts; checkpoint ``m`` spends ``quality[m]`` nats per byte plus row noise.

    ``prefix_shift[m]`` is added per byte on the first ``shifted_rows`` rows only (a planted prefix effect).
    """
    rng = np.random.default_rng(seed)
    nbytes = rng.integers(6000, 9000, size=ROWS)
    difficulty = rng.normal(0.0, 0.02, size=ROWS)  # shared by every checkpoint (paired rows)
    nll = {}
    for m, q in quality.items():
        per_byte = q + difficulty + rng.normal(0.0, 0.0005, size=ROWS)
        if prefix_shift and m in prefix_shift:
            per_byte[:shifted_rows] += prefix_shift[m]
        nll[m] = per_byte * nbytes
    return RowStatistics.from_arrays(nll, nbytes, np.full(ROWS, PER_ROW))


PREFIXES = (8 * PER_ROW, 40 * PER_ROW, 200 * PER_ROW)  # 1/50, 1/10, 1/2 of the rows


def test_agreeing_rankings_have_zero_reversals() -> None:
    s = stats(0, {"a": 0.70, "b": 0.705, "c": 0.71, "d": 0.72})
    check = ranking_check(s, baseline="a", prefixes=PREFIXES, subsets=300, seed=4)
    assert check.ranking == ("a", "b", "c", "d")
    assert check.reversal_count == 0 and all(p.ranking == check.ranking for p in check.prefixes)
    assert [p.rows for p in check.prefixes] == [8, 40, 200]
    assert len([c for p in check.prefixes for c in p.contrasts]) == 3 * 3
    for p in check.prefixes:
        for c in p.contrasts:
            assert c.reference_lo <= c.reference_mean <= c.reference_hi
            assert c.full == pytest.approx(check.full[c.model] - check.full["a"])
    doc = check.to_dict()
    assert doc["reversal_count"] == 0 and doc["contrasts"] == 9 and "multiplicity" in doc["statement"]


def test_a_planted_reversal_at_a_short_prefix_is_found() -> None:
    # b is better than a overall but much worse on the first 8 rows
    s = stats(1, {"a": 0.70, "b": 0.698, "c": 0.72}, prefix_shift={"b": 0.006}, shifted_rows=8)
    check = ranking_check(s, baseline="a", prefixes=PREFIXES, subsets=400, seed=2)
    first, middle, half = check.prefixes
    assert check.ranking == ("b", "a", "c") and first.ranking == ("a", "b", "c")
    assert first.reversals == (("b", "a"),)  # (better by the full score, better by the prefix)
    assert middle.reversals == () and half.reversals == ()
    assert check.reversal_count == 1
    flagged = [(p.rows, c.model) for p in check.prefixes for c in p.contrasts if c.outside]
    assert (8, "b") in flagged
    b8 = next(c for c in first.contrasts if c.model == "b")
    assert b8.estimate > b8.reference_hi and b8.quantile == 1.0


def test_the_subset_reference_is_reproducible_from_the_seed() -> None:
    s = stats(2, {"a": 0.70, "b": 0.701})
    one = ranking_check(s, baseline="a", prefixes=PREFIXES, subsets=200, seed=11)
    two = ranking_check(s, baseline="a", prefixes=PREFIXES, subsets=200, seed=11)
    other = ranking_check(s, baseline="a", prefixes=PREFIXES, subsets=200, seed=12)
    for p, q, r in zip(one.prefixes, two.prefixes, other.prefixes, strict=True):
        assert np.array_equal(p.reference, q.reference)
        assert not np.array_equal(p.reference, r.reference)
        assert p.reference.shape == (200, 1)
    assert one.to_dict() == two.to_dict()
    # a subset replicate is the contrast of an actual uniform draw of the prefix's size without replacement
    rng = np.random.default_rng([11, 0])
    idx = rng.choice(ROWS, size=8, replace=False)
    sub = s.bpb(idx)
    assert one.prefixes[0].reference[0, 0] == pytest.approx(sub["b"] - sub["a"], abs=1e-15)


def test_paper_defaults_and_row_boundaries() -> None:
    assert PAPER_PREFIXES == (262_144, 2_097_152, 10_485_760) and DEFAULT_SUBSETS == 1000
    assert [p // 2048 for p in PAPER_PREFIXES] == [128, 1024, 5120]  # of 10,240 rows (20,971,520 targets)
    s = stats(3, {"a": 0.7, "b": 0.71})
    with pytest.raises(ValueError, match="does not end at a row boundary"):
        ranking_check(s, baseline="a", prefixes=(1000,), subsets=10)
    with pytest.raises(ValueError, match="covers the whole population"):
        ranking_check(s, baseline="a", prefixes=(ROWS * PER_ROW,), subsets=10)
    with pytest.raises(ValueError, match="does not end at a row boundary"):
        ranking_check(s, baseline="a", prefixes=((ROWS + 1) * PER_ROW,), subsets=10)
    with pytest.raises(ValueError, match="baseline 'z'"):
        ranking_check(s, baseline="z")
    with pytest.raises(ValueError, match="increasing and distinct"):
        ranking_check(s, baseline="a", prefixes=(4096, 2048))
    with pytest.raises(ValueError, match="subsets must be >= 1"):
        ranking_check(s, baseline="a", prefixes=(2048,), subsets=0)


def test_rank_and_reversals_by_hand() -> None:
    assert rank({"x": 2.0, "y": 1.0, "z": 3.0}) == ("y", "x", "z")
    full = {"x": 1.0, "y": 2.0, "z": 3.0}
    assert reversals(full, {"x": 1.0, "y": 2.0, "z": 3.0}) == ()
    assert reversals(full, {"x": 3.0, "y": 2.0, "z": 1.0}) == (("x", "y"), ("x", "z"), ("y", "z"))
    assert reversals(full, {"x": 2.0, "y": 2.0, "z": 3.0}) == ()  # a tie is not a reversal
    with pytest.raises(ValueError, match="same checkpoints"):
        reversals(full, {"x": 1.0})


def test_row_statistics_score_packed_rows_and_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 8, size=(12, 9))
    tb = np.r_[0, 1, 2, 3, 1, 2, 3, 1]

    def flat(ids, seg, /):
        assert seg is None  # the official score sees each row as one causal sequence
        return np.full((ids.shape[0], ids.shape[1] - 1), np.log(8.0))

    def half(ids, seg, /):
        return np.full((ids.shape[0], ids.shape[1] - 1), np.log(4.0))

    s = row_statistics(rows, {"flat": flat, "half": half}, tb, batch_size=5)
    s._check()
    counted = (tb[rows[:, 1:]] > 0).sum(axis=1)
    assert np.array_equal(s.bytes, tb[rows[:, 1:]].sum(axis=1)) and (s.targets == 8).all()
    assert np.allclose(s.nll[0], counted * np.log(8.0)) and np.allclose(s.nll[1], counted * np.log(4.0))
    back = RowStatistics.load(s.save(tmp_path / "rows.npz"))
    assert back.models == s.models and np.array_equal(back.nll, s.nll) and np.array_equal(back.bytes, s.bytes)
    with pytest.raises(ValueError, match="outside token_bytes"):
        row_statistics(rows + 8, {"flat": flat, "half": half}, tb)
    with pytest.raises(ValueError, match="at least two checkpoint"):
        RowStatistics.from_arrays({"a": [1.0]}, [3])
    with pytest.raises(ValueError, match="must be > 0"):
        RowStatistics.from_arrays({"a": [1.0, 1.0], "b": [1.0, 1.0]}, [3, 0])
    with pytest.raises(ValueError, match="has no 'bytes' array"):
        np.savez(tmp_path / "bad.npz", a=np.ones(3))
        RowStatistics.load(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"not a readable \.npz"):
        (tmp_path / "junk.npz").write_text("x")
        RowStatistics.load(tmp_path / "junk.npz")
