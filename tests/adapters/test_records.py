"""Packed records against a brute-force construction, for every policy (streaming and peers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.adapters import (
    PackedBatch,
    PackedStream,
    RecordOptions,
    cu_seqlens_from_segments,
    doc_mask_from_segments,
    make_policy,
    pack_rows,
)
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.events import Padding, Placement
from packing_theory.engine.policies import POLICIES
from packing_theory.engine.rows import group_rows
from packing_theory.invariant import strategies as pst
from packing_theory.peers import peer_policies
from packing_theory.testing import scaled_examples
from tests.adapter_peers import TEST_PEERS

PEERS = {**TEST_PEERS, **peer_policies()}
FAMILY = [*POLICIES, *TEST_PEERS]
INSTALLED_PEERS = sorted(peer_policies())  # the frameworks' peers: fewer examples each, there are many


def synthetic_docs(lengths: list[int]) -> list[list[int]]:
    """Document ``s``: BOS ``1000 + s`` then ids ``s * 100 + j`` (every token says where it came from)."""
    return [[1000 + s] + [s * 100 + j for j in range(1, n)] for s, n in enumerate(lengths)]


def make_packer(policy: str, R: int, B: int, refill: int, passes: int, seed: int) -> Any:
    if policy in POLICIES:
        return pt.Packer(
            capacity=R,
            min_buffer=B,
            refill=refill,
            policy=policy,
            passes=passes,
            seed=seed,
            exhausted="drain",
        )
    return make_policy(policy, capacity=R).packer if policy in peer_policies() else PEERS[policy](R)


def peer_rows(policy: str, packer: Any, lengths: list[int], R: int) -> list[list[Any]]:
    """The packer's complete rows; an input a peer's own contract rejects is not a test case."""
    try:
        return list(group_rows(packer.events(lengths), R))
    except ValueError:
        if policy in POLICIES:
            raise
        assume(False)
        raise


def brute_force(row: list[Any], docs: list[list[int]], R: int, opts: RecordOptions) -> dict[str, Any]:
    """One row's record, position by position, straight from the definitions."""
    ids: list[int] = []
    occ_of: list[int | None] = []
    seg: list[int] = []
    pos: list[int] = []
    m: list[int] = []
    starts: list[int] = []
    seg_id = 0
    prev: tuple[str, int, int] | None = None  # (kind, occurrence, next source offset)
    for ev in row:
        if isinstance(ev, Padding):
            if prev is None or prev[0] != "pad":
                starts.append(len(ids))
                p = 0
            for _ in range(ev.length):
                ids.append(opts.pad_id)
                occ_of.append(None)
                seg.append(0)
                pos.append(p)
                p += 1
                m.append(0)
            prev = ("pad", -1, -1)
            continue
        bos = bool(getattr(ev, "bos_inserted", False))
        doc = docs[ev.source]
        toks = (
            [doc[0], *doc[ev.start : ev.start + ev.length - 1]]
            if bos
            else doc[ev.start : ev.start + ev.length]
        )
        joined = (
            prev is not None
            and prev[0] == "real"
            and prev[1] == ev.occurrence
            and not bos
            and prev[2] == ev.start
        )
        if not joined:
            seg_id += 1
            starts.append(len(ids))
            p = ev.start if opts.continue_positions and not bos and ev.start > 0 else 0
        for j, tok in enumerate(toks):
            ids.append(tok)
            occ_of.append(ev.occurrence)
            seg.append(seg_id)
            pos.append(p)
            p += 1
            if j == 0 and not joined:
                m.append(1 if opts.predict_continuation_start and not bos and ev.start > 0 else 0)
            else:
                m.append(1)
        prev = ("real", ev.occurrence, ev.start + ev.length - (1 if bos else 0))
    assert len(ids) == R
    m[0] = 0
    m = [0 if ids[i] in opts.exclude_ids else v for i, v in enumerate(m)]
    labels = [ids[i] if m[i] else opts.ignore_index for i in range(R)]
    return {"ids": ids, "occ": occ_of, "seg": seg, "pos": pos, "m": m, "labels": labels, "cu": [*starts, R]}


