"""One rank of a 2-process torch DDP run on CPU (gloo), with its own ledger (started by test_ddp.py)."""

from __future__ import annotations

import json
import os
from typing import Any

from packing_theory.adapters import pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.training import TrainingLedger, gather_fingerprints, observe_batches
from tests.training.hf_helpers import token_lists
from tests.training.simulate import replay_rows

CAPACITY = 32
ROWS = 24  # divisible by the world size: DistributedSampler pads nothing


def corpus() -> TokenDocuments:
    return TokenDocuments.from_lists(token_lists(80, seed=3))


def permutation(seed: int, n: int = ROWS) -> list[int]:
    """DistributedSampler's order at epoch 0 (``torch.randperm`` seeded with ``seed + epoch``)."""
    import torch

    g = torch.Generator()
    g.manual_seed(seed)
    return [int(i) for i in torch.randperm(n, generator=g).tolist()]


def worker(rank: int, world: int, folder: str, seeds: list[int]) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{os.path.join(folder, 'store')}", rank=rank,
                            world_size=world)
    try:
        docs = corpus()
        fields = pack_rows(replay_rows("trl-bfd", docs, CAPACITY)[:ROWS], docs, CAPACITY).fields("row")
        data = [{"input_ids": torch.tensor(fields["input_ids"][i]),
                 "labels": torch.tensor(fields["labels"][i]),
                 "attention_mask": torch.tensor((fields["segment_ids"][i] > 0).astype("int64"))}
                for i in range(ROWS)]
        agreement = gather_fingerprints(permutation(seeds[rank]))  # before training: every rank's index
        sampler = torch.utils.data.DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True,
                                                      seed=seeds[rank])
        loader = torch.utils.data.DataLoader(data, batch_size=2, sampler=sampler)
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Embedding(512, 8), torch.nn.Linear(8, 512))
        model = DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ledger = TrainingLedger(os.path.join(folder, f"ledger-{rank}.ptl"), docs, rank=rank, world_size=world)
        for batch in observe_batches(loader, ledger):
            logits: Any = model(batch["input_ids"])
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 512),
                                                     batch["labels"][:, 1:].reshape(-1), ignore_index=-100)
            loss.backward()
            opt.step()
            opt.zero_grad()
        ledger.close()
        with open(os.path.join(folder, f"agree-{rank}.json"), "w", encoding="utf-8") as fh:
            json.dump(agreement.to_dict(), fh)
    finally:
        dist.destroy_process_group()
