"""Every registered peer: mass and row identities, ledger checks, token rows, and the framework's errors."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from packing_theory import Ledger, SummaryAccumulator, feed_all
from packing_theory.engine.events import Arrival, Discard, Filtered, Padding, Placement, Repeat
from packing_theory.engine.rows import token_rows as _token_rows
from packing_theory.peers import make_peer, peer_policies
from packing_theory.peers.foundry import FoundryBinPack
from packing_theory.peers.megatron import MegatronGPT, megatron_index
from packing_theory.peers.olmo import OlmoTruncate, olmo_order
from packing_theory.peers.trl import TrlBfd, TrlWrapped, best_fit_decreasing

NO_EMPTY = {"olmo-truncate", "olmo-fragment", "foundry-binpack"}


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


def _build(name: str, L: int) -> Any:
    try:
        return make_peer(name, L)
    except ValueError:
        pytest.skip(f"{name} rejects capacity {L}")


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
    for peer in (TrlBfd(4), TrlWrapped(4), MegatronGPT(4), make_peer("foundry-concat-wrap", 4)):
        events = list(peer.events([3, 0, 5]))
        assert Filtered(1, 1, 0, "empty") in events
        assert Arrival(1, 1, 0, 0) in events


@pytest.mark.parametrize(("call", "match"), [
    (lambda: OlmoTruncate(2049), "power of two.*2049"),
    (lambda: make_peer("olmo-fragment", 12), "power of two.*12"),
    (lambda: TrlBfd(8, framework_version="0.28.0"), "framework_version.*0.28.0"),
    (lambda: MegatronGPT(8, framework_version="9"), "framework_version"),
    (lambda: TrlBfd(8, window=0), "window must be >= 1"),
    (lambda: make_peer("trl-nope", 8), "policy must be one of.*trl-nope"),
    (lambda: FoundryBinPack(8, packing_ratio=0.5), "packing_ratio"),
    (lambda: FoundryBinPack(8, padding_side="middle"), "padding_side"),
    (lambda: FoundryBinPack(8, max_leftover_bins_to_keep=-1), "max_leftover_bins_to_keep"),
    (lambda: MegatronGPT(1), "capacity must be >= 2"),
    (lambda: list(OlmoTruncate(8).events([3, 0])), r"lengths\[1\].*OLMo-core takes no empty"),
    (lambda: list(FoundryBinPack(8).events([0])), "foundry-binpack takes no empty"),
    (lambda: list(MegatronGPT(4).events([1, 0])), "more than 1 token"),
    (lambda: list(TrlBfd(4, window=1).events([2, 0])), r"lengths\[1:2\].*only empty rows"),
    (lambda: list(TrlBfd(4).events([2, -1])), r"lengths\[1\] must be a length >= 0"),
    (lambda: list(TrlBfd(4).events([2.0])), r"lengths\[0\] must be an int"),
])
def test_bad_configurations_raise_the_frameworks_rule(call: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_trl_bfd_truncates_and_bfd_split_keeps_every_token() -> None:
    trunc = list(make_peer("trl-bfd", 4).events([10, 1]))
    assert [e for e in trunc if isinstance(e, Discard)] == [Discard(0, 0, 4, 6)]
    split = list(make_peer("trl-bfd_split", 4).events([10, 1]))
    assert not [e for e in split if isinstance(e, Discard)]
    assert sum(e.length for e in split if isinstance(e, Placement)) == 11


def test_best_fit_prefers_the_smallest_space_fifo() -> None:
    # spaces after [5], [5], [3]: 3, 3, 5 -> a 3 goes to the first bin that reached space 3
    assert best_fit_decreasing([5, 5, 3, 3], 8) == [[0, 2], [1, 3]]
    assert best_fit_decreasing([2, 2, 2], 4) == [[0, 1], [2]]


def test_olmo_order_is_numpys_argsort() -> None:
    lengths = [3, 5, 3, 5, 3, 1, 5] * 20
    assert olmo_order(lengths) == np.argsort(-1 * np.asarray(lengths, dtype=np.int64)).tolist()


def test_megatron_separate_final_epoch_and_dropped_tail() -> None:
    sizes = [5, 3, 9, 2]  # 19 tokens, L = 4: 4 samples per epoch
    assert not megatron_index(sizes, 4, 1234, None).separate_final_epoch
    ix = megatron_index(sizes, 4, 1234, 5)  # 2 epochs; final epoch gives 5 - 4 = 1 < int(0.8 * 4)
    assert (ix.num_epochs, ix.separate_final_epoch) == (2, True)
    ix2 = megatron_index(sizes, 4, 1234, 8)  # final epoch gives 4 samples >= 3
    assert (ix2.num_epochs, ix2.separate_final_epoch) == (2, False)
    events = list(MegatronGPT(4).events(sizes))
    assert [e for e in events if isinstance(e, Discard)] == [Discard(3, 3, 0, 2)]
    assert sum(e.length for e in events if isinstance(e, Repeat)) == 3  # 4 samples, 3 shared tokens


def test_foundry_binpack_discards_leftovers_beyond_the_cap() -> None:
    kept = list(FoundryBinPack(8, batch_size=1, packing_ratio=3.0).events([6, 5, 4]))
    dropped = list(FoundryBinPack(8, batch_size=1, packing_ratio=3.0, max_leftover_bins_to_keep=0)
                   .events([6, 5, 4]))
    assert not [e for e in kept if isinstance(e, Discard)] and kept[-1].buffered
    assert sum(e.length for e in dropped if isinstance(e, Discard)) == 9 and not dropped[-1].buffered


def test_foundry_concat_never_emits_the_final_partial_buffer() -> None:
    for name in ("foundry-concat-wrap", "foundry-concat-no_wrap"):
        events = list(make_peer(name, 4).events([3, 3, 3]))
        last = [e for e in events if isinstance(e, Discard)][-1]
        assert last.occurrence == 2
