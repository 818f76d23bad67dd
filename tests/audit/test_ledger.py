"""The audit ledger against a naive recomputation from the whole event list."""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, note, reject, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.audit import (
    STRATA_BOUNDARIES,
    Aggregates,
    Ledger,
    ProtectedMass,
    audit_events,
    audit_lengths,
    evaluation_population,
    startup_delays,
    stratum_index,
    stratum_labels,
)
from packing_theory.engine.batches import batched
from packing_theory.engine.compiled import compiled_available
from packing_theory.engine.events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Event,
    Filtered,
    Horizon,
    Placement,
)
from packing_theory.engine.policies import POLICIES
from packing_theory.errors import InputError, InputTypeError
from packing_theory.orchestration import Settings, audit_corpus
from packing_theory.testing import scaled_examples

SMALL_BOUNDS = (2, 4, 8, 16, 32)


@st.composite
def cases(draw: st.DrawFn, policies: tuple[str, ...] = POLICIES) -> tuple[list[int], dict[str, Any]]:
    """Small streams with ties and lengths at 1, 2, R, R+1; small B and refill."""
    R = draw(st.integers(2, 12))
    special = st.sampled_from([1, 2, R - 1, R, R + 1, 2 * R, 3 * R])
    length = st.one_of(special, st.integers(1, 4 * R))
    pool = draw(st.lists(length, min_size=1, max_size=4))
    lengths = draw(st.lists(st.one_of(st.sampled_from(pool), length), min_size=1, max_size=60))
    kwargs: dict[str, Any] = dict(
        capacity=R,
        min_buffer=draw(st.integers(1, 6)),
        refill=draw(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=3))),
        policy=draw(st.sampled_from(policies)),
        passes=draw(st.integers(1, 2)),
        exhausted=draw(st.sampled_from(["stop", "drain"])),
        seed=draw(st.integers(0, 2**32)),
    )
    if draw(st.booleans()):
        kwargs["rows"] = draw(st.integers(0, 25))
    return lengths, kwargs


