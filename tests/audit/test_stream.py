"""The ledger on batches equals the ledger on single events; the compact table, spills, parallel audits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.audit import Ledger, audit_lengths
from packing_theory.audit import table as table_module
from packing_theory.engine import POLICIES, summarize
from packing_theory.engine.batches import EventBatch, batched
from packing_theory.engine.compiled import COMPILED_POLICIES, CompiledPacker, compiled_available
from packing_theory.testing import scaled_examples
from tests.audit.test_ledger import SMALL_BOUNDS, cases, check_against_naive
from tests.engine.test_batches import _peer_events


def _ledger(R: int, B: int, chunk: int, **kw: Any) -> Ledger:
    return Ledger(R, B, boundaries=SMALL_BOUNDS, exposure_bins=4, chunk=chunk, **kw)


@given(cases(), st.sampled_from(["fast", "reference"]), st.integers(1, 7), st.integers(1, 50))
def test_batches_equal_single_events(case: tuple[list[int], dict[str, Any]], engine: str, chunk: int,
                                     size: int) -> None:
    lengths, kwargs = case
    events = pt.replay(lengths, engine=engine, **kwargs).events  # type: ignore[arg-type]
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    single = _ledger(R, B, chunk)
    pt.feed_all(events, single)
    batch = _ledger(R, B, chunk)
    for b in batched(events, size):
        batch.feed(b)
        batch._check()
    assert batch.result() == single.result()  # the time series included
    assert np.array_equal(batch.first_targets(), single.first_targets())
    for key, col in single.arrays().items():
        assert np.array_equal(batch.arrays()[key], col), key
    check_against_naive(batch.result(), events, R, B, SMALL_BOUNDS, 4)


NO_NUMBA = 'numba not installed: pip install "packing-theory[fast]"'


@pytest.mark.slow  # over 10 s; test_compiled.py keeps a compiled-vs-fast differential in the default run
@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
@settings(max_examples=scaled_examples(60))
@given(cases(), st.integers(1, 7))
def test_compiled_batches_equal_fast_events(case: tuple[list[int], dict[str, Any]], chunk: int) -> None:
    lengths, kwargs = case
    assume(kwargs["policy"] in COMPILED_POLICIES)
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    single = _ledger(R, B, chunk)
    pt.feed_all(pt.Packer(**kwargs).events(lengths), single)
    compiled = _ledger(R, B, chunk)
    pt.feed_all(CompiledPacker(**kwargs).batches(lengths, size=16), compiled)
    assert compiled.result() == single.result()


@pytest.mark.parametrize("policy", POLICIES)
def test_block_reduction_is_bit_identical(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    lengths = np.maximum(1, rng.lognormal(3.0, 1.2, 3000)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=64, min_buffer=40, refill=16, policy=policy, passes=2)  # type: ignore[arg-type]
    whole = audit_lengths(lengths, cfg)
    monkeypatch.setattr(table_module, "BLOCK", 37)
    blocked = audit_lengths(lengths, cfg)
    assert blocked == whole
    assert blocked.coverage == whole.coverage  # floats equal to the bit: same values, same order


def test_peer_batches_filtered_and_series() -> None:
    events = _peer_events()
    a = Ledger(6, 1, chunk=2)
    pt.feed_all(events, a)
    for size in (1, 2, 3, 100):
        b = Ledger(6, 1, chunk=2)
        pt.feed_all(batched(events, size), b)
        b._check()
        assert b.result() == a.result()
    assert a.result().filtered_sources == 2


def test_mixed_events_and_batches_same_aggregates() -> None:
    rng = np.random.default_rng(4)
    lengths = np.maximum(1, rng.lognormal(2.5, 1.0, 500)).astype(np.int64)
    events = pt.replay(lengths, capacity=16, min_buffer=8, refill=4, policy="requeue-bos").events
    a = Ledger(16, 8, chunk=5)
    pt.feed_all(events, a)
    b = Ledger(16, 8, chunk=5)
    pt.feed_all([*events[:101], EventBatch.from_events(events[101:700]), *events[700:]], b)
    b._check()
    assert replace(b.result(), series=()) == replace(a.result(), series=())


def test_spill_and_save(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    lengths = np.maximum(1, rng.lognormal(2.5, 1.1, 400)).astype(np.int64)
    events = pt.replay(lengths, capacity=16, min_buffer=6, refill=3, policy="segment-first").events
    mem = Ledger(16, 6, detail=True, chunk=7)
    pt.feed_all(events, mem)
    disk = Ledger(16, 6, detail=True, chunk=7, spill=tmp_path / "detail")
    pt.feed_all(batched(events, 50), disk)
    assert (tmp_path / "detail.npz").exists() and not list(tmp_path.glob("*.raw"))
    assert not disk._detail_pl and not disk._detail_dc
    assert list(disk.records()) == list(mem.records())
    assert disk.result() == mem.result()
    out = mem.save(tmp_path / "columns")
    with np.load(out) as z:
        for key, col in mem.arrays().items():
            assert np.array_equal(z[key], col), key
        assert z["placements"].shape[1] == 9
    with pytest.raises(ValueError, match="needs detail=True"):
        Ledger(16, 6, spill=tmp_path / "x.npz")


def test_table_widens_to_64_bits_and_totals_stay_exact() -> None:
    big = 2**40 + 7
    events = [pt.Arrival(0, 0, 0, 5), pt.Arrival(1, 1, 0, big), pt.Placement(0, 0, 0, 0, 0, 5, False, False),
              pt.Placement(1, 0, 1, 1, 0, 5, False, True), pt.Discard(1, 1, 5, big - 5),
              pt.Horizon(2, 0, "drained", ())]
    for stream in (events, [EventBatch.from_events(events)]):
        led = Ledger(5, 1)
        pt.feed_all(stream, led)
        led._check()
        agg = led.result()
        assert led._t.length.dtype == np.int64
        assert agg.mass.arrived_tokens == big + 5 and agg.mass.discarded_tokens == big - 5
        assert agg.mass.identity_holds and agg.conservation_violations == 0


def test_compact_table_bytes_per_occurrence() -> None:
    """A one-pass discard stream stores 21 bytes per occurrence (no source, pass or marker column)."""
    rng = np.random.default_rng(6)
    lengths = np.maximum(1, rng.lognormal(3.0, 1.0, 5000)).astype(np.int64)
    led = Ledger(64, 20)
    pt.feed_all(pt.Packer(capacity=64, min_buffer=20, refill=8).events(lengths), led)
    t = led._t
    assert t.source is None and t.pass_index is None and t.added is None
    assert t.nbytes() == 21 * t.cap


@pytest.mark.parametrize("engine", ["fast", "compiled"])
def test_parallel_audit_equals_sequential(engine: str) -> None:
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from packing_theory.orchestration import EvalStream, Settings, audit_corpus

    if engine == "compiled" and not compiled_available():
        pytest.skip(NO_NUMBA)
    rng = np.random.default_rng(12)
    lengths = np.maximum(1, rng.lognormal(2.8, 1.2, 3000)).astype(np.int64)
    settings = Settings(capacity=32, min_buffer=20, refill=8, engine=engine)
    kw: dict[str, Any] = dict(horizon=pt.Budget("rows", 1500), permutations=5, permutation_seed=3,
                              evaluation=EvalStream(lengths[:800], 2000, (500,)))
    packers = ["discard", "continue", "random-span"]

    def doc(res: Any) -> dict[str, Any]:
        d = res.to_dict()
        d.pop("seconds")
        for p in d["packers"]:
            p.pop("seconds")
        return d  # type: ignore[no-any-return]

    seq = audit_corpus(lengths, packers, settings, **kw)
    done: list[int] = []
    with ProcessPoolExecutor(max_workers=2) as ex:
        par = audit_corpus(lengths, packers, settings, progress=done.append, executor=ex, **kw)
    with ThreadPoolExecutor(max_workers=3) as ex:
        thr = audit_corpus(lengths, packers, settings, executor=ex, **kw)
    for other in (par, thr):
        assert doc(other) == doc(seq)
        assert set(other.seconds) == set(seq.seconds)
    assert done == [1, 2, 3]  # one task per packer
    with pytest.raises(TypeError, match="executor must be"):
        audit_corpus(lengths, packers, settings, executor=object())


@given(cases(), st.integers(1, 40), st.booleans())
def test_stream_ledger_equals_ledger_and_summary(case: tuple[list[int], dict[str, Any]], size: int,
                                                 as_batches: bool) -> None:
    from packing_theory.audit.stream import StreamLedger

    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    led = _ledger(R, B, 8)
    pt.feed_all(events, led)
    agg = led.result()
    sl = StreamLedger(R, B, boundaries=SMALL_BOUNDS, chunk=size)
    for item in (batched(events, size) if as_batches else events):
        sl.feed(item)
        sl._check()
    r = sl.result()
    assert r.summary == summarize(events, R)
    assert r.strata == agg.strata
    assert (r.protected_members, r.protected_tokens, r.protected_started) == (
        agg.protected.members, agg.protected.tokens, agg.protected.started_members)
    assert r.median_crop_prefix == agg.median_crop_prefix


@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
@given(cases(), st.integers(1, 40), st.booleans())
def test_compiled_stream_ledger_equals_the_numpy_one(case: tuple[list[int], dict[str, Any]], size: int,
                                                     as_batches: bool) -> None:
    from packing_theory.audit.stream import StreamLedger

    lengths, kwargs = case
    events = pt.replay(lengths, **kwargs).events
    R, B = kwargs["capacity"], kwargs["min_buffer"]
    plain = StreamLedger(R, B, boundaries=SMALL_BOUNDS, chunk=size)
    compiled = StreamLedger(R, B, boundaries=SMALL_BOUNDS, chunk=size, compiled=True)
    for item in (batched(events, size) if as_batches else events):
        plain.feed(item)
        compiled.feed(item)
        compiled._check()
    assert compiled.result() == plain.result()


@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
def test_compiled_stream_ledger_on_peers_and_old_live_occurrences() -> None:
    from packing_theory.audit.stream import StreamLedger

    events = _peer_events()
    plain, compiled = StreamLedger(6, 1, chunk=3), StreamLedger(6, 1, chunk=3, compiled=True)
    pt.feed_all(events, plain, compiled)
    assert compiled.result() == plain.result()
    # one long document stays buffered (protected) while thousands pass: the old-id lookup path
    lengths = [50, *([1, 2, 3] * 2000)]
    cfg = pt.PackerConfig(capacity=8, min_buffer=2, refill=4, policy="discard")
    plain, compiled = StreamLedger(8, 2), StreamLedger(8, 2, compiled=True)
    pt.feed_all(batched(pt.Packer(cfg).events(lengths), 500), plain, compiled)
    assert compiled.result() == plain.result()
    assert plain.result().summary == summarize(pt.Packer(cfg).events(lengths), 8)
    with pytest.raises(TypeError, match="compiled must be a bool, got int 1"):
        StreamLedger(8, 2, compiled=1)  # type: ignore[arg-type]


def test_stream_ledger_memory_is_bounded_by_the_buffer() -> None:
    from packing_theory.audit.stream import StreamLedger

    rng = np.random.default_rng(9)
    cfg = pt.PackerConfig(capacity=64, min_buffer=30, refill=8, policy="continue")
    peaks = []
    for n in (2_000, 20_000):
        lengths = np.maximum(1, rng.lognormal(3.0, 1.2, n)).astype(np.int64)
        sl = StreamLedger(64, 30)
        pt.feed_all(batched(pt.Packer(cfg).events(lengths), 1000), sl)
        peaks.append(sl.result().live_peak)
    assert max(peaks) <= 30 + 8 + 1000  # B + a refill batch + one batch of arrivals


def test_stream_ledger_peer_events_and_errors() -> None:
    from packing_theory.audit.stream import StreamLedger

    events = _peer_events()
    for size in (1, 4, 100):
        sl = StreamLedger(6, 1, chunk=size)
        pt.feed_all(events, sl)
        r = sl.result()
        assert r.summary == summarize(events, 6)
        assert sum(s.filtered_sources for s in r.strata) == 2
    bad = StreamLedger(6, 1)
    with pytest.raises(ValueError, match="holds no tokens"):
        pt.feed_all([pt.Placement(0, 0, 0, 0, 0, 3, False, False), pt.Horizon(0, 3, "drained", ())], bad)
    with pytest.raises(ValueError, match="needs the Horizon"):
        StreamLedger(6, 1).result()


def test_stream_ledger_refuses_totals_it_cannot_hold_exactly() -> None:
    """Review finding: lengths near 2**62 wrapped negative in the streaming summary (the Ledger refused)."""
    from packing_theory.audit.ledger import MAX_EXACT_TOKENS
    from packing_theory.audit.stream import StreamLedger

    for lengths in ([2**62, 2**62, 5], [MAX_EXACT_TOKENS + 1, 5]):
        sl = StreamLedger(32, 1)
        with pytest.raises(ValueError, match="exact range: arrivals up to occurrence 0 "):
            pt.feed_all(batched(pt.Packer(capacity=32, min_buffer=1, refill=1).events(lengths), 2), sl)
    ok = StreamLedger(32, 1)  # just inside the range: exact
    lengths = [MAX_EXACT_TOKENS - 5, 5]
    pt.feed_all(batched(pt.Packer(capacity=32, min_buffer=1, refill=1).events(lengths), 2), ok)
    assert ok.result().summary.consumed_tokens == MAX_EXACT_TOKENS
