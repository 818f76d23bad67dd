"""The first-opened best-fit kernel (``packing_theory/peers/_best_fit_kernel.py``) against a scan of bins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory.testing import scaled_examples

kernel = pytest.importorskip("packing_theory.peers._best_fit_kernel", reason="numba is not installed")


def scan_first_opened(sizes: list[int], order: list[int], capacity: int) -> list[int]:
    """Best fit by scanning every bin: the least space that holds the item, the lowest bin id among those."""
    space: list[int] = []
    out = []
    for i in order:
        fits = [(s, b) for b, s in enumerate(space) if s >= sizes[i]]
        if fits:
            b = min(fits)[1]
        else:
            b = len(space)
            space.append(capacity)
        space[b] -= sizes[i]
        out.append(b)
    return out


@settings(max_examples=scaled_examples(300), deadline=None)
@given(st.integers(1, 20), st.lists(st.integers(1, 20), max_size=120), st.randoms(use_true_random=False))
@example(5, [2, 4, 2, 1, 1], None)  # two bins at space 1: the one opened first takes the last item
def test_kernel_is_a_scan_of_every_bin(capacity: int, sizes: list[int], rnd: object) -> None:
    arr = np.minimum(np.asarray(sizes, dtype=np.int64), capacity)
    order = np.arange(arr.size, dtype=np.int64)
    if rnd is not None:
        order = np.asarray(rnd.sample(range(arr.size), arr.size), dtype=np.int64)  # type: ignore[attr-defined]
    got = kernel.best_fit_first_opened(arr, order, capacity).tolist()
    assert got == scan_first_opened(arr.tolist(), order.tolist(), capacity)


def test_an_empty_order_opens_no_bin() -> None:
    assert kernel.best_fit_first_opened(np.zeros(0, np.int64), np.zeros(0, np.int64), 4).tolist() == []


def test_many_bins_at_one_space_give_the_lowest_id_each_time() -> None:
    """Heaps of many bins: sizes 3 open bins of space 1 in turn; ones then fill them lowest id first."""
    sizes = np.array([3] * 50 + [1] * 50, dtype=np.int64)
    got = kernel.best_fit_first_opened(sizes, np.arange(100, dtype=np.int64), 4).tolist()
    assert got == list(range(50)) * 2
