"""The paper peers' columnar path (``packing_theory/peers/_paper_columns.py``) against their pure events.

``fewer-truncations`` and ``seamless`` must give, through ``batches``, exactly
the events of ``events`` in the same order (all arrivals, the filtered empty
documents, the rows, the discards, the Horizon), the same refusals with the
same messages, with the pure Python bin packing and with the compiled kernels.
Lengths are drawn around the row width: 0, ``L``, multiples of ``L`` and
their neighbours, long texts of many windows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.engine.compiled import compiled_available
from packing_theory.peers import _paper_columns as paper_columns
from packing_theory.peers._columns import first_fit_bins
from packing_theory.peers._common import best_fit, best_fit_decreasing
from packing_theory.peers._paper_columns import first_opened_bins, window_columns
from packing_theory.peers.paper import seamless_windows
from packing_theory.testing import scaled_examples
from tests.peers.test_columns import columnar_events

NO_NUMBA = "numba is not installed (the fast extra)"
MODES = [False, pytest.param(True, marks=pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA))]
WIDTHS = [1, 2, 3, 5, 8, 10, 16, 64]


def outcome(fn: Any) -> Any:
    """The events of a replay, or the class and message of the error it raises."""
    try:
        return list(fn())
    except (ValueError, TypeError) as exc:
        return ("refused", type(exc).__name__, str(exc))


@st.composite
def lengths_near(draw: Any, width: int) -> list[int]:
    """Lengths of 0, ``width``, ``k * width`` and ``k * width +- 1``, or anything up to ``8 * width``."""
    one = st.one_of(
        st.just(0), st.just(width),
        st.builds(lambda k, d: max(0, k * width + d), st.integers(1, 8), st.sampled_from([-1, 0, 1])),
        st.integers(0, 8 * width))
    return draw(st.lists(one, max_size=40))


def seamless_options(draw: Any) -> dict[str, Any]:
    return {"repetition": draw(st.one_of(st.sampled_from([0.0, 0.05, 0.3, 0.5, 0.99]),
                                         st.floats(0, 1, exclude_max=True))),
            "extra": draw(st.sampled_from([0, 1, 2, 7, 50])), "padding": draw(st.booleans())}


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("name", ["fewer-truncations", "seamless"])
@settings(max_examples=scaled_examples(150), deadline=None)
@given(data=st.data())
@example(data=None)
def test_batches_are_the_events(name: str, compiled: bool, data: Any) -> None:
    """The columnar batches are the pure events, whatever the batch size and however many documents and
    stage-2 bins the planners take at a time (``PLAN_CHUNK``: bins split across chunk ends, rows numbered
    across chunks)."""
    if data is None:  # a window gap (59 = 5 * 10 + 9), a deferred remainder (22), ties, empties
        width, ls, opts, size, chunk = 10, [59, 22, 0, 10, 20, 6, 6, 4, 0, 25, 9, 1, 3, 3], {}, 2, 2
    else:
        width = data.draw(st.sampled_from(WIDTHS))
        ls = data.draw(lengths_near(width))
        opts = seamless_options(data.draw) if name == "seamless" else {}
        size = data.draw(st.sampled_from([1, 3, 64, 65_536]))
        chunk = data.draw(st.sampled_from([1, 2, 3, 5, paper_columns.PLAN_CHUNK]))
    packer = build_packer(name, capacity=width, **opts)
    want = outcome(lambda: packer.events(ls))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paper_columns, "PLAN_CHUNK", chunk)
        arr = np.asarray(ls, dtype=np.int64)
        assert outcome(lambda: columnar_events(packer, arr, size, compiled)) == want
        assert outcome(lambda: columnar_events(packer, ls, size, compiled)) == want


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("padding", [False, True])
def test_every_row_kind_of_seamless_appears_and_agrees(compiled: bool, padding: bool) -> None:
    """Windows with Repeats and a gap, an over-full bin cut, stream rows, a dropped tail: all in one input."""
    packer = build_packer("seamless", capacity=10, extra=5, padding=padding)
    ls = [59, 25, 9, 6, 0, 7, 3, 3, 22]
    want = list(packer.events(ls))
    kinds = {type(e).__name__ for e in want}
    assert {"Repeat", "Discard", "Filtered", "Placement"} <= kinds
    assert columnar_events(packer, ls, 4, compiled) == want


HAND_PICKED = [
    # best fit ties: after 13, 10, 8, 5, 2 bins 0 and 1 both hold space 1; bin 1 reached it first
    ("fewer-truncations", 16, {}, [2, 10, 8, 1, 5, 13]),
    ("seamless", 10, {"extra": 0}, [9, 6, 4]),  # a bin of exactly L after a streamed bin: streamed too
    ("seamless", 10, {"extra": 0}, [6, 4, 7, 3]),  # the stream is two rows exactly: no tail to drop
    ("seamless", 10, {"extra": 0}, [9, 6, 3]),  # a stream item straddles the row end: a crop, a dropped rest
    ("seamless", 10, {"extra": 5}, [9, 6, 3, 20, 30]),  # an over-full bin cut at L, windows, the stream
    ("seamless", 10, {"padding": True}, [0, 0, 3]),  # the empty texts join the first bin
    ("seamless", 10, {"padding": True}, [0, 0]),  # a bin of empty texts only: an all-padding row
]


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize(("name", "width", "options", "lengths"), HAND_PICKED)
def test_hand_picked_inputs_agree(compiled: bool, name: str, width: int, options: dict[str, Any],
                                  lengths: list[int]) -> None:
    packer = build_packer(name, capacity=width, **options)
    assert columnar_events(packer, lengths, 2, compiled) == list(packer.events(lengths))


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize(("name", "width", "options"), [
    ("seamless", 10, {"extra": 2**70}),  # bins of L + extra tokens: past int64
    ("seamless", 2**62, {"extra": 2**62}),
    ("fewer-truncations", 2**40, {}),  # over the kernel's spaces: the pure best fit packs
    ("fewer-truncations", (1 << 22) + 1, {}),
])
def test_huge_knobs_agree_on_both_paths(compiled: bool, name: str, width: int,
                                        options: dict[str, Any]) -> None:
    packer = build_packer(name, capacity=width, **options)
    ls = [9, 3, 0, 25, 7, 7, 12] + ([2**40 + 5, width, width + 1, width - 1] if width > 2**20 else [])
    assert columnar_events(packer, ls, 3, compiled) == list(packer.events(ls))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("max_items", [None, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_first_fit_bins_past_the_kernels_first_tree(dtype: Any, max_items: int | None, seed: int) -> None:
    """Seamless's first fit over thousands of bins: the compiled kernel grows its tree (1,024 leaves at
    first, doubled as bins open) and gives the pure bins, for an ``int32`` column as for an ``int64`` one."""
    if not compiled_available():
        pytest.skip(NO_NUMBA)
    rng = np.random.default_rng(seed)
    sizes = np.concatenate((np.full(1500, 8), rng.integers(0, 10, 3000), np.full(1100, 9))).astype(dtype)
    bins = first_fit_bins(sizes, 8, max_items, compiled=True)
    assert bins.max() + 1 > 2048
    assert bins.tolist() == first_fit_bins(sizes, 8, max_items, compiled=False).tolist()


@pytest.mark.parametrize(("rows", "longest", "row_type", "length_type"), [
    (65_534, 65_535, np.uint16, np.uint16),  # at the bounds: uint16
    (65_535, 65_536, np.int32, np.int32),  # one past: the narrow int32 columns
])
def test_a_block_holds_rows_and_lengths_compact_up_to_the_uint16_bound(rows: int, longest: int, row_type: Any,
                                                                       length_type: Any) -> None:
    """A plan's block counts its rows from its first row and holds them, and the pieces' lengths, in
    ``uint16`` while they fit; the batches widen them back to the same values."""
    row = np.arange(rows, dtype=np.int32)
    length = np.ones(rows, np.int32)
    length[-1] = longest
    flags = np.zeros(rows, np.bool_)
    (block,) = paper_columns._blocks(7, 7 + rows, [row, row.copy(), row.copy(), length, flags, flags])
    assert (block.r0, block.r1) == (7, 7 + rows)
    assert block.pieces.row.dtype == row_type and block.pieces.length.dtype == length_type
    assert block.pieces.row.astype(np.int64).tolist() == list(range(rows))
    assert int(block.pieces.length[-1]) == longest and int(block.pieces.length[:-1].max()) == 1


@settings(max_examples=scaled_examples(100), deadline=None)
@given(st.lists(st.integers(0, 9), max_size=60), st.sampled_from([1, 2, 7, 1 << 17]),
       st.sampled_from([9, 12, (1 << 16) - 1, 1 << 16]))
def test_longest_first_is_the_stable_argsort(lengths: list[int], chunk: int, top: int) -> None:
    """The planners' longest-first order (a counting sort by chunks below ``2**16``, else the argsort)."""
    arr = np.asarray(lengths, dtype=np.int32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paper_columns, "PLAN_CHUNK", chunk)
        got = paper_columns.longest_first(arr, top)
    assert got.dtype == np.int32
    assert got.tolist() == np.argsort(-arr.astype(np.int64), kind="stable").tolist()


