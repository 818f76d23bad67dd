"""Tests written to kill the mutants that survived ``python tools/mutation.py run``.

Each test names the mutant(s) it kills (mutmut's names, in the module's
section). Expectations are computed by hand or by brute force, never by
calling the helper under test. Mutants judged equivalent are listed, with
the reason, in ``docs/mutation.rst``.
"""

from __future__ import annotations

import random

import pytest

import packing_theory as pt
from packing_theory.engine.policies import CropOutcome, PackerConfig, crop_outcome, refill_batches

# ------------------------------------------------------------------- engine/policies.py


def test_continue_crop_keeps_the_suffix_in_place() -> None:
    """x_crop_outcome__mutmut_11, _12, _15: a ``continue`` crop keeps (start + m - bos, L - m) in place."""
    # a whole original of 10 tokens cropped to 4: positions 0-3 emitted, source offsets 4..9 kept
    assert crop_outcome("continue", 0, 10, False, 4, None) == CropOutcome(0, False, (), (4, 6, False), None)
    # a remainder starting with an inserted BOS at source offset 5: BOS + offsets 5, 6 emitted
    assert crop_outcome("continue", 5, 6, True, 3, None) == CropOutcome(5, True, (), (7, 3, False), None)


def test_requeue_bos_crop_by_hand() -> None:
    """x_crop_outcome__mutmut_26, _30: a one-token leftover is dropped, a longer one requeued with a BOS."""
    # leftover of 2 tokens (offsets 8, 9): requeued as BOS + 2 tokens, nothing discarded
    assert crop_outcome("requeue-bos", 0, 10, False, 8, None) == CropOutcome(0, False, (), None, (8, 3, True))
    # leftover of exactly 1 token (offset 9): dropped, as nanochat PR #544 does
    assert crop_outcome("requeue-bos", 0, 10, False, 9, None) == CropOutcome(0, False, ((9, 1),), None, None)


def test_random_span_without_rng_names_the_problem() -> None:
    """x_crop_outcome__mutmut_55 .. _58: the error message is exact."""
    with pytest.raises(ValueError, match=r"^random-span crops need an rng, got None$"):
        crop_outcome("random-span", 0, 10, False, 4, None)


def test_random_span_last_window_has_one_discard() -> None:
    """x_crop_outcome__mutmut_73: a window that ends at the document's end leaves no empty discard."""
    L, m = 6, 3
    lasts = 0
    for seed in range(200):
        out = crop_outcome("random-span", 0, L, False, m, random.Random(seed))
        assert all(k >= 1 for _, k in out.discards), out
        if out.bos_inserted and out.start == L - m + 1:  # text offsets 4, 5: the last window
            lasts += 1
            assert out.discards == ((1, 3),)
    assert lasts > 0


def test_one_shot_iterator_cycles_the_batch_sizes_in_order() -> None:
    """x__stream_batches__mutmut_24: a streamed input uses refill sizes 1, 2, 3, 1, 2, ... like a list."""
    cfg = PackerConfig(capacity=4, min_buffer=1, refill=(1, 2, 3))
    sizes = [len(b) for b in refill_batches(iter([2] * 13), cfg)]
    assert sizes == [1, 2, 3, 1, 2, 3, 1]  # 13 = 1+2+3+1+2+3+1
    assert [len(b) for b in refill_batches([2] * 13, cfg)] == sizes


def test_empty_one_shot_iterator_message() -> None:
    """x__stream_batches__mutmut_21: the streamed input's empty error is exact."""
    with pytest.raises(ValueError, match=r"^lengths is empty: a replay needs at least one document$"):
        list(pt.Packer(capacity=4, min_buffer=1).events(iter([])))


def test_config_and_length_errors_are_exact() -> None:
    """xǁPackerConfigǁ__post_init____mutmut_55, _96 and x_as_length_list__mutmut_10: exact messages."""
    with pytest.raises(TypeError, match=r"^seed must be an int, got float 1\.5$"):
        PackerConfig(seed=1.5)  # type: ignore[arg-type]
    empty_refill = r"^refill must be a positive int or a non-empty sequence, got \[\]$"
    with pytest.raises(ValueError, match=empty_refill):
        PackerConfig(refill=())
    with pytest.raises(ValueError, match=r"^lengths is empty: a replay needs at least one document$"):
        list(pt.Packer(capacity=4, min_buffer=1).events([]))


def test_policy_and_targets_errors_are_exact() -> None:
    """xǁPackerConfigǁ__post_init____mutmut_111, _141, _147, _148, _149."""
    with pytest.raises(ValueError, match=(r"^policy must be one of discard, continue, requeue-bos, "
                                          r"segment-first, random-span; got 'fifo'$")):
        PackerConfig(policy="fifo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^targets must be >= 0, got -1$"):
        PackerConfig(targets=-1)
    with pytest.raises(TypeError, match=r"^targets must be an int, got str '7'$"):
        PackerConfig(targets="7")  # type: ignore[arg-type]
    # a zero budget is valid: no row at all
    cfg = PackerConfig(capacity=4, min_buffer=1, targets=0)
    assert cfg.row_budget == 0
    assert pt.replay([3, 5], config=cfg).horizon.rows == 0


# ------------------------------------------------------------------- audit/population.py


def _eval_small(**kwargs: object) -> object:
    from packing_theory.audit import evaluation_population

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
    from packing_theory.audit import evaluation_population

    ev = evaluation_population([3, 40, 5, 2, 6, 4] * 4, capacity=8, min_buffer=3, refill=2, targets=21,
                               prefixes=(7,), boundaries=(8,))
    assert ev.verdict == ("zero inclusion within 21 targets for stratum(s) >8: their loss is not "
                          "identified by reweighting the observed rows")


def test_evaluation_population_errors_name_the_input() -> None:
    """x_evaluation_population__mutmut_32, _37 .. _41, _47 .. _52: which input is wrong, exactly."""
    from packing_theory.audit import evaluation_population

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
    from packing_theory.audit import evaluation_population

    ev = evaluation_population([6, 2], capacity=4, min_buffer=1, refill=1, policy="continue", targets=5,
                               prefixes=(), boundaries=(3,))
    assert ev.target_counts == (1, 4)  # document 1: 1 target; document 0: 3 + 1
    assert ev.included == (1, 1)
