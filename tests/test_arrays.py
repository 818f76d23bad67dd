"""The growable columns' helpers: ``search_sorted`` is numpy's search without converting the haystack."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from packing_theory._arrays import INT32, search_sorted

EDGES = st.sampled_from([int(INT32.min), int(INT32.min) + 1, -1, 0, 1, int(INT32.max) - 1, int(INT32.max)])


@given(st.lists(st.integers(-50, 50) | EDGES, max_size=30),
       st.lists(st.integers(-60, 60) | EDGES | st.sampled_from([2**31, -(2**31) - 1, 2**62]), max_size=30))
def test_search_sorted_is_numpy_s_search(hay: list[int], keys: list[int]) -> None:
    """Keys that fit the column's type and keys past it (which numpy's own conversion takes): the same
    positions as ``numpy.searchsorted`` over the ``int64`` values, on either side, for an array of keys
    and for each key as a Python int."""
    a = np.array(sorted(hay), np.int32)
    wide = a.astype(np.int64)
    k = np.array(keys, np.int64)
    assert search_sorted(a, k).tolist() == np.searchsorted(wide, k).tolist()
    assert search_sorted(a, k, side="right").tolist() == np.searchsorted(wide, k, side="right").tolist()
    for key in keys:
        assert int(search_sorted(a, key)) == int(np.searchsorted(wide, key))
        assert int(search_sorted(a, key, side="right")) == int(np.searchsorted(wide, key, side="right"))
