"""Schedules against their written-out formulas; the replay's expected targets against the peers' figures."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from packing_theory.engine.consumers import feed_all
from packing_theory.errors import InputError
from packing_theory.peers import FigureAccumulator
from packing_theory.registry import build_packer
from packing_theory.training import Schedule, iter_steps, merge_ledgers
from packing_theory.training.format import ROW_DTYPE, SPAN_DTYPE, LedgerWriter
from packing_theory.training.schedule import ExpectedRows, target_unit
from tests.training.simulate import random_docs, replay_rows, run_ledger, step_batches

DOCS = random_docs(120, seed=4, low=2, high=50)


def test_deals() -> None:
    """Blocks (Megatron's sampler, accelerate's sharding) and interleaved (DistributedSampler)."""
    W, b = 3, 2
    blocks = Schedule(world_size=W, rows_per_step=b)
    inter = Schedule(world_size=W, rows_per_step=b, deal="interleaved")
    seen_blocks, seen_inter = [], []
    for step in range(4):
        for rank in range(W):
            seen_blocks += blocks.rows(step, rank)
            seen_inter += inter.rows(step, rank)
    assert sorted(seen_blocks) == sorted(seen_inter) == list(range(4 * W * b))
    # DistributedSampler(shuffle=False): rank r's indices are r, r + W, ...; b of them per step
    for rank in range(W):
        mine = list(range(rank, 4 * W * b, W))
        assert [r for s in range(4) for r in inter.rows(s, rank)] == mine
    assert blocks.rows(1, 2) == [10, 11]
    perm = np.random.default_rng(0).permutation(30)
    shuffled = Schedule(world_size=W, rows_per_step=b, permutation=perm)
    assert shuffled.rows(1, 2) == [int(perm[10]), int(perm[11])]
    assert shuffled.rows(5, 2, total=30) == [] and shuffled.max_row(1) == int(perm[:12].max()) + 1


def test_bad_schedules() -> None:
    with pytest.raises(InputError, match="deal must be one of blocks, interleaved, got 'round'"):
        Schedule(deal="round")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="rows_per_step must be >= 1, got 0"):
        Schedule(rows_per_step=0)
    with pytest.raises(InputError, match="permutation must be a 1-D array of row indices"):
        Schedule(permutation=[[1, 2]])


@pytest.mark.parametrize(("policy", "options"), [
    ("trl-bfd", {}), ("trl-wrapped", {}), ("megatron-gpt", {"num_samples": 50}),
    ("nemo-first_fit_decreasing", {}), ("discard", {"min_buffer": 8, "refill": 4}),
])
def test_expected_targets_follow_the_trainer_rule(policy: str, options: dict[str, Any]) -> None:
    """Per document, the replay's targets equal the peers' own figures (FigureAccumulator)."""
    capacity = 64  # NeMo has no slot for a document longer than its pack size
    packer = build_packer(policy, capacity, **options)
    lengths = DOCS.lengths()
    expected = ExpectedRows(packer.events(lengths), packer.capacity, target_unit(packer), 10**9, len(DOCS))
    expected._check()
    _, tgt = expected.per_document(len(DOCS), range(expected.total_rows))
    rule = packer.rule() if hasattr(packer, "rule") else None
    if rule is None:
        assert target_unit(packer) == "row"
        return
    acc = FigureAccumulator(rule, capacity=packer.capacity)
    feed_all(build_packer(policy, capacity, **options).events(lengths), acc)
    occ_lengths, occ_targets = acc.occurrence_targets()
    by_length: dict[int, list[int]] = {}
    for n, t in zip(occ_lengths, occ_targets, strict=True):
        by_length.setdefault(n, []).append(t)
    mine: dict[int, list[int]] = {}
    for d in np.flatnonzero(tgt).tolist():
        mine.setdefault(int(lengths[d]), []).append(int(tgt[d]))
    assert sum(occ_targets) == int(tgt.sum())
    assert {k: sorted(t for t in v if t) for k, v in by_length.items() if any(v)} == {
        k: sorted(v) for k, v in mine.items()}


def test_merge_two_ranks() -> None:
    rows = replay_rows("trl-bfd", DOCS, 32)
    sched = Schedule(world_size=2, rows_per_step=2)
    r0, _ = run_ledger(DOCS, step_batches(rows, DOCS, 32, sched, 0, range(6)), rank=0, world_size=2)
    r1, _ = run_ledger(DOCS, step_batches(rows, DOCS, 32, sched, 1, range(6)), rank=1, world_size=2)
    out = io.BytesIO()
    meta = merge_ledgers([r1, r0], out, chunk_spans=5)
    assert meta["ranks"] == [0, 1] and "rank" not in meta
    merged = [(r.step, r.rank, r.spans.tolist()) for r in iter_steps(out)]
    assert merged == [(r.step, r.rank, r.spans.tolist()) for r in iter_steps([r0, r1])]
    assert [(s, k) for s, k, _ in merged] == [(s, k) for s in range(6) for k in range(2)]
    with pytest.raises(InputError, match=r"a rank appears in two ledgers: ranks \[0, 0\]"):
        merge_ledgers([r0, r0], io.BytesIO())
    other, _ = run_ledger(random_docs(5, seed=9), iter(()))
    with pytest.raises(InputError, match="ledger 1 was written against another corpus"):
        merge_ledgers([r0, other], io.BytesIO())


def test_records_out_of_order_are_refused() -> None:
    buf = io.BytesIO()
    w = LedgerWriter(buf, {"rank": 0})
    rows = np.zeros(2, ROW_DTYPE)
    rows["step"] = [3, 1]
    w.append(rows, np.zeros(0, SPAN_DTYPE))
    w.close()
    with pytest.raises(InputError, match="step 1 of rank 0 follows step 3 of rank 0"):
        list(iter_steps(buf))
    with pytest.raises(InputError, match="step 3 of rank 0 is recorded twice"):
        twice = io.BytesIO()
        w = LedgerWriter(twice, {"rank": 0})
        rows = np.zeros(1, ROW_DTYPE)
        rows["step"] = 3
        w.append(rows, np.zeros(0, SPAN_DTYPE))
        w.close()
        list(iter_steps([twice, io.BytesIO(twice.getvalue())]))
