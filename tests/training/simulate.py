"""A numpy-only trainer for the ledger's tests: replay rows dealt to steps and ranks, as batches.

The rows come from the library's replay and :func:`packing_theory.adapters.pack_rows`;
the batches are dicts shaped like a Hugging Face collator's output (``hf``), TRL's
padding-free flattening (``padding_free``: one row per micro-batch, position ids restart
per sequence, the label of each sequence start ignored), or the shifted
``(inputs, targets)`` of nanochat (``shifted``: targets are the row's next tokens, none masked).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from packing_theory.adapters import PackedBatch, pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.rows import group_rows
from packing_theory.registry import build_packer
from packing_theory.training import Schedule, TrainingLedger


def random_docs(n: int, *, seed: int = 0, low: int = 2, high: int = 30, vocab: int = 5000) -> TokenDocuments:
    """``n`` documents of ``low .. high - 1`` tokens: BOS 0 then ids drawn from ``1 .. vocab - 1``."""
    rng = np.random.default_rng(seed)
    return TokenDocuments.from_lists(
        [[0, *rng.integers(1, vocab, size=int(m) - 1).tolist()] for m in rng.integers(low, high, size=n)])


def replay_rows(policy: str, docs: TokenDocuments, capacity: int, **options: Any) -> list[list[Any]]:
    """The replay's rows, indexed by row number."""
    packer = build_packer(policy, capacity, **options)
    rows = {int(r[0].row): r for r in group_rows(packer.events(docs.lengths()), packer.capacity)}
    return [rows[i] for i in range(len(rows))]


def padding_free(batch: PackedBatch) -> dict[str, np.ndarray]:
    """TRL's padding-free view of a batch: its rows' tokens concatenated, padding dropped."""
    keep = batch.segment_ids.reshape(-1) > 0
    ids = batch.input_ids.reshape(-1)[keep]
    seg = batch.segment_ids.reshape(-1)[keep]
    row = np.repeat(np.arange(batch.n_rows), batch.capacity)[keep]
    new = np.r_[True, (seg[1:] != seg[:-1]) | (row[1:] != row[:-1])]
    starts = np.flatnonzero(new)
    pos = np.arange(ids.size) - np.repeat(starts, np.diff(np.r_[starts, ids.size]))
    labels = np.where(pos == 0, -100, ids)
    return {"input_ids": ids[None], "labels": labels[None], "position_ids": pos[None]}


def doc_offsets(batch: PackedBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per row position, the document (-1: padding) and its offset in the document (a BOS inserted: 0)."""
    doc = np.full(batch.input_ids.size, -1, dtype=np.int64)
    off = np.zeros(batch.input_ids.size, dtype=np.int64)
    for row, offset, kind, _, src, start, length, bos in batch.pieces.tolist():
        if kind == 2:
            continue
        at = row * batch.capacity + offset
        doc[at : at + length] = src
        off[at : at + length] = np.arange(start - bos, start - bos + length)
        if bos:
            off[at] = 0
    return doc.reshape(batch.input_ids.shape), off.reshape(batch.input_ids.shape)


def batch_of(batch: PackedBatch, layout: str, prompt: np.ndarray | None = None) -> Any:
    """The batch as the model would receive it in ``layout``.

    ``prompt[d]``: the first ``prompt[d]`` tokens of document ``d`` are a prompt whose labels
    are ignored (``hf`` only), as a completion-only SFT collator does.
    """
    if layout == "hf":
        f = batch.fields("row")
        labels = f["labels"].copy()
        if prompt is not None:
            doc, off = doc_offsets(batch)
            labels[(doc >= 0) & (off < prompt[np.maximum(doc, 0)])] = -100
        return {"input_ids": f["input_ids"], "labels": labels, "position_ids": f["position_ids"],
                "attention_mask": (f["segment_ids"] > 0).astype(np.int64)}
    if layout == "padding_free":
        return padding_free(batch)
    if layout == "shifted":  # nanochat: inputs = row[:-1], targets = row[1:], nothing masked
        f = batch.fields("shifted")
        return f["input_ids"], f["targets"]
    raise ValueError(layout)


def step_batches(rows: list[list[Any]], docs: TokenDocuments, capacity: int, schedule: Schedule, rank: int,
                 steps: range, *, layout: str = "hf", micro: int = 1, prompt: np.ndarray | None = None,
                 source: Callable[[int], int] | None = None) -> Iterator[tuple[int, list[Any]]]:
    """``(step, micro-batches)`` of one rank: ``source(step)`` is the step whose rows it draws (faults)."""
    for step in steps:
        drawn = step if source is None else source(step)
        want = schedule.rows(drawn, rank, len(rows))
        if not want:
            return
        per = max(1, len(want) // micro)
        parts = [want[i : i + per] for i in range(0, len(want), per)]
        yield step, [batch_of(pack_rows([rows[r] for r in part], docs, capacity), layout, prompt)
                     for part in parts]


def run_ledger(docs: TokenDocuments, batches: Iterator[tuple[int, list[Any]]], *, rank: int = 0,
               world_size: int = 1, ignore_index: int = -100, check: bool = False,
               state: dict[str, Any] | None = None,
               edit: Callable[[int, Any], Any] | None = None) -> tuple[io.BytesIO, TrainingLedger]:
    """Feed ``batches`` to a fresh ledger (``edit(step, batch)`` may change a batch: a collator fault)."""
    buf = io.BytesIO()
    ledger = TrainingLedger(buf, docs, rank=rank, world_size=world_size, ignore_index=ignore_index, k=4,
                            stride=4, chunk_spans=64)
    if state is not None:
        ledger.load_state_dict(state)
    for step, micro in batches:
        for b in micro:
            ledger.observe(b if edit is None else edit(step, b))
            if check:
                ledger._check()
        ledger.end_step(step)
        if check:
            ledger._check()
    ledger.close()
    return buf, ledger
