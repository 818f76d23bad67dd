"""Differential tests: the fast engine emits exactly the reference engine's events."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import assume, given, note
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine.batches import batched, unbatched
from packing_theory.engine.policies import POLICIES
from packing_theory.engine.summary import summarize


@st.composite
def packer_cases(draw: st.DrawFn, policies: tuple[str, ...] = POLICIES) -> tuple[list[int], dict[str, Any]]:
    """Small streams with heavy ties and lengths at 1, 2, R, R+1; small B and refill."""
    R = draw(st.integers(2, 12))
    special = st.sampled_from([1, 2, R - 1, R, R + 1, 2 * R, 3 * R])
    length = st.one_of(special, st.integers(1, 3 * R))
    pool = draw(st.lists(length, min_size=1, max_size=4))  # few distinct values -> ties
    lengths = draw(st.lists(st.one_of(st.sampled_from(pool), length), min_size=1, max_size=60))
    refill = draw(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    kwargs: dict[str, Any] = dict(
        capacity=R,
        min_buffer=draw(st.integers(1, 6)),
        refill=refill,
        policy=draw(st.sampled_from(policies)),
        passes=draw(st.integers(1, 3)),
        exhausted=draw(st.sampled_from(["stop", "drain"])),
        seed=draw(st.integers(0, 2**32)),
    )
    budget = draw(st.sampled_from(["none", "rows", "targets"]))
    if budget == "rows":
        kwargs["rows"] = draw(st.integers(0, 20))
    elif budget == "targets":
        kwargs["targets"] = draw(st.integers(0, 20 * R))
    return lengths, kwargs


@given(packer_cases())
def test_fast_equals_reference(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kwargs = case
    fast = pt.replay(lengths, engine="fast", **kwargs)
    ref = pt.replay(lengths, engine="reference", **kwargs)
    note(f"fast={fast.events}")
    assert fast.events == ref.events


@given(packer_cases())
def test_mass_identity_and_row_layout(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kwargs = case
    rep = pt.replay(lengths, **kwargs)
    s = rep.summary()
    assert s.identity_holds(), s
    R = kwargs["capacity"]
    pads = rep.config.spec.pads
    # Rows are contiguous and full; placements never exceed capacity. Only a padding policy pads,
    # and only the end of a row (never a crop there).
    for row_index, row in enumerate(rep.rows()):
        assert [p.row for p in row] == [row_index] * len(row)
        offsets = [p.offset for p in row]
        assert offsets[0] == 0
        assert all(a.offset + a.length == b.offset for a, b in itertools.pairwise(row))
        assert row[-1].offset + row[-1].length == R
        placed = [p for p in row if isinstance(p, pt.Placement)]
        assert all(p.crop is False for p in placed[:-1])
        assert [p for p in row if isinstance(p, pt.Padding)] in ([], [row[-1]] if pads else [])
        assert not (pads and any(p.crop for p in placed))
    assert s.emitted_tokens + s.padding_tokens == s.rows * R + s.partial_row_tokens
    budget = rep.config.row_budget
    if s.stop_reason == "rows":
        assert budget is not None and s.rows == budget
    else:
        assert budget is None or s.rows <= budget


@given(packer_cases())
def test_every_source_token_accounted_once(case: tuple[list[int], dict[str, Any]]) -> None:
    """Per occurrence, emitted + discarded + buffered source offsets tile [0, L) exactly."""
    lengths, kwargs = case
    rep = pt.replay(lengths, **kwargs)
    covered: dict[int, list[tuple[int, int]]] = {}
    length_of = {a.occurrence: a.length for a in rep.arrivals}
    added = {occ: 0 for occ in length_of}
    bos_markers = {occ: 0 for occ in length_of}
    for ev in rep.events:
        if isinstance(ev, pt.Placement):
            covered.setdefault(ev.occurrence, []).append((ev.start, ev.source_stop))
            bos_markers[ev.occurrence] += ev.bos_inserted
        elif isinstance(ev, pt.Discard):
            covered.setdefault(ev.occurrence, []).append((ev.start, ev.start + ev.length))
        elif isinstance(ev, pt.BosAdded):
            added[ev.occurrence] += ev.markers
    for span in rep.horizon.buffered:
        stop = span.start + span.length - span.bos_inserted
        covered.setdefault(span.occurrence, []).append((span.start, stop))
        bos_markers[span.occurrence] += span.bos_inserted
    for occ, L in length_of.items():
        intervals = sorted(i for i in covered.get(occ, []) if i[1] > i[0])
        if kwargs["policy"] == "random-span" and intervals and intervals[0][0] != 0:
            # random-span: the source's own BOS travels in front of the span
            intervals = [(0, 1), *intervals]
            bos_markers[occ] -= 1
        pos = 0
        for a, b in intervals:
            assert a == pos, (occ, intervals)
            pos = b
        assert pos == L, (occ, L, intervals)
        assert bos_markers[occ] == added[occ], (occ, bos_markers[occ], added[occ])


@given(packer_cases(policies=("discard", "continue", "requeue-bos", "segment-first")))
def test_token_rows_match_placements(case: tuple[list[int], dict[str, Any]]) -> None:
    lengths, kwargs = case
    docs = [[0] + [1000 * (i + 1) + p for p in range(1, L)] for i, L in enumerate(lengths)]
    config = pt.PackerConfig(**{**kwargs, "passes": 1})
    token_rows = list(pt.Packer(config).token_rows(docs))
    place_rows = pt.replay(lengths, config=config).rows()
    assert len(token_rows) == len(place_rows)
    for tokens, row in zip(token_rows, place_rows, strict=True):
        expected: list[int] = []
        for p in row:
            doc = docs[p.source]
            if p.bos_inserted:
                expected += [0, *doc[p.start : p.source_stop]]
            else:
                expected += doc[p.start : p.source_stop]
        assert tokens == expected


def test_random_span_matches_discard_decisions() -> None:
    """random-span makes the same whole/crop decisions, sources, offsets as discard (seed 000 §4)."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 60, size=3000).tolist()
    kw = dict(capacity=24, min_buffer=20, refill=8)
    a = pt.replay(lengths, policy="discard", **kw).placements
    b = pt.replay(lengths, policy="random-span", **kw).placements
    key = [(p.row, p.offset, p.occurrence, p.length, p.crop) for p in a]
    assert key == [(p.row, p.offset, p.occurrence, p.length, p.crop) for p in b]
    moved = [p for p in b if p.crop and p.bos_inserted]
    assert moved, "expected some random spans away from the prefix"
    assert all(p.start >= 2 for p in moved)