def test_the_tie_case_tells_the_rules_apart() -> None:
    """The hand-picked tie input packs differently under first-to-reach ties (so it pins first-opened)."""
    sizes = [2, 10, 8, 1, 5, 13]
    assert (best_fit_decreasing(sizes, 16, ties="first-opened")
            != best_fit_decreasing(sizes, 16, ties="first-to-reach"))


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("name", ["fewer-truncations", "seamless"])
@pytest.mark.parametrize("lengths", [[], [0], [0, 0, 0], [2**62, 1], [3, -1], [1, True]])
def test_edge_inputs_agree_on_both_paths(name: str, compiled: bool, lengths: list[int]) -> None:
    """No document, only empty ones, a length over the split budget, a negative one, a bool: same outcome."""
    packer = build_packer(name, capacity=4)
    want = outcome(lambda: packer.events(lengths))
    got = outcome(lambda: columnar_events(packer, lengths, 8, compiled))
    if lengths and lengths[0] == 2**62:  # each path names its own budget after the same first words
        assert want[0] == got[0] == "refused" and want[1] == got[1]
        assert want[2].split(" (")[0] == got[2].split(" (")[0]
        assert "over the budget of 10,000,000 (peers.SPLIT_BUDGET" in want[2]
        assert "over the budget of 10,000,000 (the columnar path's" in got[2]
    else:
        assert got == want


