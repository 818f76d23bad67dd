"""The policy rules of ``engine/policies.py`` by hand: segment-first chunks, crop outcomes, the config.

Both engines call the same helpers (``segment``, ``crop_outcome``), so the
differential test cannot see a bug in them: every expectation here is written
out by hand or recomputed by brute force over token positions, never by
calling the helper under test. Two planted bugs of ``tools/mutation.py
planted`` must fail this file: the segment-first chunk size
(``text = max(1, capacity - 2)``) and the random-span window range
(``randrange(length - m)``, the last window never drawn). Tests that name a
mutmut mutant kill a survivor of ``tools/mutation.py run``.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.engine.events import BosAdded
from packing_theory.engine.policies import CropOutcome, PackerConfig, crop_outcome, segment

# ------------------------------------------------------------------- the segment-first chunk size


def _expected_chunks(L: int, R: int) -> list[tuple[int, int, bool]]:
    """Chunks written out token by token: the first R tokens (own BOS + R-1 text), then BOS + R-1 text."""
    if L <= R:
        return [(0, L, False)]
    out = [(0, R, False)]
    text_left = list(range(R, L))  # source offsets not yet in a chunk
    while text_left:
        piece, text_left = text_left[: R - 1], text_left[R - 1:]
        out.append((piece[0], len(piece) + 1, True))
    return out


@pytest.mark.parametrize("R", [2, 3, 4, 7])
def test_segment_chunks_by_hand(R: int) -> None:
    for L in range(1, 6 * R):
        assert segment(L, R) == _expected_chunks(L, R), (L, R)


def test_segment_hand_written_examples() -> None:
    # R = 4: chunks hold one BOS and at most 3 text tokens
    assert segment(11, 4) == [(0, 4, False), (4, 4, True), (7, 4, True), (10, 2, True)]
    assert segment(10, 4) == [(0, 4, False), (4, 4, True), (7, 4, True)]
    assert segment(8, 4) == [(0, 4, False), (4, 4, True), (7, 2, True)]


def test_segment_first_replay_adds_one_marker_per_extra_chunk() -> None:
    """A long document of length L becomes 1 + ceil((L - R) / (R - 1)) chunks: counted by hand."""
    R = 5
    lengths = [5, 6, 9, 10, 13, 14, 21]
    # L - R text tokens after the first chunk, R - 1 = 4 per chunk
    expected_markers = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4}
    rep = pt.replay(lengths, capacity=R, min_buffer=1, refill=1, policy="segment-first", exhausted="drain")
    markers = {e.occurrence: e.markers for e in rep.events if isinstance(e, BosAdded)}
    assert {occ: markers.get(occ, 0) for occ in range(len(lengths))} == expected_markers
    assert all(p.length <= R for p in rep.placements)


# ---------------------------------------------------------------- crop outcomes: the random-span window range


def _window(out: Any) -> int:
    """Source offset of the first text token a random-span crop emits (1 = the plain prefix)."""
    return int(out.start) if out.bos_inserted else int(out.start) + 1


@pytest.mark.parametrize(("L", "m"), [(5, 3), (6, 2), (9, 4), (4, 3), (3, 2)])
def test_random_span_draws_every_window_and_only_those(L: int, m: int) -> None:
    """A crop of m tokens emits BOS + m-1 text tokens; the text window starts at 1 .. L-m+1."""
    windows = set(range(1, L - m + 2))  # by hand: L-1 text tokens, windows of m-1 of them
    seen: Counter[int] = Counter()
    for seed in range(400):
        seen[_window(crop_outcome("random-span", 0, L, False, m, random.Random(seed)))] += 1
    assert set(seen) == windows
    # uniform: every window well above a third of its expected count
    assert min(seen.values()) > 400 / len(windows) / 3


@pytest.mark.parametrize(("L", "m"), [(5, 3), (6, 2), (9, 4), (4, 3), (7, 6)])
def test_random_span_covers_every_offset_once(L: int, m: int) -> None:
    """Placement (own BOS + window) and discards partition the source offsets 0 .. L-1."""
    for seed in range(60):
        out = crop_outcome("random-span", 0, L, False, m, random.Random(seed))
        a = _window(out)
        covered = [0, *range(a, a + m - 1)]  # the (moved) own BOS, then the window
        for start, k in out.discards:
            covered += list(range(start, start + k))
        assert sorted(covered) == list(range(L)), (seed, out)
        assert out.bos_inserted == (a > 1)  # only a moved BOS is flagged
        assert out.keep is None and out.requeue is None


def test_random_span_bos_only_crop_draws_nothing() -> None:
    rng = random.Random(0)
    state = rng.getstate()
    out = crop_outcome("random-span", 0, 7, False, 1, rng)
    assert (out.start, out.bos_inserted, out.discards) == (0, False, ((1, 6),))
    assert rng.getstate() == state


def test_random_span_replay_reaches_the_last_window() -> None:
    """Through the engine: R = 4; a document of length 6 is cropped to 3 tokens at offset 1 of row 0."""
    windows = set()
    for seed in range(200):
        rep = pt.replay([1, 6, 6], capacity=4, min_buffer=2, refill=2, policy="random-span",
                        seed=seed, rows=1)
        crop = [p for p in rep.placements if p.crop]
        assert len(crop) == 1 and crop[0].length == 3 and crop[0].offset == 1
        windows.add(crop[0].start if crop[0].bos_inserted else crop[0].start + 1)
    assert windows == {1, 2, 3, 4}  # L - m + 1 = 4 windows of 2 text tokens among 5


# ------------------------------------------------------------------- crop outcomes by hand, exact messages


def test_continue_crop_keeps_the_suffix_in_place() -> None:
    """x_crop_outcome__mutmut_11, _12, _15: a ``continue`` crop keeps (start + m - bos, L - m) in place."""
    # a whole original of 10 tokens cropped to 4: positions 0-3 emitted, source offsets 4..9 kept
    assert crop_outcome("continue", 0, 10, False, 4, None) == CropOutcome(0, False, (), (4, 6, False), None)
    # a remainder starting with an inserted BOS at source offset 5: BOS + offsets 5, 6 emitted
    assert crop_outcome("continue", 5, 6, True, 3, None) == CropOutcome(5, True, (), (7, 3, False), None)


def test_requeue_bos_crop_by_hand() -> None:
    """x_crop_outcome__mutmut_26, _30: a one-token leftover is dropped, a longer one requeued with a BOS."""
    # leftover of 2 tokens (offsets 8, 9): requeued as BOS + 2 tokens, nothing discarded
    assert crop_outcome("requeue-bos", 0, 10, False, 8, None) == CropOutcome(0, False, (), None, (8, 3, True))
    # leftover of exactly 1 token (offset 9): dropped, as nanochat PR #544 does
    assert crop_outcome("requeue-bos", 0, 10, False, 9, None) == CropOutcome(0, False, ((9, 1),), None, None)


def test_random_span_without_rng_names_the_problem() -> None:
    """x_crop_outcome__mutmut_55 .. _58: the error message is exact."""
    with pytest.raises(ValueError, match=r"^random-span crops need an rng, got None$"):
        crop_outcome("random-span", 0, 10, False, 4, None)


def test_random_span_last_window_has_one_discard() -> None:
    """x_crop_outcome__mutmut_73: a window that ends at the document's end leaves no empty discard."""
    L, m = 6, 3
    lasts = 0
    for seed in range(200):
        out = crop_outcome("random-span", 0, L, False, m, random.Random(seed))
        assert all(k >= 1 for _, k in out.discards), out
        if out.bos_inserted and out.start == L - m + 1:  # text offsets 4, 5: the last window
            lasts += 1
            assert out.discards == ((1, 3),)
    assert lasts > 0