def naive(events: list[pt.Event], R: int, B: int, bounds: tuple[int, ...], bins: int) -> dict[str, Any]:
    """Every aggregate recomputed from the full event list, position by position."""
    arrivals = [e for e in events if isinstance(e, pt.Arrival)]
    placements = [e for e in events if isinstance(e, pt.Placement)]
    discards = [e for e in events if isinstance(e, pt.Discard)]
    horizon = events[-1]
    assert isinstance(horizon, pt.Horizon)
    L = {a.occurrence: a.length for a in arrivals}
    added: dict[int, int] = defaultdict(int)
    for e in events:
        if isinstance(e, pt.BosAdded):
            added[e.occurrence] += e.markers
    emitted_pos: dict[int, set[int]] = defaultdict(set)
    marker_emitted = 0
    targets = [0] * (len(bounds) + 1)
    first_target: dict[int, int] = {}

    def stratum(n: int) -> int:
        return sum(n > b for b in bounds)

    for p in placements:
        is_added = p.bos_inserted and added[p.occurrence] > 0
        marker_emitted += is_added
        text_start = p.start
        pos = list(range(text_start, text_start + p.length - p.bos_inserted))
        if p.bos_inserted and not is_added:
            pos.append(0)  # random-span: the source's own BOS moved in front
        for o in pos:
            assert o not in emitted_pos[p.occurrence], "a source position emitted twice"
        emitted_pos[p.occurrence].update(pos)
        targets[stratum(L[p.occurrence])] += p.length - (p.offset == 0)
        if (p.offset > 0 or p.length > 1) and p.occurrence not in first_target:
            first_target[p.occurrence] = p.first_target(R)
    disc: dict[int, int] = defaultdict(int)
    for d in discards:
        disc[d.occurrence] += d.length
    buf_src: dict[int, int] = defaultdict(int)
    buffered_markers = 0
    for s in horizon.buffered:
        m = int(s.bos_inserted and added[s.occurrence] > 0)
        buffered_markers += m
        buf_src[s.occurrence] += s.length - m
    S = len(bounds) + 1
    per = {k: [0] * S for k in ("arrived", "started", "full", "arr_tok", "em", "dc", "bf")}
    expo = np.zeros((S, bins), dtype=np.int64)
    posn = np.zeros((S, bins), dtype=np.int64)
    cov: dict[int, list[float]] = defaultdict(list)
    for occ, n in L.items():
        s = stratum(n)
        em = len(emitted_pos[occ])
        per["arrived"][s] += 1
        per["started"][s] += occ in emitted_pos and bool(emitted_pos[occ] or any(
            p.occurrence == occ for p in placements))
        per["full"][s] += em == n
        per["arr_tok"][s] += n
        per["em"][s] += em
        per["dc"][s] += disc[occ]
        per["bf"][s] += buf_src[occ]
        cov[s].append(em / n)
        for o in range(n):
            k = o * bins // n
            posn[s, k] += 1
            expo[s, k] += o in emitted_pos[occ]
    longs = sorted(((n, occ) for occ, n in L.items() if n > R), reverse=True)[: max(B - 1, 0)]
    started_occ = {p.occurrence for p in placements}
    crops = [p.length for p in placements if p.crop]
    long_first = [first_target[o] for o in first_target if L[o] > R]
    emitted_tokens = sum(p.length for p in placements)
    return {
        "arrived_tokens": sum(L.values()),
        "added_bos": sum(added.values()),
        "emitted_tokens": emitted_tokens,
        "emitted_added_bos": marker_emitted,
        "discarded_tokens": sum(d.length for d in discards),
        "buffered_tokens": sum(s.length for s in horizon.buffered),
        "buffered_added_bos": buffered_markers,
        "crop_events": len(crops),
        "crop_bos_only": sum(c == 1 for c in crops),
        "median_crop_prefix": float(statistics.median(crops)) if crops else None,
        "arrived_sources": len(L),
        "started_sources": len(started_occ),
        "fully_emitted_sources": sum(len(emitted_pos[o]) == n for o, n in L.items()),
        "distinct_sources_started": len({p.source for p in placements}),
        "over_capacity_emitted_fraction": (sum(p.length for p in placements if L[p.occurrence] > R)
                                           / emitted_tokens if emitted_tokens else None),
        "first_over_capacity_target": min(long_first) if long_first else None,
        "protected_members": len(longs),
        "protected_tokens": sum(n for n, _ in longs),
        "protected_started": sum(o in started_occ for _, o in longs),
        "per": per,
        "targets": targets,
        "exposure": expo,
        "positions": posn,
        "coverage": cov,
        "first_target": first_target,
        "started_occ": started_occ,
        "emitted_pos": emitted_pos,
    }


def check_against_naive(agg: Aggregates, events: list[pt.Event], R: int, B: int,
                        bounds: tuple[int, ...], bins: int) -> None:
    ref = naive(events, R, B, bounds, bins)
    m = agg.mass
    for key in ("arrived_tokens", "added_bos", "emitted_tokens", "emitted_added_bos", "discarded_tokens",
                "buffered_tokens", "buffered_added_bos"):
        assert getattr(m, key) == ref[key], key
    assert m.identity_holds
    assert agg.conservation_violations == 0
    for key in ("crop_events", "crop_bos_only", "median_crop_prefix", "arrived_sources", "started_sources",
                "fully_emitted_sources", "distinct_sources_started", "first_over_capacity_target"):
        assert getattr(agg, key) == ref[key], key
    if ref["over_capacity_emitted_fraction"] is None:
        assert agg.over_capacity_emitted_fraction is None
    else:
        assert agg.over_capacity_emitted_fraction == pytest.approx(ref["over_capacity_emitted_fraction"])
    assert agg.protected.members == ref["protected_members"]
    assert agg.protected.tokens == ref["protected_tokens"]
    assert agg.protected.started_members == ref["protected_started"]
    per = ref["per"]
    for s, row in enumerate(agg.strata):
        assert row.arrived_sources == per["arrived"][s]
        assert row.started_sources == per["started"][s]
        assert row.fully_emitted_sources == per["full"][s]
        assert row.arrived_tokens == per["arr_tok"][s]
        assert row.emitted_tokens == per["em"][s]
        assert row.discarded_tokens == per["dc"][s]
        assert row.buffered_tokens == per["bf"][s]
        assert row.targets == ref["targets"][s]
        assert row.arrived_tokens == row.emitted_tokens + row.discarded_tokens + row.buffered_tokens
        cov = ref["coverage"][s]
        assert agg.coverage[s].sources == len(cov)
        if cov:
            assert agg.coverage[s].mean == pytest.approx(statistics.fmean(cov))
            assert agg.coverage[s].median == pytest.approx(statistics.median(cov))
    assert np.array_equal(np.array(agg.exposure.emitted), ref["exposure"])
    assert np.array_equal(np.array(agg.exposure.positions), ref["positions"])
    h = events[-1]
    assert isinstance(h, pt.Horizon)
    assert (agg.rows, agg.stop_reason) == (h.rows, h.stop_reason)
    assert agg.partial_row_tokens == h.partial_row_tokens
    assert agg.series[-1].buffered_tokens == m.buffered_tokens
    assert all(a.targets <= b.targets for a, b in itertools.pairwise(agg.series))


