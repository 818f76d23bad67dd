"""``packing_theory._unique.distinct`` against ``numpy.unique`` (the values it stands for)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from packing_theory._unique import distinct
from packing_theory.testing import scaled_examples


@settings(max_examples=scaled_examples(200), deadline=None)
@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint8, np.uint64, np.float64, np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=20)))
def test_distinct_is_numpy_unique(values: np.ndarray) -> None:
    want = np.unique(values)
    got = distinct(values)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=values.dtype.kind == "f")


def test_distinct_takes_lists_and_scalars() -> None:
    assert distinct([5, 5, -1]).tolist() == [-1, 5]
    assert distinct(7).tolist() == [7]
