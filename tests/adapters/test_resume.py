"""Exact resume of the record stream: stop at a random row, resume from JSON, get the same rows and audit."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.adapters import LoaderState, PackedStream, RemainderTracker
from packing_theory.corpus import write_shard
from packing_theory.corpus.cursor import ShardDocuments
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.policies import POLICIES
from packing_theory.invariant import strategies as pst
from packing_theory.peers import peer_policies
from packing_theory.testing import scaled_examples
from tests.adapter_peers import TEST_PEERS

PEERS = {**TEST_PEERS, **peer_policies()}
FAMILY = [*POLICIES, *TEST_PEERS]
INSTALLED_PEERS = sorted(peer_policies())  # the frameworks' peers: fewer examples each, there are many


def docs_for(lengths: list[int]) -> TokenDocuments:
    return TokenDocuments.from_lists(
        [[1000 + s] + [s * 100 + j for j in range(1, n)] for s, n in enumerate(lengths)]
    )


def stream(store: Any, policy: str, R: int, B: int, passes: int, seed: int, **kw: Any) -> PackedStream:
    if policy in POLICIES:
        return PackedStream(
            store,
            policy=policy,
            capacity=R,
            min_buffer=B,
            refill=2,
            passes=passes,
            seed=seed,
            exhausted="drain",
            **kw,
        )
    if policy in TEST_PEERS:
        return PackedStream(store, policy=PEERS[policy](R), passes=passes, min_buffer=B, **kw)
    return PackedStream(store, policy=policy, capacity=R, passes=passes, min_buffer=B, **kw)


def rows_of(s: PackedStream) -> list[list[int]]:
    return [row for b in s for row in b.input_ids.tolist()]


RESUME_CASES = {
    "data": st.data(),
    "R": st.integers(2, 9),
    "B": st.integers(1, 4),
    "passes": st.integers(1, 2),
    "seed": st.integers(0, 50),
    "embed": st.sampled_from(["none", "ledger", "both"]),
    "batch_rows": st.integers(1, 3),
    "light": st.booleans(),
}


@pytest.mark.parametrize("policy", FAMILY)
@settings(max_examples=scaled_examples(25), deadline=None)
@given(**RESUME_CASES)
def test_resume_at_a_random_row(
    policy: str,
    data: st.DataObject,
    R: int,
    B: int,
    passes: int,
    seed: int,
    embed: str,
    batch_rows: int,
    light: bool,
) -> None:
    resume_case(policy, data, R, B, passes, seed, embed, batch_rows, light)


@pytest.mark.parametrize("policy", INSTALLED_PEERS)
@settings(max_examples=scaled_examples(8), deadline=None)
@given(**RESUME_CASES)
def test_resume_at_a_random_row_installed_peers(
    policy: str,
    data: st.DataObject,
    R: int,
    B: int,
    passes: int,
    seed: int,
    embed: str,
    batch_rows: int,
    light: bool,
) -> None:
    resume_case(policy, data, R, B, passes, seed, embed, batch_rows, light)


def resume_case(
    policy: str,
    data: st.DataObject,
    R: int,
    B: int,
    passes: int,
    seed: int,
    embed: str,
    batch_rows: int,
    light: bool,
) -> None:
    lengths = data.draw(
        pst.arrival_streams(capacity=R, min_size=1, max_size=30, max_value=3 * R), label="lengths"
    )
    store = docs_for(lengths)
    kw: dict[str, Any] = {"batch_rows": batch_rows}
    if embed != "none":
        kw["ledger"] = True
    if embed == "both":
        kw["monitor"] = "record"
    try:
        full = stream(store, policy, R, B, passes, seed, **kw)
        expected = rows_of(full)
    except ValueError:  # an input a peer's own contract rejects is not a test case
        if policy in POLICIES:
            raise
        assume(False)
    full_audit = full.finish().to_dict() if embed != "none" else None
    k = data.draw(st.integers(0, len(expected)), label="stop after row")
    first = stream(store, policy, R, B, passes, seed, **kw)
    head: list[list[int]] = []
    while len(head) < k:
        batch = first.next_batch(min(batch_rows, k - len(head)))
        assert batch is not None
        head += batch.input_ids.tolist()
    saved = first.state(light=light)
    text = saved.to_json()
    assert LoaderState.from_json(text) == saved and LoaderState.from_bytes(saved.to_bytes()) == saved
    # the interrupted run itself continues unchanged after handing out its state
    assert head + rows_of(first) == expected
    resumed = stream(store, policy, R, B, passes, seed, resume=LoaderState.from_json(text), **kw)
    assert resumed.rows == k
    assert head + rows_of(resumed) == expected
    if full_audit is not None:
        assert resumed.finish().to_dict() == full_audit
        if embed == "both":
            assert resumed.monitor_report() == full.monitor_report()


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=scaled_examples(25), deadline=None)
@given(case=pst.replay_cases(policies=POLICIES, max_docs=40, budgets=False), data=st.data())
def test_audit_at_a_cut_equals_a_budgeted_replay(
    policy: str, case: tuple[list[int], pt.PackerConfig], data: st.DataObject
) -> None:
    lengths, config = case
    config = pt.PackerConfig(
        capacity=config.capacity,
        min_buffer=config.min_buffer,
        refill=config.refill,
        policy=policy,
        passes=config.passes,
        seed=config.seed,
        exhausted=config.exhausted,
    )
    total = list(pt.Packer(config).events(lengths))[-1].rows  # type: ignore[union-attr]
    k = data.draw(st.integers(0, total), label="rows")
    s = PackedStream(docs_for(lengths), policy=pt.Packer(config), batch_rows=1, ledger=True, monitor="record")
    while s.rows < k:
        s.next_batch()
    got = s.finish()
    led = pt.Ledger.for_packer(config)
    mon = pt.InvariantMonitor.for_packer(config)
    budget = pt.PackerConfig(**{**{f: getattr(config, f) for f in config.__dataclass_fields__}, "rows": k})
    for ev in pt.Packer(budget).events(lengths):
        led.feed(ev)
        mon.feed(ev)
    want = led.result()
    if want.stop_reason == "rows":  # the budgeted replay stops at the same boundary
        assert got.to_dict() == want.to_dict()
        assert s.monitor_report() == mon.result()
    assert got.mass.identity_holds


def test_resume_refuses_another_corpus_or_policy() -> None:
    lengths = [5, 3, 9, 4, 6, 2, 7, 8, 3, 3, 6]
    store = docs_for(lengths)
    s = PackedStream(store, capacity=8, min_buffer=2, refill=2, batch_rows=2)
    next(s)
    state = s.state()
    with pytest.raises(ValueError, match="saved over documents"):
        PackedStream(docs_for(lengths[:-1]), capacity=8, min_buffer=2, refill=2, resume=state)
    with pytest.raises(ValueError, match="saved with policy"):
        PackedStream(store, capacity=8, min_buffer=3, refill=2, resume=state)
    with pytest.raises(ValueError, match="not a packing-theory/loader-state"):
        LoaderState.from_json(json.dumps({"format": "x"}))
    with pytest.raises(ValueError, match="not valid JSON"):
        LoaderState.from_json("{")
    doc = json.loads(state.to_json())
    doc["rows"] = -1
    with pytest.raises(ValueError, match="rows must be >= 0"):
        LoaderState.from_json(json.dumps(doc))
    # a state whose replay disagrees (tampered engine state) is refused when the ledger is rebuilt
    s = PackedStream(store, capacity=8, min_buffer=2, refill=2, batch_rows=2, ledger=True)
    next(s)
    good = json.loads(s.state().to_json())
    good["engine"]["next_occurrence"] += 1
    with pytest.raises(ValueError, match="does not reach the saved engine state"):
        PackedStream(
            store,
            capacity=8,
            min_buffer=2,
            refill=2,
            ledger=True,
            resume=LoaderState.from_json(json.dumps(good)),
        )


def test_shard_cursor_round_trips(tmp_path: Any) -> None:
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 30, size=60).tolist()
    docs = [[1, *rng.integers(2, 50, size=n - 1).tolist()] for n in lengths]
    paths = []
    for i in range(4):
        p = os.path.join(tmp_path, f"shard-{i}.bin")
        write_shard(p, docs[i * 15 : (i + 1) * 15], vocab=50)
        paths.append(p)
    shards = ShardDocuments(paths)
    shards._check()
    flat = TokenDocuments.from_lists(docs)
    for p in range(len(docs) + 1):
        s, t = shards.locate(p)
        assert shards.position_of(s, t) == p
        if p < len(docs):
            assert shards[p].tolist() == docs[p] and (s, p - 15 * s) == (p // 15, p % 15)
    with pytest.raises(ValueError, match="not the start of a document"):
        shards.position_of(0, 1 if lengths[0] > 1 else lengths[0] + 1)
    with pytest.raises(ValueError, match="past the last shard"):
        shards.position_of(4, 3)
    for store in (shards, flat):  # one index check serves both collections
        assert store[-1].tolist() == docs[-1] and store[-len(docs)].tolist() == docs[0]
        with pytest.raises(IndexError, match=f"document index 60 out of range for {len(docs)} documents"):
            store[60]
        with pytest.raises(IndexError, match="document index -61 out of range"):
            store[-61]
        with pytest.raises(TypeError, match=r"document index must be an int, got float 1\.0"):
            store[1.0]
    # the same rows from shards and from memory; the state names the shard cursor
    a = PackedStream(shards, capacity=16, min_buffer=4, refill=8, passes=2, batch_rows=3)
    b = PackedStream(flat, capacity=16, min_buffer=4, refill=8, passes=2, batch_rows=3)
    next(a)
    next(b)
    st_a = a.state()
    assert st_a.cursor is not None
    assert (st_a.cursor["shard_index"], st_a.cursor["token_offset"]) == shards.locate(st_a.cursor["position"])
    resumed = PackedStream(shards, capacity=16, min_buffer=4, refill=8, passes=2, batch_rows=3, resume=st_a)
    assert rows_of(resumed) == rows_of(b)
    # a gather across shard boundaries
    got = shards.gather_runs(np.array([14, 15, 59]), np.array([0, 0, 0]), np.array([1, 2, 1]))
    assert got.tolist() == [docs[14][0], *docs[15][:2], docs[59][0]]


def test_remainder_tracker_closes_a_peer_ledger() -> None:
    lengths = [3, 12, 5, 2, 7, 4]
    peer = TEST_PEERS["test-overlap"](5)
    s = PackedStream(docs_for(lengths), policy=peer, batch_rows=1, ledger=True, min_buffer=1)
    next(s)
    next(s)
    agg = s.finish()
    assert agg.mass.identity_holds and agg.rows == 2
    assert agg.mass.buffered_tokens == sum(lengths) - agg.mass.emitted_tokens
    tr = RemainderTracker()
    for ev in [pt.Arrival(0, 0, 0, 10), pt.Placement(0, 0, 0, 0, 2, 3, False, True), pt.Discard(0, 0, 7, 1)]:
        tr.feed(ev)
    assert [(b.start, b.length) for b in tr.result()] == [(0, 2), (5, 2), (8, 2)]


def test_stream_argument_errors() -> None:
    store = docs_for([3, 4])
    with pytest.raises(ValueError, match="needs a capacity"):
        PackedStream(store, policy="discard")
    with pytest.raises(ValueError, match="policy must be one of"):
        PackedStream(store, policy="no-such-policy", capacity=4)
    with pytest.raises(TypeError, match="documents must be a DocumentStore"):
        PackedStream([[1, 2]], capacity=4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="monitor must be"):
        PackedStream(store, capacity=4, monitor="loud")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ledger must be"):
        PackedStream(store, capacity=4, ledger="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="peer_options apply to peer"):
        PackedStream(store, capacity=4, peer_options={"x": 1})
    with pytest.raises(TypeError, match="policy must be a policy name or a packer"):
        PackedStream(store, policy=3.5, capacity=4)
    s = PackedStream(store, capacity=4, min_buffer=1, refill=1)
    with pytest.raises(ValueError, match="needs an embedded ledger"):
        s.finish()