@given(cases(), st.sampled_from(["fast", "reference"]), st.integers(1, 7))
def test_aggregates_equal_naive_recomputation(case: tuple[list[int], dict[str, Any]], engine: str,
                                              chunk: int) -> None:
    lengths, kwargs = case
    rep = pt.replay(lengths, engine=engine, **kwargs)  # type: ignore[arg-type]
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    led = Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, chunk=chunk)
    pt.feed_all(rep.events, led)
    agg = led.result()
    note(repr(agg))
    check_against_naive(agg, rep.events, R, B, SMALL_BOUNDS, 4)
    ref_first = naive(rep.events, R, B, SMALL_BOUNDS, 4)["first_target"]
    assert {o: int(t) for o, t in enumerate(led.first_targets()) if t >= 0} == ref_first
    # the ledger agrees with the engine's own SummaryAccumulator where they overlap
    s = rep.summary()
    assert (agg.mass.emitted_tokens, agg.mass.discarded_tokens, agg.mass.buffered_tokens) == (
        s.emitted_tokens, s.discarded_tokens, s.buffered_tokens)
    assert (agg.crop_events, agg.crop_bos_only, agg.started_sources) == (
        s.crop_events, s.crop_bos_only, s.sources_started)
    assert agg.first_over_capacity_target == s.first_over_capacity_target
    assert agg.exhausted_at_row == s.exhausted_at_row


