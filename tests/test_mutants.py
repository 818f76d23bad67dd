"""Tests written to kill the mutants that survived ``python tools/mutation.py run``.

Each test names the mutant(s) it kills (mutmut's names, in the module's
section). Expectations are computed by hand or by brute force, never by
calling the helper under test. Mutants judged equivalent are listed, with
the reason, in ``docs/mutation.rst``.
"""

from __future__ import annotations

import random

import pytest

import packing_theory as pt
from packing_theory.engine.policies import CropOutcome, PackerConfig, crop_outcome, refill_batches

# ------------------------------------------------------------------- engine/policies.py


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


def test_one_shot_iterator_cycles_the_batch_sizes_in_order() -> None:
    """x__stream_batches__mutmut_24: a streamed input uses refill sizes 1, 2, 3, 1, 2, ... like a list."""
    cfg = PackerConfig(capacity=4, min_buffer=1, refill=(1, 2, 3))
    sizes = [len(b) for b in refill_batches(iter([2] * 13), cfg)]
    assert sizes == [1, 2, 3, 1, 2, 3, 1]  # 13 = 1+2+3+1+2+3+1
    assert [len(b) for b in refill_batches([2] * 13, cfg)] == sizes


def test_empty_one_shot_iterator_message() -> None:
    """x__stream_batches__mutmut_21: the streamed input's empty error is exact."""
    with pytest.raises(ValueError, match=r"^lengths is empty: a replay needs at least one document$"):
        list(pt.Packer(capacity=4, min_buffer=1).events(iter([])))
