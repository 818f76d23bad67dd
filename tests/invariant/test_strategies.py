"""The public hypothesis strategies: eager validation, bounds, and what they shrink towards."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis.errors import InvalidArgument

import packing_theory as pt
from packing_theory.invariant import strategies as pst

QUICK = settings(database=None, derandomize=True, max_examples=500, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: pst.lengths(capacity=1), "capacity must be >= 2, got 1"),
        (lambda: pst.lengths(capacity=True), "capacity must be an int"),  # type: ignore[arg-type]
        (lambda: pst.lengths(capacity=8, min_value=0), "min_value must be >= 1, got 0"),
        (lambda: pst.lengths(capacity=8, min_value=5, max_value=4), "max_value=4 must be >= min_value=5"),
        (lambda: pst.lengths(capacity=8, tail=1.5), "tail must be a number in"),
        (lambda: pst.lengths(capacity=8, max_value=8, tail=0.5), "tail=0.5 > 0 needs max_value > capacity"),
        (lambda: pst.lengths(capacity=8, min_value=9, tail=0.5), "needs min_value <= capacity"),
        (lambda: pst.lengths(capacity=8, tie_pool=[]), "tie_pool must be non-empty"),
        (lambda: pst.lengths(capacity=8, tie_pool=[99]), r"tie_pool values \[99\] lie outside"),
        (lambda: pst.arrival_streams(capacity=8, min_size=5, max_size=2), "max_size=2 must be >= min_size=5"),
        (lambda: pst.arrival_streams(capacity=8, ties=1), "ties must be a bool"),  # type: ignore[arg-type]
        (lambda: pst.refill_batches(min_batch=0), "min_batch must be >= 1, got 0"),
        (lambda: pst.refill_batches(min_batch=3, max_batch=2), "max_batch=2 must be >= min_batch=3"),
        (lambda: pst.passes(max_passes=0), "max_passes must be >= 1"),
        (lambda: pst.packer_configs(policies=["shuffle"]), r"policies \['shuffle'\] are not among"),
        (lambda: pst.packer_configs(policies="discard"), "policies must be a non-empty sequence"),
        (lambda: pst.packer_configs(exhausted=["never"]), "exhausted must be a non-empty subset"),
        (lambda: pst.packer_configs(capacity=1), "capacity must be >= 2"),
        (lambda: pst.replay_cases(max_docs=0), "max_docs must be >= 1"),
        (lambda: pst.replay_cases(tail=-0.1), "tail must be a number in"),
    ],
)
def test_arguments_are_validated_eagerly(factory: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        factory()  # raised on the call, before any example is drawn


@given(pst.lengths(capacity=10, min_value=3, max_value=25, tail=0.5, tie_pool=[7, 11]))
def test_lengths_stay_in_bounds(n: int) -> None:
    assert 3 <= n <= 25


@given(pst.arrival_streams(capacity=6, tail=0.0, max_size=30))
def test_no_tail_means_no_long_document(xs: list[int]) -> None:
    assert all(1 <= x <= 6 for x in xs)


@given(pst.arrival_streams(capacity=6, tail=1.0, min_size=1, max_size=30))
def test_full_tail_means_only_long_documents(xs: list[int]) -> None:
    assert xs and all(6 < x <= 24 for x in xs)


@given(pst.refill_batches(min_batch=2, max_batch=5))
def test_refill_batches_are_valid(refill: int | tuple[int, ...]) -> None:
    sizes = (refill,) if isinstance(refill, int) else refill
    assert all(2 <= s <= 5 for s in sizes)
    assert pt.PackerConfig(refill=refill).batch_sizes == sizes


@given(pst.replay_cases(policies=("continue", "segment-first"), max_passes=2, budgets=False))
def test_replay_cases_are_coherent(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, config = case
    assert lengths and config.policy in ("continue", "segment-first") and config.passes <= 2
    assert config.row_budget is None and all(1 <= n <= 3 * config.capacity for n in lengths)
    pt.replay(lengths, config=config)  # runs


def test_boundary_values_are_reachable() -> None:
    for target in (10, 11, 12, 20):  # R, R + 1, R + 2, 2R
        assert find(pst.lengths(capacity=10), lambda n, t=target: n == t, settings=QUICK) == target
    assert find(pst.arrival_streams(capacity=5), lambda xs: len(set(xs)) < len(xs), settings=QUICK)


@pytest.mark.slow  # many find() searches: CI's slow step
def test_shrink_targets() -> None:
    """Each strategy shrinks towards what its docstring says."""
    assert find(pst.lengths(capacity=10, min_value=4), lambda n: True, settings=QUICK) == 4
    assert find(pst.lengths(capacity=10), lambda n: n > 10, settings=QUICK) == 11
    assert find(pst.arrival_streams(capacity=5), lambda xs: True, settings=QUICK) == [1]
    assert find(pst.arrival_streams(capacity=5), lambda xs: any(x > 5 for x in xs), settings=QUICK) == [6]
    assert find(pst.refill_batches(min_batch=3), lambda r: True, settings=QUICK) == 3
    assert find(pst.passes(), lambda p: True, settings=QUICK) == 1
    config = find(pst.packer_configs(policies=("continue", "discard")), lambda c: True, settings=QUICK)
    assert (config.capacity, config.min_buffer, config.refill, config.policy, config.passes,
            config.exhausted, config.row_budget) == (2, 1, 1, "discard", 1, "stop", None)
    lengths, config = find(pst.replay_cases(), lambda c: True, settings=QUICK)
    assert lengths == [1] and config.capacity == 2
