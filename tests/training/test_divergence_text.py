"""A divergence's sentence names what is on each side, or says that a side has nothing."""

from __future__ import annotations

from packing_theory.training.result import Divergence


def test_a_reordered_row_past_the_replay_says_the_replay_has_no_document() -> None:
    both = Divergence("reordered", 3, 1, 0, 2, (12, 0, 40), (882, 0, 40), 7)
    assert both.sentence() == ("step 3, rank 1, micro-batch 0 row 2: reordered: "
                               "document 12 where the replay has document 882")
    past = Divergence("reordered", 3, 1, 0, 2, (12, 0, 40), None, None)
    said = past.sentence()
    assert said.endswith("document 12 where the replay has no document") and "document -" not in said
