"""``packing_theory._unique`` against ``numpy.unique`` (the values it stands for), on both of its paths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from packing_theory import _unique
from packing_theory._unique import distinct, distinct_counts, group_min
from packing_theory.testing import scaled_examples

INTS = st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.uint32, np.uint64])


def _spread() -> st.SearchStrategy[np.ndarray]:
    """Integer arrays both dense (a short span) and sparse (values far apart, the sort)."""
    small = hnp.arrays(INTS, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=30))
    wide = hnp.arrays(np.int64, st.integers(0, 30), elements=st.integers(-(2**62), 2**62))
    return small | wide


@settings(max_examples=scaled_examples(200), deadline=None)
@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint8, np.uint64, np.float64, np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=20)) | _spread())
def test_distinct_is_numpy_unique(values: np.ndarray) -> None:
    want = np.unique(values)
    got = distinct(values)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=values.dtype.kind == "f")


@settings(max_examples=scaled_examples(200), deadline=None)
@given(_spread())
def test_distinct_counts_is_numpy_unique_with_counts(values: np.ndarray) -> None:
    want, want_counts = np.unique(values, return_counts=True)
    got, counts = distinct_counts(values)
    assert got.dtype == want.dtype and counts.dtype == np.int64
    assert np.array_equal(got, want) and np.array_equal(counts, want_counts)


@settings(max_examples=scaled_examples(200), deadline=None)
@given(_spread(), st.randoms(use_true_random=False))
def test_group_min_gives_numpy_unique_s_first_index_and_each_key_s_minimum(values: np.ndarray, rnd) -> None:
    keys = values.ravel()
    want, first = np.unique(keys, return_index=True)
    got, low = group_min(keys, np.arange(keys.size))
    assert got.dtype == want.dtype and np.array_equal(got, want) and np.array_equal(low, first)
    vals = np.array([rnd.randrange(-(2**63), 2**63) for _ in range(keys.size)], np.int64)
    got, low = group_min(keys, vals)
    assert np.array_equal(low, [vals[keys == k].min() for k in want])


@pytest.mark.parametrize("dense", [True, False])
def test_both_paths_are_taken_and_agree(monkeypatch: pytest.MonkeyPatch, dense: bool) -> None:
    """The same input on the table path and, with the span limit at zero, on the sort path."""
    values = np.array([40, 7, 40, 12, 7, 7, 39], np.int64)
    if not dense:
        monkeypatch.setattr(_unique, "_SPAN_PER_VALUE", 0)
        monkeypatch.setattr(_unique, "_SPAN_SLACK", 0)
    assert (_unique._dense_span(values) is not None) is dense
    assert distinct(values).tolist() == [7, 12, 39, 40]
    assert [a.tolist() for a in distinct_counts(values)] == [[7, 12, 39, 40], [3, 1, 1, 2]]
    assert [a.tolist() for a in group_min(values, np.arange(7))] == [[7, 12, 39, 40], [1, 3, 6, 0]]


def test_a_key_whose_minimum_is_the_int64_maximum_is_kept() -> None:
    top = np.iinfo(np.int64).max
    assert [a.tolist() for a in group_min([3, 1], [top, 0])] == [[1, 3], [0, top]]


def test_group_min_refuses_keys_and_values_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="keys and values must have the same length, got 2 and 3"):
        group_min([1, 2], [1, 2, 3])


def test_distinct_takes_lists_and_scalars() -> None:
    assert distinct([5, 5, -1]).tolist() == [-1, 5]
    assert distinct(7).tolist() == [7]