def check_batch(
    batch: PackedBatch, rows: list[list[Any]], docs: list[list[int]], R: int, opts: RecordOptions
) -> None:
    batch._check()
    flat_cu: list[int] = []
    for i, row in enumerate(rows):
        want = brute_force(row, docs, R, opts)
        assert batch.input_ids[i].tolist() == want["ids"]
        assert batch.segment_ids[i].tolist() == want["seg"]
        assert batch.position_ids[i].tolist() == want["pos"]
        assert batch.mask[i].tolist() == want["m"]
        assert batch.labels[i].tolist() == want["labels"]
        assert batch.seq_lengths[i] == np.diff(want["cu"]).tolist()
        flat_cu += [i * R + c for c in want["cu"][:-1]]
        rec = batch.record(i)
        assert rec.cu_seqlens.tolist() == want["cu"] and rec.max_seqlen == max(np.diff(want["cu"]))
        # the document mask: a token attends only to earlier-or-equal tokens of its own segment,
        # hence never across documents
        M = rec.doc_mask()
        allowed = np.argwhere(M == 0)
        for t, s in allowed:
            assert s <= t and want["occ"][t] is not None and want["occ"][t] == want["occ"][s]
            assert want["seg"][t] == want["seg"][s] != 0
        expected_allowed = sum(
            1 for t in range(R) for s in range(t + 1) if want["seg"][t] == want["seg"][s] != 0
        )
        assert len(allowed) == expected_allowed
    assert batch.cu_seqlens.tolist() == [*flat_cu, len(rows) * R]
    assert batch.max_seqlen == (int(np.diff(batch.cu_seqlens).max()) if rows else 0)
    # the shifted (autoresearch) view is the row view cut by one
    sh = batch.shifted()
    assert (sh["input_ids"] == batch.input_ids[:, :-1]).all() and (
        sh["targets"] == batch.input_ids[:, 1:]
    ).all()
    assert (sh["mask"] == batch.mask[:, 1:]).all()
    assert (sh["labels"] == batch.labels[:, 1:]).all()
    if rows:
        assert (sh["cu_seqlens"] == cu_seqlens_from_segments(batch.segment_ids[:, :-1])).all()
    assert batch.n_predicted == int(sh["mask"].sum())


options_strategy = st.builds(
    RecordOptions,
    ignore_index=st.sampled_from([-100, -1]),
    pad_id=st.sampled_from([0, 7]),
    predict_continuation_start=st.booleans(),
    continue_positions=st.booleans(),
    exclude_ids=st.sampled_from([(), (1000, 1001)]),
)


@pytest.fixture(params=["vectorised", "per-run"])
def run_mode(request: Any, monkeypatch: Any) -> str:
    """Both ways of gathering token runs (fancy indexing, slice by slice) must agree."""
    import packing_theory.corpus.documents as documents_module

    monkeypatch.setattr(documents_module, "LONG_RUN", 1 << 30 if request.param == "vectorised" else 1)
    return str(request.param)


RECORD_CASES = {
    "lengths": st.data(),
    "R": st.integers(2, 10),
    "B": st.integers(1, 5),
    "refill": st.integers(1, 3),
    "passes": st.integers(1, 2),
    "seed": st.integers(0, 99),
    "opts": options_strategy,
}
_FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@pytest.mark.parametrize("policy", FAMILY)
@settings(max_examples=scaled_examples(40), deadline=None, suppress_health_check=_FIXTURE_OK)
@given(**RECORD_CASES)
def test_records_match_brute_force(
    policy: str,
    lengths: st.DataObject,
    R: int,
    B: int,
    refill: int,
    passes: int,
    seed: int,
    opts: RecordOptions,
    run_mode: str,
) -> None:
    records_case(policy, lengths, R, B, refill, passes, seed, opts)


@pytest.mark.parametrize("policy", INSTALLED_PEERS)
@settings(max_examples=scaled_examples(12), deadline=None, suppress_health_check=_FIXTURE_OK)
@given(**RECORD_CASES)
def test_records_match_brute_force_installed_peers(
    policy: str,
    lengths: st.DataObject,
    R: int,
    B: int,
    refill: int,
    passes: int,
    seed: int,
    opts: RecordOptions,
    run_mode: str,
) -> None:
    records_case(policy, lengths, R, B, refill, passes, seed, opts)


def records_case(
    policy: str,
    lengths: st.DataObject,
    R: int,
    B: int,
    refill: int,
    passes: int,
    seed: int,
    opts: RecordOptions,
) -> None:
    ls = lengths.draw(
        pst.arrival_streams(capacity=R, min_size=1, max_size=25, max_value=3 * R), label="lengths"
    )
    docs = synthetic_docs(ls)
    if policy.startswith("olmo"):  # OLMo-core's contract: a power-of-two length (else nearly every draw is
        R = 1 << max(1, (R - 1).bit_length())  # refused and hypothesis gives up: filter_too_much)
    try:
        packer = make_packer(policy, R, B, refill, passes, seed)
    except ValueError:  # a capacity a peer's own contract rejects (OLMo-core: powers of two)
        assume(policy in POLICIES)
        raise
    R = packer.capacity  # a peer may build rows of its own length (Megatron: sequence_length + 1)
    rows = peer_rows(policy, packer, ls, R)
    store = TokenDocuments.from_lists(docs)
    batch = pack_rows(rows, store, R, opts)
    check_batch(batch, rows, docs, R, opts)


