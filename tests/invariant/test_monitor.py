"""``InvariantMonitor`` by hand: the embedding API, the end-of-stream check, reports field by field, misuse.

Reports are compared with ``Violation`` values written out by hand. The
planted bug of ``tools/mutation.py planted`` (the full-state check at the
Horizon skipped) must fail this file; tests that name a mutmut mutant kill a
survivor of ``tools/mutation.py run``. The monitor against the engines and the
specification is in ``tests/invariant/test_protected.py``.
"""

from __future__ import annotations

import pytest

import packing_theory as pt
from packing_theory.engine.batches import batched
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
from packing_theory.engine.policies import PackerConfig
from packing_theory.invariant import (
    BufferSummary,
    InvariantMonitor,
    InvariantViolation,
    MonitorReport,
    Violation,
)

# ------------------------------------------------------------------- the end-of-stream check


def _monitor(events: list[Event], R: int = 4, B: int = 3) -> InvariantMonitor:
    mon = InvariantMonitor(R, B)
    for e in events:
        mon.feed(e)
    mon._check()
    return mon


def test_horizon_reports_a_member_missing_from_the_buffer() -> None:
    """Occurrences 0 and 2 (L = 9, 7 > R = 4) form K (B - 1 = 2); the Horizon's buffer lacks 2."""
    events: list[Event] = [
        Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
        Placement(0, 0, 1, 1, 0, 4, False, False),
        Horizon(1, 0, "rows", (BufferedSpan(0, 0, 0, 9, False),)),
    ]
    mon = _monitor(events)
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("missing", 2)]


def test_horizon_reports_a_changed_member() -> None:
    events: list[Event] = [
        Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
        Placement(0, 0, 1, 1, 0, 4, False, False),
        Horizon(1, 0, "rows", (BufferedSpan(0, 0, 0, 9, False), BufferedSpan(2, 2, 3, 4, False))),
    ]
    mon = _monitor(events)
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("changed", 2)]


def test_horizon_reports_a_member_dropped_after_the_last_selection() -> None:
    """A Discard of a member outside any selection, then the budget ends: reported once, as removed."""
    events: list[Event] = [
        Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
        Placement(0, 0, 1, 1, 0, 4, False, False),
        Discard(2, 2, 0, 7),
        Horizon(1, 0, "rows", (BufferedSpan(0, 0, 0, 9, False),)),
    ]
    mon = _monitor(events)
    assert [(v.kind, v.occurrence) for v in mon.violations] == [("removed", 2)]
    v = mon.violations[0]
    assert (v.selection, v.row, v.offset, v.event) == (None, 1, 0, Discard(2, 2, 0, 7))


@pytest.mark.parametrize("end", ["exhausted", "drained", "after-exhausted-event"])
def test_no_horizon_check_outside_the_theorem(end: str) -> None:
    """A stream that could not refill to B ends outside the proposition: nothing is reported."""
    events: list[Event] = [Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
                           Placement(0, 0, 1, 1, 0, 4, False, False)]
    reason = "rows"
    if end == "after-exhausted-event":
        events.append(Exhausted(1, 0, 2))
    else:
        reason = end
    events.append(Horizon(1, 0, reason, (BufferedSpan(0, 0, 0, 9, False),)))
    mon = _monitor(events)
    assert mon.violations == [] and mon.ok


def test_horizon_check_passes_when_every_member_is_whole() -> None:
    events: list[Event] = [
        Arrival(0, 0, 0, 9), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 7),
        Placement(0, 0, 1, 1, 0, 4, False, False),
        Horizon(1, 0, "rows", (BufferedSpan(2, 2, 0, 7, False), BufferedSpan(0, 0, 0, 9, False))),
    ]
    mon = _monitor(events)
    assert mon.ok and mon.horizon is events[-1]


# ------------------------------------------------------------------- reports by hand, field by field


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


# ------------------------------------------------------------------- not-applicable monitors and misuse


CFG = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="bounded-wait", max_wait=1)


LENGTHS = [3, 9, 2, 5, 7, 1, 4, 6, 2]


def test_not_applicable_monitor_keeps_its_invariants_and_refuses_misuse() -> None:
    mon = InvariantMonitor.for_packer(CFG)
    assert mon.not_applicable is not None
    for ev in pt.Packer(CFG).events(LENGTHS):
        mon.feed(ev)
        mon._check()  # failed at the Horizon: the arrival bookkeeping was not closed
    assert mon.ok and not mon.misuses
    mon.feed(pt.Arrival(len(LENGTHS) + 5, 0, 0, 4))  # after the Horizon
    mon.feed(pt.Placement(0, 0, 99, 0, 0, 1, False, False))  # after the Horizon
    mon.feed("garbage")  # type: ignore[arg-type]
    assert len(mon.misuses) == 3 and not mon.ok
    mon._check()


def test_not_applicable_monitor_refuses_a_placement_that_never_arrived() -> None:
    mon = InvariantMonitor.for_packer(CFG)
    mon.feed(pt.Arrival(0, 0, 0, 3))
    mon.feed(pt.Placement(0, 0, 7, 0, 0, 3, False, False))
    assert [m.kind for m in mon.misuses] == ["unknown-occurrence"]
    assert mon.selections == 0
    raising = InvariantMonitor.for_packer(CFG, on_violation="raise")
    with pytest.raises(pt.invariant.MonitorMisuse):
        raising.feed("garbage")  # type: ignore[arg-type]


def test_misuse_after_the_horizon_counts_the_same_batched() -> None:
    cfg = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="continue")
    events = list(pt.Packer(cfg).events(LENGTHS))
    tail = [e for e in events if not isinstance(e, pt.Horizon)][-6:]
    per_event = InvariantMonitor.for_packer(cfg)
    for e in events + tail:
        per_event.feed(e)
    as_batch = InvariantMonitor.for_packer(cfg)
    for b in [*batched(events, 1000), *batched(tail, 1000)]:
        as_batch.feed(b)
    assert len(per_event.misuses) == len(as_batch.misuses) == 6


def test_violation_reports_the_mass_at_the_boundary() -> None:
    lengths = [9, 3, 9, 2, 12, 5, 1, 1, 7, 30] * 5
    mon = InvariantMonitor(capacity=4, min_buffer=3, track_buffer="requeue-bos")
    pt.feed_all(pt.Packer(capacity=4, min_buffer=3, refill=1, policy="requeue-bos").events(lengths), mon)
    v = mon.first_violation
    assert v is not None and v.buffer is not None
    assert v.buffered_mass == v.buffer.mass
