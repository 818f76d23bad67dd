"""Out-of-family variants: hypothesis searches for violations; shrunk counterexamples are pinned.

The searches are ``slow`` (CI runs them in its slow step: ``python -m pytest -m slow``).

Results (see ``docs/invariant.rst``):

* ``requeue-bos``, ``oldest-first``, ``latest-tie``, ``epoch-flush``, ``epoch-drain``:
  violated; the shrunk counterexamples are the ``test_counterexample_*`` tests and the
  ``@example`` cases of ``test_reported_violations_name_a_member_of_k``.
* ``split-suffix``, ``continue-at-end`` (multiple active spans / a moved span):
  no violation found, and none exists: every non-protected span is either an
  untouched original (which precedes any protected span of equal length, since
  originals keep arrival order) or a remainder strictly shorter than its
  original, so the proof's comparison with the smallest protected key still
  goes through.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import packing_theory as pt
from packing_theory.engine.events import Arrival, Exhausted, Placement
from packing_theory.engine.summary import summarize
from packing_theory.engine.variants import VARIANTS, VariantConfig, VariantPacker, variant
from packing_theory.invariant import InvariantMonitor, protected_violations
from packing_theory.invariant import strategies as pst
from packing_theory.testing import scaled_examples

VIOLATING = ("requeue-bos", "oldest-first", "latest-tie", "epoch-flush", "epoch-drain")
HOLDING = ("split-suffix", "continue-at-end")
assert set(VIOLATING) | set(HOLDING) == set(VARIANTS)

SEARCH = settings(max_examples=3000,  # a search budget of find(), not a property's example count
                  database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck), deadline=None)


def monitored(lengths: list[int], config: VariantConfig) -> tuple[InvariantMonitor, list[Any]]:
    packer = VariantPacker(config)
    mon = InvariantMonitor(config.capacity, config.min_buffer, snapshot=packer.snapshot)
    events = list(mon.observe(packer.events(lengths)))
    mon._check()
    return mon, events


def variant_cases(name: str, max_docs: int = 20) -> st.SearchStrategy[tuple[list[int], VariantConfig]]:
    """A named variant over small random streams; the in-family continuation is drawn too."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[list[int], VariantConfig]:
        R = draw(st.integers(2, 6))
        kwargs: dict[str, Any] = dict(
            capacity=R,
            min_buffer=draw(st.integers(1, 5)),
            refill=draw(pst.refill_batches(max_batch=3)),
            passes=draw(st.integers(1, 3)),
            exhausted=draw(st.sampled_from(["stop", "drain"])),
        )
        if "continuation" not in VARIANTS[name]:
            kwargs["continuation"] = draw(st.sampled_from(["discard", "continue"]))
        lengths = draw(pst.arrival_streams(capacity=R, min_size=1, max_size=max_docs, max_value=3 * R))
        return lengths, variant(name, **kwargs)

    return build()


# --------------------------------------------------------------------------- the variant packer itself


@given(pst.replay_cases(policies=("discard", "continue", "requeue-bos")))
def test_default_knobs_equal_the_reference(case: tuple[list[int], pt.PackerConfig]) -> None:
    lengths, cfg = case
    vcfg = VariantConfig(capacity=cfg.capacity, min_buffer=cfg.min_buffer, refill=cfg.refill,
                         passes=cfg.passes, rows=cfg.row_budget, exhausted=cfg.exhausted,
                         continuation=cfg.policy)  # type: ignore[arg-type]
    ref = list(pt.ReferencePacker(cfg).events(lengths))
    assert list(VariantPacker(vcfg).events(lengths)) == ref


@pytest.mark.parametrize("name", sorted(VARIANTS))
@given(data=st.data())
@settings(max_examples=scaled_examples(60))
def test_variants_conserve_mass(name: str, data: st.DataObject) -> None:
    lengths, config = data.draw(variant_cases(name))
    events = list(VariantPacker(config).events(lengths))
    s = summarize(events, config.capacity)
    assert s.identity_holds(), s
    assert all(p.length >= 1 for p in events if type(p) is Placement)


def test_variant_config_rejects_bad_knobs() -> None:
    with pytest.raises(ValueError, match="fallback must be one of shortest, oldest; got 'random'"):
        VariantConfig(fallback="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flush must be one of"):
        VariantConfig(flush="always")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_buffer must be >= 1"):
        VariantConfig(min_buffer=0)
    with pytest.raises(ValueError, match="variant must be one of"):
        variant("fifo")
    with pytest.raises(TypeError, match="unknown VariantConfig fields"):
        variant("latest-tie", policy="discard")
    with pytest.raises(TypeError, match="either config or keyword"):
        VariantPacker(VariantConfig(), capacity=4)
    assert VariantConfig().in_family and not variant("epoch-flush").in_family


# --------------------------------------------------------------------------- searches