@settings(max_examples=scaled_examples(300), deadline=None)
@given(st.integers(1, 2**61), st.integers(1, 20), st.data(),
       st.one_of(st.sampled_from([0.0, 0.3, 0.5]), st.floats(0, 1, exclude_max=True)))
def test_window_columns_are_seamless_windows(width: int, q: int, data: Any, repetition: float) -> None:
    """Every text's windows and remainder, up to lengths near 2**63 (the rewritten tests overflow nothing)."""
    assume(q * width <= 2**63 - 1)
    n = q * width + data.draw(st.integers(0, min(width - 1, 2**63 - 1 - q * width)))
    starts, rest = seamless_windows(n, width, repetition)
    got = window_columns(np.array([n], dtype=np.int64), width, repetition)
    assert got.start.tolist() == starts and got.text.tolist() == [0] * len(starts)
    assert got.rest.tolist() == [rest]


def test_window_columns_of_several_texts_keep_text_order() -> None:
    got = window_columns(np.array([59, 10, 22]), 10, 0.3)
    assert got.text.tolist() == [0] * 6 + [1] + [2, 2]
    assert got.start.tolist() == [0, 9, 18, 27, 36, 49, 0, 0, 10]
    assert got.rest.tolist() == [-1, -1, 20]


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(150), deadline=None)
@given(st.integers(1, 16), st.lists(st.integers(1, 16), max_size=80), st.booleans(),
       st.sampled_from([np.int32, np.int64]))
def test_first_opened_bins_are_the_pure_best_fit(compiled: bool, capacity: int, sizes: list[int],
                                                 decreasing: bool, dtype: Any) -> None:
    """The bin of each item in processing order, as :func:`best_fit` with first-opened ties packs it
    (the planner hands the kernel ``int32`` columns as they are)."""
    arr = np.minimum(np.asarray(sizes, dtype=np.int64), capacity).astype(dtype)
    order = (np.argsort(-arr, kind="stable") if decreasing else np.arange(arr.size)).astype(dtype)
    got = first_opened_bins(arr, order, capacity, compiled=compiled).tolist()
    rank = {item: j for j, item in enumerate(order.tolist())}
    want = [0] * arr.size
    for b, items in enumerate(best_fit(arr.tolist(), order.tolist(), capacity, ties="first-opened")):
        for item in items:
            want[rank[item]] = b
    assert got == want
