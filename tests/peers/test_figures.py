"""Framework-true peer figures: padding stored, unused capacity, targets the training collator predicts.

The TRL section is a differential test: the installed trl (1.16.0) packs a
fresh stream with ``pack_dataset`` and its own ``DataCollatorForLanguageModeling``
(configured as ``SFTTrainer`` configures it: ``padding_free`` for ``bfd`` and
``bfd_split``) collates the rows; the positions whose label survives the
model's one-token shift must be our ``targets``, and the pad tokens in the
stored rows plus those the padding-free collator adds must be our
``padding_tokens``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.batches import batched
from packing_theory.engine.consumers import feed_all
from packing_theory.engine.events import Horizon, Padding, Placement
from packing_theory.errors import InputError, InputTypeError
from packing_theory.peers import FigureAccumulator, PeerFigures, PeerPacker, TrainerRule, peer_policies
from packing_theory.testing import scaled_examples

PAD = 0  # no document token is 0 below


def figures(name: str, lengths: list[int], capacity: int, **knobs: Any) -> PeerFigures:
    peer = build_packer(name, capacity, **knobs)
    acc = peer.figures(lengths)
    for ev in peer.events(lengths):
        acc.feed(ev)
        acc._check()
    result: PeerFigures = acc.result()
    return result


# ----------------------------------------------------------------------------- the accumulator


def test_rule_units_count_sequences_rows_or_nothing() -> None:
    evs = [Placement(0, 0, 0, 0, 0, 3, False, False), Placement(0, 3, 1, 1, 0, 2, False, False),
           Padding(0, 5, 1), Placement(1, 0, 2, 2, 0, 6, False, False), Horizon(2, 0, "drained", ())]
    got = {}
    for unit in ("row", "sequence", "position"):
        for stores in (True, False):
            (f,) = feed_all(evs, FigureAccumulator(TrainerRule(unit, stores, "ref", "rule"), 6))  # type: ignore[arg-type]
            got[unit, stores] = (f.sequences, f.targets, f.padding_tokens, f.unused_capacity_tokens)
    assert got["row", True] == (2, 9, 1, 1)
    assert got["sequence", False] == (3, 8, 0, 1)
    assert got["position", False] == (0, 11, 0, 1)


def test_accumulator_refuses_bad_input() -> None:
    with pytest.raises(InputError, match="unit must be one of"):
        TrainerRule("token", False, "ref", "rule")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="rule must be a TrainerRule"):
        FigureAccumulator("row", 4)  # type: ignore[arg-type]
    acc = FigureAccumulator(TrainerRule("row", False, "ref", "rule"), 4)
    with pytest.raises(InputError, match="needs the Horizon"):
        acc.result()
    acc.feed(Horizon(0, 0, "drained", ()))
    with pytest.raises(InputError, match="event after the Horizon"):
        acc.feed(Horizon(0, 0, "drained", ()))


def test_every_peer_declares_a_rule_with_a_reference_and_records_every_knob() -> None:
    for name, cls in peer_policies().items():
        rule = cls.trainer_rule
        assert rule is not PeerPacker.trainer_rule, name  # every built-in peer declares its own
        assert rule.reference and rule.rule and "targets" in rule.rule, name
        capacity = 9 if name == "megatron-gpt" else 8
        peer = build_packer(name, capacity)
        assert list(peer.options()) == [k.name for k in cls.knobs], name
        assert peer.options() == {k.name: k.default for k in cls.knobs}, name  # the defaults, recorded


def test_options_record_given_values_and_defaults() -> None:
    assert build_packer("trl-bfd", 8, window=3).options() == {"window": 3, "framework_version": "1.16.0"}
    assert build_packer("torchtune-split", 8, max_packs=2).options() == {
        "padding_idx": 0, "max_packs": 2, "framework_version": "0.6.1"}
    assert figures("seamless", [3, 20, 5], 8, padding=True).rule.stores_padding


def test_start_delays_are_reported_only_for_a_packer_that_emits_rows_as_it_reads() -> None:
    assert build_packer("foundry-concat-wrap", 8).start_delays == "measured"
    for name in ("trl-bfd", "torchtune-split", "megatron-gpt", "olmo-truncate"):
        assert build_packer(name, 8).start_delays.startswith("not reported"), name


def test_padding_is_stored_where_the_framework_stores_it() -> None:
    lengths = [5, 3, 9, 2, 7]
    trl = figures("trl-bfd", lengths, 8)
    olmo = figures("olmo-truncate", lengths, 8)
    assert trl.unused_capacity_tokens == olmo.unused_capacity_tokens > 0  # same BFD bins
    assert (trl.padding_tokens, olmo.padding_tokens) == (0, olmo.unused_capacity_tokens)
    assert trl.targets == trl.placed_tokens - trl.sequences == 25 - 5  # 9 truncated to 8
    assert olmo.targets == olmo.placed_tokens - olmo.rows


def test_megatron_predicts_sequence_length_per_sample() -> None:
    f = figures("megatron-gpt", [5, 3, 9, 2, 11, 4], 5)
    assert f.targets == f.rows * 4 and f.repeated_tokens > 0 and f.padding_tokens == 0


# ----------------------------------------------------------------------------- TRL, differential


def _trl_view(lengths: list[int], L: int, strategy: str, window: int | None) -> tuple[int, int, int]:
    """(stored pad tokens, collator-added pad tokens, predicted positions) from trl itself."""
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("torch")
    trl = pytest.importorskip("trl")
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    datasets.disable_progress_bars()
    docs = [[1 + (d * 7 + p) % 97 for p in range(n)] for d, n in enumerate(lengths)]
    feats = datasets.Features({"input_ids": datasets.List(datasets.Value("int64"))})
    ds = datasets.Dataset.from_dict({"input_ids": docs}, features=feats)
    out = trl.pack_dataset(ds, L, strategy=strategy, map_kwargs={"batch_size": window or len(lengths)})
    rows = out.to_list()
    stored = sum(t == PAD for r in rows for t in r["input_ids"])
    collate = DataCollatorForLanguageModeling(pad_token_id=PAD, padding_free=strategy != "wrapped")
    added = predicted = 0
    for lo in range(0, len(rows), 3):  # batches of 3 rows
        batch = collate(rows[lo:lo + 3])
        added += int(batch["input_ids"].numel()) - sum(len(r["input_ids"]) for r in rows[lo:lo + 3])
        predicted += int((batch["labels"][..., 1:] != -100).sum())  # the causal-LM loss's one-token shift
    return stored, added, predicted


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 12), st.sampled_from(["bfd", "bfd_split", "wrapped"]),
       st.sampled_from([None, 1, 3, 1000]), st.data())
def test_trl_figures_agree_with_trl_itself(L: int, strategy: str, window: int | None, data: Any) -> None:
    lengths = data.draw(st.lists(st.integers(1, 3 * L), min_size=1, max_size=25))
    stored, added, predicted = _trl_view(lengths, L, strategy, window)
    f = figures(f"trl-{strategy}", lengths, L, window=window)
    assert f.padding_tokens == 0 == stored
    if strategy != "wrapped":
        assert added == 0  # padding-free: the batch is one concatenated row
    else:
        assert added <= f.unused_capacity_tokens  # batch-dependent, at most the short rows' room
    assert f.targets == predicted
    assert f.targets == f.placed_tokens - f.sequences


@pytest.mark.parametrize("name", sorted(peer_policies()))
@settings(max_examples=scaled_examples(25), deadline=None)
@given(st.lists(st.integers(2, 30), min_size=1, max_size=30), st.sampled_from([1, 4, 1000]))
def test_figures_of_batches_are_the_figures_of_events(name: str, lengths: list[int], size: int) -> None:
    """The batch path (numpy columns) gives the per-event path's figures and per-occurrence targets."""
    packer = build_packer(name, capacity=8)
    try:
        events = list(packer.events(lengths))
    except ValueError:
        return  # the framework refuses this corpus
    one, many = packer.figures(), packer.figures()
    for ev in events:
        one.feed(ev)
    for b in batched(events, size):
        many.feed(b)
        many._check()
    assert many.result() == one.result()
    assert many.occurrence_targets() == one.occurrence_targets()
