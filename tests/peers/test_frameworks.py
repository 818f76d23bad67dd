"""Behaviour of each peer that a differential test cannot show: worked examples and brute-force references.

One section per framework (TRL, OLMo-core, Megatron, LLM Foundry, torchtune,
Axolotl, NeMo) and the paper methods; the paper methods have no framework to
run, so independent brute-force implementations written here (token lists,
linear scans) stand in for one. What every peer shares is tested in
``tests/test_peers.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.events import Discard, Event, Filtered, Placement, Repeat
from packing_theory.engine.rows import token_rows as _token_rows
from packing_theory.peers._common import best_fit_decreasing
from packing_theory.peers.axolotl import AxolotlMultipack
from packing_theory.peers.foundry import FoundryBinPack
from packing_theory.peers.megatron import MegatronGPT, megatron_index
from packing_theory.peers.nemo import NemoFirstFit, NemoFirstFitShuffle
from packing_theory.peers.olmo import olmo_order
from packing_theory.peers.paper import FewerTruncations, Seamless, seamless_windows
from packing_theory.peers.torchtune import TorchtuneNextFit, TorchtuneSplit


def docs_of(lengths: Sequence[int]) -> list[list[int]]:
    return [[(d + 1) * 1000 + p for p in range(n)] for d, n in enumerate(lengths)]


def kinds(events: Sequence[Event], t: type) -> list[Any]:
    return [e for e in events if type(e) is t]


lengths_st = st.lists(st.integers(0, 40), max_size=30)


# ----------------------------------------------------------------------------- TRL
def test_trl_bfd_truncates_and_bfd_split_keeps_every_token() -> None:
    trunc = list(build_packer("trl-bfd", capacity=4).events([10, 1]))
    assert [e for e in trunc if isinstance(e, Discard)] == [Discard(0, 0, 4, 6)]
    split = list(build_packer("trl-bfd_split", capacity=4).events([10, 1]))
    assert not [e for e in split if isinstance(e, Discard)]
    assert sum(e.length for e in split if isinstance(e, Placement)) == 11


# ----------------------------------------------------------------------------- OLMo-core
def test_olmo_order_is_numpys_argsort() -> None:
    lengths = [3, 5, 3, 5, 3, 1, 5] * 20
    assert olmo_order(lengths) == np.argsort(-1 * np.asarray(lengths, dtype=np.int64)).tolist()


# ----------------------------------------------------------------------------- Megatron
def test_megatron_separate_final_epoch_and_dropped_tail() -> None:
    sizes = [5, 3, 9, 2]  # 19 tokens, L = 4: 4 samples per epoch
    assert not megatron_index(sizes, 4, 1234, None).separate_final_epoch
    ix = megatron_index(sizes, 4, 1234, 5)  # 2 epochs; final epoch gives 5 - 4 = 1 < int(0.8 * 4)
    assert (ix.num_epochs, ix.separate_final_epoch) == (2, True)
    ix2 = megatron_index(sizes, 4, 1234, 8)  # final epoch gives 4 samples >= 3
    assert (ix2.num_epochs, ix2.separate_final_epoch) == (2, False)
    events = list(MegatronGPT(5).events(sizes))  # rows of 5 = sequence_length 4 + 1
    assert [e for e in events if isinstance(e, Discard)] == [Discard(3, 3, 0, 2)]
    assert sum(e.length for e in events if isinstance(e, Repeat)) == 3  # 4 samples, 3 shared tokens


def test_megatron_capacity_is_the_row_width() -> None:
    p = MegatronGPT(2049)
    assert (p.capacity, p.sequence_length) == (2049, 2048)
    assert build_packer("megatron-gpt", seq_length=2048).capacity == 2049
    rows = {e.row for e in p.events([5000] * 3) if type(e) in (Placement, Repeat)}
    assert rows and all(sum(e.length for e in p.events([5000] * 3)
                            if type(e) in (Placement, Repeat) and e.row == r) == 2049 for r in rows)


# ----------------------------------------------------------------------------- LLM Foundry
def test_foundry_binpack_discards_leftovers_beyond_the_cap() -> None:
    kept = list(FoundryBinPack(8, batch_size=1, packing_ratio=3.0).events([6, 5, 4]))
    dropped = list(FoundryBinPack(8, batch_size=1, packing_ratio=3.0, max_leftover_bins_to_keep=0)
                   .events([6, 5, 4]))
    assert not [e for e in kept if isinstance(e, Discard)] and kept[-1].buffered
    assert sum(e.length for e in dropped if isinstance(e, Discard)) == 9 and not dropped[-1].buffered


def test_foundry_concat_never_emits_the_final_partial_buffer() -> None:
    for name in ("foundry-concat-wrap", "foundry-concat-no_wrap"):
        events = list(build_packer(name, capacity=4).events([3, 3, 3]))
        last = [e for e in events if isinstance(e, Discard)][-1]
        assert last.occurrence == 2


# ----------------------------------------------------------------------------- torchtune
def test_torchtune_split_positions_continue_modulo_L() -> None:
    # L = 6: [4, 9]: pack 0 = doc0 + doc1[0:2]; pack 1 = doc1[2:8]; pack 2 = doc1[8:9] + pad
    p = TorchtuneSplit(6)
    rows = p.trainer_rows(docs_of([4, 9]))
    assert [r["seq_lens"] for r in rows] == [[4, 2], [6], [1, 5]]
    assert rows[1]["input_pos"] == [2, 3, 4, 5, 0, 1]  # original offsets 2..7 mod 6: no restart
    assert rows[2]["input_pos"] == [2, 3, 4, 5, 5, 5]  # padding continues, clamped at L - 1
    assert rows[2]["labels"][1:] == [-100] * 5


def test_torchtune_max_packs_reports_what_it_drops() -> None:
    p = TorchtuneNextFit(6, max_packs=1)
    ev = list(p.events([4, 3, 2, 5]))
    # pack 0 = [4]; the current pack [3] ... stop: doc 1 reached the loop, docs 2, 3 never read
    assert [(e.occurrence, e.length) for e in kinds(ev, Placement)] == [(0, 4)]
    assert [(e.occurrence, e.length) for e in kinds(ev, Discard)] == [(1, 3)]
    assert [(e.occurrence, e.reason) for e in kinds(ev, Filtered)] == [(2, "max-packs"), (3, "max-packs")]
    assert ev[-1].stop_reason == "rows"  # type: ignore[union-attr]


def test_torchtune_empty_samples_keep_a_zero_seq_len() -> None:
    p = TorchtuneNextFit(6)
    assert [r["seq_lens"] for r in p.trainer_rows(docs_of([6, 0, 2]))] == [[6, 0], [2, 4]]
    assert [e.reason for e in kinds(list(p.events([6, 0, 2])), Filtered)] == ["empty"]


def test_torchtune_rejects_over_long_sample_without_split() -> None:
    with pytest.raises(ValueError, match=r"lengths\[1\] = 7 > capacity \(max_seq_len\) 6.*split_across_pack"):
        list(TorchtuneNextFit(6).events([3, 7]))
    assert len(TorchtuneSplit(6).trainer_rows(docs_of([3, 7]))) == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"framework_version": "0.2.0"}, ValueError, "framework_version must be one of '0.6.1', '0.5.0'"),
        ({"max_packs": -1}, ValueError, "max_packs must be >= 0"),
        ({"max_packs": 1.5}, TypeError, "max_packs must be an int"),
        ({"padding_idx": "0"}, TypeError, "padding_idx must be an int"),
    ],
)
def test_torchtune_bad_options(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        TorchtuneSplit(8, **kwargs)


# ----------------------------------------------------------------------------- axolotl
def test_axolotl_drop_filters_with_reasons() -> None:
    p = AxolotlMultipack(8)
    ev = list(p.events([9, 5, 1, 0, 3, 8]))
    assert [(e.occurrence, e.reason) for e in kinds(ev, Filtered)] == [
        (0, "over-capacity"),
        (2, "too-short"),
        (3, "empty"),
    ]
    assert [[q.source for q in row] for row in p.bins([9, 5, 1, 0, 3, 8])] == [[1, 4], [5]]


def test_axolotl_truncate_discards_the_tail() -> None:
    p = AxolotlMultipack(8, excess_length_strategy="truncate", min_sample_len=1)
    ev = list(p.events([20, 1]))
    assert [(e.occurrence, e.start, e.length) for e in kinds(ev, Discard)] == [(0, 8, 12)]
    assert [(e.occurrence, e.length, e.crop) for e in kinds(ev, Placement)] == [(0, 8, True), (1, 1, False)]


def test_axolotl_drop_last_and_cross_rank_limit_discard_bins() -> None:
    # real batches of 2 bins of 8: five rows of 8 -> five bins -> batches [2, 2, 1]; drop_last drops the 1
    p = AxolotlMultipack(8, multipack_real_batches=True, micro_batch_size=2)
    ev = list(p.events([8] * 5))
    assert len(kinds(ev, Placement)) == 4 and [e.occurrence for e in kinds(ev, Discard)] == [4]
    # cross-rank / estimate limit: [5, 5, 3, 3] in bins of 8 is 2 bins in order A, 3 in order B.
    # Estimate draws 1-4 use A (2 batches of 1 bin); the epoch draw uses B: its third bin is cut.
    A, B = [0, 1, 2, 3], [2, 3, 0, 1]
    q = AxolotlMultipack(8, multipack_real_batches=True, orders=[B, A, A, A, A, B])
    ev = list(q.events([5, 5, 3, 3]))
    assert [[x.source for x in row] for row in q.bins([5, 5, 3, 3])] == [[2, 3], [0]]
    assert [(e.occurrence, e.length) for e in kinds(ev, Discard)] == [(1, 5)]
    # from 0.13.0 on, world_size >= 4 makes it one estimate draw; 0.12.2 always takes 4
    r = AxolotlMultipack(8, world_size=4)
    assert (
        r.estimate_draws,
        AxolotlMultipack(8, world_size=4, framework_version="0.12.2").estimate_draws,
    ) == (1, 4)


def test_axolotl_first_fit_is_in_sampler_order_not_sorted() -> None:
    p = AxolotlMultipack(10, orders=[[0, 1, 2, 3]] * 6)
    assert [[q.source for q in row] for row in p.bins([3, 8, 7, 2])] == [[0, 2], [1, 3]]
    s = AxolotlMultipack(10, sequential=True)
    assert [[q.source for q in row] for row in s.bins([3, 8, 7, 2])] == [[0], [1], [2, 3]]


def test_axolotl_bin_capacity_and_epochs() -> None:
    p = AxolotlMultipack(12, micro_batch_size=3, epochs=2, seed=1)  # a bin (row) of 3 * sequence_len 4
    assert p.capacity == 12 and p.sequence_len == 4
    assert build_packer("axolotl-multipack", seq_length=4, micro_batch_size=3).capacity == 12
    with pytest.raises(ValueError, match="must be a multiple of micro_batch_size 3"):
        AxolotlMultipack(10, micro_batch_size=3)
    ev = list(p.events([4, 4, 4, 2]))
    assert {e.pass_index for e in ev if type(e).__name__ == "Arrival"} == {0, 1}
    assert sum(e.length for e in kinds(ev, Placement)) + sum(e.length for e in kinds(ev, Discard)) == 28


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"excess_length_strategy": "pad"}, ValueError, "excess_length_strategy must be one of"),
        ({"framework_version": "0.9.0"}, ValueError, "framework_version must be one of"),
        ({"framework_version": "0.12.2", "excess_length_strategy": "truncate"}, ValueError, "not replayable"),
        ({"bin_size": 0}, ValueError, "bin_size must be >= 1"),
        ({"orders": [[0]]}, ValueError, "orders must hold at least 6 draws"),
        ({"sequential": 1}, TypeError, "sequential must be a bool"),
        ({"epochs": 0}, ValueError, "epochs must be >= 1"),
    ],
)
def test_axolotl_bad_options(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        AxolotlMultipack(8, **kwargs)


def test_axolotl_raise_strategy_and_bad_orders() -> None:
    with pytest.raises(ValueError, match=r"lengths\[0\] = 9 > capacity \(sequence_len\) 8"):
        list(AxolotlMultipack(8, excess_length_strategy="raise").events([9]))
    with pytest.raises(ValueError, match=r"orders\[1\] must be a permutation of range\(2\)"):
        list(AxolotlMultipack(8, orders=[[0, 1], [0, 0]] * 3).events([3, 3]))


# ----------------------------------------------------------------------------- NeMo
def test_nemo_inputs_view_and_stored_packs() -> None:
    p = NemoFirstFit(8)
    ev = list(p.events([3, 0, 5, 1]))
    # seq_lens 2, (empty: dropped), 4, 0 -> ascending [0, 2, 4] -> one bin
    assert [e.reason for e in kinds(ev, Filtered)] == ["empty"]
    assert sorted((e.occurrence, e.start, e.length) for e in kinds(ev, Discard)) == [
        (0, 2, 1),
        (2, 4, 1),
        (3, 0, 1),
    ]
    rows = p.trainer_rows(docs_of([3, 0, 5, 1]))
    assert len(rows) == 1 and sorted(rows[0]["input_ids"]) == sorted(
        docs_of([3, 0, 5, 1])[0] + docs_of([3, 0, 5, 1])[2] + docs_of([3, 0, 5, 1])[3]
    )
    assert rows[0]["cu_seqlens"][-1] == 6 and len(rows[0]["inputs"]) == 8


def test_nemo_max_seq_length_cuts_before_packing() -> None:
    p = NemoFirstFit(8, max_seq_length=6)
    ev = list(p.events([20, 3]))
    assert sorted((e.occurrence, e.start, e.length) for e in kinds(ev, Discard)) == [
        (0, 5, 1),
        (0, 6, 14),
        (1, 2, 1),
    ]
    assert [len(r["input_ids"]) for r in p.trainer_rows(docs_of([20, 3]))] == [9]


def test_nemo_shuffle_depends_on_seed_only() -> None:
    ls = [5, 5, 3, 3, 2, 9, 7, 4, 4, 4]
    a = [[(q.source, q.length) for q in r] for r in NemoFirstFitShuffle(8, seed=0).assignment(ls)]
    assert a == [[(q.source, q.length) for q in r] for r in NemoFirstFitShuffle(8, seed=0).assignment(ls)]
    assert any(
        a != [[(q.source, q.length) for q in r] for r in NemoFirstFitShuffle(8, seed=s).assignment(ls)]
        for s in range(1, 6)
    )


def test_nemo_errors() -> None:
    with pytest.raises(ValueError, match=r"lengths\[1\] = 10: seq_len 9 > capacity \(pack_size\) 8"):
        NemoFirstFit(8).assignment([3, 10])
    with pytest.raises(ValueError, match="no non-empty example"):
        NemoFirstFit(8).assignment([0, 0])
    with pytest.raises(ValueError, match="framework_version must be one of"):
        NemoFirstFit(8, framework_version="1.23.0")
    # 2.0.0's histogram has no slot for seq_len == pack_size; 3.0.0 packs it
    with pytest.raises(ValueError, match=r"seq_len 8 has no slot in NeMo 2.0.0's histogram of 8 lengths"):
        NemoFirstFit(8, framework_version="2.0.0").assignment([9])
    assert len(NemoFirstFit(8).assignment([9])) == 1
    with pytest.raises(ValueError, match="max_seq_length must be >= 1"):
        NemoFirstFit(8, max_seq_length=0)
    with pytest.raises(ValueError, match="seed must be < 2\\*\\*32"):
        NemoFirstFit(8, seed=2**32)


# ----------------------------------------------------------------------------- paper methods
def bfd_brute(sizes: Sequence[int], capacity: int) -> list[list[int]]:
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    bins: list[list[int]] = []
    free: list[int] = []
    for i in order:
        fits = [b for b in range(len(bins)) if free[b] >= sizes[i]]
        if fits:
            b = min(fits, key=lambda b: (free[b], b))
            bins[b].append(i)
            free[b] -= sizes[i]
        else:
            bins.append([i])
            free.append(capacity - sizes[i])
    return bins


@given(sizes=st.lists(st.integers(1, 12), max_size=60), capacity=st.integers(12, 20))
def test_best_fit_decreasing_matches_brute_force(sizes: list[int], capacity: int) -> None:
    assert best_fit_decreasing(sizes, capacity, ties="first-opened") == bfd_brute(sizes, capacity)


@given(lengths=lengths_st, L=st.integers(1, 12))
def test_fewer_truncations_chunks_never_split_again(lengths: list[int], L: int) -> None:
    rows = FewerTruncations(L).rows_of(lengths)
    pieces = sorted((p.source, p.start, p.length) for r in rows for p in r)
    want = sorted((d, k, min(L, n - k)) for d, n in enumerate(lengths) for k in range(0, n, L))
    assert pieces == want  # every chunk placed exactly once, whole
    assert all(sum(p.length for p in r) <= L for r in rows)


def seamless_brute(
    docs: Sequence[Sequence[int]], L: int, rep: float, extra: int, padding: bool
) -> list[list[int]]:
    """The Seamless Packing procedure on token lists (independent transcription of the method)."""
    m = int(L * rep)
    rows: list[list[int]] = []
    short: list[list[int]] = []
    for doc in docs:
        n = len(doc)
        if n < L:
            short.append(list(doc))
            continue
        q = n // L
        if n % L == 0:
            rows += [list(doc[i * L : (i + 1) * L]) for i in range(q)]
        elif n < (L - m) * (q + 1) + m:
            rows += [list(doc[i * L : (i + 1) * L]) for i in range(q)]
            short.append(list(doc[q * L :]))
        else:
            o = int((L * (q + 1) - n) / (q + 1)) + 1
            rows += [list(doc[i * (L - o) : i * (L - o) + L]) for i in range(q)] + [list(doc[-L:])]
    cap = L if padding else L + extra
    bins: list[list[int]] = []
    room: list[int] = []
    for t in sorted(short, key=len, reverse=True):
        for b in range(len(bins)):
            if room[b] >= len(t):
                bins[b] += t
                room[b] -= len(t)
                break
        else:
            bins.append(list(t))
            room.append(cap - len(t))
    longs = [b[:L] for b in bins if len(b) > L or padding]
    rest = [t for b in bins if not (len(b) > L or padding) for t in b]
    return rows + longs + [rest[i * L : (i + 1) * L] for i in range(len(rest) // L)]


@given(
    lengths=st.lists(st.integers(0, 70), max_size=20),
    L=st.integers(2, 16),
    rep=st.sampled_from([0.0, 0.3, 0.45]),
    extra=st.integers(0, 6),
    padding=st.booleans(),
)
def test_seamless_matches_brute_force(
    lengths: list[int], L: int, rep: float, extra: int, padding: bool
) -> None:
    docs = docs_of(lengths)
    peer = Seamless(L, repetition=rep, extra=extra, padding=padding)
    got = [[t for t in row if t != -1] for row in _token_rows(peer, docs, pad_id=-1)]
    assert got == seamless_brute(docs, L, rep, extra, padding)


def test_seamless_window_gap_is_discarded() -> None:
    # L = 10, n = 59: q = 5, overlap 1: windows 0, 9, 18, 27, 36 (end 46) then 49: tokens 46..48 skipped
    starts, rest = seamless_windows(59, 10, 0.3)
    assert starts == [0, 9, 18, 27, 36, 49] and rest == -1
    ev = list(Seamless(10).events([59]))
    assert [(e.start, e.length) for e in kinds(ev, Discard)] == [(46, 3)]
    assert sum(e.length for e in kinds(ev, Repeat)) == 4


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"repetition": 1.0}, ValueError, r"repetition must be a number in \[0, 1\)"),
        ({"repetition": True}, ValueError, "repetition must be a number"),
        ({"extra": -1}, ValueError, "extra must be >= 0"),
        ({"padding": "no"}, TypeError, "padding must be a bool"),
    ],
)
def test_seamless_bad_options(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Seamless(8, **kwargs)


@pytest.mark.parametrize("name", ["trl-bfd", "trl-bfd_split"])
def test_trl_bfd_on_an_empty_dataset_raises_the_framework_s_error(name: str) -> None:
    """TRL 1.16.0's pack_dataset fails there; before the fix the replay returned no row."""
    with pytest.raises(ValueError, match=r"Columns \['seq_lengths'\] not in the dataset"):
        list(build_packer(name, capacity=8).events([]))
    with pytest.raises(ValueError, match=r"Columns \['seq_lengths'\] not in the dataset"):
        list(build_packer(name, capacity=8).batches([]))  # the columnar path too
    ev = list(build_packer("trl-wrapped", capacity=8).events([]))
    assert not kinds(ev, Placement)