def test_random_span_seed_changes_only_locations() -> None:
    lengths = list(range(1, 80)) * 20
    kw = dict(capacity=16, min_buffer=10, refill=4, policy="random-span")
    a = pt.replay(lengths, seed=1, **kw).placements
    b = pt.replay(lengths, seed=2, **kw).placements
    assert [p.occurrence for p in a] == [p.occurrence for p in b]
    assert [p.start for p in a] != [p.start for p in b]


def test_streamed_iterator_equals_list() -> None:
    lengths = [5, 17, 3, 3, 40, 2, 9, 1, 1, 33] * 30
    kw = dict(capacity=16, min_buffer=7, refill=[3, 1])
    assert pt.replay(iter(lengths), **kw).events == pt.replay(lengths, **kw).events
    assert pt.replay(np.array(lengths, dtype=np.uint32), **kw).events == pt.replay(lengths, **kw).events


def _as(form: str, lengths: list[int]) -> Any:
    return iter(lengths) if form == "iterator" else np.array(lengths) if form == "array" else lengths


@given(packer_cases(), st.integers(1, 40), st.sampled_from(["list", "array", "iterator"]))
def test_fast_batches_are_its_events_batched(case: tuple[list[int], dict[str, Any]], size: int,
                                            form: str) -> None:
    """One replay loop, two ways of emitting: ``Packer.batches`` (columns, no event objects) is exactly
    ``batched(Packer.events)``, so every consumer, the replay summary first, gets the same stream."""
    lengths, kwargs = case
    assume(form != "iterator" or kwargs["passes"] == 1)
    packer = pt.Packer(**kwargs)
    got = list(packer.batches(_as(form, lengths), size=size))
    events = list(packer.events(_as(form, lengths)))
    want = list(batched(events, size))
    note(f"events={events}")
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a._check()
        assert a == b
    assert list(unbatched(got)) == events
    assert summarize(got, packer.config) == summarize(events, packer.config)


@given(packer_cases(), st.integers(1, 10), st.data())
def test_fast_batches_resume_like_its_events(case: tuple[list[int], dict[str, Any]], size: int,
                                            data: st.DataObject) -> None:
    """Resumed from a state captured at a row boundary, the batches are the resumed events."""
    lengths, kwargs = case
    packer = pt.Packer(**kwargs)
    total = sum(1 for _ in packer.events(lengths))
    first = data.draw(st.integers(0, total - 1), label="ask for the state after this many events")
    run = packer.run(lengths)
    for k, _ in enumerate(run):
        if k == first:
            run.request_state()  # captured at the next row boundary
    assume(run.state is not None)
    resumed = list(packer.events(lengths, resume=run.state))
    assert list(unbatched(packer.batches(lengths, size=size, resume=run.state))) == resumed
