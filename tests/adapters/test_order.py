"""Source-order controls (seed 000 §5.8): every identity row once, within its block; exact resume."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.adapters import LoaderState, PackedStream
from packing_theory.adapters.order import (
    ORDER_BLOCK,
    ORDERS,
    OrderSpec,
    block_permutation,
    row_keys,
    take_rows,
)
from packing_theory.adapters.order_audit import compare_orders, order_audit
from packing_theory.corpus.documents import TokenDocuments


def docs_for(lengths: list[int]) -> TokenDocuments:
    return TokenDocuments.from_lists([[0] + [(s + 1) * 1000 + j for j in range(1, n)]
                                      for s, n in enumerate(lengths)])


def rows_of(batches: Any) -> list[list[int]]:
    return [row for b in batches for row in b.input_ids.tolist()]


CASES = {
    "lengths": st.lists(st.integers(1, 40), min_size=1, max_size=60),
    "policy": st.sampled_from(["discard", "continue", "segment-first", "requeue-bos"]),
    "R": st.integers(2, 12),
    "B": st.integers(1, 4),
    "batch_rows": st.integers(1, 3),
    "update_rows": st.integers(1, 4),
    "block": st.integers(1, 4),
    "order": st.sampled_from(["sequence-shuffle", "batch-shuffle"]),
    "seed": st.integers(0, 2**32 - 1),
    "budget": st.one_of(st.none(), st.integers(0, 40)),
}


def stream_kw(lengths: list[int], policy: str, R: int, B: int, batch_rows: int,
              budget: int | None) -> dict[str, Any]:
    return {"policy": policy, "capacity": R, "min_buffer": B, "refill": 2, "batch_rows": batch_rows,
            "rows": budget, "exhausted": "drain", "passes": 1}


@given(**CASES)
def test_the_orders_keep_the_multiset_of_rows_of_the_identity_stream(
    lengths: list[int], policy: str, R: int, B: int, batch_rows: int, update_rows: int, block: int,
    order: str, seed: int, budget: int | None,
) -> None:
    docs = docs_for(lengths)
    kw = stream_kw(lengths, policy, R, B, batch_rows, budget)
    spec = OrderSpec(order, block=block, update_rows=update_rows, seed=seed)
    audit = order_audit(docs, order=spec, ledger=True, **kw)
    assert audit.ok and audit.every_row_once and audit.block_local and audit.ledger_equal
    assert audit.ordered_rows == audit.rows
    assert audit.max_budget_edge_rows <= max(0, min(audit.rows, block * update_rows) - 1)
    identity = rows_of(PackedStream(docs, **kw))
    ordered_stream = PackedStream(docs, order=spec, **kw)
    ordered = []
    for b in ordered_stream:
        b._check()
        assert ordered_stream.order is not None
        ordered_stream.order._check()
        ordered += b.input_ids.tolist()
    assert Counter(map(tuple, identity)) == Counter(map(tuple, ordered))
    K = block * update_rows
    for b0 in range(0, len(identity), K):  # inclusion changes only inside a block
        assert sorted(identity[b0 : b0 + K]) == sorted(ordered[b0 : b0 + K])
    if order == "batch-shuffle":  # each complete update keeps its rows, in order
        units = Counter(tuple(map(tuple, identity[i : i + update_rows]))
                        for b0 in range(0, len(identity), K)
                        for i in range(b0, min(b0 + K, len(identity)) - update_rows + 1, update_rows))
        got = Counter(tuple(map(tuple, ordered[i : i + update_rows]))
                      for b0 in range(0, len(ordered), K)
                      for i in range(b0, min(b0 + K, len(ordered)) - update_rows + 1, update_rows))
        assert units == got


@given(**CASES, data=st.data(), light=st.booleans(), embed=st.booleans())
def test_resume_inside_a_block_is_exact(
    lengths: list[int], policy: str, R: int, B: int, batch_rows: int, update_rows: int, block: int,
    order: str, seed: int, budget: int | None, data: st.DataObject, light: bool, embed: bool,
) -> None:
    docs = docs_for(lengths)
    kw = {**stream_kw(lengths, policy, R, B, batch_rows, budget), "ledger": embed or None,
          "monitor": "record" if embed else None}
    spec = OrderSpec(order, block=block, update_rows=update_rows, seed=seed)
    full = PackedStream(docs, order=spec, **kw)
    want = [b.input_ids.tolist() for b in full]
    cut = data.draw(st.integers(0, len(want)), label="batches before the checkpoint")
    first = PackedStream(docs, order=spec, **kw)
    head = [next(first).input_ids.tolist() for _ in range(cut)]
    saved = LoaderState.from_json(first.state(light=light).to_json())
    assert saved.extra["order"]["spec"] == spec.to_dict()
    again = PackedStream(docs, order=spec, resume=saved, **kw)
    assert again.batches == first.batches == cut
    tail = [b.input_ids.tolist() for b in again]
    assert head + tail == want
    if embed:  # the resumed run's audit is the uninterrupted one
        assert again.finish().to_dict() == full.finish().to_dict()


def test_seed_000_sizes_and_the_permutations() -> None:
    assert ORDERS == ("identity", "sequence-shuffle", "batch-shuffle") and ORDER_BLOCK == 16
    spec = OrderSpec("sequence-shuffle", update_rows=256)
    assert spec.block_rows == 4096  # 16 updates of 256 rows (microbatch 64 x 4 accumulation steps)
    # 953 updates: 59 full blocks and a last block of 9 updates, permuted within itself
    last = block_permutation("batch-shuffle", 9 * 256, update_rows=256, seed=0, block_index=59)
    assert sorted(last.tolist()) == list(range(9 * 256))
    assert all((last[u * 256 : (u + 1) * 256] % 256 == np.arange(256)).all() for u in range(9))
    seq = block_permutation("sequence-shuffle", 4096, update_rows=256, seed=0, block_index=0)
    # sequence shuffle changes row membership: no update keeps its 256 rows
    assert all(len(set(seq[u * 256 : (u + 1) * 256] // 256)) > 1 for u in range(16))
    assert np.array_equal(seq, block_permutation("sequence-shuffle", 4096, update_rows=256, seed=0,
                                                 block_index=0))
    assert not np.array_equal(seq, block_permutation("sequence-shuffle", 4096, update_rows=256, seed=0,
                                                     block_index=1))
    tail = block_permutation("batch-shuffle", 7, update_rows=3, seed=1, block_index=0)
    assert tail[-1] == 6  # a trailing partial update stays last
    assert block_permutation("identity", 5, update_rows=2, seed=0, block_index=3).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="order must be one of"):
        OrderSpec("shuffle")
    with pytest.raises(ValueError, match="block must be >= 1"):
        OrderSpec("batch-shuffle", block=0)
    with pytest.raises(ValueError, match="not resolved"):
        _ = OrderSpec("batch-shuffle").block_rows


def test_the_audit_says_so_and_a_broken_order_is_caught() -> None:
    docs = docs_for([int(v) for v in np.random.default_rng(0).integers(1, 30, 200)])
    kw = {"capacity": 8, "min_buffer": 3, "refill": 2, "batch_rows": 2, "rows": 45}
    spec = OrderSpec("sequence-shuffle", block=4, update_rows=2, seed=7)  # 8-row blocks; 45 = 5 x 8 + 5
    audit = order_audit(docs, order=spec, **kw)
    assert audit.ok and audit.rows == 45 and audit.blocks == 6 and audit.ledger_equal is None
    assert 0 < audit.max_budget_edge_rows <= 7 and audit.moved_rows > 0
    assert "exactly once" in audit.statement and "budget edge" in audit.statement
    assert audit.to_dict()["ok"] is True
    s = PackedStream(docs, order=spec, ledger=True, **kw)
    next(s)
    with pytest.raises(ValueError, match="closes only at a block boundary"):
        s.finish()
    for _ in s:
        pass
    doc = s.audit()  # the stream's own audit names the order and the rows it yielded
    assert doc["order"]["order"] == "sequence-shuffle" and doc["order"]["rows_yielded"] == 45
    assert doc["order"]["block_rows_remaining"] == 0 and doc["rows"] == 45 and "ledger" in doc
    assert PackedStream(docs, **kw).audit()["order"] is None
    # the comparison catches a row yielded in another block, a lost row and a repeated row
    ident = PackedStream(docs, **kw)
    keys = [k for b in ident for k in row_keys(b)]
    assert compare_orders(keys, keys, spec).ok
    swapped = keys[:]
    swapped[0], swapped[9] = swapped[9], swapped[0]  # rows of blocks 0 and 1 exchanged
    bad = compare_orders(keys, swapped, spec)
    assert bad.every_row_once and not bad.block_local and not bad.ok and "does NOT" in bad.statement
    assert not compare_orders(keys, keys[:-1], spec).every_row_once
    assert not compare_orders(keys, [*keys[:-1], keys[0]], spec).every_row_once
    with pytest.raises(ValueError, match="identity stream itself"):
        order_audit(docs, order="identity", **kw)


def test_resume_refuses_another_order() -> None:
    docs = docs_for(list(range(1, 40)))
    kw = {"capacity": 6, "min_buffer": 2, "refill": 1, "batch_rows": 2}
    shuffled = PackedStream(docs, order=OrderSpec("batch-shuffle", block=3, seed=1), **kw)
    next(shuffled)
    saved = shuffled.state()
    with pytest.raises(ValueError, match="saved with order"):
        PackedStream(docs, order=OrderSpec("batch-shuffle", block=3, seed=2), resume=saved, **kw)
    with pytest.raises(ValueError, match="this stream has the identity order"):
        PackedStream(docs, resume=saved, **kw)
    plain = PackedStream(docs, **kw)
    next(plain)
    with pytest.raises(ValueError, match="saved by an identity-order stream"):
        PackedStream(docs, order="sequence-shuffle", resume=plain.state(), **kw)
    broken = LoaderState.from_json(json.dumps({**json.loads(saved.to_json()),
                                               "extra": {"order": {**saved.extra["order"], "offset": -1}}}))
    with pytest.raises(ValueError, match="malformed order state"):
        PackedStream(docs, order=OrderSpec("batch-shuffle", block=3, seed=1), resume=broken, **kw)
    with pytest.raises(TypeError, match="order must be an order name or an OrderSpec"):
        PackedStream(docs, order=3, **kw)  # type: ignore[arg-type]


def test_take_rows_keeps_the_records() -> None:
    docs = docs_for([5, 9, 3, 12, 7, 4, 8])
    batch = next(PackedStream(docs, capacity=6, min_buffer=2, refill=1, batch_rows=5, policy="continue"))
    perm = [3, 0, 4, 1, 2]
    got = take_rows(batch, perm)
    got._check()
    for new, old in enumerate(perm):
        assert got.input_ids[new].tolist() == batch.input_ids[old].tolist()
        assert got.mask[new].tolist() == batch.mask[old].tolist()
        assert got.segment_ids[new].tolist() == batch.segment_ids[old].tolist()
        assert got.position_ids[new].tolist() == batch.position_ids[old].tolist()
    with pytest.raises(ValueError, match="must not repeat"):
        take_rows(batch, [0, 0])
    with pytest.raises(ValueError, match="row indices of the 5-row batch"):
        take_rows(batch, [5])


def test_a_directly_resumed_stream_saves_its_state_again() -> None:
    # without a ledger or monitor a stream resumes from the engine state directly; its next state() used to
    # compare the engine run's own event count with the absolute one and fail
    rng = np.random.default_rng(0)
    docs = docs_for([int(v) for v in rng.integers(1, 40, 300)])
    kw = {"policy": "discard", "capacity": 16, "min_buffer": 4, "refill": 2, "batch_rows": 2}
    s = PackedStream(docs, **kw)
    next(s)
    r = PackedStream(docs, resume=LoaderState.from_json(s.state().to_json()), **kw)
    for _ in range(3):
        assert next(r).input_ids.tolist() == next(s).input_ids.tolist()
        assert r.state() == s.state()
    end = PackedStream(docs_for([2]), policy="discard", capacity=2, min_buffer=1, batch_rows=1,
                       exhausted="drain")
    next(end)
    again = PackedStream(docs_for([2]), policy="discard", capacity=2, min_buffer=1, batch_rows=1,
                         exhausted="drain", resume=end.state())
    assert again.state() == end.state() and list(again) == []