@given(cases())
def test_feed_one_by_one_equals_consume_and_detail_records(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kwargs = case
    rep = pt.replay(lengths, **kwargs)
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    a = Ledger(R, B, detail=True, chunk=3)
    for ev in rep.events:
        a.feed(ev)
    b = Ledger(R, B, chunk=3)
    pt.feed_all(iter(rep.events), b)
    assert a.result() == b.result()
    c = Ledger(R, B)  # another chunk size changes only the sampling of the time series
    pt.feed_all(rep.events, c)
    assert replace(c.result(), series=()) == replace(a.result(), series=())
    # detail records: intervals are the occurrence's placements, mass per source conserved
    by_occ: dict[int, list[pt.Placement]] = defaultdict(list)
    for p in rep.placements:
        by_occ[p.occurrence].append(p)
    firsts = a.first_targets()
    for rec in a.records():
        assert [(i.start, i.length, i.row, i.offset, i.bos_inserted) for i in rec.intervals] == [
            (p.start, p.length, p.row, p.offset, p.bos_inserted) for p in by_occ[rec.occurrence]]
        assert rec.emitted + rec.discarded + rec.buffered == rec.length
        positions = sorted(o for i in rec.intervals for r in i.source_positions for o in r)
        assert len(positions) == rec.emitted == len(set(positions))
        assert (rec.first_target if rec.first_target is not None else -1) == firsts[rec.occurrence]
    if rep.arrivals:
        src = rep.arrivals[0].source
        assert {r.source for r in a.by_source(src)} == {src}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_mass_identity_every_policy(policy: str, engine: str) -> None:
    rng = np.random.default_rng(11)
    lengths = np.maximum(1, rng.lognormal(3.0, 1.2, 3000)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=64, min_buffer=40, refill=16, policy=policy, rows=600)  # type: ignore[arg-type]
    agg = audit_lengths(lengths, cfg, engine=engine)  # type: ignore[arg-type]
    assert agg.mass.identity_holds
    assert agg.conservation_violations == 0
    assert sum(s.arrived_tokens for s in agg.strata) == agg.mass.arrived_tokens
    assert agg.mass.emitted_tokens - agg.mass.emitted_added_bos == sum(s.emitted_tokens for s in agg.strata)
    if policy in ("discard", "continue"):
        assert agg.protected.started_members == 0  # the proposition (seed 000 §3)
        assert agg.protected.buffered_tokens == agg.protected.tokens
    if policy == "continue":
        assert agg.mass.discarded_tokens == 0
    # every row position is a token or a pad: unused positions are the pads a padding loader stores
    positions = agg.rows * cfg.capacity
    used = agg.mass.emitted_tokens + agg.mass.repeated_tokens
    assert agg.mass.unused_capacity_tokens == agg.mass.padding_tokens == positions - used
    assert (agg.mass.padding_tokens > 0) == (policy == "bestfit-pad")


def test_exposure_shows_prefix_bias_for_discard() -> None:
    rng = np.random.default_rng(3)
    lengths = np.maximum(1, rng.lognormal(3.5, 1.0, 4000)).astype(np.int64)
    base = dict(capacity=64, min_buffer=30, refill=8, rows=800)
    d = audit_lengths(lengths, policy="discard", **base)
    c = audit_lengths(lengths, policy="continue", **base)
    s = int(stratum_index([100])[0])  # 33–128: longer than R = 64, cropped often
    fd = [f for f in d.exposure.fraction(s) if f is not None]
    assert fd[0] > fd[-1]  # prefixes kept, suffixes dropped
    fc = [f for f in c.exposure.fraction(s) if f is not None]
    assert max(fc) - min(fc) < max(fd) - min(fd)


def test_constructed_eval_population_flags_zero_inclusion() -> None:
    # R = 8, B = 3: at most 2 long sources protected; four lengths-40 sources arrive early
    lengths = [40, 40, 3, 3, 3, 40, 40] + [4, 3, 5, 2] * 10 + [10_000]
    ev = evaluation_population(lengths, capacity=8, min_buffer=3, refill=1, targets=35, prefixes=(7,),
                               boundaries=(8, 64, 1000))
    assert ev.labels == ("1–8", "9–64", "65–1000", ">1000")
    assert ev.population == (43, 4, 0, 1)
    assert ev.included[0] > 0
    # the protected pair of length-40 sources never start; the 10,000 source never even arrives
    assert ev.arrived[3] == 0
    assert ">1000" in ev.zero_inclusion
    assert "65–1000" not in ev.zero_inclusion  # absent from the population: nothing to flag
    assert ev.prefixes[0].targets == 7 and set(ev.zero_inclusion) <= set(ev.prefixes[0].zero_inclusion)
    assert set(ev.included_sources.tolist()) <= set(range(len(lengths)))
    assert "zero inclusion" in ev.verdict
    # every population stratum scored: no flag
    ok = evaluation_population([3, 5, 2, 7] * 20, capacity=8, min_buffer=2, refill=2, targets=70,
                               prefixes=(), boundaries=(4,))
    assert ok.zero_inclusion == () and "every length stratum" in ok.verdict
    # an explicit larger population flags strata the stream never holds
    wider = evaluation_population([3, 5, 2, 7] * 20, capacity=8, min_buffer=2, refill=2, targets=70,
                                  prefixes=(), boundaries=(4, 8), population=[3, 5, 9])
    assert wider.zero_inclusion == (">8",)


def test_startup_delays_match_full_replays() -> None:
    rng = np.random.default_rng(5)
    lengths = np.maximum(1, rng.lognormal(2.5, 1.1, 1500)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=32, min_buffer=25, refill=8, rows=2000)
    spread = startup_delays(lengths, cfg, permutations=5, seed=9)
    perm_rng = np.random.default_rng(9)
    for delay in spread.delays:
        perm = perm_rng.permutation(lengths)
        assert delay == audit_lengths(perm, cfg).first_over_capacity_target
    assert spread.minimum is not None and spread.minimum <= (spread.median or 0) <= (spread.maximum or 0)
    assert spread.to_dict()["permutations"] == 5


def test_strata_convention() -> None:
    assert stratum_labels() == ["1–32", "33–128", "129–512", "513–1024", "1025–2049", "2050–4096",
                                "4097–8192", "8193–16384", ">16384"]
    assert STRATA_BOUNDARIES == (32, 128, 512, 1024, 2049, 4096, 8192, 16384)
    assert stratum_index([32, 33, 2049, 2050, 16384, 16385]).tolist() == [0, 1, 4, 5, 7, 8]
    with pytest.raises(ValueError, match="strictly increasing"):
        stratum_labels((5, 5))
    with pytest.raises(ValueError, match=r"boundaries\[0\]"):
        stratum_labels((0, 5))


def test_inconsistent_streams_raise() -> None:
    R = 8
    with pytest.raises(ValueError, match="before its Arrival"):
        audit_events([pt.Placement(0, 0, 0, 0, 0, 3, False, False), pt.Horizon(0, 3, "drained", ())], R, 2)
    with pytest.raises(ValueError, match="arrived twice"):
        audit_events([pt.Arrival(0, 0, 0, 3), pt.Arrival(0, 0, 0, 3), pt.Horizon(0, 0, "drained", ())], R, 2)
    with pytest.raises(ValueError, match="does not fit"):
        audit_events([pt.Arrival(0, 0, 0, 30), pt.Placement(0, 4, 0, 0, 0, 9, False, True),
                      pt.Horizon(0, 0, "drained", ())], R, 2)
    with pytest.raises(ValueError, match="reaches source offset"):
        audit_events([pt.Arrival(0, 0, 0, 3), pt.Placement(0, 0, 0, 0, 2, 4, False, False),
                      pt.Horizon(0, 0, "drained", ())], R, 2)
    with pytest.raises(ValueError, match="without a Horizon"):
        audit_events([pt.Arrival(0, 0, 0, 3)], R, 2)
    with pytest.raises(TypeError, match="events must be"):
        audit_events([("not", "an", "event")], R, 2)  # type: ignore[list-item]
    led = Ledger(R, 2)
    led.feed(pt.Horizon(0, 0, "drained", ()))
    with pytest.raises(ValueError, match="after the Horizon"):
        led.feed(pt.Arrival(0, 0, 0, 3))
    with pytest.raises(ValueError, match="detail=True"):
        led.record(0)
    with pytest.raises(ValueError, match="needs the Horizon"):
        Ledger(R, 2).result()


def test_bad_arguments_name_the_parameter() -> None:
    with pytest.raises(ValueError, match="capacity must be >= 2, got 1"):
        Ledger(1, 2)
    with pytest.raises(TypeError, match="min_buffer must be an int"):
        Ledger(8, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="permutations must be >= 1"):
        startup_delays([3, 4], capacity=8, min_buffer=1, permutations=0)
    with pytest.raises(ValueError, match="targets must be >= 1"):
        evaluation_population([3, 4], capacity=8, min_buffer=1, targets=0)
    with pytest.raises(ValueError, match=r"prefixes\[0\]"):
        evaluation_population([3, 4], capacity=8, min_buffer=1, targets=10, prefixes=(11,))
    with pytest.raises(ValueError, match="empty"):
        audit_corpus(np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="packers must be among"):
        audit_corpus([3, 4], ["nope"])
    with pytest.raises(ValueError, match="must not repeat"):
        audit_corpus([3, 4], ["discard", "discard"])


@settings(max_examples=scaled_examples(25))
@given(st.lists(st.integers(1, 40), min_size=1, max_size=200), st.sampled_from(POLICIES))
def test_audit_side_by_side(lengths: list[int], policy: str) -> None:
    from packing_theory.orchestration import EvalStream

    res = audit_corpus(lengths, ["discard", policy] if policy != "discard" else ["discard"],
                Settings(capacity=16, min_buffer=4, refill=3), horizon=pt.Budget("rows", 30), permutations=2,
                evaluation=EvalStream(np.asarray(lengths), 45, (15,)))
    runs = res.measurement.runs
    assert runs[0].packer == "discard"
    assert all(r.aggregates.mass.identity_holds for r in runs)
    assert len(res.startup) == len(runs) == len(res.evaluation)
    m = res.measurement
    assert m.corpus.documents == len(lengths) and m.corpus.tokens == sum(lengths)
    assert m.run("discard") is runs[0]
    with pytest.raises(KeyError):
        m.run("nope")


@given(cases(policies=("discard", "continue")))
def test_protected_set_matches_the_invariant_module(case: tuple[list[int], dict[str, Any]]) -> None:
    invariant = pytest.importorskip("packing_theory.invariant")
    lengths, kwargs = case
    rep = pt.replay(lengths, **kwargs)
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    led = Ledger(R, B, chunk=2)
    pt.feed_all(rep.events, led)
    agg = led.result()
    arrived = [a.length for a in rep.arrivals]
    keys = invariant.protected_keys(arrived, R, B)
    assert sorted(led.protected_occurrences().tolist()) == sorted(occ for _, occ in keys)
    assert agg.protected.tokens == sum(n for n, _ in keys)
    if agg.exhausted_at_row is None:  # draining below B is outside the proposition
        assert agg.protected.started_members == 0


# --------------------------------------------------------------- the buffered-mass series against brute force


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


# ----------------------------------- the series' thinning rule, exact errors, columns, protected mass by hand


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
    led = Ledger(4, 2)
    pt.feed_all([Arrival(0, 0, 0, 6), Placement(0, 0, 0, 0, 1, 3, False, False),
                 Horizon(0, 3, "exhausted", (BufferedSpan(0, 0, 4, 3, True),))], led)
    agg = led.result()
    assert agg.conservation_violations == 0
    assert (agg.mass.buffered_tokens, agg.mass.buffered_added_bos) == (3, 0)
    assert led.arrays()["buffered"].tolist() == [3]


def test_ledger_columns_are_int64() -> None:
    """xǁLedgerǁ_finish__mutmut_10, _12: the per-occurrence buffered column is an int64 array."""
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
    led = Ledger(4, 3)
    pt.feed_all(pt.Packer(capacity=4, min_buffer=3, refill=5, rows=1).events([9, 2, 7, 8, 1]), led)
    assert led.result().protected == ProtectedMass(members=2, long_arrivals=3, tokens=17, started_members=0,
                                                   buffered_tokens=17, share_of_arrived=17 / 27,
                                                   share_of_buffered=1.0)
    empty = Ledger(4, 3)
    pt.feed_all([Horizon(0, 0, "exhausted", ())], empty)
    assert empty.result().protected == ProtectedMass(0, 0, 0, 0, 0, None, None)


@given(cases(), st.integers(1, 7))
def test_a_ledger_without_first_targets_reports_the_same(case: tuple[list[int], dict[str, Any]],
                                                         chunk: int) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events  # type: ignore[arg-type]
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    full = Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, chunk=chunk)
    lean = Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, chunk=chunk, keep_first_targets=False)
    pt.feed_all(events, full, lean)
    lean._check()
    assert lean.result() == full.result()  # first_over_capacity_target from the running minimum
    a, b = full.arrays(), lean.arrays()
    assert set(a) - set(b) == {"first_target"}
    for key, col in b.items():
        assert np.array_equal(a[key], col), key
    with pytest.raises(InputError, match="keep_first_targets=True"):
        lean.first_targets()


