"""The add-k n-gram reference model against brute-force counting; fitting on packed token rows."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import Packer
from packing_theory.evaluation import NGramModel


def brute_nll(rows: list[list[int]], V: int, n: int, k: float, row: list[int],
              seg: list[int] | None = None) -> list[float]:
    pad = V
    grams: Counter[tuple[int, ...]] = Counter()
    ctxs: Counter[tuple[int, ...]] = Counter()
    for r in rows:
        for t in range(1, len(r)):
            c = tuple(r[t - d] if t - d >= 0 else pad for d in range(n - 1, 0, -1))
            grams[(*c, r[t])] += 1
            ctxs[c] += 1
    out = []
    for t in range(1, len(row)):
        c = []
        for d in range(n - 1, 0, -1):
            p = t - d
            ok = p >= 0 and (seg is None or (seg[p] == seg[t] and seg[t] != 0))
            c.append(row[p] if ok else pad)
        ct = tuple(c)
        out.append(math.log(ctxs[ct] + k * V) - math.log(grams[(*ct, row[t])] + k))
    return out


@given(rows=st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=12), min_size=1, max_size=6),
       order=st.integers(1, 4), k=st.sampled_from([0.01, 0.5, 2.0]),
       query=st.lists(st.integers(0, 5), min_size=2, max_size=10))
def test_ngram_matches_brute_force_counting(rows: list[list[int]], order: int, k: float,
                                            query: list[int]) -> None:
    m = NGramModel(6, order=order, k=k).fit(rows)
    m._check()
    assert m.targets_fitted == sum(max(0, len(r) - 1) for r in rows)
    got = m.nll(np.array([query]), None)[0]
    assert np.allclose(got, brute_nll(rows, 6, order, k, query), rtol=1e-12, atol=1e-12)
    seg = [1] * (len(query) // 2) + [2] * (len(query) - len(query) // 2)
    got_seg = m.nll(np.array([query]), np.array([seg], dtype=np.int32))[0]
    assert np.allclose(got_seg, brute_nll(rows, 6, order, k, query, seg), rtol=1e-12, atol=1e-12)


def test_fit_accumulates_and_accepts_arrays_and_packed_rows() -> None:
    docs = [[0, 1, 2, 3, 1, 2], [0, 4, 4], [0, 1, 2, 5, 5, 5, 5, 1]]
    rows = list(Packer(capacity=4, min_buffer=1, refill=1, exhausted="drain").token_rows(docs))
    a = NGramModel(6, order=2).fit(rows)
    b = NGramModel(6, order=2).fit(np.array(rows))
    c = NGramModel(6, order=2).fit(rows[:1]).fit(rows[1:])
    q = np.array([[0, 1, 2, 5]])
    assert np.array_equal(a.nll(q), b.nll(q)) and np.array_equal(a.nll(q), c.nll(q))
    a._check()
    c._check()
    assert a.describe()["targets_fitted"] == 3 * len(rows)


def test_probabilities_sum_to_one_over_the_vocabulary() -> None:
    m = NGramModel(5, order=3, k=0.2).fit([[0, 1, 2, 3, 4, 1, 2, 2, 2]])
    for ctx in ([0, 1], [1, 2], [4, 4]):
        ids = np.array([[*ctx, w] for w in range(5)])
        p = np.exp(-m.nll(ids)[:, -1])
        assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)


def test_ngram_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="k must be a finite number > 0"):
        NGramModel(5, k=0)
    with pytest.raises(ValueError, match="vocab_size must be >= 1"):
        NGramModel(0)
    with pytest.raises(ValueError, match="too large"):
        NGramModel(1 << 16, order=5)
    m = NGramModel(5, order=2)
    with pytest.raises(ValueError, match=r"outside 0\.\.4"):
        m.fit([[0, 7]])
    with pytest.raises(TypeError, match="integer token ids"):
        m.fit([[0.5, 1.0]])
    with pytest.raises(ValueError, match=r"rows\[0\] must be 1-D"):
        m.fit([[[0, 1]]])
    with pytest.raises(ValueError, match="2-D"):
        m.fit(np.zeros(4, dtype=int))
    with pytest.raises(TypeError, match="got a string"):
        m.fit("0123")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"shape \(b, n\) with n >= 2"):
        m.nll(np.array([[1]]))
    with pytest.raises(ValueError, match="segment_ids must have the shape"):
        m.nll(np.array([[0, 1, 2]]), np.array([[1, 1]], dtype=np.int32))
    with pytest.raises(ValueError, match=r"outside 0\.\.4"):
        m.nll(np.array([[0, -1]]))


def test_ngram_check_catches_corruption() -> None:
    m = NGramModel(5, order=2).fit([[0, 1, 2, 3]])
    m._check()
    m._counts = m._counts + 1
    with pytest.raises(AssertionError):
        m._check()
