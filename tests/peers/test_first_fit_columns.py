"""The first-fit peers' columnar stages (``packing_theory/peers/_first_fit_columns.py``) against pure peers.

The pure ``AxolotlMultipack`` stages (``keep``, ``next_fit``,
``first_fit_groups``, ``events``) and NeMo's ``assignment`` are the oracle:
every columnar stage must give their answer, and the columnar events their
events, refusals included (recorded sampler orders, the releases'
``IndexError``, ``raise`` and 0.13.x's ``truncate``).
``tests/peers/test_columns.py`` draws the other knobs.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.compiled import compiled_available
from packing_theory.peers._first_fit_columns import (
    REASONS,
    draw_bins,
    filter_rows,
    grouped_first_fit,
    nemo_packs,
    next_fit_starts,
)
from packing_theory.peers.axolotl import VERSIONS, AxolotlMultipack, first_fit_groups, next_fit
from packing_theory.testing import scaled_examples

NO_NUMBA = "numba is not installed (the fast extra)"
MODES = [False, pytest.param(True, marks=pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA))]


def outcome(fn: Any) -> Any:
    """The events of a replay, or the class and message of what it raises."""
    try:
        return list(fn())
    except (ValueError, TypeError) as exc:
        return ("refused", type(exc).__name__, str(exc))


def columnar(packer: AxolotlMultipack, lengths: Any, size: int = 3, compiled: bool = False) -> list[Any]:
    out = []
    for b in packer.batches(lengths, size, compiled=compiled):
        b._check()
        out.extend(b.events())
    return out


def bins_of(starts: list[int], n: int) -> list[list[int]]:
    ends = [*starts[1:], n] if starts else []
    return [list(range(a, b)) for a, b in zip(starts, ends, strict=True)]


@settings(max_examples=scaled_examples(200), deadline=None)
@given(st.lists(st.integers(0, 20), max_size=40), st.integers(1, 12), st.integers(0, 4), st.booleans())
def test_the_filter_is_keep(ls: list[int], L: int, min_sample_len: int, drop: bool) -> None:
    packer = AxolotlMultipack(L, min_sample_len=min_sample_len,
                              excess_length_strategy="drop" if drop else "truncate")
    kept, gone = packer.keep(ls)
    got = filter_rows(np.asarray(ls, dtype=np.int64), L, min_sample_len or 2, drop)
    assert got[0].tolist() == kept
    assert list(zip(got[1].tolist(), [REASONS[c] for c in got[2].tolist()], strict=True)) == gone


@settings(max_examples=scaled_examples(200), deadline=None)
@given(st.lists(st.integers(0, 20), max_size=50), st.integers(1, 12))
def test_next_fit_starts_are_next_fit(sizes: list[int], capacity: int) -> None:
    """Items of size 0 join the open bin; an item above the capacity has a bin of its own."""
    starts = next_fit_starts(np.asarray(sizes, dtype=np.int64), capacity).tolist()
    assert bins_of(starts, len(sizes)) == next_fit(sizes, capacity)


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(100), deadline=None)
@given(st.lists(st.integers(1, 12), max_size=50), st.integers(1, 12), st.integers(1, 9), st.integers(1, 4))
def test_grouped_first_fit_is_first_fit_groups(compiled: bool, sizes: list[int], capacity: int,
                                               group_size: int, bin_size: int) -> None:
    bins = grouped_first_fit(np.asarray(sizes, dtype=np.int64), capacity, group_size, bin_size, compiled)
    got: list[list[int]] = [[] for _ in range(int(bins.max()) + 1 if bins.size else 0)]
    for item, b in enumerate(bins.tolist()):
        got[b].append(item)
    assert got == first_fit_groups(sizes, capacity, group_size, bin_size)


@pytest.mark.parametrize("sequential", [False, True])
def test_draw_bins_map_the_order(sequential: bool) -> None:
    """A draw's bins list kept positions (the order's entries), bin by bin, as ``_batches`` maps them."""
    sizes = np.array([5, 3, 4, 2, 2, 6])
    order = np.array([5, 0, 3, 1, 4, 2])
    bins = draw_bins(sizes, order, 8, sequential=sequential, group_size=100, bin_size=200, compiled=False)
    packer = AxolotlMultipack(8, sequential=sequential, drop_last=False)
    want = [b for batch in packer._batches(sizes.tolist(), order.tolist()) for b in batch]
    got = [bins.items[a:c].tolist() for a, c in zip(bins.bounds[:-1], bins.bounds[1:], strict=True)]
    assert got == want and bins.bins == len(want)


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(60), deadline=None)
@given(data=st.data())
def test_recorded_orders_replay_alike(compiled: bool, data: Any) -> None:
    """Recorded draws (``orders``), a broken one among them now and then: same events, same refusal."""
    ls = data.draw(st.lists(st.integers(0, 24), max_size=20))
    opts = {"epochs": data.draw(st.integers(1, 2)), "drop_last": data.draw(st.booleans()),
            "micro_batch_size": data.draw(st.sampled_from([1, 2])), "multipack_real_batches": True,
            "framework_version": data.draw(st.sampled_from(VERSIONS)), "sequential": data.draw(st.booleans())}
    probe = AxolotlMultipack(8, **opts)
    k = len(probe.keep(ls)[0])
    rng = random.Random(data.draw(st.integers(0, 2**16)))
    orders: list[list[Any]] = []
    for _ in range(probe.draws_needed):
        order: list[Any] = rng.sample(range(k), k)
        if order and rng.random() < 0.1:
            order[0] = order[-1]  # not a permutation: refused
        elif order and rng.random() < 0.1:
            order[0] = float(order[0])  # a permutation of floats: the pure path fails indexing a list
        orders.append(order)
    packer = AxolotlMultipack(8, orders=orders, **opts)
    assert outcome(lambda: columnar(packer, ls, 2, compiled)) == outcome(lambda: packer.events(ls))


@pytest.mark.parametrize(("options", "lengths", "match"), [
    ({"excess_length_strategy": "raise"}, [3, 1, 9, 12], r"lengths\[2\] = 9 > capacity"),
    ({"excess_length_strategy": "truncate", "framework_version": "0.13.1", "min_sample_len": 12},
     [3, 9, 12], r"lengths\[2\] = 12 > sequence_len 8 is not replayable"),
    ({"framework_version": "0.12.2"}, [1, 0, 20], "when no bin is formed"),
    ({"framework_version": "0.13.0", "sequential": True}, [1, 0], "when no bin is formed"),
    ({"framework_version": "0.13.1", "micro_batch_size": 2, "multipack_real_batches": True}, [3, 4],
     "when drop_last leaves no batch: 1 bins < batch_size 2"),
    ({"framework_version": "0.12.2", "micro_batch_size": 4, "multipack_real_batches": True, "seed": 3,
      "epochs": 2}, [3, 4, 7], "when drop_last leaves no batch: 2 bins < batch_size 4"),
])
def test_the_refusals_are_the_pure_ones(options: dict[str, Any], lengths: list[int], match: str) -> None:
    packer = AxolotlMultipack(8, **options)
    want = outcome(lambda: packer.events(lengths))
    assert want[0] == "refused" and want[1] == "InputError"
    assert re.search(match, want[2]), want[2]
    for compiled in (False, *([True] if compiled_available() else [])):
        assert outcome(lambda compiled=compiled: columnar(packer, lengths, 4, compiled)) == want


@pytest.mark.parametrize("version", ["0.19.0", "f5dec2b5eb66"])
def test_the_guarded_releases_emit_no_row_where_the_others_refuse(version: str) -> None:
    packer = AxolotlMultipack(8, framework_version=version, micro_batch_size=2, multipack_real_batches=True)
    for lengths in ([1, 0, 20], [3, 4]):
        got = columnar(packer, lengths)
        assert got == list(packer.events(lengths))
        assert got[-1].rows == 0


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_batches_hold_about_size_documents_or_pieces(size: int) -> None:
    """Arrivals, filtered rows and discards ``size`` at a time; rows in whole bins, about ``size`` pieces."""
    ls = np.arange(40, dtype=np.int64) % 11
    packer = AxolotlMultipack(8, epochs=2, seed=1, excess_length_strategy="truncate", bin_size=3)
    batches = list(packer.batches(ls, size, compiled=False))
    for b in batches[:-1]:
        placed = int(b.placement.occurrence.size)
        rest = len(b) - placed - int(b.padding.row.size)
        assert rest <= size and (not placed or not rest)
        assert placed < size + 3  # whole bins of at most bin_size pieces
    assert [e for b in batches for e in b.events()] == list(packer.events(ls))


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("algorithm", ["first_fit", "first_fit_decreasing", "first_fit_shuffle"])
@settings(max_examples=scaled_examples(60), deadline=None)
@given(st.lists(st.integers(0, 9), max_size=40), st.integers(8, 12), st.integers(0, 5))
def test_nemo_packs_are_the_assignment(compiled: bool, algorithm: str, ls: list[int], capacity: int,
                                       seed: int) -> None:
    """The histogram's first fit and the per-length draws from one global RNG stream fill the same packs."""
    packer = build_packer(f"nemo-{algorithm}", capacity=capacity, seed=seed)
    if not any(ls):
        return
    chosen, sizes, pack = nemo_packs(np.asarray(ls, dtype=np.int64) - 1, capacity, algorithm, seed, compiled)
    got: list[list[tuple[int, int]]] = [[] for _ in range(int(pack[-1]) + 1)]
    for d, s, r in zip(chosen.tolist(), sizes.tolist(), pack.tolist(), strict=True):
        got[r].append((d, s))
    assert got == [[(p.source, p.length) for p in row] for row in packer.assignment(ls)]