@given(cases(), st.integers(1, 9))
def test_array_blocks_concatenate_to_arrays(case: tuple[list[int], dict[str, Any]], block: int) -> None:
    lengths, kwargs = case
    ledger = Ledger(kwargs["capacity"], kwargs["min_buffer"], boundaries=SMALL_BOUNDS)
    pt.feed_all(pt.replay(lengths, **kwargs).events, ledger)  # type: ignore[arg-type]
    whole = ledger.arrays()
    blocks = list(ledger.array_blocks(block))
    assert [a for a, _ in blocks] == list(range(0, ledger.occurrences, block))
    for key, col in whole.items():
        parts = [c[key] for _, c in blocks]
        assert np.array_equal(np.concatenate(parts) if parts else col[:0], col), key
    picked = list(ledger.array_blocks(block, columns=("length", "buffered")))
    assert all(list(c) == ["length", "buffered"] for _, c in picked)


def test_array_blocks_and_first_targets_refuse_bad_arguments() -> None:
    ledger = Ledger(8, 2)
    with pytest.raises(InputError, match="block"):
        list(ledger.array_blocks(0))
    with pytest.raises(InputError, match=r"columns must be among .*got 'lengths'"):
        list(ledger.array_blocks(4, columns=("lengths",)))
    with pytest.raises(InputError, match="detail=True needs keep_first_targets=True"):
        Ledger(8, 2, detail=True, keep_first_targets=False)
    with pytest.raises(InputTypeError, match="keep_first_targets must be a bool, got int 1"):
        Ledger(8, 2, keep_first_targets=1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="occurrences_hint"):
        Ledger(8, 2, occurrences_hint=-1)


