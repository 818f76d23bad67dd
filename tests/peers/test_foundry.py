"""``foundry-binpack``'s columnar path (``peers/foundry.py``, ``peers/_binpack_kernel.py``) vs its events.

The pure Python :meth:`~packing_theory.peers.foundry.FoundryBinPack.events`
(``first_fit_bin_packing``, a transcription of the framework's linear scan)
is the oracle: the batches, with the compiled kernel and with the pure
Python replay, hold exactly its events, in its order, with its errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory.engine.compiled import compiled_available
from packing_theory.engine.events import Discard, Filtered, Horizon, Placement
from packing_theory.peers import foundry
from packing_theory.peers.foundry import FoundryBinPack
from packing_theory.registry import entries
from packing_theory.testing import scaled_examples

NO_NUMBA = "numba is not installed (the fast extra)"
NO_EMPTY = "foundry-binpack takes no empty documents"
MODES = [False, pytest.param(True, marks=pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA))]


def outcome(fn: Any) -> Any:
    """The events of a replay, or the class and message of the error it raises."""
    try:
        return list(fn())
    except ValueError as exc:
        return ("refused", type(exc).__name__, str(exc))


def columnar_events(packer: FoundryBinPack, lengths: Any, size: int, compiled: bool) -> list[Any]:
    out: list[Any] = []
    for b in packer.batches(lengths, size, compiled=compiled):
        b._check()
        out.extend(b.events())
    return out


def test_the_registry_sends_foundry_binpack_down_the_columnar_path() -> None:
    assert entries()["foundry-binpack"].columnar


knobs = st.fixed_dictionaries({
    "batch_size": st.integers(1, 5),
    "packing_ratio": st.sampled_from([1.0, 1.5, 2.0, 2.7, 4.0, 9.0]),
    "max_leftover_bins_to_keep": st.sampled_from([None, 0, 1, 2, 5]),
    "padding_side": st.sampled_from(["right", "left"]),
    "drop_last": st.booleans(),
})


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(150), deadline=None)
@given(width=st.sampled_from([1, 2, 3, 8, 10, 16]), data=st.data(), options=knobs,
       size=st.sampled_from([1, 3, 64, 65_536]))
@example(width=4, data=None, options={"batch_size": 1, "packing_ratio": 2.0}, size=1)
def test_batches_are_the_events(compiled: bool, width: int, data: Any, options: dict[str, Any],
                                size: int) -> None:
    """Lengths up to three rows (cropped at the row width), every knob, any batch size."""
    sizes = st.one_of(st.integers(1, width), st.integers(1, 3 * width))  # most fit a row, some are cropped
    ls = [3, 2, 2, 1] if data is None else data.draw(st.lists(sizes, max_size=60))
    packer = FoundryBinPack(width, **options)
    want = outcome(lambda: packer.events(ls))
    assert outcome(lambda: columnar_events(packer, np.asarray(ls, dtype=np.int64), size, compiled)) == want
    assert outcome(lambda: columnar_events(packer, ls, size, compiled)) == want  # a list goes the same way


@pytest.mark.parametrize("compiled", MODES)
def test_a_seeded_sweep_of_longer_streams(compiled: bool) -> None:
    """300 streams of 10 to 60 documents (hypothesis favours short ones): every knob, a tenth cropped."""
    rng = np.random.default_rng(2026)
    for _ in range(300):
        width = int(rng.choice([4, 8, 10, 16]))
        ls = rng.integers(1, width + 1, size=int(rng.integers(10, 61)))
        ls[rng.random(ls.size) < 0.1] += width
        packer = FoundryBinPack(width, batch_size=int(rng.integers(1, 5)),
                                packing_ratio=float(rng.choice([1.0, 1.5, 2.0, 3.0])),
                                max_leftover_bins_to_keep=[None, 0, 1, 3][int(rng.integers(4))],
                                padding_side=str(rng.choice(["right", "left"])),
                                drop_last=bool(rng.random() < 0.5))
        assert columnar_events(packer, ls, int(rng.choice([5, 64])), compiled) == list(packer.events(ls)), (
            width, ls.tolist(), packer.options())


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(40), deadline=None)
@given(width=st.sampled_from([4, 10]), options=knobs, data=st.data())
def test_leftovers_that_pile_up_are_held_alike(compiled: bool, width: int, options: dict[str, Any],
                                               data: Any) -> None:
    """Examples longer than half a row each need a bin: leftovers grow call after call (keep None)."""
    ls = data.draw(st.lists(st.integers(width // 2 + 1, width), min_size=20, max_size=120))
    packer = FoundryBinPack(width, **options)
    want = list(packer.events(ls))
    assert columnar_events(packer, ls, 7, compiled) == want


@pytest.mark.parametrize("compiled", MODES)
def test_an_unbounded_leftover_list_grows_the_tables(compiled: bool) -> None:
    """3,000 examples of more than half a row, one bin emitted per call of two: 1,500 leftover bins."""
    rng = np.random.default_rng(5)
    ls = rng.integers(9, 17, size=3000)
    packer = FoundryBinPack(16, batch_size=1, packing_ratio=2.0)
    want = list(packer.events(ls))
    final = want[-1]
    assert isinstance(final, Horizon) and len(final.buffered) == 1500 and final.stop_reason == "exhausted"
    assert columnar_events(packer, ls, 256, compiled) == want


@pytest.mark.parametrize("compiled", MODES)
def test_a_leftover_bin_comes_before_a_bin_this_call_opened(compiled: bool) -> None:
    """The bin list is the leftovers, then this call's bins: 3 joins the leftover [7], not the new [4]."""
    packer = FoundryBinPack(10, batch_size=1, packing_ratio=2.0)
    ls = [7, 7, 4, 3]  # call 1: bins [7] [7], one emitted; call 2: 4 opens [4] (7 + 4 > 10), 3 fits both
    events = columnar_events(packer, ls, 64, compiled)
    assert events == list(packer.events(ls))
    rows: dict[int, list[int]] = {}
    for e in events:
        if isinstance(e, Placement):
            rows.setdefault(e.row, []).append(e.occurrence)
    assert rows == {0: [0], 1: [1, 3]}
    final = events[-1]
    assert isinstance(final, Horizon) and [s.occurrence for s in final.buffered] == [2]