@pytest.mark.parametrize("version", ["0.13.0", "0.13.1"])
def test_axolotl_0_13_truncate_keeps_the_row_whole_so_an_over_long_row_is_refused(version: str) -> None:
    """0.13.x truncates inside datasets.filter (the slice is thrown away): before the fix the replay
    truncated as 0.15.0 does."""
    p = AxolotlMultipack(8, excess_length_strategy="truncate", framework_version=version)
    with pytest.raises(ValueError, match=rf"lengths\[1\] = 11 > sequence_len 8 is not replayable for "
                                         rf"framework_version='{version}'.*datasets.filter"):
        list(p.events([3, 11, 5]))
    within = [(e.source, e.length) for e in p.events([3, 1, 5]) if isinstance(e, Placement)]
    drop = AxolotlMultipack(8, framework_version=version)
    assert within == [(e.source, e.length) for e in drop.events([3, 1, 5]) if isinstance(e, Placement)]
    fixed = AxolotlMultipack(8, excess_length_strategy="truncate", framework_version="0.19.0")
    assert sum(e.length for e in kinds(list(fixed.events([3, 11, 5])), Discard)) == 3


@pytest.mark.parametrize("version", ["0.12.2", "0.13.0", "0.13.1"])
@pytest.mark.parametrize("sequential", [False, True])
def test_axolotl_releases_that_index_an_empty_batch_list_raise_its_index_error(version: str,
                                                                                sequential: bool) -> None:
    """No bin at all (every row filtered): generate_batches reads batches[-1] of an empty list. Before the
    fix only 0.12.2 after a dropped batch raised; 0.13.x and the no-bin case returned no row."""
    p = AxolotlMultipack(8, framework_version=version, sequential=sequential)
    with pytest.raises(ValueError, match=rf"axolotl {version}'s MultipackBatchSampler.generate_batches fails "
                                         r"with 'IndexError: list index out of range' when no bin is formed"):
        list(p.events([1, 1, 20]))
    assert not kinds(list(AxolotlMultipack(8, sequential=sequential).events([1, 1, 20])), Placement)


