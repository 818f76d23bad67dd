"""The refill schedule of ``engine/refill.py``: one-shot iterators cycle the sizes like lists; empty input."""

from __future__ import annotations

import pytest

import packing_theory as pt
from packing_theory.engine.policies import PackerConfig
from packing_theory.engine.refill import refill_batches


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
