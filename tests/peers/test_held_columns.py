"""What an offline peer's columnar stream holds while it emits its rows: int32 ids where they fit, int64 only
for token offsets (the rows past a horizon are built while the measurement holds its own state)."""

from __future__ import annotations

from types import FrameType
from typing import Any

import numpy as np
import pytest

from packing_theory import build_packer
from packing_theory.peers.megatron import INDEX_BUDGET, index_dtype

N = 3000
LENGTHS = np.random.default_rng(1).lognormal(4, 1.2, N).astype(np.int64) + 1


def _held(frame: FrameType | None) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays of ``frame`` (its closure's too) with at least one value per document."""
    assert frame is not None
    return {k: v for k, v in frame.f_locals.items() if isinstance(v, np.ndarray) and v.size >= N // 2}


def _rows_started(g: Any) -> None:
    """Read ``g`` up to its first batch of rows (after every arrival)."""
    arrived = 0
    while True:
        b = next(g)
        arrived += b.arrival.occurrence.size
        if b.placement.occurrence.size:
            assert arrived >= N
            return


def test_index_dtype_widens_past_int32_at_the_bound() -> None:
    assert index_dtype(0) is np.int32 and index_dtype(2**31 - 1) is np.int32
    assert index_dtype(2**31) is np.int64
    assert INDEX_BUDGET <= 2**31 - 1  # so Megatron's document, occurrence and sample ids are int32


@pytest.mark.parametrize("num_samples", [None, 8000])  # one epoch; two (occurrence ids past the documents)
def test_megatron_holds_its_ids_int32_and_only_its_starts_int64(num_samples: int | None) -> None:
    packer = build_packer("megatron-gpt", capacity=65, num_samples=num_samples)
    g = packer.batches(LENGTHS, 64, compiled=False)
    _rows_started(g)
    held = _held(g.gi_frame)
    wide = {k for k, v in held.items() if v.dtype.itemsize > 4}
    assert wide == {"starts", "sizes", "lengths"}, {k: v.dtype for k, v in held.items()}
    assert np.shares_memory(held["sizes"], LENGTHS)  # the caller's lengths, not a copy
    ids = g.gi_frame.f_locals
    assert {ids[k].dtype.name for k in ("docs", "occ_of", "order", "when")} == {"int32"}
    if num_samples is not None:
        assert int(held["occ_of"].max()) >= N  # a later epoch's occurrences are in it


def test_the_wrapped_rows_hold_their_ids_int32_and_no_start_per_document() -> None:
    g = build_packer("torchtune-split", capacity=64).batches(LENGTHS, 64, compiled=False)
    _rows_started(g)
    sections = g.gi_frame.f_locals["rows_sections"]
    held = _held(sections.gi_frame)
    assert {k for k, v in held.items() if v.dtype.itemsize > 4} == {"ls"}, held.keys()
    closure = sections.gi_frame.f_locals
    assert "t0" not in closure and closure["block_t0"].size < N // 2  # a start per block, not per document
    assert held["occ"].dtype == np.int32 and closure["window"].size == 0  # one window: no window column
    assert "occ" not in _held(g.gi_frame)  # the peer's own int64 ids went with the arrivals


def test_axolotl_holds_its_kept_and_emitted_documents_int32() -> None:
    g = build_packer("axolotl-multipack", capacity=256).batches(LENGTHS, 64, compiled=False)
    _rows_started(g)
    plan = g.gi_yieldfrom  # multipack_batches
    held = _held(plan.gi_frame)
    wide = {k for k, v in held.items() if v.dtype.itemsize > 4}
    assert wide == {"ls"}, {k: v.dtype for k, v in held.items()}
    assert np.shares_memory(held["ls"], LENGTHS)
    assert held["kept"].dtype == np.int32
    assert all(e.dtype == np.int32 for e in plan.gi_frame.f_locals["emitted"])


@pytest.mark.parametrize("name", ["olmo-fragment", "olmo-truncate"])
def test_olmo_holds_its_occurrences_int32_and_no_lengths_rows_or_starts_per_piece(name: str) -> None:
    g = build_packer(name, capacity=64).batches(LENGTHS, 64, compiled=False)
    _rows_started(g)
    assert not {"occ", "window", "p_occ"} & set(g.gi_frame.f_locals)  # one source group: planned below
    plan = g.gi_yieldfrom  # the group's batches
    held = _held(plan.gi_frame)
    assert {k for k, v in held.items() if v.dtype.itemsize > 4} == {"values", "ls"}, held.keys()
    assert np.shares_memory(held["ls"], LENGTHS)
    assert np.shares_memory(held["values"], LENGTHS)
    local = plan.gi_frame.f_locals
    pieces = local["pieces"]
    assert held["p_occ"].dtype == np.int32 and held["p_occ"].size == pieces
    # per row its end, not per piece its row; per later fragment its start, not per piece
    assert local["row_end"].dtype == np.int32 and local["row_end"].size == local["rows"] < pieces
    long = LENGTHS > 64
    later = int((-(-LENGTHS[long] // 64) - 1).sum()) if name == "olmo-fragment" else 0
    assert local["cont"].size == local["cont_start"].size == later > 0 or name == "olmo-truncate"
    assert {local["cont"].dtype.name, local["cont_start"].dtype.name} == {"int32"}
    assert set(held) <= {"values", "ls", "p_occ", "row_end", "cont", "cont_start"}  # + a batch's own
    gone = {"p_len", "p_start", "item_row", "row_window", "window", "key", "order", "sizes", "bins", "by_row",
            "items", "doc", "first", "per", "ends"}
    assert not gone & set(local)
