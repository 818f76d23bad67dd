"""Differential tests: the compiled (numba) engine against the fast engine, event for event.

Skipped, with the reason shown, when numba is not installed (``pip install "packing-theory[fast]"``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.engine import POLICIES, compiled
from packing_theory.engine.batches import LengthChunks, batched
from packing_theory.engine.compiled import COMPILED_POLICIES, CompiledPacker, compiled_available
from packing_theory.testing import scaled_examples
from tests.engine.test_engines import packer_cases
from tests.engine.test_loader_golden import FIXTURES, _digests, _rows
from tests.golden_params import fixture_params, not_realistic
from tests.invariant.test_wait_bound import bounded_wait_cases, tight_stream

pytestmark = pytest.mark.skipif(not compiled_available(),
                                reason='numba not installed: pip install "packing-theory[fast]"')


def typed(events: list[pt.Event]) -> list[tuple[str, tuple[Any, ...]]]:
    """Events with their type names: NamedTuples of different types compare equal as tuples."""
    return [(type(e).__name__, tuple(e)) for e in events]


@given(packer_cases(COMPILED_POLICIES), st.sampled_from([4, 5, 64, 65_536]))
def test_compiled_equals_fast(case: tuple[list[int], dict[str, Any]], size: int) -> None:
    lengths, kwargs = case
    fast = pt.replay(lengths, engine="fast", **kwargs).events
    batches = list(CompiledPacker(**kwargs).batches(lengths, size=size))
    for b in batches:
        b._check()
        assert len(b) <= size + 1
    events = [e for b in batches for e in b.events()]
    assert typed(events) == typed(fast)
    # the compiled batches equal the fast events batched at the same boundaries
    cuts = np.cumsum([len(b) for b in batches])[:-1].tolist()
    starts = [0, *cuts]
    ends = [*cuts, len(fast)]
    assert batches == [next(batched(fast[a:b], max(1, b - a))) for a, b in zip(starts, ends, strict=True)]


@settings(max_examples=scaled_examples(50))
@given(packer_cases(COMPILED_POLICIES), st.integers(1, 7))
def test_compiled_small_input_chunks_and_iterators(case: tuple[list[int], dict[str, Any]], step: int) -> None:
    lengths, kwargs = case
    fast = typed(pt.replay(lengths, engine="fast", **kwargs).events)
    packer = CompiledPacker(**kwargs)
    got = [e for b in packer.batches(lengths, size=8, input_chunk=step) for e in b.events()]
    assert typed(got) == fast
    if kwargs["passes"] == 1:
        assert typed(list(packer.events(iter(lengths)))) == fast
        chunks = LengthChunks(np.array(lengths[i : i + step]) for i in range(0, len(lengths), step))
        assert typed(list(packer.events(chunks))) == fast


@pytest.mark.parametrize("policy", COMPILED_POLICIES)
def test_every_policy_at_scale(policy: str) -> None:
    rng = np.random.default_rng(2024)
    lengths = np.maximum(1, rng.lognormal(5.5, 1.3, 20_000)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=2049, min_buffer=300, refill=(128, 128, 60), policy=policy,  # type: ignore[arg-type]
                          passes=2, exhausted="drain")
    fast = typed(list(pt.Packer(cfg).events(lengths)))
    assert typed(list(CompiledPacker(cfg).events(lengths))) == fast


def test_random_span_draws_equal_python() -> None:
    """The kernel's MT19937 + randrange reproduce CPython's draws (every bit width up to 62)."""
    from packing_theory.engine import _kernel

    st_arr = np.zeros(_kernel.ST_SIZE, dtype=np.int64)
    for seed in (0, 1, 314159265, 2**40 + 3):
        state = random.Random(seed).getstate()[1]
        mt = np.array(state[:624], dtype=np.int64)
        st_arr[_kernel.MTI] = state[624]
        rng = random.Random(seed)
        ns = [2, 3, 5, 1000, 2**31 - 1, 2**32, 2**32 + 1, 2**45 + 17, 2**61 + 5] * 80
        assert [int(_kernel.randbelow(mt, st_arr, n)) for n in ns] == [rng.randrange(n) for n in ns]


@pytest.mark.parametrize("path", fixture_params(FIXTURES, not_realistic))
def test_compiled_engine_matches_loader(path: Path) -> None:
    meta = json.loads(path.read_text())
    rows = _rows(meta, "compiled", meta["n_rows"])
    assert len(rows) == meta["n_rows"]
    assert _digests(rows, meta["block"]) == meta["row_block_sha256"]


@pytest.mark.parametrize(
    ("lengths", "exc", "pattern"),
    [
        ([], ValueError, r"lengths is empty"),
        (np.array([], dtype=np.int64), ValueError, r"lengths is empty"),
        ([3, 0, 2], ValueError, r"lengths\[1\] must be a positive BOS-inclusive length, got 0"),
        ([3, 2.5], TypeError, r"lengths\[1\] must be an int, got float"),
        (np.array([1.0, 2.0]), TypeError, r"integer dtype, got float64"),
        (("iter", []), ValueError, r"lengths is empty"),
        (("iter", [4, 0]), ValueError, r"lengths\[1\] must be a positive"),
        (("iter", [4, True]), TypeError, r"lengths\[1\] must be an int, got bool"),
        (("chunks", [[4, 2], [5, -1]]), ValueError, r"lengths\[3\] must be a positive"),
        (("chunks", [[4.0]]), TypeError, r"integer dtype, got float64"),
    ],
)
def test_compiled_length_errors(lengths: object, exc: type[Exception], pattern: str) -> None:
    if isinstance(lengths, tuple):
        kind, values = lengths
        lengths = iter(values) if kind == "iter" else LengthChunks(np.array(v) for v in values)
    with pytest.raises(exc, match=pattern):
        pt.replay(lengths, engine="compiled", capacity=4, min_buffer=1)  # type: ignore[arg-type]


def test_compiled_argument_errors() -> None:
    with pytest.raises(ValueError, match="size must be an int >= 4"):
        CompiledPacker(capacity=4).batches([1], size=2)
    with pytest.raises(ValueError, match=r"passes=2 needs a re-iterable"):
        list(CompiledPacker(capacity=4, passes=2).events(iter([1, 2])))


def test_token_rows_and_slot_growth() -> None:
    sizes = [3, 40, 2, 7, 9, 1, 25] * 40
    docs = [[0] + [1000 * (i + 1) + p for p in range(1, n)] for i, n in enumerate(sizes)]
    cfg = pt.PackerConfig(capacity=8, min_buffer=5, refill=3, policy="segment-first")
    assert list(CompiledPacker(cfg).token_rows(docs)) == list(pt.Packer(cfg).token_rows(docs))
    # one huge document needs more span slots than the initial table holds
    cfg = pt.PackerConfig(capacity=4, min_buffer=2, refill=1, policy="segment-first")
    lengths = [5, 10_000, 3, 2]
    assert typed(list(CompiledPacker(cfg).events(lengths))) == typed(list(pt.Packer(cfg).events(lengths)))


def test_compiled_refuses_a_policy_it_does_not_implement(monkeypatch: pytest.MonkeyPatch) -> None:
    from packing_theory.engine.kernel_codes import POLICY_CODES

    assert set(POLICIES) - set(COMPILED_POLICIES) == set(POLICIES) - set(POLICY_CODES) == {"bestfit-pad"}
    with pytest.raises(ValueError, match="got policy 'bestfit-pad' \\(use engine='fast'\\)"):
        CompiledPacker(capacity=8, min_buffer=2, policy="bestfit-pad")
    monkeypatch.setattr(compiled, "COMPILED_POLICIES", tuple(p for p in POLICIES if p != "bounded-wait"))
    with pytest.raises(ValueError, match="got policy 'bounded-wait' \\(use engine='fast'\\)"):
        CompiledPacker(capacity=8, min_buffer=2, policy="bounded-wait")


@pytest.mark.parametrize("lengths", [[10**9, 5], [2**63 - 1, 5], [2**62, 2**62, 3]])
def test_segment_first_refuses_too_many_chunks_as_the_fast_engine_does(lengths: list[int]) -> None:
    """The kernel split long documents without the chunk limit: 10**9 ran (13.5 s, 1.4 GB), 2**63 - 1
    ended in numpy's 'array is too big' (exit 3)."""
    arr = np.array(lengths, dtype=np.int64)
    cfg = pt.PackerConfig(capacity=64, min_buffer=1, policy="segment-first")
    with pytest.raises(pt.InputError) as fast:
        list(pt.Packer(cfg).events(arr))
    with pytest.raises(pt.InputError) as compiled:
        list(CompiledPacker(cfg).batches(arr))
    assert str(compiled.value) == str(fast.value)
    assert "segment-first would split a document of length" in str(compiled.value)


