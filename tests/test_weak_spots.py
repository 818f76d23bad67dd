"""Tests that notice small bugs in shared code (issue 9, item 5).

Both engines call the same helpers (``segment``, ``crop_outcome``), so a
differential test cannot see a bug in them; other places were only checked
through a summary. Each test here computes its expectation independently —
by hand, or by a brute-force recomputation over token positions — and never
by calling the helper the code under test uses. ``tools/mutation.sh
planted`` applies each planted bug named below and checks that this file
fails.

Weak spots (the planted bug in brackets):

* the segment-first chunk size [``text = max(1, capacity - 2)`` instead of ``capacity - 1``];
* the random-span window range [``randrange(length - m)``: the last window is never drawn];
* the sampled buffered-mass series of the ledger [``+ added_bos`` dropped];
* the monitor's end-of-stream check [the full-state check at the Horizon skipped];
* the evaluation population's clipping at the budget [the budget cut one target early].
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.audit import Ledger, evaluation_population
from packing_theory.engine.events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Event,
    Exhausted,
    Filtered,
    Horizon,
    Placement,
)
from packing_theory.engine.policies import crop_outcome, segment
from packing_theory.invariant import InvariantMonitor

# ------------------------------------------------------------------- segment-first chunk size


def _expected_chunks(L: int, R: int) -> list[tuple[int, int, bool]]:
    """Chunks written out token by token: the first R tokens (own BOS + R-1 text), then BOS + R-1 text."""
    if L <= R:
        return [(0, L, False)]
    out = [(0, R, False)]
    text_left = list(range(R, L))  # source offsets not yet in a chunk
    while text_left:
        piece, text_left = text_left[: R - 1], text_left[R - 1:]
        out.append((piece[0], len(piece) + 1, True))
    return out


@pytest.mark.parametrize("R", [2, 3, 4, 7])
def test_segment_chunks_by_hand(R: int) -> None:
    for L in range(1, 6 * R):
        assert segment(L, R) == _expected_chunks(L, R), (L, R)


def test_segment_hand_written_examples() -> None:
    # R = 4: chunks hold one BOS and at most 3 text tokens
    assert segment(11, 4) == [(0, 4, False), (4, 4, True), (7, 4, True), (10, 2, True)]
    assert segment(10, 4) == [(0, 4, False), (4, 4, True), (7, 4, True)]
    assert segment(8, 4) == [(0, 4, False), (4, 4, True), (7, 2, True)]


def test_segment_first_replay_adds_one_marker_per_extra_chunk() -> None:
    """A long document of length L becomes 1 + ceil((L - R) / (R - 1)) chunks: counted by hand."""
    R = 5
    lengths = [5, 6, 9, 10, 13, 14, 21]
    # L - R text tokens after the first chunk, R - 1 = 4 per chunk
    expected_markers = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4}
    rep = pt.replay(lengths, capacity=R, min_buffer=1, refill=1, policy="segment-first", exhausted="drain")
    markers = {e.occurrence: e.markers for e in rep.events if isinstance(e, BosAdded)}
    assert {occ: markers.get(occ, 0) for occ in range(len(lengths))} == expected_markers
    assert all(p.length <= R for p in rep.placements)


# ------------------------------------------------------------------- random-span window range


def _window(out: Any) -> int:
    """Source offset of the first text token a random-span crop emits (1 = the plain prefix)."""
    return int(out.start) if out.bos_inserted else int(out.start) + 1


@pytest.mark.parametrize(("L", "m"), [(5, 3), (6, 2), (9, 4), (4, 3), (3, 2)])
def test_random_span_draws_every_window_and_only_those(L: int, m: int) -> None:
    """A crop of m tokens emits BOS + m-1 text tokens; the text window starts at 1 .. L-m+1."""
    windows = set(range(1, L - m + 2))  # by hand: L-1 text tokens, windows of m-1 of them
    seen: Counter[int] = Counter()
    for seed in range(400):
        seen[_window(crop_outcome("random-span", 0, L, False, m, random.Random(seed)))] += 1
    assert set(seen) == windows
    # uniform: every window well above a third of its expected count
    assert min(seen.values()) > 400 / len(windows) / 3


@pytest.mark.parametrize(("L", "m"), [(5, 3), (6, 2), (9, 4), (4, 3), (7, 6)])
def test_random_span_covers_every_offset_once(L: int, m: int) -> None:
    """Placement (own BOS + window) and discards partition the source offsets 0 .. L-1."""
    for seed in range(60):
        out = crop_outcome("random-span", 0, L, False, m, random.Random(seed))
        a = _window(out)
        covered = [0, *range(a, a + m - 1)]  # the (moved) own BOS, then the window
        for start, k in out.discards:
            covered += list(range(start, start + k))
        assert sorted(covered) == list(range(L)), (seed, out)
        assert out.bos_inserted == (a > 1)  # only a moved BOS is flagged
        assert out.keep is None and out.requeue is None


def test_random_span_bos_only_crop_draws_nothing() -> None:
    rng = random.Random(0)
    state = rng.getstate()
    out = crop_outcome("random-span", 0, 7, False, 1, rng)
    assert (out.start, out.bos_inserted, out.discards) == (0, False, ((1, 6),))
    assert rng.getstate() == state


def test_random_span_replay_reaches_the_last_window() -> None:
    """Through the engine: R = 4; a document of length 6 is cropped to 3 tokens at offset 1 of row 0."""
    windows = set()
    for seed in range(200):
        rep = pt.replay([1, 6, 6], capacity=4, min_buffer=2, refill=2, policy="random-span",
                        seed=seed, rows=1)
        crop = [p for p in rep.placements if p.crop]
        assert len(crop) == 1 and crop[0].length == 3 and crop[0].offset == 1
        windows.add(crop[0].start if crop[0].bos_inserted else crop[0].start + 1)
    assert windows == {1, 2, 3, 4}  # L - m + 1 = 4 windows of 2 text tokens among 5


# ------------------------------------------------------------------- the ledger's buffered-mass series


def _brute_buffered(events: list[Event]) -> int:
    """Tokens in the buffer after ``events``: arrived + markers - placed - discarded - filtered."""
    total = 0
    for e in events:
        if isinstance(e, Arrival):
            total += e.length
        elif isinstance(e, BosAdded):
            total += e.markers
        elif isinstance(e, (Placement, Discard, Filtered)):
            total -= e.length
    return total


def _brute_protected_mass(events: list[Event], R: int, B: int) -> int:
    longs = sorted(((e.length, e.occurrence) for e in events if isinstance(e, Arrival) and e.length > R),
                   reverse=True)
    return sum(n for n, _ in longs[: B - 1])


@pytest.mark.parametrize("chunk", [1, 3, 8192])
@pytest.mark.parametrize("policy", ["requeue-bos", "segment-first", "continue", "discard"])
def test_series_samples_equal_brute_force(policy: str, chunk: int) -> None:
    """One sample just before the first placement of every row (row j at j(R-1) targets), one at the Horizon;
    the chunk size does not move them."""
    R, B = 5, 3
    lengths = [7, 2, 9, 3, 1, 12, 4, 6, 2, 8, 11, 3]
    events = list(pt.Packer(capacity=R, min_buffer=B, refill=2, policy=policy, passes=2).events(lengths))
    led = Ledger(R, B, chunk=chunk)
    for e in events:
        led.feed(e)
        led._check()
    series = led.result().series
    expected = []
    row = None
    for i, e in enumerate(events):
        if isinstance(e, Placement) and e.row != row:
            row = e.row
            prefix = events[:i]
            expected.append((len(expected) * (R - 1), _brute_buffered(prefix),
                             _brute_protected_mass(prefix, R, B)))
    h = events[-1]
    assert isinstance(h, Horizon)
    at_horizon = sum(s.length for s in h.buffered)
    assert at_horizon == _brute_buffered(events)  # the mass identity, by brute force
    expected.append((h.rows * (R - 1), at_horizon, _brute_protected_mass(events, R, B)))
    assert [tuple(s) for s in series] == expected
    assert len(series) == h.rows + (h.partial_row_tokens > 0) + 1  # a partial last row is started too
    if policy in ("requeue-bos", "segment-first"):
        assert any(isinstance(e, BosAdded) for e in events)  # the markers term is exercised


def test_series_counts_filtered_tokens_out_of_the_buffer() -> None:
    events: list[Event] = [
        Arrival(0, 0, 0, 4), Arrival(1, 1, 0, 9), Filtered(1, 1, 9, "over-capacity"),
        Arrival(2, 2, 0, 2), Placement(0, 0, 0, 0, 0, 4, False, False),
        Placement(1, 0, 2, 2, 0, 2, False, False),
        Horizon(2, 0, "rows", ()),
    ]
    led = Ledger(4, 2, chunk=1)
    for e in events:
        led.feed(e)
    # samples: before row 0 (4 + 9 - 9 + 2), before row 1 (6 - 4), at the Horizon
    assert [s.buffered_tokens for s in led.result().series] == [6, 2, 0]
    assert [s.targets for s in led.result().series] == [0, 3, 6]


def test_a_short_run_draws_a_curve() -> None:
    """277 rows, fewer events than one chunk: one sample per row (the flush-based series had two points)."""
    lengths = [300, 41, 700, 5] * 400
    events = list(pt.Packer(capacity=512, min_buffer=8, refill=4, rows=277).events(lengths))
    led = Ledger(512, 8)
    pt.feed_all(events, led)
    series = led.result().series
    assert led.result().rows == 277 and len(series) == 278
    assert len({s.buffered_tokens for s in series}) > 2


def test_series_thinning_keeps_evenly_spaced_samples() -> None:
    """3,000 one-document rows: past 1,024 samples the series keeps the rows that are multiples of 2, then 4.

    Rows 0-1023 are sampled; thinning keeps the even ones and samples every 2nd row; at 1,024 samples
    (row 2046) it keeps multiples of 4 and samples every 4th row up to 2996; the Horizon adds row 3000.
    """
    events = list(pt.Packer(capacity=3, min_buffer=1, refill=1).events([3] * 3000))
    for chunk in (1, 8192):
        led = Ledger(3, 1, chunk=chunk)
        pt.feed_all(events, led)
        rows = [s.targets // 2 for s in led.result().series]
        assert rows == [*range(0, 3000, 4), 3000]
        led._check()


# ------------------------------------------------------------------- the monitor's end-of-stream check


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


# ------------------------------------------------------------------- evaluation population clipping


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
