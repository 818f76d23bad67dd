"""The refill schedule of ``engine/refill.py``: one-shot iterators cycle the sizes like lists; empty input."""

from __future__ import annotations

import pytest

import packing_theory as pt
from packing_theory.engine.policies import PackerConfig
from packing_theory.engine.refill import RefillCursor, refill_batches


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


@pytest.mark.parametrize("form", ["list", "iterator"])
def test_a_block_is_its_batch_sources_counted_from_the_first(form: str) -> None:
    """``next_block`` gives (first source, pass, lengths); ``next_batch`` numbers the sources from it."""
    lengths = [5, 3, 9, 4, 7, 1, 2]
    passes = 2 if form == "list" else 1
    cfg = PackerConfig(refill=(3, 2), passes=passes)
    blocks = list(iter(RefillCursor(lengths if form == "list" else iter(lengths), cfg).next_block, None))
    batches = list(iter(RefillCursor(lengths if form == "list" else iter(lengths), cfg).next_batch, None))
    assert batches == [[(first + j, p, n) for j, n in enumerate(block)] for first, p, block in blocks]
    assert [n for _, _, block in blocks for n in block] == lengths * passes
    want = [(0, 0, [5, 3, 9]), (3, 0, [4, 7]), (5, 0, [1, 2])]
    assert blocks == (want + [(s, 1, b) for s, _, b in want] if passes == 2 else want)