@pytest.mark.parametrize("points", [[0, 3, 250], list(range(0, 401, 2))])  # the partition and heap paths
def test_protected_mass_at_sample_points_equals_brute_force(points: list[int]) -> None:
    R, B = 8, 5
    rng = np.random.default_rng(3)
    ledger = Ledger(R, B)
    before = rng.integers(1, 40, 30)
    ledger.feed(pt.EventBatch.from_events([pt.Arrival(i, i, 0, int(n)) for i, n in enumerate(before)]))
    lengths = rng.integers(1, 40, 400).astype(np.int64)
    got = ledger._protected_at(lengths, points)
    for n, mass in zip(points, got, strict=True):
        longs = sorted(int(x) for x in np.concatenate([before, lengths[:n]]) if x > R)
        assert mass == sum(longs[-(B - 1):]), n


# --------------------------------------------------------------------------- Filtered events in batches


def _ledger_outcome(items: Any, compiled: bool = False) -> Any:
    led = Ledger(8, 2, compiled=compiled)
    try:
        for item in items:
            led.feed(item)
        led._check()
        return led.result()
    except ValueError as exc:
        return ("refused", str(exc))


def _filtering_stream(draw: Any) -> list[Event]:
    """A peer's events over lengths with empty and over-long documents (Filtered), maybe corrupted."""
    lengths = draw(st.lists(st.sampled_from([0, 0, 1, 3, 5, 8, 9, 20]), min_size=1, max_size=25))
    name = draw(st.sampled_from(["trl-bfd", "axolotl-multipack", "fewer-truncations", "seamless"]))
    try:
        events = list(pt.build_packer(name, capacity=8).events(lengths))
    except ValueError:  # the framework refuses this corpus
        reject()
    filtered = [i for i, e in enumerate(events) if type(e) is Filtered]
    corrupt = draw(st.sampled_from(["none", "none", "twice", "early", "length", "placed", "moved"]))
    if corrupt != "none" and filtered:
        i = draw(st.sampled_from(filtered))
        f = events[i]
        assert isinstance(f, Filtered)
        if corrupt == "twice":
            events.insert(i, f)
        elif corrupt == "early":  # before its own arrival
            events.insert(0, events.pop(i))
        elif corrupt == "length":
            events[i] = f._replace(length=f.length + 1)
        elif corrupt == "placed":  # a placement of the filtered occurrence after it
            events.insert(i + 1, Placement(0, 0, f.occurrence, f.source, 0, 1, False, False))
        else:  # the Filtered moved after another occurrence's events (still before the Horizon)
            moved = events.pop(i)
            events.insert(len(events) - 1, moved)
    return events


@settings(max_examples=scaled_examples(150), deadline=None)
@given(st.data(), st.sampled_from([1, 2, 5, 1000]), st.booleans())
def test_filtered_events_in_batches_account_as_one_by_one(data: Any, size: int, compiled: bool) -> None:
    """Batches take their Filtered events in bulk when each is valid where it stands, else one by one:
    the same aggregates, or the same refusal, as the events fed singly."""
    if compiled and not compiled_available():
        compiled = False
    events = _filtering_stream(data.draw)
    want = _ledger_outcome(events, compiled)
    assert _ledger_outcome(batched(events, size), compiled) == want
