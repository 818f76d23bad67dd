"""Tests written to kill the mutants that survived ``python tools/mutation.py run``.

Each test names the mutant(s) it kills (mutmut's names, in the module's
section). Expectations are computed by hand or by brute force, never by
calling the helper under test. Mutants judged equivalent are listed, with
the reason, in ``docs/mutation.rst``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.engine.events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Event,
    Exhausted,
    Horizon,
    Placement,
)
from packing_theory.engine.policies import CropOutcome, PackerConfig, crop_outcome
from packing_theory.engine.refill import refill_batches
from packing_theory.invariant import (
    BufferSummary,
    InvariantMonitor,
    InvariantViolation,
    MonitorReport,
    Violation,
)

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
                                          r"segment-first, random-span, bounded-wait; got 'fifo'$")):
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


# ------------------------------------------------------------------- invariant/monitor.py
# Reports are compared field by field with Violation values written out by hand.

_LOADER = "the loader selected it"
_OUTSIDE = "started or dropped outside a checked selection and still protected"
_AT_HORIZON = "started or dropped outside a checked selection; still protected at the horizon"


def _monitor_with_k(**kwargs: object) -> InvariantMonitor:
    """R = 4, B = 3; arrivals 0 (L=9), 1 (4), 2 (7), 3 (5): K = {0, 2}, protected mass 16, buffered 25."""
    mon = InvariantMonitor(4, 3, **kwargs)  # type: ignore[arg-type]
    assert [mon.on_arrival(o, n) for o, n in enumerate([9, 4, 7, 5])] == [True, False, True, False]
    return mon


def test_monitor_embedding_api_reports_by_hand() -> None:
    """report__mutmut_*, on_arrival__mutmut_25, _arrival__mutmut_3/4/5, on_select__mutmut_3/4,
    _select__mutmut_42/47-52/64-66, _report__mutmut_20-24/28-31/45, _record__mutmut_1/5."""
    mon = _monitor_with_k(max_recorded=1)
    assert mon.on_select(1, buffered=4) is True
    assert mon.on_select(3, buffered=2, row=0, offset=3) is True  # 2 < B spans: outside, not checked
    assert mon.on_select(0, buffered=3, row=1, offset=0) is False  # B spans: checked; 0 is in K
    assert mon.on_select(2, buffered=3) is False
    first = Violation("selected", 0, 9, 1, 2, (7, 2), 2, 1, 0, None, 3, 25, None, _LOADER)
    assert mon.violations == [first]  # max_recorded=1: the second is counted, not kept
    assert mon.violation_count == 2 and not mon.ok
    assert mon.result() == MonitorReport(selections=4, selections_checked=3, selections_outside=1,
                                         arrivals=4, long_arrivals=3, protected_size=2, protected_mass=16,
                                         violations=2, first_violation=first.to_dict())
    mon._check()


def test_monitor_on_arrival_validates_and_answers() -> None:
    """on_arrival__mutmut_2/8/9 (parameter names); _arrival__mutmut_14: segmented arrivals stay out of K."""
    strict = InvariantMonitor(4, 3, on_violation="raise")
    with pytest.raises(ValueError, match=r"^on_arrival: occurrence must be >= 0, got -1 \(bad-value\)$"):
        strict.on_arrival(-1, 5)
    with pytest.raises(ValueError, match=r"^on_arrival: length must be >= 1, got 0 \(bad-value\)$"):
        strict.on_arrival(0, 0)
    mon = InvariantMonitor(4, 3)  # record mode: the refused calls are recorded as misuse, nothing counted
    assert mon.on_arrival(-1, 5) is False and mon.on_arrival(0, 0) is False
    assert [m.detail for m in mon.misuses] == [
        "occurrence must be >= 0, got -1",
        "length must be >= 1, got 0",
    ]
    assert mon.arrivals == 0
    assert mon.on_arrival(0, 4) is False  # L = R is not long
    seg = InvariantMonitor(4, 3, segmented=True)
    assert seg.on_arrival(0, 9) is False and len(seg.protected) == 0
    assert seg.on_select(0, buffered=3) is True


def test_monitor_removed_member_reported_at_the_next_checked_selection() -> None:
    """on_remove__mutmut_1/4, _arrival__mutmut_21 (untainted member evicted), _select__mutmut_24-29/40/41."""
    mon = InvariantMonitor(4, 3)
    assert mon.on_arrival(0, 9) and mon.on_arrival(1, 8)  # K = {0, 1}
    mon.on_remove(7)  # not a member: ignored
    mon.on_remove(1)
    assert mon.on_arrival(2, 10)  # evicts 1 (smallest key (8, 1)): no report for it any more
    mon.on_remove(2)
    assert mon.on_arrival(3, 11)  # evicts 0, which was never removed; 2 is still in K
    mon._check()
    assert mon.on_select(0, buffered=3, row=2, offset=1) is False
    want = Violation("removed", 2, 10, 2, 2, (10, 2), 0, 2, 1, None, 3, 38, None, _OUTSIDE)
    assert mon.violations == [want]
    mon._check()


def test_monitor_selected_then_removed_is_reported_once() -> None:
    """_select__mutmut_5: the span just selected may be dropped without a second report."""
    mon = _monitor_with_k()
    assert mon.on_select(2, buffered=3) is False
    mon.on_remove(2)
    assert mon.on_select(1, buffered=3) is True
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("selected", 2)]


def test_monitor_on_exhausted_makes_selections_outside_until_an_arrival() -> None:
    """on_exhausted__mutmut_1/2 (no test reached it)."""
    mon = _monitor_with_k()
    mon.on_exhausted()
    assert mon.on_select(0) is True  # outside: not checked, but 0 is now tainted
    assert (mon.selections_outside, mon.selections_checked) == (1, 0)
    assert mon.on_arrival(4, 2) is False  # an arrival ends the exhausted state
    assert mon.on_select(1, buffered=3) is False
    assert mon.violations == [Violation("removed", 0, 9, 1, 2, (7, 2), 1, None, None, None, 3, 27, None,
                                        _OUTSIDE)]


def test_monitor_feed_reports_carry_the_tracked_buffer_and_the_cause() -> None:
    """_select__mutmut_14 (the cause), _report__mutmut_4-10 (buffer summary from the tracker)."""
    R = 4
    crop = Placement(0, 0, 0, 0, 0, 4, False, True)
    later = Placement(1, 0, 1, 1, 0, 3, False, False)
    events: list[Event] = [Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 3), Exhausted(0, 0, 2), crop,
                           Discard(0, 0, 4, 5), Arrival(2, 2, 0, 2), later,
                           Horizon(1, 3, "exhausted", (BufferedSpan(2, 2, 0, 2, False),))]
    mon = InvariantMonitor(R, 2, track_buffer="discard")
    for ev in events:
        mon.feed(ev)
        mon._check()
    # just before `later`: occurrences 1 (3 tokens) and 2 (2 tokens) are buffered, whole
    summary = BufferSummary(spans=2, mass=5, long_spans=0, untouched=2, shortest=(2, 2), longest=(3, 1))
    want = Violation("removed", 0, 9, 1, 1, (9, 0), 1, 1, 0, crop, 2, 5, summary, _OUTSIDE)
    assert mon.violations == [want]


def test_monitor_snapshot_summarises_the_reported_buffer() -> None:
    """_report__mutmut_12-16: a loader's snapshot callable gives the report's buffer summary."""
    spans = (BufferedSpan(0, 0, 0, 9, False), BufferedSpan(2, 2, 3, 4, False),
             BufferedSpan(4, 4, 0, 1, False))
    mon = _monitor_with_k(snapshot=lambda: spans)
    mon.on_select(0, buffered=3)
    want = BufferSummary(spans=3, mass=14, long_spans=1, untouched=2, shortest=(1, 4), longest=(9, 0))
    assert mon.violations[0].buffer == want
    assert mon.violations[0].buffered_spans == 3  # as the loader said, not recounted


def test_monitor_handler_and_raise_modes() -> None:
    seen: list[Violation] = []
    mon = _monitor_with_k(on_violation=seen.append)
    mon.on_select(0, buffered=3)
    mon.on_select(2, buffered=3)
    assert seen == mon.violations and [v.occurrence for v in seen] == [0, 2]
    mon = _monitor_with_k(on_violation="raise")
    with pytest.raises(InvariantViolation) as info:
        mon.on_select(2, buffered=3)
    assert info.value.violation == Violation("selected", 2, 7, 2, 2, (7, 2), 0, None, None, None, 3, 25, None,
                                             _LOADER)


def test_monitor_horizon_reports_by_hand() -> None:
    """_finish__mutmut_12/13/24/25 (removed at the horizon), _28/_31 (the missing member's buffer summary)."""
    discard = Discard(2, 2, 0, 7)
    events: list[Event] = [Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
                           Placement(0, 0, 1, 1, 0, 4, False, False), discard,
                           Horizon(1, 0, "rows", (BufferedSpan(0, 0, 0, 9, False),))]
    mon = InvariantMonitor(4, 3)
    for ev in events:
        mon.feed(ev)
    # buffered mass: 9 + 4 + 7 arrived, 4 placed, 7 discarded
    assert mon.violations == [Violation("removed", 2, 7, 2, 2, (7, 2), None, 1, 0, discard, 1, 9, None,
                                        _AT_HORIZON)]
    events[4] = Arrival(3, 3, 0, 2)  # no discard: 2 is simply missing from the Horizon's buffer
    mon = InvariantMonitor(4, 3)
    for ev in events:
        mon.feed(ev)
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("missing", 2)]
    assert mon.violations[0].buffer == BufferSummary(1, 9, 1, 1, (9, 0), (9, 0))


