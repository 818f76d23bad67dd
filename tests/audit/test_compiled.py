"""The compiled ledger (numba kernels) against the numpy ledger, its oracle: identical results and columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.audit import Ledger, audit_lengths
from packing_theory.audit.compiled import MAX_HISTOGRAM_LENGTH
from packing_theory.engine.batches import batched
from packing_theory.engine.compiled import compiled_available
from packing_theory.errors import InputError, InputTypeError
from packing_theory.registry import entry, names
from tests.audit.test_ledger import SMALL_BOUNDS, cases

pytestmark = pytest.mark.skipif(not compiled_available(), reason="numba (the fast extra) is not installed")


def _pair(R: int, B: int, **kw: Any) -> tuple[Ledger, Ledger]:
    return (Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, **kw),
            Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, compiled=True, **kw))


def _same(numpy_ledger: Ledger, compiled_ledger: Ledger) -> None:
    compiled_ledger._check()
    assert compiled_ledger.result() == numpy_ledger.result()  # the time series included
    a, b = numpy_ledger.arrays(), compiled_ledger.arrays()
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    assert np.array_equal(numpy_ledger.protected_occurrences(), compiled_ledger.protected_occurrences())


@given(cases(), st.integers(1, 7), st.sampled_from(["events", "batches"]))
def test_every_policy_identical(case: tuple[list[int], dict[str, Any]], chunk: int, form: str) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events
    plain, compiled = _pair(kwargs["capacity"], kwargs["min_buffer"], chunk=chunk)
    stream = events if form == "events" else list(batched(events, 5))
    for ev in stream:
        plain.feed(ev)
        compiled.feed(ev)
        compiled._check()
    _same(plain, compiled)


@given(st.sampled_from(names("peer")), st.integers(4, 24),
       st.lists(st.integers(1, 40), min_size=1, max_size=60), st.integers(1, 5))
def test_every_peer_identical(name: str, R: int, lengths: list[int], B: int) -> None:
    try:
        peer = entry(name).build(R)
        events = list(peer.events(lengths))
    except InputError:
        assume(False)
        raise
    plain, compiled = _pair(max(peer.capacity, 2), B, chunk=7, detail=True)
    pt.feed_all(events, plain, compiled)
    _same(plain, compiled)
    assert list(plain.records()) == list(compiled.records())


@pytest.mark.parametrize("policy", ["discard", "continue", "requeue-bos", "segment-first", "random-span"])
def test_compiled_engine_audit_identical(policy: str) -> None:
    lengths = pt.corpus.default_lengths()[:30_000]
    cfg = pt.PackerConfig(capacity=2049, min_buffer=100, refill=128, policy=policy)  # type: ignore[arg-type]
    plain = audit_lengths(lengths, cfg, engine="compiled", ledger_kwargs={"compiled": False})
    assert audit_lengths(lengths, cfg, engine="compiled") == plain


def test_multi_pass_and_huge_lengths_fall_back_to_the_numpy_reduction() -> None:
    for lengths, passes in (([3, 9, 4, 30], 2), ([3, MAX_HISTOGRAM_LENGTH + 5, 4], 1)):
        plain, compiled = _pair(8, 2)
        events = pt.replay(lengths, capacity=8, min_buffer=2, refill=1, passes=passes,
                           exhausted="drain").events
        pt.feed_all(events, plain, compiled)
        _same(plain, compiled)


BAD_STREAMS = [
    [pt.Arrival(0, 0, 0, 3), pt.Arrival(1, 1, 0, 4), pt.Arrival(1, 1, 0, 4)],
    [pt.Arrival(0, 0, 0, 3), pt.Placement(0, 0, 1, 1, 0, 3, False, False)],
    [pt.Arrival(0, 0, 0, 3), pt.Placement(0, 6, 0, 0, 0, 3, False, False)],
    [pt.Arrival(0, 0, 0, 3), pt.Placement(0, 0, 0, 0, 1, 3, False, False)],
    [pt.Arrival(0, 0, 0, 3), pt.Filtered(0, 0, 3, "x"), pt.Placement(0, 0, 0, 0, 0, 3, False, False)],
    [pt.Arrival(0, 0, 0, 3), pt.Discard(1, 1, 0, 2)],
    [pt.Arrival(0, 0, 0, 3), pt.Discard(0, 0, 0, -1)],
    [pt.Arrival(0, 0, 0, 3), pt.Arrival(1, 1, 0, -2)],
    [pt.Arrival(-1, 0, 0, 3)],
]


@pytest.mark.parametrize("events", BAD_STREAMS)
def test_inconsistent_streams_refused_with_the_same_message(events: list[Any]) -> None:
    messages = []
    for ledger in _pair(8, 2, chunk=2):
        with pytest.raises(InputError) as info:
            for ev in [*events, pt.Horizon(1, 0, "drained", ())]:
                ledger.feed(ev)
        messages.append(str(info.value))
        ledger._check()  # nothing half-accounted
    assert messages[0] == messages[1]


def test_compiled_must_be_a_bool() -> None:
    with pytest.raises(InputTypeError, match="compiled must be a bool, got str 'yes'"):
        Ledger(8, 2, compiled="yes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="boundaries: the compiled ledger takes at most 254 stratum "
                                         "boundaries, got 300"):
        Ledger(8, 2, compiled=True, boundaries=range(1, 301))


@given(cases(), st.integers(1, 7))
def test_without_first_targets_identical(case: tuple[list[int], dict[str, Any]], chunk: int) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events  # type: ignore[arg-type]
    plain, compiled = _pair(kwargs["capacity"], kwargs["min_buffer"], chunk=chunk, keep_first_targets=False)
    pt.feed_all(events, plain, compiled)
    _same(plain, compiled)
