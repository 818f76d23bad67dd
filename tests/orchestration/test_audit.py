"""``run_audit`` / ``audit_peer`` with peers: every peer entry records its options, defaults included."""

from __future__ import annotations

from packing_theory.engine.policies import PackerConfig
from packing_theory.orchestration.audit import audit_peer, run_audit


def test_every_peer_entry_records_its_options_with_the_defaults() -> None:
    lengths = [3, 9, 2, 4, 10, 1, 7, 7, 12, 5] * 4
    result = run_audit(lengths, PackerConfig(capacity=8, min_buffer=2, refill=2, rows=5),
                       policies=["discard", "trl-wrapped", "torchtune-split"],
                       peer_options={"torchtune-split": {"max_packs": 9}}, permutations=0)
    blocks = {a.policy: a.to_dict() for a in result.policies}
    assert "peer_figures" not in blocks["discard"]
    assert blocks["trl-wrapped"]["peer_figures"]["options"] == {"window": 1000, "framework_version": "1.16.0"}
    assert blocks["torchtune-split"]["peer_figures"]["options"] == {
        "padding_idx": 0, "max_packs": 9, "framework_version": "0.6.1"}
    wrapped = result.policy("trl-wrapped")
    assert wrapped.mass.padding_tokens == 0 and wrapped.targets == wrapped.mass.emitted_tokens - wrapped.rows


def test_audit_peer_keeps_the_row_positions_and_replaces_padding_and_targets() -> None:
    lengths = [5, 3, 9, 2, 7]
    agg = audit_peer(lengths, "trl-bfd", 8, 2)
    f = agg.peer_figures
    assert f is not None
    assert agg.rows * 8 == agg.mass.emitted_tokens + agg.mass.unused_capacity_tokens  # every position
    assert (agg.mass.padding_tokens, agg.targets) == (0, f.placed_tokens - f.sequences)


def test_stratum_targets_follow_the_frameworks_rule_and_sum_to_the_total() -> None:
    lengths = [3, 40, 2, 9, 100, 1, 7, 33, 12, 5] * 3
    for name, width in (("trl-bfd_split", 16), ("megatron-gpt", 17), ("nemo-first_fit", 128),
                        ("torchtune-split", 16)):
        agg = audit_peer(lengths, name, width, 2, boundaries=(8, 32))
        assert sum(s.targets for s in agg.strata) == agg.targets, name
        assert all(s.targets >= 0 for s in agg.strata), name
    # TRL bfd_split: a fragment's first position is input only, so a 40-token document split into
    # fragments of 16, 16 and 8 holds 37 targets; three copies of each of the long ones (40, 100, 33)
    agg = audit_peer(lengths, "trl-bfd_split", 16, 2, boundaries=(8, 32))
    assert agg.strata[2].targets == 3 * (40 - 3) + 3 * (100 - 7) + 3 * (33 - 3)