# --------------------------------------------------------------------------- bounded-wait's forced start


def first_rows(events: list[pt.Event]) -> dict[int, tuple[int, int]]:
    """``occurrence -> (row, offset)`` of each occurrence's first placement."""
    first: dict[int, tuple[int, int]] = {}
    for e in events:
        if isinstance(e, pt.Placement):
            first.setdefault(e.occurrence, (e.row, e.offset))
    return first


@settings(max_examples=scaled_examples(200))
@given(bounded_wait_cases(), st.sampled_from([4, 5, 64]), st.integers(1, 7))
def test_bounded_wait_equals_fast(case: tuple[list[int], dict[str, Any]], size: int, step: int) -> None:
    """A in 0..5 (forced starts are frequent), tiny output batches and input chunks (every resume path)."""
    lengths, kwargs = case
    fast = typed(pt.replay(lengths, engine="fast", **kwargs).events)
    packer = CompiledPacker(**kwargs)
    batches = list(packer.batches(lengths, size=size, input_chunk=step))
    for b in batches:
        b._check()
    assert typed([e for b in batches for e in b.events()]) == fast
    if kwargs["passes"] == 1:
        assert typed(list(packer.events(iter(lengths)))) == fast


@pytest.mark.parametrize("A", [0, 1, 2, 5])
def test_forced_start_exactly_after_max_wait_rows(A: int) -> None:
    """A span that waited exactly A rows is not forced; at A + 1 it is, first in its row."""
    lengths = [3] + [4] * 30  # R = 4: best fit always prefers a 4, so the 3 starts only when forced
    cfg = pt.PackerConfig(capacity=4, min_buffer=3, refill=1, policy="bounded-wait", max_wait=A)
    fast = list(pt.Packer(cfg).events(lengths))
    events = list(CompiledPacker(cfg).events(lengths))
    assert typed(events) == typed(fast)
    assert first_rows(events)[0] == (A + 1, 0)
    placed = next(e for e in events if isinstance(e, pt.Placement) and e.occurrence == 0)
    assert placed.length == 3 and not placed.crop  # it fits: placed whole
    plain = CompiledPacker(pt.PackerConfig(capacity=4, min_buffer=3, refill=1, policy="continue"))
    assert 0 not in first_rows(list(plain.events(lengths)))  # without the forced start it never starts