@pytest.mark.slow
@pytest.mark.parametrize("name", VIOLATING)
def test_hypothesis_finds_a_violation(name: str) -> None:
    """Hypothesis searches the variant's streams for a violation and shrinks it to a tiny case."""

    def violates(case: tuple[list[int], VariantConfig]) -> bool:
        return not monitored(*case)[0].ok

    lengths, config = find(variant_cases(name), violates, settings=SEARCH)
    mon, _ = monitored(lengths, config)
    assert not mon.ok
    # as small as the committed counterexamples below
    assert len(lengths) <= 3 and config.capacity <= 4 and config.min_buffer <= 3 and config.passes <= 2


@pytest.mark.slow  # over 10 s per variant
@pytest.mark.parametrize("name", HOLDING)
@given(data=st.data())
@settings(max_examples=scaled_examples(300))
def test_no_violation_for_multi_span_variants(name: str, data: st.DataObject) -> None:
    lengths, config = data.draw(variant_cases(name, max_docs=30))
    packer = VariantPacker(config)
    mon = InvariantMonitor(config.capacity, config.min_buffer)
    outside = False
    for ev in packer.events(lengths):
        mon.feed(ev)
        packer._check()
        if type(ev) is Exhausted:
            outside = True
        if type(ev) is Placement and not outside:
            # after the selection, every member of K is still buffered, whole and untouched
            assert protected_violations(packer.snapshot(), mon.protected) == []
    assert mon.ok, mon.first_violation


@pytest.mark.slow
@pytest.mark.parametrize("name", HOLDING)
def test_long_search_for_multi_span_variants(name: str) -> None:
    with pytest.raises(NoSuchExample):
        find(variant_cases(name, max_docs=40), lambda case: not monitored(*case)[0].ok,
             settings=settings(SEARCH, max_examples=20_000))


# --------------------------------------------------------------------------- shrunk counterexamples


def _brute_protected(arrivals: list[tuple[int, int]], capacity: int,
                     min_buffer: int) -> list[tuple[int, int]]:
    """K written out: the ``B - 1`` largest keys (length, occurrence) of the long arrivals, largest first."""
    return sorted((k for k in arrivals if k[0] > capacity), reverse=True)[: min_buffer - 1]


@given(case=st.sampled_from(VIOLATING).flatmap(variant_cases))
@example(case=([3, 1], variant("requeue-bos", capacity=2, min_buffer=2, refill=1, passes=2)))
@example(case=([4, 2], variant("oldest-first", capacity=3, min_buffer=3, refill=1, passes=2)))
@example(case=([3], variant("latest-tie", capacity=2, min_buffer=2, refill=1, passes=2)))
@example(case=([1, 3, 1], variant("epoch-flush", capacity=2, min_buffer=3, refill=1, passes=2)))
@example(case=([1, 3, 1], variant("epoch-drain", capacity=2, min_buffer=3, refill=1, passes=2)))
def test_reported_violations_name_a_member_of_k(case: tuple[list[int], VariantConfig]) -> None:
    """Every violation the monitor reports names a member of K, with its rank and |K| as counted by hand.

    The shrunk counterexamples are pinned as examples (each reports one; the ``test_counterexample_*``
    tests below check which).
    """
    lengths, config = case
    packer = VariantPacker(config)
    mon = InvariantMonitor(config.capacity, config.min_buffer, snapshot=packer.snapshot)
    arrivals: list[tuple[int, int]] = []
    for ev in packer.events(lengths):
        if type(ev) is Arrival:
            arrivals.append((ev.length, ev.occurrence))
        seen = len(mon.violations)
        mon.feed(ev)
        keys = _brute_protected(arrivals, config.capacity, config.min_buffer)
        for v in mon.violations[seen:]:
            assert v.protected_size == len(keys), v
            assert keys[v.rank - 1] == (v.length, v.occurrence), (v, keys)
    mon._check()




def test_counterexample_requeue_bos() -> None:
    """requeue-bos: R=2, B=2, refill 1, two passes of [3, 1].

    Shrunk trace (K = the largest B-1 = 1 long key)::

        Arrival(occ 0, L=3)             K = {0}
        Arrival(occ 1, L=1)
        Placement(row 0, off 0, occ 1, len 1)           whole
        Arrival(occ 2, L=3)             K = {2}: (3, 2) > (3, 0)
        Placement(row 0, off 1, occ 0, len 1, crop)     BOS-only crop of occ 0
        BosAdded(occ 0, 1)              [BOS] + 2 tokens = 3 tokens, appended at the END
        Placement(row 1, off 0, occ 2, len 2, crop)     VIOLATION: buffer is [occ 2 (3), occ 0' (3)]
                                                         and the length tie goes to the earliest
                                                         in buffer order: the protected occ 2

    The proof needs the non-protected span to precede the protected one at
    equal length; the requeued remainder is as long as its original (the added
    BOS replaces the emitted one) but now sits behind it.
    """
    config = variant("requeue-bos", capacity=2, min_buffer=2, refill=1, passes=2)
    mon, events = monitored([3, 1], config)
    v = mon.first_violation
    assert v is not None and (v.kind, v.occurrence, v.selection, v.row) == ("selected", 2, 2, 1)
    # the engine's requeue-bos policy fails identically
    engine = pt.PackerConfig(capacity=2, min_buffer=2, refill=1, passes=2, policy="requeue-bos")
    assert list(pt.Packer(engine).events([3, 1])) == events
    emon = InvariantMonitor.for_packer(engine)
    pt.feed_all(pt.Packer(engine).events([3, 1]), emon)
    assert emon.first_violation is not None and emon.first_violation.occurrence == 2


