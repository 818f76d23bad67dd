"""compare at one horizon: every packer reconciles with the tokens offered; ranked by never trained."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory.engine.horizon import Budget
from packing_theory.errors import InputError
from packing_theory.orchestration import compare_packers

PACKERS = ["discard", "continue", "segment-first", "bounded-wait", "trl-bfd", "trl-wrapped", "megatron-gpt",
           "foundry-concat-wrap", "olmo-fragment", "torchtune-split", "axolotl-multipack", "seamless"]


def _lengths() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.maximum(1, rng.lognormal(3.0, 1.2, 600)).astype(np.int64)


@pytest.mark.parametrize("horizon", ["common", Budget("tokens", 9000), Budget("rows", 40), "natural"])
def test_every_column_reconciles_with_the_tokens_offered(horizon: Budget | str) -> None:
    arr = _lengths()
    cmp = compare_packers(arr, PACKERS, capacity=64, min_buffer=20, refill=8, horizon=horizon)
    assert not cmp.refused
    for c in cmp.columns:
        nt = c.never_trained
        assert nt is not None and c.horizon is not None
        m = nt.mass()
        total = m["emitted"] + m["dropped"] + m["buffered"] + m["never_reached"]
        assert total == int(arr.sum()) == m["offered"]
        assert m["dropped"] == c.discarded_tokens + c.filtered_tokens
        assert m["buffered"] <= c.buffered_tokens  # the column also counts held BOS markers (segment-first)
        assert m["buffered"] == c.buffered_tokens or c.policy == "segment-first"
    by_name = {c.policy: c.never_trained.tokens for c in cmp.columns}  # type: ignore[union-attr]
    shares = [by_name[n] for n in cmp.ranking]
    assert shares == sorted(shares)
    if isinstance(horizon, Budget) and horizon.unit == "rows":
        assert all(c.rows <= 40 for c in cmp.columns)
    if horizon == "common":
        T = cmp.horizon.value  # type: ignore[union-attr]
        reasons = {c.horizon.reason for c in cmp.columns}  # type: ignore[union-attr]
        assert reasons <= {"budget reached", "stream exhausted", "natural end"}
        # at least one packer ends at the common horizon by its own end; none places fewer tokens
        placed = [c.emitted_tokens for c in cmp.columns
                  if c.horizon.reason == "budget reached"]  # type: ignore[union-attr]
        assert all(p >= T for p in placed)
        assert cmp.headline().startswith(f"at the common token horizon of {T:,} placed tokens")


def test_the_drain_option_reaches_the_streaming_family() -> None:
    arr = _lengths()
    stop = compare_packers(arr, ["continue"], capacity=64, min_buffer=20, refill=8, horizon="natural")
    drain = compare_packers(arr, ["continue"], capacity=64, min_buffer=20, refill=8, horizon="natural",
                            exhausted="drain")
    assert stop.columns[0].horizon.reason == "stream exhausted"  # type: ignore[union-attr]
    assert drain.columns[0].horizon.reason == "drained"  # type: ignore[union-attr]
    assert drain.columns[0].never_trained.tokens < stop.columns[0].never_trained.tokens  # type: ignore[union-attr]
    assert drain.to_dict()["horizon"]["exhausted"] == "drain"


def test_a_bad_horizon_is_refused() -> None:
    with pytest.raises(InputError, match="horizon must be 'common', 'natural' or a Budget"):
        compare_packers([3, 4], ["discard"], capacity=8, min_buffer=2, horizon="soon")
    with pytest.raises(InputError, match="exhausted must be 'stop' or 'drain'"):
        compare_packers([3, 4], ["discard"], capacity=8, min_buffer=2, exhausted="flush")