def test_config_and_length_errors_are_exact() -> None:
    """xǁPackerConfigǁ__post_init____mutmut_55, _96 and x_as_length_list__mutmut_10: exact messages."""
    with pytest.raises(TypeError, match=r"^seed must be an int, got float 1\.5$"):
        PackerConfig(seed=1.5)  # type: ignore[arg-type]
    empty_refill = r"^refill must be a positive int or a non-empty sequence, got \[\]$"
    with pytest.raises(ValueError, match=empty_refill):
        PackerConfig(refill=())
    with pytest.raises(ValueError, match=r"^lengths is empty: a replay needs at least one document$"):
        list(pt.Packer(capacity=4, min_buffer=1).events([]))


def test_policy_and_targets_errors_are_exact() -> None:
    """xǁPackerConfigǁ__post_init____mutmut_111, _141, _147, _148, _149."""
    with pytest.raises(ValueError, match=(r"^policy must be one of discard, continue, requeue-bos, "
                                          r"segment-first, random-span, bounded-wait, bestfit-pad; "
                                          r"got 'fifo'$")):
        PackerConfig(policy="fifo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^targets must be >= 0, got -1$"):
        PackerConfig(targets=-1)
    with pytest.raises(TypeError, match=r"^targets must be an int, got str '7'$"):
        PackerConfig(targets="7")  # type: ignore[arg-type]
    # a zero budget is valid: no row at all
    cfg = PackerConfig(capacity=4, min_buffer=1, targets=0)
    assert cfg.row_budget == 0
    assert pt.replay([3, 5], config=cfg).horizon.rows == 0


# ------------------------------------------------------------------- the configuration and the summary


def test_numpy_integers_in_the_config() -> None:
    cfg = pt.PackerConfig(capacity=np.int64(4), min_buffer=np.int32(1), refill=np.int64(1),
                          seed=np.int64(3), policy="random-span", rows=np.int64(2))
    assert all(type(v) is int for v in (cfg.capacity, cfg.min_buffer, cfg.refill, cfg.seed, cfg.rows))
    assert pt.replay([9, 3, 9, 2], config=cfg).summary().rows == 2


def test_exhausted_at_row_in_stop_mode() -> None:
    s = pt.replay([3] * 5, capacity=4, min_buffer=2, refill=1).summary()
    assert s.stop_reason == "exhausted" and s.exhausted_at_row == s.rows
