"""The peers' columnar path (``packing_theory/peers/_columns.py``) against the pure Python events, the oracle.

Every peer that declares ``columnar`` must give, through ``batches``, exactly
the events of its ``events``, in the same order: on generated inputs, on
every golden fixture's inputs, with the pure Python bin packing and (when
numba is installed) with the compiled kernel.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory import InputError, build_packer
from packing_theory.engine.batches import EventBatch, batched
from packing_theory.engine.compiled import compiled_available
from packing_theory.peers._columns import (
    arrival_batches,
    arrival_sections,
    assemble,
    best_fit_fifo,
    first_fit_bins,
    kernel_width,
    peer_array,
    row_section,
)
from packing_theory.peers._common import first_fit, peer_lengths
from packing_theory.peers.axolotl import VERSIONS as AXOLOTL_VERSIONS
from packing_theory.registry import entries
from packing_theory.testing import scaled_examples
from tests.golden_params import first_of_each_group, fixture_params
from tests.tool_modules import load_tool

COLUMNAR = [n for n, e in entries().items() if e.kind == "peer" and e.columnar]
NO_NUMBA = "numba is not installed (the fast extra)"
MODES = [False, pytest.param(True, marks=pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA))]
FIXTURES = sorted((Path(__file__).resolve().parents[1] / "data" / "peer_golden").glob("*.json"))
TRAINER_FIXTURES = [p for p in FIXTURES if "streams" in json.loads(p.read_text())]


def outcome(fn: Any) -> Any:
    """The events of a replay, or the message of the error it raises (a framework's refusal)."""
    try:
        return list(fn())
    except ValueError as exc:
        return ("refused", type(exc).__name__, str(exc))


def columnar_events(packer: Any, lengths: Any, size: int, compiled: bool) -> list[Any]:
    out = []
    for b in packer.batches(lengths, size, compiled=compiled):
        b._check()
        out.extend(b.events())
    return out


def options_for(name: str, draw: Any) -> dict[str, Any]:
    if name.startswith("trl"):
        return {"window": draw(st.sampled_from([None, 1, 2, 3, 7, 1000]))}
    if name.startswith("olmo"):
        per = draw(st.sampled_from([None, 1, 2, 5]))
        return {"documents_per_file": per, "source_group_size": draw(st.integers(1, 3)) if per else 1}
    if name.startswith("torchtune"):
        return {"max_packs": draw(st.sampled_from([None, 0, 2]))}
    if name == "seamless":
        return {"repetition": draw(st.sampled_from([0.0, 0.3, 0.5, 0.99])),
                "extra": draw(st.sampled_from([0, 1, 50])), "padding": draw(st.booleans())}
    if name == "foundry-binpack":  # leftovers kept, capped or dropped; a short final call kept or dropped
        return {"batch_size": draw(st.integers(1, 3)),
                "packing_ratio": draw(st.sampled_from([1.0, 2.0, 2.5])),
                "max_leftover_bins_to_keep": draw(st.sampled_from([None, 0, 2])),
                "padding_side": draw(st.sampled_from(["right", "left"])), "drop_last": draw(st.booleans())}
    if name == "megatron-gpt":  # more samples than one epoch holds, or fewer drawn than the index holds
        return {"num_samples": draw(st.sampled_from([None, 1, 3, 20])),
                "samples": draw(st.sampled_from(["drawn", "index"])), "seed": draw(st.integers(0, 3))}
    if name.startswith("nemo"):  # a cut makes most drawn examples packable (NeMo refuses a longer one)
        return {"max_seq_length": draw(st.sampled_from([None, 1, 2, 3, 9])), "seed": draw(st.integers(0, 3)),
                "framework_version": draw(st.sampled_from(["3.0.0", "2.0.0"]))}
    if name == "axolotl-multipack":  # every release; micro_batch_size divides every drawn width
        version = draw(st.sampled_from(AXOLOTL_VERSIONS))
        return {"framework_version": version,
                "excess_length_strategy": draw(st.sampled_from(["drop"] if version == "0.12.2"
                                                               else ["drop", "truncate", "raise"])),
                "min_sample_len": draw(st.sampled_from([None, 0, 1, 3])),
                "micro_batch_size": draw(st.sampled_from([1, 2])),
                "multipack_real_batches": draw(st.booleans()), "bin_size": draw(st.sampled_from([1, 2, 200])),
                "group_size": draw(st.sampled_from([1, 3, 100_000])), "sequential": draw(st.booleans()),
                "drop_last": draw(st.booleans()), "epochs": draw(st.integers(1, 3)),
                "seed": draw(st.sampled_from([None, 0, 5])), "world_size": draw(st.sampled_from([1, 4])),
                "num_count_samples": draw(st.sampled_from([1, 4]))}
    return {}


def test_the_expensive_peers_are_columnar() -> None:
    assert {"trl-bfd", "trl-bfd_split", "trl-wrapped", "olmo-truncate", "olmo-fragment", "megatron-gpt",
            "foundry-concat-wrap", "foundry-concat-no_wrap", "foundry-binpack", "torchtune-split",
            "fewer-truncations", "seamless", "axolotl-multipack", "nemo-first_fit",
            "nemo-first_fit_decreasing", "nemo-first_fit_shuffle"} <= set(COLUMNAR)


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("name", COLUMNAR)
@settings(max_examples=scaled_examples(60), deadline=None)
@given(data=st.data())
@example(data=None)
def test_batches_are_the_events(name: str, compiled: bool, data: Any) -> None:
    if data is None:  # a hand-made case: ties, a long document, an empty one (where the framework takes it)
        width, ls, opts, size = 4, [5, 2, 2, 0, 3, 1, 1, 9], {}, 3
    else:
        width = data.draw(st.sampled_from([2, 4, 8, 16] if name != "megatron-gpt" else [3, 5, 8, 16]))
        ls = data.draw(st.lists(st.integers(0, 3 * width), max_size=40))
        opts, size = options_for(name, data.draw), data.draw(st.sampled_from([1, 5, 64, 65_536]))
    if name.startswith("olmo") or name == "foundry-binpack":  # frameworks that take no empty document
        ls = [n + 1 for n in ls]
    packer = build_packer(name, capacity=width, **opts)
    want = outcome(lambda: packer.events(np.asarray(ls, dtype=np.int64)))
    assert outcome(lambda: columnar_events(packer, np.asarray(ls, dtype=np.int64), size, compiled)) == want
    assert outcome(lambda: columnar_events(packer, ls, size, compiled)) == want  # a list goes the same way


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("path", [p for p in FIXTURES if json.loads(p.read_text()).get("policy") in COLUMNAR],
                         ids=lambda p: p.stem)
def test_batches_are_the_events_on_every_golden_input(path: Path, compiled: bool) -> None:
    inputs_mod = load_tool("peer_inputs")
    meta = json.loads(path.read_text())
    g = meta["gen"]
    for ls in inputs_mod.inputs(g["seed"], meta["count"], meta["seq_length"], empty=g["empty"],
                                min_total=g.get("min_total", 0)):
        opts = dict(meta.get("options", {}))
        if isinstance(opts.get("num_samples"), str):  # Megatron: a share of one epoch's samples
            per_epoch = max((sum(ls) - 1) // meta["seq_length"], 1)
            opts["num_samples"] = max(1, int(float(opts["num_samples"]) * per_epoch))
        packer = build_packer(meta["policy"], seq_length=meta["seq_length"], **opts)
        want = outcome(lambda ls=ls, packer=packer: packer.events(ls))
        assert want[0] != "refused" or meta["policy"] != "megatron-gpt", want
        assert outcome(lambda ls=ls, packer=packer: columnar_events(packer, ls, 65_536, compiled)) == want, ls


@pytest.mark.parametrize("compiled", MODES)
@pytest.mark.parametrize("path", fixture_params(TRAINER_FIXTURES, first_of_each_group(TRAINER_FIXTURES)))
def test_batches_are_the_events_on_every_trainer_view_stream(path: Path, compiled: bool) -> None:
    """The trainer-view fixtures' streams (axolotl, NeMo, torchtune), in batches of 1-7 documents."""
    inputs_mod = load_tool("peer_inputs")
    meta = json.loads(path.read_text())
    packer = inputs_mod.trainer_peer(meta["framework"], meta["config"])
    if not packer.columnar:
        pytest.skip(f"{packer.name} has no columnar path")
    for k, ls in enumerate(meta["streams"]):
        want = outcome(lambda ls=ls: packer.events(ls))
        assert outcome(lambda ls=ls, k=k: columnar_events(packer, ls, 1 + k % 7, compiled)) == want, ls


def test_a_peer_without_columns_groups_its_events() -> None:
    plain = next(n for n, e in entries().items() if e.kind == "peer" and not e.columnar)
    packer = build_packer(plain, capacity=8)  # every length fits a row: no framework refuses them
    got = list(packer.batches([5, 2, 3, 1], 3))
    assert got == list(batched(packer.events([5, 2, 3, 1]), 3))


@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
@settings(max_examples=scaled_examples(100), deadline=None)
@given(st.integers(1, 12), st.lists(st.integers(1, 12), max_size=60),
       st.lists(st.integers(0, 60), max_size=4))
def test_compiled_best_fit_is_the_pure_one(capacity: int, sizes: list[int], cuts: list[int]) -> None:
    arr = np.minimum(np.asarray(sizes, dtype=np.int64), capacity)
    order = np.argsort(-arr, kind="stable").astype(np.int64)
    starts = np.unique(np.asarray([0, *[c for c in cuts if c < max(arr.size, 1)]], dtype=np.int64))
    pure = best_fit_fifo(arr, order, starts, capacity, compiled=False)
    assert best_fit_fifo(arr, order, starts, capacity, compiled=True).tolist() == pure.tolist()
    narrow_bins = best_fit_fifo(arr.astype(np.int32), order.astype(np.int32), starts, capacity, compiled=True)
    assert narrow_bins.dtype == np.int32 and narrow_bins.tolist() == pure.tolist()  # int32 in, int32 work


def test_the_kernel_works_int32_up_to_the_bound_then_int64() -> None:
    top = 2**31 - 1
    assert kernel_width(top - 1, top) is np.int32  # top - 1 items: bins 0..top - 1 and a sentinel slot
    assert kernel_width(top, 8) is np.int64
    assert kernel_width(8, top + 1) is np.int64  # a space past int32


@pytest.mark.parametrize("compiled", MODES)
@settings(max_examples=scaled_examples(100), deadline=None)
@given(st.integers(1, 12), st.lists(st.integers(0, 16), max_size=60), st.sampled_from([None, 1, 2, 3, 7]))
def test_first_fit_bins_are_the_pure_bins(compiled: bool, capacity: int, sizes: list[int],
                                          max_items: int | None) -> None:
    """Item sizes above the capacity open bins of their own (negative free space) on both paths."""
    bins = first_fit_bins(np.asarray(sizes, dtype=np.int64), capacity, max_items, compiled=compiled)
    got: list[list[int]] = [[] for _ in range(int(bins.max()) + 1 if bins.size else 0)]
    for item, b in enumerate(bins.tolist()):
        got[b].append(item)
    assert got == first_fit(sizes, capacity, max_items)


def test_first_fit_bins_refuses_a_cap_below_one() -> None:
    with pytest.raises(InputError, match="max_items must be >= 1 or None, got 0"):
        first_fit_bins(np.array([1, 2]), 4, 0)


def test_rows_are_padded_on_either_side() -> None:
    one = np.zeros(1, np.int64)
    for left, kinds in ((False, [2, 5]), (True, [5, 2])):
        sec = row_section(5, 1, 7, one, one, one + 3, one + 3, one, one + 2, np.zeros(1, np.bool_),
                          left_pad=left)
        assert sec.kinds.tolist() == kinds
        assert sec.groups["placement"][0].tolist() == [7]  # rows are numbered from row_base
        assert sec.groups["placement"][1].tolist() == [3 if left else 0]
        assert sec.groups["padding"][1:] == (one + (0 if left else 2), one + 3)


def test_an_overfull_row_is_refused() -> None:
    one = np.zeros(1, np.int64)
    with pytest.raises(InputError, match="row 0 holds 6 tokens > capacity 5"):
        row_section(5, 1, 0, one, one, one, one, one, one + 6, np.zeros(1, np.bool_))


@pytest.mark.parametrize("bad", [np.array([3, -1]), np.array([[1]]), np.array([1.0]), "abc", [1, True]])
def test_the_lengths_check_is_the_pure_one(bad: Any) -> None:
    with pytest.raises(ValueError) as want:
        peer_lengths(bad)
    with pytest.raises(ValueError) as got:
        peer_array(bad)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_a_length_past_int64_is_refused_by_the_columns_naming_it() -> None:
    with pytest.raises(InputError, match=r"lengths\[1\] = 18446744073709551616 exceeds the columnar path"):
        peer_array([3, 2**64])


def test_an_empty_stream_is_its_horizon() -> None:
    (only,) = build_packer("trl-wrapped", capacity=4).batches(np.zeros(0, np.int64))
    assert isinstance(only, EventBatch) and [type(e).__name__ for e in only.events()] == ["Horizon"]


@pytest.mark.parametrize(("name", "options", "lengths"), [
    ("megatron-gpt", {"seq_length": 1, "seed": 3}, [5, 3, 9, 2, 11, 4]),
    ("megatron-gpt", {"seq_length": 4}, [1]),
    ("megatron-gpt", {"seq_length": 1, "samples": "index"}, [0, 3]),
    ("megatron-gpt", {"seq_length": 1}, [0, 0]),
    ("megatron-gpt", {"seq_length": 3}, []),
    ("trl-bfd", {"capacity": 8}, []),
    ("trl-bfd_split", {"capacity": 8}, []),
    ("trl-wrapped", {"capacity": 8}, []),
    ("axolotl-multipack", {"capacity": 8}, []),
    ("axolotl-multipack", {"capacity": 8, "framework_version": "0.12.2"}, []),
    ("axolotl-multipack", {"capacity": 1, "min_sample_len": 1}, [1, 0, 2, 1]),
    ("axolotl-multipack", {"capacity": 1, "min_sample_len": 1, "excess_length_strategy": "truncate"}, [3, 1]),
    ("nemo-first_fit", {"capacity": 8}, []),
    ("nemo-first_fit", {"capacity": 8}, [0, 0]),
    ("nemo-first_fit_shuffle", {"capacity": 1}, [1, 2, 0, 1]),
    ("nemo-first_fit_decreasing", {"capacity": 1, "framework_version": "2.0.0"}, [1, 2]),
])
def test_edge_inputs_agree_on_both_paths(name: str, options: dict[str, Any], lengths: list[int]) -> None:
    """The frameworks' edge inputs (seq_length 1, one token, none or only empty) replay or refuse alike."""
    packer = build_packer(name, **options)
    columns = outcome(lambda: columnar_events(packer, lengths, 64, False))
    assert columns == outcome(lambda: packer.events(lengths))


@settings(max_examples=scaled_examples(100), deadline=None)
@given(st.lists(st.lists(st.integers(1, 3), max_size=3), max_size=12), st.integers(1, 7))
def test_row_chunks_are_the_row_section(rows: list[list[int]], size: int) -> None:
    """Rows cut into sections of about ``size`` pieces give the events of one section, rows without
    pieces (all padding) included."""
    from packing_theory.peers._columns import Section, assemble, row_chunks

    piece_row = np.asarray([r for r, pieces in enumerate(rows) for _ in pieces], dtype=np.int64)
    length = np.asarray([n for pieces in rows for n in pieces], dtype=np.int64)
    occ = np.arange(length.size, dtype=np.int64)
    zeros, crop = np.zeros(length.size, np.int64), np.zeros(length.size, np.bool_)
    whole: Section = row_section(9, len(rows), 3, np.zeros(len(rows), np.int64), piece_row, occ, occ, zeros,
                                 length, crop)
    parts = list(row_chunks(9, len(rows), 3, piece_row, occ, occ, zeros, length, crop, size))
    assert [e for s in parts for e in assemble(1, [s]).events()] == list(assemble(1, [whole]).events())
    widest = max((len(p) for p in rows), default=0)  # a chunk ends at a row start
    assert all(s.groups["placement"][0].size < size + max(widest, 1) for s in parts)


@settings(max_examples=scaled_examples(150), deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=30), st.integers(2, 9), st.integers(1, 4),
       st.integers(1, 12), st.booleans())
def test_wrapped_rows_in_sections_are_the_whole_rows(ls: list[int], L: int, per_window: int, size: int,
                                                     crop: bool) -> None:
    """Wrapped rows given about ``size`` pieces at a time (whole rows, a document's pieces split
    between sections) are the events of one section of every row, empty documents and windows included."""
    from packing_theory.peers._columns import assemble, wrapped_rows

    lengths = np.asarray(ls, dtype=np.int64)
    occ = 5 + np.arange(lengths.size, dtype=np.int64)
    window = np.arange(lengths.size, dtype=np.int64) // per_window
    windows = int(window[-1]) + 1
    whole, rows = wrapped_rows(L, lengths, occ, window, windows, 7, crop=crop)
    (one,) = list(whole)
    parts, rows_in_parts = wrapped_rows(L, lengths, occ, window, windows, 7, crop=crop, size=size)
    sections = list(parts)
    assert rows_in_parts == rows == sum(-(-int(lengths[window == w].sum()) // L) for w in range(windows))
    assert [e for s in sections for e in assemble(windows, [s]).events()] == list(
        assemble(windows, [one]).events())
    assert sum(int(s.groups["placement"][0].size) for s in sections) == int(one.groups["placement"][0].size)
    longest = max(n // L + 2 for n in ls)  # the pieces of one document, and of one held row, at most
    assert all(s.groups["placement"][0].size <= size + longest + L for s in sections)


def test_masked_lengths_are_refused_as_the_list_path_refuses_them() -> None:
    masked = np.ma.array([3, 5, 2], mask=[0, 1, 0])
    for check in (peer_lengths, peer_array):
        with pytest.raises(TypeError, match=r"^lengths\[1\] must be an int, got MaskedConstant masked$"):
            check(masked)


def test_megatron_s_index_takes_a_uint64_length_past_int64_as_its_events_do() -> None:
    from packing_theory.peers.megatron import MegatronGPT

    lengths = np.array([1, 2**63 + 5], np.uint64)
    packer = MegatronGPT(2**62 + 1)
    assert packer.horizon_figures(lengths) == packer.horizon_figures(lengths.tolist())
    assert packer.horizon_figures(lengths)["samples_in_index"] == 2


@pytest.mark.parametrize(("name", "width"), [("megatron-gpt", 9), ("olmo-fragment", 8), ("olmo-truncate", 8)])
def test_an_offline_peer_holds_no_arrival_column_while_it_emits_rows(name: str, width: int) -> None:
    # the batches before the rows hold every arrival; once a consumer drops them, the peer must not keep
    # their columns (arrays of the peer's own: the lengths may be a view)
    g = build_packer(name, capacity=width).batches(np.arange(1, 3000) % 37 + 1, 64, compiled=False)
    held, arrived = [], 0
    batch = next(g)
    while not batch.placement.occurrence.size:
        arrived += batch.arrival.occurrence.size
        if batch.arrival.occurrence.size:
            held.append(weakref.ref(batch.arrival.occurrence))
        batch = next(g)
    assert arrived == 2999 and held
    assert all(ref() is None for ref in held)


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_arrival_batches_are_the_arrival_sections_in_batches(size: int) -> None:
    ls = np.array([3, 0, 2, 0, 0, 5, 1], np.int64)
    occ = 10 + np.arange(ls.size, dtype=np.int64)
    whole = assemble(1, list(arrival_sections(occ, ls, np.zeros(ls.size, np.int64))), ("empty",))
    got = list(arrival_batches(ls, 10, size))
    assert max(b.kinds.size for b in got) <= size
    assert [e for b in got for e in b.events()] == list(whole.events())
    kept = list(arrival_batches(ls, 10, size, empty=False))
    assert [e for b in kept for e in b.events()] == list(whole.events())[: ls.size]  # arrivals, no Filtered