def test_monitor_selected_member_missing_at_the_horizon_is_reported_once() -> None:
    events: list[Event] = [Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
                           Placement(0, 0, 2, 2, 0, 4, False, True), Discard(2, 2, 4, 3),
                           Horizon(1, 0, "rows", (BufferedSpan(0, 0, 0, 9, False),
                                                  BufferedSpan(1, 1, 0, 4, False)))]
    mon = InvariantMonitor(4, 3)
    for ev in events:
        mon.feed(ev)
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("selected", 2)]
    assert mon.violation_count == 1


def test_monitor_details_say_whole_or_crop() -> None:
    """_select__mutmut_68 .. _72: a whole and a crop selection of a member, through ``feed``.

    ``segmented=False`` on a segment-first stream checks original occurrences, whose first chunk
    fits a row whole (the proposition does not cover segment-first).
    """
    whole = Placement(0, 0, 0, 0, 0, 4, False, False)
    crop = Placement(1, 0, 2, 2, 0, 4, False, True)
    events: list[Event] = [Arrival(0, 0, 0, 9), BosAdded(0, 0, 2), Arrival(1, 1, 0, 3), whole,
                           Arrival(2, 2, 0, 10), crop]
    mon = InvariantMonitor(4, 2)
    for ev in events:
        mon.feed(ev)
    # buffered mass at the reports: 9 + 2 markers + 3 = 14; then 14 - 4 + 10 = 20
    assert mon.violations == [
        Violation("selected", 0, 9, 1, 1, (9, 0), 0, 0, 0, whole, None, 14, None, "a whole selection"),
        Violation("selected", 2, 10, 1, 1, (10, 2), 1, 1, 0, crop, None, 20, None, "a crop selection"),
    ]


