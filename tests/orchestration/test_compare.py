"""``compare_packers`` with peers: framework-true padding and targets, unused capacity, options, delays."""

from __future__ import annotations

import json

import pytest

from packing_theory import InputError
from packing_theory.engine.compiled import compiled_available
from packing_theory.orchestration.compare import compare_packers, default_packers
from packing_theory.rendering.compare import render_markdown

LENGTHS = [3, 9, 2, 4, 10, 1, 7, 7, 12, 5] * 3


def test_peer_columns_carry_the_frameworks_figures() -> None:
    cmp = compare_packers(LENGTHS, ["discard", "trl-bfd", "olmo-truncate", "torchtune-split",
                                    "foundry-concat-wrap", "megatron-gpt"],
                          capacity=9, min_buffer=2, refill=2, peer_options={"trl-bfd": {"window": 7}})
    col = {c.policy: c for c in cmp.columns}
    trl, olmo = col["trl-bfd"], col["olmo-truncate"]
    assert trl.padding_tokens == 0 < trl.unused_capacity_tokens  # TRL stores no padding
    assert olmo.padding_tokens == olmo.unused_capacity_tokens > 0  # OLMo-core stores pad_token_id
    assert trl.peer_figures is not None
    assert trl.targets == trl.emitted_tokens - trl.peer_figures.sequences
    assert trl.peer_figures.sequences == trl.started_sources  # bfd: one sequence per kept document
    assert col["discard"].targets == col["discard"].rows * 8 and col["discard"].peer_figures is None
    assert col["megatron-gpt"].targets == col["megatron-gpt"].rows * (col["megatron-gpt"].row_width - 1)
    assert trl.options == {"window": 7, "framework_version": "1.16.0"}  # given and default
    assert col["megatron-gpt"].options == {"seed": 1234, "num_samples": None, "framework_version": "0.16.1",
                                           "samples": "drawn"}
    # start delays: measured where rows are emitted as the input is read, not reported for offline packers
    ts, fc = col["torchtune-split"].costs, col["foundry-concat-wrap"].costs
    assert ts is not None and fc is not None
    assert ts.start_delay_max is None and col["torchtune-split"].start_delays.startswith("not reported")
    assert fc.start_delay_max is not None and col["foundry-concat-wrap"].start_delays == "measured"
    doc = json.loads(json.dumps(cmp.to_dict()))
    packer = next(p for p in doc["packers"] if p["policy"] == "trl-bfd")
    assert packer["peer_figures"]["rule"]["unit"] == "sequence"
    assert packer["peer_figures"]["options"] == {"window": 7, "framework_version": "1.16.0"}
    md = render_markdown(cmp)
    assert "unused capacity" in md and "Start delays of trl-bfd, olmo-truncate, torchtune-split" in md


# ----------------------------------------------------------------------------- engines


def _timeless(v: object) -> object:
    if isinstance(v, dict):
        return {k: _timeless(x) for k, x in v.items() if k != "seconds"}
    return [_timeless(x) for x in v] if isinstance(v, list) else v


@pytest.mark.skipif(not compiled_available(), reason="numba is not installed (the fast extra)")
@pytest.mark.parametrize("horizon", ["common", "natural"])
def test_the_compiled_engine_gives_the_pure_comparison(horizon: str) -> None:
    """Every packer, streaming policies compiled and peers columnar: the JSON apart from timings."""
    lengths = [(d * 37) % 23 + 1 for d in range(300)] + [60, 1, 2]
    kw: dict[str, object] = {"capacity": 17, "min_buffer": 6, "refill": 3, "horizon": horizon}
    try:
        pure = compare_packers(lengths, **kw).to_dict()  # type: ignore[arg-type]
    except ValueError as exc:  # pragma: no cover - the corpus is chosen so that it runs
        pytest.fail(str(exc))
    fast = compare_packers(lengths, engine="compiled", **kw).to_dict()  # type: ignore[arg-type]
    assert len(pure["packers"]) == len(default_packers()) - len(pure["refused"])
    assert _timeless(fast) == _timeless(pure)


def test_an_unknown_engine_is_refused() -> None:
    with pytest.raises(InputError, match="engine must be one of fast, compiled, reference; got 'jit'"):
        compare_packers([3, 4], ["discard"], capacity=8, min_buffer=2, refill=1, engine="jit")
