"""``audit/population.py``: the evaluation population against a brute-force count over token positions.

The planted bug of ``tools/mutation.py planted`` (the budget cut one target
early) must fail this file; tests that name a mutmut mutant kill a survivor of
``tools/mutation.py run``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.audit import evaluation_population
from packing_theory.engine.policies import PackerConfig

# ----------------------------------------------------------------- clipping at the budget against brute force


def _brute_population(lengths: list[int], R: int, B: int, refill: int, targets: int,
                      bounds: tuple[int, ...]) -> dict[str, Any]:
    """Target indices written out per token: row r, position p >= 1 holds r*(R-1) + p - 1."""
    rows = -(-targets // (R - 1))
    rep = pt.replay(lengths, capacity=R, min_buffer=B, refill=refill, rows=rows)
    src = {a.occurrence: a.source for a in rep.arrivals}

    def stratum(n: int) -> int:
        return sum(n > b for b in bounds)

    counts = [0] * (len(bounds) + 1)
    scored_sources: dict[int, set[int]] = defaultdict(set)
    for p in rep.placements:
        for pos in range(p.offset, p.offset + p.length):
            if pos == 0:
                continue  # input only
            t = p.row * (R - 1) + pos - 1
            if t < targets:
                counts[stratum(lengths[src[p.occurrence]])] += 1
                scored_sources[stratum(lengths[src[p.occurrence]])].add(src[p.occurrence])
    return {"target_counts": tuple(counts),
            "included": tuple(len(scored_sources[s]) for s in range(len(bounds) + 1))}


@pytest.mark.parametrize("targets", [1, 5, 9, 10, 13, 17, 23])
def test_evaluation_population_clips_at_the_budget(targets: int) -> None:
    R, B = 5, 2
    lengths = [3, 9, 2, 4, 6, 1, 2, 8, 3, 5, 7, 2, 4, 3, 9, 1]
    bounds = (2, 4)
    ev = evaluation_population(lengths, capacity=R, min_buffer=B, refill=1, targets=targets, prefixes=(),
                               boundaries=bounds)
    want = _brute_population(lengths, R, B, 1, targets, bounds)
    assert ev.target_counts == want["target_counts"]
    assert ev.included == want["included"]
    assert sum(ev.target_counts) == targets  # every budgeted target is scored exactly once


def test_evaluation_population_hand_example() -> None:
    """R = 4 (3 targets per row), budget 4: row 0 holds targets 0-2, row 1 position 1 holds target 3."""
    ev = evaluation_population([4, 4], capacity=4, min_buffer=1, refill=1, targets=4, prefixes=(),
                               boundaries=(3,))
    # document 0 fills row 0 (3 targets); document 1 fills row 1 but only its first target counts
    assert ev.target_counts == (0, 4)
    assert ev.included == (0, 2)
    ev1 = evaluation_population([4, 4], capacity=4, min_buffer=1, refill=1, targets=3, prefixes=(),
                                boundaries=(3,))
    assert ev1.target_counts == (0, 3) and ev1.included == (0, 1)
    assert ev1.zero_inclusion == ()


def test_evaluation_first_long_target_is_clipped() -> None:
    """R = 4, budget 4 (two rows): the long source starts at row 1, position 2 = target 4, past the budget."""
    common: dict[str, Any] = dict(capacity=4, min_buffer=1, refill=1, prefixes=(), boundaries=(3,))
    ev = evaluation_population([4, 2, 9], targets=4, **common)
    assert ev.first_over_capacity_target is None
    assert sorted(np.asarray(ev.included_sources).tolist()) == [0, 1]
    ev = evaluation_population([4, 2, 9], targets=5, **common)
    assert ev.first_over_capacity_target == 4
    assert sorted(np.asarray(ev.included_sources).tolist()) == [0, 1, 2]


# --------------------------------------- configuration, serialisation, errors and continued documents by hand


def _eval_small(**kwargs: object) -> object:
    common: dict[str, object] = dict(targets=4, prefixes=(1,), boundaries=(3,))
    common.update(kwargs)
    return evaluation_population([4, 4], **common)  # type: ignore[arg-type]


def test_evaluation_population_takes_a_config_object_and_a_one_target_prefix() -> None:
    """x_evaluation_population__mutmut_4 (config ignored), _29 (prefix 1 rejected).

    R = 4: document 0 fills row 0 (targets 0-2), document 1 row 1 (target 3 within the budget).
    """
    ev = _eval_small(config=PackerConfig(capacity=4, min_buffer=1, refill=1))
    assert ev.target_counts == (0, 4) and ev.included == (0, 2)  # type: ignore[attr-defined]
    assert [(p.targets, p.included, p.zero_inclusion) for p in ev.prefixes] == [(1, (0, 1), ())]  # type: ignore[attr-defined]


def test_evaluation_population_to_dict_and_verdict_by_hand() -> None:
    """xǁEvalPopulationǁto_dict__mutmut_1 .. _35, xǁEvalPrefixǁto_dict__mutmut_1, and the verdicts."""
    ev = _eval_small(capacity=4, min_buffer=1, refill=1)
    verdict = "every length stratum present in the population has at least one source scored within 4 targets"
    assert ev.to_dict() == {  # type: ignore[attr-defined]
        "policy": "discard", "targets": 4, "labels": ["1–3", ">3"], "population": [0, 2],
        "arrived": [0, 2], "included": [0, 2], "target_counts": [0, 4], "zero_inclusion": [],
        "prefixes": [{"targets": 1, "included": (0, 1), "zero_inclusion": ()}],
        "first_over_capacity_target": None, "protected_tokens": 0, "protected_share_of_arrived": 0.0,
        "included_source_count": 2, "verdict": verdict,
    }
    ev = evaluation_population([3, 40, 5, 2, 6, 4] * 4, capacity=8, min_buffer=3, refill=2, targets=21,
                               prefixes=(7,), boundaries=(8,))
    assert ev.verdict == ("zero inclusion within 21 targets for stratum(s) >8: their loss is not "
                          "identified by reweighting the observed rows")


def test_evaluation_population_errors_name_the_input() -> None:
    """x_evaluation_population__mutmut_32, _37 .. _41, _47 .. _52: which input is wrong, exactly."""
    common: dict[str, object] = dict(capacity=4, min_buffer=1, targets=4, prefixes=())
    bad = r"^evaluation lengths\[0\] must be a positive BOS-inclusive length, got 0$"
    with pytest.raises(ValueError, match=bad):
        evaluation_population([0, 3], **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^population\[1\] must be a positive BOS-inclusive length, got 0$"):
        evaluation_population([2, 3], population=[3, 0], **common)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^evaluation lengths must have an integer dtype, got float64$"):
        evaluation_population([1.5, 2.0], **common)  # type: ignore[arg-type]


def test_evaluation_population_counts_every_piece_of_a_continued_document() -> None:
    """x__count_scored__mutmut_24: under ``continue`` a document placed twice is scored for both pieces.

    R = 4, B = 1: document 0 (L = 6) is cropped to fill row 0 (positions 1-3: targets 0-2); its
    2-token suffix starts row 1 (position 1: target 3); document 1 (L = 2) ends row 1 at positions
    2-3 (targets 4, 5), and only target 4 is within the budget of 5.
    """
    ev = evaluation_population([6, 2], capacity=4, min_buffer=1, refill=1, policy="continue", targets=5,
                               prefixes=(), boundaries=(3,))
    assert ev.target_counts == (1, 4)  # document 1: 1 target; document 0: 3 + 1
    assert ev.included == (1, 1)


# --------------------------------------------------------- the target budget and distinct sources over passes


def test_eval_target_counts_stop_at_the_budget() -> None:
    ev = evaluation_population([3] * 30, capacity=4, min_buffer=1, refill=1, targets=4, prefixes=(),
                               boundaries=(8,))
    assert sum(ev.target_counts) == 4
    ev = evaluation_population([2, 9], capacity=4, min_buffer=1, refill=1, targets=1, prefixes=(),
                               boundaries=(4,))
    assert ev.first_over_capacity_target is None
    assert ev.zero_inclusion == (">4",)


def test_eval_population_counts_distinct_sources_over_passes() -> None:
    ev = evaluation_population([3, 2, 3, 2], capacity=4, min_buffer=1, refill=1, passes=3, targets=30,
                               prefixes=(), boundaries=(8,))
    assert ev.population == (4, 0)
    assert ev.included == (4, 0)
    assert ev.arrived == (4, 0)