@pytest.mark.parametrize("version", ["0.13.0", "0.13.1"])
def test_axolotl_0_13_raises_when_drop_last_leaves_no_batch(version: str) -> None:
    p = AxolotlMultipack(16, micro_batch_size=2, multipack_real_batches=True, framework_version=version)
    with pytest.raises(ValueError, match="when drop_last leaves no batch: 1 bins < batch_size 2"):
        list(p.events([3, 4]))


# ----------------------------------------------------------------------------- Parcae
def _parcae_rows(lengths: Sequence[int], R: int, batch: int) -> list[list[tuple[int, int]]]:
    """The collator's loop over token lists, written independently: a row is [(document, tokens)], a
    pad run is (-1, n)."""
    docs = [[d] * n for d, n in enumerate(lengths)]
    buffer: list[list[int]] = []
    rows = []
    for lo in range(0, len(docs), batch):
        call = docs[lo : lo + batch]
        buffer += [d for d in call if d]
        for _ in call:
            row: list[int] = []
            while len(row) < R:
                if not buffer:
                    row += [-1] * (R - len(row))
                    break
                fits = [d for d in buffer if len(d) <= R - len(row)]
                if fits:
                    pick = max(fits, key=len)  # max returns the first of the largest
                    buffer.remove(pick)
                    row += pick
                else:
                    pick = min(buffer, key=len)
                    buffer.remove(pick)
                    row += pick[: R - len(row)]
            runs: list[tuple[int, int]] = []
            for t in row:
                if runs and runs[-1][0] == t:
                    runs[-1] = (t, runs[-1][1] + 1)
                else:
                    runs.append((t, 1))
            rows.append(runs)
    return rows


