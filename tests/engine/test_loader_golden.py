"""Token-for-token agreement with rows produced by the public loaders' own code.

The fixtures (``tests/data/loader_golden``) hold the arrival lengths, the
tokenizer batch sizes and SHA-256 digests of blocks of rows that the public
loaders emitted when run locally (see ``tools/loader_golden.py``): autoresearch
228791f and nanochat master (``discard``), autoresearch PR #372
(``continue``), nanochat PR #544 (``requeue-bos``).

The ``epochs_*`` fixtures come from running those loaders' own code over many
epochs of one corpus (``tools/loader_golden.py epochs``): the buffer persists
across epochs and every epoch restarts the batching of its row groups. They are
replayed directly with ``passes > 1`` (documents read by source id), by both
engines and by the drop-in loaders of ``packing_theory.adapters.torch``, whose
yielded ``epoch`` (autoresearch) and ``pq_idx`` / ``rg_idx`` / ``epoch``
(nanochat) must match the public loaders' too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from packing_theory.engine import make_packer
from tests.golden_params import fixture_params, not_realistic

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "data" / "loader_golden").glob("*.json"))
EPOCH_FIXTURES = [p for p in FIXTURES if "__epochs_" in p.name]
BLOCK_TEST_ROWS = 600  # the reference engine re-checks this many leading rows per stream


def _docs(meta: dict[str, Any]) -> list[list[int]]:
    tags = meta.get("tags", range(len(meta["lengths"])))
    return [
        [0] + [(g + 1) * 1_000_000 + p for p in range(1, n)]
        for g, n in zip(tags, meta["lengths"], strict=True)
    ]


def _rows(meta: dict[str, Any], engine: str, rows: int) -> list[list[int]]:
    packer = make_packer(
        engine,
        capacity=meta["R"],
        min_buffer=meta["buffer_size"],
        refill=tuple(meta["encode_batch_sizes"]),
        policy=meta["policy"],
        rows=rows,
        passes=meta["epochs"] + 1 if "epochs" in meta else 1,
    )
    if "epochs" in meta:  # several passes: documents read by source id (a list), as the loaders re-read them
        return list(packer.token_rows(_docs(meta)))
    return list(packer.token_rows(iter(_docs(meta))))


def _digests(rows: list[list[int]], block: int) -> list[str]:
    import hashlib

    import numpy as np

    out = []
    for i in range(0, len(rows), block):
        h = hashlib.sha256()
        for row in rows[i : i + block]:
            h.update(np.asarray(row, dtype=np.int64).tobytes())
        out.append(h.hexdigest())
    return out


def test_fixtures_present() -> None:
    assert len(FIXTURES) == 52
    assert len(EPOCH_FIXTURES) == 10
    for path in EPOCH_FIXTURES:  # every multi-epoch fixture really spans several passes
        meta = json.loads(path.read_text())
        last = meta["yields"][-1]
        assert meta["epochs"] >= 5 and (last if isinstance(last, int) else last[2]) == meta["epochs"]


@pytest.mark.parametrize("path", fixture_params(FIXTURES, not_realistic))
def test_fast_engine_matches_loader(path: Path) -> None:
    meta = json.loads(path.read_text())
    rows = _rows(meta, "fast", meta["n_rows"])
    assert len(rows) == meta["n_rows"]
    assert _digests(rows, meta["block"]) == meta["row_block_sha256"]


@pytest.mark.parametrize("path", fixture_params(FIXTURES[::3], not_realistic))
def test_reference_engine_matches_loader(path: Path) -> None:
    meta = json.loads(path.read_text())
    n = min(meta["n_rows"], BLOCK_TEST_ROWS // meta["block"] * meta["block"])
    rows = _rows(meta, "reference", n)
    k = n // meta["block"]
    assert _digests(rows[: k * meta["block"]], meta["block"]) == meta["row_block_sha256"][:k]


@pytest.mark.parametrize("path", fixture_params(EPOCH_FIXTURES, not_realistic))
def test_drop_in_loaders_match_over_epochs(path: Path) -> None:
    torch_adapter = pytest.importorskip(
        "packing_theory.adapters.torch", reason="torch is not installed: the drop-in loaders need it"
    )
    from packing_theory.corpus.documents import TokenDocuments

    meta = json.loads(path.read_text())
    docs = TokenDocuments.from_lists(
        _docs(meta), refill=meta["encode_batch_sizes"], row_groups=[tuple(g) for g in meta["row_groups"]]
    )
    B, T = meta["batch_rows"], meta["R"] - 1
    if meta["loader"].startswith("autoresearch"):
        loader = torch_adapter.make_dataloader(
            None,
            B,
            T,
            "train",
            buffer_size=meta["buffer_size"],
            documents=docs,
            policy=meta["policy"],
            device="cpu",
        )
    else:
        loader = torch_adapter.tokenizing_distributed_data_loader_with_state_bos_bestfit(
            None,
            B,
            T,
            "train",
            device="cpu",
            buffer_size=meta["buffer_size"],
            documents=docs,
            policy=meta["policy"],
        )
    rows: list[list[int]] = []
    yields: list[Any] = []
    for _ in range(meta["n_rows"] // B):
        x, y, extra = next(loader)
        rows += torch_adapter.torch.cat([x, y[:, -1:]], dim=1).tolist()
        yields.append(extra if isinstance(extra, int) else [extra["pq_idx"], extra["rg_idx"], extra["epoch"]])
    assert _digests(rows, meta["block"]) == meta["row_block_sha256"]
    assert yields == meta["yields"]