@pytest.mark.parametrize("compiled", MODES)
def test_drop_last_filters_the_short_final_call(compiled: bool) -> None:
    packer = FoundryBinPack(8, batch_size=2, packing_ratio=2.0, drop_last=True)
    ls = [5, 9, 3, 2, 7, 1]  # one call of four, then two documents that no call takes
    events = columnar_events(packer, ls, 2, compiled)
    assert events == list(packer.events(ls))
    assert [(e.occurrence, e.length, e.reason) for e in events if isinstance(e, Filtered)] == [
        (4, 7, "drop_last"), (5, 1, "drop_last")]
    assert [e for e in events if isinstance(e, Discard)] == [Discard(1, 1, 8, 1)]  # document 1 cropped at 8


@pytest.mark.parametrize("compiled", MODES)
def test_max_leftover_bins_discards_the_smallest(compiled: bool) -> None:
    packer = FoundryBinPack(8, batch_size=1, packing_ratio=3.0, max_leftover_bins_to_keep=1)
    events = columnar_events(packer, [6, 5, 4], 64, compiled)
    assert events == list(packer.events([6, 5, 4]))
    # bins [6], [5], [4]: [6] is the row, [5] kept, [4] discarded
    assert [e for e in events if isinstance(e, Discard)] == [Discard(2, 2, 0, 4)]
    final = events[-1]
    assert isinstance(final, Horizon) and [s.occurrence for s in final.buffered] == [1]


@pytest.mark.parametrize("compiled", MODES)
def test_left_padding_comes_first(compiled: bool) -> None:
    packer = FoundryBinPack(6, batch_size=1, packing_ratio=1.0, padding_side="left")
    events = columnar_events(packer, [4], 64, compiled)
    assert events == list(packer.events([4]))
    assert [type(e).__name__ for e in events] == ["Arrival", "Padding", "Placement", "Horizon"]
    assert [e.offset for e in events if isinstance(e, Placement)] == [2]


@pytest.mark.parametrize("compiled", MODES)
def test_a_row_wider_than_the_kernel_tables_replays_in_python(compiled: bool) -> None:
    width = foundry._KERNEL_MAX_CAPACITY + 1
    packer = FoundryBinPack(width, batch_size=2, packing_ratio=1.5)
    ls = [width + 5, 3, width // 2, width // 2 + 1, 7]
    assert columnar_events(packer, ls, 2, compiled) == list(packer.events(ls))


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize(("lengths", "message"), [
    ([3, 0, 2], f"lengths[1] must be a length >= 1 ({NO_EMPTY}), got 0"),
    (np.array([4, -1]), f"lengths[1] must be a length >= 1 ({NO_EMPTY}), got -1"),
    ([2, 1.5], "lengths[1] must be an int, got float 1.5"),
])
def test_bad_lengths_are_refused_alike(compiled: bool, lengths: Any, message: str) -> None:
    packer = FoundryBinPack(8)
    want = outcome(lambda: packer.events(lengths))
    assert want[2] == message
    assert outcome(lambda: columnar_events(packer, lengths, 64, compiled)) == want


@pytest.mark.parametrize("compiled", MODES)
def test_no_document_is_a_drained_horizon(compiled: bool) -> None:
    packer = FoundryBinPack(8)
    want = [Horizon(0, 0, "drained", ())]
    assert columnar_events(packer, [], 64, compiled) == list(packer.events([])) == want


def test_the_collate_calls_split_anywhere_on_a_call_boundary() -> None:
    """Replaying the calls in two runs of documents gives the arrays of one run, pure or compiled."""
    rng = np.random.default_rng(11)
    values = rng.integers(1, 30, size=400).astype(np.int64)
    modes = [False, True] if compiled_available() else [False]
    results = []
    for compiled in modes:
        whole = foundry._CollateCalls(values, 16, 6, 2, 3, compiled=compiled)
        split = foundry._CollateCalls(values, 16, 6, 2, 3, compiled=compiled)
        one = whole.pack(0, 400)
        a, b = split.pack(0, 120), split.pack(120, 400)
        assert one[0] == a[0] + b[0]
        assert one[2].tolist() == [*a[2].tolist(), *(b[2] + a[0]).tolist()]  # piece rows
        assert one[3].tolist() == [*a[3].tolist(), *b[3].tolist()]  # piece occurrences
        assert one[4].tolist() == [*a[4].tolist(), *b[4].tolist()]  # discarded occurrences
        assert whole.held().tolist() == split.held().tolist()
        results.append((one[1].tolist(), one[3].tolist(), one[4].tolist(), whole.held().tolist()))
    assert all(r == results[0] for r in results)

