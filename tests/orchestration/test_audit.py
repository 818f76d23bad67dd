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
