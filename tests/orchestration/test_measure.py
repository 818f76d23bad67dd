"""One measurement: every packer built from one Settings, cut at one horizon, reconciled with the tokens
offered; a peer's framework figures, options (defaults included) and start delays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from packing_theory import InputError
from packing_theory.engine.compiled import compiled_available
from packing_theory.engine.horizon import Budget
from packing_theory.orchestration import Settings, compare_corpus, default_packers, measure
from packing_theory.registry import entries

LENGTHS = [3, 9, 2, 4, 10, 1, 7, 7, 12, 5] * 3

PACKERS = [
    "discard",
    "continue",
    "segment-first",
    "bounded-wait",
    "trl-bfd",
    "trl-wrapped",
    "megatron-gpt",
    "foundry-concat-wrap",
    "olmo-fragment",
    "torchtune-split",
    "axolotl-multipack",
    "seamless",
]


def _lengths() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.maximum(1, rng.lognormal(3.0, 1.2, 600)).astype(np.int64)


def test_every_peer_run_records_its_options_with_the_defaults() -> None:
    m = measure(
        LENGTHS * 2,
        ["discard", "trl-wrapped", "torchtune-split"],
        Settings(capacity=8, min_buffer=2, refill=2, peer_options={"torchtune-split": {"max_packs": 9}}),
        horizon=Budget("rows", 5),
    )
    blocks = {r.packer: r.to_dict() for r in m.runs}
    assert "peer_figures" not in blocks["discard"]
    assert blocks["trl-wrapped"]["options"] == {"window": 1000, "framework_version": "1.16.0"}
    assert blocks["torchtune-split"]["peer_figures"]["options"] == {
        "padding_idx": 0,
        "max_packs": 9,
        "framework_version": "0.6.1",
    }
    wrapped = m.run("trl-wrapped").aggregates
    assert wrapped.mass.padding_tokens == 0 and wrapped.targets == wrapped.mass.emitted_tokens - wrapped.rows


def test_a_peer_keeps_the_row_positions_and_replaces_padding_and_targets() -> None:
    run = measure([5, 3, 9, 2, 7], ["trl-bfd"], Settings(capacity=8, min_buffer=2), horizon="natural").runs[0]
    agg, f = run.aggregates, run.aggregates.peer_figures
    assert f is not None and run.row_width == 8
    assert agg.rows * 8 == agg.mass.emitted_tokens + agg.mass.unused_capacity_tokens  # every position
    assert (agg.mass.padding_tokens, agg.targets) == (0, f.placed_tokens - f.sequences)


def test_stratum_targets_follow_the_frameworks_rule_and_sum_to_the_total() -> None:
    lengths = [3, 40, 2, 9, 100, 1, 7, 33, 12, 5] * 3
    for name, width in (
        ("trl-bfd_split", 16),
        ("megatron-gpt", 17),
        ("nemo-first_fit", 128),
        ("torchtune-split", 16),
    ):
        run = measure(
            lengths, [name], Settings(capacity=width, min_buffer=2, boundaries=(8, 32)), horizon="natural"
        ).runs[0]
        agg = run.aggregates
        assert sum(s.targets for s in agg.strata) == agg.targets, name
        assert all(s.targets >= 0 for s in agg.strata), name
    # TRL bfd_split: a fragment's first position is input only, so a 40-token document split into
    # fragments of 16, 16 and 8 holds 37 targets; three copies of each of the long ones (40, 100, 33)
    agg = (
        measure(
            lengths,
            ["trl-bfd_split"],
            Settings(capacity=16, min_buffer=2, boundaries=(8, 32)),
            horizon="natural",
        )
        .runs[0]
        .aggregates
    )
    assert agg.strata[2].targets == 3 * (40 - 3) + 3 * (100 - 7) + 3 * (33 - 3)


def test_peer_runs_carry_the_frameworks_figures() -> None:
    m = measure(
        LENGTHS,
        ["discard", "trl-bfd", "olmo-truncate", "torchtune-split", "foundry-concat-wrap", "megatron-gpt"],
        Settings(seq_length=8, min_buffer=2, refill=2, peer_options={"trl-bfd": {"window": 7}}),
    )
    run = {r.packer: r for r in m.runs}
    trl, olmo = run["trl-bfd"], run["olmo-truncate"]
    assert trl.aggregates.mass.padding_tokens == 0 < trl.aggregates.mass.unused_capacity_tokens
    assert olmo.aggregates.mass.padding_tokens == olmo.aggregates.mass.unused_capacity_tokens > 0
    f = trl.aggregates.peer_figures
    assert f is not None
    assert trl.aggregates.targets == trl.aggregates.mass.emitted_tokens - f.sequences
    assert run["discard"].aggregates.targets == run["discard"].aggregates.rows * 8
    meg = run["megatron-gpt"]
    assert (meg.row_width, run["discard"].row_width, trl.row_width, olmo.row_width) == (9, 9, 8, 8)
    assert meg.aggregates.targets == meg.aggregates.rows * (meg.row_width - 1)
    assert trl.options == {"window": 7, "framework_version": "1.16.0"}  # given and default
    assert meg.options == {
        "seed": 1234,
        "num_samples": None,
        "framework_version": "0.16.1",
        "samples": "drawn",
    }
    # start delays: measured where rows are emitted as the input is read, not reported for offline packers
    ts, fc = run["torchtune-split"], run["foundry-concat-wrap"]
    assert ts.costs.start_delay_max is None and ts.start_delays.startswith("not reported")
    assert fc.costs.start_delay_max is not None and fc.start_delays == "measured"
    doc = json.loads(json.dumps(m.to_dict()))
    packer = next(p for p in doc["packers"] if p["packer"] == "trl-bfd")
    assert packer["peer_figures"]["rule"]["unit"] == "sequence"
    assert packer["options"] == {"window": 7, "framework_version": "1.16.0"}


def test_capacity_is_every_packers_row_width_and_a_framework_that_needs_another_is_named() -> None:
    m = measure(LENGTHS, ["discard", "trl-bfd", "megatron-gpt"], Settings(capacity=9, min_buffer=2))
    assert {r.packer: r.row_width for r in m.runs} == {"discard": 9, "trl-bfd": 9, "megatron-gpt": 9}
    assert m.run("megatron-gpt").seq_length == 8 and m.run("trl-bfd").seq_length == 9
    with pytest.raises(
        InputError,
        match=r"capacity 9: olmo-fragment packs rows whose width is a power of two.*"
        "seq_length",
    ):
        measure(LENGTHS, ["discard", "olmo-fragment"], Settings(capacity=9, min_buffer=2))


@pytest.mark.parametrize("horizon", ["common", Budget("tokens", 9000), Budget("rows", 40), "natural"])
def test_every_run_reconciles_with_the_tokens_offered(horizon: Budget | str) -> None:
    arr = _lengths()
    m = measure(arr, PACKERS, Settings(seq_length=63, min_buffer=20, refill=8), horizon=horizon)
    assert not m.refused
    for r in m.runs:
        nt = r.never_trained
        mass = nt.mass()
        assert mass["emitted"] + mass["dropped"] + mass["buffered"] + mass["never_reached"] == int(arr.sum())
        assert mass["dropped"] == r.aggregates.mass.discarded_tokens + r.aggregates.mass.filtered_tokens
        assert mass["buffered"] <= r.aggregates.mass.buffered_tokens  # held BOS markers (segment-first)
    if isinstance(horizon, Budget) and horizon.unit == "rows":
        assert all(r.aggregates.rows <= 40 for r in m.runs)
    if horizon == "common":
        T = m.horizon.value  # type: ignore[union-attr]
        assert {r.horizon.reason for r in m.runs} <= {"budget reached", "stream exhausted", "natural end"}
        placed = [r.aggregates.mass.emitted_tokens for r in m.runs if r.horizon.reason == "budget reached"]
        assert all(p >= T for p in placed)
        assert m.horizon_set_by and all(n in PACKERS for n in m.horizon_set_by)


def test_the_drain_option_reaches_the_streaming_family() -> None:
    arr = _lengths()
    stop = measure(arr, ["continue"], Settings(capacity=64, min_buffer=20, refill=8), horizon="natural")
    drain = measure(
        arr,
        ["continue"],
        Settings(capacity=64, min_buffer=20, refill=8, exhausted="drain"),
        horizon="natural",
    )
    assert stop.runs[0].horizon.reason == "stream exhausted"
    assert drain.runs[0].horizon.reason == "drained"
    assert drain.runs[0].never_trained.tokens < stop.runs[0].never_trained.tokens
    assert drain.to_dict()["settings"]["exhausted"] == "drain"


def test_packers_that_stop_at_different_points_are_said_to() -> None:
    arr = _lengths()
    m = measure(
        arr,
        ["discard", "trl-bfd"],
        Settings(capacity=64, min_buffer=20, refill=8),
        horizon=Budget("rows", 10**6),
    )
    note = m.horizon_note()
    assert "not every packer reached 1,000,000 rows" in note and "discard (stream exhausted" in note
    assert m.to_dict()["horizon"]["note"] == note
    same = measure(
        arr, ["discard", "trl-bfd"], Settings(capacity=64, min_buffer=20, refill=8), horizon=Budget("rows", 5)
    )
    assert same.horizon_note() == ""


def test_bad_settings_and_horizons_are_refused() -> None:
    with pytest.raises(InputError, match="horizon must be 'common', 'natural' or a Budget"):
        measure([3, 4], ["discard"], Settings(capacity=8, min_buffer=2), horizon="soon")
    with pytest.raises(InputError, match="exhausted must be one of stop, drain; got 'flush'"):
        Settings(exhausted="flush")
    with pytest.raises(InputError, match="engine must be one of fast, compiled, reference; got 'jit'"):
        Settings(engine="jit")
    with pytest.raises(InputError, match="give one of capacity"):
        Settings(capacity=8, seq_length=7)
    with pytest.raises(InputError, match="peer_options names 'trl-bfd', which is not a measured peer"):
        measure([3, 4], ["discard"], Settings(capacity=8, min_buffer=2, peer_options={"trl-bfd": {}}))
    with pytest.raises(InputError, match="takes no option 'windows'"):
        measure([3, 4], ["trl-bfd"], Settings(capacity=8, peer_options={"trl-bfd": {"windows": 3}}))
    with pytest.raises(InputError, match="packers must not repeat"):
        measure([3, 4], ["discard", "discard"])


def _timeless(v: object) -> object:
    if isinstance(v, dict):
        return {k: _timeless(x) for k, x in v.items() if k != "seconds"}
    return [_timeless(x) for x in v] if isinstance(v, list) else v


@pytest.mark.skipif(not compiled_available(), reason="numba is not installed (the fast extra)")
@pytest.mark.parametrize("horizon", ["common", "natural"])
def test_the_compiled_engine_gives_the_pure_comparison(horizon: str) -> None:
    """Every packer, streaming policies compiled and peers columnar: the JSON apart from timings."""
    lengths = [(d * 37) % 23 + 1 for d in range(300)] + [60, 1, 2]
    pure = compare_corpus(
        lengths, None, Settings(seq_length=16, min_buffer=6, refill=3), horizon=horizon
    ).to_dict()
    fast = compare_corpus(
        lengths, None, Settings(seq_length=16, min_buffer=6, refill=3, engine="compiled"), horizon=horizon
    ).to_dict()
    assert (
        len(pure["packers"])
        == len(default_packers()) - len(pure["refused"])
        == len(entries()) - len(pure["refused"])
    )
    fast["settings"].pop("engine")
    pure["settings"].pop("engine")
    assert _timeless(fast) == _timeless(pure)


def test_a_task_runner_gives_the_same_runs_as_this_process() -> None:
    arr = _lengths()
    here = measure(arr, ["discard", "trl-bfd", "megatron-gpt"], Settings(seq_length=63, min_buffer=20))
    pool = measure(
        arr, ["discard", "trl-bfd", "megatron-gpt"], Settings(seq_length=63, min_buffer=20), workers=2
    )
    assert _timeless(pool.to_dict()) == _timeless(here.to_dict())
