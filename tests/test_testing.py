"""``packing_theory.testing``: example counts follow the active hypothesis profile."""

from __future__ import annotations

import pytest
from hypothesis import settings

import packing_theory.invariant.strategies
from packing_theory import InputError, InputTypeError
from packing_theory.testing import REFERENCE_EXAMPLES, scaled_examples, strategies


@pytest.mark.parametrize(("profile_examples", "count", "want"), [
    (200, 60, 60), (30, 60, 9), (2000, 60, 600), (20, 8, 1), (30, 1, 1), (30, 3000, 450),
])
def test_counts_scale_with_the_profile(profile_examples: int, count: int, want: int) -> None:
    settings.register_profile("scaled-examples-test", max_examples=profile_examples)
    previous = settings.get_current_profile_name()
    settings.load_profile("scaled-examples-test")
    try:
        assert scaled_examples(count) == want
    finally:
        settings.load_profile(previous)
    assert REFERENCE_EXAMPLES == 200


def test_bad_counts_are_refused() -> None:
    with pytest.raises(InputError, match="count must be >= 1, got 0"):
        scaled_examples(0)
    with pytest.raises(InputTypeError, match=r"count must be an int, got float 2\.5"):
        scaled_examples(2.5)  # type: ignore[arg-type]


def test_strategies_are_the_invariant_strategies() -> None:
    assert strategies is packing_theory.invariant.strategies