@settings(max_examples=scaled_examples(30), deadline=None)
@given(case=pst.replay_cases(policies=POLICIES, max_docs=30), batch_rows=st.integers(1, 4))
def test_stream_batches_are_the_engine_rows(case: tuple[list[int], pt.PackerConfig], batch_rows: int) -> None:
    lengths, config = case
    docs = synthetic_docs(lengths)
    store = TokenDocuments.from_lists(docs)
    expected = list(pt.Packer(config).token_rows(docs))
    budget = config.row_budget
    stream = PackedStream(store, policy=pt.Packer(config), batch_rows=batch_rows, rows=budget)
    got = [row for b in stream for row in b.input_ids.tolist()]
    assert got == expected[: len(got)] and len(got) == len(expected)


def test_doc_mask_follows_seed_004() -> None:
    M = doc_mask_from_segments([1, 1, 0, 2, 2])
    assert M[1, 0] == 0 and M[0, 1] == -np.inf  # causal within a segment
    assert M[3, 1] == -np.inf  # document 2 cannot see document 1
    assert (M[2] == -np.inf).all() and (M[:, 2] == -np.inf).all()  # padding: nothing, as defined
    with pytest.raises(ValueError, match="1-D"):
        doc_mask_from_segments([[1]])


def test_bos_inserted_and_continuations() -> None:
    # requeue-bos: the remainder gets an inserted BOS (the document's own first token), masked; the
    # token after it is predicted from it
    docs = [[90, 1, 2, 3, 4, 5, 6, 7], [91, 8]]
    store = TokenDocuments.from_lists(docs)
    packer = pt.Packer(capacity=4, min_buffer=1, refill=1, policy="requeue-bos", exhausted="drain")
    rows = list(group_rows(packer.events(store.lengths()), 4))
    batch = pack_rows(rows, store, 4)
    assert batch.input_ids.tolist()[:2] == [[90, 1, 2, 3], [90, 4, 5, 6]]
    assert batch.mask.tolist()[1] == [0, 1, 1, 1]
    # continue: the suffix starts mid-document; masked by default, predicted with the option
    packer = pt.Packer(capacity=4, min_buffer=2, refill=2, policy="continue", exhausted="drain")
    rows = list(group_rows(packer.events(store.lengths()), 4))
    first = next(p for p in rows[1] if isinstance(p, Placement))
    assert first.start > 0 and not first.bos_inserted and first.offset == 0
    default = pack_rows(rows, store, 4)
    option = pack_rows(
        rows, store, 4, RecordOptions(predict_continuation_start=True, continue_positions=True)
    )
    assert default.position_ids[1, 0] == 0 and option.position_ids[1, 0] == first.start
    assert default.mask[1, 0] == option.mask[1, 0] == 0  # row position 0 is input only either way


def test_rows_must_tile() -> None:
    store = TokenDocuments.from_lists([[1, 2, 3]])
    with pytest.raises(ValueError, match="tile 1 rows of capacity 4"):
        pack_rows([[Placement(0, 0, 0, 0, 0, 3, False, False)]], store, 4)
    with pytest.raises(TypeError, match="Placement, Repeat or Padding"):
        pack_rows([[pt.Arrival(0, 0, 0, 3)]], store, 3)
    with pytest.raises(TypeError, match="ignore_index must be an int"):
        RecordOptions(ignore_index=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exclude_ids must be a tuple"):
        RecordOptions(exclude_ids=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pad_id must be >= 0"):
        RecordOptions(pad_id=-1)
    batch = pack_rows([[Placement(0, 0, 0, 0, 0, 3, False, False)]], store, 3)
    with pytest.raises(ValueError, match="layout must be"):
        batch.fields("columns")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="row must be <= 0"):
        batch.doc_mask(1)


def test_token_documents_validation() -> None:
    with pytest.raises(ValueError, match="docs\\[1\\] must be a non-empty"):
        TokenDocuments.from_lists([[1], []])
    with pytest.raises(ValueError, match="docs is empty"):
        TokenDocuments.from_lists([])
    with pytest.raises(ValueError, match="document 0 is empty"):
        TokenDocuments(np.array([1, 2]), np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="refill batch sizes sum to 3"):
        TokenDocuments.from_lists([[1], [2]], refill=(3,))
    docs = TokenDocuments.from_lists(
        [[1, 2], [3], [4, 5, 6]], refill=(2, 1), row_groups=[(0, 0, 2), (0, 1, 1)]
    )
    docs._check()
    assert [docs.row_group_of(i) for i in range(3)] == [(0, 0), (0, 0), (0, 1)]
    assert [docs.locate(p) for p in range(4)] == [(0, 0), (0, 2), (0, 3), (1, 0)]
    assert [docs.position_of(*docs.locate(p)) for p in range(4)] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="not the start of a document"):
        docs.position_of(0, 1)
    with pytest.raises(ValueError, match="one shard"):
        docs.position_of(2, 0)
    with pytest.raises(IndexError):
        docs[3]
