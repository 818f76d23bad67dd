"""Every registered peer: identities, ledger checks, token rows, the frameworks' errors, the shared helpers.

Behaviour specific to one framework is in ``tests/test_peer_frameworks.py``;
the comparison with the frameworks' own code in ``tests/test_peer_golden.py``
(committed digests) and ``tests/test_peer_live.py`` (the installed frameworks).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import Ledger, build_packer, feed_all
from packing_theory.engine import SummaryAccumulator
from packing_theory.engine.events import (
    Arrival,
    Event,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
)
from packing_theory.engine.rows import token_rows as _token_rows
from packing_theory.errors import InputError
from packing_theory.peers import SPLIT_BUDGET, _common, column_split_budget, peer_policies
from packing_theory.peers._common import (
    TIE_RULES,
    EventLog,
    FirstFitTree,
    TieRule,
    best_fit,
    best_fit_decreasing,
    check_split_budget,
    first_fit,
    peer_lengths,
)
from packing_theory.peers.foundry import FoundryBinPack
from packing_theory.peers.megatron import MegatronGPT
from packing_theory.peers.olmo import OlmoTruncate
from packing_theory.peers.trl import TrlBfd, TrlWrapped
from packing_theory.registry import entry
from packing_theory.testing import scaled_examples

NO_EMPTY = {"olmo-truncate", "olmo-fragment", "foundry-binpack"}
ANY_STREAM = [
    "torchtune-next_fit",
    "torchtune-split",
    "axolotl-multipack",
    "nemo-first_fit",
    "nemo-first_fit_decreasing",
    "nemo-first_fit_shuffle",
    "fewer-truncations",
    "seamless",
]
"""Peers that pack every stream of lengths 0..40 (torchtune's next_fit and NeMo after the clamps below)."""


def docs_of(lengths: Sequence[int]) -> list[list[int]]:
    return [[(d + 1) * 1000 + p for p in range(n)] for d, n in enumerate(lengths)]


def brute_rows(events: Sequence[Event], docs: Sequence[Sequence[int]], R: int, pad: int) -> list[list[int]]:
    """Rows by direct placement at (row, offset), independent of _token_rows' streaming release."""
    rows: dict[int, list[int | None]] = {}
    order: list[int] = []
    for ev in events:
        if type(ev) in (Placement, Repeat, Padding):
            if ev.row not in rows:
                rows[ev.row] = [None] * R
                order.append(ev.row)
            if type(ev) is Padding:
                vals = [pad] * ev.length
            else:
                vals = list(docs[ev.occurrence][ev.start : ev.start + ev.length])
            rows[ev.row][ev.offset : ev.offset + ev.length] = vals
    out = []
    for r in order:
        assert None not in rows[r]
        out.append([int(x) for x in rows[r] if x is not None])
    return out


def _capacity(name: str, rng: random.Random) -> int:
    return rng.choice([4, 8, 16]) if name.startswith("olmo") else rng.choice([3, 5, 8, 16])


def _streams(name: str, count: int = 120) -> list[tuple[int, list[int]]]:
    rng = random.Random(hash(name) & 0xFFFF)
    out = []
    for _ in range(count):
        L = _capacity(name, rng)
        lo = 1 if name in NO_EMPTY else 0
        lengths = [rng.choice([lo, 1, L - 1 or 1, L, L + 1, 3 * L, rng.randint(1, 3 * L)])
                   for _ in range(rng.randint(1, 25))]
        if sum(lengths) < 2:
            lengths.append(L)
        out.append((L, lengths))
    return out


def _build(name: str, R: int) -> Any:
    try:
        return build_packer(name, capacity=R)
    except ValueError:
        pytest.skip(f"{name} rejects capacity {R}")


# ----------------------------------------------------------------------------- the table
def test_every_peer_declares_itself() -> None:
    for name, cls in peer_policies().items():
        e = entry(name)
        assert cls.name == name and e.kind == "peer" and e.constructor is cls
        assert cls.reference and cls.family_note and not cls.in_family and not e.protected_set
        assert e.status == "outside the family: not applicable" and e.row_width.rule
    assert build_packer("torchtune-split", capacity=8, max_packs=2).max_packs == 2


@pytest.mark.parametrize("name", list(peer_policies()))
def test_mass_and_row_identity_every_peer(name: str) -> None:
    for L, lengths in _streams(name):
        peer = _build(name, L)
        try:
            events = list(peer.events(lengths))
        except ValueError:
            continue  # a framework rule (e.g. a map batch of empty rows); tested below
        acc = SummaryAccumulator(peer.capacity)
        led = Ledger(capacity=max(peer.capacity, 2), min_buffer=1)
        for ev in events:
            acc.feed(ev)
            acc._check()
        feed_all(events, led)
        led._check()
        s, agg = acc.result(), led.result()
        assert s.identity_holds() and s.row_identity_holds(peer.capacity), (name, lengths)
        assert agg.mass.identity_holds and agg.conservation_violations == 0, (name, lengths)
        assert s.consumed_tokens == sum(lengths) * (s.consumed_sources // len(lengths))
        # padding and repeats never count as emitted source tokens
        placed = sum(e.length for e in events if isinstance(e, Placement))
        assert s.emitted_tokens == placed
        assert s.padding_tokens == sum(e.length for e in events if isinstance(e, Padding))
        assert s.repeated_tokens == sum(e.length for e in events if isinstance(e, Repeat))


@pytest.mark.parametrize("name", list(peer_policies()))
def test_token_rows_every_peer(name: str) -> None:
    for L, lengths in _streams(name, 30):
        peer = _build(name, L)
        docs = [[(d + 1) * 1000 + p for p in range(n)] for d, n in enumerate(lengths)]
        try:
            rows = list(_token_rows(peer, docs, pad_id=-1))
            events = list(peer.events(lengths))
        except ValueError:
            continue
        assert all(len(r) == peer.capacity for r in rows)
        assert len(rows) == sum(1 for e in events if isinstance(e, Padding | Placement | Repeat)
                                and e.offset == 0)
        # every non-pad token of a row is a real token of the document the placement names
        assert all(t == -1 or t >= 1000 for r in rows for t in r)


def test_empty_documents_are_filtered_where_taken() -> None:
    for peer in (TrlBfd(4), TrlWrapped(4), MegatronGPT(5), build_packer("foundry-concat-wrap", capacity=4)):
        events = list(peer.events([3, 0, 5]))
        assert Filtered(1, 1, 0, "empty") in events
        assert Arrival(1, 1, 0, 0) in events


@pytest.mark.parametrize(("call", "match"), [
    (lambda: OlmoTruncate(2049), "power of two.*2049"),
    (lambda: build_packer("olmo-fragment", capacity=12), "power of two.*12"),
    (lambda: TrlBfd(8, framework_version="0.28.0"), "framework_version.*0.28.0"),
    (lambda: MegatronGPT(8, framework_version="9"), "framework_version"),
    (lambda: TrlBfd(8, window=0), "window must be >= 1"),
    (lambda: build_packer("trl-nope", capacity=8), "policy must be one of.*trl-nope"),
    (lambda: FoundryBinPack(8, packing_ratio=0.5), "packing_ratio"),
    (lambda: FoundryBinPack(8, padding_side="middle"), "padding_side"),
    (lambda: FoundryBinPack(8, max_leftover_bins_to_keep=-1), "max_leftover_bins_to_keep"),
    (lambda: MegatronGPT(1), "capacity must be >= 2"),
    (lambda: list(OlmoTruncate(8).events([3, 0])), r"lengths\[1\].*OLMo-core takes no empty"),
    (lambda: list(FoundryBinPack(8).events([0])), "foundry-binpack takes no empty"),
    (lambda: list(MegatronGPT(5).events([])), "lengths is empty: Megatron's helpers.build_sample_idx"),
    (lambda: list(MegatronGPT(2).events([0, 0])), "sequence_length 1.*minimum which has no identity"),
    (lambda: list(MegatronGPT(5, num_samples=3).events([0])), "_get_num_epochs never ends"),
    (lambda: list(TrlBfd(4, window=1).events([2, 0])), r"lengths\[1:2\].*only empty rows"),
    (lambda: list(TrlBfd(4).events([2, -1])), r"lengths\[1\] must be a length >= 0"),
    (lambda: list(TrlBfd(4).events([2.0])), r"lengths\[0\] must be an int"),
])
def test_bad_configurations_raise_the_frameworks_rule(call: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ----------------------------------------------------------------------------- identities (hypothesis)
lengths_st = st.lists(st.integers(0, 40), max_size=30)


@given(lengths=lengths_st, L=st.integers(2, 16), name=st.sampled_from(ANY_STREAM))
def test_mass_identity_and_token_rows(lengths: list[int], L: int, name: str) -> None:
    peer = build_packer(name, capacity=L)
    if name == "torchtune-next_fit":
        lengths = [min(n, L) for n in lengths]
    if name.startswith("nemo"):
        lengths = [min(n, L + 1) for n in lengths]
        if not any(lengths):
            lengths = [*lengths, 1]
    events = list(peer.events(lengths))
    acc = SummaryAccumulator(peer.capacity)
    led = Ledger(capacity=peer.capacity, min_buffer=1)
    for ev in events:
        acc.feed(ev)
        acc._check()
        led.feed(ev)
        led._flush()
        led._check()
    s = acc.result()
    assert s.identity_holds() and s.row_identity_holds(peer.capacity)
    assert s.consumed_tokens == sum(lengths) and s.partial_row_tokens == 0
    agg = led.result()
    assert agg.mass.identity_holds and agg.conservation_violations == 0
    assert isinstance(events[-1], Horizon) and sum(isinstance(e, Horizon) for e in events) == 1
    docs = docs_of(lengths)
    assert list(_token_rows(peer, docs, pad_id=-7)) == brute_rows(events, docs, peer.capacity, -7)


# ----------------------------------------------------------------------------- shared helpers
@given(
    sizes=st.lists(st.integers(0, 12), max_size=80),
    capacity=st.integers(1, 16),
    cap=st.one_of(st.none(), st.integers(1, 4)),
)
def test_first_fit_tree_matches_linear_scan(sizes: list[int], capacity: int, cap: int | None) -> None:
    free: list[int] = []
    want: list[list[int]] = []
    for k, size in enumerate(sizes):  # the frameworks' loop: scan every bin
        for b in range(len(want)):
            if free[b] >= size and (cap is None or len(want[b]) < cap):
                want[b].append(k)
                free[b] -= size
                break
        else:
            want.append([k])
            free.append(capacity - size)
    trees: list[FirstFitTree] = []
    assert first_fit(sizes, capacity, cap, _tree=trees) == want
    trees[0]._check()


def test_first_fit_tree_check_detects_corruption() -> None:
    t = FirstFitTree(4)
    t.open(2, 7)
    t._check()
    t.tree[1] = 0
    with pytest.raises(AssertionError):
        t._check()


def test_event_log_check_catches_lost_mass() -> None:
    log = EventLog(4)
    log.extend([Arrival(0, 0, 0, 3)])
    with pytest.raises(AssertionError):
        log.finish("drained")


def best_fit_brute(sizes: Sequence[int], order: Sequence[int], capacity: int,
                   ties: TieRule) -> list[list[int]]:
    """Best fit by scanning every bin; ties by the time a bin reached its space, or by its index."""
    bins: list[list[int]] = []
    free: list[int] = []
    reached: list[int] = []  # when each bin reached its current free space
    for step, i in enumerate(order):
        fits = [b for b in range(len(bins)) if free[b] >= sizes[i]]
        if fits:
            tie = reached if ties == "first-to-reach" else list(range(len(bins)))
            b = min(fits, key=lambda b: (free[b], tie[b]))
            bins[b].append(i)
            free[b] -= sizes[i]
            reached[b] = step
        else:
            bins.append([i])
            free.append(capacity - sizes[i])
            reached.append(step)
    return bins


@given(sizes=st.lists(st.integers(1, 8), max_size=60), capacity=st.integers(8, 12),
       ties=st.sampled_from(TIE_RULES), data=st.data())
def test_best_fit_matches_brute_force_for_both_tie_rules(sizes: list[int], capacity: int, ties: TieRule,
                                                         data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(len(sizes))))
    assert best_fit(sizes, order, capacity, ties=ties) == best_fit_brute(sizes, order, capacity, ties)
    decreasing = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    want = best_fit_brute(sizes, decreasing, capacity, ties)
    assert best_fit_decreasing(sizes, capacity, ties=ties) == want


def test_best_fit_tie_rules_differ_and_are_named() -> None:
    # bins 0 and 1 both hold space 1 when item 3 arrives: bin 1 reached it first, bin 0 was opened first
    assert best_fit([2, 4, 2, 1, 1], range(5), 5, ties="first-to-reach") == [[0, 2, 4], [1, 3]]
    assert best_fit([2, 4, 2, 1, 1], range(5), 5, ties="first-opened") == [[0, 2, 3], [1, 4]]
    with pytest.raises(ValueError, match="ties must be one of 'first-to-reach', 'first-opened'; got 'fifo'"):
        best_fit([1], [0], 2, ties="fifo")  # type: ignore[arg-type]


def test_best_fit_prefers_the_smallest_space_fifo() -> None:
    # spaces after [5], [5], [3]: 3, 3, 5 -> a 3 goes to the first bin that reached space 3
    assert best_fit_decreasing([5, 5, 3, 3], 8, ties="first-to-reach") == [[0, 2], [1, 3]]
    assert best_fit_decreasing([2, 2, 2], 4, ties="first-to-reach") == [[0, 1], [2]]


@pytest.mark.parametrize("bad", [[1.5], [-2], "abc", 7])
def test_peer_lengths_rejects_bad_input(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        peer_lengths(bad)


SPLITTING = ["trl-bfd_split", "trl-wrapped", "olmo-fragment", "torchtune-split", "fewer-truncations",
             "seamless"]


@pytest.mark.parametrize("name", SPLITTING)
def test_a_length_near_2_63_is_refused_before_it_is_cut(name: str) -> None:
    """Before the fix these peers built ceil(n / R) pieces one by one (memory grew at about 100 MB/s)."""
    packer = build_packer(name, capacity=64)
    expected = (rf"lengths\[1\] = 9223372036854775807 is cut by {name} into 144,115,188,075,855,872 "
                r"pieces of capacity 64, .* over the budget of 10,000,000")
    with pytest.raises(InputError, match=expected):
        next(iter(packer.events([5, 2**63 - 1, 3])))


COLUMNAR_SPLITTING = [n for n in SPLITTING if build_packer(n, capacity=64).columnar]


@pytest.mark.parametrize("name", COLUMNAR_SPLITTING)
def test_a_length_near_2_63_is_refused_on_the_columnar_path_too(name: str) -> None:
    """The columnar path allocated the pieces at once (a numpy MemoryError, exit 3) before it asked."""
    packer = build_packer(name, capacity=64)
    with pytest.raises(InputError, match=rf"lengths\[1\] = 9223372036854775807 is cut by {name} into .* "
                                         r"over the budget of 10,000,000 \(the columnar path's, "
                                         r"peers.column_split_budget: the larger of 10,000,000 and one per "
                                         r"document, 3 here\)"):
        next(iter(packer.batches(np.array([5, 2**63 - 1, 3], dtype=np.int64), compiled=False)))


@pytest.mark.parametrize("name", COLUMNAR_SPLITTING)
def test_the_columnar_budget_is_one_extra_piece_per_document(name: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With SPLIT_BUDGET at 3: 4 extra pieces among 8 documents are refused by the event path and packed by
    the columnar path (what measure and compare run), with the same events; 9 extra are refused by both."""
    monkeypatch.setattr(_common, "SPLIT_BUDGET", 3)
    lengths = [1, 2, 3, 200, 70, 6, 7, 8]  # 200 = 4 pieces of 64, 70 = 2: 3 + 1 beyond one per document
    packer = build_packer(name, capacity=64)
    with pytest.raises(InputError, match=r"lengths\[4\] = 70 .* 4 beyond one per document so far: over the "
                                         r"budget of 3 \(peers.SPLIT_BUDGET, the event path's: 400-670"):
        next(iter(packer.events(lengths)))
    batches = packer.batches(np.array(lengths, dtype=np.int64), compiled=False)
    columns = [e for b in batches for e in b.events()]
    monkeypatch.setattr(_common, "SPLIT_BUDGET", 10**6)
    assert columns == list(packer.events(lengths))
    monkeypatch.setattr(_common, "SPLIT_BUDGET", 3)
    lengths[7] = 64 * 5 + 1  # 5 more: 9 beyond one per document, over the 8 documents
    with pytest.raises(InputError, match=r"lengths\[7\] = 321 .* 9 beyond one per document so far: over the "
                                         r"budget of 8 \(the columnar path's, peers.column_split_budget: the "
                                         r"larger of 3 and one per document, 8 here\)"):
        next(iter(packer.batches(np.array(lengths, dtype=np.int64), compiled=False)))


def test_unsigned_lengths_past_2_63_are_refused_as_in_a_list() -> None:
    """Before, an unsigned array went through int64 and wrapped to a negative count: accepted."""
    for value in (2**63, 2**64 - 1):
        with pytest.raises(InputError) as from_list:
            check_split_budget([value], 4, "x")
        with pytest.raises(InputError) as from_array:
            check_split_budget(np.array([value], dtype=np.uint64), 4, "x")
        assert str(from_array.value) == str(from_list.value)


def test_refusing_a_large_array_builds_nothing_per_document() -> None:
    """Before, the refusal turned every length up to the crossing one into a Python list (at 100 M
    documents with the long one last, gigabytes and minutes); now it allocates less than the input."""
    import tracemalloc

    lengths = np.ones(2_000_000, dtype=np.int64)
    lengths[-1] = 2**62
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"lengths\[1999999\] = 4611686018427387904 is cut"):
            check_split_budget(lengths, 64, "x", columns=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < lengths.nbytes, peak


def test_the_columnar_split_budget_grows_with_the_documents() -> None:
    assert column_split_budget(0) == column_split_budget(SPLIT_BUDGET) == SPLIT_BUDGET
    assert column_split_budget(SPLIT_BUDGET + 1) == SPLIT_BUDGET + 1
    check_split_budget([9, 9, 1, 1], 4, "p", budget=3, columns=True)  # 2 + 2 extra, 4 documents
    with pytest.raises(InputError, match=r"lengths\[1\] = 9 is cut by p into 3 pieces of capacity 4, 4 "):
        check_split_budget([9, 9, 1], 4, "p", budget=3, columns=True)


@settings(max_examples=scaled_examples(60), deadline=None)
@given(st.lists(st.integers(1, 60), max_size=12), st.integers(2, 9), st.integers(0, 12))
def test_the_split_budget_on_an_array_refuses_as_on_a_list(lengths: list[int], capacity: int,
                                                           budget: int) -> None:
    """The vectorised check (integer arrays) and the loop agree: both accept, or both refuse alike."""
    def outcome(values: Any) -> str | None:
        try:
            check_split_budget(values, capacity, "p", budget=budget)
        except InputError as exc:
            return str(exc)
        return None

    assert outcome(np.array(lengths, dtype=np.int64)) == outcome(lengths)


def test_the_split_budget_counts_pieces_beyond_one_per_document() -> None:
    check_split_budget([10, 3, 4], 4, "p", budget=2)  # 3 + 1 + 1 pieces: 2 beyond one per document
    with pytest.raises(InputError, match=r"lengths\[2\] = 9 is cut by p into 3 pieces of capacity 4, 4 "):
        check_split_budget([10, 3, 9], 4, "p", budget=3)


def test_a_torchtune_max_packs_bounds_the_cut() -> None:
    packer = build_packer("torchtune-split", capacity=64, max_packs=3)
    rows = {e.row for e in packer.events([2**63 - 1]) if isinstance(e, Placement)}
    assert rows == {0, 1, 2}


@pytest.mark.parametrize(("lengths", "options", "match"), [
    ([5, 2**62, 3], {}, r"make a Megatron index of 72,057,594,037,927,936 samples over 3 document-index"),
    ([5, 3], {"num_samples": 10**17}, r"and num_samples 100,000,000,000,000,000 make a Megatron index"),
])
def test_a_megatron_index_past_the_budget_is_refused_before_it_is_built(
        lengths: list[int], options: dict[str, Any], match: str) -> None:
    """Before, numpy's MemoryError (exit 3) for a length near 2**63; an epoch loop of 8 * 10**17 turns."""
    packer = build_packer("megatron-gpt", capacity=65, **options)
    with pytest.raises(InputError, match=match + r".*INDEX_BUDGET \(1,000,000,000\)"):
        next(iter(packer.events(lengths)))
    with pytest.raises(InputError, match=match):
        next(iter(packer.batches(np.array(lengths, dtype=np.int64), compiled=False)))
