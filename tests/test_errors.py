"""Bad input raises clear errors naming the parameter and the value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import packing_theory as pt


@pytest.mark.parametrize(
    ("kwargs", "exc", "pattern"),
    [
        ({"capacity": 1}, ValueError, r"capacity must be >= 2, got 1"),
        ({"capacity": 2.0}, TypeError, r"capacity must be an int, got float"),
        ({"min_buffer": 0}, ValueError, r"min_buffer must be >= 1, got 0"),
        ({"min_buffer": True}, TypeError, r"min_buffer must be an int, got bool"),
        ({"refill": 0}, ValueError, r"refill must be >= 1, got 0"),
        ({"refill": [4, 0]}, ValueError, r"refill\[1\] must be >= 1, got 0"),
        ({"refill": []}, ValueError, r"refill must be a positive int or a non-empty sequence"),
        ({"refill": "128"}, TypeError, r"refill must be an int or a sequence of ints, got str"),
        ({"policy": "crop"}, ValueError, r"policy must be one of .*got 'crop'"),
        ({"passes": 0}, ValueError, r"passes must be >= 1, got 0"),
        ({"rows": -1}, ValueError, r"rows must be >= 0, got -1"),
        ({"rows": 2, "targets": 5}, ValueError, r"rows and targets are exclusive"),
        ({"exhausted": "wait"}, ValueError, r"exhausted must be 'stop' or 'drain', got 'wait'"),
        ({"seed": 1.5}, TypeError, r"seed must be an int"),
    ],
)
def test_config_errors(kwargs: dict[str, Any], exc: type[Exception], pattern: str) -> None:
    with pytest.raises(exc, match=pattern):
        pt.PackerConfig(**kwargs)


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize(
    ("lengths", "exc", "pattern"),
    [
        ([], ValueError, r"lengths is empty"),
        (np.array([], dtype=np.int64), ValueError, r"lengths is empty"),
        ([3, 0, 2], ValueError, r"lengths\[1\] must be a positive BOS-inclusive length, got 0"),
        ([3, -2], ValueError, r"lengths\[1\] must be a positive"),
        ([3, 2.5], TypeError, r"lengths\[1\] must be an int, got float"),
        ([True], TypeError, r"lengths\[0\] must be an int, got bool"),
        (np.array([1.0, 2.0]), TypeError, r"integer dtype, got float64"),
        (np.array([True]), TypeError, r"integer dtype, got bool"),
        (np.ones((2, 2), dtype=np.int64), ValueError, r"must be 1-D, got shape \(2, 2\)"),
        (np.array([4, 0], dtype=np.int32), ValueError, r"lengths\[1\] must be a positive"),
        ("abc", TypeError, r"lengths must be a sequence of ints, got str"),
        (5, TypeError, r"lengths must be a sequence, array or iterable of ints, got int"),
        (("iter", []), ValueError, r"lengths is empty"),
        (("iter", [4, 0]), ValueError, r"lengths\[1\] must be a positive"),
    ],
)
def test_length_errors(engine: str, lengths: object, exc: type[Exception], pattern: str) -> None:
    if isinstance(lengths, tuple):  # a fresh one-shot iterator per engine
        lengths = iter(lengths[1])
    with pytest.raises(exc, match=pattern):
        pt.replay(lengths, engine=engine, capacity=4, min_buffer=1)  # type: ignore[arg-type]


def test_passes_need_reiterable_input() -> None:
    with pytest.raises(ValueError, match=r"passes=2 needs a re-iterable"):
        pt.replay(iter([1, 2, 3]), capacity=4, min_buffer=1, passes=2)


def test_unknown_engine() -> None:
    with pytest.raises(ValueError, match=r"engine must be one of fast, compiled, reference; got 'slow'"):
        pt.replay([1], engine="slow")  # type: ignore[arg-type]


def test_config_and_kwargs_are_exclusive() -> None:
    with pytest.raises(TypeError, match="either config or keyword"):
        pt.Packer(pt.PackerConfig(), capacity=5)


def test_targets_budget_rounds_up_to_whole_rows() -> None:
    cfg = pt.PackerConfig(capacity=2049, targets=499_646_464)
    assert cfg.row_budget == 243_968
    assert pt.PackerConfig(capacity=5, targets=9).row_budget == 3