@given(st.lists(st.integers(0, 30), min_size=1, max_size=40), st.integers(2, 16), st.integers(1, 5))
def test_parcae_matches_the_collator_loop(lengths: list[int], R: int, batch: int) -> None:
    from packing_theory.engine.events import Padding

    evs = list(build_packer("parcae-bestfit", capacity=R, batch_size=batch).events(lengths))
    rows: dict[int, list[tuple[int, int]]] = {}
    for e in evs:
        if isinstance(e, Placement):
            rows.setdefault(e.row, []).append((e.source, e.length))
        elif isinstance(e, Padding):
            rows.setdefault(e.row, []).append((-1, e.length))
    want = _parcae_rows(lengths, R, batch)
    # adjacent pieces of one document cannot occur (a document is placed once), so runs compare as pieces
    assert [rows.get(r, []) for r in range(len(want))] == want


def test_parcae_pads_two_thirds_when_a_call_brings_one_document_per_row() -> None:
    """sandyresearch/parcae#8: a call brings as many documents as rows; documents of a third of a row
    fill a third of the call's rows and leave the rest padding: 2/3 of the positions are padding."""
    R, batch = 2049, 16
    lengths = [683] * (batch * 50)  # 3 * 683 = R: no crop, every document placed in its own call
    evs = list(build_packer("parcae-bestfit", capacity=R, batch_size=batch).events(lengths))
    pad = sum(e.length for e in evs if type(e).__name__ == "Padding")
    rows = evs[-1].rows  # type: ignore[union-attr]
    assert rows == len(lengths) and not [e for e in evs if isinstance(e, Discard)]
    assert pad == rows * R - sum(lengths)
    assert 3 * pad == 2 * rows * R  # 66.67 %