def test_counterexample_oldest_first() -> None:
    """oldest-first fallback: R=3, B=3, refill 1, two passes of [4, 2].

    Shrunk trace (K = the largest B-1 = 2 long keys)::

        Arrival(occ 0, L=4)             K = {0}
        Arrival(occ 1, L=2)
        Arrival(occ 2, L=4)             K = {2, 0}
        Placement(row 0, off 0, occ 1, len 2)           whole
        Arrival(occ 3, L=2)
        Placement(row 0, off 2, occ 0, len 1, crop)     VIOLATION: nothing fits 1 free position;
        Discard(occ 0, start 1, len 3)                   the oldest span is the protected occ 0,
                                                         the shortest would have been occ 3
    """
    config = variant("oldest-first", capacity=3, min_buffer=3, refill=1, passes=2)
    mon, _ = monitored([4, 2], config)
    v = mon.first_violation
    assert v is not None and (v.kind, v.occurrence, v.selection, v.offset) == ("selected", 0, 1, 2)
    assert v.rank == 2 and v.protected_size == 2


def test_counterexample_latest_tie() -> None:
    """latest-first tie break: R=2, B=2, refill 1, two passes of [3].

    Shrunk trace::

        Arrival(occ 0, L=3)
        Arrival(occ 1, L=3)             K = {1}: (3, 1) > (3, 0)
        Placement(row 0, off 0, occ 1, len 2, crop)     VIOLATION: both spans have length 3;
        Discard(occ 1, start 2, len 1)                   the tie goes to the latest, protected one
    """
    config = variant("latest-tie", capacity=2, min_buffer=2, refill=1, passes=2)
    mon, _ = monitored([3], config)
    v = mon.first_violation
    assert v is not None and (v.kind, v.occurrence, v.selection) == ("selected", 1, 0)


def test_counterexample_epoch_flush() -> None:
    """epoch flush (drop the buffer at each pass boundary): R=2, B=3, refill 1, two passes of [1, 3, 1].

    Shrunk trace (K = the largest B-1 = 2 long keys)::

        Arrival(occ 0, L=1); Arrival(occ 1, L=3); Arrival(occ 2, L=1)       K = {1}
        Placement(row 0, off 0, occ 0, len 1)
        Discard(occ 1, start 0, len 3)  the pass-0 buffer is flushed ...
        Discard(occ 2, start 0, len 1)
        Arrival(occ 3, L=1); Arrival(occ 4, L=3); Arrival(occ 5, L=1)       K = {4, 1}
        Placement(row 0, off 1, occ 3, len 1)           VIOLATION ("removed"): 3 spans buffered,
                                                         occ 1 is still in K but was dropped
    """
    config = variant("epoch-flush", capacity=2, min_buffer=3, refill=1, passes=2)
    mon, _ = monitored([1, 3, 1], config)
    v = mon.first_violation
    assert v is not None and (v.kind, v.occurrence, v.selection) == ("removed", 1, 1)
    assert isinstance(v.event, pt.Discard) and v.rank == 2


def test_counterexample_epoch_drain() -> None:
    """epoch drain (empty the buffer by selecting at each pass boundary): same stream as the flush.

    Shrunk trace::

        Arrival(occ 0, L=1); Arrival(occ 1, L=3); Arrival(occ 2, L=1)       K = {1}
        Placement(row 0, off 0, occ 0, len 1)
        Exhausted(row 0, off 1, buffered 2)             draining: outside the hypotheses
        Placement(row 0, off 1, occ 2, len 1)           (not checked: 2 < B spans)
        Placement(row 1, off 0, occ 1, len 2, crop)     (not checked)
        Discard(occ 1, start 2, len 1)
        Arrival(occ 3, L=1); Arrival(occ 4, L=3); Arrival(occ 5, L=1)       K = {4, 1}
        Placement(row 2, off 0, occ 3, len 1)           VIOLATION ("removed"): back inside the
                                                         hypotheses, occ 1 is still in K but started
    """
    config = variant("epoch-drain", capacity=2, min_buffer=3, refill=1, passes=2)
    mon, events = monitored([1, 3, 1], config)
    assert any(type(e) is Exhausted for e in events)
    v = mon.first_violation
    assert v is not None and (v.kind, v.occurrence, v.selection) == ("removed", 1, 3)
    assert mon.selections_outside == 2
