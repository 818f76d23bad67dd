"""The torch adapter: masks, collate, the iterable dataset, drop-in loaders, resume, nll_fn.

Tests needing torch skip with a visible reason when it is absent (CI installs
the CPU wheel, so they run there); the import-hygiene test runs everywhere.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.adapters import PackedStream, doc_mask_from_segments, objective
from packing_theory.corpus.documents import TokenDocuments

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'packing-theory[torch]')")
ta = pytest.importorskip("packing_theory.adapters.torch", reason="the torch adapter needs torch")


def corpus(n: int = 300, seed: int = 0, max_len: int = 60) -> TokenDocuments:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len, size=n)
    return TokenDocuments.from_lists(
        [[0] + [(s + 1) * 1000 + p for p in range(1, int(L))] for s, L in enumerate(lengths)]
    )


def test_sdpa_mask_is_the_document_mask_and_isolates_documents() -> None:
    seg = torch.tensor([[1, 1, 1, 2, 2, 3, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]], dtype=torch.int32)
    mask = ta.sdpa_mask(seg)
    assert mask.shape == (2, 1, 8, 8)
    for b in range(2):
        ref = doc_mask_from_segments(seg[b].numpy())
        pad = seg[b].numpy() == 0
        got = mask[b, 0].numpy()
        assert (got[~pad] == ref[~pad]).all()
        assert all(got[i, i] == 0 and (np.delete(got[i], i) == -np.inf).all() for i in np.flatnonzero(pad))
    # attention over the packed row equals attention over each document alone
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 4, generator=g) for _ in range(3))
    packed = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.isfinite(packed).all()
    for lo, hi in ((0, 3), (3, 5), (5, 6)):
        alone = torch.nn.functional.scaled_dot_product_attention(
            q[:1, :, lo:hi], k[:1, :, lo:hi], v[:1, :, lo:hi], is_causal=True
        )
        assert torch.allclose(packed[:1, :, lo:hi], alone, atol=1e-6)
    with pytest.raises(ValueError, match=r"\(b, n\)"):
        ta.sdpa_mask(torch.zeros(1, 2, 3))


@pytest.mark.skipif(not ta.FLEX_ATTENTION, reason="this torch has no FlexAttention")
def test_flex_block_mask_agrees_with_sdpa() -> None:
    from torch.nn.attention.flex_attention import flex_attention

    seg = torch.tensor([[1] * 40 + [2] * 50 + [3] * 30 + [0] * 8], dtype=torch.int32)
    bm = ta.flex_block_mask(seg)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 128, 16, generator=g) for _ in range(3))
    try:
        flex = flex_attention(q, k, v, block_mask=bm)
    except (RuntimeError, NotImplementedError) as exc:  # pragma: no cover - backend dependent
        pytest.skip(f"flex_attention does not run on this device: {exc}")
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=ta.sdpa_mask(seg))
    assert torch.allclose(flex, sdpa, atol=1e-5)


def test_iterable_dataset_and_collate() -> None:
    docs = corpus()
    ds = ta.PackedIterableDataset(docs, capacity=33, min_buffer=8, refill=4, chunk_rows=5, policy="continue")
    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=ta.collate_packed)
    first = next(iter(loader))
    stream = PackedStream(docs, capacity=33, min_buffer=8, refill=4, policy="continue", batch_rows=4)
    want = next(stream)
    assert (first["input_ids"].numpy() == want.input_ids).all()
    assert (first["labels"].numpy() == want.labels).all()
    assert (first["position_ids"].numpy() == want.position_ids).all()
    assert (first["mask"].numpy() == want.mask.astype(bool)).all()
    assert first["cu_seqlens"].dtype == torch.int32 and (first["cu_seqlens"].numpy() == want.cu_seqlens).all()
    assert first["max_seqlen"] == want.max_seqlen and first["seq_lengths"] == want.seq_lengths
    recs = ta.collate_packed(list(want))
    assert (recs["cu_seqlens"].numpy() == want.cu_seqlens).all()
    with pytest.raises(ValueError, match="examples is empty"):
        ta.collate_packed([])
    bt = ta.batch_tensors(want, "shifted")
    assert bt["input_ids"].shape == (4, 32) and bt["mask"].dtype == torch.bool


@pytest.mark.parametrize("policy", ["discard", "requeue-bos", "segment-first"])
def test_iterable_dataset_resumes_exactly(policy: str) -> None:
    docs = corpus(seed=2)
    kw: dict[str, Any] = {
        "capacity": 25,
        "min_buffer": 6,
        "refill": 3,
        "policy": policy,
        "chunk_rows": 4,
        "rows": 60,
    }
    full = [r["input_ids"].tolist() for r in ta.PackedIterableDataset(docs, **kw)]
    for k in (0, 3, 4, 17, 59):
        ds = ta.PackedIterableDataset(docs, **kw)
        it = iter(ds)
        head = [next(it)["input_ids"].tolist() for _ in range(k)]
        state = json.loads(json.dumps(ds.state_dict()))
        again = ta.PackedIterableDataset(docs, **kw)
        again.load_state_dict(state)
        assert head + [r["input_ids"].tolist() for r in again] == full
    assert ta.PackedIterableDataset(docs, **kw).state_dict() == {"chunk": None, "skip": 0}
    with pytest.raises(ValueError, match="not a PackedIterableDataset state"):
        ta.PackedIterableDataset(docs, **kw).load_state_dict({})


@pytest.mark.parametrize("policy", ["discard", "continue", "random-span"])
def test_drop_in_loaders_resume_exactly(policy: str) -> None:
    docs = corpus(seed=3)
    kw: dict[str, Any] = {"documents": docs, "policy": policy, "device": "cpu", "passes": 3}
    full = ta.make_dataloader(None, 3, 20, "train", 10, **kw)
    expected = [(x.clone(), y.clone(), e) for x, y, e in (next(full) for _ in range(12))]
    a = ta.make_dataloader(None, 3, 20, "train", 10, ledger=True, monitor="record", **kw)
    for _ in range(5):
        next(a)
    saved = json.loads(json.dumps(a.state_dict()))
    b = ta.make_dataloader(None, 3, 20, "train", 10, ledger=True, monitor="record", resume=saved, **kw)
    for want in expected[5:]:
        x, y, e = next(b)
        assert torch.equal(x, want[0]) and torch.equal(y, want[1]) and e == want[2]
    for _ in range(7):
        next(a)
    # the audit of the resumed run is the uninterrupted one
    assert a.finish().to_dict() == b.finish().to_dict()
    # nanochat: every yielded state dict resumes exactly
    n = ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
        None, 3, 20, "train", buffer_size=10, **kw
    )
    batches = [(x.clone(), sd) for x, _, sd in (next(n) for _ in range(8))]
    m = ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
        None, 3, 20, "train", buffer_size=10, resume_state_dict=batches[3][1], **kw
    )
    for want, _ in batches[4:]:
        assert torch.equal(next(m)[0], want)
    with pytest.raises(ValueError, match="written by nanochat's own"):
        ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
            None,
            3,
            20,
            "train",
            device="cpu",
            resume_state_dict={"pq_idx": 0, "rg_idx": 0, "epoch": 1},
            documents=docs,
        )
    plain = ta.tokenizing_distributed_data_loader_bos_bestfit(None, 3, 20, "train", buffer_size=10, **kw)
    assert torch.equal(next(plain)[0], batches[0][0])


def test_drop_in_audit_monitor_and_errors(tmp_path: Any) -> None:
    docs = corpus(seed=4, max_len=90)
    dl = ta.make_dataloader(
        None, 4, 16, "train", 8, documents=docs, device="cpu", ledger=True, monitor="record", passes=2
    )
    for _ in range(6):
        next(dl)
    doc = dl.write_audit(tmp_path / "audit.json")
    assert doc["rows"] == 24 and doc["ledger"]["rows"] == 24 and doc["monitor"]["violations"] == 0
    assert json.loads((tmp_path / "audit.json").read_text())["ledger"]["mass"]["identity_holds"]
    # "raise": the first violation stops the loader (requeue-bos is outside the proposition)
    found = None
    for seed in range(40):
        s = PackedStream(
            corpus(seed=seed, n=200, max_len=90),
            capacity=17,
            min_buffer=6,
            refill=2,
            policy="requeue-bos",
            monitor="record",
            batch_rows=4,
            rows=120,
        )
        for _ in s:
            pass
        if s.monitor is not None and not s.monitor.ok:
            found = seed
            break
    assert found is not None, "no requeue-bos violation found in 40 streams"
    base = corpus(seed=found, n=200, max_len=90)
    raising = ta.make_dataloader(
        None,
        4,
        16,
        "train",
        6,
        documents={"train": TokenDocuments(base.tokens, base.offsets, refill=[2] * 100)},
        policy="requeue-bos",
        monitor="raise",
        device="cpu",
        passes=1,
    )
    with pytest.raises(pt.InvariantViolation):
        for _ in range(30):
            next(raising)
    with pytest.raises(ValueError, match="split must be"):
        ta.make_dataloader(None, 2, 8, "test", documents=docs)
    with pytest.raises(ValueError, match="no entry for split 'val'"):
        ta.make_dataloader(None, 2, 8, "val", documents={"train": docs})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            ta.make_dataloader(None, 2, 8, "train", documents=docs, device="cuda")


def test_default_data_locations(tmp_path: Any, monkeypatch: Any) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow reads the loaders' parquet files")
    import pyarrow.parquet as pq

    class Tok:
        def get_bos_token_id(self) -> int:
            return 0

        def encode(self, texts: list[str], prepend: int, num_threads: int = 0) -> list[list[int]]:
            return [[prepend, *(ord(c) for c in t)] for t in texts]

    rng = np.random.default_rng(5)
    texts = [
        "".join(chr(97 + int(c)) for c in rng.integers(0, 26, size=int(n))) for n in rng.integers(0, 40, 90)
    ]
    auto = tmp_path / ".cache" / "autoresearch" / "data"
    auto.mkdir(parents=True)
    for i, part in enumerate((texts[:50], texts[50:80])):
        pq.write_table(pa.table({"text": part}), auto / f"shard_{i:05d}.parquet", row_group_size=20)
    pq.write_table(pa.table({"text": texts[80:]}), auto / "shard_06542.parquet")
    monkeypatch.setenv("HOME", str(tmp_path))
    dl = ta.make_dataloader(Tok(), 2, 12, "train", 4, device="cpu")
    expected = TokenDocuments.from_lists([[0, *(ord(c) for c in t)] for t in texts[:80]])
    assert (dl.stream.documents.lengths() == expected.lengths()).all()
    assert dl.stream.documents.refill == (20, 20, 10, 20, 10)  # 128-document batches cut at row groups
    ref = PackedStream(
        TokenDocuments.from_lists(
            [[0, *(ord(c) for c in t)] for t in texts[:80]], refill=(20, 20, 10, 20, 10)
        ),
        capacity=13,
        min_buffer=4,
        batch_rows=2,
        passes=ta.INFINITE_PASSES,
    )
    for _ in range(5):
        assert (next(dl)[0].numpy() == next(ref).input_ids[:, :-1]).all()
    val = ta.make_dataloader(Tok(), 1, 12, "val", 2, device="cpu")
    assert len(val.stream.documents) == 10
    # nanochat: $NANOCHAT_BASE_DIR/base_data (legacy fallback), last file = val, DDP row groups
    base = tmp_path / "nano"
    (base / "base_data").mkdir(parents=True)
    for i in range(3):
        pq.write_table(
            pa.table({"text": texts[i * 30 : (i + 1) * 30]}),
            base / "base_data" / f"s{i}.parquet",
            row_group_size=10,
        )
    monkeypatch.setenv("NANOCHAT_BASE_DIR", str(base))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    nl = ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
        Tok(), 2, 12, "train", device="cpu", buffer_size=4
    )
    assert nl.stream.documents.row_groups == ((0, 1, 10), (1, 1, 10))
    _, _, sd = next(nl)
    assert (sd["pq_idx"], sd["rg_idx"]) in ((0, 1), (1, 1))
    monkeypatch.setenv("HOME", str(tmp_path / "nowhere"))
    monkeypatch.delenv("NANOCHAT_BASE_DIR")
    with pytest.raises(FileNotFoundError, match="no data directory"):
        ta.make_dataloader(Tok(), 2, 12, "train", device="cpu")


class TinyLM(torch.nn.Module):
    def __init__(self, vocab: int = 11, dim: int = 8) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, x: Any, segment_ids: Any = None) -> Any:
        h = self.emb(x).cumsum(dim=1)  # causal: position j sees tokens 0..j
        if segment_ids is not None:
            h = h * (segment_ids[..., None] != 0)
        return self.out(h)


def test_nll_fn_and_token_loss() -> None:
    torch.manual_seed(0)
    model = TinyLM().eval()
    fn = ta.nll_fn(model)
    x = np.array([[1, 2, 3, 4], [5, 6, 0, 0]], dtype=np.int64)
    got = fn(x, None)
    assert got.shape == (2, 3) and got.dtype == np.float64
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.from_numpy(x)), -1).numpy()
    for i in range(2):
        for j in range(3):
            assert got[i, j] == pytest.approx(-logp[i, j, x[i, j + 1]], rel=1e-5)
    seg = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=np.int32)
    assert fn(x, seg)[0] == pytest.approx(got[0], rel=1e-5)
    try:
        from packing_theory.evaluation import NllFn  # type: ignore[attr-defined]
    except ImportError:
        pass
    else:  # pragma: no cover - when the evaluation protocol is installed
        assert isinstance(fn, NllFn)
    with pytest.raises(ValueError, match="n >= 2"):
        fn(np.zeros((1, 1), dtype=np.int64), None)
    logits = torch.randn(2, 5, 11)
    labels = torch.tensor([[1, -100, 3, 4, -100], [-100, -100, 2, 2, 2]])
    total, count = ta.token_loss_sum(logits, labels)
    nll = -torch.log_softmax(logits, -1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    assert count.item() == 6
    assert total.item() == pytest.approx(objective(nll.numpy(), (labels != -100).numpy()) * 6, rel=1e-5)


def test_pinned_transfer_on_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the pinned-memory path runs on GPU machines only")
    dl = ta.make_dataloader(None, 2, 16, "train", 4, documents=corpus(), device="cuda", passes=1)
    x, _, _ = next(dl)
    assert x.is_cuda and dl._cpu.is_pinned()
    ref = PackedStream(corpus(), capacity=17, min_buffer=4, batch_rows=2, passes=1)
    assert (x.cpu().numpy() == next(ref).input_ids[:, :-1]).all()
    assert os.environ.get("CUDA_VISIBLE_DEVICES", "") != "-1"


def test_drop_in_loaders_take_the_order_controls_and_resume_inside_a_block() -> None:
    from packing_theory.adapters.order import OrderSpec

    docs = corpus(seed=5)
    kw: dict[str, Any] = {"documents": docs, "device": "cpu", "passes": 1, "rows": 45}
    plain = ta.make_dataloader(None, 3, 20, "train", 10, **kw)
    identity = [x.clone() for x, _, _ in plain]
    assert len(identity) == 15  # the finite stream: 45 rows of 3
    spec = OrderSpec("sequence-shuffle", block=2, update_rows=6, seed=3)  # blocks of 12 rows
    ordered = [x.clone() for x, _, _ in ta.make_dataloader(None, 3, 20, "train", 10, order=spec, **kw)]
    rows = sorted(map(tuple, torch.cat(identity).tolist()))
    assert sorted(map(tuple, torch.cat(ordered).tolist())) == rows  # every row once
    assert torch.cat(ordered).tolist() != torch.cat(identity).tolist()
    a = ta.make_dataloader(None, 3, 20, "train", 10, order=spec, ledger=True, **kw)
    for _ in range(5):  # 15 rows: inside the second block
        next(a)
    saved = json.loads(json.dumps(a.state_dict()))
    b = ta.make_dataloader(None, 3, 20, "train", 10, order=spec, ledger=True, resume=saved, **kw)
    rest = [x.clone() for x, _, _ in b]
    assert torch.equal(torch.cat(rest), torch.cat(ordered[5:]))
    assert b.audit()["order"]["rows_yielded"] == 45
    n = ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
        None, 3, 20, "train", buffer_size=10, order="batch-shuffle", **kw)
    got = [x.clone() for x, _, _ in n]
    assert sorted(map(tuple, torch.cat(got).tolist())) == rows
    # the iterable dataset resumes inside a chunk and a block
    dkw: dict[str, Any] = {"capacity": 21, "min_buffer": 10, "refill": 4, "rows": 45, "chunk_rows": 4,
                           "order": OrderSpec("batch-shuffle", block=3, update_rows=5, seed=1)}
    full = [r["input_ids"].tolist() for r in ta.PackedIterableDataset(docs, **dkw)]
    plain_ds = ta.PackedIterableDataset(docs, **{**dkw, "order": "identity"})
    plain_rows = [r["input_ids"].tolist() for r in plain_ds]
    assert sorted(full) == sorted(plain_rows) and full != plain_rows
    ds = ta.PackedIterableDataset(docs, **dkw)
    it = iter(ds)
    head = [next(it)["input_ids"].tolist() for _ in range(18)]
    again = ta.PackedIterableDataset(docs, **dkw)
    again.load_state_dict(json.loads(json.dumps(ds.state_dict())))
    assert head + [r["input_ids"].tolist() for r in again] == full


def test_drop_in_loaders_exclude_ids_from_the_targets() -> None:
    docs = corpus(seed=6)
    kw: dict[str, Any] = {"documents": docs, "device": "cpu", "passes": 1}
    plain_x, plain_y, _ = next(ta.make_dataloader(None, 4, 24, "train", 10, **kw))
    plain_y = plain_y.clone()
    excluded = (*(int(v) for v in plain_y[0, :3].tolist()), 0)  # three text ids and the BOS
    opts = pt.adapters.RecordOptions(exclude_ids=excluded, ignore_index=-1)
    for loader in (ta.make_dataloader(None, 4, 24, "train", 10, options=opts, **kw),
                   ta.tokenizing_distributed_data_loader_with_state_bos_bestfit(
                       None, 4, 24, "train", buffer_size=10, options=opts, **kw)):
        x, y, _ = next(loader)
        hit = torch.isin(plain_y, torch.tensor(excluded))
        assert hit.any() and (y[hit] == -1).all()
        assert torch.equal(y[~hit], plain_y[~hit]) and torch.equal(x, plain_x)  # inputs keep every id
