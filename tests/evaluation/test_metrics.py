"""score(): seed 000's BPB conventions against a plain loop, position bins, padding invariance, bad input."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.errors import InputError
from packing_theory.evaluation import (
    NGramModel,
    NllFn,
    WindowSpec,
    beginning_window,
    fingerprint,
    natural_tail_window,
    score,
    source_windows,
    validate_token_bytes,
)
from packing_theory.evaluation.metrics import MAX_NLL

V = 12
TB = np.array([0, 1, 2, 3, 1, 2, 0, 4, 1, 1, 2, 3], dtype=np.int64)  # ids 0 and 6 are special (0 bytes)


def make_docs(seed: int, n: int = 12, lo: int = 2, hi: int = 300) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        L = int(rng.integers(lo, hi))
        d = rng.integers(1, V, size=L)
        d[0] = 0
        docs.append(d)
    return docs


def windows_of(docs: list[np.ndarray], spec: WindowSpec) -> list:
    out = []
    for s, d in enumerate(docs):
        out.extend(source_windows(d, spec, source=s))
    return out


@pytest.fixture(scope="module")
def model() -> NGramModel:
    return NGramModel(V, order=3, k=0.3).fit(make_docs(99, n=40))


SPEC = WindowSpec(kinds=("beginning", "tail", "natural-tail", "census"), capacity=70, natural_targets=20,
                  context=40, stride=15)


def test_score_matches_a_plain_loop(model: NGramModel) -> None:
    ws = windows_of(make_docs(1), SPEC)
    s = score(ws, model, TB, batch_size=5, spec=SPEC)
    s._check()
    for i, w in enumerate(ws):
        full = model.nll(w.tokens[None, :], None)[0]
        nll = counted = nbytes = 0.0
        for j in range(w.first_target, w.n_tokens - 1):
            b = TB[w.tokens[j + 1]]
            nbytes += b
            if b > 0:
                nll += full[j]
                counted += 1
        assert s.targets[i].sum() == w.n_targets
        assert s.counted[i].sum() == counted and s.bytes[i].sum() == nbytes
        assert math.isclose(s.window_nll()[i], nll, rel_tol=1e-12, abs_tol=1e-12)
    m = s.metrics()
    assert m.targets == sum(w.n_targets for w in ws) and m.windows == len(ws)
    assert m.ce == pytest.approx(m.nll / m.counted_targets, rel=1e-15)
    assert m.perplexity == pytest.approx(math.exp(m.ce), rel=1e-15)
    assert m.bpb == pytest.approx(m.nll / (math.log(2) * m.bytes), rel=1e-15)


def test_zero_byte_targets_are_scored_but_not_counted() -> None:
    w = beginning_window([0, 1, 6, 2, 6, 3])  # targets 1, 6, 2, 6, 3; id 6 has 0 bytes
    s = score([w], lambda ids, seg, /: np.full((1, ids.shape[1] - 1), 2.0), TB)
    m = s.metrics()
    assert (m.targets, m.counted_targets, m.bytes) == (5, 3, 1 + 2 + 3)
    assert m.nll == 6.0 and m.ce == 2.0 and m.bpb == pytest.approx(6.0 / (math.log(2) * 6))


def test_bin_contributions_add_up_to_the_window_score(model: NGramModel) -> None:
    ws = windows_of(make_docs(2, n=20, hi=2000), WindowSpec(kinds=("beginning", "tail"), capacity=700))
    s = score(ws, model, TB, batch_size=7)
    contrib = s.bin_contributions()
    assert np.all(np.abs(contrib.sum(axis=1) - s.window_bpb()) <= 1e-9)
    m = s.metrics()
    assert abs(sum(m.contributions) - m.bpb) <= 1e-9
    # bins partition the window's targets: [0,32), [32,128), [128,512), [512,end)
    for i, w in enumerate(ws):
        j = np.arange(w.first_target, w.n_tokens - 1)
        expect = [np.sum((j >= a) & (j < b)) for a, b in ((0, 32), (32, 128), (128, 512), (512, 10**9))]
        assert s.targets[i].tolist() == expect
    assert sum(m.bin_targets) == m.targets and sum(m.bin_bytes) == m.bytes


def test_source_position_bins(model: NGramModel) -> None:
    ws = windows_of(make_docs(3, n=6, lo=600, hi=900), WindowSpec(kinds=("census",), context=100, stride=40))
    s = score(ws, model, TB, position="source", bin_edges=(0, 100, 500))
    for i, w in enumerate(ws):
        p = np.asarray(w.scored_positions)
        assert s.targets[i].tolist() == [np.sum(p < 100), np.sum((p >= 100) & (p < 500)), np.sum(p >= 500)]


def test_padding_batching_and_masking_never_change_a_score(model: NGramModel) -> None:
    ws = windows_of(make_docs(4), SPEC)
    ref = score(ws, model, TB, batch_size=1)
    longest = max(w.n_tokens for w in ws)
    for kw in ({"batch_size": 3}, {"batch_size": 64}, {"batch_size": 4, "width": longest + 37},
               {"batch_size": 2, "pad_id": 5}, {"batch_size": 8, "document_mask": False},
               {"batch_size": 5, "check_padding": True}):
        other = score(ws, model, TB, **kw)
        assert np.array_equal(other.nll, ref.nll), kw
        assert np.array_equal(other.bytes, ref.bytes) and np.array_equal(other.counted, ref.counted)
        assert other.fingerprint == ref.fingerprint
    assert score(ws, model, TB, check_padding=True).padding_max_diff == 0.0


@given(seed=st.integers(0, 10**6), batch=st.integers(1, 9), extra=st.integers(0, 30),
       pad=st.integers(0, V - 1))
def test_padding_property(model: NGramModel, seed: int, batch: int, extra: int, pad: int) -> None:
    ws = windows_of(make_docs(seed, n=4, hi=120), SPEC)
    ref = score(ws, model, TB, batch_size=1)
    width = max(w.n_tokens for w in ws) + extra
    other = score(ws, model, TB, batch_size=batch, width=width, pad_id=pad)
    assert np.array_equal(other.nll, ref.nll)


def test_check_padding_catches_a_model_that_reads_padding() -> None:
    def leaky(ids: np.ndarray, seg: np.ndarray | None, /) -> np.ndarray:
        # depends on the padded width: not causal
        return np.full((ids.shape[0], ids.shape[1] - 1), 1.0 + 0.001 * ids.shape[1])

    ws = [beginning_window([0, 1, 2, 3]), beginning_window([0, 1])]
    with pytest.raises(ValueError, match="not padding-invariant"):
        score(ws, leaky, TB, check_padding=True)
    s = score(ws, leaky, TB, check_padding=True, padding_tolerance=1.0)
    assert s.padding_max_diff == pytest.approx(0.008)


def test_results_are_bit_identical_across_runs(model: NGramModel) -> None:
    ws = windows_of(make_docs(5), SPEC)
    a = score(ws, model, TB, batch_size=6, spec=SPEC)
    b = score(ws, NGramModel(V, order=3, k=0.3).fit(make_docs(99, n=40)), TB, batch_size=6, spec=SPEC)
    for f in ("nll", "counted", "targets", "bytes", "sources", "starts", "first_targets"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.fingerprint == b.fingerprint and a.kinds == b.kinds


def test_fingerprints_separate_targets_from_context() -> None:
    d = np.arange(1, 200) % (V - 1) + 1
    d[0] = 0
    w = natural_tail_window(d, targets=10, context=50)
    d2 = d.copy()
    d2[-30] = 11 if d2[-30] != 11 else 10  # a context token, not a scored target
    w2 = natural_tail_window(d2, targets=10, context=50)
    d3 = d.copy()
    d3[-1] = 11 if d3[-1] != 11 else 10  # a scored target
    w3 = natural_tail_window(d3, targets=10, context=50)
    f, f2, f3 = (fingerprint([x], TB) for x in (w, w2, w3))
    assert f.targets_sha256 == f2.targets_sha256 and f.inputs_sha256 != f2.inputs_sha256
    assert f.targets_sha256 != f3.targets_sha256
    assert f.token_bytes_sha256 != fingerprint([w], np.r_[TB, 1]).token_bytes_sha256
    assert (f.windows, f.targets) == (1, 10)


def test_nll_fn_contract_violations_are_errors() -> None:
    ws = [beginning_window([0, 1, 2, 3]), beginning_window([0, 4])]

    def shaped(out_shape_delta: int):
        return lambda ids, seg, /: np.ones((ids.shape[0], ids.shape[1] - 1 + out_shape_delta))

    with pytest.raises(ValueError, match=r"expected \(2, 3\)"):
        score(ws, shaped(1), TB)
    with pytest.raises(TypeError, match="real floating array"):
        score(ws, lambda ids, seg, /: np.ones((ids.shape[0], ids.shape[1] - 1), dtype=np.int64), TB)
    with pytest.raises(ValueError, match="finite and >= 0"):
        score(ws, lambda ids, seg, /: np.full((ids.shape[0], ids.shape[1] - 1), np.nan), TB)
    with pytest.raises(ValueError, match="finite and >= 0"):
        score(ws, lambda ids, seg, /: np.full((ids.shape[0], ids.shape[1] - 1), -0.5), TB)

    def nan_in_padding(ids: np.ndarray, seg: np.ndarray | None, /) -> np.ndarray:
        out = np.ones((ids.shape[0], ids.shape[1] - 1))
        out[seg[:, 1:] == 0] = np.nan  # padding targets may hold anything
        return out

    assert score(ws, nan_in_padding, TB).metrics().counted_targets == 4
    with pytest.raises(TypeError, match="must be callable"):
        score(ws, "model", TB)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one window"):
        score([], shaped(0), TB)
    with pytest.raises(TypeError, match=r"windows\[0\] must be a Window"):
        score([[0, 1, 2]], shaped(0), TB)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="outside token_bytes"):
        score([beginning_window([0, 40])], shaped(0), TB)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        score(ws, shaped(0), TB, batch_size=0)
    with pytest.raises(ValueError, match="position must be"):
        score(ws, shaped(0), TB, position="row")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bin_edges must start at 0"):
        score(ws, shaped(0), TB, bin_edges=(5, 10))
    with pytest.raises(ValueError, match="strictly increasing"):
        score(ws, shaped(0), TB, bin_edges=(0, 10, 10))
    with pytest.raises(ValueError, match="padding_tolerance"):
        score(ws, shaped(0), TB, padding_tolerance=-1.0)


def test_token_bytes_validation() -> None:
    with pytest.raises(ValueError, match=r"token_bytes\[1\] must be >= 0, got -2"):
        validate_token_bytes([0, -2])
    with pytest.raises(TypeError, match="integer array"):
        validate_token_bytes([0.5, 1.0])
    with pytest.raises(ValueError, match="1-D"):
        validate_token_bytes([[1, 2]])
    with pytest.raises(ValueError, match="no positive entry"):
        validate_token_bytes([0, 0])


def test_scores_check_catches_corruption(model: NGramModel) -> None:
    s = score(windows_of(make_docs(6, n=3), SPEC), model, TB)
    s._check()
    bad = dataclasses.replace(s, counted=s.counted + s.targets)  # more counted than scored
    with pytest.raises(AssertionError):
        bad._check()
    bad2 = dataclasses.replace(s, targets=s.targets * 2)
    with pytest.raises(AssertionError):
        bad2._check()


def test_ngram_model_is_an_nll_fn(model: NGramModel) -> None:
    assert isinstance(model, NllFn)
    assert isinstance(model.nll, NllFn)


@pytest.mark.parametrize("value", [1e308, 1e101, np.inf, np.nan])
def test_an_nll_beyond_the_bound_names_the_model_and_the_value(value: float) -> None:
    """Before the fix 1e308 passed the check and overflowed the sums (numpy's warning, then "a resample
    without bytes"); inf in the padding check's rescore slipped through as a nan difference."""
    ws = [beginning_window([0, 1, 2, 3]), beginning_window([0, 4])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow / invalid-value warnings fail the test
        expected = re.escape(f"model 'huge' returned the NLL {value!r} for window 0 target 0: ")
        with pytest.raises(InputError, match=expected + r".*at most 1e\+100 nats"):
            score(ws, lambda ids, seg, /: np.full((ids.shape[0], ids.shape[1] - 1), value), TB, model="huge",
                  check_padding=True)
    assert score(ws, lambda ids, seg, /: np.full((ids.shape[0], ids.shape[1] - 1), MAX_NLL), TB,
                 model="bound").metrics().counted_targets == 4


def test_a_model_that_raises_is_named() -> None:
    ws = [beginning_window([0, 1, 2, 3])]

    def broken(ids: np.ndarray, seg: np.ndarray | None, /) -> np.ndarray:
        raise RuntimeError("CUDA out of sorts")

    with pytest.raises(InputError, match=r"model 'b' raised RuntimeError while scoring a batch of 1 windows "
                       r"of input_ids shape \(1, 4\): CUDA out of sorts"):
        score(ws, broken, TB, model="b")
    with pytest.raises(InputError, match=r"^nll_fn raised RuntimeError"):
        score(ws, broken, TB)


def test_a_padding_rescore_that_turns_non_finite_is_refused() -> None:
    ws = [beginning_window([0, 1, 2, 3]), beginning_window([0, 4])]
    calls: list[int] = []

    def flaky(ids: np.ndarray, seg: np.ndarray | None, /) -> np.ndarray:
        calls.append(ids.shape[1])
        return np.full((ids.shape[0], ids.shape[1] - 1), 1.0 if len(calls) == 1 else np.nan)

    with pytest.raises(InputError, match="model 'f' returned the NLL nan"):
        score(ws, flaky, TB, model="f", check_padding=True)