@pytest.mark.parametrize("A", [0, 3])
def test_several_overdue_spans_one_forced_start_per_row_oldest_first(A: int) -> None:
    """Long spans of different lengths (the forced one is not the long heap's top) arrive in row 0:
    one is forced per row from row A + 1 on, in arrival order; their suffixes stay buffered."""
    longs = [20, 9, 15, 8, 9]
    lengths = longs + [2] * 60
    cfg = pt.PackerConfig(capacity=4, min_buffer=8, refill=2, policy="bounded-wait", max_wait=A,
                          exhausted="drain")
    events = list(CompiledPacker(cfg).events(lengths))
    assert typed(events) == typed(list(pt.Packer(cfg).events(lengths)))
    first = first_rows(events)
    assert [first[occ] for occ in range(len(longs))] == [(A + 1 + j, 0) for j in range(len(longs))]
    starts = [e for e in events if isinstance(e, pt.Placement) and e.occurrence < len(longs)
              and e.start == 0]
    assert all(e.crop and e.length == 4 for e in starts)  # cropped to R, the suffix continues


def test_forced_starts_across_passes() -> None:
    """The buffer persists across passes: second-pass arrivals are forced with their own arrival rows."""
    lengths = [11, 1, 2, 3, 1, 2, 9]
    for A in (0, 2):
        cfg = pt.PackerConfig(capacity=4, min_buffer=3, refill=(1, 2), policy="bounded-wait", max_wait=A,
                              passes=3, exhausted="drain")
        fast = list(pt.Packer(cfg).events(lengths))
        assert typed(list(CompiledPacker(cfg).events(lengths))) == typed(fast)
        arrivals = [e for e in fast if isinstance(e, pt.Arrival)]
        assert {e.pass_index for e in arrivals} == {0, 1, 2}


@pytest.mark.parametrize(("B", "k", "A"), [(1, 2, 0), (3, 2, 1), (5, 4, 3), (8, 3, 7)])
def test_compiled_attains_the_proved_bound(B: int, k: int, A: int) -> None:
    """BoundedWaitExec.v's tight stream: the victim starts exactly A + B + k - 2 rows after its arrival."""
    R = k + 3
    lengths, victim = tight_stream(R, B, k, A)
    cfg = pt.PackerConfig(capacity=R, min_buffer=B, refill=k, policy="bounded-wait", max_wait=A)
    events = list(CompiledPacker(cfg).events(lengths))
    assert typed(events) == typed(list(pt.Packer(cfg).events(lengths)))
    assert first_rows(events)[victim][0] == cfg.start_delay_bound


def test_wait_ring_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long span that is never forced (A large) keeps every later arrival in the wait ring."""
    grown: list[int] = []
    grow = compiled._grow_wait_ring

    def spy(k: Any, st_arr: Any, wq: Any) -> Any:
        grown.append(wq.shape[1])
        return grow(k, st_arr, wq)

    monkeypatch.setattr(compiled, "_grow_wait_ring", spy)
    lengths = [50] + [1, 2, 3] * 200
    cfg = pt.PackerConfig(capacity=8, min_buffer=2, refill=1, policy="bounded-wait", max_wait=10**6,
                          exhausted="drain")
    assert typed(list(CompiledPacker(cfg).events(lengths))) == typed(list(pt.Packer(cfg).events(lengths)))
    assert grown and grown == [grown[0] * 2**i for i in range(len(grown))]


@pytest.mark.parametrize("A", [0, 4, 16])
def test_bounded_wait_at_scale(A: int) -> None:
    rng = np.random.default_rng(7)
    lengths = np.maximum(1, rng.lognormal(6.0, 1.4, 20_000)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=2049, min_buffer=300, refill=(128, 60), policy="bounded-wait",
                          max_wait=A, passes=2, exhausted="drain")
    assert typed(list(CompiledPacker(cfg).events(lengths))) == typed(list(pt.Packer(cfg).events(lengths)))