def test_monitor_initial_state() -> None:
    """__init____mutmut_60, _96, _98: public attributes and a selection before any arrival is checked."""
    mon = InvariantMonitor(4, 3, segmented=True)
    assert mon.segmented is True and mon.horizon is None and mon.ok
    assert InvariantMonitor(4, 3).segmented is False
    fresh = InvariantMonitor(4, 3)
    assert fresh.on_select(5, buffered=3) is False  # an occurrence that never arrived: a misuse, not counted
    assert fresh.misuse_count == 1 and fresh.selections == 0
    fresh.on_arrival(5, 2)
    assert fresh.on_select(5, buffered=3) is True  # the first selection is checked (not "outside")
    assert (fresh.selections_checked, fresh.selections_outside) == (1, 0)


# ------------------------------------------------------------------- audit/ledger.py (scoped functions)


def test_ledger_series_thinning_rule_by_hand() -> None:
    """Which rows the thinned series keeps (the rule is the ledger's ``_thin``).

    Sample every row until 1,024 samples are held, then keep the rows that are multiples of 2 and sample
    every 2nd row, and so on. 5,000 one-document rows written out: rows 0-1023; thinning keeps 0, 2, ...,
    1022; rows 1024, ..., 2046 sampled; thinning keeps multiples of 4; rows 2048, ..., 4092 by 4 reach
    1,024 samples; thinning keeps multiples of 8; rows 4096, ..., 4992 by 8; the Horizon adds row 5000.
    """
    from packing_theory.audit import Ledger

    led = Ledger(3, 1, chunk=1)
    pt.feed_all(pt.Packer(capacity=3, min_buffer=1, refill=1).events([3] * 5000), led)
    kept = [s.targets // 2 for s in led.result().series]
    want = [*range(0, 5000, 8), 5000]
    assert kept == want


def test_ledger_errors_name_the_event() -> None:
    """xǁLedgerǁ_flush__mutmut_21/24/25/26, xǁLedgerǁ_finish__mutmut_24/27/28: exact messages."""
    from packing_theory.audit import Ledger

    led = Ledger(4, 2)
    led.feed(Arrival(0, 0, 0, 3))
    led.feed(BosAdded(5, 5, 1))
    with pytest.raises(ValueError, match=(r"^inconsistent event stream: BosAdded for occurrence 5 "
                                          r"before its Arrival$")):
        led.feed(Horizon(0, 0, "exhausted", ()))
    led = Ledger(4, 2)
    led.feed(Arrival(0, 0, 0, 3))
    with pytest.raises(ValueError, match=(r"^inconsistent event stream: buffered span for occurrence 7 "
                                          r"before its Arrival$")):
        led.feed(Horizon(0, 0, "exhausted", (BufferedSpan(7, 7, 0, 2, False),)))


def test_ledger_buffered_own_bos_is_source_mass() -> None:
    """xǁLedgerǁ_finish__mutmut_31: a buffered span whose BOS is the source's own (no BosAdded).

    Occurrence 0 (L = 6): offsets 1-3 placed; the rest buffered as its own BOS + offsets 4, 5.
    Every source token is accounted once: no marker was added.
    """
    from packing_theory.audit import Ledger

    led = Ledger(4, 2)
    pt.feed_all([Arrival(0, 0, 0, 6), Placement(0, 0, 0, 0, 1, 3, False, False),
                 Horizon(0, 3, "exhausted", (BufferedSpan(0, 0, 4, 3, True),))], led)
    agg = led.result()
    assert agg.conservation_violations == 0
    assert (agg.mass.buffered_tokens, agg.mass.buffered_added_bos) == (3, 0)
    assert led.arrays()["buffered"].tolist() == [3]


def test_ledger_columns_are_int64() -> None:
    """xǁLedgerǁ_finish__mutmut_10, _12: the per-occurrence buffered column is an int64 array."""
    from packing_theory.audit import Ledger

    led = Ledger(4, 3)
    pt.feed_all(pt.Packer(capacity=4, min_buffer=3, refill=5, rows=1).events([9, 2, 7, 8, 1]), led)
    cols = led.arrays()
    assert cols["buffered"].dtype == np.int64
    assert cols["buffered"].tolist() == [9, 0, 0, 8, 0]


def test_ledger_protected_mass_by_hand() -> None:
    """xǁLedgerǁ_protected_mass__mutmut_7/12/23/24/25/27.

    R = 4, B = 3, one refill of [9, 2, 7, 8, 1], one row: 2 (occ 1) and 1 (occ 4) fit, then 7 (occ 2)
    is cropped to 1 token. K = the 2 largest long keys = {0 (L=9), 3 (L=8)}: 17 tokens, both
    buffered whole, and they are the whole buffer (17 of 27 arrived tokens).
    """
    from packing_theory.audit import Ledger, ProtectedMass

    led = Ledger(4, 3)
    pt.feed_all(pt.Packer(capacity=4, min_buffer=3, refill=5, rows=1).events([9, 2, 7, 8, 1]), led)
    assert led.result().protected == ProtectedMass(members=2, long_arrivals=3, tokens=17, started_members=0,
                                                   buffered_tokens=17, share_of_arrived=17 / 27,
                                                   share_of_buffered=1.0)
    empty = Ledger(4, 3)
    pt.feed_all([Horizon(0, 0, "exhausted", ())], empty)
    assert empty.result().protected == ProtectedMass(0, 0, 0, 0, 0, None, None)


def test_monitor_defaults_and_argument_errors() -> None:
    """__init____mutmut_6 (defaults), _18/24/25 and _43/49/50 (parameter names in messages).

    ``R`` and ``B`` have no default (they come from the packer: test_consumers.py).
    """
    mon = InvariantMonitor(2049, 1000)
    assert (mon.capacity, mon.min_buffer, mon.max_recorded) == (2049, 1000, 100)
    with pytest.raises(ValueError, match=r"^min_buffer must be >= 1, got 0$"):
        InvariantMonitor(4, 0)
    with pytest.raises(ValueError, match=r"^max_recorded must be >= 0, got -1$"):
        InvariantMonitor(4, 3, max_recorded=-1)


def test_monitor_for_packer_tracks_only_on_request() -> None:
    """for_packer (mutants for_config__mutmut_1, _19 of this constructor)."""
    cfg = PackerConfig(capacity=4, min_buffer=3, policy="continue")
    assert InvariantMonitor.for_packer(cfg).tracker is None
    tracked = InvariantMonitor.for_packer(cfg, track_buffer=True)
    assert tracked.tracker is not None and tracked.tracker.policy == "continue"


def test_monitor_remove_before_any_selection() -> None:
    """__init____mutmut_100: before the first selection no occurrence counts as just selected."""
    mon = InvariantMonitor(4, 2)
    mon.on_arrival(0, 2)
    assert mon.on_arrival(1, 9)  # K = {1}
    mon.on_remove(1)
    assert mon.on_select(0, buffered=2) is False
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("removed", 1)]


