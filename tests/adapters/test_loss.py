"""Seed 004's objective and bits per byte against plain loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory.adapters import TokenLoss, bits_per_byte, masked_nll_sum, objective, token_byte_lengths
from packing_theory.testing import scaled_examples


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Several batches of (nll, mask, targets) with different row counts and widths."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        b, n = draw(st.integers(1, 3)), draw(st.integers(1, 6))
        nll = np.array(draw(st.lists(st.floats(0, 20), min_size=b * n, max_size=b * n))).reshape(b, n)
        mask = np.array(draw(st.lists(st.integers(0, 1), min_size=b * n, max_size=b * n))).reshape(b, n)
        targets = np.array(draw(st.lists(st.integers(0, 7), min_size=b * n, max_size=b * n))).reshape(b, n)
        out.append((nll, mask, targets))
    return out


@settings(max_examples=scaled_examples(200), deadline=None)
@given(data=batches())
def test_objective_is_one_ratio_over_all_batches(data: list[tuple[np.ndarray, ...]]) -> None:
    total = 0.0
    count = 0
    for nll, mask, _ in data:
        for i in range(nll.shape[0]):
            for j in range(nll.shape[1]):
                if mask[i, j]:
                    total += float(nll[i, j])
                    count += 1
    acc = TokenLoss()
    for nll, mask, _ in data:
        _, c = masked_nll_sum(nll, mask)
        assert c == int(mask.sum())
        acc.add(nll, mask)
        acc._check()
    assert acc.count == count
    if count == 0:
        with pytest.raises(ValueError, match="undefined"):
            _ = acc.value
        return
    assert math.isclose(acc.value, total / count, rel_tol=1e-12, abs_tol=1e-12)
    flat_nll = np.concatenate([n.ravel() for n, _, _ in data])
    flat_m = np.concatenate([m.ravel() for _, m, _ in data])
    assert math.isclose(objective(flat_nll, flat_m), total / count, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=scaled_examples(200), deadline=None)
@given(data=batches(), bytes_=st.lists(st.integers(0, 4), min_size=8, max_size=8))
def test_bits_per_byte_matches_a_loop(data: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                                      bytes_: list[int]) -> None:
    token_bytes = np.array(bytes_)
    nats = 0.0
    nbytes = 0
    for nll, mask, targets in data:
        for i in range(nll.shape[0]):
            for j in range(nll.shape[1]):
                b = bytes_[targets[i, j]]
                if mask[i, j] and b > 0:  # special tokens (0 bytes) drop out of both sums
                    nats += float(nll[i, j])
                    nbytes += b
    nll = np.concatenate([n.ravel() for n, _, _ in data])
    mask = np.concatenate([m.ravel() for _, m, _ in data])
    targets = np.concatenate([t.ravel() for _, _, t in data])
    if nbytes == 0:
        with pytest.raises(ValueError, match="bits per byte is undefined"):
            bits_per_byte(nll, targets, token_bytes, mask)
        return
    bpb, got_nats, got_bytes = bits_per_byte(nll, targets, token_bytes, mask)
    assert got_bytes == nbytes and math.isclose(got_nats, nats, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(bpb, nats / (math.log(2) * nbytes), rel_tol=1e-12)


def test_mean_of_means_differs() -> None:
    nll = np.array([[0.0, 1.0, 1.0, 1.0, 1.0], [0.0, 5.0, 0.0, 0.0, 0.0]])
    m = np.array([[0, 1, 1, 1, 1], [0, 1, 0, 0, 0]])
    assert objective(nll, m) == pytest.approx(9 / 5)
    per_row = [objective(nll[i : i + 1], m[i : i + 1]) for i in range(2)]
    assert np.mean(per_row) == pytest.approx(3.0)  # the weighting seed 004 rules out


def test_masked_positions_may_hold_anything() -> None:
    nll = np.array([np.nan, 2.0, np.inf])
    assert masked_nll_sum(nll, np.array([0, 1, 0])) == (2.0, 1)
    with pytest.raises(ValueError, match="non-finite value at a predicted position"):
        masked_nll_sum(nll, np.array([1, 1, 0]))


def test_errors() -> None:
    with pytest.raises(ValueError, match=r"shape .*must match"):
        masked_nll_sum(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="0/1"):
        masked_nll_sum(np.zeros(2), np.array([0, 2]))
    with pytest.raises(ValueError, match="no predicted target"):
        objective(np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="outside token_bytes"):
        bits_per_byte(np.zeros(2), np.array([0, 9]), np.array([1, 1]))
    with pytest.raises(TypeError, match="token_bytes must be a 1-D integer array"):
        bits_per_byte(np.zeros(2), np.array([0, 1]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="count must be >= 0"):
        TokenLoss().add_sums(1.0, -1)
    assert token_byte_lengths(4, lambda i: bytes(i), special_ids=[3]).tolist() == [0, 1, 2, 0]
    with pytest.raises(ValueError, match="special_ids"):
        token_byte_lengths(2, lambda i: b"x", special_ids=[5])
