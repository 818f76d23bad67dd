"""Two torch DDP processes on CPU (gloo): a ledger per rank, merged, reconciled; a rank with another seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from packing_theory.training import Schedule, merge_ledgers, reconcile
from tests.training.ddp_worker import CAPACITY, corpus, permutation, worker


def _run(folder: Path, seeds: list[int]) -> tuple[list[dict[str, object]], Path]:
    mp = pytest.importorskip("torch.multiprocessing")
    folder.mkdir()
    mp.spawn(worker, args=(2, str(folder), seeds), nprocs=2, join=True)
    merged = folder / "merged.ptl"
    merge_ledgers([folder / "ledger-0.ptl", folder / "ledger-1.ptl"], merged)
    agree = [json.loads((folder / f"agree-{r}.json").read_text()) for r in range(2)]
    return agree, merged


@pytest.mark.slow
def test_two_gloo_ranks_reconcile_and_a_wrong_seed_is_named(tmp_path: Path) -> None:
    docs = corpus()
    sched = Schedule(world_size=2, rows_per_step=2, deal="interleaved", permutation=permutation(7))
    agree, merged = _run(tmp_path / "ok", [7, 7])
    assert all(a["agree"] for a in agree)
    res = reconcile(merged, docs, "trl-bfd", capacity=CAPACITY, schedule=sched, unit="sequence")
    assert res.reconciled and res.records == 12 and res.trained_mismatch == 0, res.headline()
    agree, merged = _run(tmp_path / "bad", [7, 8])
    assert [a["differing"] for a in agree] == [[1], [1]]  # every rank learns that rank 1 differs
    res = reconcile(merged, docs, "trl-bfd", capacity=CAPACITY, schedule=sched, unit="sequence")
    assert res.divergence is not None and (res.divergence.step, res.divergence.rank) == (0, 1)