def test_monitor_feed_evictions_clear_only_the_evicted_taint() -> None:
    """feed__mutmut_32 (arrival count), _47 .. _50 (tainted and untainted members evicted from K).

    R = 4, B = 3 (|K| <= 2): 0 (L=5) and 1 (6) join K; 1 is discarded outside a selection
    (tainted); 2 (7) evicts the untainted 0; 3 (8) evicts the tainted 1, so nothing is left to
    report when 4 (L=2) is selected.
    """
    events: list[Event] = [Arrival(0, 0, 0, 5), Arrival(1, 1, 0, 6), Discard(1, 1, 0, 6),
                           Arrival(2, 2, 0, 7), Arrival(3, 3, 0, 8), Arrival(4, 4, 0, 2),
                           Placement(0, 0, 4, 4, 0, 2, False, False)]
    mon = InvariantMonitor(4, 3)
    for ev in events:
        mon.feed(ev)
        mon._check()
    assert mon.ok and sorted(mon.protected) == [2, 3]
    # 5 + 6 + 7 + 8 + 2 arrived, 6 discarded, 2 placed
    assert (mon.arrivals, mon.selections_checked, mon.buffered_mass) == (5, 1, 20)


def test_monitor_check_names_a_stale_taint() -> None:
    """_check__mutmut_7/8/9: the internal-invariant check says what is wrong."""
    mon = _monitor_with_k()
    mon._tainted[1] = None  # corrupt on purpose: 1 is not in K
    with pytest.raises(AssertionError, match=r"^tainted occurrence left K$"):
        mon._check()
