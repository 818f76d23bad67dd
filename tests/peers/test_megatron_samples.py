"""Megatron with ``num_samples``: the replay reports the samples a trainer draws, not the whole index.

``GPTDataset`` builds its sample index for enough epochs to hold
``num_samples`` samples, so the index usually holds more; a trainer's sampler
walks dataset indices ``0 .. num_samples - 1``. The live test runs
megatron-core's own index builders (``tools/peer_runners.py``) and checks
that our drawn rows are the framework's first ``num_samples`` samples.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import Ledger, build_packer
from packing_theory.engine.events import Horizon
from packing_theory.errors import InputError
from packing_theory.orchestration import Settings, measure
from tests.tool_modules import load_tool


def _ledger(peer: Any, lengths: list[int]) -> Any:
    led = Ledger(peer.capacity, 1)
    for ev in peer.events(lengths):
        led.feed(ev)
        led._check()
    return led.result()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=12), st.integers(3, 9), st.integers(1, 40),
       st.integers(0, 5))
def test_drawn_samples_are_the_first_num_samples_of_the_index(lengths: list[int], R: int, n: int,
                                                               seed: int) -> None:
    if sum(lengths) <= 1:
        return
    drawn = build_packer("megatron-gpt", R, num_samples=n, seed=seed)
    index = build_packer("megatron-gpt", R, num_samples=n, seed=seed, samples="index")
    fig = drawn.horizon_figures(lengths)
    assert fig["samples_drawn"] == n <= fig["samples_in_index"]
    d_rows, _ = load_tool("peer_inputs").our_rows(drawn, lengths)
    i_rows, _ = load_tool("peer_inputs").our_rows(index, lengths)
    assert d_rows == i_rows[:n]  # the same samples, in dataset order, then the trainer stops
    agg = _ledger(drawn, lengths)
    assert agg.rows == n and agg.mass.identity_holds and agg.conservation_violations == 0
    full = _ledger(index, lengths)
    # tokens shown by no drawn sample are never reached: buffered at the horizon, not emitted
    assert agg.mass.emitted_tokens + agg.mass.buffered_tokens == full.mass.emitted_tokens
    assert agg.mass.discarded_tokens == full.mass.discarded_tokens  # the dropped partial sample
    assert agg.stop_reason == ("drained" if n == fig["samples_in_index"] else "rows")


def test_without_num_samples_a_trainer_draws_the_epoch() -> None:
    peer = build_packer("megatron-gpt", 5)
    events = list(peer.events([5, 3, 9, 2]))
    assert events[-1] == Horizon(4, 0, "drained", ())
    assert peer.horizon_figures([5, 3, 9, 2])["samples_drawn"] == 4


def test_audit_reports_only_the_drawn_samples_and_records_the_options() -> None:
    lengths = [5, 3, 9, 2, 11, 4, 6]
    m = measure(lengths, ["megatron-gpt"], Settings(capacity=5, min_buffer=2,
                                                    peer_options={"megatron-gpt": {"num_samples": 12}}),
                horizon="natural")
    agg = m.runs[0].aggregates
    assert agg.peer_figures is not None
    h = agg.peer_figures.horizon
    assert (agg.rows, h["samples_drawn"]) == (12, 12) and h["samples_in_index"] > 12
    assert agg.targets == 12 * 4  # sequence_length targets per drawn sample
    assert agg.peer_figures.options == {"seed": 1234, "num_samples": 12, "framework_version": "0.16.1",
                                "samples": "drawn"}
    assert agg.to_dict()["peer_figures"]["options"]["samples"] == "drawn"


def test_samples_choice_is_checked() -> None:
    with pytest.raises(InputError, match="samples must be one of 'drawn', 'index'; got 'all'"):
        build_packer("megatron-gpt", 5, samples="all")


@pytest.mark.parametrize("num_samples", [3, 7, 20])
def test_drawn_rows_agree_with_megatron_core(num_samples: int) -> None:
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("megatron-core (pip install --no-deps megatron-core) is not installed")
    runners = load_tool("peer_runners")
    inputs = load_tool("peer_inputs")
    for k, lengths in enumerate(([5, 3, 9, 2, 11, 4], [17, 1, 1, 8, 30, 2, 6, 6], [40, 3])):
        cfg = {"seq_length": 4 + k, "options": {"seed": 7 + k, "num_samples": num_samples}}
        theirs, _ = runners.run_megatron(cfg, lengths)
        peer = build_packer("megatron-gpt", seq_length=4 + k, seed=7 + k, num_samples=num_samples)
        ours, _ = inputs.our_rows(peer, lengths)
        assert len(theirs) >= num_samples
        assert ours == theirs[:num_samples], lengths


@pytest.mark.parametrize(("lengths", "seq_length"), [
    ([5, 3, 9, 2, 11, 4], 1),  # helpers.cpp asserts seq_length > 1; the shipped compiled helper does not
    ([1], 4),  # a one-token corpus: tokens_per_epoch > 1 is asserted, not checked: no sample
    ([1, 0, 0], 1),
    ([0, 3], 1),
])
def test_edge_inputs_replay_the_shipped_helper(lengths: list[int], seq_length: int) -> None:
    """Before the fix these were refused, citing asserts that megatron-core 0.16.1's compiled helper
    does not run."""
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("megatron-core (pip install --no-deps megatron-core) is not installed")
    runners = load_tool("peer_runners")
    inputs = load_tool("peer_inputs")
    cfg = {"seq_length": seq_length, "options": {"seed": 3, "num_samples": None}}
    theirs, _ = runners.run_megatron(cfg, lengths)
    peer = build_packer("megatron-gpt", seq_length=seq_length, seed=3)
    ours, _ = inputs.our_rows(peer, lengths)
    assert ours == theirs
    assert len(ours) == max(sum(lengths) - 1, 0) // seq_length
