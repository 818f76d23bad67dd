"""Evaluation windows: beginning, tail, natural tail, census (every target exactly once), padding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.evaluation import (
    KINDS,
    Window,
    WindowSpec,
    beginning_window,
    census_windows,
    check_census,
    natural_tail_window,
    pad_batch,
    source_windows,
    tail_window,
)
from packing_theory.evaluation.windows import as_document, scored_range


def doc_of(L: int) -> np.ndarray:
    """A source whose token at position p is p (BOS = 0), so positions can be read off the ids."""
    return np.arange(L, dtype=np.int64)


def test_beginning_window_holds_the_first_R_tokens() -> None:
    w = beginning_window(doc_of(10), capacity=4, source=3)
    w._check()
    assert w.tokens.tolist() == [0, 1, 2, 3] and w.first_target == 0
    assert w.scored_positions == range(1, 4) and w.targets().tolist() == [1, 2, 3]
    short = beginning_window(doc_of(3), capacity=4)
    assert short.tokens.tolist() == [0, 1, 2] and short.n_targets == 2
    assert w.source == 3 and not w.synthetic_bos


def test_tail_window_is_a_synthetic_bos_then_the_final_R_minus_1_text_tokens() -> None:
    d = doc_of(10)
    d[0] = 7  # the source's own BOS id is the default synthetic BOS
    w = tail_window(d, capacity=4)
    w._check()
    assert w.tokens.tolist() == [7, 7, 8, 9] and w.synthetic_bos
    assert w.scored_positions == range(7, 10) and w.n_targets == 3
    assert tail_window(d, capacity=4, bos=1).tokens.tolist() == [1, 7, 8, 9]


def test_natural_tail_scores_the_last_K_targets_with_up_to_C_real_tokens() -> None:
    d = doc_of(5000)
    w = natural_tail_window(d, targets=512, context=2048)
    w._check()
    assert w.n_tokens == 2049 and w.n_targets == 512 and not w.synthetic_bos
    assert w.scored_positions == range(5000 - 512, 5000)
    # seed 000 §5.7: the first scored target has 1,537 preceding tokens, the last 2,048
    first_j = w.first_target
    assert first_j + 1 == 1537 and w.n_tokens - 1 == 2048
    assert w.tokens[0] == 5000 - 2049  # a real token, no synthetic BOS
    short = natural_tail_window(doc_of(600), targets=512, context=2048)
    assert short.tokens[0] == 0 and short.scored_positions == range(88, 600)


@pytest.mark.parametrize(("L", "C", "S"),
                         [(10, 4, 2), (2, 4, 2), (5, 4, 4), (6, 4, 4), (100, 8, 3), (9, 3, 1)])
def test_census_windows_tile_every_target_once(L: int, C: int, S: int) -> None:
    ws = census_windows(doc_of(L), context=C, stride=S)
    check_census(ws, [L])
    covered = np.concatenate([w.targets() for w in ws])
    assert covered.tolist() == list(range(1, L))  # ids are positions: each target once, in order
    for w in ws:
        w._check()
        assert w.n_tokens <= C + 1
        # every scored target sees at least C + 1 - S tokens of its own source (or the whole prefix)
        assert w.first_target + 1 >= min(C + 1 - S, w.scored_positions.start)


@given(lengths=st.lists(st.integers(1, 400), min_size=1, max_size=6), context=st.integers(1, 64),
       stride_frac=st.floats(0.01, 1.0))
def test_census_scores_every_target_of_every_source_exactly_once(lengths: list[int], context: int,
                                                                   stride_frac: float) -> None:
    stride = max(1, int(context * stride_frac))
    windows = []
    for s, L in enumerate(lengths):
        ws = census_windows(doc_of(L), context=context, stride=stride, source=s)
        windows.extend(ws)
        seen = np.concatenate([w.targets() for w in ws]) if ws else np.zeros(0, dtype=np.int64)
        assert np.array_equal(np.sort(seen), np.arange(1, L)), (L, context, stride)
        for w in ws:
            assert np.array_equal(w.tokens, doc_of(L)[w.source_offset - 1 : w.source_offset - 1 + w.n_tokens])
    check_census(windows, lengths)


def test_check_census_names_gaps_and_overlaps() -> None:
    ws = census_windows(doc_of(20), context=4, stride=2)
    with pytest.raises(ValueError, match="never scored"):
        check_census(ws[:1] + ws[2:], [20])
    with pytest.raises(ValueError, match="scored twice"):
        check_census([*ws, ws[1]], [20])
    with pytest.raises(ValueError, match="outside the 1 sources"):
        check_census(census_windows(doc_of(5), context=4, stride=2, source=3), [5])
    with pytest.raises(ValueError, match="never scored"):
        check_census(ws, [20, 5])


def test_source_windows_follow_the_spec_and_scored_range_agrees() -> None:
    spec = WindowSpec(kinds=KINDS, capacity=9, natural_targets=3, context=6, stride=2)
    for L in (1, 2, 5, 9, 10, 17, 40):
        ws = source_windows(doc_of(L), spec, source=1)
        for kind in KINDS:
            got = [w for w in ws if w.kind == kind]
            r = scored_range(L, kind, spec)
            if r is None:
                assert not got
                continue
            positions = sorted(p for w in got for p in w.scored_positions)
            assert positions == list(r), (L, kind)
    assert source_windows(doc_of(1), spec) == []


def test_window_spec_validation() -> None:
    with pytest.raises(ValueError, match="kinds must name"):
        WindowSpec(kinds=("begin",))
    with pytest.raises(ValueError, match="non-empty"):
        WindowSpec(kinds=())
    with pytest.raises(ValueError, match="non-empty"):
        WindowSpec(kinds="tail")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must not repeat"):
        WindowSpec(kinds=("tail", "tail"))
    with pytest.raises(ValueError, match="natural_targets must be <= context"):
        WindowSpec(kinds=("natural-tail",), natural_targets=600, context=512)
    WindowSpec(kinds=("tail",), natural_targets=600, context=512)  # unused sizes are not checked
    with pytest.raises(ValueError, match="stride must be <= context"):
        WindowSpec(kinds=("census",), stride=600, context=512)
    with pytest.raises(ValueError, match="capacity must be >= 2"):
        WindowSpec(capacity=1)
    with pytest.raises(TypeError, match="stride must be an int"):
        WindowSpec(stride=2.5)  # type: ignore[arg-type]
    assert "S=512" in WindowSpec(kinds=("census",)).describe()


def test_window_builders_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="needs an over-context source"):
        tail_window(doc_of(4), capacity=4)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        beginning_window([0])
    with pytest.raises(ValueError, match="targets must be <= context"):
        natural_tail_window(doc_of(100), targets=10, context=5)
    with pytest.raises(ValueError, match="at least 11 tokens"):
        natural_tail_window(doc_of(10), targets=10, context=20)
    with pytest.raises(ValueError, match="stride must be <= context"):
        census_windows(doc_of(10), context=2, stride=3)
    with pytest.raises(ValueError, match=r"document\[1\] must be a token id >= 0, got -3"):
        as_document([0, -3])
    with pytest.raises(TypeError, match="integer token ids"):
        as_document([0.0, 1.5])
    with pytest.raises(ValueError, match="must be 1-D"):
        as_document([[0, 1]])
    with pytest.raises(ValueError, match="is empty"):
        as_document([])
    with pytest.raises(ValueError, match="kind must be one of"):
        scored_range(10, "middle", WindowSpec())


def test_windows_are_read_only_copies() -> None:
    d = doc_of(10)
    w = beginning_window(d, capacity=4)
    d[1] = 99
    assert w.tokens[1] == 1
    with pytest.raises(ValueError):
        w.tokens[0] = 5


def test_pad_batch_right_pads_with_segment_ids() -> None:
    ws = [beginning_window([0, 5, 6]), beginning_window([0, 7])]
    ids, seg = pad_batch(ws, pad_id=3, width=5)
    assert ids.dtype == np.int64 and seg.dtype == np.int32
    assert ids.tolist() == [[0, 5, 6, 3, 3], [0, 7, 3, 3, 3]]
    assert seg.tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]
    with pytest.raises(ValueError, match="shorter than the longest window"):
        pad_batch(ws, width=2)
    with pytest.raises(ValueError, match="at least one window"):
        pad_batch([])
    with pytest.raises(ValueError, match="pad_id must be a token id"):
        pad_batch(ws, pad_id=-1)


def test_window_check_catches_a_corrupted_window() -> None:
    t = np.array([0, 1], dtype=np.int64)
    t.flags.writeable = False
    bad = Window(0, "beginning", t, 1, 1)  # first_target past the last target
    with pytest.raises(AssertionError):
        bad._check()
